"""Command-line options from a configuration dataclass, the way ``HfArgumentParser`` reads them."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any, get_type_hints


def add_dataclass_arguments(parser: argparse.ArgumentParser, cls: type) -> None:
    """Add one option per field of ``cls`` (``--name`` and ``--name-with-dashes``, help from metadata).

    The same rules as ``transformers.HfArgumentParser`` (it is what parses them), so a
    configuration dataclass serves the CLI, JSON/YAML files and Python alike.
    """
    from transformers import HfArgumentParser

    hints = get_type_hints(cls)
    for field in dataclasses.fields(cls):
        if field.init:
            field.type = hints[field.name]
            HfArgumentParser._parse_dataclass_field(parser, field)


def dataclass_from_args(cls: type, args: argparse.Namespace) -> Any:
    """Build ``cls`` from the parsed options that belong to it."""
    names = {field.name for field in dataclasses.fields(cls) if field.init}
    return cls(**{name: value for name, value in vars(args).items() if name in names})
