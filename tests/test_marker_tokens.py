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


class _TwoMatrices(torch.nn.Module):
    """A model whose output layer is not tied to its input embeddings (as some seq2seq models have it)."""

    def __init__(self, rows: int, width: int, spare: int = 0) -> None:
        super().__init__()
        generator = torch.Generator().manual_seed(1)
        self.inp = torch.nn.Embedding(rows, width)
        self.out = torch.nn.Linear(width, rows, bias=False)
        with torch.no_grad():  # far from zero, so that a zero row in the reference would show
            self.inp.weight.copy_(0.1 * torch.randn(rows, width, generator=generator) + torch.linspace(5, 10, width))
            self.out.weight.copy_(0.1 * torch.randn(rows, width, generator=generator) - torch.linspace(5, 10, width))
            if spare:  # unused rows past the vocabulary (M2M100 keeps 8), never trained: zeros here
                self.inp.weight[-spare:] = 0
                self.out.weight[-spare:] = 0

    def get_input_embeddings(self):
        return self.inp

    def get_output_embeddings(self):
        return self.out

    def resize_token_embeddings(self, rows: int, mean_resizing: bool = True):
        for name in ("inp", "out"):
            old = getattr(self, name).weight.detach()
            grown = torch.zeros(rows, old.shape[1])
            grown[: old.shape[0]] = old
            module = torch.nn.Embedding(rows, old.shape[1]) if name == "inp" else torch.nn.Linear(old.shape[1], rows,
                                                                                                   bias=False)
            with torch.no_grad():
                module.weight.copy_(grown)
            setattr(self, name, module)


def test_an_untied_output_layer_gets_its_own_noisy_mean(bare_m2m100):
    tokenizer, _ = _load(bare_m2m100)
    model = _TwoMatrices(len(tokenizer) + 8, 8, spare=8)
    # the reference rows: the vocabulary's, not the spare ones the first markers land in
    old = {name: getattr(model, name).weight.detach()[: len(tokenizer)].clone() for name in ("inp", "out")}
    added = add_marker_tokens(tokenizer, model)  # the defaults: crop markers, 16 slots, seed 0, noisy mean
    assert tokenizer.convert_ids_to_tokens(added) == marker_strings("crop", 16)
    for name in ("inp", "out"):
        rows = getattr(model, name).weight.detach()[added]
        mean, std = old[name].mean(0), old[name].std(0)
        # 16 draws of noise with a tenth of the spread average out to within 0.1 std of the old rows' mean
        assert torch.all((rows.mean(0) - mean).abs() <= 0.1 * std), name
        assert torch.all((rows - mean).abs() <= 0.6 * std), name
    tokenizer2, _ = _load(bare_m2m100)
    again = _TwoMatrices(len(tokenizer2) + 8, 8, spare=8)
    add_marker_tokens(tokenizer2, again, "crop", 16, seed=0, init="mean")
    assert torch.equal(again.inp.weight, model.inp.weight) and torch.equal(again.out.weight, model.out.weight)


def test_decoding_never_cleans_up_spaces_whatever_the_tokenizer_default(bare_m2m100):
    tokenizer, model = _load(bare_m2m100)
    add_marker_tokens(tokenizer, model, "crop", 2)
    tokenizer.clean_up_tokenization_spaces = True
    assert MarkerVocabulary(tokenizer, "crop").decode(tokenizer, [tokenizer("Paris , ja").input_ids])[0].endswith(
        "Paris , ja")


def test_marker_strings_default_to_sixteen_crop_slots():
    assert marker_strings() == [f"__SLOT{i}__" for i in range(16)]
