"""The offline tiny models load through the same Auto* path a Hub checkpoint takes."""

import json
from pathlib import Path

import pytest
import torch
from transformers import (
    AutoModelForSeq2SeqLM,
    AutoModelForTokenClassification,
    AutoTokenizer,
    pipeline,
)
from transformers.models.m2m_100.tokenization_m2m_100 import FAIRSEQ_LANGUAGE_CODES

from crop_hf.demo_models import SLOT_TOKENS, build_tiny_m2m100
from crop_hf.labels import CONLL_LABELS

M2M100_CODES = FAIRSEQ_LANGUAGE_CODES["m2m100"]


@pytest.fixture(scope="module")
def m2m(tiny_m2m100):
    return AutoTokenizer.from_pretrained(tiny_m2m100), AutoModelForSeq2SeqLM.from_pretrained(tiny_m2m100)


def test_m2m100_knows_all_hundred_languages(m2m):
    tokenizer, model = m2m
    assert len(M2M100_CODES) == 100
    ids = [tokenizer.get_lang_id(code) for code in M2M100_CODES]
    assert len(set(ids)) == 100
    assert max(ids) < model.config.vocab_size
    for code in ("de", "zh", "zu", "ne"):
        tokenizer.src_lang = code
        encoded = tokenizer("Vivo en Gotemburgo .").input_ids
        assert encoded[0] == tokenizer.get_lang_id(code)
        assert tokenizer.convert_ids_to_tokens(encoded[0]) == f"__{code}__"
    # A language token in text is one special token, not SentencePiece pieces.
    assert tokenizer("__de__ x", add_special_tokens=False).input_ids[0] == tokenizer.get_lang_id("de")


def test_m2m100_slot_markers_are_single_tokens_and_keep_spaces(m2m):
    tokenizer, _ = m2m
    tokenizer.src_lang = "en"
    for marker in SLOT_TOKENS:
        ids = tokenizer(marker, add_special_tokens=False).input_ids
        assert [tokenizer.convert_ids_to_tokens(i) for i in ids if tokenizer.convert_ids_to_tokens(i) != "▁"] == [marker]
    text = "I live in __SLOT0__ Gothenburg __SLOT0__ and __SLOT15__ Volvo __SLOT15__ ."
    ids = tokenizer(text).input_ids
    assert tokenizer.decode(ids, skip_special_tokens=True) == text


def test_m2m100_generates_with_a_forced_target_language(m2m):
    tokenizer, model = m2m
    tokenizer.src_lang = "en"
    batch = tokenizer(["I live in Gothenburg .", "Volvo"], return_tensors="pt", padding=True)
    out = model.generate(**batch, forced_bos_token_id=tokenizer.get_lang_id("sv"), max_new_tokens=6, num_beams=2)
    assert out.shape[0] == 2
    assert (out[:, 1] == tokenizer.get_lang_id("sv")).all()


def test_m2m100_builder_uses_the_callers_corpus(tmp_path):
    path = build_tiny_m2m100(tmp_path, corpus=["zorblat quimbo zorblat"] * 50)
    vocab = json.loads((path / "vocab.json").read_text(encoding="utf-8"))
    assert "▁zorblat" in vocab
    assert list(vocab)[:4] == ["<s>", "<pad>", "</s>", "<unk>"]


def test_xlmr_ner_works_in_the_token_classification_pipeline(tiny_xlmr_ner):
    model = AutoModelForTokenClassification.from_pretrained(tiny_xlmr_ner)
    assert [model.config.id2label[i] for i in range(len(CONLL_LABELS))] == list(CONLL_LABELS)
    tokenizer = AutoTokenizer.from_pretrained(tiny_xlmr_ner)
    assert tokenizer.convert_ids_to_tokens([0, 1, 2, 3]) == ["<s>", "<pad>", "</s>", "<unk>"]
    assert tokenizer.mask_token_id == len(tokenizer) - 1
    # Force a known prediction: every token scores highest for B-LOC.
    with torch.no_grad():
        model.classifier.weight.zero_()
        model.classifier.bias.copy_(torch.arange(len(CONLL_LABELS)) == CONLL_LABELS.label2id["B-LOC"])
    tagger = pipeline("token-classification", model=model, tokenizer=tokenizer, aggregation_strategy="first")
    sentence = "Angela Merkel visited Paris"
    entities = tagger(sentence)
    assert {e["entity_group"] for e in entities} == {"LOC"}
    covered = {i for e in entities for i in range(e["start"], e["end"])}
    assert covered == {i for i, char in enumerate(sentence) if not char.isspace()}


def test_xlmr_ner_pipeline_loads_from_the_folder(tiny_xlmr_ner):
    tagger = pipeline("token-classification", model=str(tiny_xlmr_ner), aggregation_strategy="first")
    for entity in tagger("Ich wohne in Göteborg ."):
        assert entity["entity_group"] in CONLL_LABELS.types


def test_bart_round_trips_a_bracket_parse(tiny_bart):
    tokenizer = AutoTokenizer.from_pretrained(tiny_bart)
    model = AutoModelForSeq2SeqLM.from_pretrained(tiny_bart)
    parse = "[IN:GET_WEATHER ¿cómo estará el clima en [SL:LOCATION Miami ] ]"
    ids = tokenizer(parse).input_ids
    assert tokenizer.unk_token_id not in ids
    assert tokenizer.decode(ids, skip_special_tokens=True) == parse
    # every token the tokenizer can produce has a row in the model's embeddings (else ids index past it)
    assert len(tokenizer) <= model.get_input_embeddings().num_embeddings
    out = model.generate(**tokenizer([parse], return_tensors="pt"), max_new_tokens=5)
    assert out.shape[0] == 1 and 2 <= out.shape[1] <= 6 and out[0, 0] == model.config.decoder_start_token_id


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("name", ["build_tiny_m2m100", "build_tiny_xlmr_ner", "build_tiny_bart", "build_tiny_bert"])
def test_tiny_builders_are_deterministic_for_a_seed(name, tmp_path):
    """Two builds with one seed are byte-identical (tokenizer and weights), so offline examples print the same numbers."""
    import tiny_models

    import crop_hf.demo_models as demo_models

    build = getattr(demo_models, name, None) or getattr(tiny_models, name)
    first, second = _files(build(tmp_path / "a")), _files(build(tmp_path / "b"))
    assert first.keys() == second.keys() and any(key.endswith(".safetensors") for key in first)
    assert [key for key in first if first[key] != second[key]] == []
    other_seed = _files(build(tmp_path / "c", seed=1))
    assert other_seed["model.safetensors"] != first["model.safetensors"]  # the seed decides the weights


def test_tiny_bert_splits_words_by_default_and_keeps_frequent_words_whole_without_a_piece_limit(tmp_path):
    from transformers import AutoTokenizer

    from crop_hf.demo_models import build_tiny_bert

    corpus = ["remind me about the wedding tomorrow morning"] * 50 + ["weather in paris tomorrow"] * 50
    short = AutoTokenizer.from_pretrained(build_tiny_bert(tmp_path / "short", corpus))
    whole = AutoTokenizer.from_pretrained(build_tiny_bert(tmp_path / "whole", corpus,
                                                          max_piece_length=None))
    assert max(len(piece.lstrip("#")) for piece in short.get_vocab() if piece not in short.all_special_tokens) == 3
    assert len(short.tokenize("tomorrow")) > 1
    assert whole.tokenize("tomorrow") == ["tomorrow"]


def test_masked_lm_training_learns_the_corpus_and_saves_only_the_encoder(tmp_path):
    from safetensors.torch import load_file
    from transformers import BertModel

    from crop_hf.demo_models import build_tiny_bert, train_masked_lm

    # Every word is predictable from the others: colour <-> fruit, and the frame is constant.
    pairs = [("red", "apple"), ("yellow", "banana"), ("green", "lime"), ("purple", "grape")]
    lines = [f"the {colour} {fruit} is sweet" for colour, fruit in pairs] * 8
    folder = build_tiny_bert(tmp_path / "bert", corpus=lines, max_piece_length=None)
    before = BertModel.from_pretrained(folder).embeddings.word_embeddings.weight.detach().clone()
    vocabulary = len(AutoTokenizer.from_pretrained(folder))
    loss = train_masked_lm(folder, [*lines, "", "   "], steps=200, batch_size=16, learning_rate=3e-3)
    # Random weights score about ln(vocabulary) > 5 per masked word; one that learned the corpus far less
    # (not 0: a colour and its fruit masked together leave four choices).
    assert torch.log(torch.tensor(float(vocabulary))) > 5.0 and loss < 1.5
    after = BertModel.from_pretrained(folder).embeddings.word_embeddings.weight
    assert not torch.allclose(before, after)
    saved = load_file(str(folder / "model.safetensors"))
    assert saved and not any(name.startswith("cls.") for name in saved)  # the prediction head is dropped
    assert len(AutoTokenizer.from_pretrained(folder)) == vocabulary


@pytest.mark.parametrize(("lines", "steps", "message"), [(["a b"], 0, "steps and batch_size must be 1 or more"),
                                                        (["", "  "], 5, "needs lines of text")])
def test_masked_lm_training_rejects_no_steps_no_text_and_other_encoders(tiny_bert, tiny_xlmr_ner, lines, steps,
                                                                        message):
    from crop_hf.demo_models import train_masked_lm

    with pytest.raises(ValueError, match=message):
        train_masked_lm(tiny_bert, lines, steps)
    with pytest.raises(ValueError, match=r"trains BERT encoders .* holds a 'xlm-roberta' model"):
        train_masked_lm(tiny_xlmr_ner, ["a b"], 5)


def test_whole_word_masking_masks_every_piece_of_a_drawn_word_and_nothing_else(tmp_path):
    from crop_hf.demo_models import _mask_whole_words, build_tiny_bert

    lines = ["remind me about the wedding tomorrow morning", "weather in paris tomorrow", "call mummy"] * 20
    tokenizer = AutoTokenizer.from_pretrained(build_tiny_bert(tmp_path / "bert", corpus=lines))  # pieces of <= 3
    encoded = tokenizer(lines)
    word_ids = [encoded.word_ids(i) for i in range(len(lines))]
    torch.manual_seed(0)
    batch = _mask_whole_words(tokenizer, encoded["input_ids"], word_ids, 0.3, list(range(len(lines))))
    drawn = total = 0
    for row, words in enumerate(word_ids):
        original = torch.tensor(encoded["input_ids"][row])
        targets = batch["labels"][row, : len(words)] != -100
        assert (batch["labels"][row, len(words):] == -100).all() and not targets[[0, -1]].any()  # no specials, pads
        assert torch.equal(batch["labels"][row, : len(words)][targets], original[targets])
        # what is not a target keeps its token
        assert torch.equal(batch["input_ids"][row, : len(words)][~targets], original[~targets])
        for word in set(words) - {None}:
            pieces = targets[[position for position, w in enumerate(words) if w == word]]
            assert pieces.all() or not pieces.any()  # a word is a target with all its pieces or not at all
            drawn += int(pieces.all())
            total += 1
    assert 0.2 < drawn / total < 0.4
    targets = batch["labels"] != -100
    share = (batch["input_ids"][targets] == tokenizer.mask_token_id).float().mean()
    assert 0.7 < share < 0.9  # BERT's 80% [MASK]


def test_whole_word_masking_never_masks_a_separator_inside_a_line(tmp_path):
    from crop_hf.demo_models import _mask_whole_words, build_tiny_bert

    lines = ["mera alarm set karo [SEP] set my alarm"] * 4
    tokenizer = AutoTokenizer.from_pretrained(build_tiny_bert(tmp_path / "bert", corpus=lines))
    encoded = tokenizer(lines)
    word_ids = [encoded.word_ids(i) for i in range(len(lines))]
    inner = encoded["input_ids"][0].index(tokenizer.sep_token_id)
    assert word_ids[0][inner] is not None  # the fast tokenizer counts it as a word
    batch = _mask_whole_words(tokenizer, encoded["input_ids"], word_ids, 1.0, [0, 1])
    targets = batch["labels"][0] != -100
    assert not targets[inner] and batch["input_ids"][0, inner] == tokenizer.sep_token_id
    assert targets.sum() == len(encoded["input_ids"][0]) - 3  # every other piece but [CLS] and the final [SEP]


def test_masked_lm_training_learns_whole_words(tmp_path):
    from crop_hf.demo_models import build_tiny_bert, train_masked_lm

    pairs = [("red", "apple"), ("yellow", "banana"), ("green", "lime"), ("purple", "grape")]
    lines = [f"the {colour} {fruit} is sweet" for colour, fruit in pairs] * 8
    folder = build_tiny_bert(tmp_path / "bert", corpus=lines)  # pieces of <= 3: "banana" is several
    assert len(AutoTokenizer.from_pretrained(folder).tokenize("banana")) > 1
    untrained = train_masked_lm(folder, lines, steps=1, batch_size=16, whole_words=True)
    loss = train_masked_lm(folder, lines, steps=300, batch_size=16, learning_rate=3e-3, whole_words=True)
    assert untrained > 3.0 and loss < 1.5
