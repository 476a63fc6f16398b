"""EmbeddingAligner: same alignments as the simalign package, batched, robust on odd input."""

from __future__ import annotations

import logging

import pytest

from crop_hf.alignment import EmbeddingAligner
from crop_hf.demo_models import PARALLEL_SAMPLE

SOURCE = [s for s, _ in PARALLEL_SAMPLE]
TARGET = [t for _, t in PARALLEL_SAMPLE]




@pytest.fixture(scope="module")
def aligner(tiny_bert):
    return EmbeddingAligner(tiny_bert, layer=2, batch_size=4)


@pytest.mark.parametrize(("token_type", "layer", "distortion"), [("bpe", 2, 0.0), ("word", 3, 0.0), ("bpe", 1, 0.5)])
def test_same_alignments_as_simalign(tiny_bert, token_type, layer, distortion):
    simalign = pytest.importorskip("simalign")
    reference = simalign.SentenceAligner(model=str(tiny_bert), token_type=token_type, matching_methods="maifr",
                                         layer=layer, distortion=distortion)
    # batch_size 5 over 12 pairs: several batches, each padded differently from simalign's pairs.
    ours = EmbeddingAligner(tiny_bert, layer=layer, token_type=token_type, distortion=distortion, batch_size=5)
    mine = ours.align_methods(SOURCE, TARGET, ["inter", "mwmf", "itermax", "fwd", "rev"])
    compared = 0
    for k, (source, target) in enumerate(PARALLEL_SAMPLE):
        expected = reference.get_word_aligns(source, target)
        for method, pairs in expected.items():
            assert mine[method][k] == pairs, (method, k)
            compared += len(pairs)
    assert compared > 100  # the sample really exercises the methods
    # Below the last layer the pass stops early (checked against hidden_states on the first batch).
    assert ours._early_exit is (layer < 3)


def test_batch_size_and_order_do_not_change_results(tiny_bert, aligner):
    methods = ["argmax", "itermax", "match"]
    batched = aligner.align_methods(SOURCE, TARGET, methods)
    assert EmbeddingAligner(tiny_bert, layer=2, batch_size=1).align_methods(SOURCE, TARGET, methods) == batched
    reversed_order = aligner.align_methods(SOURCE[::-1], TARGET[::-1], methods)
    assert {m: pairs[::-1] for m, pairs in reversed_order.items()} == batched


def test_a_sentence_aligns_to_itself_on_the_diagonal(aligner):
    # Identical inputs give identical vectors, so every word's most similar partner is itself.
    sentences = [s.split() for s in SOURCE if len(set(s.split())) == len(s.split())]
    for method in ("argmax", "itermax", "match"):
        for words, pairs in zip(sentences, aligner.align_methods(sentences, sentences, [method])[method], strict=True):
            assert pairs == [(i, i) for i in range(len(words))], method


def test_aligns_words_not_subwords(aligner):
    source, target = ["Gothenburg", "Volvo"], ["Göteborg", "Volvo", "Sweden"]
    assert len(aligner.tokenizer.tokenize("Gothenburg")) > 3
    for pairs in aligner.align_methods([source], [target], ["argmax", "itermax", "match", "fwd", "rev"]).values():
        assert all(0 <= i < 2 and 0 <= j < 3 for i, j in pairs[0])
    forward = aligner.align_methods([source], [target], ["fwd"])["fwd"][0]
    assert {i for i, _ in forward} == {0, 1}  # every source word has a forward link


def test_empty_sentences_and_words_without_subwords(aligner):
    source = [[], ["Paris"], ["a", "\u200b", "Paris"]]
    target = [["Paris"], [], ["Paris", "a"]]
    result = aligner.align(source, target)  # itermax, the default
    assert result[0] == [] and result[1] == []
    assert all(i != 1 for i, _ in result[2])  # the zero-width space has no subwords: unaligned
    assert aligner.align([], []) == []


def test_long_sentences_are_cut_with_a_warning(tiny_bert, caplog):
    short = EmbeddingAligner(tiny_bert, layer=1, max_length=8, method="argmax")
    words = ["Angela", "Merkel", "visited", "the", "old", "harbour", "of", "Gothenburg", "yesterday"]
    with caplog.at_level(logging.WARNING, logger="crop_hf.alignment.embedding"):
        pairs = short.align([words], [words])[0]
    assert "longer than 8 subwords" in caplog.text
    assert pairs and max(i for i, _ in pairs) < 4  # 6 subwords fit: only the first words align


def test_bad_arguments_are_reported(tiny_bert, aligner):
    with pytest.raises(ValueError, match="unknown alignment method"):
        EmbeddingAligner(tiny_bert, layer=2, method="best")
    with pytest.raises(ValueError, match="unknown alignment method"):
        aligner.align_methods(["a"], ["b"], ["best"])
    with pytest.raises(ValueError, match="2 source sentences but 1 target"):
        aligner.align(["a", "b"], ["c"])
    with pytest.raises(ValueError, match="layer 9 does not exist"):
        EmbeddingAligner(tiny_bert, layer=9)
    with pytest.raises(ValueError, match="token_type"):
        EmbeddingAligner(tiny_bert, token_type="char")
