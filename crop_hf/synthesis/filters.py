"""The filters of CroP's post-processing (section 3 and 4.2), each with a named reason.

A synthesized sentence is kept only if every filter passes; otherwise it is dropped with the
reason of the first filter that failed, and the reason is counted in the run's statistics:

========================  ===============================================================
reason                    dropped because
========================  ===============================================================
``undecodable``           the input line is not valid UTF-8 (its file and line are logged;
                          ``strict_input`` stops the run instead)
``wrong_language_source`` the translation into the source language is identified as another
                          language (langid, restricted to the languages of the run)
``wrong_language_target`` the labeled back-translation is identified as another language
``too_long``              the raw sentence has more than ``max_words`` words (CroP: 128)
``contains_marker``       the raw sentence already contains a boundary marker of the
                          translator's style (``__SLOT3__``), so its labels could not be read
                          back unambiguously
``pipeline_error``        a pipeline refused the sentence (``ValueError``/``TypeError``, or a
                          translation longer than the tagger takes; the error is logged); the
                          rest of its batch goes on
``markers_incomplete``    no beam hypothesis kept every boundary marker intact
``projection_incomplete`` a translated entity was not found in the raw sentence (with
                          ``alignment``: a source entity reached no word; with a
                          model-scored method such as ``insertion``: a source entity
                          could not be placed in the raw sentence, its status says why)
``all_o``                 no entity was projected (CroP deletes all-``O`` sentences)
========================  ===============================================================
"""

from __future__ import annotations

__all__ = ["REASONS", "STATISTICS_COLUMNS", "SYNTHESIS_REASONS"]

#: Why synthesis drops a sentence (the table above), in the order the statistics list them, and what each means.
REASONS: dict[str, str] = {
    "undecodable": "the input line is not valid UTF-8",
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
