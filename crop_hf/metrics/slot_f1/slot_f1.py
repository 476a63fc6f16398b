"""Slot micro-F1 of semantic parses (crop-hf), as an ``evaluate`` module that loads offline.

Usage::

    import evaluate, crop_hf.metrics
    metric = evaluate.load(crop_hf.metrics.path("slot_f1"))
    metric.compute(predictions=predictions, references=references, domains=domains)

seqeval semantics: a slot counts when its name and word span both match; gold slots are the top-level ones.
Gold trees with intents inside slots are counted in the overall score and also reported alone
(``nested_*``); ``domains`` (optional, one per row) adds ``per_domain``. The computation is
:func:`crop_hf.metrics.parsing.parse_scores` (:mod:`crop_hf.metrics.parse_metric`).
"""

from crop_hf.metrics import parse_metric


class SlotF1(parse_metric.ParseMetric):
    keys = ("slot_precision", "slot_recall", "slot_f1")
    returns = "slot_precision, slot_recall, slot_f1 (and nested_/flat_ versions), count; per_domain with domains."
