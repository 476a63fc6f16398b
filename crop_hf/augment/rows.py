"""The columns every augmented parse starts with, alike for translate-and-align and generate-and-filter.

A kept row of either augmentation is a flat parse, written out: its utterance, words, intent,
IOB2 slot tags and bracket parse, in that order (the first columns of ``dataset/``), and then the
augmentation's own columns (:class:`~crop_hf.augment.translate_align.AlignedParse`,
:class:`~crop_hf.augment.generate_filter.AugmentedParse`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["ParseRow"]


@dataclass
class ParseRow:
    """A flat semantic parse as a dataset row: the columns a parser trains on (``crop-hf train-parser``)."""

    utterance: str = field(metadata={"help": "the utterance the parse annotates (translate-and-align: the translation, as written)"})
    tokens: list[str] = field(metadata={"help": "the words of `parse`"})
    intent: str = field(metadata={"help": "the intent name"})
    slot_tags: list[str] = field(metadata={"help": "IOB2 slot tags over `tokens`"})
    parse: str = field(metadata={"help": "the bracket parse"})
