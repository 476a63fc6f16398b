"""The Accelerate training loop behind ``examples/train_ner.py`` and self-training.

One function, :func:`train_ner`, runs the whole recipe: load and reconcile corpora, fine-tune a
token classifier (optionally with LoRA), checkpoint and resume exactly, evaluate per language,
write ``all_results.json`` and a model card, and push to the Hub. It runs in one process or under
``accelerate launch`` / ``torchrun``, where each process calls it.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crop_hf.data.features import encode_tags
from crop_hf.data.sources import WeightedMixSampler, load_source
from crop_hf.labels import LabelConflictError, LabelSet, parse_label_map, reconcile_labels
from crop_hf.optim import adamw, apply_gradients, resume_position, save_checkpoint
from crop_hf.training.arguments import DataArguments, ModelArguments, NerTrainingArguments, arguments_to_dict

logger = logging.getLogger(__name__)

__all__ = ["TrainingResult", "choose_labels", "train_ner"]



@dataclass
class TrainingResult:
    """What :func:`train_ner` did: its output folder, labels, per-step losses and evaluations."""

    output_dir: Path
    label_set: LabelSet
    completed_steps: int
    #: mean training loss of each optimizer step run by this call (after a resume: the remaining steps)
    step_losses: list[float] = field(default_factory=list)
    evaluations: list[Any] = field(default_factory=list)  # crop_hf.evaluation.NerEvaluation
    results: dict[str, Any] = field(default_factory=dict)


def _is_generic(id2label: Mapping) -> bool:
    """Whether a config's labels are transformers' placeholders (``LABEL_0``...), i.e. the model has no NER head yet."""
    return all(re.fullmatch(r"LABEL_\d+", str(name)) for name in id2label.values())


def choose_labels(data_labels: list[list[str]], where: list[str], model_id2label: Mapping | None,
                  ignore_mismatched_sizes: bool = False) -> tuple[LabelSet, bool]:
    """The label set to train with, and whether the model's classification head must be replaced.

    A model already fine-tuned for NER keeps its labels and their order when they cover the data;
    otherwise its head is replaced only with ``ignore_mismatched_sizes`` (else
    :class:`LabelConflictError`). A model without an NER head gets the reconciled data labels.
    """
    union = reconcile_labels(data_labels, where)
    if not model_id2label or _is_generic(model_id2label):
        return union, False
    model_names = [model_id2label[k] for k in sorted(model_id2label, key=int)]
    missing = [name for name in union.names if name not in model_names]
    if not missing:
        return LabelSet(tuple(model_names)), False
    if not ignore_mismatched_sizes:
        raise LabelConflictError(
            f"the model was fine-tuned on labels {model_names}, which lack {missing} found in the training data; "
            "pass ignore_mismatched_sizes to train a new classification head, or rename types with label_map")
    return reconcile_labels(data_labels, where, model_labels=model_names), True


def _train_rows(source, label_set: LabelSet, label_map, tokenizer, max_length: int, max_samples: int | None):
    from crop_hf.data.tokenization import tokenize_words

    rows = source.split("train")
    if max_samples is not None:
        rows = rows.select(range(min(max_samples, len(rows))))
    rows = encode_tags(rows, label_set, label_map, where=source.spec)

    def tokenize(batch):
        out = tokenize_words(tokenizer, batch["tokens"], max_length, batch["word_labels"])
        return {"input_ids": out["input_ids"], "attention_mask": out["attention_mask"], "labels": out["labels"]}

    return rows.map(tokenize, batched=True, remove_columns=rows.column_names, desc=f"tokenizing {source.spec}")


def _wrap_lora(model, model_args: ModelArguments):
    from peft import LoraConfig, TaskType, get_peft_model

    config = LoraConfig(task_type=TaskType.TOKEN_CLS, r=model_args.lora_r, lora_alpha=model_args.lora_alpha,
                        lora_dropout=model_args.lora_dropout, target_modules=model_args.lora_target_modules)
    model = get_peft_model(model, config)
    trainable, total = model.get_nb_trainable_parameters()
    logger.info("LoRA: training %d of %d parameters (%.2f%%)", trainable, total, 100 * trainable / total)
    return model


def _load_model(model_args: ModelArguments, sources):
    """Tokenizer, token classifier with a head over the reconciled labels (LoRA-wrapped if asked), label set."""
    from transformers import AutoConfig, AutoModelForTokenClassification, AutoTokenizer

    from crop_hf.errors import reaching

    with reaching(model_args.tokenizer_name or model_args.model_name_or_path, "tokenizer"):
        tokenizer = AutoTokenizer.from_pretrained(model_args.tokenizer_name or model_args.model_name_or_path,
                                                  cache_dir=model_args.cache_dir)
    with reaching(model_args.model_name_or_path):
        config = AutoConfig.from_pretrained(model_args.model_name_or_path, cache_dir=model_args.cache_dir)
    label_set, new_head = choose_labels([s.label_names for s in sources], [s.spec for s in sources],
                                        getattr(config, "id2label", None), model_args.ignore_mismatched_sizes)
    logger.info("labels: %s%s", list(label_set.names), " (new classification head)" if new_head else "")
    model = AutoModelForTokenClassification.from_pretrained(
        model_args.model_name_or_path, cache_dir=model_args.cache_dir, num_labels=len(label_set),
        id2label=label_set.id2label, label2id=label_set.label2id,
        ignore_mismatched_sizes=new_head or model_args.ignore_mismatched_sizes)
    if model_args.lora_r > 0:
        model = _wrap_lora(model, model_args)
    return tokenizer, model, label_set


def _optimizer(model, training_args: NerTrainingArguments):
    return adamw(model, training_args.learning_rate, training_args.weight_decay)


def train_ner(model_args: ModelArguments, data_args: DataArguments, training_args: NerTrainingArguments,
              *, datasets: Mapping[str, Any] | None = None, accelerator=None) -> TrainingResult:
    """Fine-tune a token classifier on a weighted mix of corpora and evaluate it per language.

    ``datasets`` maps source specs used in ``data_args`` to ``Dataset``/``DatasetDict`` objects
    already in memory (self-training passes its corpora this way); other specs are loaded.
    ``accelerator`` (an ``accelerate.Accelerator``) is created from ``training_args`` when not given.

    Writes to ``output_dir``: the model and tokenizer, ``all_results.json``, ``README.md`` (model
    card), and ``step_N``/``epoch_N`` checkpoints when asked. Returns a :class:`TrainingResult`.
    """
    import torch
    from accelerate import Accelerator
    from accelerate.utils import set_seed
    from datasets import concatenate_datasets
    from torch.utils.data import DataLoader
    from tqdm.auto import tqdm
    from transformers import get_scheduler

    from crop_hf.data.tokenization import pad_batch
    from crop_hf.evaluation import evaluate_ner, format_table, load_eval_sets, write_all_results

    output_dir = Path(training_args.output_dir)
    checkpoint_every = training_args.checkpoint_every()
    if accelerator is None:
        accelerator = Accelerator(gradient_accumulation_steps=training_args.gradient_accumulation_steps,
                                  mixed_precision=training_args.mixed_precision)
    elif accelerator.gradient_accumulation_steps != training_args.gradient_accumulation_steps:
        raise ValueError("the accelerator's gradient_accumulation_steps differs from training_args'")
    if accelerator.is_main_process:
        output_dir.mkdir(parents=True, exist_ok=True)
    set_seed(training_args.seed)
    label_map = parse_label_map(data_args.label_map)
    datasets = dict(datasets or {})
    if not data_args.train_sources:
        raise ValueError("no training corpora: pass train_sources (e.g. conll5:en)")
    weights = data_args.train_weights or [1.0] * len(data_args.train_sources)
    if len(weights) != len(data_args.train_sources):
        raise ValueError(f"{len(weights)} train_weights for {len(data_args.train_sources)} train_sources")

    with accelerator.main_process_first():
        # only the train split: a crop-hf corpus then reads only its train files
        sources = [load_source(spec, label_map, dataset=datasets.get(spec), splits=("train",))
                   for spec in data_args.train_sources]
    tokenizer, model, label_set = _load_model(model_args, sources)

    with accelerator.main_process_first():
        parts = [_train_rows(s, label_set, label_map, tokenizer, data_args.max_seq_length, data_args.max_train_samples)
                 for s in sources]
    train_rows = concatenate_datasets(parts)
    sampler = WeightedMixSampler([len(p) for p in parts], weights, seed=training_args.seed)
    if len(sampler) == 0:
        raise ValueError("the training mix is empty (check train_sources, train_weights and max_train_samples)")
    pad_multiple = 8 if accelerator.mixed_precision != "no" else None
    train_loader = DataLoader(
        train_rows, batch_size=training_args.per_device_train_batch_size, sampler=sampler,
        collate_fn=lambda rows: pad_batch(rows, tokenizer.pad_token_id, pad_multiple),
        # Its own generator, so creating an iterator does not consume the global RNG that dropout
        # uses: a resumed run then draws the same dropout masks as an uninterrupted one.
        generator=torch.Generator().manual_seed(training_args.seed))

    optimizer = _optimizer(model, training_args)

    # Batches per process after Accelerate shards the loader (even_batches: rounded up).
    batches_per_epoch = math.ceil(math.ceil(len(sampler) / training_args.per_device_train_batch_size)
                                  / accelerator.num_processes)
    steps_per_epoch = math.ceil(batches_per_epoch / training_args.gradient_accumulation_steps)
    max_steps = training_args.max_train_steps or math.ceil(training_args.num_train_epochs * steps_per_epoch)
    num_epochs = math.ceil(max_steps / steps_per_epoch)
    # Accelerate's scheduler wrapper steps once per process on each optimizer step, hence the factor.
    scheduler = get_scheduler("linear", optimizer=optimizer,
                              num_warmup_steps=math.ceil(training_args.warmup_ratio * max_steps)
                              * accelerator.num_processes,
                              num_training_steps=max_steps * accelerator.num_processes)
    model, optimizer, train_loader, scheduler = accelerator.prepare(model, optimizer, train_loader, scheduler)
    if len(train_loader) != batches_per_epoch:  # pragma: no cover - guards the arithmetic above
        logger.warning("expected %d batches per epoch, the prepared loader has %d", batches_per_epoch, len(train_loader))
        batches_per_epoch = len(train_loader)

    completed_steps, start_epoch, skip_batches = resume_position(
        accelerator, output_dir, training_args.resume_from_checkpoint, batches_per_epoch)

    def checkpoint(name: str, epoch: int, batches_in_epoch: int) -> None:
        save_checkpoint(accelerator, output_dir / name, completed_steps=completed_steps, epoch=epoch,
                        batches_in_epoch=batches_in_epoch)

    logger.info("training: %d sentences per epoch, %d epochs, %d optimizer steps, %d process(es)",
                len(sampler), num_epochs, max_steps, accelerator.num_processes)
    progress = tqdm(total=max_steps, initial=completed_steps, desc="training",
                    disable=not (training_args.show_progress and accelerator.is_local_main_process))
    step_losses: list[float] = []
    pending: list[torch.Tensor] = []
    for epoch in range(start_epoch, num_epochs):
        if completed_steps >= max_steps:
            break
        sampler.use_epoch(epoch)
        model.train()
        loader, first = train_loader, 0
        if epoch == start_epoch and skip_batches:
            loader, first = accelerator.skip_first_batches(train_loader, skip_batches), skip_batches
        for batch_index, batch in enumerate(loader, start=first):
            with accelerator.accumulate(model):
                loss = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                             labels=batch["labels"]).loss
                apply_gradients(accelerator, model, loss, optimizer, scheduler, training_args.max_grad_norm)
            pending.append(loss.detach().float())
            if not accelerator.sync_gradients:
                continue
            completed_steps += 1
            step_losses.append(accelerator.gather(torch.stack(pending).mean()).mean().item())
            pending = []
            progress.update(1)
            progress.set_postfix(loss=f"{step_losses[-1]:.4f}")
            if isinstance(checkpoint_every, int) and completed_steps % checkpoint_every == 0:
                checkpoint(f"step_{completed_steps}", epoch, batch_index + 1)
            if completed_steps >= max_steps:
                break
        if checkpoint_every == "epoch":
            checkpoint(f"epoch_{epoch}", epoch, batches_per_epoch)
    progress.close()

    accelerator.wait_for_everyone()
    model = accelerator.unwrap_model(model)
    if model_args.lora_r > 0:
        if accelerator.is_main_process:
            model.save_pretrained(output_dir / "adapter")
        model = model.merge_and_unload()  # a plain checkpoint: pipelines and evaluate-ner load it as is
    if accelerator.is_main_process:
        model.save_pretrained(output_dir)
        tokenizer.save_pretrained(output_dir)

    evaluations = []
    for split in (data_args.eval_split, data_args.test_split):
        if not split or not data_args.eval_sources:
            continue
        with accelerator.main_process_first():
            eval_sets = load_eval_sets(data_args.eval_sources, split, max_samples=data_args.max_eval_samples,
                                       datasets=datasets)
        evaluation = evaluate_ner(model, tokenizer, eval_sets, split=split,
                                  batch_size=training_args.per_device_eval_batch_size,
                                  max_length=data_args.max_seq_length, accelerator=accelerator, label_map=label_map,
                                  average_exclude=data_args.average_exclude or ())
        evaluations.append(evaluation)
        if accelerator.is_main_process:
            print(format_table(evaluation), flush=True)

    extra = {"train_steps": completed_steps, "train_sentences_per_epoch": len(sampler),
             "train_loss": sum(step_losses) / len(step_losses) if step_losses else None,
             "num_processes": accelerator.num_processes}
    results: dict[str, Any] = {}
    if accelerator.is_main_process:
        results = write_all_results(output_dir / "all_results.json", evaluations, extra)
        from crop_hf.hub import ner_model_card

        hyperparameters = arguments_to_dict(model_args, data_args, training_args)
        hyperparameters["total_train_batch_size"] = (training_args.per_device_train_batch_size
                                                     * accelerator.num_processes
                                                     * training_args.gradient_accumulation_steps)
        card = ner_model_card(
            model_name=training_args.hub_model_id or output_dir.name,
            base_model=model_args.model_name_or_path,
            train_sources=list(zip(data_args.train_sources, weights, [len(p) for p in parts], strict=True)),
            evaluations=evaluations, label_names=list(label_set.names), hyperparameters=hyperparameters,
        )
        card.save(output_dir / "README.md")
        if training_args.push_to_hub:
            from crop_hf.hub import push_folder

            push_folder(output_dir, training_args.hub_model_id or output_dir.name, token=training_args.hub_token,
                        private=training_args.hub_private_repo)
    accelerator.wait_for_everyone()
    # Not end_training(): it destroys the process group, which a caller such as self-training still needs.
    accelerator.free_memory()
    return TrainingResult(output_dir, label_set, completed_steps, step_losses, evaluations, results)

