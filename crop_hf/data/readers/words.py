"""Word lists per language, from ``lang<TAB>word`` files.

crop-hf ships two:

* closed-class (function) words of English and German (``crop_hf/resources/function_words.tsv``:
  articles, prepositions, conjunctions, pronouns, auxiliaries and a few adverbs; no nouns, verbs or
  numerals), read by :func:`builtin_function_words`;
* adpositions (``crop_hf/resources/adpositions.tsv``): English prepositions and the Hindi
  postpositions as romanized (Hinglish) text writes them, read by :func:`builtin_adpositions`
  for the alignment projection's postposition rule.

:func:`read_function_words` reads any file of that format.

>>> sorted(builtin_function_words("de") & {"der", "Haus", "und"})
['der', 'und']
>>> sorted(builtin_adpositions("hi") & {"ke", "liye", "mujhe"})
['ke', 'liye']
"""

from __future__ import annotations

import functools
import gzip
from collections.abc import Collection
from pathlib import Path

__all__ = ["ADPOSITIONS_FILE", "FUNCTION_WORDS_FILE", "adposition_set", "builtin_adpositions", "builtin_function_words",
           "read_function_words"]

#: crop-hf's own list of function words (English and German).
FUNCTION_WORDS_FILE = Path(__file__).resolve().parents[2] / "resources" / "function_words.tsv"
#: crop-hf's own list of adpositions (English prepositions, romanized Hindi postpositions).
ADPOSITIONS_FILE = Path(__file__).resolve().parents[2] / "resources" / "adpositions.tsv"


def read_function_words(path: str | Path) -> dict[str, frozenset[str]]:
    """The closed-class words of each language in a ``lang<TAB>word`` file (lower-cased; ``#`` starts a comment).

    Raises ``ValueError`` naming the file and line of a line that is not two tab-separated fields.
    """
    path = Path(path)
    found: dict[str, set[str]] = {}
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            fields = line.split("\t")
            if len(fields) != 2 or not all(f.strip() for f in fields):
                raise ValueError(f"{path}:{number}: expected 'lang<TAB>word', got {line!r}")
            found.setdefault(fields[0].strip(), set()).add(fields[1].strip().lower())
    return {lang: frozenset(items) for lang, items in found.items()}


@functools.cache
def _builtin(path: Path, lang: str, what: str) -> frozenset[str]:
    lists = read_function_words(path)
    if lang not in lists:
        raise ValueError(f"crop-hf has no {what} list for {lang!r} (it has {', '.join(sorted(lists))}); "
                         f"pass the words themselves instead")
    return lists[lang]


def builtin_function_words(lang: str) -> frozenset[str]:
    """crop-hf's function words of ``lang`` (lower-cased); ``ValueError`` naming the languages it has otherwise."""
    return _builtin(FUNCTION_WORDS_FILE, lang, "function-word")


def builtin_adpositions(lang: str) -> frozenset[str]:
    """crop-hf's adpositions of ``lang`` (``"en"`` prepositions, ``"hi"`` romanized postpositions; lower-cased).

    ``ValueError`` naming the languages it has otherwise.
    """
    return _builtin(ADPOSITIONS_FILE, lang, "adposition")


def adposition_set(words: str | Collection[str] | None) -> frozenset[str]:
    """``words`` lower-cased, or crop-hf's adpositions of that language code (empty for ``None``).

    >>> sorted(adposition_set(["Ko", "ka"])), len(adposition_set(None))
    (['ka', 'ko'], 0)
    """
    if words is None:
        return frozenset()
    return builtin_adpositions(words) if isinstance(words, str) else frozenset(word.lower() for word in words)
