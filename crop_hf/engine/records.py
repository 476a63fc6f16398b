"""Per-record pieces every long job shares: its rows' columns, a model call that drops one refused record, the
count of dropped records its log shows, entity spans.

A corpus job's kept and dropped rows are dataclasses; their ``datasets.Features`` and the column
descriptions of a dataset card come from the fields (:func:`row_features`, :func:`row_descriptions`).
A job calls its models batch by batch; one record a pipeline refuses must not stop the run
(:func:`each_or_none`). A job drops records by the thousand: :class:`DropTally` counts them per
reason, so that its log says each reason once per shard. :func:`entity_spans` turns what a
``token-classification`` pipeline returns into the character spans projection reads.
"""

from __future__ import annotations

import dataclasses
import logging
import types
import typing
from collections import Counter
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

logger = logging.getLogger(__name__)

__all__ = ["DropTally", "each_or_none", "entity_spans", "row_descriptions", "row_features"]


#: What a pipeline raises for one record it refuses (text it cannot mark, a translation too long to tag).
REFUSED = (ValueError, TypeError)


class DropTally:
    """The records one shard (or one read of an input) dropped, counted per reason with the first few of each.

    A long job drops records by the thousand, and a log line each buried everything else (28
    warnings for 200 sentences). A job adds each drop here and calls :meth:`log` once, at the end
    of the shard: one line per reason, with its count and its first record. The records
    themselves are the rows of ``discarded/`` (``see``).

    ``where`` starts every line (``"es shard 0"``, ``"--english en.tsv"``); a record given by its
    index in the shard is named ``"<noun> <offset + index>"``: with ``offset`` the index of the
    shard's first record, that is its index in the whole input (from 0, as ``datasets`` numbers rows).

    >>> tally = DropTally("es shard 2", offset=2000)
    >>> tally.add("pipeline_error", 17, "cannot mark 'x'")
    >>> tally.add("pipeline_error", 40, "cannot mark 'y'")
    >>> tally.add("no_translation", "en.tsv:9", "en.tsv:9: the translator returned nothing")
    >>> print("\\n".join(tally.lines()))
    es shard 2: 2 records dropped as pipeline_error (first: record 2017: cannot mark 'x'); see discarded/
    es shard 2: 1 record dropped as no_translation (first: en.tsv:9: the translator returned nothing); see discarded/
    """

    def __init__(self, where: str, *, offset: int = 0, noun: str = "record", see: str | None = "discarded/",
                 keep: int = 5) -> None:
        self.where = where
        self.offset = offset
        self.noun = noun
        self.see = see
        #: how many records of each reason are remembered (:meth:`records`)
        self.keep = keep
        self.counts: Counter[str] = Counter()
        self._examples: dict[str, list[tuple[str, str]]] = {}

    def add(self, reason: str, record: int | str, detail: Any = "") -> None:
        """Count one dropped record: ``record`` is its index in the shard or its name (``"en.tsv:12"``),
        ``detail`` why it was dropped (an error, say; written on one line, without the record's name
        where it starts with it)."""
        self.counts[reason] += 1
        examples = self._examples.setdefault(reason, [])
        if len(examples) < self.keep:
            name = f"{self.noun} {self.offset + record}" if isinstance(record, int) else str(record)
            text = " ".join(str(detail).split())
            if text == name or text.startswith(f"{name}: "):
                text = text[len(name) + 2:]
            examples.append((name, text))

    @property
    def total(self) -> int:
        """How many records were dropped, all reasons together."""
        return sum(self.counts.values())

    def records(self, reason: str) -> list[str]:
        """The names of the first records (at most ``keep``) dropped for ``reason``."""
        return [name for name, _ in self._examples.get(reason, [])]

    def first(self, reason: str) -> str:
        """The first record dropped for ``reason``, with its detail (``"record 17: cannot mark 'x'"``)."""
        name, detail = self._examples[reason][0]
        return f"{name}: {detail}" if detail else name

    def line(self, reason: str) -> str:
        """What the log says of ``reason``: its count and its first record, with its detail."""
        count = self.counts[reason]
        see = f"; see {self.see}" if self.see else ""
        return (f"{self.where}: {count} {self.noun}{'' if count == 1 else 's'} dropped as {reason} "
                f"(first: {self.first(reason)}){see}")

    def lines(self) -> list[str]:
        """One :meth:`line` per reason, in the order the reasons first came."""
        return [self.line(reason) for reason in self.counts]

    def log(self, log: logging.Logger, level: int = logging.WARNING) -> None:
        """Log :meth:`lines` on ``log`` (the job's logger), one record each; nothing when nothing was dropped."""
        for line in self.lines():
            log.log(level, "%s", line, stacklevel=2)  # where the job logged it, not here


def each_or_none(call: Callable[[list], list], items: list,
                 refused: Callable[[int, Exception], None] | None = None) -> list:
    """``call(items)``; if a record makes it raise, find it by halving the batch, and call the rest in batches.

    Every pipeline stage of a long job calls its model through this (synthesis, translate-and-align).

    A record the pipeline refuses (``ValueError``/``TypeError``, e.g. text it cannot mark) gets
    ``None`` and is dropped with reason ``pipeline_error`` instead of stopping the corpus run. Other
    errors (out of memory, a missing model) are not about one record and propagate. The halving
    costs about ``2 log2(n)`` calls per refused record, where retrying a shard of 8,000 tagger inputs
    one at a time for one overlong translation cost 8,000 single calls.

    ``refused(index, error)`` is told each refused record (its index in ``items``) and its error,
    so that a job counts it in its shard's :class:`DropTally`; without it, the call's refusals are
    logged in one line (a count and the first error), never a line per record.
    """
    if not items:
        return []
    try:
        return list(call(items))
    except REFUSED as error:
        failed = error
    tally = None
    if refused is None:  # said once for the whole call, however many records it refused
        tally = DropTally("a pipeline call", see=None)
        refused = partial(tally.add, "pipeline_error")
    if len(items) == 1:  # the refused record is known: no second call
        refused(0, failed)
        results = [None]
    else:
        logger.debug("a batch of %d failed (%s); looking for the refused records in halves of it", len(items), failed)
        results = _halves(call, items, 0, refused)
    if tally is not None:
        logger.warning("a pipeline refused %d of %d records, dropped (first: %s)", tally.total, len(items),
                       tally.first("pipeline_error"))
    return results


def _halves(call: Callable[[list], list], items: list, start: int, refused: Callable[[int, Exception], None]) -> list:
    """The results of a batch of two or more records that failed together: each half is called once,
    and a half that fails is halved again, down to the single records it drops (told to ``refused``
    with their index: ``start`` is the batch's first)."""
    middle = len(items) // 2
    results = []
    for offset, half in ((0, items[:middle]), (middle, items[middle:])):
        try:
            results += list(call(half)) if len(half) > 1 else [call(half)[0]]
            continue
        except REFUSED as error:
            if len(half) == 1:
                refused(start + offset, error)
                results.append(None)
                continue
        results += _halves(call, half, start + offset, refused)
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
