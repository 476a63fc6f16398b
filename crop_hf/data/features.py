"""The shape of NER corpora: one ``datasets.Features`` schema, and tag names read from a tag column.

Every NER dataset crop-hf writes (builders, synthesized corpora, self-training corpora) has the
columns of :func:`ner_features`: ``tokens`` and ``ner_tags`` (a sequence of ``ClassLabel`` ids
over IOB2 names), usually ``lang``, plus whatever provenance a writer adds. Readers accept
``ner_tags`` either as ``ClassLabel`` ids or as tag strings; :func:`tag_names` is the one place
that tells the two apart.

Importing this module does not import ``datasets``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from crop_hf.labels import LabelConflictError, LabelSet, rename_tag

__all__ = ["encode_tags", "label_names_of", "ner_features", "tag_names", "tag_strings"]


def ner_features(label_names: Sequence[str], *, id: bool = False, lang: bool = True,
                 extra: Mapping[str, Any] | None = None):
    """The ``datasets.Features`` of an NER corpus: ``[id,] tokens, ner_tags, [lang,]`` then ``extra``.

    ``ner_tags`` is a list of ``ClassLabel`` over ``label_names`` (IOB2, ``O`` first). ``extra``
    maps further column names to features; a value ``"string"`` or ``["string"]`` is a shorthand
    for ``Value("string")`` or a list of them.

    >>> list(ner_features(["O", "B-PER", "I-PER"], extra={"reason": "string"}))
    ['tokens', 'ner_tags', 'lang', 'reason']
    """
    import datasets

    def feature(value):
        if value == "string":
            return datasets.Value("string")
        if value == ["string"]:
            return datasets.List(datasets.Value("string"))
        return value

    columns: dict[str, Any] = {}
    if id:
        columns["id"] = datasets.Value("string")
    columns["tokens"] = datasets.List(datasets.Value("string"))
    columns["ner_tags"] = datasets.List(datasets.ClassLabel(names=list(label_names)))
    if lang:
        columns["lang"] = datasets.Value("string")
    for name, value in (extra or {}).items():
        columns[name] = feature(value)
    return datasets.Features(columns)


def tag_names(data: Any, column: str = "ner_tags") -> list[str] | None:
    """The ``ClassLabel`` names of a tag column, or ``None`` when it holds tag strings (or is absent).

    ``data`` is a ``Dataset``/``IterableDataset``, a ``DatasetDict`` (its first split), or a
    ``Features`` mapping. This is how every crop-hf component turns tag ids into names, so a
    ``datasets.Dataset`` never needs ``label_names=`` passed by hand.
    """
    features = getattr(data, "features", data)
    if features is None and hasattr(data, "values"):  # a DatasetDict
        first = next(iter(data.values()), None)
        features = getattr(first, "features", None)
    if not isinstance(features, Mapping) or column not in features:
        return None
    feature = features[column]
    inner = getattr(feature, "feature", feature)
    names = getattr(inner, "names", None)
    return list(names) if names else None


def label_names_of(dataset, column: str = "ner_tags") -> tuple[list[str], bool]:
    """``(names, is_class_label)`` of a tag column: the ``ClassLabel`` names, or the tag strings found."""
    if column not in dataset.column_names:
        raise KeyError(f"corpus has no {column!r} column (columns: {dataset.column_names})")
    names = tag_names(dataset, column)
    if names is not None:
        return names, True
    seen: dict[str, None] = {"O": None}
    for tags in dataset[column]:
        for tag in tags or ():
            if not isinstance(tag, str):
                raise TypeError(f"{column!r} holds {type(tag).__name__} values but is not a ClassLabel sequence: "
                                "cast it to ClassLabel or store tag strings")
            seen.setdefault(tag)
    return list(seen), False



def tag_strings(dataset, label_map: Mapping[str, str] | None = None, column: str = "ner_tags") -> list[list[str]]:
    """The tags of every row of ``column`` as tag strings, after ``label_map`` renames.

    A row whose value is ``None`` (a discarded sentence without labels) gives ``None``.
    """
    names, is_class_label = label_names_of(dataset, column)
    label_map = label_map or {}
    renamed = [rename_tag(name, label_map) for name in names] if is_class_label else None
    return [None if tags is None else [renamed[t] for t in tags] if renamed is not None
            else [rename_tag(t, label_map) for t in tags] for tags in dataset[column]]


def encode_tags(dataset, label_set: LabelSet, label_map: Mapping[str, str] | None = None, where: str = "corpus"):
    """Add ``word_labels``: the ``ner_tags`` as ids of ``label_set``, matched by name after ``label_map``."""
    names, is_class_label = label_names_of(dataset)
    label_map = label_map or {}
    mapping = label_set.label2id
    missing = sorted({rename_tag(n, label_map) for n in names} - set(mapping))
    if missing:
        raise LabelConflictError(f"{where}: labels {missing} are not in the label set {list(label_set.names)}")
    by_id = [mapping[rename_tag(name, label_map)] for name in names] if is_class_label else None

    def convert(batch):
        if by_id is not None:
            return {"word_labels": [[by_id[t] for t in tags] for tags in batch["ner_tags"]]}
        return {"word_labels": [[mapping[rename_tag(t, label_map)] for t in tags] for tags in batch["ner_tags"]]}

    return dataset.map(convert, batched=True, desc="encoding labels")
