import pytest
from hypothesis import given
from hypothesis import strategies as st
from seqeval.metrics.sequence_labeling import get_entities

from crop_hf.labels import (
    CONLL_LABELS,
    PANX_LABELS,
    LabelSet,
    Span,
    bioes_to_iob2,
    convert_tags,
    iob1_to_iob2,
    iob2_to_bioes,
    iob2_to_iob1,
    is_valid,
    repair_tags,
    spans_to_tags,
    split_tag,
    tags_to_spans,
)

TYPES = ["PER", "ORG", "LOC", "MISC", "GPE-LOC"]  # a hyphenated type must survive every conversion


@st.composite
def spans_and_length(draw):
    """Non-overlapping spans over a sequence, possibly adjacent and of the same type."""
    length = draw(st.integers(0, 25))
    spans, position = [], 0
    while position < length:
        position += draw(st.integers(0, 3))
        if position >= length:
            break
        end = draw(st.integers(position + 1, min(length, position + 4)))
        spans.append(Span(position, end, draw(st.sampled_from(TYPES))))
        position = end
    return spans, length


any_iob2 = st.lists(st.sampled_from(["O"] + [f"{p}-{t}" for p in "BI" for t in TYPES]), max_size=25)


def test_label_sets_use_hugging_face_order():
    assert CONLL_LABELS.names == ("O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC")
    assert PANX_LABELS.names == CONLL_LABELS.names[:7]
    assert CONLL_LABELS.types == ("PER", "ORG", "LOC", "MISC")
    assert CONLL_LABELS.id2label[8] == "I-MISC" and PANX_LABELS.label2id["I-LOC"] == 6
    assert CONLL_LABELS.decode(CONLL_LABELS.encode(["B-MISC", "O"])) == ["B-MISC", "O"]


def test_label_set_rejects_bad_names_and_unknown_tags():
    with pytest.raises(ValueError, match="unique"):
        LabelSet(("O", "O"))
    with pytest.raises(ValueError, match="invalid tag"):
        LabelSet(("O", "PER"))
    with pytest.raises(KeyError, match="B-MISC"):
        PANX_LABELS.encode(["B-MISC"])


@pytest.mark.parametrize("tag", ["", "B", "B-", "X-PER", "PER", "b-PER", "-PER"])
def test_split_tag_rejects_malformed_tags(tag):
    with pytest.raises(ValueError, match="invalid tag"):
        split_tag(tag)


def test_split_tag_reads_bilou_as_bioes_and_keeps_hyphenated_types():
    assert split_tag("U-PER") == ("S", "PER")
    assert split_tag("L-GPE-LOC") == ("E", "GPE-LOC")


def test_iob1_as_in_conll2003():
    # EU rejects German call : "I-ORG O I-MISC O" in the original IOB1 file.
    assert iob1_to_iob2(["I-ORG", "O", "I-MISC", "O"]) == ["B-ORG", "O", "B-MISC", "O"]
    # B- in IOB1 separates two adjacent entities of one type.
    assert iob1_to_iob2(["I-PER", "I-PER", "B-PER", "I-LOC"]) == ["B-PER", "I-PER", "B-PER", "B-LOC"]


def test_bioes_conversions():
    iob2 = ["B-PER", "I-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-LOC"]
    bioes = ["B-PER", "I-PER", "E-PER", "O", "S-LOC", "B-LOC", "E-LOC"]
    assert iob2_to_bioes(iob2) == bioes
    assert bioes_to_iob2(bioes) == iob2
    assert bioes_to_iob2(["U-ORG", "B-PER", "L-PER"]) == ["B-ORG", "B-PER", "I-PER"]


def test_bioes_tags_are_rejected_in_iob_schemes():
    with pytest.raises(ValueError, match="not valid in scheme IOB2"):
        tags_to_spans(["S-PER"])


def test_unknown_scheme_is_named():
    with pytest.raises(ValueError, match="unknown tag scheme 'BILOU'"):
        convert_tags(["O"], "IOB2", "BILOU")


def test_bioes_ends_close_their_entity_and_other_schemes_refuse_them():
    # What follows an E- or S- tag starts a new entity, even of the same type.
    assert tags_to_spans(["S-PER", "I-PER"], "BIOES") == [(0, 1, "PER"), (1, 2, "PER")]
    assert tags_to_spans(["B-PER", "E-PER", "E-PER"], "BIOES") == [(0, 2, "PER"), (2, 3, "PER")]
    assert tags_to_spans(["I-PER", "B-PER", "I-PER"], "IOB1") == [(0, 1, "PER"), (1, 3, "PER")]
    for scheme in ("IOB1", "IOB2"):
        for tags, position in ((["B-PER", "E-PER"], 1), (["S-PER"], 0)):
            message = f"tag '{tags[position]}' at position {position} is not valid in scheme {scheme}"
            with pytest.raises(ValueError, match=f"^{message}$"):
                tags_to_spans(tags, scheme)
    with pytest.raises(ValueError, match=r"^unknown tag scheme 'IOB3'; expected one of IOB1, IOB2, BIOES$"):
        tags_to_spans(["O"], "IOB3")


def test_spans_to_tags_rejects_overlaps_and_out_of_range():
    with pytest.raises(ValueError, match="overlap"):
        spans_to_tags([(0, 2, "PER"), (1, 3, "LOC")], 3)
    with pytest.raises(ValueError, match="does not fit"):
        spans_to_tags([(2, 4, "PER")], 3)
    with pytest.raises(ValueError, match="does not fit"):
        spans_to_tags([(1, 1, "PER")], 3)
    # Spans are taken by start, in the order given: the message names them as the caller wrote them.
    with pytest.raises(ValueError, match=r"^spans \(1, 3, 'B'\) and \(1, 2, 'A'\) overlap$"):
        spans_to_tags([(1, 3, "B"), (1, 2, "A")], 3)


def test_repair_examples():
    tags = ["I-PER", "O", "I-LOC", "I-LOC", "B-ORG", "I-MISC", "I-MISC"]
    assert repair_tags(tags) == ["B-PER", "O", "B-LOC", "I-LOC", "B-ORG", "B-MISC", "I-MISC"]
    assert repair_tags(tags, "drop") == ["O", "O", "O", "O", "B-ORG", "O", "O"]
    with pytest.raises(ValueError, match="unknown repair strategy"):
        repair_tags(tags, "fix")
    with pytest.raises(ValueError, match="bioes_to_iob2"):
        repair_tags(["S-PER"])


@pytest.mark.parametrize(("tags", "scheme"), [
    (["O", "X-PER"], "IOB2"), (["B-"], "IOB2"), (["PER"], "IOB1"), (["S-PER"], "IOB2"), (["E-LOC"], "IOB1"),
    (["O", "I-PER"], "IOB2"), (["B-PER", "I-PER"], "BIOES"),
])
def test_malformed_or_foreign_tags_are_not_valid_and_do_not_raise(tags, scheme):
    assert is_valid(tags, scheme) is False


@given(spans_and_length(), st.sampled_from(["IOB1", "IOB2", "BIOES"]))
def test_spans_round_trip_through_every_scheme(data, scheme):
    spans, length = data
    tags = spans_to_tags(spans, length, scheme)
    assert len(tags) == length
    assert tags_to_spans(tags, scheme) == spans
    assert is_valid(tags, scheme)


@given(spans_and_length())
def test_scheme_round_trips_are_exact(data):
    iob2 = spans_to_tags(*data)
    assert bioes_to_iob2(iob2_to_bioes(iob2)) == iob2
    assert iob1_to_iob2(iob2_to_iob1(iob2)) == iob2
    assert convert_tags(iob2_to_bioes(iob2), "BIOES", "IOB1") == iob2_to_iob1(iob2)


@given(any_iob2)
def test_repair_makes_any_sequence_valid_and_is_idempotent(tags):
    for strategy in ("begin", "drop"):
        repaired = repair_tags(tags, strategy)
        assert is_valid(repaired)
        assert repair_tags(repaired, strategy) == repaired
    # "begin" keeps the entities that conlleval/seqeval read from the invalid sequence.
    assert tags_to_spans(repair_tags(tags)) == tags_to_spans(tags)


@given(any_iob2)
def test_repair_leaves_valid_sequences_alone(tags):
    if is_valid(tags):
        assert repair_tags(tags) == tags == repair_tags(tags, "drop")


@given(any_iob2)
def test_spans_agree_with_seqeval(tags):
    # seqeval's get_entities uses inclusive ends; hyphenated types are split on the last hyphen there,
    # so compare on sequences without them.
    tags = [t.replace("GPE-LOC", "GPE") for t in tags]
    expected = [Span(start, end + 1, label) for label, start, end in get_entities(tags)]
    assert tags_to_spans(tags) == expected


def test_label_set_of_a_models_id2label():
    # CoNLL types come back in CoNLL order whatever the model's order; bare type names are read too.
    assert LabelSet.of_model({0: "B-MISC", 1: "O", 2: "PER", 3: "I-LOC"}).names == (
        "O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-MISC", "I-MISC")
    assert LabelSet.of_model({0: "O", 1: "B-SL:DATE", 2: "E-GPE"}).types == ("SL:DATE", "GPE")
    with pytest.raises(ValueError, match="invalid tag"):
        LabelSet.of_model({0: "X-PER"})


def test_repair_tags_refuses_bioes_tags():
    from crop_hf.labels import repair_tags

    for tag in ("E-PER", "S-PER"):
        with pytest.raises(ValueError, match=f"repair_tags works on IOB2 tags, got '{tag}'; convert BIOES"):
            repair_tags(["O", tag])
