"""The dataset card of parses made by CSTOP's augmentations (``model_cards/augmented_parses_card.md``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from crop_hf.hub import card_template, hub_data_files, size_category, source_dataset_ids
from crop_hf.tables import format_table

__all__ = ["augmentation_card"]


def augmentation_card(
    *,
    recipe: str,
    description: str,
    languages: Sequence[str],
    models: Mapping[str, str],
    counts: Mapping[str, int],
    reasons: Mapping[str, str],
    features: Mapping[str, str],
    command_line: str,
    settings: Mapping[str, Any],
    source: str | None = None,
) -> str:
    """The card of augmented semantic-parsing data (:mod:`crop_hf.augment`): recipe, models, the drop
    funnel (``counts``: ``input``, ``kept`` and one count per reason, explained in ``reasons``),
    features, command line and settings.

    >>> card = augmentation_card(recipe="translate-and-align", description="...", languages=["es"],
    ...     models={"translation": "m"}, counts={"input": 3, "kept": 2, "no_translation": 1},
    ...     reasons={"no_translation": "empty"}, features={"parse": "the parse"}, command_line="crop-hf x",
    ...     settings={"method": "alignment"})
    >>> "| 3 | 2 | 1 |" in card, "task_ids:" in card
    (True, True)
    """
    from huggingface_hub import DatasetCard, DatasetCardData

    kept = counts.get("kept", 0)
    data = DatasetCardData(
        language=list(languages),
        pretty_name=f"CSTOP {recipe} ({', '.join(languages)})",
        task_categories=["text-classification", "token-classification"],
        task_ids=["intent-classification", "slot-filling"],
        size_categories=[size_category(kept)],
        source_datasets=source_dataset_ids(source),
        tags=["crop-hf", "synthetic", "semantic-parsing", "code-switching"],
        # the folder's own data/ files (the Hub layout), so load_dataset(output_dir) opens it as the Hub would
        configs=hub_data_files(["train"]) if kept else None,
    )
    table = format_table(list(counts), [list(counts.values())], style="markdown")
    card = DatasetCard.from_template(
        data, template_path=str(card_template("augmented_parses_card.md")), pretty_name=data.pretty_name,
        languages=list(languages), recipe=recipe, description=description, models=dict(models), counts=table,
        reasons=dict(reasons), features=dict(features), command_line=command_line,
        settings={name: value for name, value in settings.items()},
    )
    return str(card)
