"""Word lists: closed-class (function) words per language, from a ``lang<TAB>word`` file.

crop-hf ships one for English and German (``crop_hf/resources/function_words.tsv``: articles,
prepositions, conjunctions, pronouns, auxiliaries and a few adverbs; no nouns, verbs or
numerals), read by :func:`builtin_function_words`; :func:`read_function_words` reads any file of
that format.

>>> sorted(builtin_function_words("de") & {"der", "Haus", "und"})
['der', 'und']
"""

from __future__ import annotations

import functools
import gzip
from pathlib import Path

__all__ = ["FUNCTION_WORDS_FILE", "builtin_function_words", "read_function_words"]

#: crop-hf's own list of function words (English and German).
FUNCTION_WORDS_FILE = Path(__file__).resolve().parents[2] / "resources" / "function_words.tsv"


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
def builtin_function_words(lang: str) -> frozenset[str]:
    """crop-hf's function words of ``lang`` (lower-cased); ``ValueError`` naming the languages it has otherwise."""
    lists = read_function_words(FUNCTION_WORDS_FILE)
    if lang not in lists:
        raise ValueError(f"crop-hf has no function-word list for {lang!r} (it has {', '.join(sorted(lists))}); "
                         f"pass the words themselves instead")
    return lists[lang]
