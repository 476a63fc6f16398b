"""Marker tokens have one home: the pipeline and training add them, initialise them and find their ids alike."""

from __future__ import annotations

import logging
import re

import pytest
import torch
from tiny_models import session_model
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

from crop_hf.demo_models import build_tiny_m2m100
from crop_hf.translation import LabeledSequenceTranslationPipeline
from crop_hf.translation.marker_tokens import MarkerVocabulary, add_marker_tokens, marker_strings


@pytest.fixture(scope="module")
def bare_m2m100(tmp_path_factory):
    """A tiny M2M100 whose tokenizer, like facebook/m2m100_418M's, has no __SLOT{i}__ tokens."""
    return session_model(tmp_path_factory, "m2m100-bare", lambda folder: build_tiny_m2m100(folder, marker_pieces=False))


def _load(folder):
    return AutoTokenizer.from_pretrained(folder), AutoModelForSeq2SeqLM.from_pretrained(folder)


def test_markers_become_single_special_tokens_at_the_noisy_mean(bare_m2m100, caplog):
    tokenizer, model = _load(bare_m2m100)
    embeddings = model.get_input_embeddings().weight
    with torch.no_grad():  # dimensions of very different mean and spread, as pretrained embeddings have
        width = embeddings.shape[1]
        embeddings.mul_(torch.logspace(-2, 1, width)).add_(torch.linspace(-3, 3, width))
    before = embeddings.detach().clone()
    assert len(tokenizer.tokenize("__SLOT3__")) > 1
    with caplog.at_level(logging.INFO, logger="crop_hf.translation.marker_tokens"):
        added = add_marker_tokens(tokenizer, model, "crop", 4, seed=0)
    assert "added 4 marker tokens (__SLOT0__ ... __SLOT3__) as special tokens" in caplog.messages
    assert tokenizer.convert_ids_to_tokens(added) == ["__SLOT0__", "__SLOT1__", "__SLOT2__", "__SLOT3__"]
    assert set(added) <= set(tokenizer.all_special_ids)
    assert tokenizer.tokenize("a __SLOT3__ b").count("__SLOT3__") == 1
    rows = model.get_input_embeddings().weight.detach()[added]
    untouched = [i for i in range(before.shape[0]) if i not in added]
    mean, std = before[untouched].mean(0), before[untouched].std(0)
    # each dimension within noise of a tenth of its own spread around its own mean ...
    assert torch.all((rows - mean).abs() <= 0.6 * std)
    # ... the noise really scaled per dimension (a spread of 0.01 and one of 10 both show) ...
    assert ((rows - mean).abs() / std).mean() > 0.02
    # ... and the slots start apart from each other
    assert torch.cdist(rows, rows)[~torch.eye(4, dtype=torch.bool)].min() > 1e-3
    # the old rows are untouched; the output layer (tied in M2M100) predicts the new tokens too
    assert torch.equal(model.get_input_embeddings().weight.detach()[untouched], before[untouched])
    assert model.get_output_embeddings().weight.shape[0] >= len(tokenizer)
    assert add_marker_tokens(tokenizer, model, "crop", 4) == []  # idempotent


def test_the_resize_initialisation_starts_every_new_row_at_one_vector(bare_m2m100):
    """transformers' mean resizing, kept for comparison: rows past the old matrix all start at (about) the mean;
    markers whose ids fall in spare rows M2M100 already had keep those rows as they were."""
    tokenizer, model = _load(bare_m2m100)
    old_rows = model.get_input_embeddings().weight.shape[0]
    before = model.get_input_embeddings().weight.detach().clone()
    added = add_marker_tokens(tokenizer, model, "crop", 16, init="resize")
    weight = model.get_input_embeddings().weight.detach()
    grown = [i for i in added if i >= old_rows]
    spare = [i for i in added if i < old_rows]
    assert grown and spare  # the tiny model, like m2m100_418M, has 8 spare rows
    assert torch.cdist(weight[grown], weight[grown]).max() < 1e-3
    assert torch.equal(weight[spare], before[spare])


def test_pipeline_and_training_give_new_markers_the_same_embeddings(bare_m2m100):
    tokenizer, model = _load(bare_m2m100)
    add_marker_tokens(tokenizer, model, "crop", 16)
    pipe_tokenizer, pipe_model = _load(bare_m2m100)
    LabeledSequenceTranslationPipeline(model=pipe_model, tokenizer=pipe_tokenizer, device=-1)
    assert pipe_tokenizer.get_vocab() == tokenizer.get_vocab()
    assert set(pipe_tokenizer.all_special_ids) == set(tokenizer.all_special_ids)
    assert torch.equal(pipe_model.get_input_embeddings().weight, model.get_input_embeddings().weight)


def test_untyped_styles_add_nothing_and_bad_init_is_refused(bare_m2m100):
    tokenizer, model = _load(bare_m2m100)
    size = len(tokenizer)
    assert add_marker_tokens(tokenizer, model, "easyproject") == []
    assert len(tokenizer) == size
    with pytest.raises(ValueError, match="init must be"):
        add_marker_tokens(tokenizer, model, "crop", init="random")


def test_marker_ids_and_decoding_keep_markers_and_drop_other_special_tokens(bare_m2m100):
    tokenizer, model = _load(bare_m2m100)
    added = add_marker_tokens(tokenizer, model, "crop", 2)
    vocabulary = MarkerVocabulary(tokenizer, "crop")
    assert vocabulary.marker_ids == sorted(added)
    assert vocabulary.single_token_slots == {0, 1}
    text = tokenizer("ich __SLOT1__ Paris __SLOT1__").input_ids
    assert tokenizer.eos_token_id in text and tokenizer.convert_ids_to_tokens(text[0]).startswith("__")
    decoded = vocabulary.decode(tokenizer, [text])[0]
    # tokenizer clean-up would glue punctuation to the word before it; decoding keeps the text as spelled
    assert vocabulary.decode(tokenizer, [tokenizer("Paris , ja").input_ids])[0].endswith("Paris , ja")
    # added tokens decode glued to their neighbours; the pipeline's marker extraction copes with that
    assert re.sub(r"(__SLOT\d+__)", r" \1 ", decoded).split() == ["ich", "__SLOT1__", "Paris", "__SLOT1__"]


def test_marker_strings_are_in_slot_order():
    assert marker_strings("crop", 3) == ["__SLOT0__", "__SLOT1__", "__SLOT2__"]
    assert marker_strings("easyproject", 3) == ["[", "]"]
