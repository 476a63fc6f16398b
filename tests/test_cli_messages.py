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


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_help_example_keeps_its_continuation_lines(name, capsys):
    """A ``\\`` at the end of an example line in a docstring must survive (a lone one joins the two lines)."""
    text = render_help([name, "--help"], capsys)
    joined = [line for line in text.splitlines() if re.search(r"\S {5,}--", line.strip())]
    assert not joined, f"crop-hf {name} --help runs an example onto one line: {joined[0]!r}"


def test_synthesize_help_names_every_projection_method(capsys):
    from crop_hf.projection.methods import PROJECTION_METHODS

    text = " ".join(render_help(["synthesize", "--help"], capsys).split())
    start = text.index("--method METHOD Projection")
    method_help = text[start:text.index("--alignment_model", start)]
    missing = [name for name in PROJECTION_METHODS if not re.search(rf"\b{name}\b", method_help)]
    assert not missing, f"synthesize --help leaves {missing} out of --method"


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


# --- user mistakes end in one line on stderr, a non-zero exit, and no traceback ---------------------


def run_main(argv: list[str], capsys) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exit_info:
        code = exit_info.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_error_line(err: str, command: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"crop-hf {command}: error: "), lines[0]
    return lines[0]


def test_a_device_that_does_not_exist_is_a_usage_error_listing_the_devices(capsys):
    from crop_hf.errors import available_devices

    code, _, err = run_main(["synthesize", "--tgt_langs", "de", "--device", "cuda:99"], capsys)
    assert code == 2
    line = one_error_line(err, "synthesize")
    assert "device 'cuda:99' is not available" in line and f"devices here: {', '.join(available_devices())}" in line
    code, _, err = run_main(["synthesize", "--tgt_langs", "de", "--device", "gpu0"], capsys)
    assert code == 2 and "'gpu0' is not a torch device" in one_error_line(err, "synthesize")


def test_check_device_accepts_what_exists():
    import torch

    from crop_hf.errors import DeviceError, available_devices, check_device

    assert check_device("cpu") == "cpu"
    for device in available_devices():
        assert check_device(device) == device
    if not torch.cuda.is_available():
        with pytest.raises(DeviceError, match=r"built without CUDA.*devices here: cpu"):
            check_device("cuda")


def test_an_unreachable_model_is_named_and_offline_mode_reported(capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, _, err = run_main(["evaluate-ner", "--model", "crop-hf-tests/no-such-model", "--sources", "conll5:es"], capsys)
    assert code == 1
    line = one_error_line(err, "evaluate-ner")
    assert "cannot load the model (--model) 'crop-hf-tests/no-such-model'" in line
    assert "offline mode is on (HF_HUB_OFFLINE=1" in line


def test_offline_mode_phrase_says_on_or_off():
    from crop_hf.errors import offline_mode

    assert offline_mode({}).startswith("offline mode is off")
    assert offline_mode({"HF_DATASETS_OFFLINE": "true"}).startswith("offline mode is on (HF_DATASETS_OFFLINE=1)")


def test_an_unreachable_dataset_is_named(capsys, monkeypatch, tiny_xlmr_ner):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    code, _, err = run_main(["evaluate-ner", "--model", str(tiny_xlmr_ner), "--sources", "hub:crop-hf-tests/no-such-data",
                             "--no_show_progress"], capsys)
    assert code == 1
    line = one_error_line(err, "evaluate-ner")
    assert "cannot load the dataset 'crop-hf-tests/no-such-data'" in line and "offline mode is on" in line
    # a crop-hf corpus without data_dir downloads its release: offline, the error names the corpus and the way out
    code, _, err = run_main(["evaluate-ner", "--model", str(tiny_xlmr_ner), "--sources", "conll5:nl",
                             "--no_show_progress"], capsys)
    line = one_error_line(err, "evaluate-ner")
    assert code == 1 and "conll5/nl: cannot download the release" in line and "pass data_dir=" in line


def test_an_unknown_spec_key_lists_the_valid_ones(capsys, tiny_xlmr_ner, tmp_path):
    code, _, err = run_main(["evaluate-ner", "--model", str(tiny_xlmr_ner), "--sources",
                             f"conll5:es?datadir={tmp_path}", "--no_show_progress"], capsys)
    assert code == 1
    line = one_error_line(err, "evaluate-ner")
    assert "conll5/es: unknown option 'datadir' (did you mean data_dir?)" in line
    valid = line.split("valid options: ")[1].split(" (--debug")[0].split(", ")
    assert {"data_dir", "skip_bad_records", "encoding", "source", "cache_dir", "splits"} <= set(valid)


BUILDER_FOLDERS = [  # name, config, what the message names, a file it must say it looked for
    ("conll5", "es", "conll5/es", "esp.testb"),
    ("cstop", "default", "cstop", "eval.tsv"),
    ("top", "v1", "top/v1", "test.tsv"),
    ("top", "v2", "top/v2", "<domain>_train.tsv"),
    ("xtreme40", "de", "xtreme40/de", "de/dev"),
]


@pytest.mark.parametrize(("name", "config", "what", "file"), BUILDER_FOLDERS, ids=[row[2] for row in BUILDER_FOLDERS])
def test_a_missing_folder_has_one_message_shape_for_every_builder(name, config, what, file, capsys, tmp_path):
    missing = tmp_path / "not-here"
    code, _, err = run_main(["build-dataset", "--name", name, "--configs", config, "--data_dir", str(missing),
                             "--output_dir", str(tmp_path / "out"), "--cache_dir", str(tmp_path / "cache")], capsys)
    assert code == 1
    line = one_error_line(err, "build-dataset")
    assert re.search(rf"error: {re.escape(what)}: no folder '{re.escape(str(missing))}'; looked for train: ", line), line
    assert file in line and "Pass data_dir=" in line


def test_debug_shows_the_traceback(capsys, monkeypatch, tmp_path):
    argv = ["build-dataset", "--name", "cstop", "--data_dir", str(tmp_path / "none"), "--output_dir", str(tmp_path)]
    with pytest.raises(FileNotFoundError, match="cstop: no folder"):
        main([*argv, "--debug"])
    monkeypatch.setenv("CROP_HF_DEBUG", "1")
    with pytest.raises(FileNotFoundError):
        main(argv)


# --- one split needs only its files -------------------------------------------------------------------


def test_norne_dev_and_test_files_alone_load_one_split(shared_data, tmp_path):
    from crop_hf.data import load_dataset
    from crop_hf.errors import MissingFilesError

    folder = shared_data / "norne"
    assert not list(folder.glob("*train*"))  # the release copy here has no train file
    validation = load_dataset("conll5", "no", source="norne", data_dir=str(folder), split="validation",
                              cache_dir=str(tmp_path))
    assert validation.num_rows == 2410
    with pytest.raises(MissingFilesError, match=r"looked for train: no_bokmaal-ud-train\.conllu$"):
        load_dataset("conll5", "no", source="norne", data_dir=str(folder), cache_dir=str(tmp_path))


def test_conll_test_file_alone_loads_the_test_split(shared_data, tmp_path):
    from crop_hf.data import load_dataset

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "esp.testb").symlink_to(shared_data / "conll2002" / "esp.testb")
    test = load_dataset("conll5", "es", data_dir=str(tmp_path / "data"), split="test", cache_dir=str(tmp_path / "c"))
    assert test.num_rows == 1517
    both = load_dataset("conll5", "es", data_dir=str(tmp_path / "data"), split="test[:10]+test[10:20]",
                        cache_dir=str(tmp_path / "c"))
    assert both.num_rows == 20


def test_evaluate_ner_reads_only_the_split_it_scores(shared_data, tiny_xlmr_ner, tmp_path, capsys):
    spec = f"conll5:no?source=norne&data_dir={shared_data / 'norne'}"
    out = tmp_path / "scores.json"
    code, stdout, err = run_main(["evaluate-ner", "--model", str(tiny_xlmr_ner), "--sources", spec, "--split", "test",
                                  "--max_samples", "20", "--drop_unknown_types", "--output", str(out)], capsys)
    assert code == 0, err
    assert stdout.splitlines()[0].split()[:2] == ["test", "no"]
    import json

    scores = json.loads(out.read_text())
    assert scores["split"] == "test" and list(scores["languages"]) == ["no"]
    assert scores["languages"]["no"]["sentences"] == 20  # of the 1939 test sentences; no train file exists


def test_synthesize_default_input_offline_names_the_download(capsys, monkeypatch, tmp_path):
    """The default input (xtreme40, downloaded) offline: one line naming the URL, offline mode and the way out."""
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    code, _, err = run_main(["synthesize", "--tgt_langs", "de", "--output_dir", str(tmp_path), "--no_show_progress"],
                            capsys)
    assert code == 1
    line = one_error_line(err, "synthesize")
    assert "input 'xtreme40': cannot download https://" in line and "offline mode is on" in line
    assert "'xtreme40?data_dir=<folder>'" in line


def test_docs_and_readme_use_no_renamed_spelling():
    """Every option renamed on the command line (``--target_langs``) and every renamed method option
    (hybrid's ``fuzzy=``) is spelled the current way in README.md and the documentation site."""
    from crop_hf.arguments import renamed_options
    from crop_hf.projection.methods import PROJECTION_METHODS

    old_options = set()
    for module_name, _ in COMMANDS.values():
        old_options |= set(renamed_options(importlib.import_module(module_name).CONFIG_CLASSES))
    old_method_options = {old for row in PROJECTION_METHODS.values() for old in row.options_class.renamed}
    assert {"target_langs", "max_sentences", "source_lang"} <= old_options and "fuzzy" in old_method_options
    found = []
    for path in [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").rglob("*.md"))]:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            for old in old_options:
                if re.search(rf"--{old}\b", line):
                    found.append(f"{path.relative_to(REPO_ROOT)}:{number}: --{old}")
            for old in old_method_options:
                if re.search(rf"(?<![\w-]){old}=", line):
                    found.append(f"{path.relative_to(REPO_ROOT)}:{number}: {old}=")
    assert not found, found


def test_a_misspelt_option_is_named_with_the_closest_one_before_any_other_check(capsys):
    """Not HfArgumentParser's "Some specified arguments are not used", nor argparse's "required" error first."""
    code, _, err = run_main(["evaluate-ner", "--model", "m", "--sources", "conll5:es", "--outptu_dir", "x"], capsys)
    assert code == 2 and err == ("crop-hf evaluate-ner: error: unknown option --outptu_dir (did you mean --output_dir?); "
                                 "crop-hf evaluate-ner --help lists the options\n")
    # named before argparse would say that --tgt_langs is required
    code, _, err = run_main(["synthesize", "--tgt_lagns", "de", "--output-dri=out", "--zzz"], capsys)
    assert code == 2 and err == ("crop-hf synthesize: error: unknown options --tgt_lagns (did you mean --tgt_langs?), "
                                 "--output-dri (did you mean --output_dir?), --zzz; crop-hf synthesize --help lists "
                                 "the options\n")
    code, _, err = run_main(["env", "--json", "true", "stray"], capsys)
    assert code == 2 and err == ("crop-hf env: error: unexpected argument(s) stray: each value follows its --option; "
                                 "crop-hf env --help lists the options\n")
    assert run_main(["env", "--js", "true"], capsys)[0] == 0  # an abbreviation argparse reads stays allowed


def test_evaluate_ner_writes_into_output_dir_and_output_is_a_deprecated_file(tmp_path, monkeypatch, capsys, caplog):
    import json
    import logging

    from crop_hf.commands import evaluate_ner
    from crop_hf.ner.evaluate import NerEvaluation, format_ner_table, score_tags

    evaluation = NerEvaluation("test", {"es": score_tags([["B-PER", "O", "B-LOC"]], [["B-PER", "O", "O"]])}, None)
    calls = []
    monkeypatch.setattr(evaluate_ner, "evaluate_pretrained", lambda model, sources, **kw: calls.append(model) or evaluation)
    (tmp_path / "a-file").write_text("not a folder")
    code, _, err = run_main(["evaluate-ner", "--model", "m", "--sources", "conll5:es", "--output_dir",
                             str(tmp_path / "a-file" / "scores")], capsys)
    assert code == 1 and "--output_dir" in one_error_line(err, "evaluate-ner") and calls == []  # refused first

    folder = tmp_path / "scores"
    code, out, err = run_main(["evaluate-ner", "--model", "m", "--sources", "conll5:es", "--output_dir", str(folder)],
                              capsys)
    assert code == 0, err
    expected = {"model": "m", **evaluation.to_dict(), "flat": evaluation.flat()}
    assert sorted(path.name for path in folder.iterdir()) == ["ner_scores.json", "ner_scores.txt"]
    assert json.loads((folder / "ner_scores.json").read_text()) == expected
    table = format_ner_table(evaluation)
    assert (folder / "ner_scores.txt").read_text() == table + "\n" and table in out

    with caplog.at_level(logging.WARNING, logger="crop-hf"):
        code, _, err = run_main(["evaluate-ner", "--model", "m", "--sources", "conll5:es", "--output",
                                 str(tmp_path / "old.json")], capsys)
    assert code == 0, err
    assert json.loads((tmp_path / "old.json").read_text()) == expected  # what --output always wrote
    assert [record.getMessage() for record in caplog.records] == [
        "crop-hf evaluate-ner: --output FILE is deprecated; --output_dir DIR writes DIR/ner_scores.json (a folder, as "
        "every command's --output_dir): --output will stop working in a later release"]
