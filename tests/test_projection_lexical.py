"""Lexical projection: hand-made sentences in de, es, zh, ja, th, ar, ru, and properties."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crop_hf.labels import is_valid, spans_to_tags
from crop_hf.projection import (
    EntityStatus,
    LexicalMatcher,
    Normalizer,
    TranslatedEntity,
    project_lexical,
    read_entities,
    tokenize_target,
    uses_characters,
)


def spans(result):
    return [(e.token_start, e.token_end, e.label) for e in result.entities]


# -- German: punctuation glued to an entity at the end of the sentence, entity at the start ----------

def test_de_entities_at_both_edges_with_glued_punctuation():
    result = project_lexical("Angela Merkel besuchte gestern Göteborg.", [("Angela Merkel", "PER"), ("Göteborg", "LOC")],
                             tokenization="whitespace")
    assert result.tokenization == "whitespace"
    assert result.tags == ["B-PER", "I-PER", "O", "O", "B-LOC"]
    goteborg = result.entities[1]
    assert (goteborg.text, goteborg.start, goteborg.end) == ("Göteborg", 31, 39)  # the "." is not part of it
    assert result.complete and result.kept


def test_raw_text_gives_clean_tokens_with_offsets_into_the_text():
    """Regression: projection onto raw text labelled ``Göteborg,`` and ``Oslo.`` with their punctuation."""
    text = "Ich fahre nach Göteborg, dann nach Oslo."
    result = project_lexical(text, [("Göteborg", "LOC"), ("Oslo", "LOC")])
    assert result.tokenization == "words"
    assert result.tokens == ["Ich", "fahre", "nach", "Göteborg", ",", "dann", "nach", "Oslo", "."]
    assert result.tags == ["O", "O", "O", "B-LOC", "O", "O", "O", "B-LOC", "O"]
    assert [text[e.start:e.end] for e in result.entities] == ["Göteborg", "Oslo"]
    sentence = tokenize_target(text)
    assert [text[a:b] for a, b in sentence.offsets] == sentence.tokens


def test_de_quotes_and_inner_hyphen_tokenized_differently():
    target = ["Der", "Konzern", "„", "Volvo", "“", "und", "Hans", "-", "Peter", "."]
    result = project_lexical(target, [("«Volvo»", "ORG"), ("Hans-Peter", "PER")])
    assert result.tokenization == "given"
    assert spans(result) == [(3, 4, "ORG"), (6, 9, "PER")]


def test_de_without_punctuation_stripping_glued_tokens_do_not_match():
    result = project_lexical("Ich wohne in Göteborg.", [("Göteborg", "LOC")], normalizer=Normalizer(strip_punctuation=False),
                             tokenization="whitespace")
    assert result.statuses[0].status == "missing" and not result.kept


# -- Spanish: longest entity first, repeated entity, no overlaps ------------------------------------

def test_es_longest_first_and_repeated_entity():
    target = "El Real Madrid jugó en Madrid y volvió a Madrid ."
    result = project_lexical(target, [("Madrid", "LOC"), ("Real Madrid", "ORG")])
    # "Real Madrid" is placed first although it comes second; "Madrid" takes the next free copy;
    # the leftover third copy is a repeat of a found entity and is labeled too.
    assert result.tags == ["O", "B-ORG", "I-ORG", "O", "O", "B-LOC", "O", "O", "O", "B-LOC", "O"]
    assert [e.match for e in result.entities] == ["exact", "exact", "repeat"]
    once = project_lexical(target, [("Madrid", "LOC"), ("Real Madrid", "ORG")], repeated="once")
    assert once.tags[9] == "O"


def test_a_shorter_entity_whose_only_occurrence_a_longer_one_claimed_is_missing():
    target = "Vivo en Nueva York City ."
    result = project_lexical(target, [("Nueva York", "LOC"), ("Nueva York City", "ORG")], drop_incomplete=False)
    # "Nueva York City" is longer, so it claims tokens 2-4 first; "Nueva York" has no free copy left.
    assert [(s.text, s.status) for s in result.statuses] == [("Nueva York", "missing"), ("Nueva York City", "found")]
    assert spans(result) == [(2, 5, "ORG")]
    assert result.tags == ["O", "O", "B-ORG", "I-ORG", "I-ORG", "O"]
    assert (result.complete, result.kept) == (False, True)
    dropped = project_lexical(target, [("Nueva York", "LOC"), ("Nueva York City", "ORG")])
    assert (dropped.complete, dropped.kept, dropped.reason) == (False, False, "entity_not_projected")


def test_es_same_string_with_two_types_follows_translation_order():
    target = "Washington llamó a Washington desde Washington"
    entities = [{"text": "Washington", "label": "LOC", "start": 20}, {"text": "Washington", "label": "PER", "start": 0}]
    result = project_lexical(target, entities, repeated="once")
    # Entities are ordered by their offset in the translation: PER first, then LOC.
    assert result.tags == ["B-PER", "O", "O", "B-LOC", "O", "O"]


# -- Chinese: characters, CroP's own example, and its mismatch example (Figure 8) --------------------

def test_zh_characters_and_crop_example():
    result = project_lexical("我住在哥德堡，在沃尔沃工作。", [("哥德堡", "LOC"), ("沃尔沃", "ORG")], lang="zh")
    assert result.tokenization == "characters"
    assert result.tags == ["O", "O", "O", "B-LOC", "I-LOC", "I-LOC", "O", "O", "B-ORG", "I-ORG", "I-ORG", "O", "O", "O"]
    assert [e.text for e in result.entities] == ["哥德堡", "沃尔沃"]


def test_zh_entity_at_start_and_not_found_is_dropped():
    found = project_lexical("哥德堡是瑞典的城市", [("哥德堡", "LOC"), ("瑞典", "LOC")])  # script decides: characters
    assert found.tokenization == "characters"
    assert found.tags[:5] == ["B-LOC", "I-LOC", "I-LOC", "O", "B-LOC"]
    missing = project_lexical("我住在哥德堡。", [("哥的堡", "LOC")], lang="zh")
    assert missing.statuses[0].status == "missing"
    assert (missing.complete, missing.kept, missing.reason) == (False, False, "entity_not_projected")
    assert missing.tags == ["O"] * 7
    kept = project_lexical("我住在哥德堡。", [("哥的堡", "LOC")], lang="zh", drop_incomplete=False)
    assert kept.kept and not kept.complete


def test_zh_pretokenized_corpus_with_punctuation_around_entity():
    target = list("他去了北京。")
    result = project_lexical(target, [("北京。", "LOC")], lang="zh")
    assert spans(result) == [(3, 5, "LOC")]  # the entity's trailing "。" is not part of it


# -- Japanese: kana, NFKC (half-width katakana), Latin inside Japanese -------------------------------

def test_ja_half_width_katakana_matches_after_nfkc():
    target = "私はヨーテボリに住んでいて、Volvoで働いています。"
    result = project_lexical(target, [("ﾖｰﾃﾎﾞﾘ", "LOC"), ("Volvo", "ORG")], lang="ja")
    assert [(e.text, e.label) for e in result.entities] == [("ヨーテボリ", "LOC"), ("Volvo", "ORG")]
    assert result.entities[0].start == target.index("ヨーテボリ")
    without_nfkc = project_lexical(target, [("ﾖｰﾃﾎﾞﾘ", "LOC")], lang="ja", normalizer=Normalizer(nfkc=False))
    assert without_nfkc.statuses[0].status == "missing"
    # Half-width in the target, full-width in the translation: the voicing mark stays on its kana.
    reverse = project_lexical("ﾖｰﾃﾎﾞﾘに住む", [("ヨーテボリ", "LOC")], lang="ja")
    assert reverse.tags == ["B-LOC", "I-LOC", "I-LOC", "I-LOC", "I-LOC", "O", "O", "O"]


# -- Thai: no spaces, combining marks stay with their base, entity at the end ------------------------

def test_th_entity_at_end_with_combining_marks():
    target = "ฉันอาศัยอยู่ในโกเธนเบิร์ก"
    sentence = tokenize_target(target, lang="th")
    assert "".join(sentence.tokens) == target
    assert all(unicodedata.category(token[0])[0] != "M" for token in sentence.tokens)
    assert "ั" in "".join(t[1:] for t in sentence.tokens)  # the vowel sign rides on its consonant
    result = project_lexical(target, [("โกเธนเบิร์ก", "LOC")], lang="th")
    entity = result.entities[0]
    assert (entity.text, entity.end, entity.token_end) == ("โกเธนเบิร์ก", len(target), len(sentence.tokens))
    assert result.tags[entity.token_start - 1] == "O" and result.tags[entity.token_start] == "B-LOC"


# -- Arabic: glued full stop, clitic that exact matching cannot see ----------------------------------

def test_ar_punctuation_and_missing_clitic_form():
    result = project_lexical("أعيش في غوتنبرغ وأعمل في فولفو.", [("غوتنبرغ", "LOC"), ("فولفو", "ORG")])
    assert result.tags == ["O", "O", "B-LOC", "O", "O", "B-ORG", "O"]  # the final "." is a token of its own
    assert result.entities[1].text == "فولفو"
    clitic = project_lexical("أعيش في غوتنبرغ وفولفو", [("فولفو", "ORG")])
    assert clitic.statuses[0].status == "missing"


# -- Russian: entity at the start, inflected form not found, case folding ----------------------------

def test_ru_start_edge_inflection_and_case():
    result = project_lexical("Владимир Путин посетил Москву .", [("Владимир Путин", "PER"), ("Москву", "LOC")])
    assert result.tags == ["B-PER", "I-PER", "O", "B-LOC", "O"]
    inflected = project_lexical("Я живу в Гётеборге", [("Гётеборг", "LOC")])
    assert inflected.statuses[0].status == "missing"
    lower = project_lexical("я живу в москве", [("Москве", "LOC")])
    assert lower.statuses[0].status == "missing"
    folded = project_lexical("я живу в москве", [("Москве", "LOC")], normalizer=Normalizer(ignore_case=True))
    assert folded.tags == ["O", "O", "O", "B-LOC"]


# -- labeled-translation output as input -----------------------------------------------------------

def test_labeled_translation_output_is_accepted():
    translation = {
        "translation": "Ich lebe in Göteborg und arbeite für Volvo.",
        "marked_translation": "Ich lebe in __SLOT0__ Göteborg __SLOT0__ und arbeite für __SLOT1__ Volvo __SLOT1__.",
        "entities": [{"text": "Volvo", "label": "ORG", "start": 37, "end": 42},
                     {"text": "Göteborg", "label": "LOC", "start": 12, "end": 20}],
        "complete": True,
    }
    result = project_lexical("Ich wohne in Göteborg und arbeite bei Volvo .", translation)
    assert [s.text for s in result.statuses] == ["Göteborg", "Volvo"]  # ordered by offset
    assert result.tags == ["O", "O", "O", "B-LOC", "O", "O", "O", "B-ORG", "O"]
    broken = project_lexical("Ich wohne in Göteborg .", {**translation, "complete": False})
    assert (broken.kept, broken.reason) == (False, "translation_incomplete")


def test_bad_entities_are_reported():
    with pytest.raises(ValueError, match="entity 1 has no 'label'"):
        project_lexical("a b", [{"text": "a", "label": "X"}, {"text": "b"}])
    with pytest.raises(ValueError, match=r"^a labeled translation needs an 'entities' list "
                                         r"\(the labeled-translation pipeline output\)$"):
        project_lexical("a b", {"translation": "a b"})
    with pytest.raises(ValueError, match="repeated must be"):
        project_lexical("a b", [], repeated="twice")
    empty = project_lexical("a b", [("«»", "X"), ("", "Y")])
    assert [s.status for s in empty.statuses] == ["empty", "empty"]  # nothing left after normalization
    assert not empty.complete


def test_offsets_survive_irregular_whitespace():
    text = "  Ich\twohne  in\u00a0Göteborg. "
    sentence = tokenize_target(text, tokenization="whitespace")
    assert sentence.tokens == ["Ich", "wohne", "in", "Göteborg."]
    assert [text[s:e] for s, e in sentence.offsets] == sentence.tokens
    words = tokenize_target(text)
    assert words.tokens == ["Ich", "wohne", "in", "Göteborg", "."]
    assert [text[s:e] for s, e in words.offsets] == words.tokens
    entity = project_lexical(text, [("Göteborg", "LOC")]).entities[0]
    assert text[entity.start:entity.end] == "Göteborg"


def test_language_decides_tokenization():
    assert uses_characters("abc", "zh-Hans") and uses_characters("abc", "zho_Hans") and uses_characters("abc", "__ja__")
    assert not uses_characters("我住在哥德堡", "de")
    assert not uses_characters("Ich wohne in Göteborg (哥德堡)")
    assert tokenize_target("a b", tokenization="characters").tokens == ["a", "b"]
    with pytest.raises(ValueError, match="tokenization must be"):
        tokenize_target("a", tokenization="wordpiece")


def test_labeled_translation_without_complete_key_counts_as_complete():
    output = {"translation": "Ich wohne in Oslo.", "entities": [{"text": "Oslo", "label": "LOC", "start": 12, "end": 16}]}
    assert read_entities(output) == ([TranslatedEntity("Oslo", "LOC", 12)], True)
    result = project_lexical("Ich wohne in Oslo .", output)
    assert (result.complete, result.kept, result.reason) == (True, True, None)


def test_list_pairs_are_read_like_tuple_pairs():
    entities = [["Göteborg", "LOC"], ("Volvo", "ORG")]
    assert read_entities(entities) == ([TranslatedEntity("Göteborg", "LOC"), TranslatedEntity("Volvo", "ORG")], True)
    result = project_lexical("Ich arbeite in Göteborg bei Volvo .", entities)
    assert result.tags == ["O", "O", "O", "B-LOC", "O", "B-ORG", "O"]
    assert result.statuses == [EntityStatus("Göteborg", "LOC", "found"), EntityStatus("Volvo", "ORG", "found")]


EXPECTED_SHAPE = r": expected a dict with 'text' and 'label' or a \(text, label\) pair$"


def test_entities_that_are_not_text_label_pairs_are_rejected_with_their_index():
    with pytest.raises(ValueError, match=r"^entity 1 is \('Oslo', 'LOC', 12\)" + EXPECTED_SHAPE):
        read_entities([("Bergen", "LOC"), ("Oslo", "LOC", 12)])
    with pytest.raises(ValueError, match=r"^entity 0 is \('Oslo',\)" + EXPECTED_SHAPE):
        read_entities([("Oslo",)])
    with pytest.raises(ValueError, match=r"^entity 0 is \['Oslo', 'LOC', 12\]" + EXPECTED_SHAPE):
        read_entities([["Oslo", "LOC", 12]])
    with pytest.raises(ValueError, match=r"^entity 0 is 'EU'" + EXPECTED_SHAPE):
        read_entities([("EU")])  # a forgotten comma: a bare string, even of length 2, is not a pair
    with pytest.raises(ValueError, match=r"^entity 0 is None" + EXPECTED_SHAPE):
        project_lexical("a b", [None])


# -- sources, statuses, edge punctuation, empty tokens ---------------------------------------------

def test_projected_entities_name_their_source_entity_and_statuses_keep_the_label():
    target = "El Real Madrid jugó en Madrid y volvió a Madrid ."
    result = project_lexical(target, [("Madrid", "LOC"), ("Real Madrid", "ORG"), ("Sevilla", "LOC")], drop_incomplete=False)
    # Sorted by position: "Real Madrid" (entity 1), then the exact and the repeated "Madrid" (entity 0).
    assert [(e.text, e.source, e.match) for e in result.entities] == [
        ("Real Madrid", 1, "exact"), ("Madrid", 0, "exact"), ("Madrid", 0, "repeat")]
    assert result.statuses == [EntityStatus("Madrid", "LOC", "found"), EntityStatus("Real Madrid", "ORG", "found"),
                               EntityStatus("Sevilla", "LOC", "missing")]
    assert result.to_dict()["entity_status"][2] == {"text": "Sevilla", "label": "LOC", "status": "missing"}


def test_trailing_punctuation_words_of_an_entity_are_matched_when_present_and_optional_otherwise():
    full = project_lexical("Papst Paul VI . kam", [("Paul VI .", "PER")])
    assert [(e.text, e.token_start, e.token_end) for e in full.entities] == [("Paul VI .", 1, 4)]
    short = project_lexical("Papst Paul VI kam", [("Paul VI .", "PER")])
    assert [(e.text, e.token_start, e.token_end) for e in short.entities] == [("Paul VI", 1, 3)]
    assert short.statuses == [EntityStatus("Paul VI .", "PER", "found")] and short.kept


def test_enclosing_punctuation_words_of_an_entity_are_matched_when_present_and_optional_otherwise():
    full = project_lexical("bei « Volvo » .", [("« Volvo »", "ORG")])
    assert [(e.text, e.token_start, e.token_end) for e in full.entities] == [("« Volvo »", 1, 4)]
    bare = project_lexical("bei Volvo .", [("« Volvo »", "ORG")])
    assert [(e.text, e.token_start, e.token_end) for e in bare.entities] == [("Volvo", 1, 2)]
    nested = project_lexical("bei Volvo .", [("( « Volvo » )", "ORG")])  # several punctuation words per edge
    assert [(e.text, e.token_start, e.token_end) for e in nested.entities] == [("Volvo", 1, 2)]
    assert nested.statuses[0].status == "found"


def test_character_entity_keeps_a_trailing_full_stop_the_target_has():
    full = project_lexical("我住在哥德堡。", [("哥德堡。", "LOC")], lang="zh")
    assert [(e.text, e.token_start, e.token_end) for e in full.entities] == [("哥德堡。", 3, 7)]
    assert full.tags == ["O", "O", "O", "B-LOC", "I-LOC", "I-LOC", "I-LOC"]
    bare = project_lexical("哥德堡是城市", [("哥德堡。", "LOC")], lang="zh")
    assert [(e.text, e.token_start, e.token_end) for e in bare.entities] == [("哥德堡", 0, 3)]


def test_without_punctuation_stripping_the_projected_text_keeps_glued_punctuation():
    text = "Ich wohne in Göteborg."
    result = project_lexical(text, [("Göteborg.", "LOC")], normalizer=Normalizer(strip_punctuation=False),
                             tokenization="whitespace")
    entity = result.entities[0]
    assert (entity.text, entity.start, entity.end) == ("Göteborg.", 13, 22)
    assert text[entity.start:entity.end] == "Göteborg."


def test_an_empty_given_token_separates_its_neighbours():
    target = ["Oslo", "", "Bergen"]
    matcher = LexicalMatcher(tokenize_target(target))
    assert matcher.units == ["Oslo", "\x00", "Bergen"]  # a NUL stands in for it: a boundary of its own
    assert (matcher.haystack, matcher.bounds) == ("Oslo\x00Bergen", [0, 4, 5, 11])
    result = project_lexical(target, [("Oslo Bergen", "LOC"), ("Bergen", "LOC")], drop_incomplete=False)
    assert [s.status for s in result.statuses] == ["missing", "found"]
    assert result.tags == ["O", "O", "B-LOC"]


def test_an_occurrence_starting_inside_a_rejected_one_is_still_found():
    # "AA" first occurs across "USA" and "AA" (not on a token boundary); the next match starts one character later.
    result = project_lexical("Flug der USA AA nach Dallas", [("AA", "ORG"), ("Dallas", "LOC")])
    assert result.tags == ["O", "O", "O", "B-ORG", "O", "B-LOC"]
    assert [(e.text, e.start, e.end) for e in result.entities] == [("AA", 13, 15), ("Dallas", 21, 27)]


def test_punctuation_only_entities_are_empty_even_where_the_target_has_them():
    result = project_lexical("Er sagte « » und ging .", [("« »", "MISC"), ("«»", "MISC"), (".", "MISC")])
    assert result.statuses == [EntityStatus("« »", "MISC", "empty"), EntityStatus("«»", "MISC", "empty"),
                               EntityStatus(".", "MISC", "empty")]
    assert result.entities == [] and result.tags == ["O"] * 7
    assert (result.complete, result.kept, result.reason) == (False, False, "entity_not_projected")


# -- properties -------------------------------------------------------------------------------------

FILLER = ["der", "die", "und", "in", "am", "ist", "war", "nach", "ein"]


@st.composite
def sentences_with_entities(draw):
    """Filler words with entities of unique words inserted: each entity occurs exactly once."""
    pieces, entities, unique = [], [], iter(range(10_000))
    for _ in range(draw(st.integers(1, 6))):
        pieces += draw(st.lists(st.sampled_from(FILLER), max_size=3))
        if draw(st.booleans()):
            words = [f"N{next(unique)}" for _ in range(draw(st.integers(1, 3)))]
            label = draw(st.sampled_from(["PER", "ORG", "LOC"]))
            entities.append((len(pieces), len(pieces) + len(words), label))
            pieces += words
    return pieces, entities


@settings(max_examples=150, deadline=None)
@given(sentences_with_entities(), st.randoms(use_true_random=False), st.booleans())
def test_unique_entities_are_all_found_where_they_are(case, random, as_text):
    tokens, gold = case
    entities = [(" ".join(tokens[s:e]), label) for s, e, label in gold]
    random.shuffle(entities)
    target = " ".join(tokens) if as_text else tokens
    result = project_lexical(target, entities)
    assert result.complete
    assert result.tags == spans_to_tags(gold, len(tokens))
    assert is_valid(result.tags)


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="的一是在不了有和人这中大为上个国", max_size=12), st.lists(
    st.text(alphabet="哥德堡沃尔瑞典", min_size=1, max_size=4), max_size=3, unique=True))
def test_character_matching_never_overlaps_and_finds_inserted_entities(filler, names):
    target = filler + "".join(names)
    result = project_lexical(target, [(name, "LOC") for name in names], lang="zh")
    assert result.tokenization == "characters"
    covered = [i for e in result.entities for i in range(e.token_start, e.token_end)]
    assert len(covered) == len(set(covered))
    for entity in result.entities:
        assert entity.text == target[entity.start:entity.end]
    assert is_valid(result.tags)
