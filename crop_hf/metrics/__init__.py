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

* :func:`crop_hf.metrics.corpus.evaluate_corpus` — a labeled corpus (a synthesized, self-trained or
  any NER corpus) scored against gold labels of the same sentences, per type, per drop reason and
  per error kind, without a model (``crop-hf evaluate-corpus``).

* :func:`crop_hf.metrics.parsing.parse_scores` — semantic parsing as CSTOP scores it: exact match
  of bracket parses, intent accuracy and slot micro-F1, overall, per domain and on nested gold trees.

The parsing measures also ship as ``evaluate`` modules inside the package, so they load offline:

>>> import evaluate  # doctest: +SKIP
>>> exact_match = evaluate.load(path("exact_match_parse"))  # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path

from crop_hf.metrics.projection import evaluate_projection, projection_errors, projection_scores

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
