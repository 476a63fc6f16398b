"""What a newcomer reads: every ``--help`` tells the truth (defaults shown, no Python reprs)."""

from __future__ import annotations

import argparse
import importlib
import re
import runpy
import sys
from pathlib import Path

import pytest

from crop_hf.arguments import build_parser
from crop_hf.cli import COMMANDS, main

REPO_ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted([*(REPO_ROOT / "examples").glob("*.py"), *(REPO_ROOT / "dataset_scripts").glob("*.py")])

#: What must never reach a help text: Python reprs of classes, objects, dicts, lists, tuples,
#: None/empty defaults, and argparse format directives left unexpanded.
REPR = re.compile(r"<class |<function | object at 0x|\{'[^']*': |\['[^']*'[,\]]|\('[^']*',|"
                  r"\(default: (None|\[\]|\(\))\)|%\(")


def render_help(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 0
    return capsys.readouterr().out


def check_help_text(text: str, where: str) -> None:
    flat = " ".join(text.split())  # argparse wraps lines: a repr may span two of them
    match = REPR.search(flat)
    assert match is None, f"{where}: help shows {flat[max(0, match.start() - 60):match.end() + 60]!r}"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_help_shows_its_defaults_and_no_python_repr(name, capsys):
    check_help_text(render_help([name, "--help"], capsys), f"crop-hf {name}")
    module = importlib.import_module(COMMANDS[name][0])
    parser = build_parser(module.CONFIG_CLASSES, prog=name)
    formatter = parser._get_formatter()
    for action in parser._actions:
        if not action.option_strings or action.dest == "help" or action.required:
            continue
        shown = formatter._expand_help(action)
        if isinstance(action, argparse._StoreFalseAction):  # --no_X says what it turns off
            assert f"--{action.dest} off" in shown, f"crop-hf {name} {action.option_strings[0]}: {shown!r}"
        else:
            assert "default" in shown.lower(), f"crop-hf {name} --{action.dest} does not show its default: {shown!r}"
        assert "[" not in str(action.nargs or ""), name


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.name)
def test_every_example_and_dataset_script_help_is_clean(script, capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", [str(script), "--help"])
    with pytest.raises(SystemExit) as exit_info:
        runpy.run_path(str(script), run_name="__main__")
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    assert "usage:" in text
    check_help_text(text, script.name)


def test_percent_and_list_defaults_are_shown_as_typed(capsys):
    text = " ".join(render_help(["train-ner", "--help"], capsys).split())
    assert "(10% as in the CroP paper)" in text
    text = " ".join(render_help(["demo", "--help"], capsys).split())
    assert "(default: de es nl zh)" in text


def test_synthesize_help_names_the_models_it_downloads_and_the_language_filter_switches(capsys):
    text = " ".join(render_help(["synthesize", "--help"], capsys).split())
    for shown in ("(default: 5)", "(default: 256)", "(default: 1000)", "(default: xtreme40)",
                  "(default: crop-hf-synthesis)", "(default: facebook/m2m100_418M)"):
        assert shown in text
    filter_help = text.split("--no_language_filter, --no-language-filter")[1].split("--seed")[0]
    assert "Turn --language_filter off" in filter_help
    on_help = text.split("--language_filter [LANGUAGE_FILTER], --language-filter [LANGUAGE_FILTER]")[1]
    assert on_help.lstrip().startswith("Drop translations") and "--no_language_filter keeps them" in on_help


def test_self_train_help_shows_its_base_model(capsys):
    text = " ".join(render_help(["self-train", "--help"], capsys).split())
    assert "(default: FacebookAI/xlm-roberta-base)" in text


def test_lists_are_space_separated_and_corpora_are_source_specs_everywhere():
    for name, (module_name, _) in COMMANDS.items():
        parser = build_parser(importlib.import_module(module_name).CONFIG_CLASSES, prog=name)
        options = {option for action in parser._actions for option in action.option_strings}
        assert not {"--dataset_arg", "--dataset_args", "--configs_csv"} & options, name
        for action in parser._actions:
            if "comma" in (action.help or "").lower():
                pytest.fail(f"crop-hf {name} --{action.dest} asks for a comma-separated list: {action.help}")
