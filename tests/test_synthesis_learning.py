"""End to end with models that learned their task: synthesis must then produce correct labels.

Random-weight models only prove the plumbing. Here a tiny M2M100 learns to translate between two
invented languages in both directions (markers included) and a tiny XLM-R learns to tag the
source language; synthesis on held-out raw target sentences must keep most of them with exactly
the gold labels, while the same run with untrained models keeps none.
"""

from __future__ import annotations

import random

import datasets
import pytest
import torch
from invented_languages import InventedLanguages
from transformers import AutoModelForSeq2SeqLM, AutoModelForTokenClassification, AutoTokenizer, pipeline

from crop_hf import demo_models as tiny
from crop_hf.labels import CONLL_LABELS
from crop_hf.synthesis import SynthesisConfig, SynthesisModels, synthesize

pytestmark = pytest.mark.slow


def train_translation(path, records, language, steps: int):
    """Alternate batches of marked source->target and plain target->source pairs."""
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForSeq2SeqLM.from_pretrained(path)
    untrained = AutoModelForSeq2SeqLM.from_pretrained(path)
    marked = [language.pair(r) for r in records]
    plain = [(" ".join(language.target_tokens(r)), " ".join(r["tokens"])) for r in records]

    def encode(pairs, src, tgt):
        tokenizer.src_lang, tokenizer.tgt_lang = src, tgt
        batch = tokenizer([s for s, _ in pairs], text_target=[t for _, t in pairs], padding=True,
                          return_tensors="pt")
        batch["labels"] = batch["labels"].masked_fill(batch["labels"] == tokenizer.pad_token_id, -100)
        return batch

    directions = [encode(marked, "en", "de"), encode(plain, "de", "en")]
    torch.manual_seed(0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3)
    model.train()
    for step in range(steps):
        batch, rows = directions[step % 2], torch.randint(0, len(records), (32,))
        model(**{key: value[rows] for key, value in batch.items()}).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return tokenizer, model.eval(), untrained.eval()


def train_tagger(path, records, steps: int):
    """First-subword labels, as token classification fine-tuning does."""
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForTokenClassification.from_pretrained(path)
    encoded = tokenizer([r["tokens"] for r in records], is_split_into_words=True, padding=True, return_tensors="pt")
    labels = torch.full(encoded["input_ids"].shape, -100)
    for i, record in enumerate(records):
        previous = None
        for j, word in enumerate(encoded.word_ids(i)):
            if word is not None and word != previous:
                labels[i, j] = CONLL_LABELS.label2id[record["ner_tags"][word]]
            previous = word
    torch.manual_seed(0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3)
    model.train()
    for _ in range(steps):
        rows = torch.randint(0, len(records), (32,))
        model(input_ids=encoded["input_ids"][rows], attention_mask=encoded["attention_mask"][rows],
              labels=labels[rows]).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return tokenizer, model.eval()


def test_synthesis_with_trained_tiny_models_keeps_correctly_labeled_sentences(tmp_path):
    language = InventedLanguages()
    rng = random.Random(0)
    records = [language.sentence(rng) for _ in range(3000)]
    corpus = [text for record in records[:500] for text in language.pair(record)]
    mt_tokenizer, mt_model, mt_untrained = train_translation(
        tiny.build_tiny_m2m100(tmp_path / "mt", corpus=corpus), records, language, steps=800)
    ner_tokenizer, ner_model = train_tagger(
        tiny.build_tiny_xlmr_ner(tmp_path / "ner", corpus=[" ".join(r["tokens"]) for r in records[:500]]),
        records, steps=200)

    held_out = [language.sentence(random.Random(10_000 + i)) for i in range(60)]
    training_sentences = {tuple(r["tokens"]) for r in records}
    assert not any(tuple(r["tokens"]) in training_sentences for r in held_out)
    raw = [" ".join(language.target_tokens(r)) for r in held_out]
    gold = {sentence: record["ner_tags"] for sentence, record in zip(raw, held_out, strict=True)}
    tagger = pipeline("token-classification", model=ner_model, tokenizer=ner_tokenizer,
                      aggregation_strategy="first", device=-1)

    def run(translation_model, name):
        models = SynthesisModels(
            translator=pipeline("labeled-translation", model=translation_model, tokenizer=mt_tokenizer, device=-1),
            tagger=tagger, labels=CONLL_LABELS)
        config = SynthesisConfig(tgt_langs=["de"], output_dir=str(tmp_path / name), mt_model=name,
                                 ner_model="tiny-ner", num_beams=2, num_return_sequences=2, max_new_tokens=20,
                                 language_filter=False, show_progress=False)
        result = synthesize(config, models=models, inputs={"de": [{"text": sentence} for sentence in raw]})
        return result.statistics["de"], datasets.load_from_disk(str(result.dataset_path))["de"]

    statistics, kept = run(mt_model, "trained")
    assert statistics["input"] == 60
    assert statistics["kept"] >= 36, statistics  # most sentences survive every filter
    correct = sum([CONLL_LABELS[i] for i in row["ner_tags"]] == gold[" ".join(row["tokens"])] for row in kept)
    assert correct >= 0.95 * len(kept), f"{correct} of {len(kept)} kept sentences have exactly the gold labels"

    untrained_statistics, _ = run(mt_untrained, "untrained")
    assert untrained_statistics["kept"] == 0  # its translations are noise: nothing survives the filters
