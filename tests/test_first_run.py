"""What a new user meets on a first run (issue 48): process counts, outputs never silently replaced,
a forgotten ``--input``, a quiet console, plain ``--help`` pages, docs that say what the code does, and
language rules used on another language."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from synthesis_fakes import fake_models
from test_translate_align import DictTranslator, TableAligner

from crop_hf.augment.translate_align import TranslateAlignModels, translate_align
from crop_hf.cli import COMMANDS, main
from crop_hf.engine.processes import describe_processes
from crop_hf.synthesis import SynthesisModels
from crop_hf.synthesis.runner import SynthesisJob

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
RAW = {"de": ["Ich wohne in Hamburg .", "Anna trifft Peter in Hamburg .", "das ist alles klein .",
              "eins zwei drei vier fünf sechs sieben acht neun zehn elf zwölf dreizehn"],
       "es": ["Vivo en Madrid .", "Ana conoce a Pedro en Madrid .", "nada aquí ."]}


def _raw(folder: Path) -> str:
    (folder / "raw").mkdir(parents=True, exist_ok=True)
    for lang, lines in RAW.items():
        (folder / "raw" / f"{lang}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(folder / "raw" / "{lang}.txt")


def _snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (hidden ones too) and the hash of its bytes."""
    return {path.relative_to(folder).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.rglob("*")) if path.is_file()}


def _synthesize(capsys, template: str, output: Path, *extra: str) -> tuple[int, str, str]:
    try:
        code = main(["synthesize", "--tgt_langs", "de", "es", "--input", template, "--output_dir", str(output),
                     "--mt_model", "fake-mt", "--ner_model", "fake-ner", "--shard_size", "2", "--max_words", "12",
                     "--language_filter", "false", "--no_show_progress", *extra])
    except SystemExit as exit_info:
        code = exit_info.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def fake_synthesis_models(monkeypatch):
    """``crop-hf synthesize`` with the stand-in models of the single-process tests; counts the loads."""
    loads = []

    def load(cls, config, device=None):
        loads.append(config.output_dir)
        return fake_models()

    monkeypatch.setattr(SynthesisModels, "load", classmethod(load))
    # a resumed run loads no model: it reads the tagger's labels from its config, here the fakes'
    monkeypatch.setattr(SynthesisJob, "_label_names", lambda self: list(fake_models().labels.names))
    return loads


# --------------------------------------------------------------------------- 1. processes


def _launcher_environment(*arguments: str) -> dict[str, str]:
    """The environment ``accelerate launch ARGUMENTS script`` gives its child (accelerate's own code)."""
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils.launch import prepare_simple_launcher_cmd_env

    args = launch_command_parser().parse_args([*arguments, "script.py"])
    args, _, _ = _validate_launch_command(args)
    _, environment = prepare_simple_launcher_cmd_env(args)
    return environment


def test_accelerate_launch_on_the_cpu_for_two_processes_is_told_it_runs_alone():
    environment = _launcher_environment("--cpu", "--num_processes", "2")
    assert "WORLD_SIZE" not in environment  # accelerate's simple launcher: one child, no rank
    level, line = describe_processes(type("State", (), {"num_processes": 1}), "synthesize", environ=environment)
    assert level == logging.WARNING
    assert "launched for several processes but running alone (1 process)" in line
    assert "ACCELERATE_USE_CPU=1 torchrun --standalone --nproc_per_node N -m crop_hf.cli" in line
    single = _launcher_environment("--cpu", "--num_processes", "1")
    assert describe_processes(type("State", (), {"num_processes": 1}), "synthesize", environ=single) == (
        logging.INFO, "synthesize: 1 process, taking every shard")


def _documented(kind: str) -> list[str]:
    """The command lines of the block ``<!-- multi-gpu-corpus-commands: KIND -->`` in docs/how-to/multi-gpu.md."""
    page = (ROOT / "docs" / "how-to" / "multi-gpu.md").read_text(encoding="utf-8")
    block = re.search(rf"<!-- multi-gpu-corpus-commands: {kind} -->\n```bash\n(.*?)```", page, re.DOTALL)
    assert block, f"no {kind} block of corpus commands in multi-gpu.md"
    return [line for line in re.sub(r"\\\n\s*", "", block.group(1)).splitlines() if line.strip()]


def test_the_documented_gpu_commands_parse_for_accelerate_and_crop_hf():
    from accelerate.commands.launch import launch_command_parser

    from crop_hf.arguments import build_parser

    commands = _documented("gpu")
    assert {shlex.split(line)[shlex.split(line).index("crop_hf.cli") + 1] for line in commands} == {
        "synthesize", "translate-align"}
    for line in commands:
        words = shlex.split(line)
        assert words[:3] == ["accelerate", "launch", "--multi_gpu"]
        launch = launch_command_parser().parse_args(words[2:])
        assert launch.multi_gpu and launch.num_processes == 4 and launch.module
        command, options = launch.training_script_args[0], launch.training_script_args[1:]
        module = __import__(COMMANDS[command][0], fromlist=["CONFIG_CLASSES"])
        parser = build_parser(module.CONFIG_CLASSES)
        _, unknown = parser.parse_known_args(options)
        assert not unknown, (line, unknown)


@pytest.mark.slow
def test_the_documented_cpu_command_runs_two_processes_that_say_so(tmp_path, tiny_m2m100, tiny_xlmr_ner):
    """The page's CPU command, run as written (torchrun as ``python -m torch.distributed.run``) with tiny models."""
    (line,) = _documented("cpu")
    words = shlex.split(line)
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    while "=" in words[0]:
        name, value = words.pop(0).split("=", 1)
        environment[name] = value
    assert words[0] == "torchrun" and environment.get("ACCELERATE_USE_CPU") == "1"
    _raw(tmp_path)
    command = [sys.executable, "-m", "torch.distributed.run", *words[1:],
               "--mt_model", str(tiny_m2m100), "--ner_model", str(tiny_xlmr_ner), "--num_beams", "1",
               "--num_return_sequences", "1", "--max_new_tokens", "8", "--shard_size", "1", "--language_filter",
               "false", "--no_show_progress"]
    done = subprocess.run(command, cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    said = [line for line in done.stderr.splitlines() if "processes; shard k" in line]
    assert said == ["INFO crop_hf.engine.jobs: synthesize: 2 processes; shard k of each language goes to process "
                    "k mod 2 (process 0: shards 0, 2, 4, ...; process 1: shards 1, 3, 5, ...)"]
    owners = {json.loads(path.read_text())["process_index"]
              for path in (tmp_path / "out" / "crop" / "shards").glob("*/*/*.json")}
    assert owners == {0, 1}
    statistics = json.loads((tmp_path / "out" / "crop" / "statistics.json").read_text())
    assert {lang: counts["input"] for lang, counts in statistics.items()} == {"de": 4, "es": 3}


# --------------------------------------------------------------------------- 2. outputs never silently replaced


def test_a_run_of_other_settings_is_refused_naming_them_and_changes_nothing(tmp_path, capsys, fake_synthesis_models):
    template, output = _raw(tmp_path), tmp_path / "out"
    code, printed, _ = _synthesize(capsys, template, output)
    assert code == 0 and " lang  input" in printed
    before = _snapshot(output)

    code, printed, err = _synthesize(capsys, template, output, "--max_words", "3", "--num_beams", "4")
    assert code == 1 and printed == ""
    (line,) = err.strip().splitlines()
    assert line.startswith("crop-hf synthesize: error: ") and "holds a finished result of other settings" in line
    assert "--max_words: 12 there, 3 here; --num_beams: 5 there, 4 here" in line and "--overwrite_output_dir" in line
    assert _snapshot(output) == before  # byte for byte: no shard, no run.json, no card rewritten

    code, _, err = _synthesize(capsys, template, output, "--tgt_langs", "de")  # a language fewer
    assert code == 1 and '--tgt_langs: ["de", "es"] there, ["de"] here' in err and _snapshot(output) == before

    code, _, _ = _synthesize(capsys, template, output)  # the same settings: resumed, nothing redone
    assert code == 0 and len(fake_synthesis_models) == 1

    code, printed, _ = _synthesize(capsys, template, output, "--max_words", "3", "--overwrite_output_dir")
    assert code == 0
    statistics = json.loads((output / "statistics.json").read_text())
    assert statistics["de"]["too_long"] == 4 and statistics["es"]["too_long"] == 2  # the new settings' result
    assert len(list((output / "shards").glob("*/run.json"))) == 2  # the first run's shards are kept apart


def test_a_run_that_fails_before_its_first_shard_leaves_the_folder_as_it_was(tmp_path, capsys,
                                                                             fake_synthesis_models):
    template, output = _raw(tmp_path), tmp_path / "out"
    assert _synthesize(capsys, template, output)[0] == 0
    before = _snapshot(output)
    fake_synthesis_models.clear()
    missing = str(tmp_path / "absent" / "{lang}.txt")  # allowed to replace, but the input is not there
    code, _, err = _synthesize(capsys, missing, output, "--overwrite_output_dir")
    assert code == 1 and "absent" in err
    assert _snapshot(output) == before
    assert fake_synthesis_models == []  # it failed before loading any model

    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "notes.txt").write_text("mine\n", encoding="utf-8")
    assert _synthesize(capsys, missing, fresh)[0] == 1
    assert _snapshot(fresh) == {"notes.txt": hashlib.sha256(b"mine\n").hexdigest()}
    assert _synthesize(capsys, missing, tmp_path / "never")[0] == 1
    assert not (tmp_path / "never").exists()


def test_translate_align_refuses_other_settings_too(tmp_path):
    from crop_hf.augment.inputs import ParseInput
    from crop_hf.augment.translate_align import TranslateAlignConfig
    from crop_hf.errors import OutputExistsError

    items = [ParseInput("[IN:CREATE_CALL call [SL:CONTACT mom ] ]", None, "l:1")]
    settings = dict(input="unused", output_dir=str(tmp_path / "out"), tgt_lang="es", language_filter=False,
                    show_progress=False)
    translate_align(TranslateAlignConfig(**settings), TranslateAlignModels(DictTranslator(), TableAligner()),
                    inputs=items)
    before = _snapshot(tmp_path / "out")
    with pytest.raises(OutputExistsError, match="--keep_incomplete: false there, true here"):
        translate_align(TranslateAlignConfig(**settings, keep_incomplete=True),
                        TranslateAlignModels(DictTranslator(), TableAligner()), inputs=items)
    assert _snapshot(tmp_path / "out") == before


# --------------------------------------------------------------------------- 3. a language that is not a code


@pytest.mark.parametrize(("argv", "bad"), [
    (["synthesize", "--tgt_langs", "de", "nl", "raw/{lang}.txt"], "'raw/{lang}.txt'"),
    (["synthesize", "--tgt_langs", "de", "germn"], "'germn'"),
    (["translate-align", "--input", "en.tsv", "--output_dir", "x", "--tgt_lang", "es.tsv"], "'es.tsv'"),
])
def test_a_target_language_that_is_not_a_code_is_one_line_suggesting_input(argv, bad, capsys, tmp_path):
    try:
        code = main(argv)
    except SystemExit as exit_info:
        code = exit_info.code
    err = capsys.readouterr().err
    (line,) = err.strip().splitlines()
    assert code == 2 and f"{bad} is not a language code" in line and "--input" in line
    assert "xtreme40" not in line and "offline" not in line  # not blamed on the default input


@pytest.mark.parametrize("code", ["de", "zh", "ast", "pt-BR", "zh_Hans", "deu_Latn", "de_DE"])
def test_language_codes_of_the_model_families_pass(code):
    from crop_hf.errors import check_language_code

    assert check_language_code(code, "tgt_langs") == code


# --------------------------------------------------------------------------- 4. a quiet first run

#: What a first run must not print: Python warnings, log warnings, and transformers' advice.
NOISE = re.compile(r"Warning\b|^WARNING\b|not recommended|Tokenizer does not support real words", re.MULTILINE)


@pytest.mark.slow
def test_demo_synthesize_and_the_projection_pipeline_print_no_warning(tmp_path, tiny_m2m100, tiny_xlmr_ner):
    template = _raw(tmp_path)
    runs = {
        "demo": ["-m", "crop_hf.cli", "demo", "--output_dir", str(tmp_path / "demo"), "--tgt_langs", "de",
                 "--no_show_progress"],
        "synthesize": ["-m", "crop_hf.cli", "synthesize", "--tgt_langs", "de", "--input", template,
                       "--output_dir", str(tmp_path / "synth"), "--mt_model", str(tiny_m2m100), "--ner_model",
                       str(tiny_xlmr_ner), "--num_beams", "1", "--num_return_sequences", "1", "--max_new_tokens",
                       "8", "--no_show_progress"],
        "pipeline": ["-c", "import crop_hf; from transformers import pipeline; pipeline('projection')"],
    }
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONWARNINGS"}
    for name, arguments in runs.items():
        done = subprocess.run([sys.executable, *arguments], capture_output=True, text=True, timeout=300,
                              env=environment, check=False)
        assert done.returncode == 0, (name, done.stderr[-2000:])
        noise = [line for line in (done.stdout + done.stderr).splitlines() if NOISE.search(line)]
        assert not noise, (name, noise)
    assert (tmp_path / "synth" / "statistics.json").is_file()


def test_report_says_where_its_page_is_once(tmp_path, capsys, fake_synthesis_models):
    pytest.importorskip("matplotlib")
    template, output = _raw(tmp_path), tmp_path / "out"
    assert _synthesize(capsys, template, output)[0] == 0
    logging.getLogger("crop_hf").handlers.clear()
    assert main(["report", str(output)]) == 0
    captured = capsys.readouterr()
    assert (captured.out + captured.err).count("index.html") == 1


#: reST that a --help page must not show.
MARKUP = re.compile(r"``|\*\*|::$|:(?:func|class|mod|meth|data|attr):`", re.MULTILINE)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_pages_are_plain_text(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    assert not MARKUP.findall(text), [line for line in text.splitlines() if MARKUP.search(line)]


def test_plain_text_leaves_globs_and_arithmetic_alone():
    from crop_hf.arguments import plain_text

    assert plain_text("``a``, **b**, :class:`~x.Y`, `c <https://e.org>`_ and Examples::") == \
        "a, b, Y, c (https://e.org) and Examples:"
    assert plain_text("'raw/*.txt', 2 * 3 and a*b") == "'raw/*.txt', 2 * 3 and a*b"
    assert plain_text("``--input\n'raw/{lang}.txt'``") == "--input\n'raw/{lang}.txt'"  # a literal wrapped in two


# --------------------------------------------------------------------------- 5. docs say what the code does


def _every_reason() -> set[str]:
    from crop_hf.augment.generate_filter import FILTER_REASONS, INPUT_REASONS
    from crop_hf.augment.translate_align import TRANSLATE_ALIGN_REASONS
    from crop_hf.markers import SLOT_FAILURE_REASONS
    from crop_hf.seqlogical import UNREPRESENTABLE_REASONS
    from crop_hf.synthesis.rows import SYNTHESIS_REASONS
    from crop_hf.translation.mark_parallel import DROP_REASONS

    return {*SYNTHESIS_REASONS, *TRANSLATE_ALIGN_REASONS, *FILTER_REASONS, *INPUT_REASONS, *DROP_REASONS,
            *SLOT_FAILURE_REASONS, *UNREPRESENTABLE_REASONS}


#: A drop reason named in prose: "dropped as `x`", "(reason `x`)", "drop reasons `x`, `y`", "`x` drops".
REASON_MENTION = re.compile(r"(?:dropped|discarded|counted|filtered out)(?: \w+){0,3} (?:as|by|for|under) `(\w+)`"
                            r"|\breasons? (?:is |are |like |such as )?`(\w+)`|`(\w+)` drops? ")


def _docs() -> list[Path]:
    return [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]


def test_drop_reasons_the_docs_name_are_reasons_the_code_defines():
    reasons = _every_reason()
    named = {(page.relative_to(ROOT).as_posix(), next(group for group in match.groups() if group))
             for page in _docs() for match in REASON_MENTION.finditer(page.read_text(encoding="utf-8"))}
    assert ("docs/how-to/label-new-language.md", "markers_incomplete") in named  # the pattern finds mentions
    wrong = sorted((page, reason) for page, reason in named if reason not in reasons)
    assert not wrong, f"reasons the code does not define: {wrong}"
    assert REASON_MENTION.search("most sentences are dropped as `broken_markers`")  # how the old bug read


def test_the_corpus_page_lists_every_dataset_column():
    from crop_hf.synthesis.rows import kept_features

    page = (ROOT / "docs" / "how-to" / "label-new-language.md").read_text(encoding="utf-8")
    listed = page[page.index("`out/crop/dataset`"):page.index("`out/crop/discarded`")]
    assert [column for column in kept_features(["O"]) if f"`{column}`" not in listed] == []


def test_getting_started_says_where_the_shared_data_tests_look():
    import conftest

    page = (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
    assert "../shared/data" in page and "CROP_HF_SHARED_DATA" in page
    assert Path(os.environ.get("CROP_HF_SHARED_DATA", ROOT.parent / "shared" / "data")) == conftest.SHARED_DATA


# --------------------------------------------------------------------------- 7. a language's rule on another


def test_a_language_rule_on_another_target_language_is_said_once(tmp_path, caplog):
    from crop_hf.augment.inputs import ParseInput
    from crop_hf.augment.translate_align import TranslateAlignConfig

    items = [ParseInput("[IN:CREATE_CALL call [SL:CONTACT mom ] ]", None, "l:1"),
             ParseInput("[IN:CREATE_CALL call [SL:CONTACT dad ] ]", None, "l:2")]

    def run(lang: str) -> list[str]:
        caplog.clear()
        config = TranslateAlignConfig(input="unused", output_dir=str(tmp_path / lang), tgt_lang=lang,
                                      method="hybrid?postpositions=hi", language_filter=False, show_progress=False,
                                      shard_size=1)
        with caplog.at_level(logging.WARNING):
            translate_align(config, TranslateAlignModels(DictTranslator(), TableAligner()), inputs=items)
        return [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]

    assert run("es") == ["projection option postpositions=hi is written for hi, not for target language es: it "
                         "may cost F1 there; leave it out of the method for es"]
    assert run("hi") == []


def test_german_rules_are_named_for_each_other_target_language():
    from crop_hf.projection.methods import foreign_rules

    lines = foreign_rules("hybrid?capitalized_nouns=true&function_words=de", ["de", "es", "it", "de-AT"])
    assert [(line.split()[2], line.split("target language ")[1].split(":")[0]) for line in lines] == [
        ("capitalized_nouns", "es"), ("capitalized_nouns", "it"), ("function_words=de", "es"),
        ("function_words=de", "it")]
    assert foreign_rules("hybrid?function_words=en&threshold=80", ["en"]) == []
    assert foreign_rules("lexical", ["es"]) == []


# --------------------------------------------------------------------------- 8. CI lints


def test_ci_runs_ruff_after_the_readme_commands():
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    commands = [line.strip() for line in script.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert commands[-1] == "ruff check ."  # last, so a lint finding fails CI even when the tests pass
    assert "set -euo pipefail" in commands


def test_the_refusal_names_renamed_options_and_the_language_list_as_the_command_line_spells_them(tmp_path):
    """The fingerprint keeps a renamed option's old name (max_sentences, source_lang): the refusal must not."""
    from synthesis_fakes import fake_config, fake_models

    from crop_hf.errors import OutputExistsError
    from crop_hf.synthesis import SynthesisJob

    raw = tmp_path / "raw"
    raw.mkdir()
    for lang in ("de", "es"):
        (raw / f"{lang}.txt").write_text("Ich wohne in Hamburg .\nAnna trifft Peter .\n", encoding="utf-8")
    first = fake_config(str(raw / "{lang}.txt"), str(tmp_path / "out"), tgt_langs=["de", "es"], max_examples=2)
    SynthesisJob(first, models=fake_models()).run()
    again = fake_config(str(raw / "{lang}.txt"), str(tmp_path / "out"), tgt_langs=["de"], max_examples=1,
                        src_lang="fr")
    with pytest.raises(OutputExistsError) as refused:
        SynthesisJob(again, models=fake_models()).run()
    message = str(refused.value)
    assert '--tgt_langs: ["de", "es"] there, ["de"] here' in message
    assert "--max_examples: 2 there, 1 here" in message and '--src_lang: "en" there, "fr" here' in message
    assert "max_sentences" not in message and "source_lang" not in message
