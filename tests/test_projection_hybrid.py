"""Hybrid projection: lexical matching (exact, then case-folded) first, word alignment for what it cannot place."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crop_hf.labels import is_valid, tags_to_spans
from crop_hf.projection import ProjectionPipeline, project_alignment, project_hybrid
from crop_hf.projection.methods import PROJECTION_METHODS, ProjectionExample, project_examples
from crop_hf.projection.target import tokenize_target


def test_lexical_first_then_case_folded_then_alignment():
    source = ["Set", "a", "timer", "for", "Liz", "in", "New", "York"]
    tags = ["O", "O", "B-METHOD", "O", "B-NAME", "O", "B-LOC", "I-LOC"]
    target = ["liz", "ke", "liye", "New", "York", "mein", "ghadi", "lagao"]
    links = [(2, 6), (4, 0), (6, 3), (7, 4), (0, 7)]
    result = project_hybrid(source, tags, target, links)
    assert result.tags == ["B-NAME", "O", "O", "B-LOC", "I-LOC", "O", "B-METHOD", "O"]
    assert [s.status for s in result.statuses] == ["projected", "found", "found"]
    by_label = {e.label: e.match for e in result.entities}
    assert by_label == {"LOC": "exact", "NAME": "normalized", "METHOD": "alignment"}
    assert result.complete and result.method == "hybrid"


def test_alignment_never_overlaps_what_lexical_matching_placed():
    # "Berlin" (LOC) is found lexically at target word 2; the alignment wrongly links the PER span
    # "Anna Schmidt" to words 1-2. Alignment projection alone lets LOC lose word 2 or PER take it.
    source, tags = ["Anna", "Schmidt", "in", "Berlin"], ["B-PER", "I-PER", "O", "B-LOC"]
    target = ["die", "Frau", "Berlin", "besucht"]
    links = [(0, 1), (1, 2), (3, 3)]
    hybrid = project_hybrid(source, tags, target, links)
    assert hybrid.tags == ["O", "B-PER", "B-LOC", "O"]
    plain = project_alignment(source, tags, target, links)
    assert plain.tags != hybrid.tags  # the link into "Berlin" was not used by the PER span


def test_translated_entities_are_what_lexical_matching_looks_for():
    result = project_hybrid(["the", "White", "House"], ["O", "B-ORG", "I-ORG"], ["la", "Casa", "Blanca"],
                            [], entities=[("Casa Blanca", "ORG")])
    assert result.tags == ["O", "B-ORG", "I-ORG"] and result.statuses[0].status == "found"
    with pytest.raises(ValueError, match="1 entity texts for 2 source spans"):
        project_hybrid(["a", "b"], ["B-X", "B-Y"], ["a", "b"], [], entities=[("a", "X")])
    with pytest.raises(ValueError, match="outside the sentences"):
        project_hybrid(["a", "b"], ["B-X", "O"], ["c"], [(0, 5)])


_words = st.sampled_from(["a", "b", "c", "d", "e", "f"])


@st.composite
def _cases(draw):
    source = draw(st.lists(_words, min_size=1, max_size=7))
    target = draw(st.lists(_words, min_size=1, max_size=7))
    tags, i = [], 0
    while i < len(source):
        if draw(st.booleans()):
            length = draw(st.integers(1, min(2, len(source) - i)))
            label = draw(st.sampled_from(["X", "Y"]))
            tags += [f"B-{label}"] + [f"I-{label}"] * (length - 1)
            i += length
        else:
            tags.append("O")
            i += 1
    links = draw(st.lists(st.tuples(st.integers(0, len(source) - 1), st.integers(0, len(target) - 1)),
                          unique=True, max_size=10))
    return source, tags, target, links, draw(st.integers(0, 2))


@given(_cases())
def test_hybrid_is_valid_disjoint_and_alignment_where_nothing_matches(case):
    source, tags, target, links, fill_gaps = case
    result = project_hybrid(source, tags, target, links, fill_gaps=fill_gaps)
    assert is_valid(result.tags)
    placed = [set(range(e.token_start, e.token_end)) for e in result.entities]
    assert all(not (a & b) for i, a in enumerate(placed) for b in placed[i + 1:])
    lexical = {j for e in result.entities if e.match in {"exact", "normalized"} for j in range(e.token_start, e.token_end)}
    aligned = {j for e in result.entities if e.match == "alignment" for j in range(e.token_start, e.token_end)}
    assert not lexical & aligned
    assert len(result.statuses) == len(tags_to_spans(tags))
    upper = [w.upper() + "Z" for w in target]  # no source word can match: hybrid is alignment projection
    for pieces in ("split", "largest"):
        assert (project_hybrid(source, tags, upper, links, fill_gaps=fill_gaps, pieces=pieces).tags
                == project_alignment(source, tags, upper, links, fill_gaps=fill_gaps, pieces=pieces).tags)


def test_gap_filling_never_crosses_a_lexical_match():
    """Regression (Hinglish-TOP): a slot's gap filled across a lexically placed slot made overlapping spans."""
    source = ["remind", "Ana", "to", "call", "Bo"]
    tags = ["O", "B-PERSON", "B-TODO", "I-TODO", "B-NAME"]
    target = ["Ana", "ko", "Bo", "ko", "call"]  # "Bo" is placed lexically inside the gap of TODO's links
    result = project_hybrid(source, tags, target, [(2, 1), (3, 4)], fill_gaps=3, pieces="split")
    assert result.tags == ["B-PERSON", "B-TODO", "B-NAME", "B-TODO", "I-TODO"]
    assert [s.status for s in result.statuses] == ["found", "split", "found"]
    largest = project_hybrid(source, tags, target, [(2, 1), (3, 4), (2, 4)], fill_gaps=3)
    assert largest.tags == ["B-PERSON", "O", "B-NAME", "B-TODO", "I-TODO"]  # the piece with more links


def test_hybrid_is_a_registry_row_the_pipeline_and_synthesis_share():
    assert PROJECTION_METHODS["hybrid"].uses_alignment
    example = ProjectionExample(tokenize_target(["liz", "ghadi"]), source_tokens=["timer", "Liz"],
                                source_spans=tags_to_spans(["B-METHOD", "B-NAME"]), alignment=[(0, 1)])
    (result,) = project_examples("hybrid", [example])
    out = ProjectionPipeline(method="hybrid")({"target": ["liz", "ghadi"], "source_tokens": ["timer", "Liz"],
                                                "source_tags": ["B-METHOD", "B-NAME"], "alignment": "0-1"})
    assert out["tags"] == result.tags == ["B-NAME", "B-METHOD"]


def test_longer_texts_are_placed_first_and_each_entity_keeps_its_source_index():
    source = ["New", "York", "and", "New", "York", "City"]
    tags = ["B-LOC", "I-LOC", "O", "B-ORG", "I-ORG", "I-ORG"]
    result = project_hybrid(source, tags, "Vivo en New York City .", [])
    # "New York City" claims its words before "New York", which then has no free copy and no link.
    assert result.tags == ["O", "O", "B-ORG", "I-ORG", "I-ORG", "O"]
    assert [(s.text, s.status) for s in result.statuses] == [("New York", "unaligned"), ("New York City", "found")]
    assert [(e.source, e.match) for e in result.entities] == [(1, "exact")]
    assert result.kept and not result.complete  # not dropped unless asked
    assert not project_hybrid(source, tags, "Vivo en New York City .", [], drop_incomplete=True).kept


def test_alignment_pass_joins_pieces_one_word_apart_by_default_and_reads_the_scheme():
    source = ["Call", "Anna", "Maria", "now"]
    tags = ["O", "S-NAME", "S-NAME", "O"]  # BIOES: two single-word names
    target = ["ruf", "X", "jetzt", "Y", "an"]
    links = [(1, 1), (2, 3)]
    result = project_hybrid(source, tags, target, links, scheme="BIOES")
    assert result.tags == ["O", "B-NAME", "O", "B-NAME", "O"]
    assert [(e.source, e.match) for e in result.entities] == [(0, "alignment"), (1, "alignment")]
    one = project_hybrid(source, ["O", "B-NAME", "I-NAME", "O"], ["ruf", "X", "a", "b", "Y", "an"], [(1, 1), (2, 4)])
    assert one.tags == ["O", "B-NAME", "O", "O", "O", "O"]  # a two-word gap is not filled: the largest piece
    filled = project_hybrid(source, ["O", "B-NAME", "I-NAME", "O"], ["ruf", "X", "a", "Y", "an"], [(1, 1), (2, 3)])
    assert filled.tags == ["O", "B-NAME", "I-NAME", "I-NAME", "O"]  # a one-word gap is


def test_alignment_pass_leaves_lexical_claims_alone_and_checks_its_links():
    source, tags = ["Paris", "and", "Lyon"], ["B-LOC", "O", "B-ORG"]
    target = ["Paris", "und", "Lyons"]  # "Lyon" is not found lexically
    links = [(0, 0), (2, 0), (2, 2)]  # Lyon is linked to Paris's word too, which lexical matching claimed
    result = project_hybrid(source, tags, target, links)
    assert result.tags == ["B-LOC", "O", "B-ORG"]
    assert sorted((e.token_start, e.source, e.match) for e in result.entities) == [(0, 0, "exact"), (2, 1, "alignment")]
    assert [(s.text, s.label, s.status) for s in result.statuses] == [("Paris", "LOC", "found"),
                                                                       ("Lyon", "ORG", "projected")]
    with pytest.raises(ValueError, match="alignment link 9-0 is outside"):
        project_hybrid(source, tags, target, [(9, 0)])


def test_language_and_tokenization_reach_the_target_tokenizer():
    for options in ({"tokenization": "characters"}, {"lang": "zh"}):
        result = project_hybrid(["Paris"], ["B-LOC"], "inParis", [], **options)
        assert result.tokenization == "characters" and result.tags == ["O", "O", "B-LOC"] + ["I-LOC"] * 4
    assert project_hybrid(["Paris"], ["B-LOC"], "inParis", []).tags == ["O"]  # words: not found


def test_the_fuzzy_pass_places_names_spelled_alike_before_the_alignment():
    source, tags = ["Parliament", "supports", "Indonesia"], ["B-ORG", "O", "B-LOC"]
    target = ["Das", "Parlament", "unterstützt", "Indonesien"]
    links = [(0, 1), (1, 2), (2, 2)]  # a wrong link: Indonesia → unterstützt
    plain = project_hybrid(source, tags, target, links)
    assert plain.tags == ["O", "B-ORG", "B-LOC", "O"]
    fuzzy = project_hybrid(source, tags, target, links, threshold=80)
    assert fuzzy.tags == ["O", "B-ORG", "O", "B-LOC"]
    assert [(e.text, e.match, e.score) for e in fuzzy.entities] == [("Parlament", "fuzzy", 94.74),
                                                                  ("Indonesien", "fuzzy", 84.21)]
    assert [s.status for s in fuzzy.statuses] == ["fuzzy", "fuzzy"] and fuzzy.complete
    # above the threshold only: at 85 "Indonesien" (84.21) is left to the alignment
    assert project_hybrid(source, tags, target, links, threshold=85).tags == ["O", "B-ORG", "B-LOC", "O"]
    # case and hyphens: "Millennium bug" is the "Millenium-Bug"
    found = project_hybrid(["the", "Millennium", "bug"], ["O", "B-MISC", "I-MISC"], ["der", "Millenium-Bug"], [],
                           threshold=80)
    assert found.tags == ["O", "B-MISC"]
    # never a token that an exact match took
    exact = project_hybrid(["Oslo", "and", "Osloer"], ["B-LOC", "O", "B-MISC"], ["Oslo", "und"], [], threshold=50)
    assert exact.tags == ["B-LOC", "O"] and [s.status for s in exact.statuses] == ["found", "unaligned"]


def test_hybrid_passes_trim_edges_and_one_word_to_its_alignment_pass():
    source, tags = ["a", "Dutch", "broadcaster"], ["O", "B-MISC", "O"]
    target = ["ein", "holländischer", "Sender"]
    links = [(0, 0), (1, 1), (1, 2), (2, 2)]
    assert project_hybrid(source, tags, target, links).tags == ["O", "B-MISC", "I-MISC"]
    assert project_hybrid(source, tags, target, links, one_word=True).tags == ["O", "B-MISC", "O"]
    assert project_hybrid(source, tags, target, links, trim_edges=True).tags == ["O", "B-MISC", "O"]
    example = ProjectionExample(tokenize_target(target), source_tokens=source, source_spans=tags_to_spans(tags),
                                alignment=links)
    assert project_examples("hybrid", [example], one_word=True, threshold=None)[0].tags == ["O", "B-MISC", "O"]


def test_a_method_name_may_carry_options_everywhere_a_method_is_named():
    from crop_hf.projection.methods import get_method, parse_method

    assert parse_method("hybrid?trim_edges=true&threshold=80&pieces=split&fill_gaps=2&postpositions=none") == (
        "hybrid", {"trim_edges": True, "threshold": 80, "pieces": "split", "fill_gaps": 2, "postpositions": None})
    assert get_method("hybrid?one_word=true").name == "hybrid"
    with pytest.raises(ValueError, match=r"^projection method 'alignment': unknown option 'fuzzy'"):
        get_method("alignment?fuzzy=80")
    with pytest.raises(ValueError, match="expected key=value"):
        get_method("hybrid?one_word")
    source, tags = ["a", "Dutch", "broadcaster"], ["O", "B-MISC", "O"]
    target, links = ["ein", "holländischer", "Sender"], [(0, 0), (1, 1), (1, 2), (2, 2)]
    example = lambda: ProjectionExample(tokenize_target(target), source_tokens=source,  # noqa: E731
                                        source_spans=tags_to_spans(tags), alignment=links)
    assert project_examples("hybrid?one_word=true", [example()])[0].tags == ["O", "B-MISC", "O"]
    # an option given by name wins over the one written in the method
    assert project_examples("hybrid?one_word=true", [example()], one_word=False)[0].tags == ["O", "B-MISC", "I-MISC"]
    projector = ProjectionPipeline(method="hybrid?one_word=true")
    out = projector({"source_tokens": source, "source_tags": tags, "target": target, "alignment": links})
    assert out["tags"] == ["O", "B-MISC", "O"]
    out = projector({"source_tokens": source, "source_tags": tags, "target": target, "alignment": links},
                    method="hybrid")
    assert out["tags"] == ["O", "B-MISC", "I-MISC"]
    from crop_hf.augment.translate_align import TranslateAlignConfig

    assert TranslateAlignConfig(input="in", output_dir="out", tgt_lang="de", method="hybrid?one_word=true").method
    with pytest.raises(ValueError, match="unknown option 'bogus'"):
        TranslateAlignConfig(input="in", output_dir="out", tgt_lang="de", method="hybrid?bogus=1")


def test_the_german_rules_reach_hybrid_projection_through_a_method_spec():
    source, tags = ["the", "Member", "States", "are", "trying"], ["O", "B-ORG", "I-ORG", "O", "O"]
    target, links = ["die", "Mitgliedstaaten", "sind", "bemüht"], [(0, 0), (2, 1), (2, 2), (3, 2), (4, 3)]
    example = lambda: ProjectionExample(tokenize_target(target), source_tokens=source,  # noqa: E731
                                        source_spans=tags_to_spans(tags), alignment=links)
    assert project_examples("hybrid", [example()])[0].tags == ["O", "B-ORG", "I-ORG", "O"]
    german = "hybrid?capitalized_nouns=true&function_words=de"
    assert project_examples(german, [example()])[0].tags == ["O", "B-ORG", "O", "O"]
    # each rule alone reaches the alignment pass ("sind" is lowercase and a function word)
    assert project_examples("hybrid?capitalized_nouns=true", [example()])[0].tags == ["O", "B-ORG", "O", "O"]
    assert project_examples("hybrid?function_words=de", [example()])[0].tags == ["O", "B-ORG", "O", "O"]
    assert project_examples("alignment?function_words=de&capitalized_nouns=true", [example()])[0].tags == \
        ["O", "B-ORG", "O", "O"]


def test_the_hindi_rules_reach_hybrid_projection_through_a_method_spec():
    # English "me" is also a Hindi word ("in"): lexical matching must not place PERSON there
    source, tags = ["remind", "me", "at", "6"], ["O", "B-PERSON", "B-DATE", "I-DATE"]
    target = ["mujhe", "6", "baje", "ko", "ghar", "me", "yaad", "dilao"]
    links = [(0, 6), (0, 7), (1, 0), (3, 1), (3, 2)]
    example = lambda: ProjectionExample(tokenize_target(target), source_tokens=source,  # noqa: E731
                                        source_spans=tags_to_spans(tags), alignment=links)
    plain = project_examples("hybrid", [example()])[0]
    assert plain.tags == ["O", "B-DATE", "I-DATE", "O", "O", "B-PERSON", "O", "O"]
    hindi = project_examples("hybrid?postpositions=hi", [example()])[0]
    assert hindi.tags == ["B-PERSON", "B-DATE", "I-DATE", "I-DATE", "O", "O", "O", "O"]
    assert [e.match for e in sorted(hindi.entities, key=lambda e: e.source)] == ["alignment", "alignment"]
    # a lexical match that is not all postpositions stays lexical
    named = project_hybrid(["call", "Ko", "Jin"], ["O", "B-NAME", "I-NAME"], ["Ko", "Jin", "ko", "call", "karo"],
                           [(0, 3)], postpositions="hi")
    assert named.tags == ["B-NAME", "I-NAME", "O", "O", "O"] and named.entities[0].match == "exact"
    # a postposition lexical matching refused stays free: the slot before it may take it
    freed = project_hybrid(["at", "6", "me"], ["B-DATE", "I-DATE", "B-PERSON"], ["6", "baje", "me", "mujhe", "yaad"],
                           [(1, 0), (1, 1), (2, 3)], postpositions="hi")
    assert freed.tags == ["B-DATE", "I-DATE", "I-DATE", "B-PERSON", "O"]
    # the source side's prepositions reach the alignment pass
    german = (["um", "6"], ["B-DATE", "I-DATE"], ["6", "baje", "ko"], [(1, 0), (1, 1)])
    assert project_hybrid(*german, postpositions="hi").tags == ["B-DATE", "I-DATE", "O"]
    assert project_hybrid(*german, postpositions="hi", prepositions=["um"]).tags == ["B-DATE", "I-DATE", "I-DATE"]
    assert project_examples("alignment?postpositions=hi&prepositions=en", [example()])[0].tags == \
        ["B-PERSON", "B-DATE", "I-DATE", "I-DATE", "O", "O", "O", "O"]
