"""Boundary markers: insertion, exact extraction, and robustness to every way MT breaks them."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz import fuzz

from crop_hf.markers import (
    AMBIGUOUS,
    CROSSING,
    DUPLICATED,
    EMPTY,
    ENCLOSES_MARKER,
    GARBLED,
    MISSING,
    NESTED,
    UNBALANCED,
    UNKNOWN,
    UNPAIRED,
    BracketMarkers,
    MarkerStyle,
    SlotMarkers,
    count_failures,
    extract,
    get_marker_style,
    mark_text,
    mark_tokens,
)

TOKENS = ["Angela", "Merkel", "visited", "Paris", "on", "Monday", "."]
SPANS = [(0, 2, "PER"), (3, 4, "LOC")]


def reasons(result):
    return {failure.slot: failure.reason for failure in result.failures}


# --- insertion -------------------------------------------------------------------------------


def test_slots_are_numbered_in_sentence_order_and_labels_stay_beside_the_text():
    marked = mark_tokens(TOKENS, list(reversed(SPANS)))
    assert marked.text == "__SLOT0__ Angela Merkel __SLOT0__ visited __SLOT1__ Paris __SLOT1__ on Monday ."
    assert "PER" not in marked.text and "LOC" not in marked.text
    assert marked.labels == {0: "PER", 1: "LOC"}
    assert [entity.text for entity in marked.entities] == ["Angela Merkel", "Paris"]
    assert marked.source == " ".join(TOKENS)


def test_character_entities_become_token_boundaries():
    marked = mark_text("I live in Gothenburg.", [{"start": 10, "end": 20, "label": "LOC"}])
    assert marked.text == "I live in __SLOT0__ Gothenburg __SLOT0__ ."
    result = extract(marked, marked.text)
    assert result.translation == "I live in Gothenburg ."
    assert [(e.text, e.label) for e in result.entities] == [("Gothenburg", "LOC")]


@pytest.mark.parametrize(
    ("spans", "message"),
    [([(2, 2, "PER")], "empty"), ([(0, 9, "PER")], "outside"), ([(0, 2, "PER"), (1, 3, "LOC")], "overlaps")],
)
def test_bad_spans_are_rejected_with_a_clear_error(spans, message):
    with pytest.raises(ValueError, match=message):
        mark_tokens(TOKENS, spans)


def test_bad_character_spans_are_rejected_with_the_whole_message():
    text = "Angela Merkel visited Paris"
    marked = mark_text(text, [{"start": 22, "end": 27, "label": "LOC"}, {"start": 0, "end": 13, "label": "PER"}])
    assert [(e.slot, e.label, e.text) for e in marked.entities] == [(0, "PER", "Angela Merkel"), (1, "LOC", "Paris")]
    cases = [((0, 13), (7, 20), "entity (7, 20, 'LOC') is empty, outside the text (27 characters) or overlaps the "
                                 "previous entity"),  # a real text, but it overlaps
             ((0, 6), (22, 40), "entity (22, 40, 'LOC') is empty"), ((0, 6), (6, 7), "entity (6, 7, 'LOC') is empty")]
    for (a, b), (c, d), message in cases:
        with pytest.raises(ValueError, match=f"^{re.escape(message)}"):
            mark_text(text, [{"start": a, "end": b, "label": "PER"}, {"start": c, "end": d, "label": "LOC"}])


def test_a_source_that_already_contains_markers_is_rejected():
    with pytest.raises(ValueError, match=r"^the source already contains the marker '__SLOT3__' of the 'crop' style; "
                       r"remove it or choose another marker style$"):
        mark_tokens(["see", "__SLOT3__", "here"], [(0, 1, "MISC")])
    # a marker split over tokens, as a tokenizer leaves it, is one too
    with pytest.raises(ValueError, match="marker '__ SLOT0 __' of the 'crop' style"):
        mark_tokens(["a", "__", "SLOT0", "__", "b"], [(0, 1, "PER")])
    with pytest.raises(ValueError, match="easyproject"):
        mark_text("a [b] c", [{"start": 0, "end": 1, "label": "PER"}], style="easyproject")


def test_styles_by_name_and_unknown_style():
    assert isinstance(get_marker_style(None), SlotMarkers)
    assert isinstance(get_marker_style("easyproject"), BracketMarkers)
    with pytest.raises(ValueError, match="unknown marker style 'xml'"):
        get_marker_style("xml")


def test_a_new_style_is_one_small_class():
    class AngleMarkers(SlotMarkers):
        name = "angle"
        _PATTERN = re.compile(r"(?P<full><\s*(?P<a>\d+)\s*>)(?P<garbled>(?P<b>)(?P<c>))?")

        def markers(self, slot):
            return f"<{slot}>", f"<{slot}>"

    style = AngleMarkers()
    marked = style.mark_tokens(TOKENS, SPANS)
    assert marked.text.startswith("<0> Angela Merkel <0>")
    result = style.extract(marked, "<1> Paris <1> besuchte <0> Angela Merkel <0>")
    assert result.complete and [e.label for e in result.entities] == ["LOC", "PER"]


# --- CroP markers: exact extraction and every failure ----------------------------------------


def test_reordered_slots_keep_their_labels_and_offsets():
    marked = mark_tokens(TOKENS, SPANS)
    result = extract(marked, "__SLOT1__ Paris __SLOT1__ besuchte am Montag __SLOT0__ Angela Merkel __SLOT0__ .")
    assert result.complete
    assert result.translation == "Paris besuchte am Montag Angela Merkel ."
    assert [(e.text, e.label, e.slot) for e in result.entities] == [("Paris", "LOC", 1), ("Angela Merkel", "PER", 0)]
    for entity in result.entities:
        assert result.translation[entity.start : entity.end] == entity.text


@pytest.mark.parametrize(
    "translation",
    [
        "Ich wohne in__SLOT0__Göteborg__SLOT0__.",
        "Ich wohne in __SLOT0__Göteborg__SLOT0__ .",
        "Ich wohne in __ SLOT0 __ Göteborg __slot0__ .",
        "Ich wohne in  __SLOT0__   Göteborg  __SLOT0__  .",
    ],
)
def test_glued_split_and_spaced_markers_are_recognised(translation):
    marked = mark_tokens(["I", "live", "in", "Gothenburg", "."], [(3, 4, "LOC")])
    result = extract(marked, translation)
    assert result.complete
    assert result.translation == "Ich wohne in Göteborg ."
    assert [(e.text, e.start, e.end) for e in result.entities] == [("Göteborg", 13, 21)]


@pytest.mark.parametrize(
    ("translation", "expected"),
    [
        ("Paris besuchte __SLOT0__ Angela Merkel __SLOT0__", {1: MISSING}),
        ("__SLOT1__ Paris besuchte __SLOT0__ Angela Merkel __SLOT0__", {1: UNPAIRED}),
        ("__SLOT1__ Paris __SLOT1__ __SLOT1__ x __SLOT0__ Angela __SLOT0__", {1: DUPLICATED}),
        ("__SLOT1__ __SLOT1__ Paris __SLOT0__ Angela __SLOT0__", {1: EMPTY}),
        ("__SLOT0__ Angela __SLOT1__ Merkel __SLOT0__ Paris __SLOT1__", {0: CROSSING, 1: CROSSING}),
        ("__SLOT0__ Angela __SLOT1__ Paris __SLOT1__ __SLOT0__", {0: NESTED, 1: NESTED}),
        ("__SLOT0__ Angela __SLOT0__ __SLOT1__ Paris __SLOT1__ __SLOT7__", {7: UNKNOWN}),
        ("__SLOT0__ Angela __SLOT0__ __SLOT1__ Paris __SLOT1", {1: GARBLED}),
        ("__SLOT0__ Angela __SLOT1__ Merkel __SLOT0__ Paris", {0: ENCLOSES_MARKER, 1: UNPAIRED}),
    ],
)
def test_every_broken_slot_is_reported_with_its_reason(translation, expected):
    result = extract(mark_tokens(TOKENS, SPANS), translation)
    assert not result.complete
    assert reasons(result) == expected
    assert {e.slot for e in result.entities}.isdisjoint(expected)
    assert "SLOT" not in result.translation


def test_failure_counts_add_up_over_a_corpus():
    marked = mark_tokens(TOKENS, SPANS)
    results = [extract(marked, "no markers at all"), extract(marked, "__SLOT0__ x __SLOT0__ y")]
    assert count_failures(results) == {MISSING: 3}


def test_a_sentence_without_entities_is_complete_unless_markers_appear():
    marked = mark_tokens(["hello"], [])
    assert extract(marked, "hallo").complete
    assert reasons(extract(marked, "hallo __SLOT0__")) == {0: UNKNOWN}


# --- EasyProject brackets -------------------------------------------------------------------


def test_brackets_by_order_when_order_cannot_be_wrong():
    marked = mark_tokens(TOKENS, [(0, 2, "PER"), (3, 4, "PER")], style="easyproject")
    assert marked.text == "[ Angela Merkel ] visited [ Paris ] on Monday ."
    result = extract(marked, "[Paris] besuchte [ Angela Merkel ].")
    assert result.complete
    assert [(e.text, e.label) for e in result.entities] == [("Paris", "PER"), ("Angela Merkel", "PER")]


def test_brackets_of_mixed_types_need_the_entity_translations():
    marked = mark_tokens(TOKENS, SPANS, style="easyproject")
    translation = "[ Paris ] besuchte [ Angela Merkel ] ."
    unresolved = extract(marked, translation)
    assert not unresolved.complete and not unresolved.entities
    assert {f.reason for f in unresolved.failures} == {AMBIGUOUS, MISSING}
    resolved = extract(marked, translation, {0: "angela merkel", 1: "Pariz"})  # exact (case-blind), fuzzy
    assert resolved.complete
    assert [(e.text, e.label, e.slot) for e in resolved.entities] == [("Paris", "LOC", 1), ("Angela Merkel", "PER", 0)]


def test_bracket_span_matching_two_labels_equally_is_ambiguous():
    marked = mark_tokens(["Jordan", "met", "Jordan"], [(0, 1, "PER"), (2, 3, "LOC")], style="easyproject")
    result = extract(marked, "[ Jordan ] traf [ Jordan ]", {0: "Jordan", 1: "Jordan"})
    assert not result.complete and not result.entities
    assert [f.reason for f in result.failures].count(AMBIGUOUS) == 2


def test_broken_brackets_are_reported_and_never_become_entities():
    marked = mark_tokens(TOKENS, SPANS, style="easyproject")
    result = extract(marked, "[[ Paris ] besuchte] [ Angela Merkel ]]. [", {0: "Angela Merkel", 1: "Paris"})
    assert [(e.text, e.label) for e in result.entities] == [("Angela Merkel", "PER")]
    assert sorted(f.reason for f in result.failures) == [MISSING, NESTED, UNBALANCED, UNBALANCED]
    assert result.translation == "Paris besuchte Angela Merkel ."


# --- properties -----------------------------------------------------------------------------

# Tokens never contain whitespace or marker characters (insertion rejects the latter).
token = st.text(st.characters(exclude_categories=("Z", "C"), exclude_characters="_[]"), min_size=1, max_size=6)
label = st.sampled_from(["PER", "ORG", "LOC", "MISC"])


@st.composite
def labeled_sentences(draw):
    tokens = draw(st.lists(token, min_size=1, max_size=12))
    cuts = sorted(draw(st.sets(st.integers(0, len(tokens)), max_size=8)))
    spans = [(s, e, draw(label)) for s, e in zip(cuts[::2], cuts[1::2], strict=False) if s < e]
    return tokens, spans


def char_spans(tokens, spans):
    offsets = [0]
    for tok in tokens:
        offsets.append(offsets[-1] + len(tok) + 1)
    return [(offsets[s], offsets[e] - 1, lab) for s, e, lab in spans]


@pytest.mark.parametrize("style", ["crop", "easyproject"])
@settings(max_examples=150, deadline=None)
@given(sentence=labeled_sentences())
def test_identity_translation_recovers_text_and_spans(style, sentence):
    tokens, spans = sentence
    marked = mark_tokens(tokens, spans, style=style)
    entity_translations = {entity.slot: entity.text for entity in marked.entities}
    result = extract(marked, marked.text, entity_translations)
    assert result.translation == " ".join(tokens)
    if style == "crop" or len({lab for *_, lab in spans}) <= 1:
        assert result.complete
        assert [(e.start, e.end, e.label) for e in result.entities] == char_spans(tokens, spans)
    else:  # untyped: identical entity texts of two labels are genuinely ambiguous
        got = {(e.start, e.end, e.label) for e in result.entities}
        assert got <= set(char_spans(tokens, spans))
        assert result.complete == (len(got) == len(spans))


@st.composite
def corruptions(draw):
    tokens, spans = draw(labeled_sentences())
    pieces = mark_tokens(tokens, spans).text.split(" ")
    for _ in range(draw(st.integers(1, 5))):
        positions = [i for i, piece in enumerate(pieces) if "SLOT" in piece]
        action = draw(st.sampled_from(["drop", "duplicate", "move", "glue", "renumber", "split", "truncate"]))
        if not positions:
            break
        i = draw(st.sampled_from(positions))
        if action == "drop":
            del pieces[i]
        elif action == "duplicate":
            pieces.insert(draw(st.integers(0, len(pieces))), pieces[i])
        elif action == "move":
            pieces.insert(draw(st.integers(0, len(pieces) - 1)), pieces.pop(i))
        elif action == "glue" and len(pieces) > 1:
            j = i + 1 if i + 1 < len(pieces) else i - 1
            a, b = sorted((i, j))
            pieces[a : b + 1] = [pieces[a] + pieces[b]]
        elif action == "renumber":
            pieces[i] = re.sub(r"\d+", str(draw(st.integers(0, 20))), pieces[i], count=1)
        elif action == "split":
            pieces[i] = pieces[i].replace("SLOT", "SLOT ", 1)
        elif action == "truncate":
            pieces[i] = pieces[i].replace("__", "", 1)
    return mark_tokens(tokens, spans), " ".join(pieces)


@settings(max_examples=300, deadline=None)
@given(case=corruptions())
def test_corrupted_markers_never_raise_and_never_invent_an_entity(case):
    marked, translation = case
    style = SlotMarkers()
    result = extract(marked, translation)
    markers = style.find(translation)
    for entity in result.entities:
        assert entity.label == marked.labels[entity.slot]
        assert result.translation[entity.start : entity.end] == entity.text != ""
        own = [m for m in markers if m.slot == entity.slot]
        assert len(own) == 2
        between = translation[own[0].end : own[1].start]
        assert not style.find(between)  # nothing else was inside the slot
        assert " ".join(between.split()) == entity.text
    assert result.complete == (len(result.entities) == len(marked.entities) and not result.failures)
    broken = {f.slot for f in result.failures}
    assert broken.isdisjoint(e.slot for e in result.entities)
    assert set(marked.labels) <= broken | {e.slot for e in result.entities}


@settings(max_examples=200, deadline=None)
@given(case=labeled_sentences(), noise=st.text(alphabet="[] ab", max_size=12), cut=st.integers(0, 200))
def test_corrupted_brackets_never_raise_and_keep_labels_of_their_own_text(case, noise, cut):
    tokens, spans = case
    marked = mark_tokens(tokens, spans, style="easyproject")
    cut = min(cut, len(marked.text))
    translation = marked.text[:cut] + noise + marked.text[cut:]
    entity_translations = {entity.slot: entity.text for entity in marked.entities}
    result = extract(marked, translation, entity_translations)
    assert result.complete == (len(result.entities) == len(marked.entities) and not result.failures)
    texts = {" ".join(entity.text.split()).casefold() for entity in marked.entities}
    if not noise and len(texts) == len(marked.entities):
        # The marked source itself, each entity with its own text: every entity comes back. (Two
        # entities with one text but different labels are ambiguous by design.)
        assert result.complete and [e.slot for e in result.entities] == [e.slot for e in marked.entities]
    for entity in result.entities:
        assert result.translation[entity.start : entity.end] == entity.text != ""
        assert entity.label == marked.labels[entity.slot]
        if len({lab for *_, lab in spans}) > 1:  # matched by text, so it resembles its own source entity
            reference = entity_translations[entity.slot]
            assert fuzz.ratio(entity.text.casefold(), reference.casefold()) >= BracketMarkers().threshold


def test_marker_style_is_abstract():
    with pytest.raises(TypeError):
        MarkerStyle()


def _brackets(result):
    return result.complete, [(e.text, e.label, e.slot) for e in result.entities], [(f.slot, f.reason, f.label, f.text) for f in result.failures]


def test_easyproject_brackets_restore_labels_and_name_every_failure():
    from crop_hf.markers import get_marker_style

    marked = mark_tokens(["Angela", "Merkel", "visited", "Paris", "and", "Rome"],
                         [(0, 2, "PER"), (3, 4, "LOC"), (5, 6, "LOC")], style="easyproject")
    assert marked.text == "[ Angela Merkel ] visited [ Paris ] and [ Rome ]"
    alone = {0: "Angela Merkel", 1: "Paris", 2: "Rom"}
    assert _brackets(extract(marked, "[ Angela Merkel ] besuchte [ Paris ] und [ Rom ]", alone)) == (
        True, [("Angela Merkel", "PER", 0), ("Paris", "LOC", 1), ("Rom", "LOC", 2)], [])
    assert _brackets(extract(marked, "[ Angela Merkel ] besuchte [ Pariss ] und [ Xyz ] [ Qqq ]", alone)) == (
        False, [("Angela Merkel", "PER", 0), ("Pariss", "LOC", 1)],
        [(None, "unmatched", None, "Xyz"), (None, "unmatched", None, "Qqq"), (2, "missing", "LOC", None)])
    assert _brackets(extract(marked, "[ Angela [ Merkel ] ] besuchte [ Paris ] und [ Rom ]", alone)) == (
        False, [("Paris", "LOC", 1), ("Rom", "LOC", 2)],
        [(None, "nested", None, "Angela Merkel"), (0, "missing", "PER", None)])
    assert _brackets(extract(marked, "[ ] Angela Merkel besuchte [ Paris ] und [ Rom ] ]", alone)) == (
        False, [("Paris", "LOC", 1), ("Rom", "LOC", 2)],
        [(None, "empty", None, None), (None, "unbalanced", None, None), (0, "missing", "PER", None)])
    # Two labels and no entity translations: nothing can be assigned, and every span says so.
    assert _brackets(extract(marked, "[ Angela Merkel ] besuchte [ Paris ] und [ Rom ]", None)) == (
        False, [], [(None, "ambiguous", None, "Angela Merkel"), (None, "ambiguous", None, "Paris"),
                    (None, "ambiguous", None, "Rom"), (0, "missing", "PER", None), (1, "missing", "LOC", None),
                    (2, "missing", "LOC", None)])
    style = get_marker_style("easyproject")
    assert style.needs_entity_translations(marked)
    one_type = mark_tokens(["Paris", "and", "Rome"], [(0, 1, "LOC"), (2, 3, "LOC")], style="easyproject")
    assert not style.needs_entity_translations(one_type)


def test_easyproject_matching_threshold_and_most_confident_span_first():
    marked = mark_tokens(["Anna", "in", "Hamburg"], [(0, 1, "PER"), (2, 3, "LOC")], style="easyproject")
    # fuzz.ratio("hamburg", "hamburgaltona") is exactly 70, the default threshold.
    assert _brackets(extract(marked, "[ Anna ] in [ Hamburg ]", {0: "Anna", 1: "HamburgAltona"})) == (
        True, [("Anna", "PER", 0), ("Hamburg", "LOC", 1)], [])
    marked = mark_tokens(["Anna", "Annas", "Berlin"], [(0, 1, "PER"), (1, 2, "PER"), (2, 3, "LOC")],
                         style="easyproject")
    # "Anna" matches slot 0 exactly and picks first; "Ann" then takes slot 1 (75), though slot 0 was its best (86).
    result = extract(marked, "[ Ann ] [ Anna ] [ Berlin ]", {0: "Anna", 1: "Annas", 2: "Berlin"})
    assert _brackets(result) == (True, [("Ann", "PER", 1), ("Anna", "PER", 0), ("Berlin", "LOC", 2)], [])
    # The same name with two labels: the span is ambiguous, not guessed.
    washington = mark_tokens(["Washington", "met", "Washington"], [(0, 1, "PER"), (2, 3, "LOC")], style="easyproject")
    assert _brackets(extract(washington, "[ Xyz ] [ Washington ] traf [ Washington ]",
                             {0: "Washington", 1: "Washington"})) == (
        False, [], [(None, "ambiguous", None, "Washington"), (None, "ambiguous", None, "Washington"),
                    (None, "unmatched", None, "Xyz"), (0, "missing", "PER", None), (1, "missing", "LOC", None)])
    # A slot without an entity translation matches nothing, whatever the span says.
    marked = mark_tokens(["Anna", "in", "Hamburg"], [(0, 1, "PER"), (2, 3, "LOC")], style="easyproject")
    assert _brackets(extract(marked, "[ Anna ] in [ xxxx ]", {0: "Anna"})) == (
        False, [("Anna", "PER", 0)], [(None, "unmatched", None, "xxxx"), (1, "missing", "LOC", None)])
