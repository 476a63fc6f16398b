"""The end-to-end CroP benchmark's loop, run with tiny models on a few real sentences.

benchmarks/bench_crop_end_to_end.py trains for minutes per row; here every stage runs for a few
steps so that what each stage hands the next is checked: the synthesized corpora load as training
sources, self-training reads synthesis's discarded sentences, the oracles find the kept raw
sentences' gold rows, and the trained models load and tag. The translator is the identity with
real markers and the English tagger marks capitalized words (tests/synthesis_fakes.py), so the
corpora are not empty whatever random weights would translate; eflomal is the real one.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from synthesis_fakes import FakeTagger, FakeTranslator

from crop_hf.labels import CONLL_LABELS, PANX_LABELS, LabelSet
from crop_hf.synthesis import SynthesisModels

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_crop_end_to_end.py"


@pytest.fixture
def bench():
    spec = importlib.util.spec_from_file_location("bench_crop_end_to_end", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def fake_models(config, device=None):
    """The identity translator and the capitalized-word tagger; a model-scored method gets the real scorer of
    ``config.mt_model`` (random weights: where it puts the entities is noise, what it hands on is checked)."""
    from crop_hf.alignment import EflomalAligner
    from crop_hf.projection.methods import get_method
    from crop_hf.synthesis.stages import load_scorer

    aligner = EflomalAligner() if config.alignment_model == "eflomal" else None
    scorer = load_scorer(config) if get_method(config.method).uses_scorer else None
    return SynthesisModels(FakeTranslator(), FakeTagger(), LabelSet(PANX_LABELS), aligner, scorer)


@pytest.mark.slow
def test_the_whole_loop_hands_each_stage_what_it_needs_and_its_models_tag(bench, shared_data, tmp_path, monkeypatch,
                                                                          capsys, tiny_m2m100):
    from transformers import pipeline

    monkeypatch.setattr(SynthesisModels, "load", classmethod(lambda cls, config, device=None: fake_models(config)))
    monkeypatch.setattr(bench, "load_translator", lambda mt_model: FakeTranslator())
    work = tmp_path / "work"
    rows = [*bench.SETTINGS["de"].rows, "c_rerank", "d"]  # and the model-scored corpora
    assert bench.main(["--data_dir", str(shared_data), "--work_dir", str(work), "--mt_model", str(tiny_m2m100),
                       "--steps", "3", "--seeds", "0", "--raw_sentences", "40", "--test_sentences", "20",
                       "--source_test_sentences", "20", "--vocab_size", "1000", "--hidden_size", "16",
                       "--num_beams", "1", "--num_return_sequences", "1", "--no-language_filter", "--threads", "1",
                       "--rows", *rows]) == 0
    out = capsys.readouterr().out
    results = json.loads((work / "results-test.json").read_text())["results"]

    assert set(results) == set(rows)
    for row, runs in results.items():
        assert len(runs) == 1, row
        for test_set in ("wikiann_de", "europarl_de", "wikiann_en"):
            assert 0.0 <= runs[0][test_set]["f1"] <= 100.0
            assert set(runs[0][test_set]) == {"f1", *bench.TYPES}
        assert f"{row} {bench.ROW_NAMES[row]}" in out

    # The identity translator keeps markers, so lexical projection keeps every tagged sentence;
    # the funnel accounts for all 40 raw sentences, and the oracle found each kept one's gold row.
    stats = json.loads((next(work.glob("models-*")) / "corpus-b" / "statistics.json").read_text())["de"]
    assert stats["input"] == 40
    assert stats["kept"] + sum(v for k, v in stats.items() if k not in ("input", "kept")) == 40
    assert stats["kept"] > 0
    assert f"oracle_kept: {stats['kept']} of b's {stats['kept']} kept sentences matched" in out
    assert "c (hybrid): " in out and "c_alignment (alignment): " in out and "f (translate-train): 40 kept of 40" in out
    self_trained = json.loads((next(work.glob("models-*")) / "self-trained-b-union-0" / "dataset_dict.json").read_text())
    assert self_trained["splits"] == ["train"]
    for stage in ("train-ner", "evaluate-ner", "synthesize (lexical)", "synthesize (hybrid)", "self-train (re-label)",
                  "translate-train"):
        assert stage in out

    for row, method in (("c_rerank", "hybrid_rerank"), ("d", "insertion")):  # the scored corpora: every sentence
        stats = json.loads((next(work.glob("models-*")) / f"corpus-{row}" / "statistics.json").read_text())["de"]
        assert stats["input"] == 40 and f"{row} ({method}): " in out, row  # accounted for, with the funnel said
        assert stats["kept"] + sum(v for k, v in stats.items() if k not in ("input", "kept")) == 40

    # Every row's model is a token classifier over the PAN-X labels that tags German text.
    for row in bench.SETTINGS["de"].rows:
        name = "e-b-union" if row == "e" else row  # self-training's model names its corpus and rule
        tagger = pipeline("token-classification", model=str(next(work.glob("models-*")) / f"{name}-0"))
        assert set(tagger.model.config.id2label.values()) == set(PANX_LABELS)
        assert len(tagger("Angela Merkel wohnt in Berlin .")) >= 0  # runs; random weights may tag nothing


def test_translate_train_turns_marked_translations_into_tagged_rows(bench):
    english = [{"tokens": ["Anna", "lives", "in", "New", "York", "."], "tags": ["B-PER", "O", "O", "B-LOC", "I-LOC", "O"]},
               {"tokens": ["a", "broken", "Hamburg"], "tags": ["O", "O", "B-LOC"]},  # loses its marker
               {"tokens": ["nothing", "here"], "tags": ["O", "O"]}]
    rows, broken = bench.translate_train(SimpleNamespace(num_beams=1, num_return_sequences=1), FakeTranslator(),
                                         english)
    assert broken == 1
    assert rows == [{"tokens": english[0]["tokens"], "tags": english[0]["tags"]},
                    {"tokens": ["nothing", "here"], "tags": ["O", "O"]}]


def test_kept_sentences_find_their_gold_rows_through_the_raw_tokenization(bench):
    gold = [{"tokens": ["Er", "sah's", ",", "2:1", "."], "tags": ["O"] * 5},
            {"tokens": ["Paris", "(", "Frankreich", ")"], "tags": ["B-LOC", "O", "B-LOC", "O"]},
            {"tokens": ["Paris", "(", "Frankreich", ")"], "tags": ["B-LOC", "O", "O", "O"]}]  # a repeat: the first wins
    from crop_hf.projection import tokenize_target

    kept = {"tokens": [tokenize_target("Paris ( Frankreich )", "de").tokens, ["not", "a", "raw", "sentence"]]}
    assert bench.kept_gold(kept, gold) == [gold[1]]


def test_seed_spread_and_funnel_lines(bench):
    assert bench.summarize([10.0, 12.0, 14.0]) == " 12.0 ± 2.0"
    assert bench.summarize([7.0]) == "  7.0 ± 0.0"
    line = bench.funnel_line("b (lexical)", {"input": 10, "kept": 3, "all_o": 5, "too_long": 0, "markers_incomplete": 2})
    assert line == "b (lexical): 3 kept of 10 (all_o 5, markers_incomplete 2)"


@pytest.mark.slow
def test_the_spanish_loop_runs_with_apertium_on_conll(bench, shared_data, tmp_path, monkeypatch, capsys):
    """CroP's CoNLL setting: CoNLL-2003 English, raw CoNLL-2002 Spanish, Apertium both ways (the real engine;
    the English tagger marks capitalized words), every Spanish row, scored on testb."""
    import gzip

    from crop_hf.translation.apertium import Apertium, ApertiumNotInstalledError, check_apertium
    from crop_hf.translation.loading import load_translator

    try:
        check_apertium([("es", "en"), ("en", "es")])
    except ApertiumNotInstalledError as error:
        if os.environ.get("CROP_HF_REQUIRE_APERTIUM") == "1":
            pytest.fail(str(error))
        pytest.skip(str(error))

    def models(config, device=None):
        from crop_hf.alignment import EflomalAligner

        aligner = EflomalAligner() if config.alignment_model == "eflomal" else None
        return SynthesisModels(load_translator(config.mt_model), FakeTagger(), LabelSet(CONLL_LABELS), aligner)

    monkeypatch.setattr(SynthesisModels, "load", classmethod(lambda cls, config, device=None: models(config)))
    extra = tmp_path / "news" / "es-en"  # a little parallel text for eflomal (news-parallel's layout)
    extra.parent.mkdir()
    for lang, line in (("en", "The president of Spain met the minister in Madrid ."),
                       ("es", "El presidente de España se reunió con el ministro en Madrid .")):
        with gzip.open(f"{extra}.{lang}.gz", "wt", encoding="utf-8") as handle:
            handle.write((line + "\n") * 30)
    work = tmp_path / "work"
    assert bench.main(["--lang", "es", "--data_dir", str(shared_data), "--work_dir", str(work), "--steps", "3",
                       "--seeds", "0", "--raw_sentences", "40", "--test_sentences", "30",
                       "--translate_train_sentences", "30", "--source_test_sentences", "30", "--vocab_size", "1000",
                       "--hidden_size", "16",
                       "--eflomal_extra", str(extra), "--threads", "1", "--no-language_filter"]) == 0
    out = capsys.readouterr().out
    results = json.loads((work / "results-test.json").read_text())["results"]
    assert set(results) == set(bench.SETTINGS["es"].rows)
    for row, runs in results.items():
        assert set(runs[0]) == {"conll_es", "conll_en"}, row
        assert set(runs[0]["conll_es"]) == {"f1", "PER", "ORG", "LOC", "MISC"}
    model_dir = next(work.glob("models-*"))
    for row, folder in (("b", "corpus-b"), ("b_prime", "corpus-lexical-ignore-case-true"), ("c", "corpus-c")):
        stats = json.loads((model_dir / folder / "statistics.json").read_text())["es"]
        assert stats["input"] == 40 and stats["kept"] > 0, row
        assert stats["kept"] + sum(v for k, v in stats.items() if k not in ("input", "kept")) == 40
        assert f"{row} keeps {100 * stats['kept'] / 40:.1f}% of the raw sentences" in out
    card = (model_dir / "corpus-b" / "README.md").read_text(encoding="utf-8")
    assert f"Apertium {Apertium().version}" in card
    translated = json.loads((work / "translate-train" / "dataset_dict.json").read_text())
    assert translated["splits"] == ["train"]
    assert "f (translate-train): " in out and " kept of 30 (markers_incomplete " in out
    assert "f_b + translate-train + the best corpus" in out and "Spanish gold only" in out
    assert "gap between English only and Spanish gold: " in out
    assert "eflomal extra text" in out  # the extra parallel text was read for row c


def test_without_a_translator_the_benchmark_trains_one_on_data_dir_or_says_in_one_line_why_it_cannot(
        bench, tmp_path, monkeypatch):
    """Without --mt_model, Multi30k under --data_dir trains the translator; none there is one line, not a traceback."""
    ran = []
    monkeypatch.setattr(bench.subprocess, "run", lambda argv, **kwargs: ran.append(argv) or SimpleNamespace(returncode=0))
    args = bench.parse_args(["--data_dir", str(tmp_path), "--work_dir", str(tmp_path / "work")])
    with pytest.raises(SystemExit, match=rf"no --mt_model given, and no Multi30k to train one on: {tmp_path}/multi30k "
                                         r"lacks train.en.gz, train.de.gz, val.en.gz, val.de.gz"):
        bench.get_mt_model(args, tmp_path / "work")
    assert ran == []
    (tmp_path / "multi30k").mkdir()
    for name in ("train.en.gz", "train.de.gz", "val.en.gz", "val.de.gz"):
        (tmp_path / "multi30k" / name).write_bytes(b"")
    assert bench.get_mt_model(args, tmp_path / "work") == str(tmp_path / "work" / "mt" / "content")
    assert ran[0][ran[0].index("--data_dir") + 1] == str(tmp_path / "multi30k")  # --data_dir reaches the trainer
    monkeypatch.setattr(bench.subprocess, "run", lambda argv, **kwargs: SimpleNamespace(returncode=3))
    with pytest.raises(SystemExit, match=r"training the translator failed \(bench_marker_mt.py exit 3"):
        bench.get_mt_model(args, tmp_path / "work")
