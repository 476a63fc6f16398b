"""``crop-hf build-dataset``: build a corpus from its original release and write it as parquet, or push it.

    crop-hf build-dataset --name conll5 --configs es nl --data_dir conll2002 --output_dir out/conll5
    crop-hf build-dataset --name conll5 --configs no --options source=norne --data_dir norne --output_dir out/no
    crop-hf build-dataset --name top --configs v2 --options domains=weather --push_to_hub my-org/top

The folder has the layout ``DatasetDict.push_to_hub`` writes (``<config>/<split>-*.parquet`` and a
card whose YAML lists the configs), so ``datasets.load_dataset(folder, config)`` reads it.
``dataset_scripts/build_<name>.py`` are this command with ``--name`` filled in.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from crop_hf.console import setup_logging
from crop_hf.data import builder_class
from crop_hf.data.publish import build_configs, write_parquet
from crop_hf.hub import push_corpus

#: Pretty names of the corpora on their cards.
PRETTY_NAMES = {"conll5": "CoNLL-5 NER", "xtreme40": "XTREME-40 PAN-X NER", "cstop": "CSTOP", "top": "TOP"}


@dataclass
class BuildDatasetConfig:
    """Options of ``crop-hf build-dataset``."""

    name: str = field(metadata={"help": "A crop-hf corpus: conll5, xtreme40, cstop, top (crop_hf.data.BUILDERS)."})
    configs: list[str] | None = field(default=None, metadata={"help": "Configs to build (default: all of the corpus)."})
    data_dir: str | None = field(
        default=None, metadata={"help": "Folder holding the original release. Default: download it where its "
                                        "location is public (conll5 en/es/nl/no, xtreme40, top); conll5 de (licensed) "
                                        "and cstop need this folder."})
    output_dir: str | None = field(default=None, metadata={"help": "Write parquet files and README.md here."})
    push_to_hub: str | None = field(default=None, metadata={"help": "Upload to this Hub dataset repository (ORG/NAME)."})
    private: bool = field(default=False, metadata={"help": "Create the Hub repository private."})
    cache_dir: str | None = field(default=None, metadata={"help": "datasets cache folder (default: the Hugging Face cache)."})
    skip_bad_records: bool = field(
        default=False, metadata={"help": "Drop malformed records (counted and logged) instead of stopping at the first."})
    options: list[str] | None = field(
        default=None, metadata={"help": "Further builder options as KEY=VALUE, e.g. source=norne (conll5's Norwegian "
                                        "release) or domains=weather,alarm (top)."})

    def __post_init__(self) -> None:
        if bool(self.output_dir) == bool(self.push_to_hub):
            raise ValueError("give exactly one of output_dir (write parquet) and push_to_hub (upload)")


CONFIG_CLASSES = (BuildDatasetConfig,)


def builder_options(items: list[str] | None) -> dict[str, Any]:
    """``["source=norne", "domains=weather,alarm"]`` → ``{"source": "norne", "domains": ("weather", "alarm")}``."""
    options: dict[str, Any] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"builder option {item!r}: expected KEY=VALUE, e.g. source=norne")
        options[key] = tuple(value.split(",")) if "," in value or key == "domains" else value
    return options


def all_configs(name: str) -> list[str]:
    """Every config of a crop-hf corpus."""
    return [config.name for config in builder_class(name).BUILDER_CONFIGS]


def run(config: BuildDatasetConfig) -> int:
    setup_logging(logging.INFO)
    available = all_configs(config.name)
    configs = config.configs or available
    unknown = sorted(set(configs) - set(available))
    if unknown:
        raise ValueError(f"{config.name} has no config(s) {unknown}; it has {', '.join(available)}")
    built = build_configs(config.name, configs, data_dir=config.data_dir,
                          cache_dir=config.cache_dir, skip_bad_records=config.skip_bad_records,
                          **builder_options(config.options))
    card = {"pretty_name": PRETTY_NAMES.get(config.name, config.name)}
    if config.output_dir:
        print(f"wrote {write_parquet(built, config.output_dir, config.name, **card)}")
    else:
        push_corpus(built, config.push_to_hub, config.name, private=config.private or None, **card)
        print(f"pushed to {config.push_to_hub}")
    return 0
