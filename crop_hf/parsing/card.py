"""The model card of a trained parser: data, recipe and the metric table, rendered offline."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from crop_hf.cards import TEMPLATES_DIR

__all__ = ["PARSER_TEMPLATE", "parser_model_card"]

PARSER_TEMPLATE = TEMPLATES_DIR / "parser_model_card.md"


def _rows(scores: Mapping[str, Any]) -> list[dict[str, Any]]:
    groups = [*scores.get("per_domain", {}).items(), ("flat", scores["flat"]), ("nested", scores["nested"]),
              ("all", scores)]
    return [{"name": name, "count": group["count"],
             **{key: f"{100 * group[key]:.1f}" for key in ("exact_match", "intent_accuracy", "slot_f1")}}
            for name, group in groups]


def parser_model_card(*, model_name: str, config, train_sources: Sequence[tuple[str, float, int]],
                      scores: Mapping[str, Mapping[str, Mapping[str, Any]]], hyperparameters: Mapping[str, Any],
                      init_from: str | None = None, license: str | None = None):
    """A ``huggingface_hub.ModelCard`` for a parser trained by :func:`crop_hf.parsing.training.train_parser`.

    ``scores`` maps split → source spec → :func:`crop_hf.metrics.parsing.parse_scores`; the metadata
    carries a model-index entry (exact match, intent accuracy, slot F1) for each.
    """
    from huggingface_hub import EvalResult, ModelCard, ModelCardData

    from crop_hf.cards import _versions

    encoder = config.encoder_name_or_path
    is_hub_id = not Path(encoder).exists()
    results = []
    for split, by_source in scores.items():
        for spec, result in by_source.items():
            for key, name in (("exact_match", "Exact match"), ("intent_accuracy", "Intent accuracy"),
                              ("slot_f1", "Slot F1")):
                results.append(EvalResult(task_type="semantic-parsing", task_name="Semantic parsing",
                                          dataset_type=spec.split("?")[0], dataset_name=spec.split("?")[0],
                                          dataset_split=split, metric_type=key, metric_name=name,
                                          metric_value=round(result[key], 4)))
    card_data = ModelCardData(model_name=model_name, base_model=encoder if is_hub_id else None, license=license,
                              library_name="transformers", tags=["semantic-parsing", "code-switching", "crop-hf"],
                              metrics=["exact_match"], eval_results=results or None)
    evaluations = [{"source": spec, "split": split, "rows": _rows(result)}
                   for split, by_source in scores.items() for spec, result in by_source.items()]
    return ModelCard.from_template(
        card_data, template_path=str(PARSER_TEMPLATE), model_name=model_name, encoder=encoder,
        intent_pooling=config.intent_pooling, use_crf=config.use_crf, init_from=init_from,
        train_sources=[{"spec": s, "weight": w, "utterances": n} for s, w, n in train_sources],
        intents=list(config.intent_labels), slot_names=sorted({t[2:] for t in config.slot_labels if t != "O"}),
        evaluations=evaluations, hyperparameters=dict(hyperparameters), versions=_versions())
