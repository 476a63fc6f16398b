"""The rows a synthesis run writes: :class:`KeptSentence` in ``dataset/``, :class:`DiscardedSentence` in ``discarded/``.

Each row type is the one place its columns are declared: their order, their types (hence the
``datasets.Features`` of the merged datasets, :func:`kept_features` and
:func:`discarded_features`) and what each column means (:func:`~crop_hf.engine.records.row_descriptions`).
Shards store rows as ``dataclasses.asdict`` of these types, so a field renamed here is a new
column on disk: a run written before would no longer merge.

The reasons a discarded row gives (CroP's post-processing, sections 3 and 4.2) live here too: a
synthesized sentence is kept only if every filter passes; otherwise it is dropped with the reason
of the first filter that failed, and the reason is counted in the run's statistics:

========================  ===============================================================
reason                    dropped because
========================  ===============================================================
``undecodable``           the input line does not decode in ``encoding`` (UTF-8 by default;
                          each file's count and first line numbers are logged once;
                          ``strict_input`` stops the run instead)
``wrong_language_source`` the translation into the source language is identified as another
                          language (langid, restricted to the languages of the run)
``wrong_language_target`` the labeled back-translation is identified as another language
``too_long``              the raw sentence has more than ``max_words`` words (CroP: 128)
``contains_marker``       the raw sentence already contains a boundary marker of the
                          translator's style (``__SLOT3__``), so its labels could not be read
                          back unambiguously
``pipeline_error``        a pipeline refused the sentence (``ValueError``/``TypeError``, or a
                          translation longer than the tagger takes); the rest of its batch
                          goes on. One warning per shard gives the count and the first
                          sentence with its error
``markers_incomplete``    no beam hypothesis kept every boundary marker intact
``projection_incomplete`` a translated entity was not found in the raw sentence (with
                          ``alignment``: a source entity reached no word; with a
                          model-scored method such as ``insertion``: a source entity
                          could not be placed in the raw sentence, its status says why)
``all_o``                 no entity was projected (CroP deletes all-``O`` sentences)
========================  ===============================================================
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from crop_hf.data.features import ner_features
from crop_hf.engine.records import row_features

__all__ = ["REASONS", "STATISTICS_COLUMNS", "SYNTHESIS_REASONS", "DiscardedSentence", "KeptSentence",
           "discarded_features", "kept_features"]

#: Why synthesis drops a sentence (the table above), in the order the statistics list them, and what each means.
REASONS: dict[str, str] = {
    "undecodable": "the input line does not decode in the input's encoding (--encoding, UTF-8 by default)",
    "wrong_language_source": "the translation into the source language is identified as another language",
    "wrong_language_target": "the labeled back-translation is identified as another language",
    "too_long": "the raw sentence has more than max_words words",
    "contains_marker": "the raw sentence already contains a boundary marker of the translator's style",
    "pipeline_error": "a pipeline refused the sentence",
    "markers_incomplete": "no beam hypothesis kept every boundary marker intact",
    "projection_incomplete": "a translated entity was not found in the raw sentence (or a source entity could not "
                             "be placed in it: alignment, insertion)",
    "all_o": "no entity was projected",
}
#: The reasons alone, in order.
SYNTHESIS_REASONS: tuple[str, ...] = tuple(REASONS)

#: The counts a run reports per language: sentences read, kept, and dropped per reason.
STATISTICS_COLUMNS: tuple[str, ...] = ("input", "kept", *SYNTHESIS_REASONS)


@dataclass
class KeptSentence:
    """A raw target sentence with projected labels (a row of ``dataset/``)."""

    tokens: list[str] = field(metadata={"help": "the raw sentence's tokens (characters for languages written "
                                                "without spaces, words with punctuation split off otherwise)"})
    ner_tags: list[int] = field(metadata={"help": "IOB2 tags as class ids of the NER model's label set"})
    lang: str = field(metadata={"help": "the target language"})
    source_translation: str = field(metadata={"help": "the sentence translated into the source language"})
    labeled_translation: str = field(metadata={"help": "the back-translation with boundary markers"})
    back_translation: str = field(metadata={"help": "the back-translation without markers"})
    # What the source NER model found, and what became of each entity: the report
    # (crop_hf.report) compares source and target label distributions and counts failures.
    source_labels: list[str] = field(metadata={"help": "the type of each entity the source NER model found in "
                                                       "the translation"})
    projection_status: list[str] = field(metadata={"help": "what became of each translated entity"})
    tokenization: str = field(metadata={"help": "how the raw sentence was tokenized"})


@dataclass
class DiscardedSentence:
    """A raw target sentence a filter dropped, with what the stages produced (a row of ``discarded/``).

    Its ``tokens``, ``lang`` and ``projected_tags`` are what :func:`crop_hf.self_training.self_train` reads.
    """

    text: str = field(metadata={"help": "the raw sentence"})
    tokens: list[str] = field(metadata={"help": "its tokens"})
    # None where projection never ran: self-training then asks the source model.
    projected_tags: list[str] | None = field(metadata={"help": "the tags projection gave (partial), if it ran"})
    lang: str = field(metadata={"help": "the target language"})
    reason: str = field(metadata={"help": "why it was dropped (the first filter that failed, :data:`REASONS`)"})
    source_translation: str = field(metadata={"help": "the sentence translated into the source language"})
    labeled_translation: str = field(metadata={"help": "the back-translation with boundary markers"})
    back_translation: str = field(metadata={"help": "the back-translation without markers"})
    source_labels: list[str] = field(metadata={"help": "the type of each entity the source NER model found in "
                                                       "the translation"})
    projection_status: list[str] = field(metadata={"help": "what became of each translated entity"})


def kept_features(label_names: Sequence[str]) -> Any:
    """The ``datasets.Features`` of :class:`KeptSentence`, ``ner_tags`` as ``ClassLabel`` over ``label_names``."""
    return row_features(KeptSentence, {"ner_tags": ner_features(label_names)["ner_tags"]})


def discarded_features() -> Any:
    """The ``datasets.Features`` of :class:`DiscardedSentence`."""
    return row_features(DiscardedSentence)
