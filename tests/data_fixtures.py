"""Fixtures of the data tests: each corpus config built once per session into one temporary cache."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures" / "data"


@pytest.fixture(scope="session")
def data_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("hf-datasets-cache")


@pytest.fixture(scope="session")
def build(data_cache):
    """``build(name, config, data_dir, **options)`` -> DatasetDict, built at most once per session."""
    from crop_hf.data import load_dataset

    built: dict = {}

    def _build(name: str, config: str | None, data_dir, **options):
        key = (name, config, str(data_dir), tuple(sorted(options.items())))
        if key not in built:
            built[key] = load_dataset(name, config, data_dir=str(data_dir), cache_dir=str(data_cache), **options)
        return built[key]

    return _build
