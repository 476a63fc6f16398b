"""Scoring a parser: exact match, intent accuracy and slot F1 (per domain when rows have one)."""

from __future__ import annotations

from typing import Any

__all__ = ["evaluate_parser"]


def _gold_parses(rows) -> list[str]:
    from crop_hf.parsing.predict import to_parse

    if "parse" in rows.column_names:
        return list(rows["parse"])
    return [to_parse(t, i, s) for t, i, s in zip(rows["tokens"], rows["intent"], rows["slot_tags"], strict=True)]


def evaluate_parser(model, tokenizer, rows, *, batch_size: int = 64, max_length: int = 128,
                    show_progress: bool = False) -> tuple[dict[str, Any], list]:
    """``(parse_scores, predictions)`` of a model on rows with ``tokens`` and ``parse`` (or tags)."""
    from crop_hf.metrics.parsing import parse_scores
    from crop_hf.parsing.predict import predict_parses

    predictions = predict_parses(model, tokenizer, rows["tokens"], batch_size=batch_size, max_length=max_length,
                                 show_progress=show_progress)
    domains = rows["domain"] if "domain" in rows.column_names else None
    scores = parse_scores([p.parse for p in predictions], _gold_parses(rows), domains)
    return scores, predictions
