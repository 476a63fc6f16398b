"""Fuzzy projection: exact first, then RapidFuzz similarity, never one target span twice."""

from __future__ import annotations

import pytest

from crop_hf.projection import project_fuzzy, project_lexical


def test_es_inflected_name_is_found_above_threshold():
    result = project_fuzzy("Vivo en Gotemburg y trabajo para Volvo .", [("Gotemburgo", "LOC"), ("Volvo", "ORG")])
    assert result.tags == ["O", "O", "B-LOC", "O", "O", "O", "B-ORG", "O"]
    assert [s.status for s in result.statuses] == ["fuzzy", "found"]
    fuzzy = next(e for e in result.entities if e.match == "fuzzy")
    assert fuzzy.text == "Gotemburg" and 90 < fuzzy.score < 100
    assert result.method == "fuzzy" and result.kept


def test_ru_case_ending_and_ar_clitic():
    ru = project_fuzzy("Я живу в Гётеборге", [("Гётеборг", "LOC")])
    assert ru.tags == ["O", "O", "O", "B-LOC"]
    ar = project_fuzzy("أعيش في غوتنبرغ وفولفو", [("فولفو", "ORG")])
    assert ar.tags == ["O", "O", "O", "B-ORG"]


def test_zh_crop_mismatch_needs_a_lower_threshold():
    default = project_fuzzy("我住在哥德堡。", [("哥的堡", "LOC")], lang="zh")
    assert default.statuses[0].status == "missing" and not default.kept
    lowered = project_fuzzy("我住在哥德堡。", [("哥的堡", "LOC")], lang="zh", threshold=60)
    assert lowered.tags == ["O", "O", "O", "B-LOC", "I-LOC", "I-LOC", "O"]


def test_exact_matches_come_first_and_no_span_is_assigned_twice():
    # "Merkel" matches exactly; "Merkell" may only take what is left, never the exact match's word.
    result = project_fuzzy("Merkel traf Merkels Partei", [("Merkell", "PER"), ("Merkel", "PER")], repeated="once")
    assert [(e.text, e.match) for e in result.entities] == [("Merkel", "exact"), ("Merkels", "fuzzy")]
    # Two missing entities competing for one similar word: the better score wins, the other is missing.
    contested = project_fuzzy("Ich wohne in Göteborgs Hafen", [("Göteborx", "LOC"), ("Göteborg", "ORG")])
    assert [(e.text, e.label) for e in contested.entities] == [("Göteborgs", "ORG")]
    assert [s.status for s in contested.statuses] == ["missing", "fuzzy"]


def test_fuzzy_is_a_superset_of_lexical():
    cases = [
        ("El Real Madrid jugó en Madrid .", [("Real Madrid", "ORG"), ("Madrid", "LOC")]),
        ("Angela Merkel besuchte Paris .", [("Angela Merkel", "PER"), ("Pariz", "LOC")]),
    ]
    for target, entities in cases:
        exact = project_lexical(target, entities)
        fuzzy = project_fuzzy(target, entities)
        assert {(e.token_start, e.token_end, e.label) for e in exact.entities} <= {
            (e.token_start, e.token_end, e.label) for e in fuzzy.entities}


def test_threshold_is_validated():
    with pytest.raises(ValueError, match="threshold"):
        project_fuzzy("a", [("a", "X")], threshold=0)


def test_fuzzy_matching_ignores_case():
    """A raw sentence in capitals still matches the translated entity (case-folded similarity)."""
    result = project_fuzzy("FLUG NACH NEW YORK HEUTE", [("New Yorck", "LOC")])
    assert result.tags == ["O", "O", "B-LOC", "I-LOC", "O"] and result.statuses[0].status == "fuzzy"


def test_threshold_is_a_similarity_in_zero_to_hundred_and_defaults_to_eighty():
    # fuzz.ratio("paris", "pariz") is exactly 80: the default threshold accepts it, a stricter one does not.
    result = project_fuzzy("Vivo en Pariz .", [("Paris", "LOC")])
    assert result.tags == ["O", "O", "B-LOC", "O"] and result.entities[0].score == 80
    assert project_fuzzy("Vivo en Pariz .", [("Paris", "LOC")], threshold=100).statuses[0].status == "missing"
    assert project_fuzzy("Vivo en Pariz .", [("Paris", "LOC")], threshold=0.5).tags[2] == "B-LOC"
    for bad in (0, -1, 100.5):
        with pytest.raises(ValueError, match="threshold is a similarity in"):
            project_fuzzy("Vivo en Pariz .", [("Paris", "LOC")], threshold=bad)


def test_a_run_at_the_longest_length_that_can_still_qualify_is_compared():
    # len 5 entity, threshold 80: runs of up to 7 characters can score 80 ("parisii": 2*5/12 = 83.3).
    result = project_fuzzy("Vivo en Parisii .", [("Paris", "LOC")])
    assert result.tags == ["O", "O", "B-LOC", "O"] and round(result.entities[0].score, 1) == 83.3


def test_each_entity_gets_one_run_and_a_skipped_pair_does_not_end_the_pass():
    # Gotemburgo's second-best run ("Gotemburg y", 90) is skipped; Paris's pair (80) still comes after it.
    result = project_fuzzy("Vivo en Gotemburg y Pariz", [("Gotemburgo", "LOC"), ("Paris", "LOC")])
    assert result.tags == ["O", "O", "B-LOC", "O", "B-LOC"]
    assert [s.status for s in result.statuses] == ["fuzzy", "fuzzy"]
    assert sorted((e.text, e.source) for e in result.entities) == [("Gotemburg", 0), ("Pariz", 1)]
    # Two disjoint similar runs: the entity takes the best one only (no repeats of fuzzy matches).
    assert project_fuzzy("Gotemburg y Gotemburk", [("Gotemburgo", "LOC")]).tags == ["B-LOC", "O", "O"]


def test_repeats_of_exact_matches_follow_the_fuzzy_pass_and_the_normalizer_is_used():
    from crop_hf.projection import Normalizer

    target = "Hamburg und Hamburg sowie Gotemburg"
    result = project_fuzzy(target, [("Hamburg", "LOC"), ("Gotemburgo", "LOC")])
    assert result.tags == ["B-LOC", "O", "B-LOC", "O", "B-LOC"]
    assert [e.match for e in sorted(result.entities, key=lambda e: e.token_start)] == ["exact", "repeat", "fuzzy"]
    assert project_fuzzy(target, [("Hamburg", "LOC")], repeated="once").tags == ["B-LOC", "O", "O", "O", "O"]
    # The exact pass compares with the given normalizer: case-folded, "HAMBURG" is an exact match.
    folded = project_fuzzy("Ich wohne in HAMBURG", [("Hamburg", "LOC")], normalizer=Normalizer(ignore_case=True))
    assert folded.statuses[0].status == "found"
    assert project_fuzzy("Ich wohne in HAMBURG", [("Hamburg", "LOC")]).statuses[0].status == "fuzzy"


def test_the_language_code_decides_the_tokenization():
    # Mostly Latin letters: without a language code the sentence is read as words, with lang="zh"
    # as characters (a Chinese sentence quoting a German name).
    target, entities = "住在Gotenburg", [("Gotemburg", "LOC")]
    assert project_fuzzy(target, entities).tags == ["B-LOC"]
    assert project_fuzzy(target, entities, lang="zh").tags == ["O", "O", "B-LOC"] + ["I-LOC"] * 8
