"""Per-record pieces every long job shares: a model call that drops one refused record, entity spans.

A corpus job (synthesis, translate-and-align, ...) calls its models batch by batch; one record a
pipeline refuses must not stop the run (:func:`each_or_none`). :func:`entity_spans` turns what a
``token-classification`` pipeline returns into the character spans projection reads.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

logger = logging.getLogger(__name__)

__all__ = ["each_or_none", "entity_spans"]


def each_or_none(call: Callable[[list], list], items: list) -> list:
    """``call(items)``; if a record makes it raise, redo the batch one record at a time.

    Every pipeline stage of a long job calls its model through this (synthesis, translate-and-align).

    A record the pipeline refuses (``ValueError``/``TypeError``, e.g. text it cannot mark) gets
    ``None`` and is dropped with reason ``pipeline_error`` instead of stopping the corpus run. Other
    errors (out of memory, a missing model) are not about one record and propagate.
    """
    refused = (ValueError, TypeError)
    if not items:
        return []
    try:
        return list(call(items))
    except refused as error:
        logger.warning("a batch of %d failed (%s); retrying its records one by one", len(items), error)
    results = []
    for item in items:
        try:
            results.append(call([item])[0])
        except refused as error:
            logger.warning("dropping a record the pipeline refused: %s", error)
            results.append(None)
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
