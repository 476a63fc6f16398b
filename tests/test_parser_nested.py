"""Nested trees (intents inside slots) end to end: frames and targets, the hierarchical decoder, the
pipeline's nested slots, model selection on a dev split, trees a model cannot represent, and the
model's probability of a given tree (``score``, ``score_parses``)."""

from __future__ import annotations

import json
import math
import random

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from crop_hf.parsing.arguments import ParserDataArguments, ParserModelArguments, ParserTrainingArguments
from crop_hf.parsing.train import train_parser
from crop_hf.seqlogical import IntentFrame, Tree, UnrepresentableParse, parse, to_frame

# ---------------------------------------------------------------- a synthetic nested grammar

CITIES = ["paris", "delhi", "tokyo", "lima", "oslo", "rome", "cairo", "quito"]
PLACES = ["home", "office", "school", "gym", "park", "shop"]
EVENTS = ["concert", "party", "match", "meeting", "wedding", "lecture"]
DAYS = ["monday", "friday", "sunday", "tuesday"]
TASKS = ["laundry", "dishes", "shopping", "homework"]


def _grammar() -> list[str]:
    """Every utterance of a small TOP-like grammar: flat trees, one nesting level and two."""
    trees = [f"[IN:GET_WEATHER weather in [SL:LOCATION {c} ] ]" for c in CITIES]
    trees += [f"[IN:GET_WEATHER weather at [SL:LOCATION [IN:GET_LOCATION my [SL:PLACE {p} ] ] ] ]" for p in PLACES]
    trees += [f"[IN:SET_REMINDER remind me about [SL:TODO [IN:GET_EVENT the [SL:EVENT {e} ] on [SL:DATE {d} ] ] ] ]"
              for e in EVENTS for d in DAYS]
    trees += [f"[IN:SET_REMINDER remind me about [SL:TODO {t} ] [SL:DATE {d} ] ]" for t in TASKS for d in DAYS]
    trees += [f"[IN:GET_WEATHER weather near [SL:LOCATION [IN:GET_LOCATION the [SL:PLACE [IN:GET_EVENT the "
              f"[SL:EVENT {e} ] ] ] venue ] ] ]" for e in EVENTS]
    return trees


def _rows(trees):
    import datasets

    from crop_hf.seqlogical import flatten_top_level

    flat = [flatten_top_level(t)[0] for t in trees]
    return datasets.Dataset.from_dict({"tokens": [f.tokens for f in flat], "intent": [f.intent for f in flat],
                                       "slot_tags": [f.slot_tags for f in flat], "parse": list(trees)})


def _split():
    trees = _grammar()
    random.Random(1).shuffle(trees)
    cut = len(trees) // 4
    return trees[cut:], trees[:cut]  # held-out utterances: filler combinations never trained on


@pytest.fixture(scope="module")
def nested_parser(tmp_path_factory):
    """A tiny hierarchical parser trained for a few seconds on the synthetic grammar (and its held-out rows)."""
    import datasets

    from crop_hf.demo_models import build_tiny_bert

    train, held_out = _split()
    folder = tmp_path_factory.mktemp("nested")
    encoder = build_tiny_bert(folder / "encoder", corpus=[" ".join(parse(t).tokens) for t in train],
                              hidden_size=32, layers=1)
    train_parser(ParserModelArguments(model_name_or_path=str(encoder), max_intent_depth=3),
                 ParserDataArguments(train_sources=["syn"], eval_split=None),
                 ParserTrainingArguments(output_dir=str(folder / "out"), learning_rate=5e-3, max_train_steps=400,
                                         per_device_train_batch_size=16, show_progress=False, seed=0),
                 datasets={"syn": datasets.DatasetDict({"train": _rows(train)})})
    return folder / "out", held_out


@pytest.mark.slow
def test_a_tiny_hierarchical_parser_learns_to_emit_nested_trees(nested_parser):
    from transformers import AutoTokenizer

    from crop_hf.modeling import JointIntentSlotModel
    from crop_hf.parsing.evaluate import evaluate_parser

    folder, held_out = nested_parser
    model = JointIntentSlotModel.from_pretrained(folder)
    assert model.config.max_intent_depth == 3 and model.hierarchical
    scores, predictions = evaluate_parser(model, AutoTokenizer.from_pretrained(folder), _rows(held_out))
    # Measured: 1.0 overall and on the 11 nested held-out trees (seed 0); an untrained decoder emits none.
    assert scores["nested"]["count"] >= 8 and scores["nested"]["exact_match"] >= 0.9, scores
    assert scores["exact_match"] >= 0.9, scores
    assert any(parse(p.parse).depth >= 6 for p in predictions)  # two intents deep, as the grammar has
    assert scores["unrepresentable"]["count"] == 0
    assert "hierarchical" in (folder / "README.md").read_text()  # the card says what the model predicts


@pytest.mark.slow
def test_one_tagger_for_every_level_learns_nested_trees(tmp_path):
    """``top_tagger="shared"`` reaches the model through train_parser, which learns the grammar with it."""
    import datasets
    from transformers import AutoTokenizer

    from crop_hf.demo_models import build_tiny_bert
    from crop_hf.modeling import JointIntentSlotModel
    from crop_hf.parsing.evaluate import evaluate_parser

    train, held_out = _split()
    encoder = build_tiny_bert(tmp_path / "encoder", corpus=[" ".join(parse(t).tokens) for t in train],
                              hidden_size=32, layers=1)
    train_parser(
        ParserModelArguments(model_name_or_path=str(encoder), max_intent_depth=3, top_tagger="shared"),
        ParserDataArguments(train_sources=["syn"], eval_split=None),
        ParserTrainingArguments(output_dir=str(tmp_path / "out"), learning_rate=5e-3, max_train_steps=800,
                                per_device_train_batch_size=16, show_progress=False, seed=0),
        datasets={"syn": datasets.DatasetDict({"train": _rows(train)})})
    model = JointIntentSlotModel.from_pretrained(tmp_path / "out")
    assert model.config.top_tagger == "shared" and not hasattr(model, "top_projection")
    assert model.slot_classifier is None and model.crf is None  # the inner tagger and CRF tag the top level
    scores, _ = evaluate_parser(model, AutoTokenizer.from_pretrained(tmp_path / "out"), _rows(held_out))
    # Measured (seed 0): 0.93 overall, 0.9 on the 10 nested held-out trees; an untrained model emits none
    assert scores["nested"]["exact_match"] >= 0.8 and scores["exact_match"] >= 0.8, scores


@pytest.mark.slow
def test_pipeline_returns_nested_slots_with_word_offsets(nested_parser):
    from transformers import pipeline

    import crop_hf  # noqa: F401

    folder, _ = nested_parser
    parser = pipeline("semantic-parsing", model=str(folder))
    words = ["remind", "me", "about", "the", "wedding", "on", "friday"]
    out, flat = parser([words, ["weather", "in", "oslo"]], batch_size=2)
    text = " ".join(words)
    assert parse(out["parse"]).depth == 4 and out["intent"] == "SET_REMINDER"
    (todo,) = out["slots"]
    assert (todo["label"], todo["intent"], todo["start"], todo["end"]) == ("TODO", "GET_EVENT", 16, len(text))
    assert todo["text"] == "the wedding on friday" == text[todo["start"]:todo["end"]]
    assert [(s["label"], s["text"], text[s["start"]:s["end"]]) for s in todo["slots"]] == [
        ("EVENT", "wedding", "wedding"), ("DATE", "friday", "friday")]
    assert set(flat) == {"intent", "slots", "parse", "score"} and set(flat["slots"][0]) == {"label", "text", "start",
                                                                                             "end"}
    single = parser(text)
    assert single["parse"] == out["parse"] and single["slots"] == out["slots"]
    assert 0.0 < single["score"] <= 1.0


def test_a_flat_model_never_emits_nested_trees_and_old_configs_load_flat(tiny_bert, tmp_path):
    from crop_hf.modeling import JointIntentSlotModel
    from crop_hf.parsing.data import encode_rows

    model = JointIntentSlotModel.from_encoder(str(tiny_bert), ["A"], ["O", "B-X", "I-X"])
    model.save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    for key in ("max_intent_depth", "span_hidden_size"):  # a checkpoint saved before these fields existed
        config.pop(key, None)
    (tmp_path / "config.json").write_text(json.dumps(config))
    old = JointIntentSlotModel.from_pretrained(tmp_path)
    assert old.config.max_intent_depth == 1 and not old.hierarchical and not hasattr(old, "nested_intent_classifier")
    with pytest.raises(ValueError, match="max_intent_depth"):
        old(input_ids=torch.tensor([[1, 2]]), word_index=torch.tensor([[0, 1]]), span_targets=torch.zeros(0, 5))
    from transformers import AutoTokenizer

    encoded = encode_rows(_rows(["[IN:A x [SL:X y ] ]"]), AutoTokenizer.from_pretrained(tiny_bert), old, 32)
    assert "span_targets" not in encoded.column_names


# ---------------------------------------------------------------- frames and hierarchical targets

_NAMES = st.sampled_from(["A", "B", "C"])
_WORDS = st.lists(st.sampled_from(["x", "y", "z"]), max_size=2)
_SOME_WORDS = st.lists(st.sampled_from(["x", "y", "z"]), min_size=1, max_size=2)


def _intent(depth: int):
    """Random intents whose slots hold words or (below ``depth``) exactly one intent."""
    slot = st.builds(lambda name, words: Tree("SL", name, words), _NAMES, _SOME_WORDS)
    if depth > 1:
        slot = st.one_of(slot, st.builds(lambda name, inner: Tree("SL", name, [inner]), _NAMES,
                                      _intent(depth - 1).filter(lambda inner: inner.tokens)))
    children = st.lists(st.one_of(_WORDS, slot.map(lambda s: [s])), max_size=4).map(lambda parts: [c for part in parts for c in part])
    return st.builds(lambda name, kids: Tree("IN", name, kids), _NAMES, children)


@settings(max_examples=200)
@given(_intent(4))
def test_trees_round_trip_through_frames_and_hierarchical_targets(tree):
    from crop_hf.parsing.data import frame_from_targets, frame_targets

    tokens, frame = to_frame(tree)
    assert str(frame.to_tree(tokens)) == str(tree)
    intents = ["A", "B", "C"]
    tags = ["O"] + [f"{p}-{n}" for n in intents for p in "BI"]
    targets = frame_targets(frame, {n: i for i, n in enumerate(intents)}, {t: i for i, t in enumerate(tags)},
                            {n: i for i, n in enumerate(intents)})
    # every slot of every level has a decision; every filled one an intent and one tag per word
    assert len(targets["span_targets"]) == sum(1 for n in tree.subtrees() if n.kind == "SL")
    assert len(targets["inner_targets"]) == sum(1 for n in tree.subtrees() if n.kind == "IN") - 1
    for (start, end, _), labels in zip(targets["inner_targets"], targets["inner_labels"], strict=True):
        assert len(labels) == end - start > 0
    back = frame_from_targets(frame.intent, frame.slot_tags, targets["inner_targets"], targets["inner_labels"],
                              intents, tags)
    assert back == frame and str(back.to_tree(tokens)) == str(tree)
    with pytest.raises(UnrepresentableParse):
        to_frame(tree, max_intent_depth=frame.depth - 1) if frame.depth > 1 else to_frame("[IN:A [SL:B ] ]")


def test_to_frame_names_what_it_cannot_represent():
    with pytest.raises(UnrepresentableParse) as error:
        to_frame("[IN:A x [SL:B [IN:C y ] z ] ]")
    assert error.value.reason == "mixed_slot"
    with pytest.raises(UnrepresentableParse) as error:
        to_frame("[IN:A x [SL:B ] ]")
    assert error.value.reason == "empty_slot"
    with pytest.raises(UnrepresentableParse) as error:
        to_frame("[IN:A [SL:B [IN:C [SL:D [IN:E y ] ] ] ] ]", max_intent_depth=2)
    assert error.value.reason == "too_deep"
    assert to_frame("[IN:A [SL:B [IN:C y ] ] ]", max_intent_depth=2)[1] == IntentFrame(
        "A", ["B-B"], {0: IntentFrame("C", ["O"])})
    with pytest.raises(ValueError, match="no slot starts"):
        IntentFrame("A", ["O", "B-B"], {0: IntentFrame("C", ["O"])}).to_tree(["x", "y"])


# ---------------------------------------------------------------- bad input: counted with file:line


def test_unrepresentable_training_trees_are_counted_with_file_and_line(tiny_bert, tmp_path, caplog):
    import datasets

    trees = ["[IN:A x [SL:B y ] ]", "[IN:A [SL:B [IN:C [SL:D [IN:E y ] ] ] ] ]", "[IN:A x [SL:B [IN:C y ] ] ]",
             "[IN:A x [SL:B ] ]", "[IN:A x [SL:B [IN:C y ] z ] ]"] * 2
    rows = {"tokens": [parse(t).tokens for t in trees], "intent": ["A"] * 10,
            "slot_tags": [["O"] * len(parse(t).tokens) for t in trees], "parse": trees,
            "source": [f"train.tsv:{i + 2}" for i in range(10)]}
    data = datasets.DatasetDict({"train": datasets.Dataset.from_dict(rows)})
    result = train_parser(ParserModelArguments(model_name_or_path=str(tiny_bert), max_intent_depth=2),
                          ParserDataArguments(train_sources=["bad"], eval_split=None),
                          ParserTrainingArguments(output_dir=str(tmp_path), max_train_steps=2,
                                                  per_device_train_batch_size=2, show_progress=False),
                          datasets={"bad": data})
    assert result.completed_steps == 2
    results = json.loads((tmp_path / "all_results.json").read_text())
    assert results["skipped_trees"] == {"bad": {"too_deep": 2, "empty_slot": 2, "mixed_slot": 2}}
    assert results["train_utterances_per_epoch"] == 4
    assert "train.tsv:3: expected a tree the model can represent" in caplog.text
    assert "train.tsv:5:" in caplog.text and "train.tsv:6:" in caplog.text

    from transformers import AutoTokenizer

    from crop_hf.modeling import JointIntentSlotModel
    from crop_hf.parsing.evaluate import evaluate_parser

    model = JointIntentSlotModel.from_pretrained(tmp_path)
    without_source = datasets.Dataset.from_dict({k: v for k, v in rows.items() if k != "source"})
    scores, _ = evaluate_parser(model, AutoTokenizer.from_pretrained(tmp_path), without_source.select(range(5)),
                                where="bad (validation)")
    assert scores["unrepresentable"]["count"] == 3 and scores["count"] == 5
    assert scores["unrepresentable"]["examples"][0].startswith("bad (validation):2: ")


def test_row_frames_read_flat_rows_and_count_each_bad_tree_with_where_it_came_from():
    import datasets

    from crop_hf.data.readers import SkippedRecords
    from crop_hf.parsing.data import row_frames

    flat = datasets.Dataset.from_dict({"tokens": [["weather", "in", "pune"]], "intent": ["GET_WEATHER"],
                                       "slot_tags": [["O", "O", "B-LOCATION"]]})
    assert row_frames(flat, 2) == [IntentFrame("GET_WEATHER", ["O", "O", "B-LOCATION"])]  # no parse column
    trees = ["[IN:A x [SL:B y ] ]", "[IN:A z ]", "[IN:A x [SL:B", "[IN:A x [SL:B ] ]", "[IN:A x [SL:B"]
    rows = {"tokens": [["x", "y"], ["x"], ["x"], ["x"], ["x"]], "parse": trees,
            "source": ["C:/data/train.tsv:7", "C:/data/train.tsv:8", "C:/data/train.tsv:9", "hub:toy", ""]}
    skipped = SkippedRecords()
    frames = row_frames(datasets.Dataset.from_dict(rows), 2, where="toy (train)", skipped=skipped)
    assert frames == [IntentFrame("A", ["O", "B-B"])] + [None] * 4
    assert dict(skipped.counts) == {"tokens": 1, "parse": 2, "empty_slot": 1}
    assert skipped.examples == [
        # the line number after the last colon (a Windows path keeps its own)
        "C:/data/train.tsv:8: expected a tree the model can represent, found \"the parse's words differ from the "
        "row's tokens: [IN:A z ]\"",
        "C:/data/train.tsv:9: expected a well-formed bracket parse, found \"'[SL:B' is never closed at character "
        "8:\\n  [IN:A x [SL:B\\n          ^\"",
        "hub:toy:0: expected a tree the model can represent, found \"slot 'SL:B' is empty in [IN:A x [SL:B ] ]\"",
        "toy (train):5: expected a well-formed bracket parse, found \"'[SL:B' is never closed at character 8:\\n"
        "  [IN:A x [SL:B\\n          ^\""]  # a source without a line number: 0; none at all: the row's number
    del rows["source"]
    skipped = SkippedRecords()
    assert row_frames(datasets.Dataset.from_dict(rows), 2, skipped=skipped)[1:] == [None] * 4
    assert skipped.examples[0].startswith("rows:2: ") and skipped.total == 4
    assert row_frames(datasets.Dataset.from_dict(rows), 2)[1:] == [None] * 4  # nothing to count them in: still no error


def test_evaluate_parser_command_reports_nested_gold_trees(tiny_bert, tmp_path, capsys, monkeypatch):
    import datasets

    from crop_hf.commands import evaluate_parser as command
    from crop_hf.modeling import JointIntentSlotModel

    model = JointIntentSlotModel.from_encoder(str(tiny_bert), ["A", "C"], ["O", "B-B", "I-B"])
    model.save_pretrained(tmp_path / "m")
    from transformers import AutoTokenizer

    AutoTokenizer.from_pretrained(tiny_bert).save_pretrained(tmp_path / "m")
    trees = ["[IN:A x [SL:B y ] ]", "[IN:A x [SL:B [IN:C y ] ] ]", "[IN:A x [SL:B [IN:C y ] ] ]"]
    rows = _rows(trees)
    monkeypatch.setattr("crop_hf.data.sources.load_spec", lambda spec: datasets.DatasetDict({"validation": rows}))
    assert command.run(command.EvaluateParserConfig(model=str(tmp_path / "m"), sources=["toy"])) == 0
    out = capsys.readouterr().out
    assert "nested gold trees (intents inside slots): 2 of 3; exact match on them 0.0% (model intent depth 1)" in out
    assert "cannot represent (scored as wrong): 2 (2 too_deep); first: toy (validation):2: " in out


# ---------------------------------------------------------------- honest model selection


def test_dev_split_is_seeded_stratified_and_disjoint_from_train():
    import datasets

    from crop_hf.parsing.data import dev_split

    intents = ["A"] * 50 + ["B"] * 30 + ["C"] * 20 + ["D"]
    rows = datasets.Dataset.from_dict({"intent": intents})
    train, dev = dev_split(rows, 0.1, seed=3)
    assert set(train).isdisjoint(dev) and sorted(train + dev) == list(range(len(intents)))
    counts = {i: [intents[d] for d in dev].count(i) for i in "ABCD"}
    assert counts == {"A": 5, "B": 3, "C": 2, "D": 0}  # each intent its share; a lone intent stays in train
    assert dev_split(rows, 0.1, seed=3) == (train, dev)
    assert dev_split(rows, 0.1, seed=4)[1] != dev
    assert len(dev_split(rows, 20, seed=3)[1]) == 20  # a number of rows
    with pytest.raises(ValueError, match="positive"):
        dev_split(rows, 0, seed=3)


def test_dev_split_sizes_at_their_edges():
    import datasets

    from crop_hf.parsing.data import dev_split

    intents = ["A"] * 4 + ["B"] * 2 + ["C"]
    rows = datasets.Dataset.from_dict({"intent": intents})
    dev = [intents[i] for i in dev_split(rows, 0.6, seed=0)[1]]
    # A: round(2.4) = 2; B: round(1.2) = 1 of its 2; C: round(0.6) = 1, but an intent's last row stays in train
    assert (dev.count("A"), dev.count("B"), dev.count("C")) == (2, 1, 0)
    assert len(dev_split(rows, 1, seed=0)[1]) == 1  # 1 is one row, not the fraction 1.0
    assert dev_split(datasets.Dataset.from_dict({"intent": []}), 0.5, seed=0) == ([], [])


def test_label_sets_read_the_trees_of_every_part_past_unreadable_ones():
    import datasets

    from crop_hf.parsing.data import label_sets

    flat = datasets.Dataset.from_dict({"tokens": [["hi"]], "intent": ["GREET"], "slot_tags": [["O"]]})
    trees = datasets.Dataset.from_dict({
        "tokens": [["x"], ["x", "y"]], "intent": ["A", "A"], "slot_tags": [["O"], ["O", "B-B"]],
        "parse": ["[IN:A x [SL:B", "[IN:A x [SL:B [IN:C [SL:D y ] ] ] ]"]})  # the first one is cut off
    intents, tags = label_sets([flat, trees], nested=True)
    assert intents == ["A", "C", "GREET"] and tags == ["O", "B-B", "I-B", "B-D", "I-D"]
    assert label_sets([flat, trees]) == (["A", "GREET"], ["O", "B-B", "I-B"])  # flat: top level only


def test_label_sets_keep_a_trained_models_labels_first_and_sources_name_their_side():
    from types import SimpleNamespace

    import datasets

    from crop_hf.data.sources import split_side
    from crop_hf.parsing.data import label_sets

    rows = datasets.Dataset.from_dict({"tokens": [["hi", "bob", "now"]], "intent": ["GREET"],
                                       "slot_tags": [["O", "B-NAME", "B-TIME"]]})
    trained = SimpleNamespace(intent_labels=["WAVE"], slot_labels=["O", "B-TIME", "I-TIME"])
    assert label_sets([rows], trained) == (["WAVE", "GREET"], ["O", "B-TIME", "I-TIME", "B-NAME", "I-NAME"])
    odd = datasets.Dataset.from_dict({"tokens": [["w"] * 7], "intent": ["GREET"],
                                      "slot_tags": [["B-", "I-", "S-NAME", "E-NAME", "X", "Y", "B-OK"]]})
    with pytest.raises(ValueError) as error:
        label_sets([odd])
    assert str(error.value) == ("slot tags must be IOB2 (O, B-NAME, I-NAME); found ['B-', 'E-NAME', 'I-', 'S-NAME', "
                                "'X'] (convert BIOES or other schemes with crop_hf.labels first)")
    assert split_side("hinglish_top#en") == ("hinglish_top", "en") and split_side("cstop") == ("cstop", None)


def test_frame_from_targets_refuses_targets_without_their_labels():
    from crop_hf.parsing.data import frame_from_targets

    with pytest.raises(ValueError):
        frame_from_targets("A", ["O", "B-B"], [[1, 2, 1]], [], ["A", "C"], ["O", "B-B", "I-B"])


def _hand_model(max_intent_depth: int = 2, intents=("A", "B", "C", "D"), top_tagger: str = "shared",
                slots=("L",), use_crf: bool = True):
    """A one-layer hierarchical parser without dropout over 8-wide states (its weights left to the caller)."""
    from transformers import BertConfig

    from crop_hf.modeling import JointIntentSlotModel, JointParserConfig

    encoder = BertConfig(hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8,
                         vocab_size=20).to_dict()
    torch.manual_seed(0)
    tags = ["O"] + [f"{prefix}-{name}" for name in slots for prefix in "BI"]
    config = JointParserConfig(encoder=encoder, intent_labels=list(intents), slot_labels=tags, use_crf=use_crf,
                               max_intent_depth=max_intent_depth, top_tagger=top_tagger, classifier_dropout=0.0)
    return JointIntentSlotModel(config).eval()


def test_nested_loss_leaves_out_spans_past_the_kept_words_and_needs_labels_for_inner_targets():
    model = _hand_model()
    word_hidden = torch.randn(2, 4, 8)
    word_mask = torch.tensor([[True, True, True, False], [True, True, True, True]])  # row 0 was cut to 3 words
    spans = torch.tensor([[0, 1, 3, 0, 2], [1, 0, 4, 0, 0]])  # [row, start, end, slot name, 0 or 1 + intent]
    inner = torch.tensor([[0, 1, 3, 1]])  # [row, start, end, intent]
    labels = torch.tensor([[1, 2]])
    # a span and an inner intent reaching past row 0's 3 kept words (slot name and intent 0, under 3)
    past_span, past_inner = torch.tensor([[0, 2, 4, 0, 1]]), torch.tensor([[0, 2, 4, 0]])
    loss = model.nested_loss(word_hidden, word_mask, spans, inner, labels)
    with_past = model.nested_loss(word_hidden, word_mask, torch.cat([spans, past_span]), torch.cat([inner, past_inner]),
                                  torch.tensor([[1, 2], [1, 2]]))
    assert torch.allclose(loss, with_past)
    spans_only = model.nested_loss(word_hidden, word_mask, spans, None, None)
    inner_only = model.nested_loss(word_hidden, word_mask, None, inner, labels)
    assert 0 < spans_only < loss and 0 < inner_only < loss
    assert torch.allclose(spans_only + inner_only, loss)
    with torch.no_grad():  # the inner tags are scored by the inner tagger's CRF
        model.inner_crf.transitions[1, 2] += 2.0
    assert not torch.allclose(model.nested_loss(word_hidden, word_mask, None, inner, labels), inner_only)
    assert torch.allclose(model.nested_loss(word_hidden, word_mask, spans, None, None), spans_only)
    empty = torch.zeros(0, 5, dtype=torch.long)
    assert model.nested_loss(word_hidden, word_mask, empty, None, None).item() == 0.0
    with pytest.raises(ValueError, match="inner_targets need inner_labels"):
        model.nested_loss(word_hidden, word_mask, spans, inner, None)


def _set_shared_tagger(model, tag_scores_by_intent: dict[int, list[float]], intent_bias: list[float]) -> None:
    """Tag scores that depend on the intent alone, and intent scores that depend on nothing."""
    with torch.no_grad():
        model.inner_projection.weight.zero_(), model.inner_projection.bias.zero_()
        model.inner_slot_classifier.bias.zero_()
        model.inner_intent_embeddings.weight.zero_()
        model.inner_slot_classifier.weight.zero_()
        for intent, scores in tag_scores_by_intent.items():
            model.inner_intent_embeddings.weight[intent, intent].fill_(1.0)
            model.inner_slot_classifier.weight[:, intent] = torch.tensor(scores)
        model.intent_classifier.weight.zero_()
        model.intent_classifier.bias.copy_(torch.tensor(intent_bias))
        for parameter in (model.inner_crf.transitions, model.inner_crf.start_transitions,
                          model.inner_crf.end_transitions):
            parameter.zero_()


def _decode_one(model, words: int):
    (parsed,) = model.decode(_outputs(model, [words]))
    return parsed


def test_decoding_weighs_the_three_likeliest_intents_only():
    model = _hand_model()
    # D, the least likely intent, is the only one under which the word is surely an L; A-C leave it open
    _set_shared_tagger(model, {3: [0.0, 8.0, 0.0]}, [0.3, 0.2, 0.1, 0.0])
    parsed = _decode_one(model, 1)
    assert parsed.intent_id == 0  # D is outside the three candidates, however sure its tags
    _set_shared_tagger(model, {2: [0.0, 8.0, 0.0]}, [0.3, 0.2, 0.1, 0.0])
    assert _decode_one(model, 1).intent_id == 2  # C is a candidate: its sure tags win


def test_top_level_decoding_of_the_shared_tagger_follows_its_crf_transitions():
    model = _hand_model()
    _set_shared_tagger(model, {}, [1.0, 0.0, 0.0, 0.0])  # every tag equally likely at every word
    with torch.no_grad():  # only the transitions choose: start with B-L, then I-L
        model.inner_crf.start_transitions[1] = 3.0
        model.inner_crf.transitions[1, 2] = 3.0
    assert _decode_one(model, 2).slot_ids == [1, 2]


@pytest.mark.parametrize("depth", [2, 3])
def test_decoding_nests_no_deeper_than_max_intent_depth_and_multiplies_every_decision(depth):
    model = _hand_model(max_intent_depth=depth)
    _set_shared_tagger(model, {}, [1.0, 0.0, 0.0, 0.0])  # tag scores all 0: the CRF's transitions choose
    with torch.no_grad():  # B-L then I-L at every level; every slot holds intent B, with a probability under 1
        model.inner_crf.start_transitions[1] = 2.0
        model.inner_crf.transitions[1, 2] = 2.0
        model.nested_intent_classifier.weight.zero_()
        model.nested_intent_classifier.bias.copy_(torch.tensor([0.0, 0.0, 2.0, 0.0, 0.0]))
    parsed = _decode_one(model, 2)
    levels, nodes = 1, parsed.nested
    while nodes:
        assert [(n.start, n.end, n.intent_id, n.slot_ids) for n in nodes] == [(0, 2, 1, [1, 2])]
        levels, nodes = levels + 1, nodes[0].nested
    assert (parsed.intent_id, parsed.slot_ids, levels) == (0, [1, 2], depth)
    # every level below the top: the decision "holds B" times B's tags
    decision = torch.tensor([0.0, 0.0, 2.0, 0.0, 0.0]).softmax(-1)[2].item()
    tags = model.inner_tagger.decode(torch.zeros(1, 2, 3), torch.ones(1, 2, dtype=torch.bool))[1].exp().item()
    assert 0.3 < decision < 0.9 and 0.3 < tags < 0.95
    assert parsed.slot_probability == pytest.approx(tags)
    assert parsed.nested_probability == pytest.approx((decision * tags) ** (depth - 1))


def test_span_scores_read_every_word_of_a_span_up_to_the_last_one():
    model = _hand_model()
    word_hidden = torch.randn(1, 3, 8)
    span = torch.tensor([[0, 1, 3, 0]])  # the batch's last two words
    before = model.span_logits(word_hidden, span)
    for word in (1, 2):
        changed = word_hidden.clone()
        changed[0, word] += 1.0
        assert not torch.allclose(model.span_logits(changed, span), before)
    changed = word_hidden.clone()
    changed[0, 0] += 1.0  # outside the span
    assert torch.allclose(model.span_logits(changed, span), before)
    # the words' mean, first and last: a word said twice scores as the word once
    twice = torch.randn(8).expand(1, 2, 8)
    assert torch.allclose(model.span_logits(twice, torch.tensor([[0, 0, 2, 0]])),
                          model.span_logits(twice, torch.tensor([[0, 0, 1, 0]])), atol=1e-6)


@pytest.mark.parametrize("top_tagger", ["words", "intent", "shared"])
def test_the_slot_loss_is_the_top_crfs_mean_negative_log_likelihood(top_tagger):
    model = _hand_model(intents=("A", "B"), top_tagger=top_tagger)
    top = model.inner_crf if top_tagger == "shared" else model.crf
    with torch.no_grad():
        for crf in (model.crf, model.inner_crf):
            if crf is not None:
                crf.transitions.normal_(0, 1.0)
    emissions = torch.randn(2, 3, 3)
    mask = torch.tensor([[True, True, True], [True, True, False]])
    labels = torch.tensor([[1, 2, 0], [0, 1, -100]])
    expected = -top.log_likelihood(emissions, labels, mask).sum() / 2
    assert torch.allclose(model.slot_loss(emissions, mask, labels), expected)  # by default: the top level's CRF
    inner = -model.inner_crf.log_likelihood(emissions, labels, mask).sum() / 2
    assert torch.allclose(model.slot_loss(emissions, mask, labels, model.inner_crf), inner)
    # the nested levels' loss is the inner CRF's, whichever tagger the top level has
    word_hidden, spans, span_labels = torch.randn(1, 3, 8), torch.tensor([[0, 0, 2, 1]]), torch.tensor([[1, 2]])
    span_emissions, span_mask = model.inner_emissions(word_hidden, spans)
    expected = -model.inner_crf.log_likelihood(span_emissions, span_labels, span_mask).sum()
    loss = model.nested_loss(word_hidden, torch.ones(1, 3, dtype=torch.bool), None, spans, span_labels)
    assert torch.allclose(loss, model.config.slot_loss_weight * expected)
    # labels narrower than the words: the words past them must be padding
    two_words = torch.tensor([[True, True, False]] * 2)
    assert torch.allclose(model.slot_loss(emissions, two_words, labels[:, :2]),
                          model.slot_loss(emissions, two_words, torch.tensor([[1, 2, 0], [0, 1, 0]])))
    with pytest.raises(ValueError, match="label every word"):
        model.slot_loss(emissions, mask, torch.tensor([[1, -100, 0], [0, 1, -100]]))


def test_inner_levels_use_the_inner_taggers_layers_when_the_top_has_its_own():
    model = _hand_model(intents=("A", "B"), top_tagger="intent")
    with torch.no_grad():
        model.inner_slot_classifier.weight.zero_(), model.inner_slot_classifier.bias.zero_()
        model.top_slot_classifier.bias.fill_(1.0)
    word_hidden = torch.randn(1, 3, 8)
    emissions, mask = model.inner_emissions(word_hidden, torch.tensor([[0, 0, 2, 1]]))
    assert mask.tolist() == [[True, True]] and not emissions.any()
    assert model.top_emissions(word_hidden, torch.tensor([1])).abs().sum() > 0


def test_the_slot_name_enters_the_nested_intent_decision():
    model = _hand_model()
    with torch.no_grad():  # words say nothing; slot name 0 points at "holds intent B" (class 2)
        model.span_projection.weight.zero_(), model.span_projection.bias.zero_()
        model.slot_name_embeddings.weight.zero_()
        model.slot_name_embeddings.weight[0, 0] = 3.0
        model.nested_intent_classifier.weight.zero_(), model.nested_intent_classifier.bias.zero_()
        model.nested_intent_classifier.weight[2, 0] = 1.0
    logits = model.span_logits(torch.randn(1, 2, 8), torch.tensor([[0, 0, 2, 0]]))
    assert logits.argmax(-1).item() == 2 and logits[0, 2] > 2.5


def test_training_selects_on_the_dev_split_and_refuses_to_select_on_a_reported_one(tiny_bert, tmp_path):
    import datasets

    from crop_hf.modeling import JointIntentSlotModel

    train, held_out = _split()
    data = datasets.DatasetDict({"train": _rows(train), "validation": _rows(held_out)})
    model_args = ParserModelArguments(model_name_or_path=str(tiny_bert), max_intent_depth=3)
    with pytest.raises(ValueError, match="also reported"):
        train_parser(model_args, ParserDataArguments(train_sources=["syn"], dev_split="validation"),
                     ParserTrainingArguments(output_dir=str(tmp_path / "no"), max_train_steps=1),
                     datasets={"syn": data})
    result = train_parser(model_args, ParserDataArguments(train_sources=["syn"], dev_size=0.25),
                          ParserTrainingArguments(output_dir=str(tmp_path / "out"), learning_rate=5e-3,
                                                  max_train_steps=60, eval_steps=20, per_device_train_batch_size=8,
                                                  show_progress=False, seed=0),
                          datasets={"syn": data})
    results = json.loads((tmp_path / "out" / "all_results.json").read_text())
    dev = [point["scores"]["dev"]["syn"]["exact_match"] for point in result.history]
    assert [point["step"] for point in result.history] == [20, 40, 60]
    assert results["dev"]["rows"] == {"syn": 11}  # a quarter of each intent's training rows, rounded
    best = result.history[dev.index(max(dev))]["step"]
    assert results["dev"]["selected_step"] == best
    assert set(results["scores"]) == {"validation"}  # reported, never selected on
    # the saved model is the selected point's: scoring it on the dev rows gives that point's score
    from transformers import AutoTokenizer

    from crop_hf.parsing.data import dev_split
    from crop_hf.parsing.evaluate import evaluate_parser

    _, dev_rows = dev_split(data["train"], 0.25, seed=0)
    saved = JointIntentSlotModel.from_pretrained(tmp_path / "out")
    scores, _ = evaluate_parser(saved, AutoTokenizer.from_pretrained(tmp_path / "out"), data["train"].select(dev_rows))
    assert scores["exact_match"] == pytest.approx(max(dev))


def test_staged_growth_from_a_flat_parser_keeps_its_weights(tiny_bert):
    from crop_hf.modeling import JointIntentSlotModel
    from crop_hf.parsing.train import _extend_labels

    flat = JointIntentSlotModel.from_encoder(str(tiny_bert), ["B"], ["O", "B-Y", "I-Y"])
    grown = _extend_labels(flat, ["B", "A"], ["O", "B-Y", "I-Y", "B-X", "I-X"], max_intent_depth=3)
    assert grown.hierarchical and grown.config.max_intent_depth == 3
    assert torch.equal(grown.intent_classifier.weight[0], flat.intent_classifier.weight[0])
    assert torch.equal(grown.crf.transitions[:3, :3], flat.crf.transitions)
    again = _extend_labels(grown, ["B", "A", "C"], ["O", "B-Y", "I-Y", "B-X", "I-X"])
    assert torch.equal(again.nested_intent_classifier.weight[:3], grown.nested_intent_classifier.weight)
    assert torch.equal(again.inner_intent_embeddings.weight[:2], grown.inner_intent_embeddings.weight)
    assert torch.equal(again.slot_name_embeddings.weight, grown.slot_name_embeddings.weight)


def test_growth_keeps_what_an_intent_conditioned_top_tagger_learned(tiny_bert):
    from crop_hf.modeling import JointIntentSlotModel
    from crop_hf.parsing.train import _extend_labels

    old = JointIntentSlotModel.from_encoder(str(tiny_bert), ["B"], ["O", "B-Y", "I-Y"], top_tagger="intent")
    grown = _extend_labels(old, ["B", "A"], ["O", "B-Y", "I-Y", "B-X", "I-X"])
    assert grown.config.top_tagger == "intent" and grown.slot_classifier is None
    assert torch.equal(grown.top_intent_embeddings.weight[0], old.top_intent_embeddings.weight[0])
    assert torch.equal(grown.top_slot_classifier.weight[:3], old.top_slot_classifier.weight)
    assert torch.equal(grown.top_projection.weight, old.top_projection.weight)
    assert torch.equal(grown.crf.transitions[:3, :3], old.crf.transitions)


def _every_tree(words: int, offset: int, intents: int, slots: int, levels: int) -> list[tuple[list[int], list]]:
    """Every (tag ids, nested intents) of one intent's words ``offset:offset+words``, nesting ``levels`` more deep.

    Tag ids as ``_hand_model`` numbers them: O 0, then B-/I- of each slot name.
    """
    from crop_hf.modeling import NestedParse
    from crop_hf.modeling.search import _tag_spans

    prefixes = ["O"] + ["B", "I"] * slots
    sequences = [[]]
    for _ in range(words):
        sequences = [[*seq, tag] for seq in sequences for tag in range(1 + 2 * slots)
                     if prefixes[tag] != "I" or (seq and seq[-1] in (tag - 1, tag))]
    trees = []
    for tags in sequences:
        choices = [[]]  # the nested intents of this tagging: each slot holds words or one intent's tree
        for start, end, _ in (_tag_spans(tags, prefixes) if levels else []):
            fillers = [None] + [NestedParse(offset + start, offset + end, intent, inner, nested)
                                for intent in range(intents)
                                for inner, nested in _every_tree(end - start, offset + start, intents, slots, levels - 1)]
            choices = [chosen + ([] if filler is None else [filler]) for chosen in choices for filler in fillers]
        trees += [(tags, chosen) for chosen in choices]
    return trees


def _random_parser(depth: int, top_tagger: str, use_crf: bool = True, intents=("A", "B"), slots=("L", "M")):
    model = _hand_model(max_intent_depth=depth, intents=intents, top_tagger=top_tagger, slots=slots, use_crf=use_crf)
    generator = torch.Generator().manual_seed(depth)
    with torch.no_grad():  # far from the near-uniform start, so that every term counts
        for parameter in model.parameters():
            parameter.add_(0.3 * torch.randn(parameter.shape, generator=generator))
    return model


def _outputs(model, lengths: list[int]):
    longest = max(lengths)
    ids = [[1] + [3 + (7 * row + word) % 15 for word in range(n)] + [2] + [0] * (longest - n)
           for row, n in enumerate(lengths)]
    index = [[-1, *range(n), -1] + [-1] * (longest - n) for n in lengths]
    mask = [[1] * (n + 2) + [0] * (longest - n) for n in lengths]
    return model(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask), word_index=torch.tensor(index))


@pytest.mark.parametrize("top_tagger,depth,words", [("shared", 2, 3), ("intent", 2, 3), ("words", 2, 3),
                                                     ("shared", 3, 2), ("words", 1, 3)])
def test_the_scores_of_every_tree_the_model_can_emit_sum_to_one(top_tagger, depth, words):
    from crop_hf.modeling import ParsedUtterance

    model = _random_parser(depth, top_tagger)
    outputs = _outputs(model, [words])
    trees = [ParsedUtterance(intent, 1.0, tags, 1.0, nested)
             for intent in range(2) for tags, nested in _every_tree(words, 0, 2, 2, depth - 1)]
    assert len(trees) > 80
    many = type(outputs)(**{key: value.repeat_interleave(len(trees), 0) if key != "loss" else value
                            for key, value in outputs.items()})
    log_probabilities = model.score(many, trees)
    # a distribution over the trees: intent, tags (a CRF over valid sequences), decisions, inner tags
    assert log_probabilities.exp().sum().item() == pytest.approx(1.0, abs=1e-4)
    assert log_probabilities.max() < -0.5  # not one tree taking it all: every factor was random


@pytest.mark.parametrize("top_tagger,depth,use_crf", [("shared", 4, True), ("intent", 3, True), ("words", 2, True),
                                                      ("words", 1, True), ("shared", 3, False), ("words", 1, False)])
def test_scoring_what_the_decoder_returns_gives_its_probability(top_tagger, depth, use_crf):
    import math

    model = _random_parser(depth, top_tagger, use_crf, intents=("A", "B", "C", "D"))
    with torch.no_grad():  # slots that mostly hold an intent, so that decoding nests to the depth
        if depth > 1:
            model.nested_intent_classifier.bias.copy_(torch.tensor([-3.0, 2.0, 1.0, 0.0, 0.0]))
    outputs = _outputs(model, [6, 3, 1, 5])  # padded rows of different lengths
    decoded = model.decode(outputs)
    scores = model.score(outputs, decoded)
    expected = [math.log(p.intent_probability * p.slot_probability * p.nested_probability) for p in decoded]
    assert scores.tolist() == pytest.approx(expected, abs=1e-4)
    if depth > 2:
        assert any(node.nested for parsed in decoded for node in parsed.nested)  # two levels were scored
    # another tree of the same row scores differently: the score reads the tags it is given
    changed = decoded[0]
    changed.slot_ids = [0] * len(changed.slot_ids)
    changed.nested = []
    assert model.score(outputs, decoded)[0].item() != pytest.approx(expected[0], abs=1e-4)


def test_scoring_refuses_parses_that_do_not_fit_their_rows_and_gives_too_deep_ones_no_chance():
    from crop_hf.modeling import NestedParse, ParsedUtterance

    model = _random_parser(2, "shared")
    outputs = _outputs(model, [3])
    deep = ParsedUtterance(0, 1.0, [1, 2, 0], 1.0, [NestedParse(0, 2, 1, [1, 0], [NestedParse(0, 1, 0, [0])])])
    assert model.score(outputs, [deep]).item() == float("-inf")
    flat = _random_parser(1, "words")
    nested = ParsedUtterance(0, 1.0, [1, 2, 0], 1.0, [NestedParse(0, 2, 1, [1, 0])])
    assert flat.score(_outputs(flat, [3]), [nested]).item() == float("-inf")
    assert math.isfinite(model.score(outputs, [nested]).item())
    with pytest.raises(ValueError, match="parse 0 has 2 tags for the row's 3 words"):
        model.score(outputs, [ParsedUtterance(0, 1.0, [1, 2], 1.0)])
    with pytest.raises(ValueError, match="nested at words 1:3 does not fill one of its level's slots"):
        model.score(outputs, [ParsedUtterance(0, 1.0, [1, 2, 0], 1.0, [NestedParse(1, 3, 0, [0, 0])])])
    with pytest.raises(ValueError, match="nested at words 1:3 has 1 tags for 2 words"):
        model.score(outputs, [ParsedUtterance(0, 1.0, [0, 1, 2], 1.0, [NestedParse(1, 3, 0, [0])])])
    # a fault one level down names its parse too
    deeper = _random_parser(3, "shared")
    two = _outputs(deeper, [3, 3])
    fine = ParsedUtterance(0, 1.0, [0, 0, 0], 1.0)
    with pytest.raises(ValueError, match="parse 1: the intent nested at words 2:3 does not fill"):
        deeper.score(two, [fine, ParsedUtterance(0, 1.0, [1, 2, 2], 1.0, [NestedParse(0, 3, 1, [1, 0, 0],
                                                                                     [NestedParse(2, 3, 0, [0])])])])
    with pytest.raises(ValueError, match="one parse per row"):
        model.score(outputs, [nested, nested])


@pytest.mark.slow
def test_a_trained_parser_scores_its_trees_as_it_decoded_them_and_gold_ones_above_corruptions(nested_parser):
    from transformers import AutoTokenizer

    from crop_hf.modeling import JointIntentSlotModel
    from crop_hf.parsing.predict import predict_parses, score_parses

    folder, held_out = nested_parser
    model, tokenizer = JointIntentSlotModel.from_pretrained(folder), AutoTokenizer.from_pretrained(folder)
    nested = [t for t in held_out if parse(t).depth > 2]
    predictions = predict_parses(model, tokenizer, [parse(t).tokens for t in nested])
    # its own trees score as it decoded them (batches of rows of different lengths)
    own = score_parses(model, tokenizer, [p.parse for p in predictions], batch_size=3)
    assert own == pytest.approx([math.log(p.score) for p in predictions], abs=1e-4)
    learned = [t for t, p in zip(nested, predictions, strict=True) if p.parse == str(parse(t))]
    assert len(learned) >= 8  # most of them (the test above)
    gold = score_parses(model, tokenizer, learned)
    # the same words under a wrong tree: the nested intents' slots holding the words alone, or the inner
    # intents swapped
    swapped = [t.replace("IN:GET_EVENT", "IN:SWAP").replace("IN:GET_LOCATION", "IN:GET_EVENT")
               .replace("IN:SWAP", "IN:GET_LOCATION") for t in learned]
    for corrupted in ([_flat_tree(t) for t in learned], swapped):
        worse = score_parses(model, tokenizer, corrupted)
        assert all(w < g - 1.0 for w, g in zip(worse, gold, strict=True)), (worse, gold)


def _flat_tree(text: str) -> str:
    """The tree with every nested intent's brackets taken out: its slots hold the words alone."""
    from crop_hf.parsing.predict import to_parse
    from crop_hf.seqlogical import flatten_top_level

    flat = flatten_top_level(text)[0]
    return to_parse(flat.tokens, flat.intent, flat.slot_tags)


def test_score_parses_gives_trees_the_model_cannot_emit_no_chance_and_names_unreadable_ones(tiny_bert):
    from transformers import AutoTokenizer

    from crop_hf.modeling import JointIntentSlotModel, NestedParse, ParsedUtterance
    from crop_hf.parsing.predict import collate, encode_words, score_parses

    model = JointIntentSlotModel.from_encoder(str(tiny_bert), ["A", "B"], ["O", "B-L", "I-L"], max_intent_depth=2,
                                              top_tagger="shared")
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    fine = "[IN:A go to [SL:L [IN:B the [SL:L park ] ] ] now ]"
    scores = score_parses(model, tokenizer, [
        fine,
        "[IN:C go ]",  # an intent it does not know
        "[IN:A go [SL:X park ] ]",  # a slot it does not know
        "[IN:A go to [SL:L [IN:B the [SL:L [IN:A park ] ] ] ] ]",  # three levels for a model of two
        "[IN:A go [SL:L ] now ]",  # a slot without words
        "[IN:A go to the [SL:L park ] ]",
    ])
    assert math.isfinite(scores[0]) and math.isfinite(scores[5]) and scores[0] != scores[5]
    assert scores[1:5] == [float("-inf")] * 4
    # words past max_length sub-words are tagged O by decoding: a slot there cannot be emitted, an O word can
    cut = score_parses(model, tokenizer, ["[IN:A go to the [SL:L park ] ]", "[IN:A go to [SL:L the ] park ]"],
                       max_length=8)  # [CLS] g ##o t ##o t ##he [SEP]: "park" is cut
    assert cut[0] == float("-inf") and math.isfinite(cut[1])
    with pytest.raises(ValueError, match="parse 1 cannot be read"):
        score_parses(model, tokenizer, [fine, "[IN:A go [SL:L park ]"])
    # four levels: each nested intent placed at its words in the whole utterance, as the decoder places them
    deep = JointIntentSlotModel.from_encoder(str(tiny_bert), ["A", "B"], ["O", "B-L", "I-L"], max_intent_depth=4,
                                             top_tagger="shared")
    four = "[IN:A go [SL:L [IN:B to [SL:L [IN:A the [SL:L [IN:B big park ] ] ] ] ] ] ]"
    (expected,) = score_parses(deep, tokenizer, [four])

    encoded = encode_words(tokenizer, [["go", "to", "the", "big", "park"]], 128)
    outputs = deep(**collate([{k: v[0] for k, v in encoded.items()}], tokenizer.pad_token_id))
    inner = NestedParse(3, 5, 1, [0, 0])
    tree = ParsedUtterance(0, 1.0, [0, 1, 2, 2, 2], 1.0,
                           [NestedParse(1, 5, 1, [0, 1, 2, 2], [NestedParse(2, 5, 0, [0, 1, 2], [inner])])])
    assert math.isfinite(expected) and expected == pytest.approx(deep.score(outputs, [tree]).item(), abs=1e-5)


def test_without_a_crf_a_tag_sequence_scores_the_product_of_its_words_tag_probabilities():
    from crop_hf.modeling import ParsedUtterance

    model = _random_parser(1, "words", use_crf=False)
    outputs = _outputs(model, [4, 2])
    per_word = outputs.slot_emissions.softmax(-1)  # (rows, words, tags): each word's own distribution
    tags = [[1, 2, 0, 3], [3, 4]]  # B-L I-L O B-M, and B-M I-M
    intents = outputs.intent_logits.log_softmax(-1)[:, 0]
    expected = [intents[row] + sum(per_word[row, word, tag].log() for word, tag in enumerate(path))
                for row, path in enumerate(tags)]
    scores = model.score(outputs, [ParsedUtterance(0, 1.0, path, 1.0) for path in tags])
    assert scores.tolist() == pytest.approx([float(e) for e in expected], abs=1e-5)
    # a move IOB2 forbids costs the decoder's penalty
    invalid = model.score(outputs, [ParsedUtterance(0, 1.0, [2, 2, 0, 3], 1.0), ParsedUtterance(0, 1.0, [3, 4], 1.0)])
    assert invalid[0] < -1e3 and invalid[1] == pytest.approx(scores[1].item(), abs=1e-5)
