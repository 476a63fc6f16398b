"""Marker-annotated parallel data: phrase pairs, marking, inputs, bad input, and eflomal on real Multi30k."""

from __future__ import annotations

import gzip
import itertools
import random
from collections import Counter

import datasets
import pytest
from hypothesis import given
from hypothesis import strategies as st

from crop_hf.markers import get_marker_style
from crop_hf.translation.parallel import (
    MarkingConfig,
    ParallelPair,
    consistent_phrase_pairs,
    mark_pair,
    mark_parallel,
    pairs_from_dataset,
    pairs_from_files,
    read_function_words,
    select_phrase_pairs,
    without_function_word_edges,
    words,
)


class DiagonalAligner:
    """Links word i to word i: enough to test marking without running eflomal."""

    def align(self, source, target):
        return [[(i, i) for i in range(min(len(s), len(t)))] for s, t in zip(source, target, strict=True)]


def corpus(n: int = 40) -> list[ParallelPair]:
    rng = random.Random(1)
    vocabulary = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta"]
    pairs = []
    for k in range(n):
        sentence = [rng.choice(vocabulary) for _ in range(rng.randint(6, 10))]
        pairs.append(ParallelPair(" ".join(sentence), " ".join(w.upper() for w in sentence), "en", "de", "mem", k))
    return pairs


def _consistent(box, links) -> bool:
    i1, i2, j1, j2 = box
    inside = [(i, j) for i, j in links if i1 <= i < i2 and j1 <= j < j2]
    leaving = [(i, j) for i, j in links if (i1 <= i < i2) != (j1 <= j < j2)]
    return bool(inside) and not leaving


@given(st.sets(st.tuples(st.integers(0, 5), st.integers(0, 5)), max_size=12), st.integers(1, 4))
def test_phrase_pairs_are_exactly_the_consistent_tight_boxes(links, max_length):
    found = set(consistent_phrase_pairs(links, 6, 6, max_length))
    for box in found:
        assert _consistent(box, links)
        assert box[1] - box[0] <= max_length and box[3] - box[2] <= max_length
    # every consistent box whose target side is the tight span of its source side is found
    for i1 in range(6):
        for i2 in range(i1 + 1, min(6, i1 + max_length) + 1):
            targets = [j for i, j in links if i1 <= i < i2]
            if targets:
                box = (i1, i2, min(targets), max(targets) + 1)
                if box[3] - box[2] <= max_length and _consistent(box, links):
                    assert box in found


def test_a_link_leaving_the_box_makes_it_inconsistent():
    # "a b c" / "x y z" with b-z and c-y: (1,2)-(2,3) is consistent, (0,2) with target 0..3 too,
    # but source word 1 alone with target 1..3 is not (y is linked to c, outside).
    links = [(0, 0), (1, 2), (2, 1)]
    found = consistent_phrase_pairs(links, 3, 3, 3)
    assert (1, 2, 2, 3) in found and (1, 3, 1, 3) in found
    assert all(not (i1 == 1 and i2 == 2 and j1 == 1) for i1, i2, j1, _ in found)


def test_chosen_phrases_never_overlap_and_keep_the_gap():
    source = "one two three four five six seven eight"
    spans = words(source)
    candidates = [(spans[i][0], spans[i + n - 1][1], spans[i][0], spans[i + n - 1][1])
                  for n in (1, 2) for i in range(len(spans) - n + 1)]
    for seed in range(30):
        chosen = select_phrase_pairs(source, source, candidates, max_slots=8, min_gap=1, rng=random.Random(seed))
        for a, b in itertools.combinations(chosen, 2):
            first, second = sorted([a, b])
            assert second[0] >= first[1]
            assert words(source[first[1]:second[0]]), (source, chosen)  # at least one word between
        adjacent = select_phrase_pairs(source, source, candidates, max_slots=8, min_gap=0, rng=random.Random(seed))
        assert all(b[0] >= a[1] for a, b in itertools.pairwise(adjacent))


def test_mark_pair_extracts_back_to_its_phrases_in_both_styles():
    source, target = "the red cat sleeps", "die rote Katze schläft"
    chosen = [(4, 11, 4, 14)]
    pair = mark_pair(source, target, chosen, slots=[7])
    assert pair.source == "the __SLOT7__ red cat __SLOT7__ sleeps"
    assert pair.target == "die __SLOT7__ rote Katze __SLOT7__ schläft"
    assert pair.slots == ({"slot": 7, "source": "red cat", "target": "rote Katze"},)
    bracket = mark_pair(source, target, chosen, slots=[7], style="easyproject")
    assert bracket.target == "die [ rote Katze ] schläft" and bracket.slots[0]["slot"] == 0


def test_mark_parallel_rows_slots_and_provenance(tmp_path):
    config = MarkingConfig(max_slots=3, max_phrase_length=2, seed=3, slot_prob=1.0)
    result = mark_parallel(corpus(), config, aligner=DiagonalAligner(), output_dir=tmp_path / "out")
    ds = result.dataset
    assert ds.num_rows == 40 and sorted(tmp_path.joinpath("out").glob("data-*.parquet"))
    style = get_marker_style("crop")
    numbers = []
    for row in ds:
        assert row["src_lang"] == "en" and row["tgt_lang"] == "de" and row["origin"] == "mem"
        assert 1 <= len(row["slots"]) <= 3
        for slot in row["slots"]:
            assert slot["target"] == slot["source"].upper()  # the diagonal alignment's phrase pair
            assert row["source"].count(f"__SLOT{slot['slot']}__") == 2
            assert row["target"].count(f"__SLOT{slot['slot']}__") == 2
        markers = [m.slot for m in style.find(row["source"])]
        numbers.append(markers[0])
        assert " ".join(row["source"].split()) != row["source_text"]
    # slot numbers are drawn at random, not left to right
    assert len(set(numbers)) > 1
    again = mark_parallel(corpus(), config, aligner=DiagonalAligner()).dataset
    assert again["source"] == ds["source"] and again["target"] == ds["target"]  # deterministic for a seed
    other = mark_parallel(corpus(), MarkingConfig(max_slots=3, max_phrase_length=2, seed=4, slot_prob=1.0),
                          aligner=DiagonalAligner()).dataset
    assert other["source"] != ds["source"]


def test_a_hyphenated_or_elided_word_is_one_word():
    text = "Ein Junge im T-Shirt liest E-Mails, girl's 3.5 (Berlin) -- Bach."
    assert [text[s:e] for s, e in words(text)] == [
        "Ein", "Junge", "im", "T-Shirt", "liest", "E-Mails", ",", "girl's", "3.5", "(", "Berlin", ")", "-", "-",
        "Bach", "."]


_JOINERS = "-\u2010\u2011'\u2019.&/"


def _splits_a_word(text: str, start: int, end: int) -> bool:
    """Whether a span cuts a word: a letter or digit inside it next to a letter, digit or joiner outside it."""
    before, after = text[start - 1:start], text[end:end + 1]
    return bool(before and (before.isalnum() or (before in _JOINERS and text[start - 2:start - 1].isalnum()))) or \
        bool(after and (after.isalnum() or (after in _JOINERS and text[end + 1:end + 2].isalnum())))


@given(st.lists(st.sampled_from(["T-Shirt", "E-Mail", "girl's", "3.5", "Bach.", "(Berlin)", "a", "-", "x/y",
                                 "Kinder,", "rock-and-roll", "U.S."]), min_size=1, max_size=8))
def test_no_candidate_phrase_splits_a_word(pieces):
    """Every phrase pair boundary falls between words, on both sides (here: the text and its upper case)."""
    source = " ".join(pieces)
    result = mark_parallel([ParallelPair(source, source.upper(), "en", "de")],
                           MarkingConfig(max_slots=3, max_phrase_length=3, slot_prob=1.0, seed=0),
                           aligner=DiagonalAligner())
    row = result.dataset[0]
    for start, end, tstart, tend in row["phrase_pairs"]:
        assert not _splits_a_word(row["source_text"], start, end), row["source_text"][start:end]
        assert not _splits_a_word(row["target_text"], tstart, tend), row["target_text"][tstart:tend]


def test_left_to_right_numbers_slot_prob_and_both_directions():
    config = MarkingConfig(max_slots=3, random_slot_numbers=False, both_directions=True, slot_prob=0.5, seed=0)
    result = mark_parallel(corpus(), config, aligner=DiagonalAligner())
    ds = result.dataset
    assert ds.num_rows == 80 and result.counts["rows"] == 80
    assert Counter(zip(ds["src_lang"], ds["tgt_lang"], strict=True)) == {("en", "de"): 40, ("de", "en"): 40}
    style = get_marker_style("crop")
    unmarked = sum(not row["slots"] for row in ds)
    assert 10 <= unmarked <= 70  # about half of the pairs get no markers
    for row in ds:
        seen = list(dict.fromkeys(m.slot for m in style.find(row["source"])))
        assert seen == list(range(len(seen)))
        if row["src_lang"] == "de":
            assert row["source_text"] == row["source_text"].upper()


def test_function_words_never_begin_or_end_a_slot_on_either_side(tmp_path):
    words_file = tmp_path / "function_words.tsv"
    words_file.write_text("# comment line\nen\tAlpha\nen\tbeta  # the second one\n\nde\tGAMMA\n", encoding="utf-8")
    assert read_function_words(words_file) == {"en": {"alpha", "beta"}, "de": {"gamma"}}
    config = MarkingConfig(max_slots=3, max_phrase_length=2, seed=3, slot_prob=1.0,
                           function_words_file=str(words_file))
    ds = mark_parallel(corpus(), config, aligner=DiagonalAligner()).dataset
    plain = mark_parallel(corpus(), MarkingConfig(max_slots=3, max_phrase_length=2, seed=3, slot_prob=1.0),
                          aligner=DiagonalAligner()).dataset
    for row in ds:
        for start, end, tstart, tend in row["phrase_pairs"]:
            source, target = row["source_text"][start:end].split(), row["target_text"][tstart:tend].split()
            assert {source[0], source[-1]}.isdisjoint({"alpha", "beta"})
            assert {target[0].lower(), target[-1].lower()}.isdisjoint({"gamma"})
    assert sum(len(r) for r in ds["phrase_pairs"]) < sum(len(r) for r in plain["phrase_pairs"])
    assert all(row["slots"] or not row["phrase_pairs"] for row in ds)


def test_without_function_word_edges_checks_first_and_last_word_only():
    source, target = "the red cat of Paris", "die rote Katze aus Paris"
    spans = {"the red": (0, 7, 0, 8), "red cat": (4, 11, 4, 14), "cat of Paris": (8, 20, 9, 24),
             "of": (12, 14, 15, 18), "cat of": (8, 14, 9, 18)}
    kept = without_function_word_edges(source, target, list(spans.values()), frozenset({"the", "of"}),
                                       frozenset({"die", "aus"}))
    assert kept == [spans["red cat"], spans["cat of Paris"]]  # a function word inside a phrase is fine
    # each side is checked with its own words: a German function word on the English side is content
    assert without_function_word_edges(source, target, [spans["the red"]], frozenset({"die"}), frozenset()) \
        == [spans["the red"]]
    assert without_function_word_edges(source, target, [spans["red cat"]], frozenset(), frozenset({"katze"})) == []


@pytest.mark.parametrize("content", ["en\tthe\nthe\n", "en\tthe\tthe\n", "en\t\n"])
def test_a_bad_function_words_file_names_file_and_line(tmp_path, content):
    path = tmp_path / "words.tsv"
    path.write_text(content, encoding="utf-8")
    line = 1 if content.count("\n") == 1 else 2
    with pytest.raises(ValueError, match=rf"words\.tsv:{line}: expected 'lang<TAB>word'"):
        MarkingConfig(function_words_file=str(path))


def test_bad_pairs_are_dropped_and_counted_not_fatal():
    pairs = [*corpus(5),
             ParallelPair("", "x", "en", "de"), ParallelPair("a b", "   ", "en", "de"),
             ParallelPair("a __SLOT0__ b", "c d", "en", "de"), ParallelPair("a b", "c [ d ]", "en", "de")]
    crop = mark_parallel(pairs, MarkingConfig(), aligner=DiagonalAligner())
    assert crop.counts["dropped_empty"] == 2 and crop.counts["dropped_has_marker"] == 1
    assert crop.dataset.num_rows == 6  # the bracket is plain text for the crop style
    bracket = mark_parallel(pairs, MarkingConfig(marker_style="easyproject"), aligner=DiagonalAligner())
    assert bracket.counts["dropped_has_marker"] == 1 and bracket.dataset.num_rows == 6


def test_files_of_different_lengths_name_both_files_and_counts(tmp_path):
    src, tgt = tmp_path / "a.en", tmp_path / "a.de.gz"
    src.write_text("one\ntwo\nthree\n")
    with gzip.open(tgt, "wt") as handle:
        handle.write("eins\nzwei\n")
    with pytest.raises(ValueError, match=r"a\.en has 3 lines but .*a\.de\.gz has 2"):
        pairs_from_files(src, tgt, "en", "de")


def test_dataset_inputs_translation_column_and_two_columns():
    rows = datasets.Dataset.from_list([{"translation": {"en": "a b", "de": "c d", "fr": "e f"}}] * 3)
    pairs = list(pairs_from_dataset(rows, [("en", "de"), ("en", "fr")]))
    assert [(p.src_lang, p.tgt_lang) for p in pairs[:2]] == [("en", "de"), ("en", "fr")] and len(pairs) == 6
    default = list(pairs_from_dataset(rows))
    assert {(p.src_lang, p.tgt_lang) for p in default} == {("en", "de"), ("en", "fr"), ("de", "fr")}
    columns = datasets.Dataset.from_list([{"en": "a b", "de": "c d"}])
    (pair,) = pairs_from_dataset(columns, [("en", "de")], source_column="en", target_column="de")
    assert (pair.source, pair.target) == ("a b", "c d")
    with pytest.raises(ValueError, match="translation"):
        list(pairs_from_dataset(columns))
    # several language pairs in one run are aligned separately and all come out
    result = mark_parallel(pairs_from_dataset(rows, [("en", "de"), ("en", "fr")]), aligner=DiagonalAligner())
    assert Counter(result.dataset["tgt_lang"]) == {"de": 3, "fr": 3}


def test_eflomal_on_multi30k_finds_real_phrase_pairs(shared_data):
    pytest.importorskip("eflomal")
    folder = shared_data / "multi30k"
    pairs = list(itertools.islice(pairs_from_files(folder / "train.en.gz", folder / "train.de.gz", "en", "de"), 1500))
    result = mark_parallel(pairs, MarkingConfig(max_slots=3, seed=0))
    assert result.counts["marked_pairs"] == 1500 and result.timings["align"] > 0
    phrase_pairs = Counter((s["source"].lower(), s["target"].lower()) for row in result.dataset for s in row["slots"])
    assert phrase_pairs[("man", "mann")] >= 3, phrase_pairs.most_common(20)
    assert phrase_pairs[("dog", "hund")] >= 3, phrase_pairs.most_common(20)
    wrong = phrase_pairs[("man", "hund")] + phrase_pairs[("dog", "mann")]
    assert wrong == 0
