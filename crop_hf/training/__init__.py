"""Multilingual NER training with Accelerate: arguments, corpus mixing, label alignment, the loop.

``examples/train_ner.py`` is a thin wrapper over :func:`train_ner`:

>>> from crop_hf.training import parse_arguments, train_ner  # doctest: +SKIP
>>> train_ner(*parse_arguments(["examples/configs/conll5_xlmr_base.yaml"]))  # doctest: +SKIP

Importing this package stays light; torch, transformers and datasets load when training starts.
"""

from crop_hf.data.sources import WeightedMixSampler, load_source, parse_source_spec
from crop_hf.data.tokenization import align_labels_to_first_subword, tokenize_words
from crop_hf.labels import LabelConflictError, reconcile_labels
from crop_hf.training.arguments import DataArguments, ModelArguments, NerTrainingArguments, parse_arguments
from crop_hf.training.loop import TrainingResult, choose_labels, train_ner

__all__ = [
    "DataArguments",
    "LabelConflictError",
    "ModelArguments",
    "NerTrainingArguments",
    "TrainingResult",
    "WeightedMixSampler",
    "align_labels_to_first_subword",
    "choose_labels",
    "load_source",
    "parse_arguments",
    "parse_source_spec",
    "reconcile_labels",
    "tokenize_words",
    "train_ner",
]
