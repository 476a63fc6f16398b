"""Exact-match accuracy of semantic parses (crop-hf), as an ``evaluate`` module that loads offline.

Usage::

    import evaluate, crop_hf.metrics
    metric = evaluate.load(crop_hf.metrics.path("exact_match_parse"))
    metric.compute(predictions=predictions, references=references, domains=domains)

The whole predicted tree must equal the gold tree, nested intents and all, after whitespace
canonicalisation (CSTOP's metric). Gold trees with intents inside slots are counted in the overall
score and also reported alone (``nested_*``); ``domains`` (optional, one per row) adds ``per_domain``. The computation is
:func:`crop_hf.metrics.parsing.parse_scores` (:mod:`crop_hf.metrics.parse_metric`).
"""

from crop_hf.metrics import parse_metric


class ExactMatchParse(parse_metric.ParseMetric):
    keys = ("exact_match",)
    returns = "exact_match, nested_exact_match, flat_exact_match (fractions), count; per_domain with domains."
