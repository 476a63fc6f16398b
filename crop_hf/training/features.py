"""Former home of word-to-subword encoding, kept so that existing imports work: see :mod:`crop_hf.data.tokenization`."""

from crop_hf.data.tokenization import (
    IGNORE_INDEX,
    align_labels_to_first_subword,
    first_subword_positions,
    pad_batch,
    tokenize_words,
)

__all__ = ["IGNORE_INDEX", "align_labels_to_first_subword", "first_subword_positions", "pad_batch", "tokenize_words"]
