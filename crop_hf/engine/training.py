"""The one Accelerate training loop of crop-hf: every trainer (NER, parser, marker MT, generator) runs it.

A family builds its model and batches, describes what differs in a :class:`TrainingTask` and
hands it to :func:`train`; the engine does the rest the same way for everyone:

1. :func:`start` — the ``Accelerator`` (or a check that a passed one accumulates as the arguments
   say) and ``set_seed``, before the family loads its model, so that new heads start from the seed.
2. :func:`train` — AdamW groups (:func:`~crop_hf.engine.checkpoints.adamw`, unless the task brings
   its optimizer), the transformers scheduler with its warm-up, ``accelerator.prepare``, exact
   resume (:func:`~crop_hf.engine.checkpoints.resume_position` and ``skip_first_batches``),
   gradient accumulation, clipping, mixed precision, the mean loss of each optimizer step gathered
   over processes, a progress bar, ``step_N``/``epoch_N`` checkpoints, the time budget
   (``max_train_minutes``; evaluation time does not count) and periodic evaluation into a learning
   curve (``eval_steps``/``eval_minutes``) whose last point is the last step.
3. :meth:`TrainingRun.save_model` — unwrap; with LoRA, the adapter to ``output_dir/adapter`` and
   the merged weights (a plain checkpoint that pipelines load as is); model and tokenizer saved.
4. :meth:`TrainingRun.publish` — ``all_results.json`` (:func:`write_all_results`, atomic), the model
   card, the Hub upload, then ``free_memory`` (not ``end_training``: a caller such as
   self-training still needs the process group).

A task's interface, in short::

    TrainingTask(model, loader,                 # a torch DataLoader, not yet prepared
                 loss=lambda model, batch: ..., # a scalar tensor
                 optimizer=None,                # default: AdamW without decay on biases/norms
                 loader_for_epoch=None,         # epoch -> a fresh DataLoader (or None: keep the last)
                 evaluate=None,                 # model -> JSON-able scores, for the learning curve
                 after_step=None,               # model -> None, after each optimizer step (weight averaging)
                 tokens=None)                   # batch -> tokens trained on, for tokens/s

The loader's sampler is told the epoch before each epoch (``use_epoch`` when it has one, else
``set_epoch``), so that a sampler whose order depends on seed and epoch alone resumes exactly.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from crop_hf import hub
from crop_hf.engine.arguments import LoraArguments, TrainingLoopArguments
from crop_hf.engine.checkpoints import (
    adamw,
    apply_gradients,
    find_checkpoint,
    resume_position,
    save_checkpoint,
)
from crop_hf.engine.processes import running_alone
from crop_hf.engine.shards import honour_umask
from crop_hf.errors import check_output_path

__all__ = ["TrainedModel", "TrainingRun", "TrainingTask", "start", "telling_where_saved", "train", "wrap_lora", "write_all_results"]

logger = logging.getLogger(__name__)


@dataclass
class TrainingTask:
    """What a family hands the engine: its model, its batches, and what makes its step its own."""

    #: the model to train (LoRA-wrapped already, if wanted: :func:`wrap_lora`)
    model: Any
    #: the training batches: a ``torch.utils.data.DataLoader``, not yet prepared. For exact resume,
    #: its sampler orders an epoch from seed and epoch alone, and it has a ``generator`` of its own
    #: (else each new iterator draws from the global RNG that dropout uses, and a resumed run's
    #: dropout masks differ from an uninterrupted one's)
    loader: Any
    #: ``loss(model, batch)``: the scalar to minimise for one batch (the model is the prepared one)
    loss: Callable[[Any, Mapping[str, Any]], Any]
    #: default: :func:`~crop_hf.engine.checkpoints.adamw` with the arguments' learning rate and decay
    optimizer: Any = None
    #: ``loader_for_epoch(epoch)``: a fresh DataLoader for an epoch (marker MT draws new markers),
    #: or ``None`` to keep the previous one; it must share the first loader's sampler and length
    loader_for_epoch: Callable[[int], Any] | None = None
    #: ``evaluate(model)``: scores of the unwrapped model at a learning-curve point (JSON-able, or
    #: ``None``); called on every process, so that an evaluation may gather across them
    evaluate: Callable[[Any], Any] | None = None
    #: ``after_step(model)``: called with the unwrapped model after each optimizer step (not after the
    #: micro-batches of gradient accumulation), e.g. to update an average of the weights
    after_step: Callable[[Any], None] | None = None
    #: ``tokens(batch)``: how many tokens a batch trains on (for the ``<tokens_name>_per_second`` rate)
    tokens: Callable[[Mapping[str, Any]], int] | None = None
    tokens_name: str = "tokens"


Result = TypeVar("Result", bound="TrainedModel")


@dataclass(kw_only=True)
class TrainedModel:
    """What a training command did, alike for every model it trains (NER, parser, translation).

    Each command's result extends it with its own evaluations; :meth:`of` fills these fields from
    the :class:`TrainingRun`.
    """

    output_dir: Path
    completed_steps: int
    #: mean training loss of each optimizer step run by this call (after a resume: the remaining steps)
    step_losses: list[float] = field(default_factory=list)
    #: learning-curve points (``eval_steps``/``eval_minutes``/``max_train_minutes``): step, minutes, loss, scores
    history: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def of(cls: type[Result], run: TrainingRun, **fields: Any) -> Result:
        """The result of ``run``, with the command's own ``fields``."""
        return cls(output_dir=run.output_dir, completed_steps=run.completed_steps, step_losses=run.step_losses,
                   history=run.history, **fields)


@dataclass
class TrainingRun:
    """Where :func:`train` ended: the prepared model, the per-step losses, the learning curve, the clock."""

    accelerator: Any
    args: TrainingLoopArguments
    #: the prepared (possibly wrapped) model; :meth:`unwrapped` or :meth:`save_model` for the plain one
    model: Any
    completed_steps: int
    max_steps: int
    #: mean training loss of each optimizer step run by this call (after a resume: the remaining steps)
    step_losses: list[float] = field(default_factory=list)
    #: learning-curve points: ``step``, ``train_minutes``, ``<tokens>_per_second``, ``loss`` (and ``scores``)
    history: list[dict[str, Any]] = field(default_factory=list)
    #: training time, evaluation left out
    train_seconds: float = 0.0
    tokens: int = 0
    out_of_time: bool = False

    @property
    def output_dir(self) -> Path:
        return Path(self.args.output_dir)

    @property
    def train_loss(self) -> float | None:
        """The mean of :attr:`step_losses` (``None`` when no step ran)."""
        return sum(self.step_losses) / len(self.step_losses) if self.step_losses else None

    @property
    def train_minutes(self) -> float:
        return self.train_seconds / 60

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / max(self.train_seconds, 1e-9)

    @property
    def total_train_batch_size(self) -> int:
        """Examples per optimizer step over all processes."""
        return (self.args.per_device_train_batch_size * self.accelerator.num_processes
                * self.args.gradient_accumulation_steps)

    def unwrapped(self) -> Any:
        """The trained model without Accelerate's wrappers (still LoRA-wrapped, if it was)."""
        return self.accelerator.unwrap_model(self.model)

    def save_model(self, tokenizer: Any, *, lora: bool = False) -> Any:
        """Unwrap, merge LoRA adapters (saving them to ``output_dir/adapter`` first) and save model and tokenizer.

        Returns the plain model (merged with ``lora``); only the main process writes.
        """
        accelerator = self.accelerator
        accelerator.wait_for_everyone()
        model = self.unwrapped()
        if lora:
            if accelerator.is_main_process:
                model.save_pretrained(self.output_dir / "adapter")
            model = model.merge_and_unload()  # a plain checkpoint: pipelines and evaluation load it as is
        if accelerator.is_main_process:
            model.save_pretrained(self.output_dir)
            tokenizer.save_pretrained(self.output_dir)
            honour_umask(self.output_dir)  # save_pretrained writes the weights 0600
        return model

    def publish(self, results: Mapping[str, Any] | None, *, card: Callable[[], Any] | None = None,
                commit_message: str | None = None) -> None:
        """On the main process: ``all_results.json``, ``card()`` saved as ``README.md``, the Hub upload if asked.

        Then every process waits for the others and frees Accelerate's references (the process
        group stays: a caller may train again).
        """
        accelerator, args = self.accelerator, self.args
        if accelerator.is_main_process:
            if results is not None:
                write_all_results(self.output_dir / "all_results.json", results)
            if card is not None:
                card().save(self.output_dir / "README.md")
            if args.push_to_hub:
                extra = {"commit_message": commit_message} if commit_message else {}
                hub.push_folder(self.output_dir, args.hub_model_id or self.output_dir.name, token=args.hub_token,
                                private=args.hub_private_repo, **extra)
        accelerator.wait_for_everyone()
        # Not end_training(): it destroys the process group, which a caller such as self-training still needs.
        accelerator.free_memory()


def write_all_results(path: str | Path, results: Mapping[str, Any]) -> dict[str, Any]:
    """Write ``results`` as ``all_results.json`` (indented, keys sorted) atomically; returns them as a dict.

    The file is written beside ``path`` and renamed over it, so a reader never sees half a file.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    results = dict(results)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(temporary, path)
    return results


def start(args: TrainingLoopArguments, accelerator: Any = None, *, cpu: bool = False) -> Any:
    """The ``Accelerator`` to train with (created from ``args`` when not given), after ``set_seed(args.seed)``.

    Call it before loading the model, so that newly initialised weights follow the seed. A passed
    accelerator must accumulate ``args.gradient_accumulation_steps`` batches (else ``ValueError``):
    the schedule's length is computed from the arguments. What would otherwise fail only after the
    model is loaded, or after training, fails here: a malformed ``checkpointing_steps``, an
    ``output_dir`` that is a file (or lies under one), a ``resume_from_checkpoint`` that names no
    checkpoint.
    """
    from accelerate import Accelerator
    from accelerate.utils import set_seed

    args.checkpoint_every()
    check_output_path(args.output_dir, "--output_dir")
    if args.resume_from_checkpoint:
        find_checkpoint(args.output_dir, args.resume_from_checkpoint)
    if accelerator is None:
        options = {"cpu": True} if cpu else {}
        accelerator = Accelerator(gradient_accumulation_steps=args.gradient_accumulation_steps,
                                  mixed_precision=args.mixed_precision, **options)
    elif accelerator.gradient_accumulation_steps != args.gradient_accumulation_steps:
        raise ValueError(f"the accelerator's gradient_accumulation_steps ({accelerator.gradient_accumulation_steps}) "
                         f"differs from the arguments' ({args.gradient_accumulation_steps})")
    set_seed(args.seed)
    return accelerator


@contextmanager
def telling_where_saved(folder: str | Path, what: str, again: str) -> Iterator[None]:
    """Around what follows the saving of a trained model (its evaluation, re-labeling with it): a failure
    there is logged, before it propagates, with the folder the model is saved in, what failed (``what``)
    and how to do it again without training (``again``)."""
    try:
        yield
    except Exception:
        logger.error("training finished and the model is saved in %s; %s failed (%s)", folder, what, again)
        raise


def wrap_lora(model: Any, task_type: str, lora: LoraArguments, default_targets: Sequence[str] | None = None,
              trainable_token_indices: Sequence[int] | None = None) -> Any:
    """``model`` with LoRA adapters (peft) as ``lora`` says; ``task_type`` is peft's (``"TOKEN_CLS"``, ``"SEQ_2_SEQ_LM"``).

    ``default_targets`` are the modules adapted when ``lora.lora_target_modules`` is empty (``None``:
    peft's choice for the architecture); ``trainable_token_indices`` are embedding rows trained in
    full besides (new marker tokens).
    """
    from peft import LoraConfig, TaskType, get_peft_model

    config = LoraConfig(task_type=TaskType(task_type), r=lora.lora_r, lora_alpha=lora.lora_alpha,
                        lora_dropout=lora.lora_dropout, target_modules=lora.lora_target_modules or default_targets,
                        trainable_token_indices=list(trainable_token_indices) if trainable_token_indices else None)
    model = get_peft_model(model, config)
    trainable, total = model.get_nb_trainable_parameters()
    logger.info("LoRA: training %d of %d parameters (%.2f%%)", trainable, total, 100 * trainable / total)
    return model


def _tell_epoch(sampler: Any, epoch: int) -> None:
    # use_epoch first: a sampler that has it (the weighted mix) keeps it apart from set_epoch,
    # which Accelerate's loader calls with its own count.
    for name in ("use_epoch", "set_epoch"):
        if hasattr(sampler, name):
            getattr(sampler, name)(epoch)
            return


def _agreed(accelerator: Any, flags: list[bool]) -> list[bool]:
    """The main process's ``flags`` on every process: clocks differ, a decision to stop or evaluate must not."""
    if accelerator.num_processes == 1:
        return flags
    import torch
    from accelerate.utils import broadcast

    tensor = broadcast(torch.tensor([int(f) for f in flags], device=accelerator.device))
    return [bool(v) for v in tensor.tolist()]


def train(task: TrainingTask, args: TrainingLoopArguments, accelerator: Any) -> TrainingRun:
    """Run the training loop over ``task`` as ``args`` say, on ``accelerator`` (from :func:`start`).

    Steps: ``max_train_steps``, else ``num_train_epochs`` over the loader (per process, after
    Accelerate shards it), and fewer when ``max_train_minutes`` runs out. A resumed run
    (``resume_from_checkpoint``) continues with the batches, dropout masks and schedule an
    uninterrupted one would have had; its :attr:`TrainingRun.step_losses` are the remaining steps'.
    """
    import torch
    from tqdm.auto import tqdm
    from transformers import get_scheduler

    output_dir = Path(args.output_dir)
    checkpoint_every = args.checkpoint_every()
    model = task.model
    sampler = task.loader.sampler
    optimizer = task.optimizer if task.optimizer is not None else adamw(model, args.learning_rate, args.weight_decay)

    # Batches per process after Accelerate shards the loader (even_batches: rounded up).
    batches_per_epoch = math.ceil(len(task.loader) / accelerator.num_processes)
    if batches_per_epoch == 0:
        raise ValueError("no training batches: the training data is empty")
    steps_per_epoch = math.ceil(batches_per_epoch / args.gradient_accumulation_steps)
    max_steps = args.max_train_steps or math.ceil(args.num_train_epochs * steps_per_epoch)
    num_epochs = math.ceil(max_steps / steps_per_epoch)
    # Accelerate's scheduler wrapper steps once per process on each optimizer step, hence the factor.
    scheduler = get_scheduler(args.lr_scheduler_type, optimizer=optimizer,
                              num_warmup_steps=args.warmup(max_steps) * accelerator.num_processes,
                              num_training_steps=max_steps * accelerator.num_processes)
    model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, task.loader, scheduler)
    if len(loader) != batches_per_epoch:  # pragma: no cover - guards the arithmetic above
        logger.warning("expected %d batches per epoch, the prepared loader has %d", batches_per_epoch, len(loader))
        batches_per_epoch = len(loader)

    completed_steps, start_epoch, skip_batches = resume_position(
        accelerator, output_dir, args.resume_from_checkpoint, batches_per_epoch)
    run = TrainingRun(accelerator, args, model, completed_steps, max_steps)

    def checkpoint(name: str, epoch: int, batches_in_epoch: int) -> None:
        save_checkpoint(accelerator, output_dir / name, completed_steps=run.completed_steps, epoch=epoch,
                        batches_in_epoch=batches_in_epoch)

    def learning_curve_point() -> None:
        entry: dict[str, Any] = {"step": run.completed_steps, "train_minutes": run.train_minutes}
        scores = task.evaluate(accelerator.unwrap_model(model)) if task.evaluate is not None else None
        if task.tokens is not None:
            entry[f"{task.tokens_name}_per_second"] = run.tokens_per_second
        entry["loss"] = run.step_losses[-1]
        if scores is not None:
            entry["scores"] = scores
        run.history.append(entry)
        logger.info("learning curve: step %d, %.1f training minutes, loss %.4f", entry["step"], entry["train_minutes"],
                    entry["loss"])

    logger.info("training: %d batches per epoch and process, %d epochs, %d optimizer steps, %d process(es)",
                batches_per_epoch, num_epochs, max_steps, accelerator.num_processes)
    alone = running_alone("training", accelerator.num_processes)
    if alone is not None and accelerator.is_main_process:
        logger.warning(alone)
    progress = tqdm(total=max_steps, initial=completed_steps, desc="training",
                    disable=not (args.show_progress and accelerator.is_local_main_process))
    curve = args.wants_curve()
    pending: list[Any] = []
    tick = time.perf_counter()
    for epoch in range(start_epoch, num_epochs):
        if run.completed_steps >= max_steps or run.out_of_time:
            break
        if task.loader_for_epoch is not None:
            fresh = task.loader_for_epoch(epoch)
            if fresh is not None:
                loader = accelerator.prepare(fresh)
        _tell_epoch(sampler, epoch)
        model.train()
        batches, first = loader, 0
        if epoch == start_epoch and skip_batches:
            batches, first = accelerator.skip_first_batches(loader, skip_batches), skip_batches
        if hasattr(batches, "set_epoch"):
            # Accelerate's loader hands a set_epoch sampler its own count of iterations, which starts
            # at 0 for a new loader (a resumed run, the skipping loader, a fresh epoch's loader).
            batches.set_epoch(epoch)
        steps_before = len(run.step_losses)
        for batch_index, batch in enumerate(batches, start=first):
            with accelerator.accumulate(model):
                loss = task.loss(model, batch)
                apply_gradients(accelerator, model, loss, optimizer, scheduler, args.max_grad_norm)
            if task.tokens is not None:
                run.tokens += task.tokens(batch)
            pending.append(loss.detach().float())
            if not accelerator.sync_gradients:
                continue
            run.completed_steps += 1
            if task.after_step is not None:
                task.after_step(accelerator.unwrap_model(model))
            run.step_losses.append(accelerator.gather(torch.stack(pending).mean()).mean().item())
            pending = []
            progress.update(1)
            progress.set_postfix(loss=f"{run.step_losses[-1]:.4f}")
            if isinstance(checkpoint_every, int) and run.completed_steps % checkpoint_every == 0:
                checkpoint(f"step_{run.completed_steps}", epoch, batch_index + 1)
            elapsed = run.train_seconds + time.perf_counter() - tick
            out_of_time = args.max_train_minutes is not None and elapsed >= 60 * args.max_train_minutes
            by_clock = bool(args.eval_minutes) and elapsed >= 60 * args.eval_minutes * (len(run.history) + 1)
            if args.max_train_minutes is not None or args.eval_minutes:
                out_of_time, by_clock = _agreed(accelerator, [out_of_time, by_clock])
            run.out_of_time = out_of_time
            periodic = by_clock or bool(args.eval_steps and run.completed_steps % args.eval_steps == 0)
            finished = out_of_time or run.completed_steps >= max_steps
            # A learning curve ends where training ends, whether the time budget or the step count ran out.
            if periodic or out_of_time or (curve and finished):
                run.train_seconds = elapsed
                learning_curve_point()
                tick = time.perf_counter()  # evaluation time is not training time
            if finished:
                break
        if len(run.step_losses) > steps_before:
            epoch_losses = run.step_losses[steps_before:]
            logger.info("epoch %d: mean loss %.4f", epoch + 1, sum(epoch_losses) / len(epoch_losses))
        if checkpoint_every == "epoch":
            checkpoint(f"epoch_{epoch}", epoch, batches_per_epoch)
    progress.close()
    run.train_seconds += time.perf_counter() - tick
    return run
