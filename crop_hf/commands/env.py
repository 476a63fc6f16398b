"""``crop-hf env``: the versions that matter when reporting a bug."""

from __future__ import annotations

import argparse
import json
import platform
from importlib import metadata

PACKAGES = (
    "crop-hf", "torch", "transformers", "tokenizers", "datasets", "accelerate", "huggingface_hub",
    "sentencepiece", "peft", "seqeval", "sacrebleu", "langid", "eflomal", "simalign",
)


def collect() -> dict[str, str]:
    """Python, platform and the installed version of each package (``"not installed"`` when absent)."""
    info = {"python": platform.python_version(), "platform": platform.platform()}
    for name in PACKAGES:
        try:
            info[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            info[name] = "not installed"
    return info


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")


def run(args: argparse.Namespace) -> int:
    info = collect()
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        width = max(map(len, info))
        for key, value in info.items():
            print(f"{key:<{width}}  {value}")
    return 0
