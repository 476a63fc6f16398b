"""Model cards written from data: metadata (model-index) and a Jinja template in ``model_cards/``.

Rendering is offline (``huggingface_hub.ModelCard.from_template``); the card is not validated
against the Hub (``card.validate()`` needs the server), but its metadata round-trips through
``ModelCard(str(card)).data``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

__all__ = ["TEMPLATES_DIR", "model_index_results", "ner_model_card", "push_folder"]

#: The Jinja templates of the cards: the repository's ``model_cards/``, reached through the
#: ``crop_hf/model_cards`` link so that wheels carry the templates as package data.
TEMPLATES_DIR = Path(__file__).resolve().parent / "model_cards"
NER_TEMPLATE = TEMPLATES_DIR / "ner_model_card.md"

_METRICS = ("precision", "recall", "f1")


def model_index_results(evaluations: Sequence[Any]) -> list:
    """One ``EvalResult`` per language, split and metric (seqeval micro P/R/F1 as fractions)."""
    from huggingface_hub import EvalResult

    results = []
    for evaluation in evaluations:
        for lang, scores in evaluation.languages.items():
            dataset = scores.dataset or lang
            config = scores.config or lang
            for metric in _METRICS:
                results.append(EvalResult(
                    task_type="token-classification", task_name="Named Entity Recognition",
                    dataset_type=dataset, dataset_name=f"{dataset} ({config})", dataset_config=config,
                    dataset_split=evaluation.split, metric_type=f"seqeval_{metric}" if metric != "f1" else "f1",
                    metric_name=f"{metric.capitalize() if metric != 'f1' else 'F1'} ({lang})",
                    metric_value=round(getattr(scores, metric), 4)))
    return results


def _table(evaluation) -> dict[str, Any]:
    columns = dict(evaluation.languages)
    if evaluation.average is not None:
        columns["avg"] = evaluation.average
    rows = [{"name": metric, "cells": [f"{100 * getattr(s, metric):.1f}" for s in columns.values()]}
            for metric in _METRICS]
    for entity_type in sorted({t for s in columns.values() for t in s.per_type}):
        rows.append({"name": f"{entity_type} f1", "cells": [
            f"{100 * s.per_type[entity_type]['f1']:.1f}" if entity_type in s.per_type else "-"
            for s in columns.values()]})
    rows.append({"name": "sentences", "cells": [str(s.sentences) for s in columns.values()]})
    return {"split": evaluation.split, "columns": list(columns), "rows": rows,
            "average": evaluation.average is not None,
            "average_over": [lang for lang in evaluation.languages]}


def _versions() -> dict[str, str]:
    from importlib import metadata

    out = {}
    for name in ("crop-hf", "transformers", "torch", "datasets", "accelerate", "peft"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def ner_model_card(*, model_name: str, base_model: str, train_sources: Sequence[tuple[str, float, int]],
                   evaluations: Sequence[Any], label_names: Sequence[str], hyperparameters: Mapping[str, Any],
                   template_path: str | Path | None = None, license: str | None = None):
    """Render the card of a model trained by :func:`crop_hf.training.train_ner`.

    ``train_sources`` holds ``(spec, sampling weight, sentences)`` triples; ``evaluations`` the
    :class:`crop_hf.evaluation.NerEvaluation` of each split. The metadata carries a model-index
    entry for each language, split and metric, the languages and the base model.

    >>> card = ner_model_card(model_name="xlmr-conll5", base_model="FacebookAI/xlm-roberta-base",
    ...                       train_sources=[("conll5:en", 1.0, 14041)], evaluations=[], label_names=["O"],
    ...                       hyperparameters={"learning_rate": 2e-5})
    >>> card.data.base_model
    'FacebookAI/xlm-roberta-base'
    """
    from huggingface_hub import ModelCard, ModelCardData

    languages = sorted({(s.config or lang) for e in evaluations for lang, s in e.languages.items()})
    datasets = sorted({s.dataset for e in evaluations for s in e.languages.values() if s.dataset})
    is_hub_id = not Path(base_model).exists()
    card_data = ModelCardData(
        model_name=model_name,
        base_model=base_model if is_hub_id else None,
        language=languages or None,
        datasets=datasets or None,
        license=license,
        library_name="transformers",
        pipeline_tag="token-classification",
        tags=["token-classification", "ner", "crop-hf"],
        metrics=["seqeval"],
        eval_results=model_index_results(evaluations) or None,
    )
    template = Path(template_path) if template_path else NER_TEMPLATE
    if not template.exists():
        raise FileNotFoundError(f"model card template {template} not found (pass template_path)")
    return ModelCard.from_template(
        card_data, template_path=str(template),
        model_name=model_name, base_model=base_model,
        base_model_url=f"https://huggingface.co/{base_model}" if is_hub_id else base_model,
        languages=languages, label_names=list(label_names),
        evaluations=[_table(e) for e in evaluations],
        train_sources=[{"spec": spec, "weight": weight, "sentences": n} for spec, weight, n in train_sources],
        hyperparameters=dict(hyperparameters), versions=_versions(),
    )


def push_folder(folder: str | Path, repo_id: str, *, token: str | None = None, private: bool = False,
                api=None, commit_message: str = "Upload NER model trained with crop-hf") -> str:
    """Create ``repo_id`` (if needed) and upload ``folder`` without its ``step_*``/``epoch_*`` checkpoints.

    ``api`` is a ``huggingface_hub.HfApi`` (default: a new one with ``token``). Returns the repo URL.
    """
    from huggingface_hub import HfApi

    api = api or HfApi(token=token)
    url = api.create_repo(repo_id, private=private, exist_ok=True)
    api.upload_folder(repo_id=repo_id, folder_path=str(folder), commit_message=commit_message,
                      ignore_patterns=["step_*", "epoch_*", "step_*/**", "epoch_*/**"])
    logger.info("pushed %s to %s", folder, url)
    return str(url)
