"""The ``crop-hf`` command.

Each subcommand lives in its own module under :mod:`crop_hf.commands` and declares its options
as configuration dataclasses: ``CONFIG_CLASSES`` (a tuple of ``@dataclass`` types whose fields
carry ``metadata={"help": ...}``) and ``run(*configs) -> int``. The options are parsed by
``transformers.HfArgumentParser`` (:func:`crop_hf.arguments.parse_config`), so every command also
accepts a JSON/YAML file of its options first (``crop-hf synthesize run.yaml --device cuda:0``)
and the option names are the field names. Modules are imported only when their subcommand runs
(``--help`` reads the one-line summaries from :data:`COMMANDS`), so ``crop-hf --help`` answers
without importing torch or transformers.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

#: subcommand -> (module, one-line summary). A feature that adds a subcommand adds a row.
COMMANDS: dict[str, tuple[str, str]] = {
    "env": ("crop_hf.commands.env", "print versions of crop-hf and the libraries it uses (for bug reports)"),
    "evaluate-ner": ("crop_hf.commands.evaluate_ner", "per-language entity P/R/F1 of a token-classification model"),
    "synthesize": ("crop_hf.commands.synthesize", "build pseudo-labeled NER corpora in target languages (CroP)"),
    "demo": ("crop_hf.commands.demo", "offline smoke run of every synthesis stage with tiny random models"),
    "self-train": ("crop_hf.commands.self_train", "re-label discarded sentences with a self-trained multilingual model"),
    "train-ner": ("crop_hf.commands.train_ner", "fine-tune a multilingual NER model and evaluate it per language"),
    "build-dataset": ("crop_hf.commands.build_dataset", "build a corpus from its original release as parquet, or push it"),
    "report": ("crop_hf.commands.report", "plots and an HTML page of a synthesized corpus, linked from its card"),
    "train-parser": ("crop_hf.commands.train_parser", "fine-tune the joint intent + slot parser (CSTOP) with Accelerate"),
    "evaluate-parser": ("crop_hf.commands.evaluate_parser", "exact match, intent accuracy and slot F1 of a parser, per domain"),
    "generate-filter": ("crop_hf.commands.generate_filter", "English parses to code-switched parses with a fine-tuned seq2seq model, filtered (CSTOP)"),
    "translate-align": ("crop_hf.commands.translate_align", "English bracket parses to target-language parses (CSTOP's translate-and-align)"),
}


def build_parser() -> argparse.ArgumentParser:
    from crop_hf import __version__

    parser = argparse.ArgumentParser(
        prog="crop-hf",
        description="Cross-lingual data generation for Hugging Face: labeled sequence translation, "
        "label projection, corpus synthesis and training.",
    )
    parser.add_argument("--version", action="version", version=f"crop-hf {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, summary) in COMMANDS.items():
        subparsers.add_parser(name, help=summary, description=summary, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if argv and argv[0] in COMMANDS:
        name = argv[0]
        module_name, summary = COMMANDS[name]
        module = importlib.import_module(module_name)
        from crop_hf.arguments import parse_config

        configs = parse_config(module.CONFIG_CLASSES, argv[1:], prog=f"crop-hf {name}",
                               description=module.__doc__ or summary, positional=getattr(module, "POSITIONAL", None))
        return int(module.run(*configs) or 0)
    args = parser.parse_args(argv)  # handles --help, --version and unknown commands
    if args.command is None:
        parser.print_help()
        return 0
    return 0  # pragma: no cover - every known command returned above


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
