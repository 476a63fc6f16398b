"""What the parsing ``evaluate`` modules share (``exact_match_parse``, ``intent_accuracy``, ``slot_f1``).

Each module is a few lines: a :class:`ParseMetric` subclass that names the scores it returns
(``keys``) and says so (``returns``); the scores themselves are
:func:`crop_hf.metrics.parsing.parse_scores`, overall, on nested and flat gold trees, and per
domain. This module imports ``evaluate`` and ``datasets``, so only the modules import it (a
module imports it as a module, ``from crop_hf.metrics import parse_metric``, because ``evaluate``
takes the first metric class it finds in a module's namespace as the module's own).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, ClassVar

import datasets
import evaluate

from crop_hf.data.cstop import Cstop
from crop_hf.metrics.parsing import parse_scores

__all__ = ["CITATION", "ParseMetric", "inputs_description"]

#: the CSTOP paper, which defines the scores: cited as the ``cstop`` dataset cites it
CITATION = Cstop.CITATION


def inputs_description(returns: str) -> str:
    """The arguments every parsing module takes, and what one returns."""
    return f"""
Args:
    predictions: predicted bracket parses, e.g. "[IN:GET_WEATHER weather in [SL:LOCATION Delhi ] ]".
    references: gold bracket parses.
    domains: optional domain of each row, for per-domain scores.
Returns:
    {returns}
"""


class ParseMetric(evaluate.Metric):
    """An ``evaluate`` module over bracket parses: ``keys`` of :func:`~crop_hf.metrics.parsing.parse_scores`,
    each also as ``nested_KEY`` and ``flat_KEY``, then ``count``; ``per_domain`` when ``domains`` are given."""

    #: the scores the module returns
    keys: ClassVar[Sequence[str]] = ()
    #: what the module returns, in words (its inputs description)
    returns: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # the module's docstring and its inputs, as evaluate's own modules document their class
        cls.__doc__ = (sys.modules[cls.__module__].__doc__ or "") + inputs_description(cls.returns)

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=sys.modules[type(self).__module__].__doc__ or "", citation=CITATION,
            inputs_description=inputs_description(self.returns),
            features=datasets.Features({"predictions": datasets.Value("string"), "references": datasets.Value("string")}),
            homepage="https://github.com/crop-hf/crop-hf")

    def _compute(self, predictions, references, domains=None) -> dict[str, Any]:
        scores = parse_scores(predictions, references, domains)
        out: dict[str, Any] = {}
        for key in self.keys:
            out.update({key: scores[key], f"nested_{key}": scores["nested"][key], f"flat_{key}": scores["flat"][key]})
        out["count"] = scores["count"]
        if domains is not None:
            out["per_domain"] = {domain: {key: group[key] for key in (*self.keys, "count")}
                                 for domain, group in scores["per_domain"].items()}
        return out
