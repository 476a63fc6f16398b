"""Behaviours a planted bug changed while the whole suite stayed green (issue 68, point 6): each test here fails on
that bug.

They cover the last round's Apertium engine, the fail-fast checks of ``crop_hf/errors.py``, the run
fingerprints, the translation scorer, evaluate-projection's model checks and the Spanish end-to-end
benchmark's arguments. The Apertium tests run a stand-in ``apertium`` command (a shell script first
on ``PATH``, with a pair's mode file and data files of its own), so they need no Debian package and
can change a pair's data.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from types import SimpleNamespace

import datasets
import pytest
from synthesis_fakes import FakeTagger, fake_config
from test_crop_end_to_end import bench  # noqa: F401  (the benchmark module, a pytest fixture)
from test_pinned_issue62 import _fake_loop

from crop_hf.cli import main
from crop_hf.errors import (
    MissingModelError,
    UnreachableError,
    check_model,
    check_output_path,
    naming,
    reaching,
)
from crop_hf.labels import CONLL_LABELS
from crop_hf.translation.apertium import Apertium

# --------------------------------------------------------------------------- a stand-in Apertium

#: The stand-in engine: ``-l`` lists two pairs, ``-V`` prints a version, a translation gives the HTML back as it
#: came, except that a paragraph saying "roto" gets tag 1 back as tag 7 (an id no entity has) and one saying
#: "abierto" gets tag 1 back as tag 9, opened and never closed.
FAKE_APERTIUM = """#!/bin/sh
case "$1" in
  -l) printf '  eng-spa\\n  spa-eng\\n' ;;
  -V) echo 'apertium 9.9.9' ;;
  *) exec sed -e '/roto/s/id="1"/id="7"/' -e '/abierto/s#<b id="1">\\([^<]*\\)</b>#<b id="9">\\1#' ;;
esac
"""

#: Each pair's data files, as a Debian pair package lays them out: dictionaries, a tagger model, transfer rules.
PAIR_FILES = ("automorf.bin", "prob", "autobil.bin", "t1x", "t1x.bin", "autogen.bin")


@pytest.fixture
def fake_apertium(tmp_path, monkeypatch) -> Path:
    """The stand-in ``apertium`` first on ``PATH``, with ``share/apertium/modes/{eng-spa,spa-eng}.mode`` beside its
    ``bin/`` naming its data files; returns the pair data folder."""
    root = tmp_path / "apertium"
    (root / "bin").mkdir(parents=True)
    data = root / "share" / "apertium" / "apertium-eng-spa"
    modes = root / "share" / "apertium" / "modes"
    data.mkdir(parents=True)
    modes.mkdir()
    for pair in ("eng-spa", "spa-eng"):
        files = [data / f"{pair}.{name}" for name in PAIR_FILES]
        for path in files:
            path.write_bytes(f"{path.name} version 1".encode())
        steps = [f"lt-proc '{files[0]}'", f"apertium-tagger -g $2 '{files[1]}'", f"lt-proc -b '{files[2]}'",
                 f"apertium-transfer -b '{files[3]}' '{files[4]}'", f"lt-proc $1 '{files[5]}'"]
        (modes / f"{pair}.mode").write_text(" | ".join(steps), encoding="utf-8")
    script = root / "bin" / "apertium"
    script.write_text(FAKE_APERTIUM, encoding="utf-8")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{root / 'bin'}:/usr/bin:/bin")
    return data


def _changed_byte(path: Path) -> bytes:
    """Change the last byte of ``path``; return its former content."""
    before = path.read_bytes()
    path.write_bytes(before[:-1] + bytes([before[-1] ^ 1]))
    return before


# --------------------------------------------------------------------------- 1. a tag with an unknown id


def test_a_tag_with_an_id_no_entity_has_drops_its_record_as_markers_incomplete_and_the_run_goes_on(
        fake_apertium, tmp_path):
    """Bug caught: reading a tag whose id is not an entity's (closed, or opened and never closed) as that entity,
    an ``IndexError`` that stops the whole run."""
    from crop_hf.synthesis import SynthesisConfig, SynthesisJob, SynthesisModels
    from crop_hf.translation.loading import load_translator

    (tmp_path / "es.txt").write_text("Hoy Anna vive en Hamburg .\nHoy Peter roto en Hamburg .\n"
                                     "Hoy Maria abierto en Hamburg .\nHoy Klaus vive en Hamburg .\n", encoding="utf-8")
    config = SynthesisConfig(tgt_langs=["es"], input=str(tmp_path / "{lang}.txt"), mt_model="apertium",
                             output_dir=str(tmp_path / "out"), ner_model="unused", language_filter=False,
                             show_progress=False)
    models = SynthesisModels(load_translator("apertium"), FakeTagger(), CONLL_LABELS)
    result = SynthesisJob(config, models=models).run()
    stats = result.statistics["es"]
    assert (stats["input"], stats["kept"], stats["markers_incomplete"], stats["pipeline_error"]) == (4, 2, 2, 0)
    kept = datasets.load_from_disk(str(result.dataset_path))["es"]
    assert [" ".join(tokens) for tokens in kept["tokens"]] == ["Hoy Anna vive en Hamburg .",
                                                               "Hoy Klaus vive en Hamburg ."]
    discarded = datasets.load_from_disk(str(result.discarded_path))["es"]
    assert discarded["text"] == ["Hoy Peter roto en Hamburg .", "Hoy Maria abierto en Hamburg ."]
    assert set(discarded["reason"]) == {"markers_incomplete"}


# --------------------------------------------------------------------------- 2. a pair's digest


def test_a_pairs_digest_covers_every_file_its_mode_reads_not_only_the_mode_file(fake_apertium):
    """Bug caught: ``pair_digest`` hashing the mode file alone, so a Debian update of a pair's dictionaries or
    transfer rules (the mode file unchanged) resumed shards translated by the old data."""
    engine = Apertium()
    digest = engine.pair_digest("eng-spa")
    assert len(digest) == 16 and digest != engine.pair_digest("spa-eng")
    mode = fake_apertium.parent / "modes" / "eng-spa.mode"
    for path in [mode, *(fake_apertium / f"eng-spa.{name}" for name in PAIR_FILES)]:
        before = _changed_byte(path)
        assert engine.pair_digest("eng-spa") != digest, path.name
        path.write_bytes(before)
        assert engine.pair_digest("eng-spa") == digest
    (fake_apertium / "spa-eng.t1x").write_bytes(b"another pair's rules")  # not read by eng-spa
    assert engine.pair_digest("eng-spa") == digest
    assert engine.pair_digest("eng-cat") == "unknown"  # no mode file


# --------------------------------------------------------------------------- 3, 4. translate-align with Apertium


def _parses(tmp_path: Path) -> Path:
    path = tmp_path / "en.tsv"
    path.write_text("parse\n[IN:GET_WEATHER weather in [SL:LOCATION Madrid ] ]\n", encoding="utf-8")
    return path


def test_translate_aligns_fingerprint_holds_the_engine_its_version_and_the_pair_digest(fake_apertium, tmp_path,
                                                                                      monkeypatch):
    """Bug caught: translate-align's fingerprint leaving out what synthesis's holds of Apertium, so a run after a
    Debian update of the engine or its pair resumed shards of the old translations."""
    from crop_hf.augment.translate_align import TranslateAlignConfig, TranslateAlignJob
    from crop_hf.synthesis import SynthesisJob

    parses = _parses(tmp_path)

    def job() -> TranslateAlignJob:
        return TranslateAlignJob(TranslateAlignConfig(input=str(parses), output_dir=str(tmp_path / "out"),
                                                      tgt_lang="es", mt_model="apertium", method="hybrid"))

    first = job()
    assert first.store.arguments["translator"] == {"engine": "apertium", "version": "9.9.9",
                                                   "pairs": {"eng-spa": Apertium().pair_digest("eng-spa")}}
    synthesis = SynthesisJob(fake_config("raw/{lang}.txt", str(tmp_path / "s"), tgt_langs=["es"], mt_model="apertium"))
    assert synthesis.store.arguments["translator"]["pairs"]["eng-spa"] == first.store.arguments["translator"][
        "pairs"]["eng-spa"]  # as synthesis's says it
    assert job().store.fingerprint == first.store.fingerprint
    before = _changed_byte(fake_apertium / "eng-spa.autobil.bin")  # a new dictionary
    assert job().store.fingerprint != first.store.fingerprint
    (fake_apertium / "eng-spa.autobil.bin").write_bytes(before)
    monkeypatch.setattr(Apertium, "version", "10.0")  # a new engine
    assert job().store.fingerprint != first.store.fingerprint


def test_translate_align_refuses_mt_revision_with_apertium_as_synthesis_does(fake_apertium, capsys):
    """Bug caught: translate-align accepting ``--mt_revision`` with Apertium (it has no revisions), which then
    named a revision the corpus was never translated at."""
    from crop_hf.augment.translate_align import TranslateAlignConfig

    with pytest.raises(ValueError, match=r"^--mt_model apertium: --mt_revision v2 cannot apply to Apertium"):
        TranslateAlignConfig(input="en.tsv", output_dir="out", tgt_lang="es", mt_model="apertium", mt_revision="v2")
    with pytest.raises(SystemExit) as exit_info:
        main(["translate-align", "--input", "en.tsv", "--output_dir", "out", "--tgt_lang", "es", "--mt_model",
              "apertium", "--mt_revision", "v2"])
    assert exit_info.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "--mt_model apertium: --mt_revision v2 cannot apply" in line


# --------------------------------------------------------------------------- 5, 6. batches


@pytest.mark.parametrize("batch_size", [0, -1])
def test_apertium_refuses_a_batch_size_below_one_when_it_is_built(batch_size):
    """Bug caught: the check moved to (or left to) the first translation, after the models loaded."""
    with pytest.raises(ValueError, match=rf"^batch_size must be at least 1, got {batch_size}$"):
        Apertium(batch_size=batch_size)
    assert Apertium(batch_size=1).batch_size == 1


@pytest.mark.parametrize("given", [list, iter], ids=["list", "iterator"])
def test_a_bad_record_past_the_first_batch_is_named_by_its_index_in_the_whole_input(fake_apertium, given):
    """Bug caught: a refused record named by its index in its batch (``sentence 1``), another record's number."""
    from transformers import pipeline

    import crop_hf  # noqa: F401 - registers labeled-translation

    translate = pipeline("labeled-translation", model=Apertium(batch_size=2), src_lang="en", tgt_lang="es")
    good = {"tokens": ["Anna", "sleeps"], "ner_tags": ["B-PER", "O"]}
    records = [good, good, good, {"tokens": ["a", "b"], "ner_tags": ["O"]}, good]
    with pytest.raises(ValueError, match=r"^sentence 3: 2 tokens but 1 tags$"):
        list(translate(given(records)))
    assert [out["marked_translation"] for out in translate(given(records[:3]))] == [
        "__SLOT0__ Anna __SLOT0__ sleeps"] * 3  # the good ones translate


# --------------------------------------------------------------------------- 7. --mt_revision for every method


class _RecordedPipelines:
    """``transformers.pipeline`` replaced: each call's task and keyword arguments are kept in ``calls``; the tagger
    is a :class:`FakeTagger` with a model config that names the CoNLL labels."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict]] = []

    def __call__(self, task, **kwargs):
        self.calls.append((task, kwargs))
        tagger = FakeTagger()
        tagger.model = SimpleNamespace(config=SimpleNamespace(id2label=dict(enumerate(CONLL_LABELS.names))))
        return tagger

    def revisions(self) -> dict[str, str | None]:
        return {task: kwargs.get("revision") for task, kwargs in self.calls}


def _model_folders(tmp_path: Path) -> tuple[str, str]:
    """Two existing folders standing for the translation and NER models (nothing loads them)."""
    for name in ("mt", "ner"):
        (tmp_path / name).mkdir(exist_ok=True)
    return str(tmp_path / "mt"), str(tmp_path / "ner")


@pytest.mark.parametrize(("job", "method"), [("synthesis", "lexical"), ("synthesis", "fuzzy"),
                                              ("synthesis", "alignment"), ("synthesis", "hybrid"),
                                              ("translate_align", "alignment"), ("translate_align", "hybrid")])
def test_mt_revision_reaches_the_translator_of_a_method_that_scores_nothing(tmp_path, monkeypatch, job, method):
    """Bug caught: the revision passed to the scorer of model-scored methods only, so ``--method lexical
    --mt_revision X`` translated with the main branch while its card and fingerprint said X."""
    import transformers
    import transformers.pipelines  # imported first: its first import would set transformers.pipeline back

    from crop_hf.synthesis import SynthesisModels, stages

    recorded = _RecordedPipelines()
    monkeypatch.setattr(transformers, "pipeline", recorded)
    mt_model, ner_model = _model_folders(tmp_path)
    if job == "synthesis":
        taggers = []  # the NER model loads as the run's own tagger (crop_hf.synthesis.tagging), not a pipeline

        def tagger(name, **options):
            taggers.append((name, options))
            return type("Tagger", (), {"model": type("Model", (), {"config": type("Config", (), {
                "id2label": {0: "O", 1: "B-PER", 2: "I-PER"}})()})()})()

        monkeypatch.setattr(stages.EntityTagger, "from_pretrained", staticmethod(tagger))
        config = fake_config("raw/{lang}.txt", str(tmp_path / "out"), tgt_langs=["de"], mt_model=mt_model,
                             mt_revision="0123abc", ner_model=ner_model, ner_revision="ner-rev", method=method,
                             alignment_model="eflomal")
        SynthesisModels.load(config)
        assert recorded.revisions() == {"labeled-translation": "0123abc"}
        assert [(name, options["revision"]) for name, options in taggers] == [(ner_model, "ner-rev")]
    else:
        from crop_hf.augment.translate_align import TranslateAlignConfig, TranslateAlignModels

        config = TranslateAlignConfig(input="en.tsv", output_dir=str(tmp_path / "out"), tgt_lang="es",
                                      mt_model=mt_model, mt_revision="0123abc", method=method)
        TranslateAlignModels.load(config)
        assert recorded.revisions() == {"labeled-translation": "0123abc"}
    assert recorded.calls[0][1]["model"] == mt_model


# --------------------------------------------------------------------------- 8, 9, 10. models checked up front


def test_transformers_offline_alone_refuses_an_uncached_hub_id_before_anything_loads(tmp_path, monkeypatch):
    """Bug caught: the offline check reading HF_HUB_OFFLINE only, so under TRANSFORMERS_OFFLINE=1 an uncached
    Hub id got as far as the first ``from_pretrained``, after the models before it had loaded."""
    import transformers

    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    uncached = "nobody-at-all/ner-model-never-downloaded"
    assert check_model(uncached, "NER model (--ner_model)") is None  # online: the Hub is asked when it loads
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    with pytest.raises(UnreachableError) as refused:
        check_model(uncached, "NER model (--ner_model)")
    assert str(refused.value) == (
        f"cannot load the NER model (--ner_model) {uncached!r}: it is neither a folder here nor in the local Hugging "
        "Face cache (offline mode is on (TRANSFORMERS_OFFLINE=1): only local folders and the local cache are read)")
    from crop_hf.synthesis import SynthesisModels

    recorded = _RecordedPipelines()
    monkeypatch.setattr(transformers, "pipeline", recorded)
    mt_model, _ = _model_folders(tmp_path)
    with pytest.raises(UnreachableError, match="--ner_model"):
        SynthesisModels.load(fake_config("raw/{lang}.txt", str(tmp_path / "out"), mt_model=mt_model,
                                         ner_model=uncached))
    assert recorded.calls == []  # up front: not even the translator loaded


@pytest.mark.parametrize("written", ["absolute", "relative"])
def test_a_local_model_folder_that_fails_to_load_says_why_not_that_offline_mode_is_on(tmp_path, monkeypatch, written):
    """Bug caught: every ``OSError`` of a load read as an unreachable Hub id ("cannot load ... (offline mode is
    on ...)"), hiding that the folder is there and lacks its weights."""
    from transformers import AutoModelForTokenClassification

    folder = tmp_path / "ner-en"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "bert"}), encoding="utf-8")  # no weights
    monkeypatch.chdir(tmp_path)
    name = str(folder) if written == "absolute" else "ner-en"
    with pytest.raises(OSError) as failed, reaching(name, "NER model (--ner_model)"):
        AutoModelForTokenClassification.from_pretrained(name)
    assert not isinstance(failed.value, UnreachableError)
    assert "offline mode" not in str(failed.value)
    assert "no file named model.safetensors" in str(failed.value) and "ner-en" in str(failed.value)


def test_synthesis_checks_a_missing_alignment_model_before_it_loads_anything(tmp_path, monkeypatch):
    """Bug caught: the aligner's path checked only when the aligner loads, after the translator and the tagger."""
    import transformers

    from crop_hf.synthesis import SynthesisModels

    recorded = _RecordedPipelines()
    monkeypatch.setattr(transformers, "pipeline", recorded)
    mt_model, ner_model = _model_folders(tmp_path)
    config = fake_config("raw/{lang}.txt", str(tmp_path / "out"), mt_model=mt_model, ner_model=ner_model,
                         method="hybrid", alignment_model="./no/such/aligner")
    with pytest.raises(MissingModelError) as missing:
        SynthesisModels.load(config)
    assert str(missing.value) == "no model folder at ./no/such/aligner (word aligner (--alignment_model))"
    assert recorded.calls == []


# --------------------------------------------------------------------------- 11. --output under a file


@pytest.mark.parametrize("command", ["evaluate-ner", "evaluate-parser", "evaluate-translation"])
def test_an_output_whose_folder_is_a_file_is_refused_before_the_evaluation(tmp_path, monkeypatch, capsys, command):
    """Bug caught: ``check_output_path(file=True)`` asking whether the folder exists, not whether it is a folder,
    so the scores were computed and then could not be written."""
    import importlib

    module = importlib.import_module(f"crop_hf.commands.{command.replace('-', '_')}")

    def evaluated(*args, **kwargs):
        raise AssertionError("the evaluation ran")

    for name in ("evaluate_pretrained", "load_parse_rows", "load_marked_dataset"):
        if hasattr(module, name):
            monkeypatch.setattr(module, name, evaluated)
    model = tmp_path / "model"
    model.mkdir()
    (tmp_path / "scores").write_text("a file, not a folder")
    output = tmp_path / "scores" / "out.json"
    extra = {"evaluate-ner": ["--sources", "conll5:es"], "evaluate-parser": ["--sources", "cstop"],
             "evaluate-translation": ["--data", str(tmp_path)]}[command]
    assert main([command, "--model", str(model), *extra, "--output", str(output)]) == 1
    assert capsys.readouterr().err.strip() == (f"crop-hf {command}: error: --output {output}: no folder "
                                               f"{tmp_path / 'scores'} to write it in (--debug shows the traceback)")


def test_check_output_path_refuses_a_file_under_a_file_and_a_folder_where_the_file_goes(tmp_path):
    (tmp_path / "taken").write_text("x")
    with pytest.raises(OSError, match=r"no folder .*taken to write it in"):
        check_output_path(tmp_path / "taken" / "scores.json", "--output", file=True)
    with pytest.raises(OSError, match="a folder is there, not a file"):
        check_output_path(tmp_path, "--output", file=True)
    check_output_path(tmp_path / "scores.json", "--output", file=True)  # a new file in a folder: fine
    assert sorted(path.name for path in tmp_path.iterdir()) == ["taken"]  # nothing created


# --------------------------------------------------------------------------- 12. an option named once


def test_an_option_is_named_once_in_a_message_even_when_the_error_names_it_already():
    """Bug caught: ``naming`` putting the option before a message that starts with it (``--encoder: --encoder:``)."""
    from crop_hf.errors import check_language_code

    with pytest.raises(MissingModelError) as once, naming("--encoder"):
        check_model("./no/encoder")
    assert str(once.value) == "--encoder: no model folder at ./no/encoder"
    # a loader that names its option, inside a command that names it too
    with pytest.raises(MissingModelError) as nested, naming("--encoder"), naming("--encoder"):
        check_model("./no/encoder")
    assert str(nested.value) == "--encoder: no model folder at ./no/encoder"
    with pytest.raises(ValueError) as named, naming("--tgt_lang"):
        check_language_code("es.txt", "--tgt_lang")
    assert str(named.value).startswith("--tgt_lang: 'es.txt' is not a language code")
    assert str(named.value).count("--tgt_lang") == 1


# --------------------------------------------------------------------------- 13. defaults spelled out


def _spelled(config, given: list[str]) -> list[str]:
    """Every field of ``config`` that has a default (and is not in ``given``), spelled out on a command line with
    that default."""
    argv = []
    for item in dataclasses.fields(config):
        default = item.default_factory() if item.default_factory is not dataclasses.MISSING else item.default
        if default in (dataclasses.MISSING, None, []) or f"--{item.name}" in given:
            continue
        texts = [str(value).lower() if isinstance(value, bool) else str(value)
                 for value in (default if isinstance(default, list) else [default])]
        # each a new string object, as a command line gives it (never the default's own object)
        argv += [f"--{item.name}", *("".join(text) for text in texts)]
    return argv


@pytest.mark.parametrize("command", ["synthesize", "translate-align", "generate-filter", "mark-parallel"])
def test_spelling_out_every_default_on_the_command_line_leaves_the_fingerprint_as_it_is(command, tmp_path):
    """Bug caught: a field added later (``--symmetrization``) compared with its default by identity, so spelling the
    default out made another fingerprint and refused to resume the folder the same settings wrote."""
    import importlib

    from crop_hf.arguments import parse_config
    from crop_hf.cli import COMMANDS
    from crop_hf.engine.options import RunOptions
    from crop_hf.engine.shards import fingerprint

    required = {"synthesize": ["--tgt_langs", "de"],
                "translate-align": ["--input", "en.tsv", "--tgt_lang", "es"],
                "generate-filter": ["--few_shot", "f.tsv", "--english", "e.tsv"],
                "mark-parallel": []}[command]
    base = [*required, "--output_dir", str(tmp_path / "out")]
    module = importlib.import_module(COMMANDS[command][0])

    def config(argv):  # the job's config: the RunOptions among the command's configs
        (found,) = [config for config in parse_config(module.CONFIG_CLASSES, argv) if isinstance(config, RunOptions)]
        return found

    plain = config(base)
    argv = base + _spelled(plain, base)
    assert len(argv) > len(base) + 10
    spelled = config(argv)
    assert spelled.result_arguments() == plain.result_arguments()
    assert fingerprint(spelled.result_arguments()) == fingerprint(plain.result_arguments())
    if command in ("synthesize", "translate-align"):
        from crop_hf.augment.translate_align import TranslateAlignJob
        from crop_hf.synthesis import SynthesisJob

        job = SynthesisJob if command == "synthesize" else TranslateAlignJob
        assert job(spelled).store.fingerprint == job(plain).store.fingerprint


# --------------------------------------------------------------------------- 14, 15. the scorer


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_the_scorer_loads_its_model_onto_the_device_it_is_given(tiny_m2m100, device):
    """Bug caught: ``from_pretrained`` leaving the model where it loaded (the CPU) whatever ``device`` said."""
    from crop_hf.translation.scoring import TranslationScorer

    scorer = TranslationScorer.from_pretrained(tiny_m2m100, "en", "de", device=device)
    assert scorer.device.type == device
    assert {parameter.device.type for parameter in scorer.model.parameters()} == {device}


def test_every_direction_of_a_scorer_scores_in_the_batches_it_was_given(tiny_m2m100):
    """Bug caught: a direction (``direction``, ``reverse``, a run's per-language scorer) built with the default
    batch size, so ``--batch_size`` held for the first target language only."""
    from crop_hf.projection.loading import load_method_scorer, method_scorer
    from crop_hf.projection.methods import resolve_method

    method = resolve_method("rerank")
    scorer = load_method_scorer(method, tiny_m2m100, src_lang="en", tgt_langs=["de", "es"], batch_size=3)
    directions = [scorer, scorer.reverse(), scorer.direction("en", "es"), method_scorer(method, scorer, "en", "es"),
                  method_scorer(method, scorer, "es", "en").reverse()]
    assert [(d.batch_size, d.sentences_per_batch) for d in directions] == [(3, scorer.sentences_per_batch)] * 5
    calls = []
    hook = scorer.model.get_encoder().register_forward_hook(lambda module, args, output: calls.append(1))
    try:
        for direction in directions[1:3]:
            direction.encode_sources([f"word {k}" for k in range(7)])
    finally:
        hook.remove()
    assert len(calls) == 2 * 3  # 7 sources in batches of 3, in each direction


# --------------------------------------------------------------------------- 16. evaluate-projection's models


class _MarkerModel:
    """A scorer as ``check_scorer`` reads it: its vocabulary has the marker tokens of one marker style only."""

    def __init__(self, name: str, style: str) -> None:
        self.name, self.style = name, style

    def marker_vocabulary(self, style):
        from crop_hf.markers import get_marker_style

        style = get_marker_style(style)
        own = style.name == self.style
        return SimpleNamespace(single_token_slots={0, 1} if own and style.typed else set(),
                               signatures={"[": (("open",),), "]": (("close",),)} if own and not style.typed else {},
                               marker_ids=[1, 2] if own else [])


SOURCE = [(["Anna", "lives", "in", "Berlin"], ["B-PER", "O", "O", "B-LOC"])]
TARGET = [(["Anna", "wohnt", "in", "Berlin"], ["B-PER", "O", "O", "B-LOC"])]


def test_evaluate_projection_checks_each_model_against_the_specs_own_options(monkeypatch, caplog):
    """Bug caught: models checked against the method's default options (crop markers), so
    ``insertion?marker_style=easyproject`` was scored with a model that has no bracket markers and the one that
    has them was skipped."""
    import crop_hf.projection.methods
    from crop_hf.metrics.projection import evaluate_projection

    projected, real = [], crop_hf.projection.methods.project_examples

    def recording(method, examples, scorer=None, **options):  # the placement itself: any model-free method's
        projected.append((method, options, scorer.name))
        return real("lexical", examples)

    monkeypatch.setattr(crop_hf.projection.methods, "project_examples", recording)
    scorers = {"crop": _MarkerModel("model-crop", "crop"), "brackets": _MarkerModel("model-brackets", "easyproject")}
    with caplog.at_level(logging.WARNING, logger="crop_hf.metrics.projection"):
        evaluation = evaluate_projection(SOURCE, TARGET, methods=["insertion?marker_style=easyproject", "insertion"],
                                         scorers=scorers)
    assert projected == [("insertion", {"marker_style": "easyproject"}, "model-brackets"),
                         ("insertion", {}, "model-crop")]
    assert [(row.name, row.model) for row in evaluation.rows] == [("insertion?marker_style=easyproject", "brackets"),
                                                                  ("insertion", "crop")]
    assert [(method, model) for method, model, _ in evaluation.skipped] == [
        ("insertion?marker_style=easyproject", "crop"), ("insertion", "brackets")]
    assert "'easyproject' marker style" in evaluation.skipped[0][2] and "model-crop" in evaluation.skipped[0][2]


def test_evaluate_projection_names_the_model_it_tried_last_when_none_suits():
    """Bug caught: the error of the first model tried raised when no model suits a method, naming a model the
    user may think was never checked."""
    from crop_hf.metrics.projection import evaluate_projection

    scorers = {"first": _MarkerModel("model-first", "crop"), "last": _MarkerModel("model-last", "crop")}
    with pytest.raises(ValueError) as refused:
        evaluate_projection(SOURCE, TARGET, methods=["insertion?marker_style=easyproject"], scorers=scorers)
    assert "model-last has no token for '[]'" in str(refused.value) and "model-first" not in str(refused.value)
    assert "'easyproject' marker style" in str(refused.value)


# --------------------------------------------------------------------------- 17. the Spanish benchmark


def test_the_spanish_benchmark_scores_english_on_the_split_asked_for(bench, tmp_path, monkeypatch):  # noqa: F811
    """Bug caught: the English test set of ``--lang es`` scored on test whatever ``--split`` said, so choosing
    settings on validation read English test sentences."""
    import crop_hf.ner.evaluate

    asked = []

    def evaluate_pretrained(model, specs, split, max_samples, drop_unknown_types):
        asked.append((specs[0].split("?")[0], split, max_samples))
        return SimpleNamespace(languages={"x": SimpleNamespace(f1=0.5, per_type={})})

    monkeypatch.setattr(crop_hf.ner.evaluate, "evaluate_pretrained", evaluate_pretrained)
    model = tmp_path / "a-0"
    model.mkdir()
    args = bench.parse_args(["--lang", "es", "--split", "validation", "--data_dir", str(tmp_path)])
    assert set(bench.scores(args, model, tmp_path)) == {"conll_es", "conll_en"}
    assert asked == [("conll5:es", "validation", None), ("conll5:en", "validation", 1000)]
    asked.clear()
    bench.scores(bench.parse_args(["--lang", "es", "--data_dir", str(tmp_path)]), model, tmp_path)
    assert [split for _, split, _ in asked] == ["test", "test"]


@pytest.mark.parametrize("lang", ["es", "de"])
def test_the_benchmarks_row_f_b_alone_runs_translate_train_and_the_best_corpus_first(bench, tmp_path,  # noqa: F811
                                                                                   monkeypatch, lang):
    """Bug caught: ``--rows f_b`` alone not adding row f (translate-train), so f_b trained on a corpus that was
    never made."""
    calls = _fake_loop(bench, monkeypatch)
    types = bench.SETTINGS[lang].types  # Spanish scores MISC too
    monkeypatch.setattr(bench, "scores", lambda args, model, data_dir: {
        name: {"f1": 50.0, **dict.fromkeys(types, 50.0)} for name in bench.test_sets(args, data_dir)})
    translated = []
    monkeypatch.setattr(bench, "load_translator", lambda mt_model: f"translator of {mt_model}")

    def translate_train(args, translator, english, lang="de"):
        translated.append((translator, lang))
        return [{"tokens": ["Ana", "duerme"], "tags": ["B-PER", "O"]}], 0

    monkeypatch.setattr(bench, "translate_train", translate_train)
    work = tmp_path / "work"
    assert bench.main(["--lang", lang, "--rows", "f_b", "--work_dir", str(work), "--data_dir", str(tmp_path / "data"),
                       "--mt_model", "fake-mt", "--seeds", "0", "--threads", "1"]) == 0
    assert translated == [("translator of fake-mt", lang)]
    assert calls["synthesize"] == ["corpus-b"]
    assert calls["train"] == ["a-0", "b-0", "f-0", "f_b-b-0"]
    assert set(json.loads((work / "results-test.json").read_text())["results"]) == {"a", "b", "f", "f_b"}


def test_the_model_pipeline_names_a_bad_record_past_its_first_window_by_its_index_in_the_whole_input(tiny_m2m100):
    """Bug caught: as above, in the model pipeline's windows of a streamed input (``batch_size`` x 32 records)."""
    from transformers import pipeline

    import crop_hf  # noqa: F401 - registers labeled-translation

    translate = pipeline("labeled-translation", model=str(tiny_m2m100), src_lang="en", tgt_lang="de", batch_size=1)
    good = {"tokens": ["Anna"], "ner_tags": ["B-PER"]}
    records = [good] * 32 + [{"tokens": ["a", "b"], "ner_tags": ["O"]}]  # the first record of the second window
    with pytest.raises(ValueError, match=r"^sentence 32: 2 tokens but 1 tags$"):
        list(translate(iter(records), num_beams=1, num_return_sequences=1, max_new_tokens=2))
