"""Boundary markers for labeled sequence translation: insert them, read entities back out.

CroP translates a sentence whose entities are wrapped in boundary symbols and reads each
translated entity, with its label, from between its two symbols. The label never reaches the
model: it stays beside the text in a :class:`MarkedSentence`, keyed by slot number.

Two styles are built in, each a small :class:`MarkerStyle` subclass:

* :class:`SlotMarkers` (``"crop"``, the default): the paper's paired, numbered symbols,
  ``__SLOT0__ Gothenburg __SLOT0__``; entity *i* in sentence order gets ``__SLOT{i}__`` on both
  sides, so every slot is identified by its markers alone.
* :class:`BracketMarkers` (``"easyproject"``): EasyProject's untyped square brackets,
  ``[ Gothenburg ]``, which its marker-trained NLLB checkpoints keep. Labels are restored by
  order only where order cannot be wrong, otherwise by matching the bracketed text against the
  entities translated on their own.

Markers are token boundaries: removing a marker (and the whitespace around it) leaves one space,
or nothing at either end of the text, and whitespace is normalized to single spaces. Translations
where a marker is glued to a word (``in__SLOT0__Göteborg__SLOT0__.``) therefore come out as
``in Göteborg .`` with the entity on token boundaries, which is what tagging the translation
afterwards needs.

Extraction never raises on model output. Whatever is wrong with a slot (missing, unpaired,
duplicated, unknown, garbled, empty, crossing or nested markers) is reported per slot as a
:class:`SlotFailure`, and the record is then not :attr:`~Extraction.complete`.

>>> marked = mark_tokens(["I", "live", "in", "Gothenburg", "."], [(3, 4, "LOC")])
>>> marked.text
'I live in __SLOT0__ Gothenburg __SLOT0__ .'
>>> result = extract(marked, "Ich wohne in__SLOT0__Göteborg__SLOT0__.")
>>> result.translation, result.complete
('Ich wohne in Göteborg .', True)
>>> result.entities[0].as_dict()
{'text': 'Göteborg', 'label': 'LOC', 'start': 13, 'end': 21, 'slot': 0}
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

from crop_hf.registry import Registry

__all__ = [
    "MARKER_STYLES",
    "SLOT_FAILURE_REASONS",
    "BracketMarkers",
    "Entity",
    "Extraction",
    "MarkedEntity",
    "MarkedSentence",
    "MarkerStyle",
    "SlotFailure",
    "SlotMarkers",
    "extract",
    "get_marker_style",
    "mark_text",
    "mark_tokens",
]

# Failure reasons, one string each so that they count and serialise cleanly.
MISSING = "missing"  # no marker of the slot in the translation
UNPAIRED = "unpaired"  # one marker only
DUPLICATED = "duplicated"  # more than two markers
UNKNOWN = "unknown"  # a marker for a slot the source does not have
GARBLED = "garbled"  # a broken marker such as ``__SLOT0`` or ``SLOT0__``
EMPTY = "empty"  # nothing but whitespace between the two markers
CROSSING = "crossing"  # the slot's span overlaps another slot's span partially
NESTED = "nested"  # the slot's span contains, or lies inside, another slot's span
ENCLOSES_MARKER = "encloses_marker"  # a stray marker of a broken slot lies inside the span
UNBALANCED = "unbalanced"  # an untyped opening marker without closing one, or the reverse
AMBIGUOUS = "ambiguous"  # an untyped span whose label cannot be decided
UNMATCHED = "unmatched"  # an untyped span that matches no source entity

#: Every reason a :class:`SlotFailure` can give, in the order above.
SLOT_FAILURE_REASONS: tuple[str, ...] = (
    MISSING, UNPAIRED, DUPLICATED, UNKNOWN, GARBLED, EMPTY, CROSSING, NESTED, ENCLOSES_MARKER,
    UNBALANCED, AMBIGUOUS, UNMATCHED,
)


@dataclass(frozen=True)
class MarkedEntity:
    """One source entity: its slot number, label and text (without markers)."""

    slot: int
    label: str
    text: str


@dataclass(frozen=True)
class MarkedSentence:
    """A source sentence with markers inserted, and the labels kept beside it by slot.

    ``text`` is what the model translates; ``source`` is the same text with the markers removed
    (what extracting from an identity "translation" gives back).
    """

    text: str
    source: str
    entities: tuple[MarkedEntity, ...]
    style: str

    @property
    def labels(self) -> dict[int, str]:
        return {entity.slot: entity.label for entity in self.entities}


@dataclass(frozen=True)
class Entity:
    """A translated entity: ``translation[start:end] == text``."""

    text: str
    label: str
    start: int
    end: int
    slot: int | None

    def as_dict(self) -> dict[str, Any]:
        return {"text": self.text, "label": self.label, "start": self.start, "end": self.end, "slot": self.slot}


@dataclass(frozen=True)
class SlotFailure:
    """Why a slot gave no entity. ``slot`` is ``None`` for an untyped span matching no slot."""

    slot: int | None
    reason: str
    label: str | None = None
    text: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"slot": self.slot, "reason": self.reason, "label": self.label, "text": self.text}


@dataclass(frozen=True)
class Extraction:
    """The result of reading one translation: clean text, entities in text order, failures."""

    translation: str
    marked_translation: str
    entities: tuple[Entity, ...]
    failures: tuple[SlotFailure, ...] = field(default=())

    @property
    def complete(self) -> bool:
        """Every slot gave an entity and nothing else was wrong with the markers."""
        return not self.failures

    def as_dict(self) -> dict[str, Any]:
        return {
            "translation": self.translation,
            "marked_translation": self.marked_translation,
            "entities": [entity.as_dict() for entity in self.entities],
            "complete": self.complete,
            "failures": [failure.as_dict() for failure in self.failures],
        }


@dataclass(frozen=True)
class _Marker:
    """A marker found in a translation: character span, ``kind`` and slot (typed styles)."""

    start: int
    end: int
    kind: str  # "paired" (opens and closes), "open", "close" or "garbled"
    slot: int | None = None


class _Found(NamedTuple):
    """Markers found in a translation, the clean text, and each marker's offsets in it."""

    clean: str
    markers: list[_Marker]
    left: list[int]
    right: list[int]


def _normalize(text: str) -> str:
    return " ".join(text.split())


def _remove_markers(text: str, markers: Sequence[_Marker]) -> tuple[str, list[int], list[int]]:
    """Remove ``markers`` (sorted, disjoint) from ``text`` and normalize whitespace.

    Returns the clean text and, per marker, ``left`` (the end of the text before it) and
    ``right`` (the start of the text after it) as offsets into the clean text: an entity between
    markers ``a`` and ``b`` is ``clean[right[a]:left[b]]``.
    """
    out: list[str] = []
    left = [0] * len(markers)
    right = [0] * len(markers)
    awaiting: list[int] = []  # markers whose ``right`` is the next character written
    pending_space = False
    position = 0

    def write(char: str) -> None:
        nonlocal pending_space
        if pending_space and out:
            out.append(" ")
        pending_space = False
        for index in awaiting:
            right[index] = len(out)
        awaiting.clear()
        out.append(char)

    for index, marker in enumerate([*markers, None]):
        stop = len(text) if marker is None else marker.start
        for char in text[position:stop]:
            if char.isspace():
                pending_space = True
            else:
                write(char)
        if marker is None:
            break
        # A marker separates tokens like whitespace does.
        left[index] = len(out)
        pending_space = True
        awaiting.append(index)
        position = marker.end
    for index in awaiting:
        right[index] = len(out)
    return "".join(out), left, right


class MarkerStyle(ABC):
    """How entity boundaries are written into the source and read back from a translation.

    A new style is one subclass: :meth:`markers` (what goes around slot *i*), :meth:`find` (the
    markers in a translation) and :meth:`_read` (entities and failures from the markers found).
    """

    name: ClassVar[str]
    #: Whether markers name their slot; untyped styles need the entity translations to restore labels.
    typed: ClassVar[bool]

    @abstractmethod
    def markers(self, slot: int) -> tuple[str, str]:
        """The opening and closing marker of ``slot``."""

    @abstractmethod
    def find(self, text: str) -> list[_Marker]:
        """Every marker (or marker fragment) in ``text``, sorted, disjoint."""

    def extract(
        self,
        marked: MarkedSentence,
        translation: str,
        entity_translations: Mapping[int, str] | None = None,
    ) -> Extraction:
        """Read the entities of ``marked`` from ``translation``. Never raises on model output.

        ``entity_translations`` (slot -> the entity translated on its own) is used by untyped styles.
        """
        markers = self.find(translation)
        clean, left, right = _remove_markers(translation, markers)
        entities, failures = self._read(marked, _Found(clean, markers, left, right), entity_translations)
        entities.sort(key=lambda entity: entity.start)
        return Extraction(clean, translation, tuple(entities), tuple(failures))

    @abstractmethod
    def _read(
        self, marked: MarkedSentence, found: _Found, entity_translations: Mapping[int, str] | None
    ) -> tuple[list[Entity], list[SlotFailure]]:
        """The entities and failures of ``marked`` given the markers ``found`` in a translation."""

    def needs_entity_translations(self, marked: MarkedSentence) -> bool:
        """Whether :meth:`extract` needs each entity translated on its own to restore labels."""
        return False

    # Marking is the same for every style: only the symbols differ.
    def mark_tokens(self, tokens: Sequence[str], spans: Iterable[tuple[int, int, str]]) -> MarkedSentence:
        """Insert markers around token spans ``(start, end, label)`` (``end`` exclusive).

        Slots are numbered in sentence order. Raises ``ValueError`` for an empty, out-of-range
        or overlapping span, and for tokens that already contain a marker.
        """
        spans = sorted((int(s), int(e), str(label)) for s, e, label in spans)
        previous_end = 0
        for start, end, label in spans:
            if not 0 <= start < end <= len(tokens):
                raise ValueError(f"span ({start}, {end}, {label!r}) is empty or outside the {len(tokens)} tokens")
            if start < previous_end:
                raise ValueError(f"span ({start}, {end}, {label!r}) overlaps the previous span")
            previous_end = end
        pieces: list[str] = []
        entities: list[MarkedEntity] = []
        cursor = 0
        for slot, (start, end, label) in enumerate(spans):
            opening, closing = self.markers(slot)
            entity_text = " ".join(tokens[start:end])
            pieces += [*tokens[cursor:start], opening, entity_text, closing]
            entities.append(MarkedEntity(slot, label, _normalize(entity_text)))
            cursor = end
        pieces += tokens[cursor:]
        return self._marked(" ".join(pieces), " ".join(tokens), entities, plain=" ".join(tokens))

    def mark_text(self, text: str, entities: Iterable[Mapping[str, Any]]) -> MarkedSentence:
        """Insert markers around character spans ``{"start", "end", "label"}`` of ``text``.

        Markers are token boundaries, so a span glued to a neighbour (``Gothenburg.``) gets a
        space between them (``__SLOT0__ Gothenburg __SLOT0__ .``).
        """
        spans = sorted((int(e["start"]), int(e["end"]), str(e["label"])) for e in entities)
        pieces: list[str] = []
        marked_entities: list[MarkedEntity] = []
        cursor = 0
        for slot, (start, end, label) in enumerate(spans):
            if not 0 <= cursor <= start < end <= len(text) or not text[start:end].strip():
                raise ValueError(
                    f"entity ({start}, {end}, {label!r}) is empty, outside the text ({len(text)} characters) "
                    "or overlaps the previous entity"
                )
            opening, closing = self.markers(slot)
            pieces += [text[cursor:start], opening, text[start:end], closing]
            marked_entities.append(MarkedEntity(slot, label, _normalize(text[start:end])))
            cursor = end
        pieces.append(text[cursor:])
        marked_text = _normalize(" ".join(pieces))
        # The source as the model's identity output would give it back (markers as token boundaries).
        source = _remove_markers(marked_text, self.find(marked_text))[0]
        return self._marked(marked_text, source, marked_entities, plain=text)

    def _marked(self, marked_text: str, source: str, entities: list[MarkedEntity], plain: str) -> MarkedSentence:
        found = self.find(plain)
        if found:
            fragment = plain[found[0].start : found[0].end]
            raise ValueError(
                f"the source already contains the marker {fragment!r} of the {self.name!r} style; "
                "remove it or choose another marker style"
            )
        return MarkedSentence(_normalize(marked_text), _normalize(source), tuple(entities), self.name)


class SlotMarkers(MarkerStyle):
    """CroP's paired, numbered markers: ``__SLOT0__ Gothenburg __SLOT0__``.

    Also recognised: markers glued to words, markers split by spaces (``__ SLOT0 __``), any
    letter case, and garbled fragments (``__SLOT0``, ``SLOT0__``), which fail their slot.
    """

    name = "crop"
    typed = True
    # Full markers, tolerating spaces a tokenizer or model may put inside them; then fragments
    # that lost underscores on one side, so that they are removed and reported, not kept as text.
    _PATTERN = re.compile(
        r"(?P<full>_\s*_\s*SLOT\s*(?P<a>\d+)\s*_\s*_)"
        r"|(?P<garbled>_+\s*SLOT\s*(?P<b>\d+)_*|SLOT\s*(?P<c>\d+)\s*_+)",
        re.IGNORECASE,
    )

    def markers(self, slot: int) -> tuple[str, str]:
        return f"__SLOT{slot}__", f"__SLOT{slot}__"

    def find(self, text: str) -> list[_Marker]:
        found = []
        for match in self._PATTERN.finditer(text):
            digits = match.group("a") or match.group("b") or match.group("c")
            kind = "paired" if match.group("full") else "garbled"
            found.append(_Marker(match.start(), match.end(), kind, int(digits)))
        return found

    def _read(
        self, marked: MarkedSentence, found: _Found, entity_translations: Mapping[int, str] | None
    ) -> tuple[list[Entity], list[SlotFailure]]:
        clean, markers, left, right = found
        labels = marked.labels
        by_slot: dict[int, list[int]] = defaultdict(list)
        for index, marker in enumerate(markers):
            by_slot[marker.slot].append(index)

        failures: dict[int, str] = {}
        pairs: dict[int, tuple[int, int]] = {}
        for slot in labels:
            occurrences = by_slot.get(slot, [])
            if any(markers[i].kind == "garbled" for i in occurrences):
                failures[slot] = GARBLED
            elif not occurrences:
                failures[slot] = MISSING
            elif len(occurrences) == 1:
                failures[slot] = UNPAIRED
            elif len(occurrences) > 2:
                failures[slot] = DUPLICATED
            elif left[occurrences[1]] <= right[occurrences[0]]:
                failures[slot] = EMPTY
            else:
                pairs[slot] = (occurrences[0], occurrences[1])
        unknown = sorted(slot for slot in by_slot if slot not in labels)

        # Slots whose spans interleave with other markers cannot be trusted: the model moved
        # something, and a wrong entity is worse than none.
        owner = {index: marker.slot for index, marker in enumerate(markers)}
        for slot, (first, second) in pairs.items():
            inside = {owner[i] for i in range(first + 1, second)}
            for other in inside:
                if other in pairs:
                    other_first, other_second = pairs[other]
                    nested = first < other_first and other_second < second
                    failures[slot] = NESTED if nested else CROSSING
                    failures[other] = NESTED if nested else CROSSING
                elif slot not in failures:
                    failures[slot] = ENCLOSES_MARKER

        entities = [
            Entity(clean[right[first] : left[second]], labels[slot], right[first], left[second], slot)
            for slot, (first, second) in pairs.items()
            if slot not in failures
        ]
        failure_list = [SlotFailure(slot, reason, labels[slot]) for slot, reason in sorted(failures.items())]
        failure_list += [SlotFailure(slot, UNKNOWN) for slot in unknown]
        return entities, failure_list


class BracketMarkers(MarkerStyle):
    """EasyProject's untyped square brackets: ``[ Gothenburg ]``.

    The brackets do not say which entity they hold, so labels are restored

    1. by order, when order cannot be wrong: as many spans as entities, and one entity or all
       entities of one type;
    2. otherwise by matching each span against the entities translated on their own
       (``entity_translations``, slot -> text): exact (ignoring case and spacing) first, then
       fuzzy (:func:`rapidfuzz.fuzz.ratio` at least ``threshold``). A span whose best
       matches carry different labels is ``ambiguous``; the record is then incomplete.
    """

    name = "easyproject"
    typed = False
    _PATTERN = re.compile(r"[\[\]]")

    def __init__(self, threshold: float = 70.0) -> None:
        self.threshold = threshold

    def markers(self, slot: int) -> tuple[str, str]:
        return "[", "]"

    def find(self, text: str) -> list[_Marker]:
        return [
            _Marker(m.start(), m.end(), "open" if m.group() == "[" else "close") for m in self._PATTERN.finditer(text)
        ]

    def needs_entity_translations(self, marked: MarkedSentence) -> bool:
        return len({entity.label for entity in marked.entities}) > 1

    def _read(
        self, marked: MarkedSentence, found: _Found, entity_translations: Mapping[int, str] | None
    ) -> tuple[list[Entity], list[SlotFailure]]:
        clean, markers, left, right = found
        failures: list[SlotFailure] = []
        spans: list[tuple[int, int]] = []  # character spans in ``clean``
        stack: list[int] = []
        broken = False  # the open bracket group contains another group: its extent is unclear
        for index, marker in enumerate(markers):
            if marker.kind == "open":
                broken = broken or bool(stack)
                stack.append(index)
                continue
            if not stack:
                failures.append(SlotFailure(None, UNBALANCED))
                continue
            first = stack.pop()
            if stack:
                continue
            if broken:
                failures.append(SlotFailure(None, NESTED, text=clean[right[first] : left[index]]))
                broken = False
            elif left[index] <= right[first]:
                failures.append(SlotFailure(None, EMPTY))
            else:
                spans.append((right[first], left[index]))
        failures += [SlotFailure(None, UNBALANCED) for _ in stack]

        slots = list(marked.entities)
        if len(spans) == len(slots) and len({e.label for e in slots}) <= 1:
            assigned = dict(enumerate(slots))
        else:
            assigned = self._match(spans, clean, slots, entity_translations, failures)
        entities = [
            Entity(clean[start:end], assigned[i].label, start, end, assigned[i].slot)
            for i, (start, end) in enumerate(spans)
            if i in assigned
        ]
        found_slots = {entity.slot for entity in entities}
        failures += [SlotFailure(e.slot, MISSING, e.label) for e in slots if e.slot not in found_slots]
        return entities, failures

    def _match(
        self,
        spans: list[tuple[int, int]],
        clean: str,
        slots: list[MarkedEntity],
        entity_translations: Mapping[int, str] | None,
        failures: list[SlotFailure],
    ) -> dict[int, MarkedEntity]:
        """Assign spans to slots by their text; unresolvable spans are added to ``failures``."""
        from rapidfuzz import fuzz

        if entity_translations is None:
            failures += [SlotFailure(None, AMBIGUOUS, text=clean[s:e]) for s, e in spans]
            return {}
        candidates: dict[int, list[tuple[float, MarkedEntity]]] = {}
        for i, (start, end) in enumerate(spans):
            text = clean[start:end].casefold()
            scored = []
            for entity in slots:
                reference = _normalize(entity_translations.get(entity.slot, "")).casefold()
                # Exact matches outrank every fuzzy one.
                score = 101.0 if reference and reference == text else fuzz.ratio(text, reference)
                if score >= self.threshold:
                    scored.append((score, entity))
            candidates[i] = sorted(scored, key=lambda item: -item[0])

        assigned: dict[int, MarkedEntity] = {}
        taken: set[int] = set()
        # Most confident spans pick first, so a near-tie elsewhere cannot steal their slot.
        order = sorted(candidates, key=lambda i: -(candidates[i][0][0] if candidates[i] else 0.0))
        for i in order:
            options = [(score, entity) for score, entity in candidates[i] if entity.slot not in taken]
            text = clean[spans[i][0] : spans[i][1]]
            if not options:
                failures.append(SlotFailure(None, UNMATCHED, text=text))
                continue
            best = [entity for score, entity in options if score == options[0][0]]
            if len({entity.label for entity in best}) > 1:
                failures.append(SlotFailure(None, AMBIGUOUS, text=text))
                continue
            assigned[i] = best[0]
            taken.add(best[0].slot)
        return assigned


#: Marker styles by name (:func:`get_marker_style` also accepts an instance). A registered style is
#: called with no arguments, and its ``name`` is the name it is registered under. Installed packages
#: add styles through the ``crop_hf_marker_styles`` entry-point group (``name = module:StyleClass``).
MARKER_STYLES: Registry[Callable[[], MarkerStyle]] = Registry("marker style",
                                                              {"crop": SlotMarkers, "easyproject": BracketMarkers},
                                                              group="crop_hf_marker_styles")


def get_marker_style(style: str | MarkerStyle | None = None) -> MarkerStyle:
    """A style instance from its name (``"crop"``, ``"easyproject"``) or as given; ``None`` is CroP's."""
    if style is None:
        return SlotMarkers()
    if isinstance(style, MarkerStyle):
        return style
    return MARKER_STYLES.get(style)()


def mark_tokens(
    tokens: Sequence[str], spans: Iterable[tuple[int, int, str]], style: str | MarkerStyle | None = None
) -> MarkedSentence:
    """Insert markers around token spans ``(start, end, label)``; see :meth:`MarkerStyle.mark_tokens`."""
    return get_marker_style(style).mark_tokens(tokens, spans)


def mark_text(
    text: str, entities: Iterable[Mapping[str, Any]], style: str | MarkerStyle | None = None
) -> MarkedSentence:
    """Insert markers around character spans; see :meth:`MarkerStyle.mark_text`."""
    return get_marker_style(style).mark_text(text, entities)


def extract(
    marked: MarkedSentence,
    translation: str,
    entity_translations: Mapping[int, str] | None = None,
    style: str | MarkerStyle | None = None,
) -> Extraction:
    """Read the entities of ``marked`` back from ``translation`` in the style it was marked with."""
    return get_marker_style(style or marked.style).extract(marked, translation, entity_translations)


def count_failures(extractions: Iterable[Extraction]) -> Counter[str]:
    """How often each failure reason occurs in ``extractions`` (for corpus-level reports)."""
    return Counter(failure.reason for extraction in extractions for failure in extraction.failures)
