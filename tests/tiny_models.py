"""Tiny random-weight models only the tests and benchmarks use (a BART generator, a BERT encoder).

The demo's models (M2M100, XLM-R tagger) are in :mod:`crop_hf.demo_models`; these share its
helpers and are built the same way: tokenizer trained on a small corpus, random weights,
``save_pretrained``. Benchmarks import this module with ``tests/`` on ``sys.path``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from crop_hf.demo_models import _corpus, _encoder_decoder_settings, _pieces, _train_sentencepiece

__all__ = ["PARALLEL_SAMPLE", "build_tiny_bart", "build_tiny_bert"]

#: Short sentence pairs (whitespace tokens) in several languages, with an English side.
PARALLEL_SAMPLE: tuple[tuple[str, str], ...] = (
    ("I live in Gothenburg and work for Volvo .", "Ich wohne in Göteborg und arbeite für Volvo ."),
    ("Angela Merkel visited Paris on Monday .", "Angela Merkel besuchte am Montag Paris ."),
    ("The weather in Miami next Friday", "El clima en Miami el próximo viernes"),
    ("I live in Gothenburg", "Я живу в Гётеборге"),
    ("Volvo is a company in Sweden .", "Volvo es una empresa de Suecia ."),
    ("Where is the train station ?", "Wo ist der Bahnhof ?"),
    ("New York is big", "Nueva York es grande"),
    ("Paris", "Paris"),
    ("a b", "c"),
    ("I live in Gothenburg", "ฉัน อาศัย อยู่ ใน โกเธนเบิร์ก"),
    ("I work in Gothenburg", "أعمل في غوتنبرغ"),
    ("Angela Merkel , the chancellor , visited the old harbour of Gothenburg yesterday .",
     "Angela Merkel , die Kanzlerin , besuchte gestern den alten Hafen von Göteborg ."),
)


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


def build_tiny_bert(
    save_dir: str | Path,
    corpus: Iterable[str] | None = None,
    *,
    vocab_size: int = 300,
    hidden_size: int = 32,
    layers: int = 3,
    seed: int = 0,
) -> Path:
    """Write a random-weight ``BertModel`` and a WordPiece ``BertTokenizer`` trained on ``corpus``.

    The vocabulary is deliberately small so that most words split into several subwords: the
    subword-to-word mapping of the aligners is exercised on every sentence. It is derived from a
    SentencePiece unigram model (word-initial ``▁piece`` → ``piece``, others → ``##piece``; pieces
    of up to three characters) plus every character, because ``tokenizers``' WordPiece trainer
    breaks ties between equally frequent pairs in hash order: two builds gave different
    vocabularies (over 100 of 300 ids differed). SentencePiece training is deterministic, so two
    builds with one seed are byte-identical.
    """
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    save_dir = Path(save_dir)
    save_dir.mkdir(parents=True, exist_ok=True)
    lines = [*_corpus(corpus), *(side for pair in PARALLEL_SAMPLE for side in pair)]
    _, processor = _train_sentencepiece(lines, vocab_size)
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    for piece, _ in _pieces(processor):
        word_initial = piece.startswith("\u2581")
        if len(piece) - word_initial <= 3:  # pieces of up to 3 characters: longer words always split
            tokens.append(piece[1:] if word_initial else f"##{piece}")
    characters = sorted({char for line in lines for char in line if not char.isspace()})
    tokens += [*characters, *(f"##{char}" for char in characters)]
    vocab = {token: index for index, token in enumerate(dict.fromkeys(token for token in tokens if token.strip("#")))}
    tokenizer = BertTokenizer(vocab=vocab, do_lower_case=False, strip_accents=False)
    tokenizer.save_pretrained(save_dir)

    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=2 * hidden_size,
        max_position_embeddings=128,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        pad_token_id=tokenizer.pad_token_id,
    )
    BertModel(config).save_pretrained(save_dir)
    return save_dir
