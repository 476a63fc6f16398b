"""Tiny random-weight models for ``crop-hf demo`` and the offline README examples.

An M2M100 translator and an XLM-R tagger (what ``crop-hf demo`` runs on), a BERT encoder (for
alignment) and a joint intent/slot parser over it (``pipeline("semantic-parsing")``).

Built offline in about a second: each builder trains its tokenizer on a small corpus, writes a
model with random weights and saves both with ``save_pretrained``, so the folder loads back
through ``AutoTokenizer`` and ``AutoModel*.from_pretrained(folder)``, exactly the path a Hub
checkpoint takes. They prove plumbing, not quality (train them where something must be learned).
Tests and benchmarks use them too; a model only they use (BART) lives in ``tests/tiny_models.py``.

>>> from crop_hf.demo_models import build_tiny_m2m100
>>> path = build_tiny_m2m100("/tmp/tiny-m2m100")  # doctest: +SKIP
>>> AutoModelForSeq2SeqLM.from_pretrained(path)  # doctest: +SKIP
"""

from __future__ import annotations

import functools
import io
import json
import string
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from crop_hf.labels import CONLL_LABELS, LabelSet

__all__ = [
    "PARALLEL_SAMPLE",
    "SAMPLE_CORPUS",
    "SLOT_TOKENS",
    "build_tiny_bert",
    "build_tiny_m2m100",
    "build_tiny_parser",
    "build_tiny_xlmr_ner",
    "train_masked_lm",
]

#: The boundary markers of labeled sequence translation that tiny translation models know as single tokens.
SLOT_TOKENS: tuple[str, ...] = tuple(f"__SLOT{i}__" for i in range(16))

#: A few sentences in several scripts, so every tokenizer covers Latin, accented, CJK, Cyrillic,
#: Arabic and Thai characters even when a caller brings no corpus of its own.
SAMPLE_CORPUS: tuple[str, ...] = (
    "I live in Gothenburg and work for Volvo .",
    "Angela Merkel visited Paris on Monday .",
    "Ich wohne in Göteborg und arbeite für Volvo .",
    "Vivo en Gotemburgo y trabajo para Volvo .",
    "Ik woon in Göteborg en werk bij Volvo .",
    "Jeg bor i Göteborg og jobber for Volvo .",
    "Dime el clima para next Friday en Miami",
    "我住在哥德堡，在沃尔沃工作。",
    "私はヨーテボリに住んでいます。",
    "Я живу в Гётеборге и работаю в Volvo .",
    "أعيش في غوتنبرغ وأعمل في فولفو .",
    "ฉันอาศัยอยู่ในโกเธนเบิร์ก",
    string.ascii_letters + " " + string.digits + " " + string.punctuation,
)


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


def _corpus(corpus: Iterable[str] | None) -> list[str]:
    lines = [line for line in (corpus or ()) if line.strip()]
    return lines + list(SAMPLE_CORPUS)


def _train_sentencepiece(lines: list[str], vocab_size: int, user_defined_symbols: Iterable[str] = ()):
    """Train a unigram SentencePiece model in memory; returns ``(serialized_model, processor)``."""
    import sentencepiece as spm

    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=buffer,
        vocab_size=vocab_size,
        hard_vocab_limit=False,  # a tiny corpus may not support the requested size
        user_defined_symbols=list(user_defined_symbols),
        character_coverage=1.0,
        model_type="unigram",
        unk_id=0,
        bos_id=-1,
        eos_id=-1,
        minloglevel=2,
    )
    model = buffer.getvalue()
    return model, spm.SentencePieceProcessor(model_proto=model)


def _pieces(processor) -> list[tuple[str, float]]:
    """Ordinary pieces (no control or unknown symbols) with their scores."""
    return [
        (processor.id_to_piece(i), processor.get_score(i))
        for i in range(processor.get_piece_size())
        if not (processor.is_unknown(i) or processor.is_control(i))
    ]


def _encoder_decoder_settings(tokenizer, d_model: int, layers: int) -> dict:
    """Sizes and special ids shared by the tiny M2M100 and BART configs (fairseq conventions)."""
    return {
        "d_model": d_model,
        "encoder_layers": layers,
        "decoder_layers": layers,
        "encoder_attention_heads": 2,
        "decoder_attention_heads": 2,
        "encoder_ffn_dim": 2 * d_model,
        "decoder_ffn_dim": 2 * d_model,
        "max_position_embeddings": 256,
        "pad_token_id": tokenizer.pad_token_id,
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "decoder_start_token_id": tokenizer.eos_token_id,
    }


def build_tiny_m2m100(
    save_dir: str | Path,
    corpus: Iterable[str] | None = None,
    *,
    vocab_size: int = 400,
    d_model: int = 32,
    layers: int = 1,
    seed: int = 0,
    marker_pieces: bool = True,
) -> Path:
    """Write a tiny M2M100 translation model and its tokenizer to ``save_dir``.

    The SentencePiece model is trained on ``corpus`` plus :data:`SAMPLE_CORPUS`, with the
    boundary markers ``__SLOT0__`` … ``__SLOT15__`` as user-defined pieces: each is one token, and
    decoding keeps the spaces around it as SentencePiece restores them. ``marker_pieces=False``
    leaves them out, as a pretrained model's vocabulary does (the pipeline and training then add
    them, :func:`crop_hf.translation.marker_tokens.add_marker_tokens`). All 100 M2M100 language
    codes are registered as special tokens (``get_lang_id``, ``src_lang``/``tgt_lang``).
    """
    import torch
    from transformers import M2M100Config, M2M100ForConditionalGeneration, M2M100Tokenizer
    from transformers.models.m2m_100.tokenization_m2m_100 import FAIRSEQ_LANGUAGE_CODES

    save_dir = Path(save_dir)
    save_dir.mkdir(parents=True, exist_ok=True)
    model_bytes, processor = _train_sentencepiece(_corpus(corpus), vocab_size, SLOT_TOKENS if marker_pieces else ())
    (save_dir / "sentencepiece.bpe.model").write_bytes(model_bytes)
    # M2M100's vocab.json: fairseq's four specials first, then the SentencePiece pieces.
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for piece, _ in _pieces(processor):
        vocab.setdefault(piece, len(vocab))
    (save_dir / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    # Passed explicitly: transformers 5 does not register the language tokens as special by itself,
    # and unregistered they are split into pieces by SentencePiece.
    language_tokens = [f"__{code}__" for code in FAIRSEQ_LANGUAGE_CODES["m2m100"]]
    tokenizer = M2M100Tokenizer(
        str(save_dir / "vocab.json"),
        str(save_dir / "sentencepiece.bpe.model"),
        additional_special_tokens=language_tokens,
    )
    tokenizer.save_pretrained(save_dir)

    torch.manual_seed(seed)
    config = M2M100Config(
        vocab_size=len(tokenizer) + tokenizer.num_madeup_words,
        dropout=0.0,
        attention_dropout=0.0,
        activation_dropout=0.0,
        **_encoder_decoder_settings(tokenizer, d_model, layers),
    )
    M2M100ForConditionalGeneration(config).save_pretrained(save_dir)
    return save_dir


def _encoder_sizes(tokenizer: Any, hidden_size: int, layers: int) -> dict[str, int]:
    """The sizes of a tiny encoder over ``tokenizer``'s vocabulary: two heads, a feed-forward twice as wide."""
    return {"vocab_size": len(tokenizer), "hidden_size": hidden_size, "num_hidden_layers": layers,
            "num_attention_heads": 2, "intermediate_size": 2 * hidden_size}


def build_tiny_xlmr_ner(
    save_dir: str | Path,
    labels: LabelSet | Iterable[str] = CONLL_LABELS,
    corpus: Iterable[str] | None = None,
    *,
    vocab_size: int = 400,
    hidden_size: int = 32,
    layers: int = 2,
    seed: int = 0,
) -> Path:
    """Write a tiny XLM-R token-classification model over ``labels`` (CoNLL by default).

    The tokenizer is XLM-R's layout (``<s> <pad> </s> <unk>``, SentencePiece unigram pieces,
    ``<mask>`` last); ``config.json`` carries ``id2label``/``label2id``, so
    ``pipeline("token-classification", model=save_dir, aggregation_strategy="first")`` works.
    """
    import torch
    from transformers import XLMRobertaConfig, XLMRobertaForTokenClassification, XLMRobertaTokenizer

    save_dir = Path(save_dir)
    save_dir.mkdir(parents=True, exist_ok=True)
    names = list(labels)
    _, processor = _train_sentencepiece(_corpus(corpus), vocab_size)
    specials = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)]
    tokenizer = XLMRobertaTokenizer(vocab=[*specials, *_pieces(processor), ("<mask>", 0.0)])
    tokenizer.save_pretrained(save_dir)

    torch.manual_seed(seed)
    config = XLMRobertaConfig(
        **_encoder_sizes(tokenizer, hidden_size, layers),
        max_position_embeddings=258,  # RoBERTa positions start after the padding index
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        id2label=dict(enumerate(names)),
        label2id={name: i for i, name in enumerate(names)},
    )
    XLMRobertaForTokenClassification(config).save_pretrained(save_dir)
    return save_dir


def build_tiny_bert(
    save_dir: str | Path,
    corpus: Iterable[str] | None = None,
    *,
    vocab_size: int = 300,
    hidden_size: int = 32,
    layers: int = 3,
    seed: int = 0,
    max_piece_length: int | None = 3,
) -> Path:
    """Write a random-weight ``BertModel`` and a WordPiece ``BertTokenizer`` trained on ``corpus``.

    By default the vocabulary is deliberately small so that most words split into several
    subwords: the subword-to-word mapping of the aligners is exercised on every sentence. It is
    derived from a SentencePiece unigram model (word-initial ``▁piece`` → ``piece``, others →
    ``##piece``; pieces of up to ``max_piece_length`` characters, or all of them with ``None``, so
    that frequent words stay whole) plus every character, because ``tokenizers``' WordPiece trainer
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
        if max_piece_length is None or len(piece) - word_initial <= max_piece_length:  # else longer words split
            tokens.append(piece[1:] if word_initial else f"##{piece}")
    characters = sorted({char for line in lines for char in line if not char.isspace()})
    tokens += [*characters, *(f"##{char}" for char in characters)]
    vocab = {token: index for index, token in enumerate(dict.fromkeys(token for token in tokens if token.strip("#")))}
    tokenizer = BertTokenizer(vocab=vocab, do_lower_case=False, strip_accents=False)
    tokenizer.save_pretrained(save_dir)

    torch.manual_seed(seed)
    config = BertConfig(
        **_encoder_sizes(tokenizer, hidden_size, layers),
        max_position_embeddings=128,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        pad_token_id=tokenizer.pad_token_id,
    )
    BertModel(config).save_pretrained(save_dir)
    return save_dir


def train_masked_lm(save_dir: str | Path, lines: Sequence[str], steps: int, *, batch_size: int = 64,
                    learning_rate: float = 1e-3, mask_probability: float = 0.15, whole_words: bool = False,
                    seed: int = 0) -> float:
    """Train the BERT encoder in ``save_dir`` as a masked language model on ``lines``, and save it back.

    For an encoder built from scratch (:func:`build_tiny_bert`): a few minutes of BERT's masked-word
    objective on the training text itself, before any labels, give the task a start that random
    weights do not (how much: ``benchmarks/bench_parser.py``). Each step masks ``mask_probability``
    of the sub-words of ``batch_size`` lines drawn at random (``transformers``' collator: 80% become
    ``[MASK]``, 10% a random token, 10% stay) and predicts them (``whole_words``: ``mask_probability``
    of the words instead, each with all its sub-words); AdamW with 10% warm-up, then linear
    decay. Only the encoder is saved (the prediction head is dropped); the tokenizer is unchanged.
    Seeded. Returns the mean loss of the last 10% of the steps. transformers' load report lists the
    prediction head's weights as missing (and the checkpoint as odd for it): expected, the head is new.
    """
    import random

    import torch
    from transformers import AutoConfig, AutoTokenizer, BertForMaskedLM, DataCollatorForLanguageModeling

    if steps < 1 or batch_size < 1:
        raise ValueError(f"steps and batch_size must be 1 or more, got {steps} and {batch_size}")
    lines = [line for line in lines if line.strip()]
    if not lines:
        raise ValueError("train_masked_lm needs lines of text; got none that are not blank")
    config = AutoConfig.from_pretrained(save_dir)
    if config.model_type != "bert":
        raise ValueError(f"train_masked_lm trains BERT encoders (build_tiny_bert's); {save_dir} holds a "
                         f"{config.model_type!r} model")
    tokenizer = AutoTokenizer.from_pretrained(save_dir)
    torch.manual_seed(seed)
    model = BertForMaskedLM.from_pretrained(save_dir)
    tokenized = tokenizer(lines, truncation=True, max_length=model.config.max_position_embeddings)
    encoded = tokenized["input_ids"]
    if whole_words:
        # transformers' collator finds words from offset mappings, which its padding cannot batch; the
        # fast tokenizer's word ids say the same directly.
        word_ids = [tokenized.word_ids(i) for i in range(len(lines))]
        collate = functools.partial(_mask_whole_words, tokenizer, encoded, word_ids, mask_probability)
    else:
        collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=mask_probability)
        collate = lambda picked: collator([{"input_ids": encoded[i]} for i in picked])  # noqa: E731
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.01)
    warmup = max(steps // 10, 1)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min((step + 1) / warmup, max(0.0, (steps - step) / max(steps - warmup, 1))))
    generator = random.Random(seed)
    losses = []
    model.train()
    for _ in range(steps):
        picked = generator.sample(range(len(encoded)), min(batch_size, len(encoded)))
        batch = collate(picked)
        labels = batch.pop("labels")
        masked = labels != -100
        if not masked.any():  # nothing drawn for masking (very short lines): no signal this step
            continue
        hidden = model.bert(**batch).last_hidden_state
        # The vocabulary-wide head only at the masked positions, most of a step's cost when run everywhere.
        loss = torch.nn.functional.cross_entropy(model.cls(hidden[masked]), labels[masked])
        loss.backward()
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    model.bert.save_pretrained(save_dir)
    tail = losses[-max(len(losses) // 10, 1):]
    return sum(tail) / len(tail) if tail else float("nan")


def _mask_whole_words(tokenizer, encoded: list[list[int]], word_ids: list[list[int | None]], probability: float,
                      picked: list[int]) -> dict:
    """A padded batch of the ``picked`` lines with ``probability`` of their words masked, BERT's way.

    Every sub-word of a drawn word is a target; 80% of the targets become ``[MASK]``, 10% a random
    token and 10% stay, as transformers' collator does. Draws from torch's global generator.
    """
    import torch

    batch = tokenizer.pad([{"input_ids": encoded[i]} for i in picked], return_tensors="pt")
    input_ids = batch["input_ids"].clone()
    targets = torch.zeros_like(input_ids, dtype=torch.bool)
    special = set(tokenizer.all_special_ids)  # a [SEP] inside a line has a word id too: never a target
    for row, i in enumerate(picked):
        drawn = torch.rand(max((w for w in word_ids[i] if w is not None), default=-1) + 1) < probability
        for position, word in enumerate(word_ids[i]):
            targets[row, position] = word is not None and encoded[i][position] not in special and bool(drawn[word])
    batch["labels"] = torch.where(targets, input_ids, -100)
    replaced = targets & (torch.rand(input_ids.shape) < 0.8)
    randomized = targets & ~replaced & (torch.rand(input_ids.shape) < 0.5)
    input_ids[replaced] = tokenizer.mask_token_id
    input_ids[randomized] = torch.randint(len(tokenizer), (int(randomized.sum()),))
    batch["input_ids"] = input_ids
    return batch


def build_tiny_parser(save_dir: str | Path, intent_labels: Sequence[str], slot_labels: Sequence[str],
                      corpus: Iterable[str] | None = None, *, use_crf: bool = True, hidden_size: int = 32,
                      layers: int = 2, seed: int = 0) -> Path:
    """Write a :class:`~crop_hf.modeling.JointIntentSlotModel` over a tiny BERT and its WordPiece tokenizer.

    The folder loads with ``AutoModel.from_pretrained`` and ``pipeline("semantic-parsing", model=...)``.
    """
    import tempfile

    from transformers import AutoTokenizer

    from crop_hf.modeling import JointIntentSlotModel  # heavy (torch): loaded on first use

    save_dir = Path(save_dir)
    with tempfile.TemporaryDirectory() as encoder_dir:
        encoder = build_tiny_bert(encoder_dir, corpus, hidden_size=hidden_size, layers=layers, seed=seed)
        model = JointIntentSlotModel.from_encoder(str(encoder), list(intent_labels), list(slot_labels),
                                                  use_crf=use_crf)
        model.config.encoder_name_or_path = "tiny-bert"
        model.save_pretrained(save_dir)
        AutoTokenizer.from_pretrained(encoder).save_pretrained(save_dir)
    return save_dir
