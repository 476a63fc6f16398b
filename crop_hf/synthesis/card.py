"""The dataset card written beside a synthesized corpus (and pushed with it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from crop_hf.cards import TEMPLATES_DIR
from crop_hf.synthesis.config import SynthesisConfig
from crop_hf.synthesis.filters import STATISTICS_COLUMNS

__all__ = ["synthesis_card"]

TEMPLATE = TEMPLATES_DIR / "synthesis_dataset_card.md"


def synthesis_card(
    config: SynthesisConfig,
    statistics: Mapping[str, Mapping[str, int]],
    label_names: Sequence[str],
    *,
    command_line: str,
    fingerprint: str,
) -> str:
    """Render the card: models and revisions, languages, counts per filter, command line, settings."""
    from huggingface_hub import DatasetCard, DatasetCardData

    languages = list(statistics)
    total = sum(stats.get("kept", 0) for stats in statistics.values())
    size = next(label for bound, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"),
                                           (1_000_000, "100K<n<1M"), (float("inf"), "n>1M")) if total < bound)
    data = DatasetCardData(
        language=languages,
        pretty_name=f"CroP pseudo-labeled NER ({', '.join(languages)})",
        task_categories=["token-classification"],
        task_ids=["named-entity-recognition"],
        size_categories=[size],
        source_datasets=[config.input] if isinstance(config.input, str) else None,
        tags=["crop-hf", "synthetic", "label-projection"],
        # The layout DatasetDict.push_to_hub writes: one split per language under data/.
        configs=[{"config_name": "default",
                  "data_files": [{"split": lang, "path": f"data/{lang}-*"} for lang in languages]}],
    )
    rows = [{"lang": lang, "cells": [stats.get(c, 0) for c in STATISTICS_COLUMNS]}
            for lang, stats in statistics.items()]
    card = DatasetCard.from_template(
        data,
        template_path=str(TEMPLATE),
        pretty_name=data.pretty_name,
        languages=languages,
        source_lang=config.source_lang,
        method=config.method,
        mt_model=config.mt_model,
        mt_revision=config.mt_revision,
        ner_model=config.ner_model,
        ner_revision=config.ner_revision,
        alignment_model=config.alignment_model,
        columns=STATISTICS_COLUMNS,
        rows=rows,
        max_words=config.max_words,
        label_names=list(label_names),
        command_line=command_line,
        fingerprint=fingerprint,
        settings=config.result_arguments(),
    )
    return str(card)
