"""``pipeline("semantic-parsing")`` around the model: words and offsets, slot dicts of nested frames, the
call's options, exactly (the model's predictions replaced by fixed ones; tests/test_parser_model runs it
with a real model)."""

from __future__ import annotations

import pytest
import torch

from crop_hf.parsing import pipeline as semantic
from crop_hf.parsing.predict import ParserPrediction
from crop_hf.seqlogical import IntentFrame

INTENTS = ["GET_WEATHER", "SET_TIMER"]
TAGS = ["O", "B-LOCATION", "I-LOCATION"]


def test_words_of_a_string_keep_their_character_offsets():
    text = "  weather\tin  New York "
    assert semantic._words(text) == (text, ["weather", "in", "New", "York"], [(2, 9), (10, 12), (14, 17), (18, 22)])
    assert semantic._words("") == ("", [], [])


def test_pre_split_words_are_joined_by_single_spaces_with_their_offsets():
    assert semantic._words(["weather", "in", "Köln"]) == ("weather in Köln", ["weather", "in", "Köln"],
                                                         [(0, 7), (8, 10), (11, 15)])
    assert semantic._words(("a", 7)) == ("a 7", ["a", "7"], [(0, 1), (2, 3)])  # words become strings
    for bad in (["weather", ""], ["new york"], ["tab\there"]):
        with pytest.raises(ValueError, match="non-empty and without spaces"):
            semantic._words(bad)


def test_slots_of_nested_frames_carry_intent_and_offsets_in_the_whole_utterance():
    text, _, offsets = semantic._words("remind me about the party on friday please")
    event = IntentFrame("GET_EVENT", ["O", "B-EVENT", "B-DATE", "I-DATE"])  # "the party on friday"
    frame = IntentFrame("SET_REMINDER", ["O", "B-PERSON", "O", "B-TODO", "I-TODO", "I-TODO", "I-TODO", "O"],
                        {3: event})
    assert semantic._slots(frame, text, offsets) == [
        {"label": "PERSON", "text": "me", "start": 7, "end": 9},
        {"label": "TODO", "text": "the party on friday", "start": 16, "end": 35, "intent": "GET_EVENT",
         "slots": [{"label": "EVENT", "text": "party", "start": 20, "end": 25},
                   {"label": "DATE", "text": "on friday", "start": 26, "end": 35}]},
    ]
    # two levels down: offsets still count from the start of the utterance
    inner = IntentFrame("GET_DATE", ["O", "B-DAY"])
    event2 = IntentFrame("GET_EVENT", ["O", "B-EVENT", "B-DATE", "I-DATE"], {2: inner})
    top = IntentFrame("SET_REMINDER", ["O", "O", "O", "B-TODO", "I-TODO", "I-TODO", "I-TODO", "O"], {3: event2})
    (todo,) = semantic._slots(top, text, offsets)
    date = todo["slots"][1]
    assert date["intent"] == "GET_DATE" and date["slots"] == [{"label": "DAY", "text": "friday", "start": 29, "end": 35}]


@pytest.fixture(scope="module")
def parser_dir(tiny_bert, tmp_path_factory):
    from transformers import AutoTokenizer

    from crop_hf.modeling import JointIntentSlotModel

    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("parser-pipeline")
    JointIntentSlotModel.from_encoder(str(tiny_bert), INTENTS, TAGS).save_pretrained(folder)
    AutoTokenizer.from_pretrained(tiny_bert).save_pretrained(folder)
    return folder


@pytest.fixture
def fixed(monkeypatch):
    """Replace the model's predictions: every utterance gets GET_WEATHER with its last word a LOCATION."""
    calls = []

    def predict(model, tokenizer, words, *, batch_size, max_length):
        calls.append({"words": words, "batch_size": batch_size, "max_length": max_length})
        out = []
        for utterance in words:
            tags = ["O"] * (len(utterance) - 1) + ["B-LOCATION"] if utterance else []
            out.append(ParserPrediction(list(utterance), "GET_WEATHER", tags, f"parse of {' '.join(utterance)}",
                                        0.5, IntentFrame("GET_WEATHER", tags)))
        return out

    monkeypatch.setattr(semantic, "predict_parses", predict)
    return calls


def test_call_options_and_batches(parser_dir, fixed):
    from transformers import pipeline

    parser = pipeline("semantic-parsing", model=str(parser_dir))
    one = parser("weather in  Oslo")
    assert one == {"intent": "GET_WEATHER", "slots": [{"label": "LOCATION", "text": "Oslo", "start": 12, "end": 16}],
                   "parse": "parse of weather in Oslo", "score": 0.5}
    assert fixed[-1] == {"words": [["weather", "in", "Oslo"]], "batch_size": 32, "max_length": 256}
    many = parser(["a b", ["c", "d"]], batch_size=5, max_length=9)
    assert fixed[-1] == {"words": [["a", "b"], ["c", "d"]], "batch_size": 5, "max_length": 9}
    assert [m["slots"] for m in many] == [[{"label": "LOCATION", "text": "b", "start": 2, "end": 3}],
                                          [{"label": "LOCATION", "text": "d", "start": 2, "end": 3}]]
    assert parser([]) == [] and len(fixed) == 2  # nothing to parse: the model is not called
    with pytest.raises(TypeError, match=r"^semantic-parsing takes batch_size and max_length, got \{'num_beams': 3\}$"):
        parser("a b", num_beams=3)
    with pytest.raises(TypeError, match=r"^semantic-parsing takes batch_size and max_length, got \(4,\)$"):
        parser("a b", 4)
    batched = pipeline("semantic-parsing", model=str(parser_dir), batch_size=7)
    batched(["x"])
    assert fixed[-1]["batch_size"] == 7  # the pipeline's own batch_size when the call gives none


def test_sanitize_parameters_route_max_length_to_preprocess(parser_dir):
    from transformers import pipeline

    parser = pipeline("semantic-parsing", model=str(parser_dir))
    assert parser._sanitize_parameters(max_length=12) == ({"max_length": 12}, {}, {})
    assert parser._sanitize_parameters() == ({}, {}, {})
    assert parser.preprocess("a  b") == {"text": "a  b", "words": ["a", "b"], "offsets": [(0, 1), (3, 4)]}
