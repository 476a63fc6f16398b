"""Alignment projection (CSTOP): union of aligned words, discontinuity, gaps, punctuation, conflicts."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crop_hf.labels import Span, is_valid
from crop_hf.projection import project_alignment


def spans(result):
    return [(e.token_start, e.token_end, e.label) for e in result.entities]


def test_many_to_many_alignment_takes_the_union():
    # CSTOP's Figure 2: "percent" aligns to "por ciento".
    source = ["raise", "it", "ten", "percent"]
    result = project_alignment(source, ["O", "O", "B-PERCENT", "I-PERCENT"], ["súbelo", "diez", "por", "ciento"],
                               "0-0 1-0 2-1 3-2 3-3")
    assert result.tags == ["O", "B-PERCENT", "I-PERCENT", "I-PERCENT"]
    assert result.statuses[0].status == "projected" and result.complete


def test_discontinuous_becomes_separate_spans_unless_gap_is_filled():
    source, tags = ["New", "York", "is", "big"], ["B-LOC", "I-LOC", "O", "O"]
    target = ["Nueva", "es", "York", "grande"]
    links = [(0, 0), (1, 2), (2, 1), (3, 3)]
    split = project_alignment(source, tags, target, links)
    assert spans(split) == [(0, 1, "LOC"), (2, 3, "LOC")]
    assert split.statuses[0].status == "split" and split.complete
    # With gap filling "es" (aligned to "is") still belongs to no span: a contested word goes to the
    # span with more links to it, and the O word "is" is no span at all, so the gap is filled.
    filled = project_alignment(source, tags, target, links, fill_gaps=1)
    assert spans(filled) == [(0, 3, "LOC")]
    too_far = project_alignment(source, tags, ["Nueva", "es", "muy", "York"], [(0, 0), (1, 3)], fill_gaps=1)
    assert spans(too_far) == [(0, 1, "LOC"), (3, 4, "LOC")]


def test_punctuation_is_trimmed_and_punctuation_only_spans_dropped():
    source, tags = ["Visit", "Paris", "!"], ["O", "B-LOC", "O"]
    trimmed = project_alignment(source, tags, ["Visita", "París", "¡", "!"], [(0, 0), (1, 1), (1, 3)])
    assert spans(trimmed) == [(1, 2, "LOC")]
    only_punct = project_alignment(source, tags, ["Visita", "«", "»"], [(0, 0), (1, 1), (1, 2)])
    assert only_punct.entities == [] and only_punct.statuses[0].status == "punctuation"
    assert not only_punct.complete and only_punct.kept  # CSTOP keeps every translation by default
    assert not project_alignment(source, tags, ["Visita", "«"], [(1, 1)], drop_incomplete=True).kept


def test_conflicts_go_to_the_span_with_most_links_to_the_word():
    source = ["Bank", "of", "America", "Tower"]
    tags = ["B-ORG", "I-ORG", "I-ORG", "B-LOC"]
    target = ["Torre", "Bank", "America"]
    # ORG has two links to "Bank" (Bank, of); LOC one. LOC keeps "Torre".
    result = project_alignment(source, tags, target, [(0, 1), (1, 1), (2, 2), (3, 0), (3, 1)])
    assert spans(result) == [(0, 1, "LOC"), (1, 3, "ORG")]
    # Equal links to the contested word: the span with more links overall wins it.
    tie = project_alignment(["a", "b", "c"], ["B-X", "I-X", "B-Y"], ["p", "q"], [(0, 0), (1, 1), (2, 1)])
    assert spans(tie) == [(0, 2, "X")]
    assert tie.statuses[1].status == "conflict"
    # Equal overall too: the earlier span wins.
    first = project_alignment(["a", "b"], ["B-X", "B-Y"], ["p"], [(0, 0), (1, 0)])
    assert spans(first) == [(0, 1, "X")] and first.statuses[1].status == "conflict"


def test_unaligned_span_and_text_target_and_errors():
    result = project_alignment(["Hi", "Anna"], ["O", "B-PER"], "Hola Anna", "0-0")
    assert result.statuses[0].status == "unaligned" and not result.complete
    assert result.tokenization == "words"
    zh = project_alignment(["in", "Gothenburg"], ["O", "B-LOC"], "在哥德堡", "0-0 1-1 1-2 1-3", lang="zh")
    assert zh.tags == ["O", "B-LOC", "I-LOC", "I-LOC"] and zh.entities[0].text == "哥德堡"
    from_spans = project_alignment(None, [Span(1, 2, "PER")], ["Hola", "Anna"], [(1, 1)])
    assert spans(from_spans) == [(1, 2, "PER")]
    with pytest.raises(ValueError, match="link 2-0 is outside the sentences"):
        project_alignment(["a", "b"], ["O", "O"], ["x"], [(2, 0)])
    with pytest.raises(ValueError, match="fill_gaps"):
        project_alignment(["a"], ["O"], ["x"], [], fill_gaps=-1)


def _draw_case(data, source_words, target_words):
    """A random sentence pair: source words, IOB2 tags, target words and up to 16 links between them."""
    n_source, n_target = data.draw(st.integers(1, 8)), data.draw(st.integers(1, 8))
    tags = data.draw(st.lists(st.sampled_from(["O", "B-PER", "I-PER", "B-LOC"]), min_size=n_source, max_size=n_source))
    source = data.draw(st.lists(st.sampled_from(source_words), min_size=n_source, max_size=n_source))
    target = data.draw(st.lists(st.sampled_from(target_words), min_size=n_target, max_size=n_target))
    links = data.draw(st.sets(st.tuples(st.integers(0, n_source - 1), st.integers(0, n_target - 1)), max_size=16))
    return source, tags, target, links


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_output_is_valid_and_every_projected_word_is_aligned_to_its_span(data):
    source, tags, target, links = _draw_case(data, ["s"], ["w", "x", ",", "y"])
    result = project_alignment(source, tags, target, links)
    assert is_valid(result.tags)
    from crop_hf.labels import tags_to_spans

    source = tags_to_spans(tags)
    for entity in result.entities:
        span = source[entity.source]
        assert entity.label == span.label
        # without gap filling every projected word has a link from the entity's source span
        for j in range(entity.token_start, entity.token_end):
            assert any(span.start <= i < span.end and jj == j for i, jj in links)
        assert target[entity.token_start] != "," and target[entity.token_end - 1] != ","


def test_largest_piece_keeps_the_piece_with_most_links_then_the_longest():
    source, tags, target = ["a", "b", "c"], ["B-X", "I-X", "I-X"], ["p", "q", "r", "s", "t"]
    links = [(0, 0), (1, 3), (2, 3), (2, 4)]  # pieces [0] (1 link) and [3, 4] (3 links)
    assert project_alignment(source, tags, target, links).tags == ["B-X", "O", "O", "B-X", "I-X"]
    result = project_alignment(source, tags, target, links, pieces="largest")
    assert result.tags == ["O", "O", "O", "B-X", "I-X"] and result.statuses[0].status == "split"
    tie = project_alignment(source, tags, target, [(0, 0), (1, 1), (2, 4), (2, 3)], pieces="largest")
    assert tie.tags == ["B-X", "I-X", "O", "O", "O"]  # two links each and equally long: the first piece
    with pytest.raises(ValueError, match="pieces must be"):
        project_alignment(source, tags, target, links, pieces="all")


def test_statuses_text_links_and_ownership_on_small_cases():
    source = ["New", "York", "is", "big"]
    result = project_alignment(source, ["B-LOC", "I-LOC", "O", "O"], [",", "Nueva", "York", "es"],
                               [(0, 0), (0, 1), (1, 2)])
    assert result.tags == ["O", "B-LOC", "I-LOC", "O"]  # the comma at the run's edge is trimmed
    assert [(s.text, s.label, s.status) for s in result.statuses] == [("New York", "LOC", "projected")]
    assert result.method == "alignment"
    with pytest.raises(ValueError, match=r"alignment link 0-4 is outside the sentences \(4 source and 4 target"):
        project_alignment(source, ["B-LOC", "I-LOC", "O", "O"], ["a", "b", "c", "d"], [(0, 4)])
    # Without source words, string tags give the source length; (start, end, label) spans do not limit it.
    with pytest.raises(ValueError, match="alignment link 5-0 is outside the sentences"):
        project_alignment(None, ["B-LOC", "O"], ["a", "b"], [(5, 0)])
    far = project_alignment(None, [(0, 1, "LOC")], ["a", "b"], [(0, 1), (3, 0)])
    assert far.tags == ["O", "B-LOC"] and far.statuses[0].text == ""
    assert project_alignment(None, [(0, 1, "LOC")], ["a", "b"], []).statuses[0].status == "unaligned"
    assert project_alignment(None, [], ["a", "b"], []).tags == ["O", "O"]
    # A target word linked from two spans goes to the one with more links into it, then the earlier one.
    owned = project_alignment(["A", "B", "B2"], ["B-X", "B-Y", "I-Y"], ["w"], [(0, 0), (1, 0), (2, 0)])
    assert owned.tags == ["B-Y"] and [s.status for s in owned.statuses] == ["conflict", "projected"]
    tie = project_alignment(["A", "B"], ["B-X", "B-Y"], ["w"], [(0, 0), (1, 0)])
    assert tie.tags == ["B-X"]


def test_scheme_language_and_tokenization_reach_the_readers():
    from crop_hf.projection.alignment import source_spans

    assert source_spans(["B-LOC", "I-LOC", "O"]) == [Span(0, 2, "LOC")]  # IOB2 by default
    assert source_spans([(1, 3, "PER")]) == [Span(1, 3, "PER")]
    bioes = project_alignment(["Anna", "Maria"], ["S-PER", "S-PER"], ["Anna", "y", "Maria"], [(0, 0), (1, 2)],
                              scheme="BIOES")
    assert bioes.tags == ["B-PER", "O", "B-PER"]
    links = [(0, 2), (0, 3), (0, 4), (0, 5), (0, 6)]
    for options in ({"tokenization": "characters"}, {"lang": "zh"}):
        chars = project_alignment(["Paris"], ["B-LOC"], "inParis", links, **options)
        assert chars.tokenization == "characters" and chars.tags == ["O", "O", "B-LOC"] + ["I-LOC"] * 4


def test_trim_edges_drops_edge_words_linked_as_much_outside_every_span():
    # "Member States are responsible": "Mitgliedstaaten sind verantwortlich"
    source, tags = ["Member", "States", "are", "responsible"], ["B-ORG", "I-ORG", "O", "O"]
    target = ["Mitgliedstaaten", "sind", "verantwortlich"]
    # "sind" is linked to "States" once and to "are" once: as much outside as inside → trimmed
    links = [(0, 0), (1, 0), (1, 1), (2, 1), (3, 2)]
    assert project_alignment(source, tags, target, links).tags == ["B-ORG", "I-ORG", "O"]
    assert project_alignment(source, tags, target, links, trim_edges=True).tags == ["B-ORG", "O", "O"]
    # two links from the span against one from outside: "sind" stays
    stronger = [(0, 0), (0, 1), (1, 1), (2, 1), (3, 2)]
    assert project_alignment(source, tags, target, stronger, trim_edges=True).tags == ["B-ORG", "I-ORG", "O"]
    # a word of the middle is never trimmed, and the last word standing is kept
    middle = [(0, 0), (2, 1), (1, 2)]
    assert project_alignment(source, tags, target, middle, fill_gaps=1, trim_edges=True).tags == \
        ["B-ORG", "I-ORG", "I-ORG"]
    alone = [(0, 1), (2, 1)]
    assert project_alignment(source, tags, target, alone, trim_edges=True).tags == ["O", "B-ORG", "O"]


def test_trim_edges_removes_a_filled_gap_left_at_the_edge_but_keeps_one_word():
    source, tags = ["the", "Dutch", "station"], ["O", "B-MISC", "O"]
    target = ["ein", "niederländischer", "Sender"]
    # the span's links: word 1 (twice) and word 2 (once), the latter also linked to "station" twice
    links = [(0, 0), (1, 1), (1, 2), (2, 2), (2, 2)]
    assert project_alignment(source, tags, target, links, trim_edges=True).tags == ["O", "B-MISC", "O"]


def test_one_word_keeps_only_the_best_linked_target_word_of_a_one_word_span():
    source, tags = ["a", "Dutch", "broadcaster", "in", "New", "York"], ["O", "B-MISC", "O", "O", "B-LOC", "I-LOC"]
    target = ["ein", "niederländischer", "Sender", "in", "New", "York"]
    links = [(0, 0), (1, 1), (1, 2), (2, 2), (1, 1), (3, 3), (4, 4), (5, 5), (4, 3)]
    assert project_alignment(source, tags, target, links).tags == \
        ["O", "B-MISC", "I-MISC", "B-LOC", "I-LOC", "I-LOC"]
    assert project_alignment(source, tags, target, links, one_word=True).tags == \
        ["O", "B-MISC", "O", "B-LOC", "I-LOC", "I-LOC"]  # the first aligned word; two-word spans keep all
    later = [(1, 2), (1, 5)]  # pieces too: one word of all of them, the first
    result = project_alignment(source, tags, target, later, one_word=True)
    assert result.tags == ["O", "O", "B-MISC", "O", "O", "O"] and result.statuses[0].status == "split"
    assert project_alignment(source, tags, target, later).tags == ["O", "O", "B-MISC", "O", "O", "B-MISC"]


def test_capitalized_nouns_trims_trailing_lowercase_words_but_keeps_one_word():
    source, tags = ["the", "Member", "States", "are", "trying"], ["O", "B-ORG", "I-ORG", "O", "O"]
    target = ["die", "Mitgliedstaaten", "sind", "bemüht"]
    links = [(0, 0), (1, 1), (2, 1), (2, 3), (3, 2), (4, 3)]  # "States" also linked to the verb
    assert project_alignment(source, tags, target, links, fill_gaps=1).tags == ["O", "B-ORG", "I-ORG", "I-ORG"]
    assert project_alignment(source, tags, target, links, fill_gaps=1, capitalized_nouns=True).tags == \
        ["O", "B-ORG", "O", "O"]
    # a lowercase word inside the span stays (only the trailing ones go), and a span of one
    # lowercase word is kept: a German adjective of nationality
    inner = project_alignment(["Committee", "on", "Transport"], ["B-ORG", "I-ORG", "I-ORG"],
                              ["Ausschuss", "für", "Verkehr", "tagt"], [(0, 0), (1, 1), (2, 2), (2, 3)],
                              capitalized_nouns=True)
    assert inner.tags == ["B-ORG", "I-ORG", "I-ORG", "O"]
    adjective = project_alignment(["European", "law"], ["B-MISC", "O"], ["europäisches", "Recht"],
                                  [(0, 0), (1, 1)], capitalized_nouns=True)
    assert adjective.tags == ["B-MISC", "O"]


def test_function_words_are_trimmed_from_edges_and_a_piece_of_only_them_is_dropped():
    source, tags = ["in", "the", "Netherlands"], ["O", "B-LOC", "I-LOC"]
    target = ["in", "den", "Niederlanden"]
    links = [(0, 0), (1, 1), (2, 2)]
    assert project_alignment(source, tags, target, links).tags == ["O", "B-LOC", "I-LOC"]
    assert project_alignment(source, tags, target, links, function_words="de").tags == ["O", "O", "B-LOC"]
    assert project_alignment(source, tags, target, links, function_words={"DEN"}).tags == \
        ["O", "B-LOC", "I-LOC"]  # the words are compared lower-cased: give them lower-cased
    only = project_alignment(["Structural", "Fund"], ["B-MISC", "I-MISC"], ["für", "Strukturfonds"],
                             [(0, 0)], function_words="de")
    assert only.tags == ["O", "O"] and only.statuses[0].status == "punctuation"
    with pytest.raises(ValueError, match="no function-word list for 'xx' \\(it has de, en\\)"):
        project_alignment(source, tags, target, links, function_words="xx")


def test_postpositions_follow_a_span_that_starts_with_a_preposition():
    # "at 6 pm": the gold Hinglish slot is "shaam 6 baje ko"; eflomal rarely links "at" to "ko"
    source, tags = ["remind", "me", "at", "6", "pm"], ["O", "O", "B-DATE", "I-DATE", "I-DATE"]
    target = ["shaam", "6", "baje", "Ko", "yaad", "dilao"]
    links = [(0, 4), (0, 5), (3, 1), (4, 0), (4, 2)]
    assert project_alignment(source, tags, target, links).tags == ["B-DATE", "I-DATE", "I-DATE", "O", "O", "O"]
    hindi = project_alignment(source, tags, target, links, postpositions="hi")
    assert hindi.tags == ["B-DATE", "I-DATE", "I-DATE", "I-DATE", "O", "O"]  # case-folded: "Ko"
    assert hindi.entities[0].text == "shaam 6 baje Ko" and hindi.statuses[0].status == "projected"
    # a span without a preposition of its own ("6 pm") does not take it
    bare = ["O", "O", "O", "B-DATE", "I-DATE"]
    assert project_alignment(source, bare, target, links, postpositions="hi").tags == \
        ["B-DATE", "I-DATE", "I-DATE", "O", "O", "O"]
    # several postpositions in a row ("ke liye"), but never a word another span holds
    assert project_alignment(["for", "5"], ["B-DATE", "I-DATE"], ["5", "ke", "liye", "alarm"], [(1, 0)],
                             postpositions="hi").tags == ["B-DATE", "I-DATE", "I-DATE", "O"]
    held = project_alignment(["at", "5", "me"], ["B-DATE", "I-DATE", "B-PERSON"], ["5", "ko"], [(1, 0), (2, 1)],
                             postpositions="hi")
    assert held.tags == ["B-DATE", "B-PERSON"]
    assert project_alignment(["at", "5"], ["B-DATE", "I-DATE"], ["5", "ko"], [(1, 0)], postpositions="hi",
                             reserved=[1]).tags == ["B-DATE", "O"]  # nor a word lexical matching placed
    # the source side's prepositions: English by default, or the words given
    german = (["um", "5"], ["B-DATE", "I-DATE"], ["5", "baje", "ko"], [(1, 0), (1, 1)])
    assert project_alignment(*german, postpositions="hi").tags == ["B-DATE", "I-DATE", "O"]
    assert project_alignment(*german, postpositions="hi", prepositions={"Um"}).tags == ["B-DATE", "I-DATE", "I-DATE"]
    # without the source words there is no preposition to see: only the trimming applies
    assert project_alignment(None, [(0, 2, "DATE")], ["5", "ko"], [(1, 0)], postpositions="hi").tags == ["B-DATE", "O"]


def test_postpositions_never_start_a_piece_but_a_piece_keeps_one_word():
    # "ko Tuesday": the postposition closes the phrase before it
    result = project_alignment(["Tuesday"], ["B-DATE"], ["kal", "ko", "Tuesday", "hai"], [(0, 1), (0, 2)],
                               postpositions={"ko"})
    assert result.tags == ["O", "O", "B-DATE", "O"]
    assert project_alignment(["Tuesday"], ["B-DATE"], ["kal", "ko", "Tuesday", "hai"],
                             [(0, 1), (0, 2)]).tags == ["O", "B-DATE", "I-DATE", "O"]
    only = project_alignment(["me"], ["B-PERSON"], ["mujhe", "ko"], [(0, 1)], postpositions="hi")
    assert only.tags == ["O", "B-PERSON"] and only.statuses[0].status == "projected"
    with pytest.raises(ValueError, match="no adposition list for 'xx' \\(it has en, hi\\)"):
        project_alignment(["a"], ["B-X"], ["b"], [(0, 0)], postpositions="xx")


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_with_postpositions_each_word_is_linked_to_its_span_or_is_a_postposition(data):
    source, tags, target, links = _draw_case(data, ["at", "for", "x", "y"], ["ko", "ke", "w", "z", "."])
    result = project_alignment(source, tags, target, links, postpositions={"ko", "ke"})
    assert is_valid(result.tags)
    from crop_hf.labels import tags_to_spans

    spans_of_source = tags_to_spans(tags)
    for entity in result.entities:
        span = spans_of_source[entity.source]
        words = range(entity.token_start, entity.token_end)
        if len(words) > 1:
            assert target[entity.token_start] not in {"ko", "ke"}
        for j in words:
            linked = any(span.start <= i < span.end and jj == j for i, jj in links)
            # a word without a link from its span is a postposition taken after a preposition
            assert linked or (target[j] in {"ko", "ke"} and source[span.start] in {"at", "for"})
