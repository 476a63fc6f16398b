"""NER tag schemes, label sets and the conversions between them.

Every module of crop-hf that touches entity tags goes through this one: readers convert what a
release ships (IOB1, BIOES) to IOB2, projection turns spans into tags, training aligns label ids.

Vocabulary used throughout:

* a **tag** is a string such as ``"B-PER"``, ``"I-LOC"`` or ``"O"``: a prefix, a hyphen and an
  entity type (the type may itself contain hyphens or colons; only the first hyphen splits);
* a **span** is a :class:`Span` ``(start, end, label)`` over token indices, ``end`` exclusive;
* a **scheme** names how tags encode spans: ``"IOB1"`` (``I-`` starts an entity, ``B-`` only
  separates two adjacent entities of one type), ``"IOB2"`` (every entity starts with ``B-``; the
  scheme Hugging Face datasets use), ``"BIOES"`` (also ``S-`` single and ``E-`` end tags;
  ``BILOU``'s ``U-``/``L-`` are read as ``S-``/``E-``).

>>> tags_to_spans(["B-PER", "I-PER", "O", "B-LOC"])
[Span(start=0, end=2, label='PER'), Span(start=3, end=4, label='LOC')]
>>> convert_tags(["I-ORG", "I-ORG", "B-ORG", "O"], "IOB1", "IOB2")
['B-ORG', 'I-ORG', 'B-ORG', 'O']
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Literal, NamedTuple

__all__ = [
    "CONLL_LABELS",
    "CONLL_TYPES",
    "PANX_LABELS",
    "PANX_TYPES",
    "LabelConflictError",
    "LabelSet",
    "Span",
    "TagScheme",
    "bioes_to_iob2",
    "convert_tags",
    "iob1_to_iob2",
    "iob2_to_bioes",
    "iob2_to_iob1",
    "is_valid",
    "parse_label_map",
    "reconcile_labels",
    "rename_tag",
    "repair_tags",
    "spans_to_tags",
    "split_tag",
    "tags_to_spans",
]

TagScheme = Literal["IOB1", "IOB2", "BIOES"]
_SCHEMES = ("IOB1", "IOB2", "BIOES")

#: Entity types of CoNLL-2002/2003, in the order of Hugging Face's ``conll2002``/``conll2003``.
CONLL_TYPES: tuple[str, ...] = ("PER", "ORG", "LOC", "MISC")
#: Entity types of PAN-X / WikiANN as used by XTREME (Hugging Face ``xtreme``, ``PAN-X.*``).
PANX_TYPES: tuple[str, ...] = ("PER", "ORG", "LOC")


_PREFIXES = {"B", "I", "E", "S", "U", "L"}
_BILOU = {"U": "S", "L": "E"}


def split_tag(tag: str) -> tuple[str, str | None]:
    """Split a tag into ``(prefix, type)``; ``"O"`` gives ``("O", None)``.

    BILOU prefixes are normalized to BIOES (``U`` → ``S``, ``L`` → ``E``).

    >>> split_tag("B-GPE_LOC")
    ('B', 'GPE_LOC')
    """
    if tag == "O":
        return "O", None
    prefix, sep, entity_type = tag.partition("-")
    if not sep or prefix not in _PREFIXES or not entity_type:
        raise ValueError(f"invalid tag {tag!r}: expected 'O' or a prefix (B, I, E, S) and a type, as in 'B-PER'")
    return _BILOU.get(prefix, prefix), entity_type


class Span(NamedTuple):
    """An entity over token (or character) positions ``[start, end)`` with its type."""

    start: int
    end: int
    label: str


@dataclass(frozen=True)
class LabelSet:
    """An ordered IOB2 label list with its id mappings.

    ``LabelSet.from_types(("PER", "ORG"))`` gives ``O, B-PER, I-PER, B-ORG, I-ORG``: the layout of
    every Hugging Face NER corpus, so ids line up with models trained on them.

    >>> CONLL_LABELS.label2id["B-MISC"]
    7
    >>> CONLL_LABELS.encode(["O", "B-PER"])
    [0, 1]
    """

    names: tuple[str, ...]

    def __post_init__(self) -> None:
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"label names must be unique, got {list(self.names)}")
        for name in self.names:
            split_tag(name)

    @classmethod
    def from_types(cls, types: Iterable[str]) -> LabelSet:
        names = ["O"]
        for entity_type in types:
            names += [f"B-{entity_type}", f"I-{entity_type}"]
        return cls(tuple(names))

    @classmethod
    def of_model(cls, id2label: Mapping[int, str]) -> LabelSet:
        """The IOB2 label set of a token classifier's ``config.id2label``, in CoNLL order when its types are CoNLL's.

        Names may carry IOB/BIOES prefixes or be bare types (``"PER"``, as some models name them).

        >>> LabelSet.of_model({0: "O", 1: "B-LOC", 2: "I-LOC", 3: "B-PER", 4: "I-PER"}).names
        ('O', 'B-PER', 'I-PER', 'B-LOC', 'I-LOC')
        """
        types: list[str] = []
        for name in id2label.values():
            if name == "O":
                continue
            entity_type = split_tag(name)[1] if "-" in name else name
            if entity_type not in types:
                types.append(entity_type)
        if set(types) <= set(CONLL_TYPES):
            types = [t for t in CONLL_TYPES if t in types]
        return cls.from_types(types)

    @property
    def types(self) -> tuple[str, ...]:
        """Entity types in order of first appearance."""
        seen: dict[str, None] = {}
        for name in self.names:
            entity_type = split_tag(name)[1]
            if entity_type is not None:
                seen.setdefault(entity_type)
        return tuple(seen)

    @cached_property
    def label2id(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.names)}

    @cached_property
    def id2label(self) -> dict[int, str]:
        return dict(enumerate(self.names))

    def __len__(self) -> int:
        return len(self.names)

    def __iter__(self):
        return iter(self.names)

    def __getitem__(self, index: int) -> str:
        return self.names[index]

    def encode(self, tags: Iterable[str]) -> list[int]:
        """Tag strings to ids; an unknown tag raises ``KeyError`` naming it and the label set."""
        mapping = self.label2id
        try:
            return [mapping[tag] for tag in tags]
        except KeyError as err:
            raise KeyError(f"tag {err.args[0]!r} is not in the label set {list(self.names)}") from None

    def decode(self, ids: Iterable[int]) -> list[str]:
        """Ids to tag strings."""
        return [self.names[i] for i in ids]


#: ``O, B-PER, I-PER, B-ORG, I-ORG, B-LOC, I-LOC, B-MISC, I-MISC`` (Hugging Face conll2002/2003 ids).
CONLL_LABELS = LabelSet.from_types(CONLL_TYPES)
#: ``O, B-PER, I-PER, B-ORG, I-ORG, B-LOC, I-LOC`` (Hugging Face xtreme PAN-X ids).
PANX_LABELS = LabelSet.from_types(PANX_TYPES)

def _check_scheme(scheme: str) -> None:
    if scheme not in _SCHEMES:
        raise ValueError(f"unknown tag scheme {scheme!r}; expected one of {', '.join(_SCHEMES)}")


def tags_to_spans(tags: Sequence[str], scheme: TagScheme = "IOB2") -> list[Span]:
    """Read entity spans from a tag sequence.

    Invalid sequences are read the way ``conlleval`` and seqeval's default mode read them: an
    ``I-X`` (or ``E-X``) that does not continue an ``X`` entity starts a new one. Use
    :func:`is_valid` to detect such sequences and :func:`repair_tags` to fix them first.
    """
    _check_scheme(scheme)
    spans: list[Span] = []
    start, current = 0, None  # current: type of the open entity
    for i, tag in enumerate(tags):
        prefix, entity_type = split_tag(tag)
        if scheme != "BIOES" and prefix in {"E", "S"}:
            raise ValueError(f"tag {tag!r} at position {i} is not valid in scheme {scheme}")
        # In IOB1 too, B-X never continues: it is how IOB1 starts an X right after another X.
        continues = current is not None and entity_type == current and prefix in {"I", "E"}
        if current is not None and not continues:
            spans.append(Span(start, i, current))
            current = None
        if entity_type is not None and current is None:
            start, current = i, entity_type
        if prefix in {"E", "S"}:
            spans.append(Span(start, i + 1, current))
            current = None
    if current is not None:
        spans.append(Span(start, len(tags), current))
    return spans


def spans_to_tags(spans: Iterable[Span | tuple[int, int, str]], length: int, scheme: TagScheme = "IOB2") -> list[str]:
    """Write spans as tags over ``length`` tokens.

    Raises ``ValueError`` for an empty, out-of-range or overlapping span.

    >>> spans_to_tags([(1, 3, "LOC")], 4, "BIOES")
    ['O', 'B-LOC', 'E-LOC', 'O']
    """
    _check_scheme(scheme)
    tags = ["O"] * length
    ordered = sorted((Span(*span) for span in spans), key=lambda s: s.start)
    previous: Span | None = None
    for span in ordered:
        if not 0 <= span.start < span.end <= length:
            raise ValueError(f"span {tuple(span)} does not fit in a sequence of {length} tokens")
        if previous is not None and span.start < previous.end:
            raise ValueError(f"spans {tuple(previous)} and {tuple(span)} overlap")
        split_tag(f"B-{span.label}")
        for i in range(span.start, span.end):
            tags[i] = f"I-{span.label}"
        if scheme == "IOB2" or (scheme == "IOB1" and previous is not None and previous.end == span.start
                                and previous.label == span.label):
            tags[span.start] = f"B-{span.label}"
        elif scheme == "BIOES":
            if span.end - span.start == 1:
                tags[span.start] = f"S-{span.label}"
            else:
                tags[span.start] = f"B-{span.label}"
                tags[span.end - 1] = f"E-{span.label}"
        previous = span
    return tags


def convert_tags(tags: Sequence[str], source: TagScheme, target: TagScheme) -> list[str]:
    """Convert a tag sequence between schemes (via its spans, so the result is always valid)."""
    _check_scheme(target)
    return spans_to_tags(tags_to_spans(tags, source), len(tags), target)


def iob1_to_iob2(tags: Sequence[str]) -> list[str]:
    """IOB1 (as in CoNLL-2003's original files) to IOB2: an ``I-X`` that starts an entity becomes ``B-X``."""
    return convert_tags(tags, "IOB1", "IOB2")


def iob2_to_iob1(tags: Sequence[str]) -> list[str]:
    """IOB2 to IOB1: ``B-X`` survives only directly after another ``X`` entity."""
    return convert_tags(tags, "IOB2", "IOB1")


def iob2_to_bioes(tags: Sequence[str]) -> list[str]:
    """IOB2 to BIOES: single-token entities become ``S-X``, last tokens ``E-X``."""
    return convert_tags(tags, "IOB2", "BIOES")


def bioes_to_iob2(tags: Sequence[str]) -> list[str]:
    """BIOES (or BILOU) to IOB2."""
    return convert_tags(tags, "BIOES", "IOB2")


def is_valid(tags: Sequence[str], scheme: TagScheme = "IOB2") -> bool:
    """Whether ``tags`` is a well-formed sequence of ``scheme`` (rewriting it would change nothing).

    >>> is_valid(["O", "I-PER"])
    False
    """
    try:
        return list(tags) == convert_tags(tags, scheme, scheme)
    except ValueError:
        return False


def repair_tags(tags: Sequence[str], strategy: Literal["begin", "drop"] = "begin") -> list[str]:
    """Make an IOB2 sequence valid.

    An ``I-X`` after ``O``, at the start, or after an entity of another type is invalid IOB2 (model
    predictions produce it). ``strategy="begin"`` turns it into ``B-X`` (the reading of conlleval and
    seqeval, so scores do not change); ``strategy="drop"`` turns the stray tag, and the ``I-X`` run
    that follows it, into ``O``.

    >>> repair_tags(["O", "I-PER", "I-PER", "B-LOC", "I-ORG"])
    ['O', 'B-PER', 'I-PER', 'B-LOC', 'B-ORG']
    >>> repair_tags(["O", "I-PER", "I-PER", "B-LOC", "I-ORG"], strategy="drop")
    ['O', 'O', 'O', 'B-LOC', 'O']
    """
    if strategy not in {"begin", "drop"}:
        raise ValueError(f"unknown repair strategy {strategy!r}; expected 'begin' or 'drop'")
    repaired: list[str] = []
    current = None  # type of the open entity in the output
    for tag in tags:
        prefix, entity_type = split_tag(tag)
        if prefix in {"E", "S"}:
            raise ValueError(f"repair_tags works on IOB2 tags, got {tag!r}; convert BIOES with bioes_to_iob2")
        if prefix == "I" and entity_type != current:
            if strategy == "begin":
                tag = f"B-{entity_type}"
            else:
                tag, entity_type = "O", None
        repaired.append(tag)
        current = entity_type
    return repaired


# --------------------------------------------------------------------------- label sets of several corpora


class LabelConflictError(ValueError):
    """Label sets of several corpora (or of a corpus and a model) cannot be merged by name."""


def parse_label_map(items: Iterable[str] | Mapping[str, str] | None) -> dict[str, str]:
    """``["GPE_LOC=LOC", "DRV=O"]`` → ``{"GPE_LOC": "LOC", "DRV": "O"}`` (entity type renames)."""
    if items is None:
        return {}
    if isinstance(items, Mapping):
        return dict(items)
    mapping = {}
    for item in items:
        old, sep, new = item.partition("=")
        if not sep or not old or not new:
            raise ValueError(f"label_map entry {item!r}: expected OLD=NEW, e.g. GPE_LOC=LOC")
        mapping[old] = new
    return mapping


def rename_tag(tag: str, label_map: Mapping[str, str]) -> str:
    """Rename the entity type of one tag (``label_map`` maps types; ``"O"`` drops the entity).

    >>> rename_tag("B-GPE_LOC", {"GPE_LOC": "LOC"}), rename_tag("I-DRV", {"DRV": "O"})
    ('B-LOC', 'O')
    """
    prefix, entity_type = split_tag(tag)
    if entity_type is None or entity_type not in label_map:
        return tag
    new = label_map[entity_type]
    return "O" if new == "O" else f"{prefix}-{new}"


def _check_iob2(names: Sequence[str], where: str) -> None:
    for name in names:
        try:
            prefix, _ = split_tag(name)
        except ValueError as err:
            raise LabelConflictError(f"{where}: {err}") from None
        if prefix not in {"O", "B", "I"}:
            raise LabelConflictError(
                f"{where}: label {name!r} is not IOB2; convert the corpus first "
                "(crop_hf.labels.bioes_to_iob2 / iob1_to_iob2)")


def reconcile_labels(label_lists: Sequence[Sequence[str]], where: Sequence[str] | None = None,
                     model_labels: Sequence[str] | None = None) -> LabelSet:
    """One IOB2 label set covering every corpus, matched by name.

    Types are kept in order of first appearance (the model's labels first when it already has an
    NER head), so a CoNLL corpus and a PAN-X corpus (no MISC) share ``PER``/``ORG``/``LOC`` ids.
    Raises :class:`LabelConflictError` for non-IOB2 labels and for types that differ only in
    case or punctuation (``PER`` vs ``Per`` vs ``P-ER``), which are nearly always the same type
    spelt two ways: rename them with ``label_map``.
    """
    where = list(where) if where is not None else [f"corpus {i}" for i in range(len(label_lists))]
    lists = list(label_lists)
    origins = list(where)
    if model_labels is not None:
        lists.insert(0, model_labels)
        origins.insert(0, "the model")
    types: dict[str, str] = {}  # type -> where first seen
    for names, origin in zip(lists, origins, strict=True):
        _check_iob2(names, origin)
        for name in names:
            entity_type = split_tag(name)[1]
            if entity_type is not None:
                types.setdefault(entity_type, origin)
    by_key: dict[str, str] = {}
    for entity_type, origin in types.items():
        key = "".join(ch for ch in entity_type.lower() if ch.isalnum())
        if key in by_key and by_key[key] != entity_type:
            other = by_key[key]
            raise LabelConflictError(
                f"entity types {other!r} ({types[other]}) and {entity_type!r} ({origin}) look like one type "
                f"spelt two ways; rename one with label_map, e.g. --label_map {entity_type}={other}")
        by_key[key] = entity_type
    return LabelSet.from_types(types)
