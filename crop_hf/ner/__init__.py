"""Multilingual NER: arguments, training data, the trainer and per-language evaluation.

The same file shape as every task family (:mod:`crop_hf.parsing`, :mod:`crop_hf.translation`):

* :mod:`crop_hf.ner.arguments` — :class:`ModelArguments`, :class:`DataArguments`,
  :class:`NerTrainingArguments` and :func:`parse_arguments`;
* :mod:`crop_hf.ner.data` — the label set to train with (:func:`choose_labels`) and tokenized rows;
* :mod:`crop_hf.ner.train` — :func:`train_ner` on the training engine (:mod:`crop_hf.engine`);
* :mod:`crop_hf.ner.evaluate` — seqeval scores per language, the table, :func:`evaluate_pretrained`.

``examples/train_ner.py`` is a thin wrapper over :func:`train_ner`:

>>> from crop_hf.ner import parse_arguments, train_ner  # doctest: +SKIP
>>> train_ner(*parse_arguments(["examples/configs/conll5_xlmr_base.yaml"]))  # doctest: +SKIP

Importing this package stays light; torch, transformers and datasets load when training starts.
"""

from crop_hf.ner.arguments import DataArguments, ModelArguments, NerTrainingArguments, parse_arguments
from crop_hf.ner.data import choose_labels
from crop_hf.ner.evaluate import (
    LanguageScores,
    NerEvaluation,
    evaluate_ner,
    evaluate_pretrained,
    format_ner_table,
    load_eval_sets,
    predict_tags,
    score_tags,
)
from crop_hf.ner.train import TrainingResult, train_ner

__all__ = [
    "DataArguments",
    "LanguageScores",
    "ModelArguments",
    "NerEvaluation",
    "NerTrainingArguments",
    "TrainingResult",
    "choose_labels",
    "evaluate_ner",
    "evaluate_pretrained",
    "format_ner_table",
    "load_eval_sets",
    "parse_arguments",
    "predict_tags",
    "score_tags",
    "train_ner",
]
