"""Intent accuracy of semantic parses (crop-hf), as an ``evaluate`` module that loads offline.

Usage::

    import evaluate, crop_hf.metrics
    metric = evaluate.load(crop_hf.metrics.path("intent_accuracy"))
    metric.compute(predictions=predictions, references=references, domains=domains)

The root intents of the predicted and gold parses must agree; an unparseable prediction is wrong.
Gold trees with intents inside slots are counted in the overall score and also reported alone
(``nested_*``); ``domains`` (optional, one per row) adds ``per_domain``. The computation is
:func:`crop_hf.metrics.parsing.parse_scores` (:mod:`crop_hf.metrics.parse_metric`).
"""

from crop_hf.metrics import parse_metric


class IntentAccuracy(parse_metric.ParseMetric):
    keys = ("intent_accuracy",)
    returns = "intent_accuracy, nested_intent_accuracy, flat_intent_accuracy, count; per_domain with domains."
