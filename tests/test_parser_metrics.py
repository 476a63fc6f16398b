"""Semantic parsing metrics: CSTOP's exact match, seqeval-equal slot F1, nested gold counted wrong, offline evaluate."""

from __future__ import annotations

import json
import random

import pytest

from crop_hf.metrics.parsing import canonical_parse, format_error_table, format_parse_table, parse_scores
from crop_hf.parsing.predict import to_parse


def test_exact_match_ignores_whitespace_only():
    gold = "[IN:GET_WEATHER weather in [SL:LOCATION Delhi ] ]"
    assert parse_scores(["[IN:GET_WEATHER   weather in [SL:LOCATION Delhi]]"], [gold])["exact_match"] == 1.0
    assert parse_scores(["[IN:GET_WEATHER weather in [SL:LOCATION delhi ] ]"], [gold])["exact_match"] == 0.0
    assert parse_scores(["[IN:GET_WEATHER weather [SL:LOCATION in Delhi ] ]"], [gold])["exact_match"] == 0.0
    assert canonical_parse("[IN:A  x\t[SL:B y]]") == "[IN:A x [SL:B y ] ]"


def test_unparseable_predictions_score_wrong_and_bad_references_raise():
    scores = parse_scores(["[IN:A x [SL:B y ]", "garbage"], ["[IN:A x [SL:B y ] ]", "[IN:C z ]"])
    assert scores["exact_match"] == 0.0 and scores["intent_accuracy"] == 0.0 and scores["slot_recall"] == 0.0
    with pytest.raises(ValueError, match="reference 0"):
        parse_scores(["[IN:A x ]"], ["[IN:A x"])
    with pytest.raises(ValueError, match="2 predictions but 1"):
        parse_scores(["[IN:A x ]"] * 2, ["[IN:A x ]"])


def test_nested_gold_counts_wrong_and_is_reported_alone():
    nested = "[IN:CREATE_REMINDER remind me [SL:TODO [IN:GET_EVENT the party ] ] ]"
    flat_guess = "[IN:CREATE_REMINDER remind me [SL:TODO the party ] ]"  # the best a flat parser can say
    scores = parse_scores([flat_guess, "[IN:A x ]"], [nested, "[IN:A x ]"], domains=["reminder", "other"])
    assert scores["exact_match"] == 0.5
    assert scores["nested"] == {**scores["nested"], "count": 1, "exact_match": 0.0, "intent_accuracy": 1.0,
                                "slot_f1": 1.0}
    assert scores["flat"]["count"] == 1 and scores["flat"]["exact_match"] == 1.0
    assert scores["per_domain"]["reminder"]["exact_match"] == 0.0
    table = format_parse_table(scores)
    assert table.splitlines()[-2].split()[:3] == ["nested", "1", "0.0"]


def test_scores_and_table_on_a_hand_counted_example():
    references = ["[IN:A play [SL:S x ] [SL:T y ] ]", "[IN:B go [SL:S z ] ]", "[IN:C stop ]"]
    predictions = ["[IN:A play [SL:S x ] y ]",  # intent right, 1 of 2 slots, 1 predicted
                   "[IN:X go [SL:S z ] [SL:U go ] ]",  # intent wrong, 1 of 1 slot, 2 predicted
                   "[IN:C stop ]"]  # exact
    scores = parse_scores(predictions, references, domains=["music", "music", "nav"])
    # correct 2 of 3 predicted slots, 2 of 3 gold ones; intents 2 of 3; exact 1 of 3.
    assert scores == {**scores, "exact_match": 1 / 3, "intent_accuracy": 2 / 3, "slot_precision": 2 / 3,
                      "slot_recall": 2 / 3, "count": 3}
    assert scores["slot_f1"] == pytest.approx(2 / 3)
    none_wrong = {"intent": 0, "top_level": 0, "inside": 0}
    # row 1 differs first at its top-level slots (T missed), row 2 at its intent
    assert scores["per_domain"]["music"] == {"exact_match": 0.0, "intent_accuracy": 0.5, "slot_precision": 2 / 3,
                                             "slot_recall": 2 / 3, "slot_f1": pytest.approx(2 / 3), "count": 2,
                                             "errors": {"intent": 1, "top_level": 1, "inside": 0}}
    # No slot predicted or expected, no row in a group: every score is 0 (seqeval's zero_division=0).
    assert scores["per_domain"]["nav"] == {"exact_match": 1.0, "intent_accuracy": 1.0, "slot_precision": 0.0,
                                           "slot_recall": 0.0, "slot_f1": 0.0, "count": 1, "errors": none_wrong}
    assert scores["nested"] == {"exact_match": 0.0, "intent_accuracy": 0.0, "slot_precision": 0.0,
                                "slot_recall": 0.0, "slot_f1": 0.0, "count": 0, "errors": none_wrong}
    wrong = parse_scores(["[IN:A x ]"], ["[IN:A x [SL:S y ] ]"])
    assert (wrong["slot_precision"], wrong["slot_recall"], wrong["slot_f1"]) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="1 domains but 3 references"):
        parse_scores(predictions, references, domains=["music"])
    assert format_parse_table(scores).splitlines() == [
        "domain     count  exact match  intent acc  slot F1",
        "music          2          0.0        50.0     66.7",
        "nav            1        100.0       100.0      0.0",
        "flat           3         33.3        66.7     66.7",
        "nested         0          0.0         0.0      0.0",
        "all            3         33.3        66.7     66.7",
    ]
    assert format_parse_table(parse_scores(["[IN:C stop ]"], ["[IN:C stop ]"])).splitlines()[1:] == [
        "flat           1        100.0       100.0      0.0",
        "nested         0          0.0         0.0      0.0",
        "all            1        100.0       100.0      0.0",
    ]


def test_slot_f1_equals_seqeval_on_random_tag_sequences():
    from seqeval.metrics import f1_score, precision_score, recall_score

    rng = random.Random(0)
    names = ["LOC", "DATE", "NAME"]

    def random_tags(n):
        tags, previous = [], "O"
        for _ in range(n):
            choice = rng.random()
            if choice < 0.4:
                tag = "O"
            elif choice < 0.7 or previous == "O":
                tag = f"B-{rng.choice(names)}"
            else:
                tag = "I-" + previous[2:]
            tags.append(tag)
            previous = tag
        return tags

    gold_tags, guess_tags = [], []
    for _ in range(200):
        n = rng.randint(1, 8)
        gold_tags.append(random_tags(n))
        guess_tags.append(random_tags(n) if rng.random() < 0.5 else list(gold_tags[-1]))
    words = [[f"w{i}" for i in range(len(t))] for t in gold_tags]
    scores = parse_scores([to_parse(w, "X", t) for w, t in zip(words, guess_tags, strict=True)],
                          [to_parse(w, "X", t) for w, t in zip(words, gold_tags, strict=True)])
    assert scores["slot_precision"] == pytest.approx(precision_score(gold_tags, guess_tags))
    assert scores["slot_recall"] == pytest.approx(recall_score(gold_tags, guess_tags))
    assert scores["slot_f1"] == pytest.approx(f1_score(gold_tags, guess_tags))
    # one intent everywhere: every wrong tree is wrong at its top-level slots (flat trees have no inside)
    wrong = sum(guess != gold for guess, gold in zip(guess_tags, gold_tags, strict=True))
    assert wrong > 50 and scores["errors"] == {"intent": 0, "top_level": wrong, "inside": 0}


@pytest.mark.parametrize("name,key", [("exact_match_parse", "exact_match"), ("intent_accuracy", "intent_accuracy"),
                                      ("slot_f1", "slot_f1")])
def test_evaluate_modules_load_offline_from_the_package(name, key, monkeypatch, tmp_path):
    import evaluate

    import crop_hf.metrics

    monkeypatch.setenv("HF_EVALUATE_OFFLINE", "1")
    metric = evaluate.load(crop_hf.metrics.path(name), cache_dir=str(tmp_path))
    predictions = ["[IN:A x [SL:B y ] ]", "[IN:C z ]"]
    references = ["[IN:A x [SL:B y ] ]", "[IN:C [SL:D [IN:E z ] ] ]"]
    result = metric.compute(predictions=predictions, references=references, domains=["d1", "d2"])
    expected = parse_scores(predictions, references, ["d1", "d2"])
    assert result[key] == expected[key] and result[f"nested_{key}"] == expected["nested"][key]
    assert result["per_domain"]["d2"][key] == expected["per_domain"]["d2"][key]
    with pytest.raises(KeyError, match="no crop-hf metric"):
        crop_hf.metrics.path("bleu")


def test_evaluate_parser_command_prints_the_table(tiny_bert, tmp_path, capsys):
    import datasets

    from crop_hf.cli import main
    from crop_hf.modeling import JointIntentSlotModel

    JointIntentSlotModel.from_encoder(str(tiny_bert), ["GET_WEATHER"], ["O", "B-LOCATION", "I-LOCATION"]) \
        .save_pretrained(tmp_path / "model")
    from transformers import AutoTokenizer

    AutoTokenizer.from_pretrained(tiny_bert).save_pretrained(tmp_path / "model")
    datasets.DatasetDict({"validation": datasets.Dataset.from_dict({
        "tokens": [["weather", "Paris"], ["weather"]], "intent": ["GET_WEATHER"] * 2,
        "slot_tags": [["O", "B-LOCATION"], ["O"]], "domain": ["weather", "weather"],
    })}).save_to_disk(tmp_path / "corpus")
    assert main(["evaluate-parser", "--model", str(tmp_path / "model"), "--sources", f"disk:{tmp_path / 'corpus'}",
                 "--output", str(tmp_path / "scores.json")]) == 0
    out = capsys.readouterr().out
    assert "exact match" in out and out.count("weather") >= 1 and "nested" in out
    errors = out[out.index("where the wrong trees first differ"):].splitlines()
    assert errors[1].split() == ["wrong", "count", "intent", "top-level", "slots", "inside", "a", "slot"]
    # the random-weight model's wrong trees are counted: as many as the rows it missed
    written = json.loads((tmp_path / "scores.json").read_text())["scores"][f"disk:{tmp_path / 'corpus'}"]
    missed = round(2 * (1 - written["exact_match"]))
    assert int(errors[4].split()[1]) == missed
    assert (tmp_path / "scores.json").exists()


def test_whole_nested_trees_match_and_gold_with_an_empty_slot_scores_instead_of_stopping():
    nested = "[IN:CREATE_REMINDER remind me [SL:TODO [IN:GET_EVENT the [SL:EVENT party ] ] ] ]"
    wrong_inner = "[IN:CREATE_REMINDER remind me [SL:TODO [IN:GET_EVENT the party ] ] ]"
    scores = parse_scores([nested, wrong_inner, "[IN:A x [SL:B y ] ]"],
                          [nested, nested, "[IN:A x [SL:B ] y ]"])
    assert scores["nested"]["count"] == 2 and scores["nested"]["exact_match"] == 0.5
    assert scores["flat"]["count"] == 1 and scores["flat"]["exact_match"] == 0.0
    # top-level slots cover every word under them: TODO is words 2-3 in both nested rows
    assert scores["nested"]["slot_f1"] == 1.0
    # the empty gold slot is a zero-width span at word 1: the prediction's "y" slot does not match it
    assert scores["flat"]["intent_accuracy"] == 1.0 and scores["flat"]["slot_recall"] == 0.0
    exact = parse_scores(["[IN:A x [SL:B ] y ]"], ["[IN:A x [SL:B ] y ]"])
    assert exact["slot_f1"] == 1.0 and exact["exact_match"] == 1.0 and exact["nested"]["count"] == 0


def test_wrong_trees_are_counted_where_they_first_differ_from_gold():
    gold = "[IN:CREATE_REMINDER remind me [SL:TODO [IN:GET_TODO [SL:TODO call ] [SL:CONTACT mom ] ] ] ]"
    predictions = [
        gold,  # exact: not an error
        "[IN:CREATE_ALARM remind me [SL:TODO [IN:GET_TODO [SL:TODO call ] [SL:CONTACT mom ] ] ] ]",  # intent
        "garbage [",  # unreadable: counted as a wrong intent, as the scores treat it
        "[IN:CREATE_REMINDER remind me [SL:TODO call ] [SL:CONTACT mom ] ]",  # the inner slots at the top level
        "[IN:CREATE_REMINDER remind [SL:TODO me [IN:GET_TODO call [SL:CONTACT mom ] ] ] ]",  # a boundary
        "[IN:CREATE_REMINDER remind me [SL:TODO call mom ] ]",  # the nested intent missed
        "[IN:CREATE_REMINDER remind me [SL:TODO [IN:GET_TODO call [SL:CONTACT mom ] ] ] ]",  # an inner slot missed
        "[IN:CREATE_REMINDER remind me [SL:TODO [IN:SEND_MESSAGE [SL:TODO call ] [SL:CONTACT mom ] ] ] ]",
        "[IN:CREATE_REMINDER remind me [SL:DATE_TIME [IN:GET_TODO [SL:TODO call ] [SL:CONTACT mom ] ] ] ]",  # a name
    ]
    flat_gold = "[IN:A x [SL:B y ] ]"
    scores = parse_scores([*predictions, "[IN:A x [SL:B [IN:C y ] ] ]"], [gold] * len(predictions) + [flat_gold])
    assert scores["nested"]["errors"] == {"intent": 2, "top_level": 3, "inside": 3}
    assert scores["flat"]["errors"] == {"intent": 0, "top_level": 0, "inside": 1}  # a nested intent added
    assert scores["errors"] == {"intent": 2, "top_level": 3, "inside": 4}
    # every wrong tree is counted once
    assert sum(scores["errors"].values()) == round(scores["count"] * (1 - scores["exact_match"]))
    assert format_error_table(scores).splitlines() == [
        "wrong      count   intent  top-level slots  inside a slot",
        "flat           1      0.0              0.0          100.0",
        "nested         8     25.0             37.5           37.5",
        "all            9     22.2             33.3           44.4",
    ]
    # a group without wrong trees prints zeros rather than dividing by zero
    assert format_error_table(parse_scores([flat_gold], [flat_gold])).splitlines()[1] == \
        "flat           0      0.0              0.0            0.0"


def test_rows_whose_gold_parse_repeats_a_training_parse_are_scored_apart():
    references = ["[IN:A play [SL:S x ] ]", "[IN:A play [SL:S y ] ]", "[IN:B  go]", "[IN:B go  home]"]
    predictions = ["[IN:A play [SL:S x ] ]", "[IN:A play y ]", "[IN:B go ]", "[IN:C go home ]"]
    seen = ["[IN:A play [SL:S x]]", "[IN:B  go ]", "[IN:B go away ]"]  # spacing aside, rows 0 and 2 repeat
    scores = parse_scores(predictions, references, seen=seen)
    assert (scores["seen"]["count"], scores["seen"]["exact_match"]) == (2, 1.0)
    assert scores["unseen"] == {**scores["unseen"], "count": 2, "exact_match": 0.0, "intent_accuracy": 0.5,
                                "slot_recall": 0.0, "errors": {"intent": 1, "top_level": 1, "inside": 0}}
    assert parse_scores(predictions, references, seen=[])["unseen"]["count"] == 4  # nothing was seen
    plain = parse_scores(predictions, references)
    assert "seen" not in plain and "unseen" not in plain
    assert [line.split()[:3] for line in format_parse_table(scores).splitlines()[3:]] == [
        ["seen", "2", "100.0"], ["unseen", "2", "0.0"], ["all", "4", "50.0"]]
    assert "seen" not in format_parse_table(plain)


def test_evaluate_parser_scores_unseen_parses_apart_given_the_training_split(tiny_bert, tmp_path, capsys):
    import datasets
    from transformers import AutoTokenizer

    from crop_hf.cli import main
    from crop_hf.modeling import JointIntentSlotModel

    JointIntentSlotModel.from_encoder(str(tiny_bert), ["GET_WEATHER"], ["O", "B-LOCATION", "I-LOCATION"]) \
        .save_pretrained(tmp_path / "model")
    AutoTokenizer.from_pretrained(tiny_bert).save_pretrained(tmp_path / "model")

    def split(tokens, tags):
        return datasets.Dataset.from_dict({"tokens": tokens, "intent": ["GET_WEATHER"] * len(tokens),
                                           "slot_tags": tags})

    datasets.DatasetDict({
        "train": split([["weather", "Paris"], ["rain"]], [["O", "B-LOCATION"], ["O"]]),
        "validation": split([["weather", "Paris"], ["weather"], ["rain", "Oslo"]], [["O", "B-LOCATION"], ["O"], ["O", "O"]]),
    }).save_to_disk(tmp_path / "corpus")
    corpus = f"disk:{tmp_path / 'corpus'}"
    assert main(["evaluate-parser", "--model", str(tmp_path / "model"), "--sources", corpus,
                 "--seen_split", "train", "--output", str(tmp_path / "scores.json")]) == 0
    out = capsys.readouterr().out
    scores = json.loads((tmp_path / "scores.json").read_text())["scores"][corpus]
    assert (scores["seen"]["count"], scores["unseen"]["count"]) == (1, 2)  # "weather Paris" repeats a training parse
    assert (f"gold parses not in train word for word: 2 of 3; exact match on them "
            f"{100 * scores['unseen']['exact_match']:.1f}% (on the others {100 * scores['seen']['exact_match']:.1f}%)"
            ) in out
    assert main(["evaluate-parser", "--model", str(tmp_path / "model"), "--sources", corpus]) == 0
    assert "word for word" not in capsys.readouterr().out
