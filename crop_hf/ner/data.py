"""NER training data: the label set to train with, and a corpus's training split as subword rows.

Corpus specs, loading and weighted mixing live in :mod:`crop_hf.data.sources`; tag columns in
:mod:`crop_hf.data.features`; words to subwords in :mod:`crop_hf.data.tokenization`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from crop_hf.data.features import encode_tags
from crop_hf.data.tokenization import tokenize_words
from crop_hf.labels import LabelConflictError, LabelSet, reconcile_labels

__all__ = ["choose_labels", "training_rows"]


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


def training_rows(source: Any, label_set: LabelSet, label_map: Mapping[str, str] | None, tokenizer: Any,
                  max_length: int, max_samples: int | None):
    """The train split of an :class:`~crop_hf.data.sources.NerSource` as ``input_ids``, ``attention_mask``
    and first-subword ``labels`` (ids of ``label_set``), its first ``max_samples`` sentences only if given."""
    rows = source.split("train")
    if max_samples is not None:
        rows = rows.select(range(min(max_samples, len(rows))))
    rows = encode_tags(rows, label_set, label_map, where=source.spec)

    def tokenize(batch):
        out = tokenize_words(tokenizer, batch["tokens"], max_length, batch["word_labels"])
        return {"input_ids": out["input_ids"], "attention_mask": out["attention_mask"], "labels": out["labels"]}

    return rows.map(tokenize, batched=True, remove_columns=rows.column_names, desc=f"tokenizing {source.spec}")
