"""The options every training family shares, as dataclasses ``HfArgumentParser`` reads.

:class:`TrainingLoopArguments` holds optimisation, time budget, periodic evaluation, checkpoints and
the Hub; :class:`LoraArguments` the LoRA adapter options of families that offer them. A family's
arguments subclass them and add only their own fields; a family re-declares a shared field only to
give it another default (NER trains 24 sentences a batch at 2e-5, marker MT 16 pairs at 5e-5).

>>> args = TrainingLoopArguments(output_dir="out", checkpointing_steps="500")
>>> args.checkpoint_every(), args.warmup(max_steps=1000)
(500, 100)
>>> sorted(hyperparameters(TrainingLoopArguments(output_dir="out", hub_token="secret")))[:3]
['checkpointing_steps', 'eval_minutes', 'eval_steps']
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

__all__ = ["LoraArguments", "TrainingLoopArguments", "hyperparameters"]


def __getattr__(name: str) -> Any:
    """``TrainingArguments``, this class's former name (it is transformers' class name too), still imports."""
    if name == "TrainingArguments":
        import warnings

        warnings.warn("crop_hf.engine.arguments.TrainingArguments is renamed TrainingLoopArguments (transformers has "
                      "a class of that name with other fields); the old name will stop working in a later release",
                      FutureWarning, stacklevel=2)
        return TrainingLoopArguments
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass
class TrainingLoopArguments:
    """Optimisation, time budget, periodic evaluation, checkpointing and publishing."""

    output_dir: str = field(metadata={"help": "Folder for the model, checkpoints, all_results.json and the card."})
    per_device_train_batch_size: int = field(default=24, metadata={"help": "Examples per batch and process."})
    per_device_eval_batch_size: int = field(default=64, metadata={"help": "Examples per evaluation batch."})
    learning_rate: float = field(default=2e-5, metadata={"help": "Peak learning rate of AdamW."})
    weight_decay: float = field(default=0.01, metadata={"help": "AdamW weight decay (not on biases and norms)."})
    num_train_epochs: float = field(default=3.0, metadata={"help": "Passes over the (weighted) training data."})
    max_train_steps: int | None = field(
        default=None, metadata={"help": "Optimizer steps to train; overrides num_train_epochs."})
    max_train_minutes: float | None = field(
        default=None, metadata={"help": "Stop training after this many minutes (evaluation time not counted)."})
    group_by_length: bool = field(
        default=False,
        metadata={"help": "Batch training examples of similar length (sorted within random groups of 50 batches), "
                          "so batches pad less: faster where compute grows with the padded length (CPU, small "
                          "models, mixed lengths; 1.2x a translation step in benchmarks/bench_translation_step.py). "
                          "The order still depends only on seed and epoch."})
    gradient_accumulation_steps: int = field(
        default=1, metadata={"help": "Batches whose gradients are summed before each optimizer step."})
    lr_scheduler_type: str = field(
        default="linear",
        metadata={"help": "transformers scheduler: linear, cosine, inverse_sqrt, constant_with_warmup, ..."})
    warmup_ratio: float = field(
        default=0.1, metadata={"help": "Fraction of the optimizer steps spent warming the learning rate up "
                                       "linearly (10% as in the CroP paper)."})
    warmup_steps: int | None = field(default=None, metadata={"help": "Warm-up steps; overrides warmup_ratio."})
    max_grad_norm: float = field(default=1.0, metadata={"help": "Gradient clipping norm (0 disables)."})
    mixed_precision: Literal["no", "fp16", "bf16"] | None = field(
        default=None,
        metadata={"help": "Mixed precision; default: what `accelerate launch`/`accelerate config` chose."})
    seed: int = field(default=42, metadata={"help": "Seed of weights, dropout and the order of the training data."})
    checkpointing_steps: str | None = field(
        default=None,
        metadata={"help": "Save the full training state (accelerator.save_state) every N optimizer steps, or "
                          "'epoch' at the end of each epoch, under output_dir/step_N or epoch_N."})
    resume_from_checkpoint: str | None = field(
        default=None,
        metadata={"help": "Checkpoint folder to continue from, or 'latest' for the newest in output_dir; training "
                          "continues exactly where it stopped (same batches, dropout and schedule)."})
    eval_steps: int | None = field(
        default=None, metadata={"help": "Also evaluate every N optimizer steps (a learning curve in "
                                        "all_results.json's history)."})
    eval_minutes: float | None = field(
        default=None, metadata={"help": "Also evaluate every N minutes of training time (a learning curve)."})
    show_progress: bool = field(default=True, metadata={"help": "Progress bar on the main process."})
    push_to_hub: bool = field(
        default=False, metadata={"help": "Upload the model, tokenizer, results and model card to the Hub."})
    hub_model_id: str | None = field(
        default=None, metadata={"help": "Repository to push to (default: the output_dir's name)."})
    hub_token: str | None = field(default=None, metadata={"help": "Hub token (default: the logged-in one)."})
    hub_private_repo: bool = field(default=False, metadata={"help": "Create the Hub repository as private."})

    def checkpoint_every(self) -> int | Literal["epoch"] | None:
        """``checkpointing_steps`` read as an int, ``"epoch"`` or ``None``."""
        value = self.checkpointing_steps
        if value in (None, "", "no"):
            return None
        if value == "epoch":
            return "epoch"
        if str(value).isdigit() and int(value) > 0:
            return int(value)
        raise ValueError(f"checkpointing_steps must be a positive integer or 'epoch', got {value!r}")

    def warmup(self, max_steps: int) -> int:
        """Warm-up optimizer steps: ``warmup_steps`` when given, else ``warmup_ratio`` of ``max_steps`` rounded up."""
        if self.warmup_steps is not None:
            return self.warmup_steps
        return math.ceil(self.warmup_ratio * max_steps)

    def wants_curve(self) -> bool:
        """Whether periodic evaluation (a learning curve) was asked for."""
        return bool(self.eval_steps or self.eval_minutes)


# kw_only: a family's model arguments put their required model_name_or_path first and still
# inherit these defaults (dataclasses forbid a field without a default after one with).
@dataclass(kw_only=True)
class LoraArguments:
    """LoRA adapters (peft) instead of fine-tuning every weight; mixed into a family's model arguments."""

    lora_r: int = field(default=0, metadata={"help": "Rank of LoRA adapters (peft); 0 fine-tunes all weights."})
    lora_alpha: int = field(default=16, metadata={"help": "LoRA scaling numerator (alpha / r scales the update)."})
    lora_dropout: float = field(default=0.1, metadata={"help": "Dropout on the LoRA branch."})
    lora_target_modules: list[str] | None = field(
        default=None,
        metadata={"help": "Module names to adapt (default: the family's choice for the architecture)."})


def hyperparameters(*groups: Any, **extra: Any) -> dict[str, Any]:
    """All fields of argument dataclasses as one flat dict for a model card, ``extra`` last; ``hub_token`` left out.

    A later group's field wins over an earlier one's of the same name.
    """
    merged: dict[str, Any] = {}
    for group in groups:
        merged.update(asdict(group))
    merged.pop("hub_token", None)
    merged.update(extra)
    return merged
