"""From words and word labels to model inputs: tokenization, first-subword labels, padding."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["IGNORE_INDEX", "align_labels_to_first_subword", "first_subword_positions", "pad_batch", "tokenize_words"]

#: Label id the loss ignores (PyTorch's ``CrossEntropyLoss`` default).
IGNORE_INDEX = -100


def align_labels_to_first_subword(word_ids: Sequence[int | None], word_labels: Sequence[int],
                                  ignore_index: int = IGNORE_INDEX) -> list[int]:
    """Give each word's label to its first subword; continuation subwords and special tokens get ``ignore_index``.

    ``word_ids`` is what a fast tokenizer's ``word_ids()`` returns (``None`` for special tokens).

    >>> align_labels_to_first_subword([None, 0, 0, 1, None], [3, 0])
    [-100, 3, -100, 0, -100]
    """
    return [ignore_index if position < 0 else word_labels[position] for position in first_subword_positions(word_ids)]


def first_subword_positions(word_ids: Sequence[int | None]) -> list[int]:
    """Each word's index at its first subword, ``-1`` at continuation subwords and special tokens.

    >>> first_subword_positions([None, 0, 0, 1, None])
    [-1, 0, -1, 1, -1]
    """
    positions, previous = [], None
    for word in word_ids:
        positions.append(-1 if word is None or word == previous else word)
        previous = word
    return positions


def _require_fast(tokenizer) -> None:
    if not getattr(tokenizer, "is_fast", False):
        raise TypeError(f"{type(tokenizer).__name__} is not a fast (tokenizers-backed) tokenizer; word "
                        "alignment needs word_ids(). Load it with AutoTokenizer.from_pretrained(..., use_fast=True)")


def tokenize_words(tokenizer, words: Sequence[Sequence[str]], max_length: int,
                   word_labels: Sequence[Sequence[int]] | None = None) -> dict[str, list[list[int]]]:
    """Tokenize pre-split sentences; return ``input_ids``, ``attention_mask``, ``word_index`` and, with ``word_labels``, ``labels``.

    ``word_index`` marks each word's first subword with the word's position (``-1`` elsewhere), so
    predictions map back to words; words cut off by ``max_length`` have no position.
    """
    _require_fast(tokenizer)
    encoded = tokenizer([list(w) for w in words], is_split_into_words=True, truncation=True, max_length=max_length)
    out = {"input_ids": encoded["input_ids"], "attention_mask": encoded["attention_mask"], "word_index": []}
    if word_labels is not None:
        out["labels"] = []
    for i in range(len(words)):
        word_ids = encoded.word_ids(i)
        out["word_index"].append(first_subword_positions(word_ids))
        if word_labels is not None:
            out["labels"].append(align_labels_to_first_subword(word_ids, word_labels[i]))
    return out


# A small collator of our own: transformers' DataCollatorForTokenClassification pads only the
# tokenizer's fields and ``labels``, and we also carry ``word_index`` and ``example_index``.
def pad_batch(rows: Sequence[dict], pad_token_id: int, pad_to_multiple_of: int | None = None) -> dict:
    """Pad a list of tokenized rows into tensors (``input_ids`` with the pad id, ``labels`` with -100, ``word_index`` with -1)."""
    import torch

    longest = max(len(row["input_ids"]) for row in rows)
    if pad_to_multiple_of:
        longest = -(-longest // pad_to_multiple_of) * pad_to_multiple_of
    fill = {"input_ids": pad_token_id, "attention_mask": 0, "labels": IGNORE_INDEX, "word_index": -1}
    batch = {}
    for key, value in fill.items():
        if key in rows[0]:
            batch[key] = torch.tensor([list(row[key]) + [value] * (longest - len(row[key])) for row in rows])
    if "example_index" in rows[0]:
        batch["example_index"] = torch.tensor([row["example_index"] for row in rows])
    return batch
