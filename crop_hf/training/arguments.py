"""Options of NER training as dataclasses that ``HfArgumentParser`` reads from a command line or a file.

Three groups, as in the transformers examples: what to start from (:class:`ModelArguments`), what
to train and evaluate on (:class:`DataArguments`) and how to train (:class:`NerTrainingArguments`).
:func:`parse_arguments` accepts a JSON or YAML file as first argument and command-line overrides
after it:

>>> model_args, data_args, training_args = parse_arguments(
...     ["--model_name_or_path", "m", "--train_sources", "conll5:en", "--output_dir", "out"])
>>> data_args.train_sources, training_args.warmup_ratio
(['conll5:en'], 0.1)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Literal

__all__ = ["DataArguments", "ModelArguments", "NerTrainingArguments", "parse_arguments"]


@dataclass
class ModelArguments:
    """The model to fine-tune and how to adapt it."""

    model_name_or_path: str = field(
        metadata={"help": "Hub id or folder of the pretrained model, e.g. FacebookAI/xlm-roberta-base."})
    tokenizer_name: str | None = field(
        default=None, metadata={"help": "Tokenizer to use when it differs from model_name_or_path."})
    cache_dir: str | None = field(default=None, metadata={"help": "Where downloaded models are stored."})
    ignore_mismatched_sizes: bool = field(
        default=False,
        metadata={"help": "Start a new classification head when the model was fine-tuned on labels the training "
                          "data does not share (otherwise this is an error)."})
    lora_r: int = field(
        default=0, metadata={"help": "Rank of LoRA adapters (peft); 0 fine-tunes all weights."})
    lora_alpha: int = field(default=16, metadata={"help": "LoRA scaling numerator (alpha / r scales the update)."})
    lora_dropout: float = field(default=0.1, metadata={"help": "Dropout on the LoRA branch."})
    lora_target_modules: list[str] | None = field(
        default=None,
        metadata={"help": "Module names to adapt (default: peft's choice for the architecture, "
                          "query and value for XLM-R and BERT)."})


@dataclass
class DataArguments:
    """Training and evaluation corpora.

    A *source spec* names one corpus:

    * ``conll5:en``, ``xtreme40:de`` — a crop-hf builder and its config (through
      ``crop_hf.load_dataset``; other names go on to ``datasets.load_dataset``);
    * ``hub:NAME[:CONFIG]`` — straight to ``datasets.load_dataset`` (``hub:unimelb-nlp/wikiann:de``);
    * ``disk:PATH`` or an existing folder — a corpus saved with ``save_to_disk`` (a synthesized
      corpus), or any folder ``datasets.load_dataset`` reads;
    * ``?key=value&...`` at the end passes keyword arguments to the loader
      (``conll5:de?data_dir=/data/conll2003-de``).

    Each corpus has ``tokens`` and ``ner_tags`` columns (``ClassLabel`` ids or tag strings, IOB2)
    and may have a ``lang`` column.
    """

    train_sources: list[str] = field(
        default_factory=list, metadata={"help": "Source specs of the training corpora (their train split)."})
    train_weights: list[float] | None = field(
        default=None,
        metadata={"help": "Sampling weight of each training source: how many times each of its sentences is "
                          "seen per epoch on average (0.5 = a fresh random half every epoch, 2 = twice). "
                          "Default 1 for every source."})
    eval_sources: list[str] = field(
        default_factory=list,
        metadata={"help": "Source specs evaluated per language (e.g. conll5:es conll5:nl conll5:de conll5:no)."})
    eval_split: str | None = field(
        default="validation", metadata={"help": "Split evaluated after training ('' or null to skip)."})
    test_split: str | None = field(
        default="test", metadata={"help": "Second split evaluated after training ('' or null to skip)."})
    label_map: list[str] | None = field(
        default=None,
        metadata={"help": "Entity type renames applied to every source before labels are reconciled, "
                          "as OLD=NEW (e.g. GPE_LOC=LOC); NEW may be O to drop a type."})
    max_seq_length: int = field(
        default=256, metadata={"help": "Subword limit per sentence; words beyond it are not trained on and "
                                       "are predicted O at evaluation (a warning counts them)."})
    max_train_samples: int | None = field(
        default=None, metadata={"help": "Keep only the first N sentences of each training source (debugging)."})
    max_eval_samples: int | None = field(
        default=None, metadata={"help": "Keep only the first N sentences of each evaluation split (debugging)."})
    average_exclude: list[str] | None = field(
        default=None,
        metadata={"help": "Languages left out of the 'avg' column (e.g. en, for zero-shot averages as in the "
                          "CroP tables)."})


@dataclass
class NerTrainingArguments:
    """Optimisation, checkpointing and publishing."""

    output_dir: str = field(metadata={"help": "Folder for the model, checkpoints, all_results.json and the card."})
    per_device_train_batch_size: int = field(default=24, metadata={"help": "Sentences per batch and process."})
    per_device_eval_batch_size: int = field(default=64, metadata={"help": "Sentences per evaluation batch."})
    learning_rate: float = field(default=2e-5, metadata={"help": "Peak learning rate of AdamW."})
    weight_decay: float = field(default=0.01, metadata={"help": "AdamW weight decay (not on biases and norms)."})
    num_train_epochs: float = field(default=3.0, metadata={"help": "Passes over the (weighted) training mix."})
    max_train_steps: int | None = field(
        default=None, metadata={"help": "Optimizer steps to train; overrides num_train_epochs."})
    gradient_accumulation_steps: int = field(
        default=1, metadata={"help": "Batches whose gradients are summed before each optimizer step."})
    warmup_ratio: float = field(
        default=0.1, metadata={"help": "Fraction of the optimizer steps spent warming the learning rate up "
                                       "linearly (10% as in the CroP paper); it then decays linearly to 0."})
    max_grad_norm: float = field(default=1.0, metadata={"help": "Gradient clipping norm (0 disables)."})
    mixed_precision: Literal["no", "fp16", "bf16"] | None = field(
        default=None,
        metadata={"help": "Mixed precision; default: what `accelerate launch`/`accelerate config` chose."})
    seed: int = field(default=42, metadata={"help": "Seed of weights, dropout and the sampling of the training mix."})
    checkpointing_steps: str | None = field(
        default=None,
        metadata={"help": "Save the full training state (accelerator.save_state) every N optimizer steps, or "
                          "'epoch' at the end of each epoch, under output_dir/step_N or epoch_N."})
    resume_from_checkpoint: str | None = field(
        default=None,
        metadata={"help": "Checkpoint folder to continue from, or 'latest' for the newest in output_dir; training "
                          "continues exactly where it stopped (same batches, dropout and schedule)."})
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


ARGUMENT_CLASSES = (ModelArguments, DataArguments, NerTrainingArguments)


def parse_arguments(argv: Sequence[str] | None = None):
    """Read ``(ModelArguments, DataArguments, NerTrainingArguments)`` from ``argv``.

    ``argv`` may start with a ``.json``/``.yaml``/``.yml`` file of argument values; options given
    after it override the file. Unknown keys in the file are an error that names them.
    """
    from crop_hf.arguments import parse_config

    return parse_config(ARGUMENT_CLASSES, argv, prog="crop-hf train-ner")


def arguments_to_dict(*groups) -> dict:
    """All fields of the argument dataclasses as one flat dict (hub token left out)."""
    merged: dict = {}
    for group in groups:
        merged.update(asdict(group))
    merged.pop("hub_token", None)
    return merged
