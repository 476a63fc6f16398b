"""Target sentences for projection: tokenization (words or characters) and matching normalization.

Projection labels the tokens of a *target* sentence. A sentence comes either as tokens (a
corpus such as PAN-X or CoNLL, tokenized already: kept as given) or as text, which is split

* into words, for languages written with spaces: on whitespace, with punctuation at the edges of
  a word split off as tokens of its own (``Göteborg,`` gives ``Göteborg`` ``,``; ``(Oslo)``
  gives ``(`` ``Oslo`` ``)``), as CoNLL and PAN-X tokenize, while punctuation inside a word stays
  (``Jean-Pierre``, ``3:57``, and abbreviations such as ``U.S.`` keep their final period);
  ``tokenization="whitespace"`` splits on whitespace only;
* into characters, for languages written without them (:data:`NO_SPACE_LANGUAGES`: Chinese,
  Japanese, Thai, Burmese, Khmer, Lao, Tibetan). A combining mark (and a half-width kana voicing
  mark) stays with its base character, so a Thai vowel sign is never a token of its own.

With ``tokenization="auto"`` the language code decides; without one, text mostly in those
scripts is split into characters.

:class:`Normalizer` turns a token into the form that is compared: Unicode NFKC (full-width
``Ｇ`` = ``G``, ligatures), optionally case-folded, and with punctuation stripped from its edges
(``Göteborg.`` = ``Göteborg``, ``«Volvo»`` = ``Volvo``) unless the token is nothing but
punctuation.

>>> sentence = tokenize_target("我住在哥德堡。", lang="zh")
>>> sentence.tokens, sentence.tokenization
(['我', '住', '在', '哥', '德', '堡', '。'], 'characters')
>>> Normalizer().token("«Göteborg».")
'Göteborg'
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from operator import add
from typing import Literal

__all__ = [
    "NO_SPACE_LANGUAGES",
    "Normalizer",
    "TargetSentence",
    "Tokenization",
    "is_punctuation",
    "strip_punctuation",
    "tokenize_target",
    "uses_characters",
]

Tokenization = Literal["auto", "words", "whitespace", "characters"]

#: Languages written without spaces between words (ISO 639-1, with their ISO 639-3 codes).
NO_SPACE_LANGUAGES: frozenset[str] = frozenset({
    "zh", "ja", "th", "my", "km", "lo", "bo",
    "zho", "cmn", "yue", "wuu", "jpn", "tha", "mya", "khm", "lao", "bod",
})

# Unicode blocks of the scripts above (Han, kana, Thai, Lao, Tibetan, Myanmar, Khmer).
_NO_SPACE_BLOCKS = (
    (0x0E00, 0x0FFF), (0x1000, 0x109F), (0x1780, 0x17FF), (0x19E0, 0x19FF), (0x3040, 0x30FF),
    (0x31F0, 0x31FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xA9E0, 0xA9FF), (0xAA60, 0xAA7F),
    (0xF900, 0xFAFF), (0xFF66, 0xFF9D), (0x20000, 0x2FA1F),
)


# Half-width katakana voicing marks: NFKC composes "ﾎﾞ" into "ボ" only if they stay together.
_HALF_WIDTH_MARKS = "\uff9e\uff9f"


def _base_language(lang: str) -> str:
    """``zh-Hans``, ``zh_CN``, ``zho_Hans`` (NLLB), ``__zh__`` (M2M100) → ``zh`` / ``zho``."""
    return lang.strip("_").replace("_", "-").split("-")[0].lower()


# One character class for all blocks: the scan runs in C, once per sentence of unknown language.
_NO_SPACE_CHARACTER = re.compile("[" + "".join(f"{chr(low)}-{chr(high)}" for low, high in _NO_SPACE_BLOCKS) + "]")


def uses_characters(text: str, lang: str | None = None) -> bool:
    """Whether ``text`` should be matched character by character.

    With a language code the answer is :data:`NO_SPACE_LANGUAGES` membership; without one, whether
    at least half of the letters are in a script written without spaces.

    >>> uses_characters("我住在哥德堡。"), uses_characters("Ich wohne in Göteborg (哥德堡)")
    (True, False)
    """
    if lang:
        return _base_language(lang) in NO_SPACE_LANGUAGES
    letters = sum(map(str.isalpha, text))
    in_blocks = sum(map(str.isalpha, _NO_SPACE_CHARACTER.findall(text)))
    return letters > 0 and 2 * in_blocks >= letters


def is_punctuation(token: str) -> bool:
    """Whether every character of ``token`` is Unicode punctuation (categories P*).

    >>> is_punctuation("«,»"), is_punctuation("U.S.")
    (True, False)
    """
    if not token or token[0].isalnum():
        return False
    return all(unicodedata.category(ch)[0] == "P" for ch in token)


@dataclass(frozen=True)
class TargetSentence:
    """A tokenized target sentence.

    ``offsets`` are the character spans of the tokens in ``text`` when the sentence came as
    text, else ``None``. ``tokenization`` is ``"given"``, ``"words"``, ``"whitespace"`` or
    ``"characters"``.
    """

    tokens: list[str]
    tokenization: str
    text: str | None = None
    offsets: list[tuple[int, int]] | None = None

    def span_text(self, start: int, end: int) -> str:
        """The text of tokens ``[start, end)``: a slice of ``text`` when known, else the joined tokens."""
        if self.offsets is not None and self.text is not None:
            return self.text[self.offsets[start][0]: self.offsets[end - 1][1]]
        joiner = "" if self.tokenization == "characters" else " "
        return joiner.join(self.tokens[start:end])

    def char_span(self, start: int, end: int) -> tuple[int | None, int | None]:
        if self.offsets is None:
            return None, None
        return self.offsets[start][0], self.offsets[end - 1][1]


def _whitespace_tokens(text: str) -> tuple[list[str], list[tuple[int, int]]]:
    tokens = text.split()
    lengths = [len(token) for token in tokens]
    if " ".join(tokens) == text:  # the common case: single spaces, computed without a Python loop
        starts = list(accumulate((length + 1 for length in lengths), initial=0))[:-1]
        return tokens, list(zip(starts, map(add, starts, lengths), strict=True))
    offsets, position = [], 0
    for token in tokens:
        start = text.index(token, position)
        position = start + len(token)
        offsets.append((start, position))
    return tokens, offsets


#: A word of letters and periods that ends in one (``U.S.``, ``e.g.``): its final period is part of it.
_ABBREVIATION = re.compile(r"(?:\w\.){2,}")


def _word_tokens(text: str) -> tuple[list[str], list[tuple[int, int]]]:
    """Whitespace tokens with punctuation at their edges split off, one token per punctuation character."""
    words, spans = _whitespace_tokens(text)
    tokens: list[str] = []
    offsets: list[tuple[int, int]] = []
    for word, (start, end) in zip(words, spans, strict=True):
        if word.isalnum() or (is_punctuation(word) and len(word) == 1):
            tokens.append(word)
            offsets.append((start, end))
            continue
        lead, trail = start, end
        while lead < trail and unicodedata.category(text[lead])[0] == "P":
            lead += 1
        while trail > lead and unicodedata.category(text[trail - 1])[0] == "P" and not (
                text[trail - 1] == "." and _ABBREVIATION.fullmatch(text[lead:trail])):
            trail -= 1
        for i in range(start, lead):
            tokens.append(text[i])
            offsets.append((i, i + 1))
        if lead < trail:
            tokens.append(text[lead:trail])
            offsets.append((lead, trail))
        for i in range(trail, end):
            tokens.append(text[i])
            offsets.append((i, i + 1))
    return tokens, offsets


def character_tokens(text: str) -> tuple[list[str], list[tuple[int, int]]]:
    """``(tokens, character offsets)`` of ``text`` split into characters (combining marks stay on theirs), no spaces.

    >>> character_tokens("東京 へ")
    (['東', '京', 'へ'], [(0, 1), (1, 2), (3, 4)])
    """
    tokens: list[str] = []
    offsets: list[tuple[int, int]] = []
    for i, ch in enumerate(text):
        if ch.isspace():
            continue
        if tokens and offsets[-1][1] == i and (unicodedata.category(ch)[0] == "M" or ch in _HALF_WIDTH_MARKS):
            tokens[-1] += ch  # a combining mark belongs to the character before it
            offsets[-1] = (offsets[-1][0], i + 1)
        else:
            tokens.append(ch)
            offsets.append((i, i + 1))
    return tokens, offsets


def tokenize_target(
    target: str | Sequence[str],
    lang: str | None = None,
    tokenization: Tokenization = "auto",
) -> TargetSentence:
    """Tokenize a target sentence given as text, or keep the tokens of one given as a token list.

    ``"auto"`` splits text into characters for languages written without spaces and into words
    (punctuation split from word edges) otherwise; ``"whitespace"`` only splits on whitespace.

    >>> tokenize_target("Ich fahre nach Göteborg, dann (kurz) nach Oslo.").tokens
    ['Ich', 'fahre', 'nach', 'Göteborg', ',', 'dann', '(', 'kurz', ')', 'nach', 'Oslo', '.']
    >>> tokenize_target("Die U.S. Army", tokenization="whitespace").tokens, tokenize_target("Die U.S. Army").tokens
    (['Die', 'U.S.', 'Army'], ['Die', 'U.S.', 'Army'])
    """
    if tokenization not in {"auto", "words", "whitespace", "characters"}:
        raise ValueError(f"tokenization must be 'auto', 'words', 'whitespace' or 'characters', got {tokenization!r}")
    if not isinstance(target, str):
        tokens = list(target)
        if not all(isinstance(token, str) for token in tokens):
            raise TypeError("a target sentence is a string or a list of string tokens")
        return TargetSentence(tokens, "given")
    if tokenization == "auto":
        tokenization = "characters" if uses_characters(target, lang) else "words"
    split = {"characters": character_tokens, "words": _word_tokens, "whitespace": _whitespace_tokens}[tokenization]
    tokens, offsets = split(target)
    return TargetSentence(tokens, tokenization, target, offsets)


@dataclass(frozen=True)
class Normalizer:
    """How tokens are compared: NFKC, case folding, punctuation stripped at the edges.

    The defaults follow CroP's exact string matching, made robust to Unicode variants and to
    punctuation that tokenization left glued to a word.
    """

    nfkc: bool = True
    ignore_case: bool = False
    strip_punctuation: bool = True

    def token(self, token: str) -> str:
        return self.tokens([token])[0]

    def tokens(self, tokens: Sequence[str]) -> list[str]:
        """Normalize many tokens (one comprehension per step: this runs on every target token)."""
        out = list(tokens)
        if self.nfkc and not "".join(out).isascii():  # ASCII is NFKC already
            normalize = unicodedata.normalize
            out = [normalize("NFKC", token) for token in out]
        if self.ignore_case:
            out = [token.casefold() for token in out]
        if self.strip_punctuation:
            out = [token if token.isalnum() or (token[:1].isalnum() and token[-1:].isalnum())
                   else strip_punctuation(token) for token in out]
        return out


def strip_punctuation(token: str, *, leading: bool = True, trailing: bool = True) -> str:
    """Remove punctuation from the edges of ``token``; a token of nothing but punctuation is kept whole.

    >>> strip_punctuation("«Göteborg».")
    'Göteborg'
    >>> strip_punctuation("...")
    '...'
    """
    start, end = 0, len(token)
    while leading and start < end and unicodedata.category(token[start])[0] == "P":
        start += 1
    while trailing and end > start and unicodedata.category(token[end - 1])[0] == "P":
        end -= 1
    return token[start:end] if start < end else token
