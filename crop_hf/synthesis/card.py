"""The dataset card of a synthesized corpus, rendered from its own config (``model_cards/synthesis_dataset_card.md``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from crop_hf.hub import card_template, hub_data_files, size_category, source_dataset_ids
from crop_hf.projection.methods import PROJECTION_METHODS
from crop_hf.synthesis.config import SynthesisConfig
from crop_hf.tables import format_table

__all__ = ["synthesis_card"]


def synthesis_card(
    config: SynthesisConfig,
    statistics: Mapping[str, Mapping[str, int]],
    label_names: Sequence[str],
    *,
    command_line: str,
    fingerprint: str,
    columns: Sequence[str],
    translator: Mapping[str, Any] | None = None,
) -> str:
    """The card of a synthesized corpus: models and revisions, languages, counts per filter, command line, settings,
    and the installed package (and version) of a projection method that is not crop-hf's own.

    ``config`` is the run's :class:`~crop_hf.synthesis.SynthesisConfig`; ``columns`` the statistics
    columns in table order (:data:`crop_hf.synthesis.rows.STATISTICS_COLUMNS`); ``translator`` what
    :func:`~crop_hf.translation.apertium.describe_translator` says of a translation engine (its version
    and pairs), ``None`` for a model.
    """
    from huggingface_hub import DatasetCard, DatasetCardData

    languages = list(statistics)
    total = sum(stats.get("kept", 0) for stats in statistics.values())
    data = DatasetCardData(
        language=languages,
        pretty_name=f"CroP pseudo-labeled NER ({', '.join(languages)})",
        task_categories=["token-classification"],
        task_ids=["named-entity-recognition"],
        size_categories=[size_category(total)],
        source_datasets=source_dataset_ids(config.input),
        tags=["crop-hf", "synthetic", "label-projection"],
        # The layout DatasetDict.push_to_hub writes, and the run writes locally: a split per language under
        # data/ (a language that kept nothing has none: load_dataset cannot open an empty split)
        configs=hub_data_files([lang for lang in languages if statistics[lang].get("kept", 0)]) or None,
    )
    counts = format_table(["lang", *columns], [[lang, *(stats.get(c, 0) for c in columns)]
                                              for lang, stats in statistics.items()], style="markdown")
    card = DatasetCard.from_template(
        data,
        template_path=str(card_template("synthesis_dataset_card.md")),
        pretty_name=data.pretty_name,
        languages=languages,
        src_lang=config.src_lang,
        method=config.method,
        method_name=config.projection.name,
        # a method an installed package added is not crop-hf's: the card names the package and its version
        method_package=PROJECTION_METHODS.package(config.projection.name),
        placement=config.projection.placement(),
        mt_model=config.mt_model,
        mt_revision=config.mt_revision,
        translator=translator,
        ner_model=config.ner_model,
        ner_revision=config.ner_revision,
        alignment_model=config.alignment_model,
        counts=counts,
        max_words=config.max_words,
        label_names=list(label_names),
        command_line=command_line,
        fingerprint=fingerprint,
        settings=config.card_settings(),
    )
    return str(card)
