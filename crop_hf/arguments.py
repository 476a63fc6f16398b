"""Configuration dataclasses read from a command line, a JSON/YAML file, or both.

Every ``crop-hf`` subcommand, ``examples/*.py`` script and training entry point describes its
options as ``@dataclass`` fields with ``metadata={"help": ...}``; :func:`parse_config` reads them
with ``transformers.HfArgumentParser`` (its public API only). A ``.json``/``.yaml``/``.yml`` file
may come first; options after it override it:

>>> from dataclasses import dataclass, field
>>> @dataclass
... class Options:
...     name: str = field(metadata={"help": "who"})
...     count: int = field(default=1, metadata={"help": "how many"})
>>> parse_config([Options], ["--name", "x", "--count", "3"])
(Options(name='x', count=3),)

The file's values are turned into the same ``--key value`` options the command line uses and
placed before it, so the command line wins and every value is checked by the same parser.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import enum
import json
import logging
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["CONFIG_SUFFIXES", "HelpFormatter", "build_parser", "config_to_argv", "parse_config", "plain_text",
           "read_config_file", "renamed_options", "say_deprecated"]

def renamed_options(classes: Sequence[type]) -> dict[str, str]:
    """``{old spelling: field name}`` of the renamed options of ``classes``: each class's ``renamed`` mapping.

    A renamed option still reads, in a file or on the command line, with one deprecation line
    (:func:`say_deprecated`); a corpus job's fingerprint keeps its old name
    (:class:`~crop_hf.engine.options.RunOptions`), so runs written before the rename resume.
    """
    return {old: new for cls in classes for old, new in getattr(cls, "renamed", {}).items()}


#: The logger of deprecated spellings: one line in the user's words, no module path or source line.
DEPRECATION_LOGGER = "crop-hf"


def say_deprecated(message: str) -> None:
    """Say that a spelling the user wrote is deprecated: one logged warning (``crop-hf`` logger).

    A Python ``FutureWarning`` would print the module's path, the source line and the line of code
    that read the option, none of which the user wrote; ``crop-hf``'s log shows each line once.
    """
    logging.getLogger(DEPRECATION_LOGGER).warning(message)


def _deprecated(old: str, new: str, prog: str | None) -> None:
    say_deprecated(f"{prog or 'crop-hf'}: --{old} is renamed --{new}; the old spelling will stop working in a "
                   "later release")


def _new_spellings(argv: Sequence[str], renames: Mapping[str, str], prog: str | None) -> list[str]:
    """``argv`` with every renamed option (``--old``, ``--old=value``) in its new spelling, each said once."""
    out = []
    for arg in argv:
        name, equals, value = arg.partition("=")
        old = name[2:].replace("-", "_") if name.startswith("--") else None
        if old in renames:
            _deprecated(old, renames[old], prog)
            arg = f"--{renames[old]}{equals}{value}"
        out.append(arg)
    return out

#: reST markup of docstrings and help texts, and what ``--help`` shows instead (in this order).
_MARKUP = (
    (re.compile(r":[a-z]+(?::[a-z]+)?:`~?(?:[\w.]*\.)?([^`<]+?)(?: <[^>]+>)?`"), r"\1"),  # :func:`~a.b.c` -> c
    (re.compile(r"`([^`<]+?) <([^>]+)>`__?"), r"\1 (\2)"),  # `text <url>`_ -> text (url)
    (re.compile(r"``(.+?)``", re.DOTALL), r"\1"),  # a literal may wrap onto the next line
    (re.compile(r"(?<![\w*])\*\*(\S(?:.*?\S)?)\*\*(?![\w*])"), r"\1"),  # **bold**
    (re.compile(r"(?<![\w*`])`([^`\n]+)`(?![\w`])"), r"\1"),  # `title reference`
    (re.compile(r"(?m)^(\s*)::\s*$\n?"), ""),  # a paragraph that is only "::"
    (re.compile(r"(?m)(\S)::$"), r"\1:"),  # "Examples::" -> "Examples:"
)


def plain_text(text: str) -> str:
    """A docstring or help text with its reST markup taken out, as ``--help`` shows it.

    >>> plain_text("Run ``crop-hf demo``: **no download**. See :func:`~crop_hf.engine.jobs.run_job`.\\n\\nExamples::")
    'Run crop-hf demo: no download. See run_job.\\n\\nExamples:'
    >>> plain_text("files '*.txt' and 2 * 3")
    "files '*.txt' and 2 * 3"
    """
    for pattern, replacement in _MARKUP:
        text = pattern.sub(replacement, text)
    return text

CONFIG_SUFFIXES = (".json", ".yaml", ".yml")


class HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """``--help`` that tells the truth: every default shown in words a user can type.

    ``ArgumentDefaultsHelpFormatter`` (what ``HfArgumentParser`` uses) appends ``(default: None)``,
    ``(default: [])`` or a list's Python repr, and reads a ``%`` in a help text as a format
    directive. Here a list default is shown space-separated as it is typed, ``None``/empty defaults
    read "not set" unless the help text says what happens without the option ("default: all"), the
    ``--no_X`` switch of a boolean says what it turns off, and a lone ``%`` is printed as is.
    Docstrings and help texts are reST: their markup is taken out (:func:`plain_text`).
    """

    def _format_text(self, text: str) -> str:
        return super()._format_text(plain_text(text))  # the description: a module docstring

    def _get_help_string(self, action: argparse.Action) -> str:
        return plain_text(self._help_with_default(action))

    def _help_with_default(self, action: argparse.Action) -> str:
        help_text = action.help or ""
        if isinstance(action, argparse._StoreFalseAction) and action.option_strings[0].startswith("--no"):
            return f"Turn --{action.dest} off (it is on by default)."
        default = action.default
        if "%(default)" in help_text or default is argparse.SUPPRESS or action.required:
            return help_text
        if not (action.option_strings or action.nargs in (argparse.OPTIONAL, argparse.ZERO_OR_MORE)):
            return help_text
        if default is None or default == []:
            # the help text says what happens without the option ("default: all"), or nothing is set
            return help_text if "default" in help_text.lower() else f"{help_text} (default: not set)"
        if isinstance(default, (list, tuple)):
            shown = " ".join(map(str, default))
        elif isinstance(default, enum.Enum):
            shown = str(default.value)
        else:
            shown = str(default)
        return f"{help_text} (default: {shown.replace('%', '%%')})"

    def _expand_help(self, action: argparse.Action) -> str:
        saved = action.help
        text = saved() if callable(saved) else saved  # a help text made when asked (see build_parser)
        action.help = re.sub(r"%(?![(%])", "%%", text or "")  # a lone '%' ("10%") is text, not a directive
        try:
            return super()._expand_help(action)
        finally:
            action.help = saved


def read_config_file(path: str | Path) -> dict[str, Any]:
    """The top-level mapping of a JSON or YAML file (``ValueError`` naming the file otherwise)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"configuration file {path} does not exist")
    text = path.read_text(encoding="utf-8")
    if path.suffix in {".yaml", ".yml"}:
        import yaml

        data = yaml.safe_load(text)
    else:
        data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of option names to values at the top level")
    return data


def config_to_argv(values: Mapping[str, Any], classes: Sequence[type], where: str = "configuration") -> list[str]:
    """``{"name": "x", "langs": ["de", "es"]}`` → ``["--name", "x", "--langs", "de", "es"]`` for ``classes``' fields.

    Unknown keys raise ``ValueError`` naming them and the valid ones ("unknown argument(s) ...");
    ``None`` values have no command-line spelling and are left out (:func:`parse_config` applies them).
    """
    known = {f.name for cls in classes for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"{where}: unknown argument(s) {', '.join(unknown)}; valid options: {', '.join(sorted(known))}")
    argv: list[str] = []
    for key, value in values.items():
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            if not value:
                continue
            argv += [f"--{key}", *map(_text, value)]
        else:
            argv += [f"--{key}", _text(value)]
    return argv


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def build_parser(classes: Sequence[type], *, prog: str | None = None, description: str | None = None):
    """The ``transformers.HfArgumentParser`` of ``classes``, with :class:`HelpFormatter` for ``--help``.

    A field's help may be a function of no argument returning the text: it is called here, so that
    ``--help`` says what holds when the parser is built (``--method`` lists the projection methods
    registered then, an installed package's included).
    """
    from transformers import HfArgumentParser

    kwargs = {key: value for key, value in (("prog", prog), ("description", description)) if value is not None}
    parser = HfArgumentParser(list(classes), formatter_class=HelpFormatter, **kwargs)
    for action in parser._actions:
        if callable(action.help):
            action.help = action.help()
    return parser


def _unknown_options(parser: argparse.ArgumentParser, argv: Sequence[str]) -> list[str]:
    """The ``--options`` of ``argv`` that ``parser`` does not take (nor abbreviates unambiguously), in order."""
    known = parser._option_string_actions
    unknown = []
    for arg in argv:
        if arg == "--":
            break
        name = arg.split("=", 1)[0]
        if not name.startswith("--") or name in known:
            continue
        if parser.allow_abbrev and any(option.startswith(name) for option in known):
            continue  # argparse reads (or refuses, as ambiguous) an abbreviation itself
        unknown.append(name)
    return unknown


def _unknown_message(parser: argparse.ArgumentParser, unknown: Sequence[str]) -> str:
    """``unknown option --outptu_dir (did you mean --output_dir?); crop-hf x --help lists the options``: one line,
    in the words :class:`~crop_hf.errors.UnknownOptionError` uses for a spec's options."""
    spelled = sorted({option for option in parser._option_string_actions
                      if option.startswith("--") and "-" not in option[2:]})
    guesses = []
    for name in dict.fromkeys(unknown):
        close = difflib.get_close_matches("--" + name[2:].replace("-", "_"), spelled, n=1)
        guesses.append(name + (f" (did you mean {close[0]}?)" if close else ""))
    plural = "s" if len(guesses) > 1 else ""
    return f"unknown option{plural} {', '.join(guesses)}; {parser.prog} --help lists the options"


def parse_config(classes: Sequence[type], argv: Sequence[str] | None = None, *, prog: str | None = None,
                 description: str | None = None, positional: str | None = None) -> tuple[Any, ...]:
    """Read one instance of each dataclass in ``classes`` from ``argv`` (default: ``sys.argv[1:]``).

    ``argv`` may start with a JSON/YAML file of option values; options after it override the file.
    Unknown options (in the file or on the command line) are an error naming them, each with the
    closest option it takes ("did you mean"), before any other check; so is a value no option takes. With
    ``positional``, a bare first argument (after the file, if any) is that option's value
    (``report OUT`` reads as ``report --output_dir OUT``).
    """
    import sys

    argv = list(sys.argv[1:] if argv is None else argv)
    from_file: list[str] = []
    nulls: set[str] = set()  # options the file sets to null: no command-line spelling, applied after parsing
    renames = renamed_options(classes)
    if argv and not argv[0].startswith("-") and Path(argv[0]).suffix in CONFIG_SUFFIXES:
        path = argv.pop(0)
        values = read_config_file(path)
        for old in set(values) & set(renames):
            _deprecated(old, renames[old], prog)
            values[renames[old]] = values.pop(old)
        from_file = config_to_argv(values, classes, where=path)
        given = {arg.split("=", 1)[0].lstrip("-").replace("-", "_") for arg in argv if arg.startswith("--")}
        nulls = {key for key, value in values.items() if value is None} - given
    if positional and argv and not argv[0].startswith("-"):
        argv = [f"--{positional}", *argv]
    argv = from_file + _new_spellings(argv, renames, prog)
    parser = build_parser(classes, prog=prog, description=description)
    unknown = _unknown_options(parser, argv)
    if unknown:  # before argparse, whose "required" error would hide the misspelt option behind it
        parser.exit(2, f"{parser.prog}: error: {_unknown_message(parser, unknown)}\n")
    try:
        *configs, remaining = parser.parse_args_into_dataclasses(args=argv, look_for_args_file=False,
                                                                 return_remaining_strings=True)
    except ValueError as error:  # a dataclass's __post_init__ refused a value: a usage error, said in one line
        parser.exit(2, f"{parser.prog}: error: {' '.join(str(error).split())}\n")
    if remaining:  # a value no option takes
        parser.exit(2, f"{parser.prog}: error: unexpected argument(s) {' '.join(remaining)}: each value follows "
                       f"its --option; {parser.prog} --help lists the options\n")
    configs = tuple(configs)
    for config in configs:
        for name in nulls & {f.name for f in dataclasses.fields(config)}:
            setattr(config, name, None)
    return configs
