"""Bracket ("seqlogical") parses of task-oriented semantic parsing, as in TOP and CSTOP.

A parse such as ``[IN:GET_WEATHER Dime el clima [SL:DATE_TIME para next Friday ] ]`` is a tree:
intents (``IN:``) hold words and slots, slots (``SL:``) hold words and, in TOP, nested intents.

>>> tree = parse("[IN:GET_WEATHER Dime el clima [SL:DATE_TIME para next Friday ] ]")
>>> tree.name, tree.tokens
('GET_WEATHER', ['Dime', 'el', 'clima', 'para', 'next', 'Friday'])
>>> flat = to_flat(tree)
>>> flat.slot_tags
['O', 'O', 'O', 'B-DATE_TIME', 'I-DATE_TIME', 'I-DATE_TIME']
>>> str(from_flat(flat.tokens, flat.intent, flat.slots)) == str(tree)
True

A nested tree (an intent inside a slot, as TOP has them) is a stack of tagging problems, one
:class:`IntentFrame` per intent, which is what a hierarchical parser predicts:

>>> tokens, frame = to_frame("[IN:CREATE_REMINDER remind me [SL:TODO [IN:GET_TODO my [SL:TODO shopping ] ] ] ]")
>>> frame.intent, frame.slot_tags, frame.depth
('CREATE_REMINDER', ['O', 'O', 'B-TODO', 'I-TODO'], 2)
>>> frame.nested[2].intent, frame.nested[2].slot_tags
('GET_TODO', ['O', 'B-TODO'])
>>> str(frame.to_tree(tokens))
'[IN:CREATE_REMINDER remind me [SL:TODO [IN:GET_TODO my [SL:TODO shopping ] ] ] ]'

Words never contain ``[`` or ``]``: the tokenizer reads ``]`` glued to a word (``Friday]]``) as
closing brackets, which is how hand-written parses are often typed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

from crop_hf.labels import Span, spans_to_tags, tags_to_spans

__all__ = [
    "UNREPRESENTABLE_REASONS",
    "FlatParse",
    "IntentFrame",
    "ParseError",
    "Tree",
    "TreeTooDeepError",
    "UnrepresentableParse",
    "flatten_top_level",
    "from_flat",
    "parse",
    "to_flat",
    "to_frame",
]

NodeKind = Literal["IN", "SL"]
_TOKEN = re.compile(r"\[[^\s\[\]]*|\]|[^\s\[\]]+")


class ParseError(ValueError):
    """A bracket parse that is not a valid tree; ``position`` is the character offset at fault."""

    def __init__(self, message: str, text: str, position: int) -> None:
        self.text = text
        self.position = position
        start = max(0, position - 30)
        excerpt = text[start : position + 30]
        caret = " " * (position - start) + "^"
        super().__init__(f"{message} at character {position}:\n  {excerpt}\n  {caret}")


class TreeTooDeepError(ValueError):
    """A tree with intents inside slots (TOP's nested parses) cannot be flattened to slot tags."""


#: Why :func:`to_frame` cannot represent a tree (``UnrepresentableParse.reason``).
UNREPRESENTABLE_REASONS = {
    "too_deep": "more intents nested inside slots than the model supports (max_intent_depth)",
    "empty_slot": "a slot with no words",
    "mixed_slot": "a slot holding words beside an intent, or several intents",
    "not_intent": "the root is not an intent",
}


class UnrepresentableParse(ValueError):
    """A valid tree that a frame stack (and so a hierarchical parser) cannot express; ``reason`` says why."""

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        super().__init__(message)


@dataclass
class Tree:
    """An intent or slot node; ``children`` are words (``str``) and nested :class:`Tree` nodes."""

    kind: NodeKind
    name: str
    children: list[Tree | str] = field(default_factory=list)

    @property
    def label(self) -> str:
        """``"IN:NAME"`` or ``"SL:NAME"``, as written in the parse."""
        return f"{self.kind}:{self.name}"

    @property
    def tokens(self) -> list[str]:
        """All words under this node, in order."""
        words: list[str] = []
        for child in self.children:
            words.extend(child.tokens if isinstance(child, Tree) else [child])
        return words

    @property
    def depth(self) -> int:
        """Number of node levels: 1 for an intent with only words, 2 with slots, 3 and more when nested."""
        return 1 + max((c.depth for c in self.children if isinstance(c, Tree)), default=0)

    def subtrees(self) -> Iterator[Tree]:
        """This node and every node below it, depth first."""
        yield self
        for child in self.children:
            if isinstance(child, Tree):
                yield from child.subtrees()

    def to_string(self) -> str:
        """Serialize in the canonical TOP spacing: ``[IN:X word [SL:Y word ] ]``."""
        parts = [f"[{self.label}"]
        parts += [child.to_string() if isinstance(child, Tree) else child for child in self.children]
        parts.append("]")
        return " ".join(parts)

    __str__ = to_string


def parse(text: str) -> Tree:
    """Parse a bracket parse into a :class:`Tree`.

    Raises :class:`ParseError` (a ``ValueError``) quoting the offending position for unbalanced
    brackets, a label without ``IN:``/``SL:``, an empty label, a slot that is not directly inside an
    intent, an intent directly inside an intent, words outside the root, or several roots.
    """
    stack: list[Tree] = []
    root: Tree | None = None
    opened_at: list[int] = []
    for match in _TOKEN.finditer(text):
        token, position = match.group(), match.start()
        if token.startswith("["):
            label = token[1:]
            kind, colon, name = label.partition(":")
            if not label:
                raise ParseError("empty label after '['", text, position)
            if not colon or kind not in ("IN", "SL"):
                raise ParseError(f"label {label!r} must start with 'IN:' or 'SL:'", text, position)
            if not name:
                raise ParseError(f"label {label!r} has no name", text, position)
            if root is not None and not stack:
                raise ParseError("a second root node; a parse has exactly one", text, position)
            parent = stack[-1] if stack else None
            if kind == "SL" and (parent is None or parent.kind != "IN"):
                raise ParseError(f"slot {label!r} must be directly inside an intent", text, position)
            if kind == "IN" and parent is not None and parent.kind != "SL":
                raise ParseError(f"intent {label!r} may only be the root or inside a slot", text, position)
            node = Tree(kind, name)  # type: ignore[arg-type]
            if parent is None:
                root = node
            else:
                parent.children.append(node)
            stack.append(node)
            opened_at.append(position)
        elif token == "]":
            if not stack:
                raise ParseError("']' closes nothing", text, position)
            stack.pop()
            opened_at.pop()
        else:
            if not stack:
                raise ParseError(f"word {token!r} outside the root node", text, position)
            stack[-1].children.append(token)
    if stack:
        raise ParseError(f"'[{stack[-1].label}' is never closed", text, opened_at[-1])
    if root is None:
        raise ParseError("no '[IN:' node found", text, 0)
    return root


@dataclass
class FlatParse:
    """A one-intent parse as a tagging problem: what joint intent + slot models train on.

    ``slots`` are token spans with slot names (no ``SL:`` prefix); ``slot_tags`` are the same in IOB2.
    """

    tokens: list[str]
    intent: str
    slots: list[Span]

    @property
    def slot_tags(self) -> list[str]:
        return spans_to_tags(self.slots, len(self.tokens))

    def to_tree(self) -> Tree:
        return from_flat(self.tokens, self.intent, self.slots)


def to_flat(tree: Tree | str) -> FlatParse:
    """Flatten an intent whose slots hold only words (CSTOP's trees, TOP's flat ones).

    Raises :class:`TreeTooDeepError` when a slot holds an intent, and ``ValueError`` for an empty slot.
    """
    if isinstance(tree, str):
        tree = parse(tree)
    if tree.kind != "IN":
        raise ValueError(f"the root of a parse must be an intent, got {tree.label!r}")
    tokens: list[str] = []
    slots: list[Span] = []
    for child in tree.children:
        if isinstance(child, str):
            tokens.append(child)
            continue
        if child.depth > 1:
            raise TreeTooDeepError(
                f"slot {child.label!r} holds an intent (tree depth {tree.depth}); only trees of depth 2 "
                f"flatten to slot tags: {tree}"
            )
        if not child.children:
            raise ValueError(f"slot {child.label!r} is empty in {tree}")
        slots.append(Span(len(tokens), len(tokens) + len(child.children), child.name))
        tokens.extend(child.children)  # type: ignore[arg-type]
    return FlatParse(tokens, tree.name, slots)


def flatten_top_level(tree: Tree | str) -> tuple[FlatParse, bool]:
    """Flatten any intent tree to what a flat tagger can express, and say whether it was nested.

    A depth-2 tree flattens exactly (:func:`to_flat`); a tree with intents inside slots keeps each
    top-level slot over all the words under it (the nested intents are lost; ``True`` says so).

    >>> flat, nested = flatten_top_level("[IN:A x [SL:B y [IN:C z [SL:D w ] ] ] ]")
    >>> flat.tokens, flat.slot_tags, nested
    (['x', 'y', 'z', 'w'], ['O', 'B-B', 'I-B', 'I-B'], True)
    """
    if isinstance(tree, str):
        tree = parse(tree)
    try:
        return to_flat(tree), False
    except TreeTooDeepError:
        pass
    tokens: list[str] = []
    slots: list[Span] = []
    for child in tree.children:
        if isinstance(child, str):
            tokens.append(child)
        else:
            words = child.tokens
            slots.append(Span(len(tokens), len(tokens) + len(words), child.name))
            tokens.extend(words)
    return FlatParse(tokens, tree.name, slots), True


@dataclass
class IntentFrame:
    """One intent over a run of words as a tagging problem, with the intents nested in its slots.

    ``slot_tags`` are IOB2 over the frame's own words; ``nested`` maps the first word of a slot
    (counted within the frame) to the frame of the intent that fills that slot, whose words are
    exactly the slot's. A slot either holds words or one intent over all its words, as in TOP.
    """

    intent: str
    slot_tags: list[str]
    nested: dict[int, IntentFrame] = field(default_factory=dict)

    @property
    def depth(self) -> int:
        """Intent levels: 1 without nested intents."""
        return 1 + max((child.depth for child in self.nested.values()), default=0)

    def to_tree(self, tokens: Sequence[str]) -> Tree:
        """The bracket tree over ``tokens`` (the frame's words)."""
        if len(tokens) != len(self.slot_tags):
            raise ValueError(f"{len(self.slot_tags)} slot tags for {len(tokens)} tokens")
        spans = {span.start: span for span in tags_to_spans(self.slot_tags)}
        stray = sorted(set(self.nested) - set(spans))
        if stray:
            raise ValueError(f"nested intents at words {stray}, where no slot starts")
        root = from_flat(tokens, self.intent, slot_tags=self.slot_tags)
        slots = [child for child in root.children if isinstance(child, Tree)]
        for slot, span in zip(slots, sorted(spans.values(), key=lambda s: s.start), strict=True):
            if span.start in self.nested:
                slot.children = [self.nested[span.start].to_tree(tokens[span.start : span.end])]
        return root


def to_frame(tree: Tree | str, max_intent_depth: int | None = None) -> tuple[list[str], IntentFrame]:
    """``(tokens, frame)`` of a tree; raises :class:`UnrepresentableParse` (with its ``reason``) when it cannot.

    ``max_intent_depth`` (intent levels, 1 = flat) bounds the nesting a model supports.

    >>> try:
    ...     to_frame("[IN:A x [SL:B [IN:C y ] ] ]", max_intent_depth=1)
    ... except UnrepresentableParse as error:
    ...     print(error.reason, "-", error)
    too_deep - 2 levels of intents, the model supports 1: [IN:A x [SL:B [IN:C y ] ] ]
    """
    if isinstance(tree, str):
        tree = parse(tree)
    if tree.kind != "IN":
        raise UnrepresentableParse("not_intent", f"the root of a parse must be an intent, got {tree.label!r}")
    tokens: list[str] = []
    frame = _frame(tree, tokens)
    if max_intent_depth is not None and frame.depth > max_intent_depth:
        raise UnrepresentableParse(
            "too_deep", f"{frame.depth} levels of intents, the model supports {max_intent_depth}: {tree}")
    return tokens, frame


def _frame(intent: Tree, tokens: list[str]) -> IntentFrame:
    offset = len(tokens)
    slots: list[Span] = []
    nested: dict[int, IntentFrame] = {}
    for child in intent.children:
        if isinstance(child, str):
            tokens.append(child)
            continue
        start = len(tokens)
        inner = [c for c in child.children if isinstance(c, Tree)]
        if not child.children:
            raise UnrepresentableParse("empty_slot", f"slot {child.label!r} is empty in {intent}")
        if inner and len(child.children) > 1:
            raise UnrepresentableParse("mixed_slot", f"slot {child.label!r} holds more than one intent: {child}")
        if inner:
            nested[start - offset] = _frame(inner[0], tokens)
        else:
            tokens.extend(child.children)  # type: ignore[arg-type]
        if len(tokens) == start:
            raise UnrepresentableParse("empty_slot", f"slot {child.label!r} covers no words in {intent}")
        slots.append(Span(start - offset, len(tokens) - offset, child.name))
    return IntentFrame(intent.name, spans_to_tags(slots, len(tokens) - offset), nested)


def from_flat(
    tokens: Sequence[str],
    intent: str,
    slots: Sequence[Span | tuple[int, int, str]] | None = None,
    slot_tags: Sequence[str] | None = None,
) -> Tree:
    """Build a depth-2 tree from tokens, an intent name and slots (spans or IOB2 ``slot_tags``).

    Names may be given with or without their ``IN:``/``SL:`` prefix.

    >>> str(from_flat(["Cierra", "maps"], "CLOSE_RESOURCE", slot_tags=["O", "B-RESOURCE"]))
    '[IN:CLOSE_RESOURCE Cierra [SL:RESOURCE maps ] ]'
    """
    if (slots is None) == (slot_tags is None):
        raise ValueError("give exactly one of `slots` and `slot_tags`")
    for token in tokens:
        if not _writable(token):
            raise ValueError(f"token {token!r} cannot be written in a bracket parse (empty, spaces or brackets)")
    if slot_tags is not None:
        if len(slot_tags) != len(tokens):
            raise ValueError(f"{len(slot_tags)} slot tags for {len(tokens)} tokens")
        slots = tags_to_spans(slot_tags)
    spans = sorted((Span(*s) for s in slots), key=lambda s: s.start)  # type: ignore[union-attr]
    spans_to_tags(spans, len(tokens))  # validates range and overlaps
    root = Tree("IN", _strip_prefix(intent, "IN"))
    position = 0
    for span in spans:
        root.children.extend(tokens[position : span.start])
        root.children.append(Tree("SL", _strip_prefix(span.label, "SL"), list(tokens[span.start : span.end])))
        position = span.end
    root.children.extend(tokens[position:])
    return root


def _strip_prefix(name: str, kind: str) -> str:
    name = name.removeprefix(f"{kind}:")
    if not _writable(name):
        raise ValueError(f"invalid {kind} name {name!r}")
    return name


def _writable(word: str) -> bool:
    return bool(word) and not any(c.isspace() or c in "[]" for c in word)
