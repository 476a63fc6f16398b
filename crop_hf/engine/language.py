"""The language check every long job may apply to a translation: langid, restricted to the run's languages."""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable

logger = logging.getLogger(__name__)

__all__ = ["LanguageIdFilter", "language_filter"]


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
