"""Scoring a parser: exact match of whole trees, intent accuracy and slot F1 (per domain when rows have one).

Besides :func:`crop_hf.metrics.parsing.parse_scores` (which also scores the nested and the flat
gold trees apart), the scores say how many gold trees the model cannot represent at all
(``unrepresentable``: deeper than its ``max_intent_depth``, a slot without words, ...), by reason,
with the first few locations (``file:line`` from a ``source`` column, else the row).
"""

from __future__ import annotations

from typing import Any

from crop_hf.data.readers import SkippedRecords
from crop_hf.metrics.parsing import parse_scores
from crop_hf.parsing.data import row_frames
from crop_hf.parsing.predict import predict_parses, to_parse

__all__ = ["evaluate_parser"]


def _gold_parses(rows) -> list[str]:
    if "parse" in rows.column_names:
        return list(rows["parse"])
    return [to_parse(t, i, s) for t, i, s in zip(rows["tokens"], rows["intent"], rows["slot_tags"], strict=True)]


def evaluate_parser(model, tokenizer, rows, *, batch_size: int = 64, max_length: int = 128,
                    show_progress: bool = False, where: str = "rows", seen=None) -> tuple[dict[str, Any], list]:
    """``(parse_scores, predictions)`` of a model on rows with ``tokens`` and ``parse`` (or tags).

    ``seen``: the training rows (a ``parse`` or tag columns, as ``rows``); the scores then hold
    ``seen`` and ``unseen``, the rows whose gold parse repeats a training parse and the others
    (:func:`~crop_hf.metrics.parsing.parse_scores`).

    ``scores["unrepresentable"]``: ``count``, ``reasons`` and ``examples`` (with file:line, or
    ``where`` and the row) of the gold trees ``model`` cannot produce; they stay in the scores, as wrong.
    """
    predictions = predict_parses(model, tokenizer, rows["tokens"], batch_size=batch_size, max_length=max_length,
                                 show_progress=show_progress)
    domains = rows["domain"] if "domain" in rows.column_names else None
    scores = parse_scores([p.parse for p in predictions], _gold_parses(rows), domains,
                          None if seen is None else _gold_parses(seen))
    unrepresentable = SkippedRecords()
    row_frames(rows, model.config.max_intent_depth, where, unrepresentable)
    scores["unrepresentable"] = {"count": unrepresentable.total, "reasons": dict(unrepresentable.counts),
                                 "examples": list(unrepresentable.examples)}
    return scores, predictions
