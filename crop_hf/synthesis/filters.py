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
``projection_incomplete`` a translated entity was not found in the raw sentence
``all_o``                 no entity was projected (CroP deletes all-``O`` sentences)
========================  ===============================================================
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable

logger = logging.getLogger(__name__)

__all__ = ["STATISTICS_COLUMNS", "SYNTHESIS_REASONS", "LanguageIdFilter", "language_filter"]

#: Why synthesis drops a sentence (the table above), in the order the statistics list them.
SYNTHESIS_REASONS: tuple[str, ...] = (
    "undecodable",
    "wrong_language_source",
    "wrong_language_target",
    "too_long",
    "contains_marker",
    "pipeline_error",
    "markers_incomplete",
    "projection_incomplete",
    "all_o",
)

#: The counts a run reports per language: sentences read, kept, and dropped per reason.
STATISTICS_COLUMNS: tuple[str, ...] = ("input", "kept", *SYNTHESIS_REASONS)


class LanguageIdFilter:
    """Checks that a text is in the expected language with langid, restricted to ``languages``.

    Restricting langid to the languages involved is both what makes it reliable on short
    sentences and ~20× faster. Languages langid does not know (e.g. ``yo``, ``my``) cannot be
    checked: texts expected in them pass, and a warning says so once.
    """

    def __init__(self, languages: Iterable[str]) -> None:
        from langid.langid import LanguageIdentifier, model

        self._identifier = LanguageIdentifier.from_modelstring(model, norm_probs=False)
        known = set(self._identifier.nb_classes)
        wanted = sorted(set(languages))
        self.unsupported = sorted(lang for lang in wanted if lang not in known)
        if self.unsupported:
            logger.warning("langid does not know %s: translations into them are not language-checked",
                           ", ".join(self.unsupported))
        self.languages = [lang for lang in wanted if lang in known]
        if len(self.languages) >= 2:
            self._identifier.set_languages(self.languages)

    def identify(self, text: str) -> str:
        return self._identifier.classify(text)[0]

    def accepts(self, text: str, expected: str) -> bool:
        """Whether ``text`` is identified as ``expected`` (always true when that cannot be checked)."""
        if expected not in self.languages or len(self.languages) < 2:
            return True
        return self.identify(text) == expected


@functools.cache
def language_filter(*languages: str) -> LanguageIdFilter:
    """The :class:`LanguageIdFilter` for ``languages``, built once per process and shared (it holds no state).

    Building one decodes langid's whole model; synthesis asks for one per target language and
    translate-and-align for its pair, only when a shard needs it (a resumed run never does).
    """
    return LanguageIdFilter(languages)
