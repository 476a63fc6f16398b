"""Per-record pieces every long job shares: its rows' columns, a model call that drops one refused record, entity spans.

A corpus job's kept and dropped rows are dataclasses; their ``datasets.Features`` and the column
descriptions of a dataset card come from the fields (:func:`row_features`, :func:`row_descriptions`).
A job calls its models batch by batch; one record a pipeline refuses must not stop the run
(:func:`each_or_none`). :func:`entity_spans` turns what a ``token-classification`` pipeline returns
into the character spans projection reads.
"""

from __future__ import annotations

import dataclasses
import logging
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

logger = logging.getLogger(__name__)

__all__ = ["each_or_none", "entity_spans", "row_descriptions", "row_features"]


#: What a pipeline raises for one record it refuses (text it cannot mark, a translation too long to tag).
REFUSED = (ValueError, TypeError)


def each_or_none(call: Callable[[list], list], items: list) -> list:
    """``call(items)``; if a record makes it raise, find it by halving the batch, and call the rest in batches.

    Every pipeline stage of a long job calls its model through this (synthesis, translate-and-align).

    A record the pipeline refuses (``ValueError``/``TypeError``, e.g. text it cannot mark) gets
    ``None`` and is dropped with reason ``pipeline_error`` instead of stopping the corpus run. Other
    errors (out of memory, a missing model) are not about one record and propagate. The halving
    costs about ``2 log2(n)`` calls per refused record, where retrying a shard of 8,000 tagger inputs
    one at a time for one overlong translation cost 8,000 single calls.
    """
    if not items:
        return []
    try:
        return list(call(items))
    except REFUSED as error:
        if len(items) == 1:  # the refused record is known: no second call
            logger.warning("dropping a record the pipeline refused: %s", error)
            return [None]
        logger.warning("a batch of %d failed (%s); looking for the refused records in halves of it", len(items),
                       error)
    return _halves(call, items)


def _halves(call: Callable[[list], list], items: list) -> list:
    """The results of a batch of two or more records that failed together: each half is called once,
    and a half that fails is halved again, down to the single records it drops."""
    middle = len(items) // 2
    results = []
    for half in (items[:middle], items[middle:]):
        try:
            results += list(call(half)) if len(half) > 1 else [call(half)[0]]
            continue
        except REFUSED as error:
            if len(half) == 1:
                logger.warning("dropping a record the pipeline refused: %s", error)
                results.append(None)
                continue
        results += _halves(call, half)
    return results


def entity_spans(text: str, entities: list[dict]) -> list[dict]:
    """Token-classification entities as ``{"start", "end", "label"}`` character spans, trimmed of spaces.

    ``entities`` is what a ``token-classification`` pipeline returned for ``text`` (grouped, with
    ``entity_group``, or per token, with ``entity``); a span that overlaps the one kept before it is
    left out, so the spans never overlap.
    """
    spans = []
    for entity in entities:
        start, end = int(entity["start"]), int(entity["end"])
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if start < end and (not spans or start >= spans[-1]["end"]):
            spans.append({"start": start, "end": end, "label": entity.get("entity_group", entity.get("entity"))})
    return spans


def _feature(annotation: Any) -> Any:
    import datasets

    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        inner = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        if len(inner) != 1:
            raise TypeError(f"a row field may be one type or None, not {annotation}")
        return _feature(inner[0])  # None is a missing value, not a type of its own
    if typing.get_origin(annotation) is list:
        (item,) = typing.get_args(annotation)
        return datasets.List(_feature(item))
    values = {str: "string", int: "int64", float: "float64", bool: "bool"}
    if annotation in values:
        return datasets.Value(values[annotation])
    raise TypeError(f"no datasets feature for a row field of type {annotation}")


def row_features(row_type: type, overrides: Mapping[str, Any] | None = None) -> Any:
    """The ``datasets.Features`` of a row dataclass: one column per field, in field order.

    ``str``/``int``/``float``/``bool`` become ``Value``, ``list[T]`` a ``List``, ``T | None`` the
    feature of ``T`` (a missing value); ``overrides`` replaces the feature of named fields (e.g.
    ``ClassLabel`` tags).
    """
    import datasets

    hints = typing.get_type_hints(row_type)
    overrides = overrides or {}
    unknown = set(overrides) - {field.name for field in dataclasses.fields(row_type)}
    if unknown:
        raise KeyError(f"{row_type.__name__} has no field {sorted(unknown)}")
    return datasets.Features({field.name: overrides[field.name] if field.name in overrides
                              else _feature(hints[field.name]) for field in dataclasses.fields(row_type)})


def row_descriptions(row_type: type) -> dict[str, str]:
    """``{column: description}`` of a row dataclass, from each field's ``metadata["help"]`` (for dataset cards)."""
    return {field.name: field.metadata["help"] for field in dataclasses.fields(row_type)}
