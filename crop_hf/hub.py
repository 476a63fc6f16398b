"""Cards and the Hub: model cards, corpus cards, card templates, and every upload crop-hf makes.

* model cards: :func:`ner_model_card` (metadata with a model-index entry per language, split and
  metric, rendered from ``model_cards/ner_model_card.md``) and :func:`parser_model_card` (a joint
  intent/slot parser: data, recipe, exact match / intent accuracy / slot F1 per domain) and
  :func:`translation_model_card` (a marker-keeping translation model);
* dataset cards: :func:`corpus_card` (a corpus built from an original release by
  ``dataset_scripts/``); the cards of corpus jobs sit beside their jobs
  (:mod:`crop_hf.synthesis.card`, :mod:`crop_hf.augment.card`) and use :func:`card_template` and
  :func:`size_category` from here;
* uploads: :func:`push_folder` (a trained model's folder, without checkpoints),
  :func:`push_dataset` (a ``DatasetDict`` and its card) and :func:`push_corpus` (several
  configs of a built corpus).

Rendering is offline (``huggingface_hub.ModelCard.from_template``); cards are not validated
against the Hub (``card.validate()`` needs the server), but their metadata round-trips through
``ModelCard(str(card)).data``. Templates are Jinja files in the repository's ``model_cards/``
folder, installed as the package ``crop_hf.model_cards``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from crop_hf.tables import format_table, score_rows

logger = logging.getLogger(__name__)


def crop_hf_cache_dir() -> Path:
    """Where crop-hf keeps what it builds (CTranslate2 conversions, the demo app's tiny models).

    ``$CROP_HF_CACHE`` when set, else ``crop_hf`` under Hugging Face's cache home (``$HF_HOME``,
    by default ``~/.cache/huggingface``), beside the models and datasets it downloads.
    """
    if os.environ.get("CROP_HF_CACHE"):
        return Path(os.environ["CROP_HF_CACHE"])
    from huggingface_hub import constants

    return Path(constants.HF_HOME) / "crop_hf"

__all__ = [
    "TEMPLATES_DIR",
    "card_template",
    "corpus_card",
    "crop_hf_cache_dir",
    "hub_data_files",
    "model_index_results",
    "ner_model_card",
    "parser_model_card",
    "push_corpus",
    "push_dataset",
    "push_folder",
    "size_category",
    "source_dataset_ids",
    "template_path",
    "translation_model_card",
]

_METRICS = ("precision", "recall", "f1")


def template_path(name: str) -> Path:
    """The installed card template ``name`` (e.g. ``"ner_model_card.md"``)."""
    from importlib import resources

    return Path(str(resources.files("crop_hf.model_cards") / name))


def card_template(name_or_path: str | Path) -> Path:
    """A card template: an installed one by file name (``"synthesis_dataset_card.md"``), or any path."""
    path = Path(name_or_path)
    if not path.is_absolute() and path.parent == Path("."):
        path = template_path(str(path))
    if not path.exists():
        raise FileNotFoundError(f"card template {path} not found (pass template_path)")
    return path


def source_dataset_ids(spec: object) -> list[str] | None:
    """The card's ``source_datasets`` for an input: the Hub id a ``hub:NAME[:CONFIG]`` source spec names.

    Anything else (a local file or folder, a crop-hf builder reading local files) is ``None``: the
    Hub's metadata names datasets on the Hub, never a path on the machine that made the card.

    >>> source_dataset_ids("hub:unimelb-nlp/wikiann:{lang}"), source_dataset_ids("/data/raw/{lang}.txt")
    (['unimelb-nlp/wikiann'], None)
    """
    if not isinstance(spec, str) or not spec.startswith("hub:"):
        return None
    name = spec[len("hub:"):].partition("?")[0].partition(":")[0]
    return [name] if name else None


def size_category(rows: int) -> str:
    """The Hub's ``size_categories`` value for a dataset of ``rows`` rows.

    >>> size_category(999), size_category(1_000), size_category(2_000_000)
    ('n<1K', '1K<n<10K', 'n>1M')
    """
    bounds = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"))
    return next((label for bound, label in bounds if rows < bound), "n>1M")


#: The folder of the installed card templates.
TEMPLATES_DIR = template_path("__init__.py").parent


# --------------------------------------------------------------------------- model cards


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


def _evaluation_table(evaluation) -> dict[str, Any]:
    columns, rows = score_rows(evaluation)
    return {"split": evaluation.split, "table": format_table(["metric", *columns], rows, style="markdown"),
            "average": evaluation.average is not None, "average_over": list(evaluation.languages)}


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
    """Render the card of a model trained by :func:`crop_hf.ner.train.train_ner`.

    ``train_sources`` holds ``(spec, sampling weight, sentences)`` triples; ``evaluations`` the
    :class:`crop_hf.ner.evaluate.NerEvaluation` of each split. The metadata carries a model-index
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
    return ModelCard.from_template(
        card_data, template_path=str(card_template(template_path or "ner_model_card.md")),
        model_name=model_name, base_model=base_model,
        base_model_url=f"https://huggingface.co/{base_model}" if is_hub_id else base_model,
        languages=languages, label_names=list(label_names),
        evaluations=[_evaluation_table(e) for e in evaluations],
        train_sources=[{"spec": spec, "weight": weight, "sentences": n} for spec, weight, n in train_sources],
        hyperparameters=dict(hyperparameters), versions=_versions(),
    )


def _parser_rows(scores: Mapping[str, Any]) -> list[dict[str, Any]]:
    groups = [*scores.get("per_domain", {}).items(), ("flat", scores["flat"]), ("nested", scores["nested"]),
              ("all", scores)]
    return [{"name": name, "count": group["count"],
             **{key: f"{100 * group[key]:.1f}" for key in ("exact_match", "intent_accuracy", "slot_f1")}}
            for name, group in groups]


def parser_model_card(*, model_name: str, config, train_sources: Sequence[tuple[str, float, int]],
                      scores: Mapping[str, Mapping[str, Mapping[str, Any]]], hyperparameters: Mapping[str, Any],
                      init_from: str | None = None, license: str | None = None):
    """A ``huggingface_hub.ModelCard`` for a parser trained by :func:`crop_hf.parsing.train.train_parser`.

    ``scores`` maps split → source spec → :func:`crop_hf.metrics.parsing.parse_scores`; the metadata
    carries a model-index entry (exact match, intent accuracy, slot F1) for each.
    """
    from huggingface_hub import EvalResult, ModelCard, ModelCardData

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
    evaluations = [{"source": spec, "split": split, "rows": _parser_rows(result)}
                   for split, by_source in scores.items() for spec, result in by_source.items()]
    return ModelCard.from_template(
        card_data, template_path=str(card_template("parser_model_card.md")), model_name=model_name, encoder=encoder,
        intent_pooling=config.intent_pooling, use_crf=config.use_crf, init_from=init_from,
        max_intent_depth=getattr(config, "max_intent_depth", 1),
        train_sources=[{"spec": s, "weight": w, "utterances": n} for s, w, n in train_sources],
        intents=list(config.intent_labels), slot_names=sorted({t[2:] for t in config.slot_labels if t != "O"}),
        evaluations=evaluations, hyperparameters=dict(hyperparameters), versions=_versions())


def translation_model_card(model_args, data_args, training_args, evaluation_table: str, train_dataset, *,
                           hyperparameters: Mapping[str, Any]):
    """The card of a marker-keeping translation model (:func:`crop_hf.translation.train.train_translation`):
    languages, data, marker style, ``hyperparameters`` (flattened options, see
    :func:`crop_hf.engine.arguments.hyperparameters`) and the before/after evaluation table (already rendered)."""
    from huggingface_hub import ModelCard, ModelCardData


    directions = sorted(set(zip(train_dataset["src_lang"], train_dataset["tgt_lang"], strict=True)))
    languages = sorted({code for pair in directions for code in pair})
    base = model_args.model_name_or_path
    is_hub_id = not Path(base).exists()
    card_data = ModelCardData(
        model_name=training_args.hub_model_id or Path(training_args.output_dir).name,
        base_model=base if is_hub_id else None, language=languages or None, library_name="transformers",
        pipeline_tag="translation", tags=["translation", "labeled-translation", "crop-hf", "cross-lingual-ner"],
        metrics=["bleu", "chrf"])
    return ModelCard.from_template(
        card_data, template_path=str(card_template("translation_model_card.md")),
        model_name=card_data.model_name, base_model=base, marker_style=model_args.marker_style,
        directions=[f"{s}-{t}" for s, t in directions], train_pairs=len(train_dataset),
        train_file=data_args.train_file or "a marked dataset passed in memory",
        validation_file=data_args.validation_file or ("a marked dataset passed in memory" if evaluation_table else "-"),
        evaluation_table=evaluation_table,
        hyperparameters=dict(hyperparameters), versions=_versions(),
        example_src=directions[0][0] if directions else "en", example_tgt=directions[0][1] if directions else "de")


# --------------------------------------------------------------------------- dataset cards


def _describe_features(features) -> list[str]:
    import datasets

    lines = []
    for column, feature in features.items():
        inner = feature.feature if isinstance(feature, (datasets.Sequence, datasets.List)) else feature
        kind = "list of " if inner is not feature else ""
        if isinstance(inner, datasets.ClassLabel):
            lines.append(f"- `{column}`: {kind}class ids; names in id order: `{' '.join(inner.names)}`")
        else:
            lines.append(f"- `{column}`: {kind}{getattr(inner, 'dtype', type(inner).__name__)}")
    return lines


def hub_data_files(splits: Iterable[str], folder: str = "data", config_name: str = "default") -> list[dict[str, Any]]:
    """A card's ``configs`` for Parquet files laid out as ``push_to_hub`` lays them: ``<folder>/<split>-*``.

    One config (``config_name``) with a split per name; no split, no config (``[]``): a card must
    not name files that are not there.

    >>> hub_data_files(["es"])
    [{'config_name': 'default', 'data_files': [{'split': 'es', 'path': 'data/es-*'}]}]
    >>> hub_data_files([])
    []
    """
    data_files = [{"split": split, "path": f"{folder}/{split}-*"} for split in splits]
    return [{"config_name": config_name, "data_files": data_files}] if data_files else []


def corpus_card(name: str, built: Mapping[str, Any], pretty_name: str | None = None, license: str | None = None):
    """The card of a corpus built by a crop-hf builder (``dataset_scripts/``): YAML lists the configs, text from the data."""
    from huggingface_hub import DatasetCard, DatasetCardData

    configs = [entry for config, dsd in built.items() for entry in hub_data_files(dsd, folder=config, config_name=config)]
    first = next(iter(built.values()))
    info = next(iter(first.values())).info
    data = DatasetCardData(pretty_name=pretty_name or name, license=license, configs=configs)
    table = format_table(["config", *first], [[config, *(dsd[split].num_rows for split in first)]
                                              for config, dsd in built.items()], style="markdown")
    body = "\n".join(
        [
            f"# {pretty_name or name}",
            "",
            (info.description or "").strip(),
            "",
            f"Built with crop-hf from the original release by `dataset_scripts/build_{name}.py` "
            f"(builder `crop_hf.data.{name}`).",
            "",
            "## Rows per split",
            "",
            table,
            "",
            "## Features",
            "",
            *_describe_features(info.features),
            "",
            "## Loading",
            "",
            "```python",
            "from datasets import load_dataset",
            "",
            f'ds = load_dataset("<this repository or folder>", "{next(iter(built))}")',
            "```",
            "",
            "## Citation",
            "",
            "```bibtex",
            (info.citation or "").strip(),
            "```",
            "",
        ]
    )
    return DatasetCard(f"---\n{data.to_yaml()}\n---\n\n{body}")


# --------------------------------------------------------------------------- uploads


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


def push_dataset(dataset_dict, repo_id: str, card: str | None = None, *, config_name: str = "default",
                 private: bool | None = None, token: str | None = None,
                 folders: Mapping[str, str | Path] | None = None) -> str:
    """Upload a ``DatasetDict`` as parquet, then ``folders`` (path in the repo -> local folder, e.g. the
    report plots the card links), then its card (which replaces the generic one); returns the URL."""
    from huggingface_hub import DatasetCard, HfApi

    dataset_dict.push_to_hub(repo_id, config_name=config_name, private=private, token=token)
    for path_in_repo, folder in (folders or {}).items():
        HfApi(token=token).upload_folder(repo_id=repo_id, repo_type="dataset", folder_path=str(folder),
                                         path_in_repo=path_in_repo, commit_message=f"Add {path_in_repo}")
    if card is not None:
        DatasetCard(card).push_to_hub(repo_id, token=token, repo_type="dataset")
    return f"https://huggingface.co/datasets/{repo_id}"


def push_corpus(built: Mapping[str, Any], repo_id: str, name: str, *, private: bool | None = None,
                token: str | None = None, **card_kwargs: Any) -> None:
    """Upload each config as parquet (``DatasetDict.push_to_hub``), then the generated card."""
    for config, dsd in built.items():
        dsd.push_to_hub(repo_id, config_name=config, private=private, token=token)
    corpus_card(name, built, **card_kwargs).push_to_hub(repo_id, token=token)
