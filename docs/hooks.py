"""MkDocs hooks: the CLI reference page, generated from the commands themselves.

``docs/reference/cli.md`` holds the marker ``<!-- cli-reference -->``; at build time it is replaced
by one section per row of :data:`crop_hf.cli.COMMANDS`, listing every option the command's
``transformers.HfArgumentParser`` accepts (built from its ``CONFIG_CLASSES`` exactly as
``crop-hf COMMAND --help`` builds it), with the help text and default that ``--help`` prints.
The page therefore cannot drift from the code. A command whose module needs a package that is not
installed gets a note instead of its options, and the build goes on.

``tests/test_docs_site.py`` reuses :func:`command_options` to check every ``--option`` the README
and the site mention.
"""

from __future__ import annotations

import argparse
import html
import importlib
import sys
from pathlib import Path

MARKER = "<!-- cli-reference -->"
#: Options every command takes, handled by ``crop_hf.cli`` before the command's parser.
GLOBAL_OPTIONS = {"help": "show the options and exit", "debug": "show the traceback of an error (or set CROP_HF_DEBUG=1)"}

sys.path.insert(0, str(Path(__file__).resolve().parent))  # griffe_rst, beside this file
from griffe_rst import to_markdown  # noqa: E402


def load_command(name: str):
    """The module of command ``name`` (ImportError when it needs a package that is not installed)."""
    from crop_hf.cli import COMMANDS

    return importlib.import_module(COMMANDS[name][0])


def option_actions(config_class: type) -> list[argparse.Action]:
    """The options of one configuration dataclass, as ``crop-hf`` parses them (without ``--help``)."""
    from crop_hf.arguments import build_parser

    parser = build_parser([config_class])
    return [action for action in parser._actions if not isinstance(action, argparse._HelpAction)]


def command_options(name: str) -> set[str]:
    """Every option name command ``name`` accepts, without dashes, ``-`` spelt ``_`` (``--no_X`` included)."""
    module = load_command(name)
    names = set(GLOBAL_OPTIONS)
    for config_class in module.CONFIG_CLASSES:
        for action in option_actions(config_class):
            names.update(option.lstrip("-").replace("-", "_") for option in action.option_strings)
    return names


def _kind(action: argparse.Action) -> str:
    if action.nargs == 0:
        return "switch"
    if action.choices:
        kind = " \\| ".join(f"`{choice}`" for choice in action.choices)
    else:
        type_name = getattr(action.type, "__name__", "str")
        kind = {"string_to_bool": "bool"}.get(type_name, type_name)
    if action.nargs in ("+", "*"):
        kind = f"list of {kind}"
    return kind


def _cell(text: str) -> str:
    return html.escape(" ".join(text.split()), quote=False).replace("|", "\\|")


def options_table(config_class: type) -> str:
    from crop_hf.arguments import HelpFormatter

    formatter = HelpFormatter("crop-hf")
    rows = ["| option | value | description |", "| --- | --- | --- |"]
    for action in option_actions(config_class):
        names = " ".join(f"`{option}`" for option in action.option_strings if "_" in option or "-" not in option[2:])
        names = names or " ".join(f"`{option}`" for option in action.option_strings)
        description = formatter._expand_help(action)
        if action.required:
            description += " **Required.**"
        rows.append(f"| {names} | {_kind(action)} | {_cell(description)} |")
    return "\n".join(rows)


def command_section(name: str, summary: str) -> str:
    lines = [f"## `crop-hf {name}`", "", f"{summary[0].upper()}{summary[1:]}.", ""]
    try:
        module = load_command(name)
    except ImportError as error:
        note = ("!!! note\n    The options of this command need a package that is not installed where these pages "
                f"were built ({_cell(str(error))}); run `crop-hf {name} --help`.")
        return "\n".join([*lines, note, ""])
    positional = getattr(module, "POSITIONAL", None)
    usage = f"crop-hf {name} [OPTIONS.yaml]" + (f" [{positional.upper()}]" if positional else "") + " [--option VALUE ...]"
    lines += ["```text", usage, "```", ""]
    if positional:
        lines += [f"A bare first argument is `--{positional}`.", ""]
    if module.__doc__:
        body = module.__doc__.split("\n", 1)[1] if "\n" in module.__doc__ else ""
        if body.strip():
            lines += [to_markdown(body.strip()), ""]
    for config_class in module.CONFIG_CLASSES:
        doc = (config_class.__doc__ or "").strip().splitlines()
        heading = f"`{config_class.__name__}`" + (f": {to_markdown(doc[0])}" if doc and not doc[0].startswith(config_class.__name__ + "(") else "")
        lines += [f"### {heading}", "", options_table(config_class), ""]
    return "\n".join(lines)


def cli_reference() -> str:
    """The Markdown of every command's section, in :data:`crop_hf.cli.COMMANDS` order."""
    from crop_hf.cli import COMMANDS

    overview = ["| command | what it does |", "| --- | --- |"]
    overview += [f"| [`crop-hf {name}`](#crop-hf-{name}) | {_cell(summary)} |" for name, (_, summary) in COMMANDS.items()]
    sections = [command_section(name, summary) for name, (_, summary) in COMMANDS.items()]
    global_rows = "\n".join(f"| `--{option}` | {text} |" for option, text in GLOBAL_OPTIONS.items())
    return "\n\n".join(["\n".join(overview), "Every command also takes:\n\n| option | |\n| --- | --- |\n" + global_rows,
                        *sections])


def on_page_markdown(markdown: str, page, config, files) -> str:
    if MARKER in markdown:
        return markdown.replace(MARKER, cli_reference())
    return markdown
