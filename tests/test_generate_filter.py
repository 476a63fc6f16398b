"""Generate-and-filter (CSTOP 6.2): neighbours by signature and Levenshtein, the filter funnel with a
stand-in generator (exact outcomes), bad input counted, and a tiny BART fine-tuned end to end that
learns a word-substitution task well enough for its generations to pass the filter."""

from __future__ import annotations

import contextlib
import dataclasses
import json

import datasets
import pytest
from synthesis_fakes import as_rows

from crop_hf.augment.generate_filter import (
    FILTER_REASONS,
    GenerateFilterConfig,
    fine_tune,
    generate,
    generate_and_filter,
    neighbour_pairs,
    signature,
)
from crop_hf.errors import EmptyInputError, OutputExistsError
from crop_hf.seqlogical import parse, to_flat


def flats(*parses):
    return [to_flat(p) for p in parses]


def test_signature_is_intent_and_multiset_of_slot_labels():
    assert signature("[IN:A x [SL:B y ] [SL:B z ] ]") != signature("[IN:A x [SL:B y ] ]")
    assert signature("[IN:A [SL:C u ] x [SL:B y ] ]") == signature("[IN:A [SL:B y ] [SL:C v w ] ]")


def test_neighbours_same_signature_nearest_first_top_k():
    cs = flats("[IN:ALARM mera alarm [SL:TIME 7 baje ] set karo ]", "[IN:CALL [SL:NAME mom ] ko call karo ]")
    en = flats("[IN:ALARM set my alarm for [SL:TIME 7 am ] please right now ]",  # 0: far
               "[IN:ALARM set alarm [SL:TIME 7 am ] ]",  # 1: nearer
               "[IN:ALARM set alarm [SL:TIME 7 ] [SL:TIME am ] ]",  # 2: two TIME slots: another signature
               "[IN:CALL call [SL:NAME mom ] ]",  # 3
               "[IN:ALARM alarm [SL:TIME 7 baje ] set karo ]")  # 4: nearest
    assert neighbour_pairs(cs, en, top_k=2) == [(0, 4), (0, 1), (1, 3)]
    assert neighbour_pairs(cs, en, top_k=10) == [(0, 4), (0, 1), (0, 0), (1, 3)]


def _rows(parses):
    return datasets.Dataset.from_dict({"parse": parses})


FEW_SHOT = ["[IN:CALL [SL:NAME mom ] ko call karo ]", "[IN:ALARM alarm [SL:TIME 7 baje ] set karo ]",
            "[IN:CALL [SL:NAME", "[IN:NAV [SL:DEST [IN:LOC home ] ] ]"]
ENGLISH = ["[IN:CALL call [SL:NAME dad ] ]", "[IN:CALL call [SL:NAME mom ] ]", "[IN:ALARM set alarm [SL:TIME 8 am ] ]",
           "[IN:WEATHER weather ]", "[IN:ALARM set ]"]


def test_filter_funnel_with_stand_in_generator(tmp_path):
    outputs = {
        "[IN:CALL call [SL:NAME dad ] ]": ["[IN:CALL [SL:NAME dad ] ko call karo ]",  # kept
                                           "[IN:CALL [SL:NAME dad ] ko call karo ]"],  # duplicate
        "[IN:CALL call [SL:NAME mom ] ]": ["[IN:CALL [SL:NAME mom ] ko call karo ]",  # in few-shot
                                           "[IN:CALL mom ko call karo ]"],  # signature changed
        "[IN:ALARM set alarm [SL:TIME 8 am ] ]": ["[IN:ALARM alarm [SL:TIME 8 baje ] set karo",  # invalid tree
                                                  "[IN:ALARM alarm [SL:TIME [IN:X 8 ] ] ]"],  # nested: invalid
    }
    seen = []

    def generator(sources):
        seen.extend(sources)
        return [outputs[s] for s in sources]

    config = GenerateFilterConfig(few_shot="-", english="-", output_dir=str(tmp_path / "out"), few_shot_size=0)
    result = generate_and_filter(config, generator=generator, few_shot=_rows(FEW_SHOT), english=_rows(ENGLISH))
    # the weather and the slot-less alarm parses have no few-shot signature: never generated from
    assert seen == ENGLISH[:3]
    stats = result.statistics["train"]
    assert {k: stats[k] for k in ("few_shot", "english", "pairs", "sources", "generated", "kept")} == \
        {"few_shot": 2, "english": 5, "pairs": 3, "sources": 3, "generated": 6, "kept": 1}
    assert {k: stats[k] for k in FILTER_REASONS} == {"invalid_tree": 2, "in_few_shot": 1, "signature_changed": 1,
                                                    "duplicate": 1}
    assert stats["invalid_source"] == 1 and stats["nested_source"] == 1
    out = tmp_path / "out"
    augmented = datasets.load_from_disk(str(out / "dataset"))["train"]
    assert augmented["origin"] == ["few_shot", "few_shot", "generated"]
    assert augmented["parse"][2] == "[IN:CALL [SL:NAME dad ] ko call karo ]"
    assert augmented["source_parse"][2] == "[IN:CALL call [SL:NAME dad ] ]"
    assert augmented["slot_tags"][2] == ["B-NAME", "O", "O", "O"]
    dropped = datasets.load_from_disk(str(out / "discarded"))["train"]
    assert sorted(dropped["reason"]) == sorted(["invalid_source", "nested_source", "invalid_tree", "invalid_tree",
                                                "in_few_shot", "signature_changed", "duplicate"])
    assert any(d.startswith("train:2:") for d in dropped["detail"])  # the bad row's position
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "signature_changed" in card and "generate-and-filter" in card
    assert json.loads((out / "statistics.json").read_text())["kept"] == 1


def test_few_shot_sample_covers_every_label(tmp_path):
    few = [f"[IN:CALL call [SL:NAME n{i} ] ]" for i in range(20)] + ["[IN:ALARM set [SL:TIME 7 ] ]"]
    config = GenerateFilterConfig(few_shot="-", english="-", output_dir=str(tmp_path / "o"), few_shot_size=3)
    result = generate_and_filter(config, generator=lambda sources: [[] for _ in sources], few_shot=_rows(few),
                                 english=_rows(ENGLISH))
    augmented = datasets.load_from_disk(str(tmp_path / "o" / "dataset"))["train"]
    assert result.statistics["train"]["few_shot"] == 3 and "ALARM" in augmented["intent"]


# A learnable "code-switching": English words replaced by Hinglish ones, word order kept.
SWAP = {"call": "phone", "set": "lagao", "alarm": "alarm", "for": "ke liye", "my": "mera", "play": "bajao",
        "please": "plz", "the": "", "song": "gaana"}
NAMES = ["mom", "dad", "ravi", "asha", "john", "meera", "amit", "neha"]
TIMES = ["7 am", "8 pm", "noon", "6 30"]


def _switch(english: str) -> str:
    words = []
    for word in english.split():
        swapped = SWAP.get(word, word)
        words.extend(swapped.split())
    return " ".join(words)


def _corpus():
    english = []
    for name in NAMES:
        english.append(f"[IN:CREATE_CALL call [SL:CONTACT {name} ] ]")
        english.append(f"[IN:CREATE_CALL please call [SL:CONTACT {name} ] ]")
    for time in TIMES:
        english.append(f"[IN:CREATE_ALARM set alarm for [SL:DATE_TIME {time} ] ]")
        english.append(f"[IN:CREATE_ALARM set my alarm for [SL:DATE_TIME {time} ] ]")
    return english


def test_tiny_bart_learns_to_generate_valid_switched_parses(tmp_path):
    pytest.importorskip("tokenizers")
    from tiny_models import build_tiny_bart

    english = _corpus()
    switched = [_switch(p) for p in english]
    bart = build_tiny_bart(tmp_path / "bart", english + switched, vocab_size=300, d_model=64, layers=2)
    config = GenerateFilterConfig(few_shot="-", english="-", output_dir=str(tmp_path / "o"), model=str(bart),
                                  epochs=40, learning_rate=3e-3, batch_size=8, num_beams=3, max_length=40, cpu=True)
    pairs = list(zip(english, switched, strict=True))
    model, tokenizer = fine_tune(pairs, config)
    outputs = generate(model, tokenizer, english, num_beams=3, max_length=40)
    exact = sum(out == [target] for out, target in zip(outputs, switched, strict=True))
    valid = 0
    for source, (out,) in zip(english, outputs, strict=True):
        with contextlib.suppress(ValueError):
            valid += signature(out) == signature(source)
    assert valid >= 0.6 * len(english), (valid, exact, outputs[:3])
    parse(switched[0])  # the targets themselves are valid trees


def test_command_on_hinglish_top_with_tiny_bart(tmp_path, shared_data):
    from tiny_models import build_tiny_bart

    from crop_hf.cli import main

    bart = build_tiny_bart(tmp_path / "bart", ["[IN:GET_WEATHER weather kya hai [SL:LOCATION delhi ] ]"])
    spec = f"hinglish_top?data_dir={shared_data / 'hinglish-top'}"
    out = tmp_path / "out"
    code = main(["generate-filter", "--few_shot", spec, "--english", spec, "--few_shot_split", "validation",
                 "--english_split", "validation", "--few_shot_size", "100", "--model", str(bart), "--epochs", "1",
                 "--num_beams", "2", "--max_sources", "16", "--max_length", "48", "--cpu", "true",
                 "--output_dir", str(out)])
    assert code == 0
    stats = json.loads((out / "statistics.json").read_text())
    assert stats["few_shot"] >= 100 and stats["nested_source"] > 100  # both sides' nested rows, counted
    assert stats["pairs"] > stats["few_shot"] and stats["sources"] == 16 and stats["generated"] == 16
    assert stats["generated"] == stats["kept"] + sum(stats[r] for r in FILTER_REASONS)
    augmented = datasets.load_from_disk(str(out / "dataset"))["train"]
    assert augmented.num_rows == stats["few_shot"] + stats["kept"]
    for text in augmented["parse"]:
        to_flat(parse(text))


class _Encoded(dict):
    def to(self, device):
        assert device == "cpu-ish"
        return self


class _FakeTokenizer:
    """Encodes a batch as its texts; decodes "ids" that are already strings (with messy spacing)."""

    def __init__(self) -> None:
        self.calls = []

    def __call__(self, texts, **kwargs):
        self.calls.append((texts, kwargs))
        return _Encoded(input_ids=texts)

    def batch_decode(self, ids, skip_special_tokens):
        assert skip_special_tokens is True
        return ids


class _FakeGenerator:
    device = "cpu-ish"

    def __init__(self) -> None:
        self.calls = []

    def generate(self, input_ids, **kwargs):
        import torch

        assert not torch.is_grad_enabled()
        self.calls.append(kwargs)
        return [f" {text}  out{k} " for text in input_ids for k in range(kwargs["num_return_sequences"])]


def test_generate_batches_sources_and_groups_each_sources_hypotheses():
    model, tokenizer = _FakeGenerator(), _FakeTokenizer()
    sources = ["a", "b  c", "d", "e", "f"]
    outputs = generate(model, tokenizer, sources, num_beams=2, num_return_sequences=3, batch_size=2, max_length=17)
    assert outputs == [[f"{s} out{k}" for k in range(3)] for s in ("a", "b c", "d", "e", "f")]
    assert [texts for texts, _ in tokenizer.calls] == [["a", "b  c"], ["d", "e"], ["f"]]
    assert tokenizer.calls[0][1] == {"return_tensors": "pt", "padding": True, "truncation": True, "max_length": 17}
    # at least as many beams as hypotheses asked for; the length limit is also the generation limit
    assert model.calls == [{"num_beams": 3, "num_return_sequences": 3, "max_new_tokens": 17}] * 3
    assert generate(model, tokenizer, ["x"])[0] == ["x out0"]
    assert model.calls[-1] == {"num_beams": 5, "num_return_sequences": 1, "max_new_tokens": 128}
    assert tokenizer.calls[-1][1]["max_length"] == 128
    assert generate(model, tokenizer, []) == []
    tokenizer.calls.clear()
    generate(model, tokenizer, [str(i) for i in range(17)])
    assert [len(texts) for texts, _ in tokenizer.calls] == [16, 1]  # 16 sources a batch by default


def test_run_reads_the_configured_columns_and_splits_and_reports_every_bad_input(tmp_path, caplog, monkeypatch):
    import logging
    import sys

    few = datasets.DatasetDict({"dev": datasets.Dataset.from_dict({
        "cs": ["[IN:CALL [SL:NAME mom ] ko call karo ]", "[IN:CALL [SL:NAME"],
        "parse": ["[IN:WRONG column ]", "[IN:WRONG column ]"]})})
    english = datasets.DatasetDict({"test": datasets.Dataset.from_dict({
        "en": ["[IN:CALL call [SL:NAME dad ] ]", "[IN:CALL", "[IN:CALL [SL:NAME ] ]", "[IN:CALL call [SL:NAME ravi ] ]"],
        "parse": ["[IN:WRONG column ]"] * 4})})
    monkeypatch.setattr(sys, "argv", ["/opt/bin/crop-hf", "generate-filter", "--model", "my gen"])
    config = GenerateFilterConfig(few_shot="cs.tsv", english="en.tsv", output_dir=str(tmp_path / "a" / "b"),
                                  few_shot_size=0, few_shot_split="dev", english_split="test", few_shot_parse_column="cs",
                                  english_parse_column="en", top_k=1, lang="es", model="gen/model")
    with caplog.at_level(logging.INFO, logger="crop_hf.augment.generate_filter"):
        result = generate_and_filter(config, generator=lambda sources: [[f"{s}"] for s in sources], few_shot=few,
                                     english=english)
    assert result.statistics["train"] == {"few_shot": 1, "english": 2, "pairs": 1, "sources": 2, "generated": 2,
                                 "invalid_source": 3, "nested_source": 0, "empty_utterance": 0, "invalid_tree": 0,
                                 "in_few_shot": 0, "signature_changed": 0, "duplicate": 0, "kept": 2}
    out = tmp_path / "a" / "b"
    dropped = datasets.load_from_disk(str(out / "discarded"))["train"].to_list()
    assert [(d["generation"], d["source_parse"], d["reason"], d["detail"].split(":")[:2]) for d in dropped] == [
        ("", "[IN:CALL [SL:NAME", "invalid_source", ["dev", "1"]),
        ("", "[IN:CALL", "invalid_source", ["test", "1"]),
        ("", "[IN:CALL [SL:NAME ] ]", "invalid_source", ["test", "2"])]
    # each source's unreadable parses in one line per reason: how many, the first and why
    first_few_shot, first_english = (d["detail"].split(": ", 1)[1] for d in dropped[:2])
    assert [r.getMessage() for r in caplog.records if r.name == "crop_hf.augment.generate_filter"] == [
        f"--few_shot (the dataset given): 1 parse dropped as invalid_source (first: dev:1: {first_few_shot}); "
        "see discarded/",
        f"--english (the dataset given): 2 parses dropped as invalid_source (first: test:1: {first_english}); "
        "see discarded/",
        "1 few-shot parses, 1 training pairs, 2 English sources"]
    augmented = datasets.load_from_disk(str(out / "dataset"))["train"]
    assert augmented[0] == {"utterance": "mom ko call karo", "tokens": ["mom", "ko", "call", "karo"], "intent": "CALL",
                            "slot_tags": ["B-NAME", "O", "O", "O"], "parse": "[IN:CALL [SL:NAME mom ] ko call karo ]",
                            "origin": "few_shot", "source_parse": ""}
    assert augmented[2] == {"utterance": "call ravi", "tokens": ["call", "ravi"], "intent": "CALL",
                            "slot_tags": ["O", "B-NAME"], "parse": "[IN:CALL call [SL:NAME ravi ] ]",
                            "origin": "generated", "source_parse": "[IN:CALL call [SL:NAME ravi ] ]"}
    assert (out / "statistics.json").read_text(encoding="utf-8") == json.dumps(result.statistics["train"], indent=2)
    card = (out / "README.md").read_text(encoding="utf-8")
    for text in (
            "language:\n- es\n- en\n", "configs:\n- config_name: default\n  data_files:\n  - split: train\n    path: data/train-*\n",
            "pretty_name: CSTOP generate-and-filter (es, en)",
            "`gen/model` was fine-tuned to turn English parses into code-switched ones on 1 pairs (each few-shot "
            "parse with its 1 nearest English parses of the same signature), generated with beam search from English "
            "parses, and the generations were filtered. The dataset holds the few-shot parses and the kept "
            "generations (`origin`).",
            "| generator | `gen/model` |", "crop-hf generate-filter --model 'my gen'\n",
            "- `few_shot`: code-switched parses in the few-shot set", "- `english`: usable English parses",
            "- `pairs`: (English, code-switched) training pairs", "- `sources`: English parses generated from",
            "- `generated`: generations", "- `kept`: generations kept",
            "- `utterance`: the utterance the parse annotates", "- `tokens`: the words of `parse`",
            "- `intent`: the intent name", "- `slot_tags`: IOB2 slot tags over `tokens`", "- `parse`: the bracket parse", "- `origin`: `few_shot` or `generated`",
            "- `source_parse`: the English parse it was generated from"):
        assert text in card, text
    assert "source_datasets" not in card  # cs.tsv is a local file, not a dataset on the Hub
    assert "output_dir" not in card and "gen/model" in json.dumps(config.result_arguments())
    assert result.report() == (f"{result.table()}\n\ndataset: {out / 'dataset'}\ndiscarded: {out / 'discarded'}"
                               f"\ncard: {out / 'README.md'}")
    table = result.table().splitlines()
    assert table[0].split() == ["split", *result.statistics["train"]] and table[-1].split() == [
        "train", *(str(v) for v in result.statistics["train"].values())]
    # the same folder again (it holds a result of other inputs now: replaced); nothing dropped: an empty
    # discarded set, typed like a full one
    config.overwrite_output_dir = True
    clean = datasets.Dataset.from_dict({"cs": ["[IN:CALL [SL:NAME mom ] ko call karo ]"]})
    generate_and_filter(config, generator=lambda sources: [[] for _ in sources], few_shot=clean,
                        english=datasets.Dataset.from_dict({"en": ["[IN:CALL call [SL:NAME dad ] ]"]}))
    config.english_parse_column = None
    config.few_shot_split = config.english_split = "train"
    generate_and_filter(config, generator=lambda sources: [[] for _ in sources], few_shot=clean,
                        english=datasets.Dataset.from_dict({"parse": ["[IN:CALL call [SL:NAME dad ] ]"]}))
    dropped = datasets.load_from_disk(str(out / "discarded"))["train"]
    assert dropped.num_rows == 0 and dropped.features == datasets.Features(
        {name: datasets.Value("string") for name in ("generation", "source_parse", "reason", "detail")})


def test_configured_sources_are_read_when_none_are_passed_and_empty_sides_are_refused(tmp_path):
    few = tmp_path / "few.tsv"
    few.write_text("parse\n[IN:CALL [SL:NAME mom ] ko call karo ]\n", encoding="utf-8")
    english = tmp_path / "en.tsv"
    english.write_text("parse\n[IN:CALL call [SL:NAME dad ] ]\n[IN:CALL\n[IN:ALARM\n", encoding="utf-8")
    config = GenerateFilterConfig(few_shot=str(few), english=str(english), output_dir=str(tmp_path / "o"),
                                  few_shot_size=0)
    result = generate_and_filter(config, generator=lambda sources: [["[IN:CALL [SL:NAME dad ] ko call karo ]"]])
    assert result.statistics["train"]["kept"] == 1 and result.statistics["train"]["invalid_source"] == 2
    english.write_text("parse\n[IN:CALL\n[IN:ALARM\n", encoding="utf-8")
    with pytest.raises(OutputExistsError, match="the content of --english: "):  # other content, another run
        generate_and_filter(config, generator=lambda sources: [])
    with pytest.raises(EmptyInputError, match=rf"^--english {english}: no usable parses in its 'train' split "
                                              r"\(\{'invalid_source': 2\}\)$"):
        generate_and_filter(dataclasses.replace(config, overwrite_output_dir=True), generator=lambda sources: [])
    with pytest.raises(EmptyInputError, match=r"^--few_shot \(the dataset given\): no parses in its 'train' split"):
        generate_and_filter(dataclasses.replace(config, overwrite_output_dir=True), generator=lambda sources: [],
                            few_shot=datasets.Dataset.from_dict({"parse": []}))


def test_a_generator_must_answer_every_source(tmp_path):
    config = GenerateFilterConfig(few_shot="-", english="-", output_dir=str(tmp_path / "out"), few_shot_size=0)
    with pytest.raises(ValueError, match="zip"):
        generate_and_filter(config, generator=lambda sources: [["[IN:CALL x ]"]] * (len(sources) - 1),
                            few_shot=_rows(FEW_SHOT), english=_rows(ENGLISH))


def test_few_shot_draw_uses_the_configured_seed(tmp_path):
    from crop_hf.parsing.fewshot import few_shot_indices

    few = [f"[IN:CALL call [SL:NAME n{i} ] ]" for i in range(30)]
    flat = flats(*few)
    intents, tags = [f.intent for f in flat], [f.slot_tags for f in flat]
    seed = next(s for s in range(1, 50) if few_shot_indices(intents, tags, n=3, seed=s)
                != few_shot_indices(intents, tags, n=3, seed=0))
    config = GenerateFilterConfig(few_shot="-", english="-", output_dir=str(tmp_path / "o"), few_shot_size=3,
                                  few_shot_seed=seed)
    generate_and_filter(config, generator=lambda sources: [[] for _ in sources], few_shot=_rows(few),
                        english=_rows(ENGLISH))
    augmented = datasets.load_from_disk(str(tmp_path / "o" / "dataset"))["train"]
    assert augmented["parse"] == [few[i] for i in few_shot_indices(intents, tags, n=3, seed=seed)]


def test_without_a_generator_the_recipe_fine_tunes_generates_and_saves_when_asked(tmp_path, monkeypatch):
    import crop_hf.augment.generate_filter as recipe

    calls = {}

    class Saved:
        def __init__(self, name):
            self.name = name

        def save_pretrained(self, path):
            calls.setdefault("saved", []).append((self.name, path))

    def fake_fine_tune(pairs, config):
        calls["pairs"] = pairs
        calls["config"] = config
        return Saved("model"), Saved("tokenizer")

    def fake_generate(model, tokenizer, sources, **options):
        calls["generate"] = (model.name, tokenizer.name, list(sources), options)
        return [["[IN:CALL [SL:NAME dad ] ko call karo ]"] for _ in sources]

    monkeypatch.setattr(recipe, "fine_tune", fake_fine_tune)
    monkeypatch.setattr(recipe, "generate", fake_generate)
    config = GenerateFilterConfig(few_shot="-", english="-", output_dir=str(tmp_path / "o"), few_shot_size=0,
                                  num_beams=3, num_return_sequences=2, batch_size=7, max_length=33)
    result = generate_and_filter(config, few_shot=_rows(FEW_SHOT), english=_rows(ENGLISH))
    assert calls["config"] is config and calls["pairs"] == [
        ("[IN:CALL call [SL:NAME dad ] ]", "[IN:CALL [SL:NAME mom ] ko call karo ]"),
        ("[IN:CALL call [SL:NAME mom ] ]", "[IN:CALL [SL:NAME mom ] ko call karo ]"),
        ("[IN:ALARM set alarm [SL:TIME 8 am ] ]", "[IN:ALARM alarm [SL:TIME 7 baje ] set karo ]")]
    assert calls["generate"] == ("model", "tokenizer", ENGLISH[:3], {"num_beams": 3, "num_return_sequences": 2,
                                                                     "batch_size": 7, "max_length": 33})
    assert result.statistics["train"]["generated"] == 3 and "saved" not in calls
    config.save_model, config.output_dir = True, str(tmp_path / "saved")
    generate_and_filter(config, few_shot=_rows(FEW_SHOT), english=_rows(ENGLISH))
    saved = tmp_path / "saved" / "generator"
    assert calls["saved"] == [("model", saved), ("tokenizer", saved)]
    calls.clear()
    generate_and_filter(config, few_shot=_rows(FEW_SHOT), english=_rows(ENGLISH))  # the same run again: resumed
    assert calls == {}  # every shard finished: neither fine-tuned, nor generating, nor saving
    config.output_dir = str(tmp_path / "given")
    generate_and_filter(config, generator=lambda sources: [[] for _ in sources], few_shot=_rows(FEW_SHOT),
                        english=_rows(ENGLISH))
    assert calls == {}  # a given generator: no model to fine-tune or save


def test_filter_rows_in_full():
    from crop_hf.augment.generate_filter import judge_generations

    sources = ["[IN:A stop [SL:X timer ] ]", "[IN:B go ]"]
    generations = [["[IN:A roko  [SL:X timer ] ]", "[IN:A [SL:X", "[IN:A roko [SL:X timer ] ]", "[IN:A mera [SL:X t ] ]"],
                   ["[IN:B chalo ]", "[IN:C chalo ]"]]
    kept, dropped, counts = as_rows(judge_generations(sources, generations, few_shot=["[IN:A  mera [SL:X t ] ]"]))
    assert kept == [
        {"utterance": "roko timer", "tokens": ["roko", "timer"], "intent": "A", "slot_tags": ["O", "B-X"],
         "parse": "[IN:A roko [SL:X timer ] ]", "origin": "generated", "source_parse": sources[0]},
        {"utterance": "chalo", "tokens": ["chalo"], "intent": "B", "slot_tags": ["O"], "parse": "[IN:B chalo ]",
         "origin": "generated", "source_parse": sources[1]}]
    assert dropped == [
        {"generation": "[IN:A [SL:X", "source_parse": sources[0], "reason": "invalid_tree",
         "detail": dropped[0]["detail"]},
        {"generation": "[IN:A roko [SL:X timer ] ]", "source_parse": sources[0], "reason": "duplicate", "detail": ""},
        {"generation": "[IN:A mera [SL:X t ] ]", "source_parse": sources[0], "reason": "in_few_shot", "detail": ""},
        {"generation": "[IN:C chalo ]", "source_parse": sources[1], "reason": "signature_changed",
         "detail": "('C', ()) instead of ('B', ())"}]
    assert dropped[0]["detail"] == "'[SL:X' is never closed at character 6:" and "\n" not in dropped[0]["detail"]
    assert counts == {"invalid_tree": 1, "duplicate": 1, "in_few_shot": 1, "signature_changed": 1}


def test_neighbour_pairs_default_to_ten_and_skip_unmatched_signatures():
    cs = flats("[IN:A x [SL:B y ] ]", "[IN:Z nothing ]")
    en = flats(*(f"[IN:A w{i} [SL:B y ] ]" for i in range(12)))
    assert neighbour_pairs(cs, en) == [(0, j) for j in range(10)]  # all as near: pool order


#: GenerateFilterConfig fields left out of the fingerprint (and the card's settings), and why. A new field must
#: be marked as changing results or added here: until someone decides, the completeness test fails.
NOT_FINGERPRINTED = {
    "output_dir": "where the shard folder is, not what is in it",
    "overwrite_output_dir": "whether a finished result of other settings may be replaced, not what is computed",
    "lang": "the run's one key: its shards have their own folder, and a finished folder of another is refused",
    "cpu": "where the generator is fine-tuned and runs",
    "save_model": "saves the generator after the merge; the shards are the same",
    "show_progress": "display only",
}


def test_settings_are_the_fields_that_change_results():
    config = GenerateFilterConfig(few_shot="a", english="b", output_dir="c")
    fields = {f.name for f in dataclasses.fields(config)}
    assert set(config.result_arguments()) == fields - set(NOT_FINGERPRINTED)
    assert config.result_arguments()["few_shot"] == "a" and config.result_arguments()["shard_size"] == 1000
    with pytest.raises(ValueError, match=r"^shard_size must be at least 1, got 0$"):
        GenerateFilterConfig(few_shot="a", english="b", output_dir="c", shard_size=0)


def _funnel_generator(seen):
    """Generations per source of the funnel test: the same code-switched parse from both CALL sources."""
    outputs = {"[IN:CALL call [SL:NAME dad ] ]": ["[IN:CALL [SL:NAME dad ] ko call karo ]", "[IN:CALL papa ]"],
               "[IN:CALL call [SL:NAME mom ] ]": ["[IN:CALL  [SL:NAME dad ]  ko call karo ]"],  # shard 1: a repeat
               "[IN:ALARM set alarm [SL:TIME 8 am ] ]": ["[IN:ALARM alarm [SL:TIME 8 baje ] set karo ]"]}

    def generator(sources):
        seen.extend(sources)
        return [outputs[s] for s in sources]

    return generator


def test_a_rerun_resumes_and_a_repeat_across_shards_is_a_duplicate(tmp_path):
    from crop_hf.engine.shards import describe_inputs, fingerprint

    seen = []
    config = GenerateFilterConfig(few_shot="-", english="-", output_dir=str(tmp_path / "out"), few_shot_size=0,
                                  shard_size=1, show_progress=False)
    first = generate_and_filter(config, generator=_funnel_generator(seen), few_shot=_rows(FEW_SHOT),
                                english=_rows(ENGLISH))
    assert seen == ENGLISH[:3] and first.skipped_shards == {"train": 0}
    out = tmp_path / "out"
    assert list(json.loads((out / "statistics.json").read_text())) == [
        "few_shot", "english", "pairs", "sources", "generated", "invalid_source", "nested_source", "empty_utterance",
        "invalid_tree", "in_few_shot", "signature_changed", "duplicate", "kept"]
    assert {k: first.statistics["train"][k] for k in ("sources", "generated", "signature_changed", "duplicate", "kept")} == \
        {"sources": 3, "generated": 4, "signature_changed": 1, "duplicate": 1, "kept": 2}
    augmented = datasets.load_from_disk(str(out / "dataset"))["train"]
    assert augmented["origin"] == ["few_shot", "few_shot", "generated", "generated"]
    assert augmented["source_parse"][2:] == [ENGLISH[0], ENGLISH[2]]  # the first shard's kept, not the repeat
    dropped = datasets.load_from_disk(str(out / "discarded"))["train"].to_list()
    assert [(d["reason"], d["source_parse"]) for d in dropped][-2:] == [("signature_changed", ENGLISH[0]),
                                                                         ("duplicate", ENGLISH[1])]
    assert dropped[-1]["generation"] == "[IN:CALL [SL:NAME dad ] ko call karo ]"
    shards = sorted(out.glob("shards/*/hi/*.json"))
    assert len(shards) == 3 and shards[0].parent.parent.name == fingerprint(
        {**config.result_arguments(), "inputs": describe_inputs({"few_shot": _rows(FEW_SHOT), "english": _rows(ENGLISH)})})

    # the same settings again: every shard is skipped, the generator is not called, the outputs are the same
    again = generate_and_filter(config, generator=_funnel_generator(seen), few_shot=_rows(FEW_SHOT),
                                english=_rows(ENGLISH))
    assert seen == ENGLISH[:3] and again.skipped_shards == {"train": 3} and again.statistics == first.statistics
    assert datasets.load_from_disk(str(out / "dataset"))["train"].to_list() == augmented.to_list()
    shards[1].unlink()  # a run killed before it finished shard 1: only that shard is generated again
    again = generate_and_filter(config, generator=_funnel_generator(seen), few_shot=_rows(FEW_SHOT),
                                english=_rows(ENGLISH))
    assert seen == [*ENGLISH[:3], ENGLISH[1]] and again.statistics == first.statistics

    # one shard for all: the same funnel and the same rows (the repeat is caught within the shard)
    whole = generate_and_filter(dataclasses.replace(config, output_dir=str(tmp_path / "whole"), shard_size=1000),
                                generator=_funnel_generator([]), few_shot=_rows(FEW_SHOT), english=_rows(ENGLISH))
    assert whole.statistics == first.statistics
    assert datasets.load_from_disk(str(tmp_path / "whole" / "dataset"))["train"].to_list() == augmented.to_list()


def test_other_settings_refuse_a_finished_folder_unless_overwritten(tmp_path):
    from crop_hf.errors import OutputExistsError

    config = GenerateFilterConfig(few_shot="-", english="-", output_dir=str(tmp_path / "out"), few_shot_size=0,
                                  show_progress=False)
    generate_and_filter(config, generator=_funnel_generator([]), few_shot=_rows(FEW_SHOT), english=_rows(ENGLISH))
    seen = []
    other = dataclasses.replace(config, top_k=3)
    with pytest.raises(OutputExistsError, match=r"--top_k: 10 there, 3 here.*--overwrite_output_dir"):
        generate_and_filter(other, generator=_funnel_generator(seen), few_shot=_rows(FEW_SHOT),
                            english=_rows(ENGLISH))
    assert seen == []  # refused before any generation
    result = generate_and_filter(dataclasses.replace(other, overwrite_output_dir=True),
                                 generator=_funnel_generator(seen), few_shot=_rows(FEW_SHOT),
                                 english=_rows(ENGLISH))
    assert seen == ENGLISH[:3] and result.skipped_shards == {"train": 0} and result.statistics["train"]["kept"] == 2
    assert len(list((tmp_path / "out" / "shards").glob("*/run.json"))) == 2


def test_the_generator_is_fine_tuned_only_when_a_shard_is_left_and_before_the_folder_check_passes(tmp_path,
                                                                                                 monkeypatch):
    import crop_hf.augment.generate_filter as recipe
    from crop_hf.errors import OutputExistsError

    tuned = []

    class Saved:
        def save_pretrained(self, path):
            pass

    monkeypatch.setattr(recipe, "fine_tune", lambda pairs, config: tuned.append(len(pairs)) or (Saved(), Saved()))
    monkeypatch.setattr(recipe, "generate", lambda model, tokenizer, sources, **options: [[] for _ in sources])
    config = GenerateFilterConfig(few_shot="-", english="-", output_dir=str(tmp_path / "out"), few_shot_size=0,
                                  shard_size=2, show_progress=False)
    first = generate_and_filter(config, few_shot=_rows(FEW_SHOT), english=_rows(ENGLISH))
    assert tuned == [3] and first.statistics["train"]["generated"] == 0  # once for both shards
    generate_and_filter(config, few_shot=_rows(FEW_SHOT), english=_rows(ENGLISH))
    assert tuned == [3]  # resumed: nothing left to generate
    with pytest.raises(OutputExistsError):
        generate_and_filter(dataclasses.replace(config, epochs=1), few_shot=_rows(FEW_SHOT), english=_rows(ENGLISH))
    assert tuned == [3]  # the folder is checked before minutes of fine-tuning
