"""Generate-and-filter (CSTOP 6.2): neighbours by signature and Levenshtein, the filter funnel with a
stand-in generator (exact outcomes), bad input counted, and a tiny BART fine-tuned end to end that
learns a word-substitution task well enough for its generations to pass the filter."""

from __future__ import annotations

import contextlib
import json

import datasets
import pytest

from crop_hf.augment.generate_filter import (
    FILTER_REASONS,
    GenerateFilterConfig,
    fine_tune,
    generate,
    generate_and_filter,
    neighbour_pairs,
    signature,
)
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
    stats = result.statistics
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
    assert result.statistics["few_shot"] == 3 and "ALARM" in augmented["intent"]


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
