"""Marker-annotated parallel data: the training data of a labeled sequence translation model.

CroP (section 3.3) fine-tunes its translation model on parallel sentences in which aligned phrase
pairs are wrapped in the *same* markers on both sides, so that the model learns to carry markers
across. This module holds the phrase extraction and the marking; the corpus job that reads the
pairs, aligns them and writes the data is :mod:`crop_hf.translation.mark_parallel`:

1. (the job) read sentence pairs, dropping and counting empty pairs and pairs that already hold
   a marker;
2. (the job) word-align each language pair with :class:`crop_hf.alignment.EflomalAligner`, a
   shard of pairs at a time, and symmetrize with grow-diag-final-and;
3. extract the consistent phrase pairs (Koehn et al., 2003: no alignment link leaves the box of
   a phrase pair) of at most ``max_phrase_length`` words per side;
4. with probability ``slot_prob`` choose up to ``max_slots`` non-overlapping phrase pairs, with at
   least ``min_gap`` words between chosen phrases on both sides, and wrap both sides of each in
   the same marker; slot numbers are drawn at random, so that a model learns to copy numbers,
   not positions.

Words are ``\\w+`` runs and single punctuation characters (:func:`words`); markers are inserted at
their character offsets, so the text between markers keeps its original spacing.

>>> consistent_phrase_pairs([(0, 0), (1, 2), (2, 1)], 3, 3, max_length=2)  # words 1 and 2 swap places
[(0, 1, 0, 1), (1, 2, 2, 3), (1, 3, 1, 3), (2, 3, 1, 2)]
>>> mark_pair("a red cat", "eine rote Katze", [(2, 5, 5, 9), (6, 9, 10, 15)], slots=[1, 0]).target
'eine __SLOT1__ rote __SLOT1__ __SLOT0__ Katze __SLOT0__'
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from crop_hf.data.readers.words import read_function_words
from crop_hf.markers import MarkerStyle, get_marker_style

__all__ = [
    "MarkedPair",
    "MarkingConfig",
    "ParallelPair",
    "candidate_phrase_pairs",
    "consistent_phrase_pairs",
    "mark_aligned",
    "mark_pair",
    "read_function_words",
    "remark",
    "select_phrase_pairs",
    "without_function_word_edges",
    "words",
]

#: Letters and digits joined by single hyphens, apostrophes, periods, ampersands or slashes are one
#: word ("T-Shirt", "E-Mails", "girl's", "3.5"); any other non-space character is a word of its own.
#: A slot boundary falls between words only, so no marker ever lands inside "T-Shirt".
_WORD = re.compile(r"\w+(?:[-\u2010\u2011'\u2019.&/]\w+)*|[^\w\s]")

#: A phrase pair as character spans: ``(source_start, source_end, target_start, target_end)``.
PhrasePair = tuple[int, int, int, int]


def words(text: str) -> list[tuple[int, int]]:
    """Character spans of the words of ``text``: ``\\w+`` runs, joined into one word by a single hyphen,
    apostrophe, period, ampersand or slash between them, and single other non-space characters.

    Words are what gets aligned, what phrase lengths count and where slot boundaries may fall, so a
    compound such as ``T-Shirt`` is marked whole or not at all.

    >>> text = "Zwei Männer im T-Shirt, im Freien."
    >>> [text[s:e] for s, e in words(text)]
    ['Zwei', 'Männer', 'im', 'T-Shirt', ',', 'im', 'Freien', '.']
    """
    return [match.span() for match in _WORD.finditer(text)]


@dataclass(frozen=True)
class ParallelPair:
    """One sentence pair and where it came from."""

    source: str
    target: str
    src_lang: str
    tgt_lang: str
    origin: str = ""
    line: int = 0


@dataclass(frozen=True)
class MarkedPair:
    """Both sides of a pair with markers, and the marked phrase pairs (``slot``, ``source``, ``target``)."""

    source: str
    target: str
    slots: tuple[dict[str, Any], ...]


@dataclass
class MarkingConfig:
    """How phrase pairs are chosen and marked: the marking options of ``crop-hf mark-parallel``
    (:class:`~crop_hf.translation.mark_parallel.MarkParallelConfig` adds the run's) and of the
    per-epoch re-marking in translation training. Each changes the marked rows."""

    slot_prob: float = field(
        default=0.85, metadata={"help": "Probability that a sentence pair gets markers (CroP: 0.85)."})
    max_slots: int = field(
        default=14, metadata={"help": "Most marked phrase pairs per sentence pair (CroP: 14)."})
    max_phrase_length: int = field(
        default=4, metadata={"help": "Most words per side of a phrase pair."})
    min_gap: int = field(
        default=1, metadata={"help": "Fewest words between two chosen phrases, on both sides (0 allows adjacent slots)."})
    random_slot_numbers: bool = field(
        default=True, metadata={"help": "Number slots at random (else left to right in the source)."})
    marker_style: Literal["crop", "easyproject"] = field(
        default="crop", metadata={"help": "crop: __SLOT{i}__ on both sides; easyproject: [ ... ]."})
    function_words_file: str | None = field(default=None, metadata={
        "help": "A file of closed-class words (articles, prepositions, pronouns...), one 'lang<TAB>word' per line: no "
                "slot begins or ends with one of its side's words, so that slots look like entity mentions (default: "
                "any phrase pair)."})
    both_directions: bool = field(
        default=False, metadata={"help": "Also emit every pair target-to-source."})
    max_words: int = field(
        default=200, metadata={"help": "Drop pairs with a side longer than this (words)."})
    seed: int = field(
        default=0, metadata={"help": "Seed of phrase and slot-number choices (same seed, same data)."})

    def __post_init__(self) -> None:
        if not 0.0 <= self.slot_prob <= 1.0:
            raise ValueError(f"slot_prob must be within [0, 1], got {self.slot_prob}")
        for name in ("max_slots", "max_phrase_length", "max_words"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.min_gap < 0:
            raise ValueError(f"min_gap must be 0 or more, got {self.min_gap}")
        get_marker_style(self.marker_style)
        if self.function_words_file is not None:
            read_function_words(self.function_words_file)  # a bad file fails here, before any alignment


# --- phrase pairs --------------------------------------------------------------------------------


def consistent_phrase_pairs(
    alignment: Iterable[tuple[int, int]], n_source: int, n_target: int, max_length: int
) -> list[tuple[int, int, int, int]]:
    """Phrase pairs ``(i1, i2, j1, j2)`` (word indices, ends exclusive) consistent with ``alignment``.

    Koehn et al. (2003): a pair is consistent when at least one link lies inside its box and no
    link connects a word inside the box with a word outside it. Only the tight pairs are
    returned (unaligned boundary words are not added), at most ``max_length`` words a side.

    >>> consistent_phrase_pairs([(0, 1), (1, 0)], 2, 2, 2)
    [(0, 1, 1, 2), (0, 2, 0, 2), (1, 2, 0, 1)]
    """
    links = sorted(set(alignment))
    by_source: dict[int, list[int]] = {}
    by_target: dict[int, list[int]] = {}
    for i, j in links:
        if not (0 <= i < n_source and 0 <= j < n_target):
            raise ValueError(f"link {i}-{j} is outside a {n_source}x{n_target} sentence pair")
        by_source.setdefault(i, []).append(j)
        by_target.setdefault(j, []).append(i)
    found = []
    for i1 in range(n_source):
        for i2 in range(i1 + 1, min(n_source, i1 + max_length) + 1):
            targets = [j for i in range(i1, i2) for j in by_source.get(i, ())]
            if not targets:
                continue
            j1, j2 = min(targets), max(targets) + 1
            if j2 - j1 > max_length:
                continue
            if all(i1 <= i < i2 for j in range(j1, j2) for i in by_target.get(j, ())):
                found.append((i1, i2, j1, j2))
    return found


def without_function_word_edges(
    source: str, target: str, candidates: Sequence[PhrasePair], source_words: frozenset[str],
    target_words: frozenset[str],
) -> list[PhrasePair]:
    """The candidates whose first and last word, on both sides, are not function words (case-insensitive).

    >>> without_function_word_edges("a red cat", "eine rote Katze", [(0, 5, 0, 9), (2, 9, 5, 15)],
    ...                             frozenset({"a"}), frozenset({"eine"}))
    [(2, 9, 5, 15)]
    """
    def edges_ok(text: str, start: int, end: int, banned: frozenset[str]) -> bool:
        spans = words(text[start:end])
        return not spans or not ({text[start + s:start + e].lower() for s, e in (spans[0], spans[-1])} & banned)

    return [c for c in candidates
            if edges_ok(source, c[0], c[1], source_words) and edges_ok(target, c[2], c[3], target_words)]


def _word_edges(text: str) -> bool:
    """Whether ``text`` starts and ends with a letter or digit."""
    return bool(text) and text[0].isalnum() and text[-1].isalnum()


def candidate_phrase_pairs(
    pair: ParallelPair, spans: tuple[list[tuple[int, int]], list[tuple[int, int]]], links: Iterable[tuple[int, int]],
    max_length: int, banned: tuple[frozenset[str], frozenset[str]] | None = None,
) -> list[PhrasePair]:
    """The phrase pairs of an aligned sentence pair that may be marked, as character spans.

    ``spans`` are both sides' :func:`words`, ``links`` the word alignment. The consistent phrase
    pairs (:func:`consistent_phrase_pairs`) whose sides start and end with a letter or digit ("bushes
    ." is not a phrase to label) and, given ``banned`` (each side's function words), neither begin
    nor end with a function word.

    >>> pair = ParallelPair("a red cat .", "eine rote Katze .", "en", "de")
    >>> candidate_phrase_pairs(pair, (words(pair.source), words(pair.target)), [(1, 1), (2, 2), (3, 3)], 1)
    [(2, 5, 5, 9), (6, 9, 10, 15)]
    """
    source_spans, target_spans = spans
    candidates = [(source_spans[i1][0], source_spans[i2 - 1][1], target_spans[j1][0], target_spans[j2 - 1][1])
                  for i1, i2, j1, j2 in consistent_phrase_pairs(links, len(source_spans), len(target_spans), max_length)]
    candidates = [c for c in candidates if _word_edges(pair.source[c[0]:c[1]]) and _word_edges(pair.target[c[2]:c[3]])]
    return without_function_word_edges(pair.source, pair.target, candidates, *banned) if banned else candidates


def select_phrase_pairs(
    source: str, target: str, candidates: Sequence[PhrasePair], *, max_slots: int, min_gap: int, rng: random.Random
) -> list[PhrasePair]:
    """Choose up to ``max_slots`` non-overlapping phrase pairs at random, ``min_gap`` words apart on both sides.

    The number wanted is drawn uniformly from 1..``max_slots``; candidates are visited in random
    order and kept when they fit. Returned in source order.
    """
    if not candidates:
        return []
    wanted = rng.randint(1, max_slots)
    order = list(candidates)
    rng.shuffle(order)
    chosen: list[PhrasePair] = []
    for pair in order:
        if len(chosen) >= wanted:
            break
        if all(_apart(source, (pair[0], pair[1]), (c[0], c[1]), min_gap)
               and _apart(target, (pair[2], pair[3]), (c[2], c[3]), min_gap) for c in chosen):
            chosen.append(pair)
    return sorted(chosen)


def _apart(text: str, a: tuple[int, int], b: tuple[int, int], min_gap: int) -> bool:
    """Spans ``a`` and ``b`` do not overlap and at least ``min_gap`` words lie between them."""
    first, second = (a, b) if a[0] <= b[0] else (b, a)
    if second[0] < first[1]:
        return False
    return len(words(text[first[1] : second[0]])) >= min_gap


def _insert(text: str, spans: Sequence[tuple[int, int, str, str]]) -> str:
    pieces, cursor = [], 0
    for start, end, opening, closing in sorted(spans):
        pieces += [text[cursor:start], f" {opening} ", text[start:end], f" {closing} "]
        cursor = end
    pieces.append(text[cursor:])
    return " ".join("".join(pieces).split())


def mark_pair(
    source: str,
    target: str,
    chosen: Sequence[PhrasePair],
    slots: Sequence[int] | None = None,
    style: str | MarkerStyle | None = None,
) -> MarkedPair:
    """Wrap each chosen phrase pair in the markers of its slot on both sides.

    ``slots[k]`` is the slot number of ``chosen[k]`` (default: 0, 1, ... in the given order). Untyped
    styles (``easyproject``) cannot show numbers: their slots are numbered in source order.
    """
    style = get_marker_style(style)
    if not style.typed:
        chosen, slots = sorted(chosen), None
    slots = list(range(len(chosen))) if slots is None else list(slots)
    if len(slots) != len(chosen):
        raise ValueError(f"{len(slots)} slot numbers for {len(chosen)} phrase pairs")
    src_spans, tgt_spans, info = [], [], []
    for (s0, s1, t0, t1), slot in zip(chosen, slots, strict=True):
        opening, closing = style.markers(slot)
        src_spans.append((s0, s1, opening, closing))
        tgt_spans.append((t0, t1, opening, closing))
        info.append({"slot": int(slot), "source": " ".join(source[s0:s1].split()),
                     "target": " ".join(target[t0:t1].split())})
    info.sort(key=lambda item: item["slot"])
    return MarkedPair(_insert(source, src_spans), _insert(target, tgt_spans), tuple(info))


def remark(
    source: str,
    target: str,
    candidates: Sequence[PhrasePair],
    config: MarkingConfig,
    rng: random.Random,
) -> MarkedPair:
    """Draw markers for one pair from its candidate phrase pairs (used by marking and per-epoch re-sampling)."""
    if not candidates or rng.random() >= config.slot_prob:
        return mark_pair(source, target, [], style=config.marker_style)
    chosen = select_phrase_pairs(source, target, candidates, max_slots=config.max_slots, min_gap=config.min_gap, rng=rng)
    if config.random_slot_numbers:
        slots = rng.sample(range(config.max_slots), len(chosen))
    else:
        slots = list(range(len(chosen)))
    return mark_pair(source, target, chosen, slots, config.marker_style)


def mark_aligned(
    pair: ParallelPair, spans: tuple[list[tuple[int, int]], list[tuple[int, int]]], links: Iterable[tuple[int, int]],
    config: MarkingConfig, rng: random.Random, banned: tuple[frozenset[str], frozenset[str]] | None = None,
) -> list[tuple[ParallelPair, list[PhrasePair], MarkedPair]]:
    """An aligned pair's ``(pair, candidate phrase pairs, marked pair)``, and its reverse with ``both_directions``.

    ``spans`` and ``links`` are those of :func:`candidate_phrase_pairs`; the markers of both
    directions are drawn from ``rng``, the forward pair's first.

    >>> pair = ParallelPair("a cat", "eine Katze", "en", "de")
    >>> config = MarkingConfig(slot_prob=1.0, max_slots=1, both_directions=True)
    >>> [marked.target for _, _, marked in mark_aligned(pair, (words(pair.source), words(pair.target)),
    ...                                                  [(0, 0), (1, 1)], config, random.Random(0))]
    ['eine __SLOT0__ Katze __SLOT0__', '__SLOT0__ a __SLOT0__ cat']
    """
    candidates = candidate_phrase_pairs(pair, spans, links, config.max_phrase_length, banned)
    marked = [(pair, candidates, remark(pair.source, pair.target, candidates, config, rng))]
    if config.both_directions:
        reverse = ParallelPair(pair.target, pair.source, pair.tgt_lang, pair.src_lang, pair.origin, pair.line)
        flipped = [(c[2], c[3], c[0], c[1]) for c in candidates]
        marked.append((reverse, flipped, remark(reverse.source, reverse.target, flipped, config, rng)))
    return marked
