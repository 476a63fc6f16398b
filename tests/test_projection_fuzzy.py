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
