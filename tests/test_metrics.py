"""projection_scores: seqeval's span P/R/F1 plus the kept-sentence rate."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from seqeval.metrics import f1_score, precision_score, recall_score

from crop_hf.metrics import projection_scores

GOLD = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "O", "O"], ["O", "B-LOC"]]


def test_scores_over_kept_sentences_and_all_sentences():
    predicted = [["B-PER", "I-PER", "O", "B-ORG"], None, ["O", "B-LOC"]]
    kept = projection_scores(predicted, GOLD)
    # kept sentences: gold PER, LOC, LOC; predicted PER, ORG, LOC; correct PER, LOC
    assert (kept["precision"], kept["recall"]) == (pytest.approx(2 / 3), pytest.approx(2 / 3))
    assert kept["kept"] == 2 and kept["kept_rate"] == pytest.approx(2 / 3)
    assert kept["per_type"]["ORG"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}
    everything = projection_scores(predicted, GOLD, over="all")
    assert everything["precision"] == pytest.approx(2 / 3)
    assert everything["recall"] == pytest.approx(2 / 4)  # the dropped sentence's ORG counts as missed
    assert everything["per_type"]["ORG"]["support"] == 1


def test_pipeline_outputs_and_kept_flags():
    outputs = [{"tags": GOLD[0], "kept": True}, {"tags": ["O", "O", "O"], "kept": False}, {"tags": GOLD[2]}]
    scores = projection_scores(outputs, GOLD)
    assert (scores["f1"], scores["kept"]) == (1.0, 2)
    flagged = projection_scores([GOLD[0], GOLD[1], ["O", "O"]], GOLD, kept=[True, True, False])
    assert flagged["f1"] == 1.0 and flagged["kept_rate"] == pytest.approx(2 / 3)


def test_seqeval_reading_of_invalid_tags_and_errors():
    # seqeval (like conlleval) reads a stray I- as the start of an entity
    assert projection_scores([["O", "I-PER"]], [["O", "B-PER"]])["f1"] == 1.0
    with pytest.raises(ValueError, match="sentence 1: 2 projected tags but 3 gold tags"):
        projection_scores([GOLD[0], ["O", "O"]], GOLD[:2])
    with pytest.raises(ValueError, match="2 predictions but 3 references"):
        projection_scores(GOLD[:2], GOLD)
    assert projection_scores([], [])["kept_rate"] == 0.0


tags = st.sampled_from(["O", "B-PER", "I-PER", "B-LOC", "I-LOC"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 8), min_size=1, max_size=6).flatmap(
    lambda lengths: st.tuples(*[st.tuples(st.lists(tags, min_size=n, max_size=n), st.lists(tags, min_size=n, max_size=n))
                                for n in lengths])))
def test_equals_seqeval_when_everything_is_kept(pairs):
    gold = [g for g, _ in pairs]
    predicted = [p for _, p in pairs]
    scores = projection_scores(predicted, gold)
    assert scores["precision"] == pytest.approx(precision_score(gold, predicted, zero_division=0))
    assert scores["recall"] == pytest.approx(recall_score(gold, predicted, zero_division=0))
    assert scores["f1"] == pytest.approx(f1_score(gold, predicted, zero_division=0))
    assert scores["kept_rate"] == 1.0
