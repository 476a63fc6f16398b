"""Options of NER training as dataclasses that ``HfArgumentParser`` reads from a command line or a file.

Three groups, as in the transformers examples: what to start from (:class:`ModelArguments`, with
the LoRA options of :class:`crop_hf.engine.arguments.LoraArguments`), what to train and evaluate
on (:class:`DataArguments`) and how to train (:class:`NerTrainingArguments`: the engine's
:class:`~crop_hf.engine.arguments.TrainingLoopArguments` with NER's defaults). :func:`parse_arguments`
accepts a JSON or YAML file as first argument and command-line overrides after it:

>>> model_args, data_args, training_args = parse_arguments(
...     ["--model_name_or_path", "m", "--train_sources", "conll5:en", "--output_dir", "out"])
>>> data_args.train_sources, training_args.warmup_ratio
(['conll5:en'], 0.1)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from crop_hf.arguments import parse_config
from crop_hf.engine.arguments import LoraArguments, TrainingLoopArguments

__all__ = ["ARGUMENT_CLASSES", "DataArguments", "ModelArguments", "NerTrainingArguments", "parse_arguments"]


@dataclass
class ModelArguments(LoraArguments):
    """The model to fine-tune and how to adapt it (LoRA targets default to peft's choice: query and value
    for XLM-R and BERT)."""

    model_name_or_path: str = field(
        metadata={"help": "Hub id or folder of the pretrained model, e.g. FacebookAI/xlm-roberta-base."})
    tokenizer_name: str | None = field(
        default=None, metadata={"help": "Tokenizer to use when it differs from model_name_or_path."})
    cache_dir: str | None = field(default=None, metadata={"help": "Where downloaded models are stored."})
    ignore_mismatched_sizes: bool = field(
        default=False,
        metadata={"help": "Start a new classification head when the model was fine-tuned on labels the training "
                          "data does not share (otherwise this is an error)."})


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
class NerTrainingArguments(TrainingLoopArguments):
    """Optimisation, time budget, checkpointing and publishing: the engine's options with NER's defaults
    (24 sentences a batch, learning rate 2e-5, weight decay 0.01, 10% warm-up, as in the CroP paper)."""


ARGUMENT_CLASSES = (ModelArguments, DataArguments, NerTrainingArguments)


def parse_arguments(argv: Sequence[str] | None = None):
    """Read ``(ModelArguments, DataArguments, NerTrainingArguments)`` from ``argv``.

    ``argv`` may start with a ``.json``/``.yaml``/``.yml`` file of argument values; options given
    after it override the file. Unknown keys in the file are an error that names them.
    """
    return parse_config(ARGUMENT_CLASSES, argv, prog="crop-hf train-ner")
