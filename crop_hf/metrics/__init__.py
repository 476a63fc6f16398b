"""Evaluation measures of crop-hf, as plain functions over plain Python data, and ``evaluate`` modules.

* :func:`projection_scores` — how good projected labels are: span precision, recall and F1
  against gold target labels (seqeval's default, conlleval-compatible reading of the tags) and
  the share of sentences kept (CroP's Figure 6 reports this F1 per language).

>>> gold = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "O"]]
>>> projected = [["B-PER", "I-PER", "O", "O"], None]  # the second sentence was dropped
>>> scores = projection_scores(projected, gold)
>>> scores["precision"], scores["recall"], scores["kept_rate"]
(1.0, 0.5, 0.5)

* :func:`evaluate_projection` (:mod:`crop_hf.metrics.projection`) — every projection method and
  aligner scored against a gold-tagged translation in one table (``crop-hf evaluate-projection``),
  with :func:`~crop_hf.metrics.projection.projection_errors`, the error breakdown.

* :func:`crop_hf.metrics.parsing.parse_scores` — semantic parsing as CSTOP scores it: exact match
  of bracket parses, intent accuracy and slot micro-F1, overall, per domain and on nested gold trees.

The parsing measures also ship as ``evaluate`` modules inside the package, so they load offline:

>>> import evaluate  # doctest: +SKIP
>>> exact_match = evaluate.load(path("exact_match_parse"))  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from crop_hf.metrics.projection import evaluate_projection, projection_errors
from crop_hf.ner.evaluate import score_tags

__all__ = ["EVALUATE_MODULES", "evaluate_projection", "path", "projection_errors", "projection_scores"]

#: The ``evaluate`` modules shipped in this package (each a folder beside this file).
EVALUATE_MODULES = ("exact_match_parse", "intent_accuracy", "slot_f1")


def path(name: str) -> str:
    """The folder of one of this package's ``evaluate`` modules, for ``evaluate.load(path(name))``.

    >>> Path(path("exact_match_parse")).name
    'exact_match_parse'
    """
    if name not in EVALUATE_MODULES:
        raise KeyError(f"no crop-hf metric {name!r}; expected one of {', '.join(EVALUATE_MODULES)}")
    return str(Path(__file__).resolve().parent / name)


def projection_scores(
    predictions: Sequence[Sequence[str] | Mapping[str, Any] | None],
    references: Sequence[Sequence[str]],
    *,
    kept: Sequence[bool] | None = None,
    over: Literal["kept", "all"] = "kept",
) -> dict[str, Any]:
    """Score projected tags against gold tags of the same target tokens.

    Args:
        predictions: per sentence, the projected IOB2 tags, a projection output (a dict with
            ``tags`` and ``kept``, as :class:`crop_hf.projection.ProjectionPipeline` returns), or
            ``None`` for a sentence that was dropped.
        references: the gold IOB2 tags of each sentence.
        kept: which sentences were kept, when ``predictions`` are bare tag lists that include
            dropped ones.
        over: ``"kept"`` scores only kept sentences (the quality of the projected corpus, as in
            CroP); ``"all"`` also counts every gold entity of a dropped sentence as missed.

    Returns:
        ``precision``, ``recall``, ``f1`` (micro-averaged over entities: a prediction is correct
        when type, start and end all match), ``per_type`` (the same per entity type, with
        ``support``), ``sentences``, ``kept`` and ``kept_rate``.
    """
    if over not in {"kept", "all"}:
        raise ValueError(f"over must be 'kept' or 'all', got {over!r}")
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions but {len(references)} references")
    if kept is not None and len(kept) != len(predictions):
        raise ValueError(f"{len(kept)} kept flags but {len(predictions)} predictions")
    # A dropped sentence scored over "all" is one whose every gold entity was missed: all-O
    # predictions. The scoring itself is evaluation's seqeval scoring, so the two agree.
    gold_tags: list[list[str]] = []
    projected_tags: list[list[str]] = []
    n_kept = 0
    for index, (prediction, reference) in enumerate(zip(predictions, references, strict=True)):
        is_kept = prediction is not None
        if isinstance(prediction, Mapping):
            is_kept = bool(prediction.get("kept", True))
            prediction = prediction["tags"]
        if kept is not None:
            is_kept = is_kept and bool(kept[index])
        n_kept += is_kept
        if not is_kept:
            if over == "all":
                gold_tags.append(list(reference))
                projected_tags.append(["O"] * len(reference))
            continue
        if len(prediction) != len(reference):
            raise ValueError(f"sentence {index}: {len(prediction)} projected tags but {len(reference)} gold tags; "
                             "projection and gold must tag the same tokens")
        gold_tags.append(list(reference))
        projected_tags.append(list(prediction))
    scores = score_tags(gold_tags, projected_tags) if gold_tags else None
    return {
        "precision": scores.precision if scores else 0.0,
        "recall": scores.recall if scores else 0.0,
        "f1": scores.f1 if scores else 0.0,
        "per_type": scores.per_type if scores else {},
        "sentences": len(references),
        "kept": n_kept,
        "kept_rate": n_kept / len(references) if references else 0.0,
    }
