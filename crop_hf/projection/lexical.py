"""Lexical projection (CroP): find each translated entity in the raw target sentence by string matching.

CroP back-translates a labeled source sentence into the target language with every entity
wrapped in markers, so it knows the target-language text and the type of each entity. It then
looks for that text in the *raw* target sentence, word by word, and labels what it finds; a
sentence in which some entity cannot be found is dropped.

The rules here:

* **Comparison.** Tokens are compared after :class:`~crop_hf.projection.target.Normalizer`
  (NFKC, optional case folding, punctuation stripped at token edges). An entity matches a run of
  whole target tokens whose normalized forms, concatenated, equal the entity's normalized words
  concatenated: every word-by-word match is found, and so are matches that differ only in how
  tokens were split around inner punctuation (``Jean-Pierre`` = ``Jean - Pierre``). In
  languages written without spaces the tokens are characters, so ``哥德堡`` is found inside
  ``我住在哥德堡。``.
* **Punctuation.** An entity is looked for as written, then without punctuation-only words at
  its edges (``Paul VI .`` matches ``Paul VI .``, else ``Paul VI``).
* **Order.** Longer entities are placed first (by normalized length), so ``New York City``
  claims its words before ``New York``; among equally long ones the earlier in the translation
  goes first. Entities never overlap: an occurrence that touches a claimed token is skipped.
* **Repeats.** The k-th occurrence of an entity in the translation takes the leftmost free
  occurrence in the target, so ``Washington``/PER and ``Washington``/LOC (in that order) label
  the first and second ``Washington``. With ``repeated="all"`` (the default), occurrences left
  over after every entity is placed get the label too (match ``"repeat"``): a name that is a
  location once in a sentence is one everywhere in it, and leaving a copy unlabeled would teach
  a model a false negative. ``repeated="once"`` labels exactly one occurrence per entity.
* **Not found.** The entity's status is ``"missing"``, the sentence is incomplete and, with
  ``drop_incomplete=True`` (CroP's rule), not kept. A labeled translation that was itself
  incomplete (markers lost) gives an incomplete sentence too.

Entities may be given as the output of the ``labeled-translation`` pipeline (a dict with
``translation``, ``entities`` = ``[{"text", "label", "start", "end"}, ...]`` and ``complete``),
as that ``entities`` list, or as ``(text, label)`` pairs.

>>> result = project_lexical("我住在哥德堡。", [("哥德堡", "LOC")], lang="zh")
>>> result.tags, result.tokenization
(['O', 'O', 'O', 'B-LOC', 'I-LOC', 'I-LOC', 'O'], 'characters')
>>> project_lexical("Ich wohne in Göteborg.", [("Göteborg", "LOC")]).tags
['O', 'O', 'O', 'B-LOC', 'O']
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, Literal, NamedTuple

from crop_hf.projection.result import EntityStatus, ProjectedEntity, ProjectionResult
from crop_hf.projection.target import (
    Normalizer,
    TargetSentence,
    Tokenization,
    character_tokens,
    is_punctuation,
    tokenize_target,
)

__all__ = ["LexicalMatcher", "TranslatedEntity", "project_lexical", "read_entities"]

Repeated = Literal["all", "once"]


class TranslatedEntity(NamedTuple):
    """An entity of the labeled translation: its text, type and character offset in the translation."""

    text: str
    label: str
    start: int | None = None


def read_entities(entities: Any) -> tuple[list[TranslatedEntity], bool]:
    """Entities in translation order, and whether the labeled translation was complete.

    Accepts a ``labeled-translation`` output dict, its ``entities`` list (dicts with ``text`` and
    ``label``), or ``(text, label)`` pairs.
    """
    complete = True
    if isinstance(entities, Mapping):
        if "entities" not in entities:
            raise ValueError("a labeled translation needs an 'entities' list (the labeled-translation pipeline output)")
        complete = bool(entities.get("complete", True))
        entities = entities["entities"]
    if entities is None:
        return [], complete
    read = []
    for k, entity in enumerate(entities):
        if type(entity) is tuple and len(entity) == 2:  # the common case first: cheap type checks
            read.append(TranslatedEntity(str(entity[0]), str(entity[1])))
        elif isinstance(entity, Mapping):
            try:
                read.append(TranslatedEntity(str(entity["text"]), str(entity["label"]), entity.get("start")))
            except KeyError as err:
                raise ValueError(f"entity {k} has no {err.args[0]!r}: expected {{'text': ..., 'label': ...}}") from None
        elif isinstance(entity, Sequence) and not isinstance(entity, str) and len(entity) == 2:
            read.append(TranslatedEntity(str(entity[0]), str(entity[1])))
        else:
            raise ValueError(f"entity {k} is {entity!r}: expected a dict with 'text' and 'label' or a (text, label) pair")
    if read and all(e.start is not None for e in read):
        read.sort(key=lambda e: e.start)
    return read, complete


class LexicalMatcher:
    """Finds normalized strings in one target sentence on token boundaries and claims the tokens.

    Each target token contributes its normalized form to one string; a match must start where a
    token starts and end where a token ends, and may not touch a claimed token. Matching is
    ``str.find`` over that string: a sentence holds a handful of entities, so a multi-pattern
    automaton (Aho-Corasick) would cost more to build than it saves.
    """

    def __init__(self, sentence: TargetSentence, normalizer: Normalizer | None = None) -> None:
        normalizer = normalizer or Normalizer()
        self.sentence = sentence
        self.normalizer = normalizer
        # An empty unit would put two token boundaries at one offset; NUL never occurs in an entity.
        units = [unit or "\x00" for unit in normalizer.tokens(sentence.tokens)]
        self.units = units
        self.haystack = "".join(units)
        # bounds[i] is where token i starts in the haystack (and bounds[-1] its end).
        self.bounds = [0, *accumulate(map(len, units))]
        self.claimed = bytearray(len(units))

    def keys(self, text: str) -> tuple[str, ...]:
        """The normalized forms of an entity to look for, in order ("" if nothing is left).

        First the entity as written; then, with ``strip_punctuation``, without punctuation-only
        words at its edges ("« Volvo »", "哥德堡。", "Paul VI ."), which a translation may add or
        drop: a sentence that has the full form gets the full span, one without it still matches.
        """
        pieces = character_tokens(text)[0] if self.sentence.tokenization == "characters" else text.split()
        full = "".join(self.normalizer.tokens(pieces))
        if not self.normalizer.strip_punctuation:
            return (full,)
        start, end = 0, len(pieces)
        while start < end and is_punctuation(pieces[start]):
            start += 1
        while end > start and is_punctuation(pieces[end - 1]):
            end -= 1
        if (start, end) == (0, len(pieces)):
            return (full,)
        stripped = "".join(self.normalizer.tokens(pieces[start:end]))
        return (full, stripped) if stripped else ("",)

    def find(self, key: str, *, claim: bool = True) -> tuple[int, int] | None:
        """The leftmost free occurrence of ``key`` as a token range ``(start, end)``; claims it by default."""
        if not key:
            return None
        find, bounds, claimed = self.haystack.find, self.bounds, self.claimed
        position = find(key)
        while position >= 0:
            start = bisect_left(bounds, position)
            if bounds[start] == position:
                end = bisect_left(bounds, position + len(key), start)
                if bounds[end] == position + len(key) and not any(claimed[start:end]):
                    if claim:
                        self.claim(start, end)
                    return start, end
            position = find(key, position + 1)
        return None

    def claim(self, start: int, end: int) -> None:
        self.claimed[start:end] = b"\x01" * (end - start)

    def entity(self, start: int, end: int, label: str, source: int, match: str,
               score: float | None = None) -> ProjectedEntity:
        return ProjectedEntity.over(self.sentence, start, end, label, source, match, score,
                                    trim_punctuation=self.normalizer.strip_punctuation)


@dataclass
class PassState:
    """State shared by the exact, fuzzy and repeat passes over one sentence (lexical and fuzzy projection)."""

    matcher: LexicalMatcher
    entities: list[TranslatedEntity]
    keys: list[tuple[str, ...]]
    found_keys: list[str]
    order: list[int]
    statuses: list[str]
    projected: list[ProjectedEntity]
    complete_translation: bool


def exact_pass(
    target: str | Sequence[str] | TargetSentence,
    entities: Any,
    lang: str | None,
    tokenization: Tokenization,
    normalizer: Normalizer | None,
    repeated: Repeated,
) -> PassState:
    """The first pass of lexical and fuzzy projection: each entity, longest first, matched exactly once."""
    if repeated not in {"all", "once"}:
        raise ValueError(f"repeated must be 'all' or 'once', got {repeated!r}")
    normalizer = normalizer or Normalizer()
    sentence = target if isinstance(target, TargetSentence) else tokenize_target(target, lang, tokenization)
    items, complete_translation = read_entities(entities)
    matcher = LexicalMatcher(sentence, normalizer)
    keys = [matcher.keys(e.text) for e in items]
    order = sorted(range(len(items)), key=lambda k: -len(keys[k][0]))  # stable: translation order breaks ties
    statuses = ["empty" if not key[-1] else "missing" for key in keys]
    found_keys = [""] * len(items)
    projected = []
    for k in order:
        for key in keys[k]:
            span = matcher.find(key)
            if span is not None:
                statuses[k], found_keys[k] = "found", key
                projected.append(matcher.entity(*span, items[k].label, k, "exact"))
                break
    return PassState(matcher, items, keys, found_keys, order, statuses, projected, complete_translation)


def repeat_pass(state: PassState) -> None:
    """Label every further occurrence of each entity found (``repeated="all"``)."""
    for k in state.order:
        if state.statuses[k] != "found":
            continue
        while (span := state.matcher.find(state.found_keys[k])) is not None:
            state.projected.append(state.matcher.entity(*span, state.entities[k].label, k, "repeat"))


def finish_passes(state: PassState, method: str, drop_incomplete: bool) -> ProjectionResult:
    """The :class:`ProjectionResult` of the passes run on ``state``, under ``method``'s name."""
    statuses = [EntityStatus(e.text, e.label, s) for e, s in zip(state.entities, state.statuses, strict=True)]
    reason = None if state.complete_translation else "translation_incomplete"
    return ProjectionResult.build(state.matcher.sentence, state.projected, statuses, method,
                                  drop_incomplete=drop_incomplete, reason=reason)


def project_lexical(
    target: str | Sequence[str] | TargetSentence,
    entities: Any,
    *,
    lang: str | None = None,
    tokenization: Tokenization = "auto",
    normalizer: Normalizer | None = None,
    repeated: Repeated = "all",
    drop_incomplete: bool = True,
) -> ProjectionResult:
    """Project translated entities onto a raw target sentence by exact matching (see the module docstring).

    Args:
        target: the raw target sentence, as text or as its tokens.
        entities: a ``labeled-translation`` output, its ``entities`` list, or ``(text, label)`` pairs.
        lang: the target language code; decides character matching for text (zh, ja, th, ...).
        tokenization: ``"auto"`` (words, or characters for zh, ja, th, ...), ``"words"``, ``"whitespace"`` or
            ``"characters"`` for text targets.
        normalizer: how tokens are compared (default: NFKC, case-sensitive, edge punctuation stripped).
        repeated: ``"all"`` also labels further occurrences of found entities; ``"once"`` does not.
        drop_incomplete: an incomplete sentence gets ``kept=False`` (CroP drops it).
    """
    state = exact_pass(target, entities, lang, tokenization, normalizer, repeated)
    if repeated == "all":
        repeat_pass(state)
    return finish_passes(state, "lexical", drop_incomplete)
