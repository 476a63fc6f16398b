"""EflomalAligner on a small parallel corpus whose alignment is unambiguous."""

from __future__ import annotations

import random

import pytest

from crop_hf.alignment import EflomalAligner

pytest.importorskip("eflomal")

ADJECTIVES = {"red": "rojo", "blue": "azul", "green": "verde", "big": "grande", "small": "chico", "old": "viejo"}
NOUNS = {"cat": "gato", "dog": "perro", "bird": "pajaro", "house": "casa", "river": "rio", "car": "coche"}
VERBS = {"sees": "ve", "likes": "quiere", "finds": "encuentra"}


def toy_corpus(n: int = 150, seed: int = 0):
    """"red cat sees big house" → "gato rojo ve casa grande": words recombine freely, so every
    link is identifiable from co-occurrence, and Spanish order swaps adjective and noun."""
    rng = random.Random(seed)
    source, target = [], []
    for _ in range(n):
        adjective1, adjective2 = rng.sample(sorted(ADJECTIVES), 2)
        noun1, noun2 = rng.sample(sorted(NOUNS), 2)
        verb = rng.choice(sorted(VERBS))
        source.append([adjective1, noun1, verb, adjective2, noun2])
        target.append([NOUNS[noun1], ADJECTIVES[adjective1], VERBS[verb], NOUNS[noun2], ADJECTIVES[adjective2]])
    return source, target


GOLD = [(0, 1), (1, 0), (2, 2), (3, 4), (4, 3)]


def test_aligns_an_unambiguous_corpus_in_both_directions():
    source, target = toy_corpus()
    forward, reverse = EflomalAligner().align_directions(source, target)
    assert forward == [GOLD] * len(source)
    assert reverse == [GOLD] * len(source)  # reverse links come back as (source, target) pairs too
    assert EflomalAligner().align(source, target) == [GOLD] * len(source)


def test_strings_empty_pairs_and_bad_tokens():
    source, target = toy_corpus(60, seed=1)
    source_text = [" ".join(words) for words in source] + ["", "red cat"]
    target_text = [" ".join(words) for words in target] + ["gato", ""]
    result = EflomalAligner(symmetrization="intersection").align(source_text, target_text)
    assert len(result) == 62
    assert result[:60] == [GOLD] * 60
    assert result[60:] == [[], []]
    with pytest.raises(ValueError, match="source sentence 1: token 'a b' is empty or contains whitespace"):
        EflomalAligner().align([["x"], ["a b"]], [["y"], ["z"]])
    with pytest.raises(ValueError, match="eflomal model must be"):
        EflomalAligner(model=4)
    with pytest.raises(ValueError, match="unknown symmetrization"):
        EflomalAligner(symmetrization="grow-diagonal")


def test_extra_parallel_text_is_aligned_with_the_corpus_and_left_out_of_the_result():
    # alone, three pairs cannot tell which German word "house" is; beside many pairs they can
    source = [["the", "house"], ["the", "small", "car"], ["a", "house", "is", "big"]]
    target = [["das", "Haus"], ["das", "kleine", "Auto"], ["ein", "Haus", "ist", "groß"]]
    extra = ([["the", "house", "is", "small"], ["the", "car"], ["a", "big", "house"]] * 60,
             [["das", "Haus", "ist", "klein"], ["das", "Auto"], ["ein", "großes", "Haus"]] * 60)
    links = EflomalAligner(extra_corpus=extra).align(source, target)
    assert len(links) == 3  # only the given pairs come back
    assert (1, 1) in links[0] and (2, 2) in links[1] and (1, 1) in links[2]
    assert EflomalAligner(extra_corpus=extra).align([[]], [["x"]]) == [[]]
    with pytest.raises(ValueError, match="extra_corpus: 1 source sentences but 2 target sentences"):
        EflomalAligner(extra_corpus=([["a"]], [["a"], ["b"]]))
