"""Exact-match accuracy of semantic parses (crop-hf), as an ``evaluate`` module that loads offline.

Usage::

    import evaluate, crop_hf.metrics
    metric = evaluate.load(crop_hf.metrics.path("exact_match_parse"))
    metric.compute(predictions=predictions, references=references, domains=domains)

The whole predicted tree must equal the gold tree, nested intents and all, after whitespace
canonicalisation (CSTOP's metric). Gold trees with intents inside slots are counted in the overall
score and also reported alone (``nested_*``); ``domains`` (optional, one per row) adds ``per_domain``. The computation is
:func:`crop_hf.metrics.parsing.parse_scores`.
"""

import datasets
import evaluate

from crop_hf.metrics.parsing import parse_scores

_CITATION = """\
@inproceedings{einolghozati-etal-2021-el,
  title = "El Volumen Louder Por Favor: Code-switching in Task-oriented Semantic Parsing",
  author = "Einolghozati, Arash and Arora, Abhinav and Lecanda, Lorena Sainz-Maza and Kumar, Anuj and Gupta, Sonal",
  booktitle = "EACL 2021", year = "2021"}
"""

_INPUTS = """
Args:
    predictions: predicted bracket parses, e.g. "[IN:GET_WEATHER weather in [SL:LOCATION Delhi ] ]".
    references: gold bracket parses.
    domains: optional domain of each row, for per-domain scores.
Returns:
    exact_match, nested_exact_match, flat_exact_match (fractions), count; per_domain with domains.
"""


@evaluate.utils.file_utils.add_start_docstrings(__doc__, _INPUTS)
class ExactMatchParse(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=__doc__, citation=_CITATION, inputs_description=_INPUTS,
            features=datasets.Features({"predictions": datasets.Value("string"),
                                         "references": datasets.Value("string")}),
            homepage="https://github.com/crop-hf/crop-hf")

    def _compute(self, predictions, references, domains=None):
        scores = parse_scores(predictions, references, domains)
        out = {"exact_match": scores["exact_match"], "nested_exact_match": scores["nested"]["exact_match"], "flat_exact_match": scores["flat"]["exact_match"], "count": scores["count"]}
        if domains is not None:
            out["per_domain"] = {domain: {key: group[key] for key in ('exact_match', 'count')}
                                 for domain, group in scores["per_domain"].items()}
        return out
