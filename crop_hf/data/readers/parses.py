"""Reader of TOP-style bracket parses (TOP, TOPv2, CSTOP, MTOP-like layouts) for joint intent and slot tagging."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from crop_hf.data.readers.io import (
    Errors,
    FormatError,
    SkippedRecords,
    Skipper,
    Source,
    iter_lines,
    source_name,
    undecodable_error,
)
from crop_hf.labels import Span, spans_to_tags
from crop_hf.seqlogical import ParseError, Tree, TreeTooDeepError, flatten_top_level, parse, to_flat

__all__ = ["ParseRecord", "infer_domain", "read_semantic_parses"]

logger = logging.getLogger(__name__)


@dataclass
class ParseRecord:
    """One utterance of a TOP-style file, flattened for joint intent + slot tagging.

    ``parse`` is the bracket parse as written (normalized spacing); ``slot_tags`` are IOB2 over the
    parse's top-level slots, aligned with ``tokens`` (the words of the parse).
    """

    utterance: str
    tokens: list[str]
    intent: str
    slot_tags: list[str]
    parse: str
    domain: str
    line: int


# --------------------------------------------------------------------------- TOP / CSTOP

_SLOT_SPANS = re.compile(r"\d+:\d+:SL:[^,\s]+(?:,\d+:\d+:SL:[^,\s]+)*")
_INTENT_COLUMN = re.compile(r"IN:[^\s\[\]]+")
_HEADER_FIELD = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
#: Keywords of intent names -> domain, for files without a domain column (TOP v1). First match wins.
_DOMAIN_KEYWORDS: tuple[tuple[str, str], ...] = (
    ("WEATHER", "weather"),
    ("SUNRISE", "weather"),
    ("SUNSET", "weather"),
    ("EVENT", "event"),
    ("ALARM", "alarm"),
    ("REMINDER", "reminder"),
    ("TIMER", "timer"),
    ("MUSIC", "music"),
    ("MESSAG", "messaging"),
    ("RESOURCE", "device"),
    ("VOLUME", "device"),
    ("BRIGHTNESS", "device"),
    ("DIRECTION", "navigation"),
    ("DISTANCE", "navigation"),
    ("ESTIMATED", "navigation"),
    ("TRAFFIC", "navigation"),
    ("ROAD", "navigation"),
    ("ROUTE", "navigation"),
    ("LOCATION", "navigation"),
    ("NAVIGATION", "navigation"),
)


def infer_domain(intent: str) -> str:
    """The domain of an intent name, for files that do not say it (``"other"`` when unknown).

    Keyword based: TOP v1's navigation and event intents, CSTOP's weather and device intents, and
    TOPv2's domains.

    >>> infer_domain("GET_WEATHER"), infer_domain("IN:GET_EVENT_ATTENDEE"), infer_domain("OPEN_RESOURCE")
    ('weather', 'event', 'device')
    """
    name = intent.removeprefix("IN:").upper()
    for keyword, domain in _DOMAIN_KEYWORDS:
        if keyword in name:
            return domain
    return "other"


@dataclass
class _Layout:
    """Where the columns of a TOP-style file are, learned from its header or its first row."""

    width: int
    parse: int
    names: list[str] | None = None

    def named(self, *keys: str) -> int | None:
        if self.names is None:
            return None
        return next((i for i, n in enumerate(self.names) if any(k in n for k in keys)), None)


def _looks_like_header(fields: list[str]) -> bool:
    """Column names: identifiers (``semantic_parse``), or words with one naming the parse (``Semantic Parse``)."""
    return all(_HEADER_FIELD.fullmatch(f) for f in fields) or (
        any("parse" in f.lower() for f in fields) and all(re.fullmatch(r"[A-Za-z][A-Za-z0-9_ ]*", f) for f in fields)
    )


def _check_slot_spans(
    name: str, number: int, spans_text: str, utterance: str, tree: Tree, slots: list[Span], tokens: list[str]
) -> None:
    """Character spans ``start:end:SL:NAME`` must cover the same words as the parse's top-level slots."""
    declared = []
    for item in spans_text.split(","):
        start, end, label = item.split(":", 2)
        declared.append((int(start), int(end), label.removeprefix("SL:")))
    declared.sort()
    if len(declared) != len(slots):
        raise FormatError(
            name, number, f"as many slot spans as the parse has slots ({len(slots)})", spans_text, "slot_spans"
        )
    for (start, end, label), slot in zip(declared, slots, strict=True):
        words = " ".join(tokens[slot.start : slot.end])
        if not 0 <= start < end <= len(utterance):
            raise FormatError(name, number, f"a slot span inside the utterance of {len(utterance)} characters",
                              f"{start}:{end}", "slot_spans")
        covered = " ".join(utterance[start:end].split())
        if label != slot.label or covered != words:
            raise FormatError(
                name, number, f"slot span {start}:{end}:SL:{label} to agree with the parse's [SL:{slot.label} {words} ]",
                covered, "slot_spans",
            )


def read_semantic_parses(
    source: Source,
    *,
    nested: Literal["flatten", "skip", "error"] = "flatten",
    errors: Errors = "strict",
    skipped: SkippedRecords | None = None,
) -> Iterator[ParseRecord]:
    """Read a TOP-style TSV: one utterance per line, one column holding its bracket parse.

    The layout is recognised, not assumed, because releases differ: TOP v1 has ``raw utterance,
    tokenized utterance, parse``; TOPv2 a header ``domain utterance semantic_parse``; CSTOP's layout
    is undocumented. The parse column is the one starting with ``[IN:`` (or named ``*parse*`` in a
    header); the utterance is the ``utterance`` column or the first other text column; a column of
    character spans ``start:end:SL:NAME,...`` (MTOP style), when present, must agree with the parse,
    and an ``IN:NAME`` column with its intent. The domain comes from a ``domain`` column or, without
    one, from the intent name (:func:`infer_domain`).

    Trees with intents nested inside slots (TOP) do not flatten to slot tags: ``nested="flatten"``
    tags each top-level slot over all its words (``parse`` keeps the full tree), ``"skip"`` drops
    the row and counts it under ``"nested"`` (in either ``errors`` mode), ``"error"`` raises.
    """
    if nested not in ("flatten", "skip", "error"):
        raise ValueError(f"nested must be 'flatten', 'skip' or 'error', got {nested!r}")
    name = source_name(source)
    skipper = Skipper(name, errors, skipped)
    layout: _Layout | None = None
    header: list[str] | None = None
    first = True  # only the first non-empty line may be a header
    for number, text in iter_lines(source, "utf-8"):
        if text is None:
            skipper.handle(undecodable_error(name, number, "UTF-8"))
            continue
        if not text.strip():
            continue
        fields = [f.strip() for f in text.split("\t")]
        if layout is None:
            found = [i for i, f in enumerate(fields) if f.startswith("[")]
            if first and not found and _looks_like_header(fields):
                header = [f.lower() for f in fields]
                logger.info("%s: header %s", name, header)
                first = False
                continue
            first = False
            named = [i for i, n in enumerate(header or []) if "parse" in n]
            if not named and not found:
                skipper.handle(FormatError(name, number, "a tab-separated column holding a parse such as "
                                           "'[IN:GET_WEATHER ... ]'", text, "columns"))
                continue
            layout = _Layout(len(header or fields), (named or found)[0], header)
        try:
            yield _parse_row(name, number, text, fields, layout, nested)
        except FormatError as error:
            if error.reason == "nested" and nested == "skip":
                skipper.skipped.add(error)  # asked for: counted whatever ``errors`` says
            else:
                skipper.handle(error)
    skipper.finish()


def _parse_row(name: str, number: int, text: str, fields: list[str], layout: _Layout, nested: str) -> ParseRecord:
    if len(fields) != layout.width:
        raise FormatError(name, number, f"{layout.width} tab-separated columns", text, "columns")
    parse_text = fields[layout.parse]
    if not parse_text.startswith("["):
        raise FormatError(name, number, f"a bracket parse in column {layout.parse + 1}", parse_text, "parse")
    try:
        tree = parse(parse_text)
    except ParseError as error:
        raise FormatError(name, number, "a well-formed bracket parse", str(error), "parse") from None
    if tree.kind != "IN":
        raise FormatError(name, number, "a parse whose root is an intent '[IN:'", parse_text, "parse")
    try:
        flat = to_flat(tree)
        tokens, slots = flat.tokens, flat.slots
    except TreeTooDeepError:
        if nested != "flatten":
            raise FormatError(name, number, "a parse without intents nested in slots", parse_text, "nested") from None
        flat, _ = flatten_top_level(tree)
        tokens, slots = flat.tokens, flat.slots
    except ValueError as error:  # an empty slot
        raise FormatError(name, number, "a parse whose slots hold words", str(error), "parse") from None

    domain_at = layout.named("domain")
    utterance_at = layout.named("utterance", "text", "raw")
    spans_at = layout.named("slot")
    intent_at = layout.named("intent")
    if layout.names is None:
        spans_at = next((i for i, f in enumerate(fields) if i != layout.parse and _SLOT_SPANS.fullmatch(f)), None)
        intent_at = next((i for i, f in enumerate(fields) if i != layout.parse and _INTENT_COLUMN.fullmatch(f)), None)
    if utterance_at is None:
        taken = {layout.parse, spans_at, intent_at, domain_at}
        utterance_at = next((i for i, f in enumerate(fields) if i not in taken and f and not f.isdigit()), None)
    utterance = fields[utterance_at] if utterance_at is not None else " ".join(tokens)
    if intent_at is not None and fields[intent_at].removeprefix("IN:") != tree.name:
        raise FormatError(name, number, f"the intent column to agree with the parse's IN:{tree.name}",
                          fields[intent_at], "intent")
    if spans_at is not None and fields[spans_at]:
        if not _SLOT_SPANS.fullmatch(fields[spans_at]):
            raise FormatError(name, number, "slot spans as 'start:end:SL:NAME,...'", fields[spans_at], "slot_spans")
        _check_slot_spans(name, number, fields[spans_at], utterance, tree, slots, tokens)
    domain = fields[domain_at].lower() if domain_at is not None and fields[domain_at] else infer_domain(tree.name)
    return ParseRecord(
        utterance=utterance,
        tokens=tokens,
        intent=tree.name,
        slot_tags=spans_to_tags(slots, len(tokens)),
        parse=str(tree),
        domain=domain,
        line=number,
    )
