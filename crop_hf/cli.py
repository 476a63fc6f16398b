"""The ``crop-hf`` command.

Each subcommand lives in its own module under :mod:`crop_hf.commands` and declares its options
as configuration dataclasses: ``CONFIG_CLASSES`` (a tuple of ``@dataclass`` types whose fields
carry ``metadata={"help": ...}``) and ``run(*configs) -> int``. The options are parsed by
``transformers.HfArgumentParser`` (:func:`crop_hf.arguments.parse_config`), so every command also
accepts a JSON/YAML file of its options first (``crop-hf synthesize run.yaml --device cuda:0``)
and the option names are the field names. A user mistake (a missing file, an unknown option, an
unreachable model, a device that does not exist) ends in one line on stderr and exit status 1;
``--debug`` or ``CROP_HF_DEBUG=1`` shows the traceback instead. Modules are imported only when their subcommand runs
(``--help`` reads the one-line summaries from :data:`COMMANDS`), so ``crop-hf --help`` answers
without importing torch or transformers.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from crop_hf import __version__
from crop_hf.arguments import parse_config
from crop_hf.console import progress_bars
from crop_hf.registry import Registry

#: subcommand -> (module, one-line summary). A feature that adds a subcommand adds a row.
COMMANDS: Registry[tuple[str, str]] = Registry("command", {
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
    "mark-parallel": ("crop_hf.commands.mark_parallel", "wrap aligned phrase pairs of a parallel corpus in markers"),
    "train-translation": ("crop_hf.commands.train_translation", "fine-tune a translation model to keep markers"),
    "evaluate-translation": ("crop_hf.commands.evaluate_translation",
                             "marker completeness, slot accuracy, BLEU, chrF of translation models"),
    "generate-filter": ("crop_hf.commands.generate_filter", "English parses to code-switched parses with a fine-tuned seq2seq model, filtered (CSTOP)"),
    "translate-align": ("crop_hf.commands.translate_align", "English bracket parses to target-language parses (CSTOP's translate-and-align)"),
    "evaluate-projection": ("crop_hf.commands.evaluate_projection",
                            "every projection method and aligner scored against a gold-tagged translation"),
    "evaluate-corpus": ("crop_hf.commands.evaluate_corpus",
                        "a corpus's labels scored against gold labels of the same sentences, per type and error"),
    "app": ("crop_hf.commands.app", "the demo app in the browser: labeled translation, projection, parsing"),
})


def build_parser() -> argparse.ArgumentParser:
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


#: Errors printed as one line (``crop-hf <command>: error: ...``, exit status 1) unless debugging:
#: crop-hf's own user errors, and what the libraries raise for a missing file, a bad value, an
#: unreachable repository or a missing optional package.
USER_ERRORS: tuple[type[BaseException], ...] = (OSError, ValueError, KeyError, ImportError)


def _debugging(argv: list[str]) -> bool:
    """``--debug`` anywhere in ``argv`` (removed from it) or ``CROP_HF_DEBUG=1``: show tracebacks."""
    flag = "--debug" in argv
    while "--debug" in argv:
        argv.remove("--debug")
    return flag or os.environ.get("CROP_HF_DEBUG", "").lower() in {"1", "true", "yes", "on"}


def _one_line(error: BaseException) -> str:
    text = error.args[0] if isinstance(error, KeyError) and len(error.args) == 1 else str(error)
    return " ".join(str(text).split()) or type(error).__name__


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = _debugging(argv)
    parser = build_parser()
    if argv and argv[0] in COMMANDS:
        name = argv[0]
        module_name, summary = COMMANDS[name]
        module = importlib.import_module(module_name)

        try:
            configs = parse_config(module.CONFIG_CLASSES, argv[1:], prog=f"crop-hf {name}",
                                   description=module.__doc__ or summary, positional=getattr(module, "POSITIONAL", None))
        except USER_ERRORS as error:  # an unreadable options file, an option that needs a missing package
            if debug:
                raise
            print(f"crop-hf {name}: error: {_one_line(error)}", file=sys.stderr)
            return 2

        try:  # --no_show_progress silences every library's bars, not only crop-hf's
            with progress_bars(all(getattr(config, "show_progress", True) for config in configs)):
                return int(module.run(*configs) or 0)
        except USER_ERRORS as error:
            if debug:
                raise
            print(f"crop-hf {name}: error: {_one_line(error)} (--debug shows the traceback)", file=sys.stderr)
            return 1
    args = parser.parse_args(argv)  # handles --help, --version and unknown commands
    if args.command is None:
        parser.print_help()
        return 0
    return 0  # pragma: no cover - every known command returned above


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
