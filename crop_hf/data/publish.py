"""Publish a corpus built by our builders as parquet with a generated dataset card.

What ``dataset_scripts/`` run. The folder written by :func:`write_parquet` has the layout that
``DatasetDict.push_to_hub`` produces (``<config>/<split>-00000-of-00001.parquet`` and a README whose
YAML lists ``configs``), so ``datasets.load_dataset(folder, "<config>")`` reads it locally and a Hub
repository made by :func:`crop_hf.hub.push_corpus` reads the same way.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

__all__ = ["build_configs", "main", "write_parquet"]


def build_configs(
    name: str,
    configs: Sequence[str],
    *,
    data_dir: str | None = None,
    cache_dir: str | None = None,
    **config_kwargs: Any,
) -> dict[str, Any]:
    """``{config: DatasetDict}`` built with :func:`crop_hf.data.load_dataset`."""
    from crop_hf.data.loading import load_dataset

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
    from crop_hf.hub import corpus_card

    corpus_card(name, built, **card_kwargs).save(str(output / "README.md"))
    return output


def main(
    name: str,
    all_configs: Sequence[str],
    argv: Sequence[str] | None = None,
    *,
    pretty_name: str | None = None,
    license: str | None = None,
    add_arguments: Callable[[argparse.ArgumentParser], None] | None = None,
) -> dict[str, Any]:
    """Command line of a ``dataset_scripts/build_<name>.py`` script; returns what it built.

    The scripts configure logging; this function, being library code, does not.
    """
    parser = argparse.ArgumentParser(description=f"Build {pretty_name or name} from its original release and "
                                     "write it as parquet with a dataset card, or push it to the Hub.")
    parser.add_argument("--data-dir", help="folder holding the original release (default: download it)")
    parser.add_argument("--configs", nargs="+", default=list(all_configs), choices=list(all_configs),
                        metavar="CONFIG", help=f"configs to build (default: all of {', '.join(all_configs)})")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--output-dir", help="write parquet files and README.md here")
    target.add_argument("--push-to-hub", metavar="ORG/NAME", help="upload to this Hub dataset repository")
    parser.add_argument("--private", action="store_true", help="create the Hub repository private")
    parser.add_argument("--cache-dir", help="datasets cache folder (default: the Hugging Face cache)")
    parser.add_argument("--skip-bad-records", action="store_true",
                        help="drop malformed records (counted and logged) instead of stopping at the first")
    if add_arguments is not None:
        add_arguments(parser)
    args = parser.parse_args(argv)
    extra = {key: value for key, value in vars(args).items()
             if key not in {"data_dir", "configs", "output_dir", "push_to_hub", "private", "cache_dir",
                            "skip_bad_records"} and value is not None}
    built = build_configs(name, args.configs, data_dir=args.data_dir, cache_dir=args.cache_dir,
                          skip_bad_records=args.skip_bad_records, **extra)
    card = {"pretty_name": pretty_name, "license": license}
    if args.output_dir:
        folder = write_parquet(built, args.output_dir, name, **card)
        logger.info("wrote %s", folder)
    else:
        from crop_hf.hub import push_corpus

        push_corpus(built, args.push_to_hub, name, private=args.private or None, **card)
        logger.info("pushed to %s", args.push_to_hub)
    return built
