"""``crop-hf synthesize``: build pseudo-labeled NER corpora in target languages (CroP).

Example (the paper's models, raw sentences one per line in raw/de.txt and raw/es.txt)::

    crop-hf synthesize --target_langs de es --input "raw/{lang}.txt" --output_dir out/crop

Several processes split the shards: ``accelerate launch -m crop_hf.cli synthesize ...``.
"""

from __future__ import annotations

import argparse
import logging


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from crop_hf.commands._dataclass_args import add_dataclass_arguments
    from crop_hf.synthesis.config import SynthesisConfig

    add_dataclass_arguments(parser, SynthesisConfig)
    parser.add_argument("--push_to_hub", "--push-to-hub", metavar="REPO_ID", default=None,
                        help="Also publish the dataset (one split per language) and its card to this Hub repository.")
    parser.add_argument("--private", action="store_true", help="Make the Hub repository private.")


def run(args: argparse.Namespace) -> int:
    from crop_hf.commands._dataclass_args import dataclass_from_args
    from crop_hf.synthesis import SynthesisConfig, synthesize
    from crop_hf.synthesis.runner import push_to_hub

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    config = dataclass_from_args(SynthesisConfig, args)
    result = synthesize(config)
    if result.statistics:  # the main process
        print(result.report())
        if config.report:
            print(f"report: {result.output_dir / 'report' / 'index.html'} (plots linked from the card)")
        if args.push_to_hub:
            url = push_to_hub(result, args.push_to_hub, private=args.private)
            print(f"pushed to {url}")
    return 0
