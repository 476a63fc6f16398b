"""Publish a corpus built by our builders as parquet with a generated dataset card.

What ``crop-hf build-dataset`` (and so ``dataset_scripts/``) runs. The folder written by :func:`write_parquet` has the layout that
``DatasetDict.push_to_hub`` produces (``<config>/<split>-00000-of-00001.parquet`` and a README whose
YAML lists ``configs``), so ``datasets.load_dataset(folder, "<config>")`` reads it locally and a Hub
repository made by :func:`crop_hf.hub.push_corpus` reads the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from crop_hf.data.loading import load_dataset
from crop_hf.hub import corpus_card

logger = logging.getLogger(__name__)

__all__ = ["build_configs", "write_parquet"]


def build_configs(
    name: str,
    configs: Sequence[str],
    *,
    data_dir: str | None = None,
    cache_dir: str | None = None,
    **config_kwargs: Any,
) -> dict[str, Any]:
    """``{config: DatasetDict}`` built with :func:`crop_hf.data.load_dataset`."""
    return {
        config: load_dataset(name, config, data_dir=data_dir, cache_dir=cache_dir, **config_kwargs)
        for config in configs
    }


def write_parquet(built: Mapping[str, Any], output_dir: str | Path, name: str, **card_kwargs: Any) -> Path:
    """Write ``<output_dir>/<config>/<split>-00000-of-00001.parquet`` and the README card; return the folder."""
    output = Path(output_dir)
    for config, dsd in built.items():
        (output / config).mkdir(parents=True, exist_ok=True)
        for split, dataset in dsd.items():
            dataset.to_parquet(str(output / config / f"{split}-00000-of-00001.parquet"))

    corpus_card(name, built, **card_kwargs).save(str(output / "README.md"))
    return output
