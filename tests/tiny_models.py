"""Tiny random-weight models only the tests and benchmarks use (a BART generator).

The models of demos and examples (M2M100, XLM-R tagger, BERT, parser) are in
:mod:`crop_hf.demo_models`; this one shares its helpers and is built the same way: tokenizer
trained on a small corpus, random weights, ``save_pretrained``.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from crop_hf.demo_models import _corpus, _encoder_decoder_settings

__all__ = ["build_tiny_bart", "session_model"]


def session_model(tmp_path_factory, name: str, build) -> Path:
    """``build(folder)`` once per test session; under mutmut, once per mutation run.

    mutmut runs each mutant in a new process, so a session fixture would be rebuilt for every
    mutant whose tests use it (9 s for the M2M100's SentencePiece training). The phases that run
    unmutated code (``stats``, and ``""``: the clean run) keep the folder in ``fixture-models/``
    beside ``mutmut-stats.json``; a mutant's process uses it, or builds its own if it is not there,
    so a mutant never changes the model another mutant's tests see.
    """
    mutant = os.environ.get("MUTANT_UNDER_TEST")
    if mutant is None:
        return build(tmp_path_factory.mktemp(name))
    cache = Path.cwd() / "fixture-models" / name
    if cache.is_dir():
        return cache
    built = build(tmp_path_factory.mktemp(name))
    if mutant in ("stats", ""):
        partial = cache.with_name(f"{name}.{os.getpid()}.partial")
        shutil.copytree(built, partial)
        try:
            partial.rename(cache)  # atomic: a reader sees no folder or a whole one
        except OSError:  # another process was first
            shutil.rmtree(partial)
    return built


def build_tiny_bart(
    save_dir: str | Path,
    corpus: Iterable[str] | None = None,
    *,
    vocab_size: int = 400,
    d_model: int = 32,
    layers: int = 1,
    seed: int = 0,
) -> Path:
    """Write a tiny BART seq2seq model with a byte-level BPE tokenizer trained on ``corpus``.

    Byte-level BPE never produces ``<unk>``, so bracket parses (``[IN:X ... ]``) of any language
    round-trip through ``encode``/``decode``.
    """
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import BartConfig, BartForConditionalGeneration, BartTokenizer

    save_dir = Path(save_dir)
    save_dir.mkdir(parents=True, exist_ok=True)
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(_corpus(corpus), vocab_size=vocab_size, min_frequency=1, special_tokens=specials,
                            show_progress=False)
    vocab = bpe.get_vocab()
    merges = [tuple(pair) for pair in json.loads(bpe._tokenizer.to_str())["model"]["merges"]]
    tokenizer = BartTokenizer(vocab=vocab, merges=merges)
    tokenizer.save_pretrained(save_dir)

    torch.manual_seed(seed)
    config = BartConfig(
        vocab_size=len(tokenizer),
        forced_bos_token_id=tokenizer.bos_token_id,
        **_encoder_decoder_settings(tokenizer, d_model, layers),
    )
    BartForConditionalGeneration(config).save_pretrained(save_dir)
    return save_dir
