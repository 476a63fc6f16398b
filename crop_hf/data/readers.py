"""Streaming readers for the original releases of the corpora crop-hf builds.

Each reader takes a path (or a ``(name, binary file)`` pair, as ``datasets``' ``iter_archive``
yields them), reads it line by line and yields one record per sentence or utterance; no reader
holds a whole file in memory. Tags come out in IOB2 whatever the release used.

Malformed input raises :class:`FormatError`, which names the file, the line and what was expected.
With ``errors="skip"`` the broken record (the whole sentence or row) is dropped instead, counted by
reason in a :class:`SkippedRecords` (pass one to read the counts) and logged as a warning at the end:
nothing is dropped silently.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "eng.train"
>>> _ = path.write_text("-DOCSTART- -X- O O\\n\\nEU NNP I-NP I-ORG\\nrejects VBZ I-VP O\\n")
>>> next(read_conll(path, scheme="IOB1"))
TaggedSentence(tokens=['EU', 'rejects'], tags=['B-ORG', 'O'], line=3, lang=None)
"""

from __future__ import annotations

import logging
import os
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import BinaryIO, Literal, NamedTuple

from crop_hf.labels import (
    CONLL_LABELS,
    PANX_LABELS,
    LabelSet,
    Span,
    bioes_to_iob2,
    iob1_to_iob2,
    spans_to_tags,
    split_tag,
)
from crop_hf.seqlogical import ParseError, Tree, TreeTooDeepError, parse, to_flat

__all__ = [
    "NODALIDA_TYPE_MAP",
    "NORNE_TYPE_MAP",
    "FormatError",
    "ParseRecord",
    "SkippedRecords",
    "TaggedSentence",
    "infer_domain",
    "iter_lines",
    "read_bioes",
    "read_conll",
    "read_conllu_ner",
    "read_panx",
    "read_semantic_parses",
]

logger = logging.getLogger(__name__)

#: A file on disk, or ``(name, binary file object)`` as yielded by ``dl_manager.iter_archive``.
Source = str | os.PathLike | tuple[str, BinaryIO]
Errors = Literal["strict", "skip"]
Scheme = Literal["IOB1", "IOB2", "BIOES"]

#: NorNE's nine types onto the four CoNLL types. GPE_* keep their sense (LOC or ORG); products,
#: events and derived names ("norsk") are what CoNLL annotates as MISC.
NORNE_TYPE_MAP: dict[str, str | None] = {
    "PER": "PER",
    "ORG": "ORG",
    "LOC": "LOC",
    "GPE_LOC": "LOC",
    "GPE_ORG": "ORG",
    "PROD": "MISC",
    "EVT": "MISC",
    "DRV": "MISC",
    "MISC": "MISC",
}
#: NoDaLiDa-2019 (Johansen) types onto CoNLL types, as UniTrans and CroP used them.
NODALIDA_TYPE_MAP: dict[str, str | None] = {"PRS": "PER", "ORG": "ORG", "GEO": "LOC", "OTH": "MISC"}


class FormatError(ValueError):
    """Malformed input: ``path``, 1-based ``line``, what was ``expected`` and what was ``found``.

    ``reason`` is a short key (``"columns"``, ``"tag"``, ``"parse"``, ...) under which
    :class:`SkippedRecords` counts the record when errors are skipped.
    """

    def __init__(self, path: str, line: int, expected: str, found: str | None = None, reason: str = "format") -> None:
        self.path = path
        self.line = line
        self.expected = expected
        self.found = found
        self.reason = reason
        message = f"{path}:{line}: expected {expected}"
        if found is not None:
            message += f", found {found!r}"
        super().__init__(message)


@dataclass
class SkippedRecords:
    """Counts of records dropped by ``errors="skip"``, by reason, with the first few errors.

    >>> skipped = SkippedRecords()
    >>> skipped.add(FormatError("a.tsv", 3, "3 columns", "x", reason="columns"))
    >>> skipped.total, dict(skipped.counts)
    (1, {'columns': 1})
    """

    counts: Counter = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)
    max_examples: int = 5
    #: the files the skipped records came from
    files: set[str] = field(default_factory=set)

    def add(self, error: FormatError) -> None:
        self.counts[error.reason] += 1
        self.files.add(error.path)
        if len(self.examples) < self.max_examples:
            self.examples.append(str(error))

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def __str__(self) -> str:
        if not self.total:
            return "no records skipped"
        reasons = ", ".join(f"{count} {reason}" for reason, count in self.counts.most_common())
        return f"{self.total} skipped ({reasons}); first: " + " | ".join(self.examples)


class TaggedSentence(NamedTuple):
    """One sentence: tokens, IOB2 tags, the 1-based line of its first token, and its language if the file says."""

    tokens: list[str]
    tags: list[str]
    line: int
    lang: str | None = None


@dataclass
class ParseRecord:
    """One utterance of a TOP-style file, flattened for joint intent + slot tagging.

    ``parse`` is the bracket parse as written (normalised spacing); ``slot_tags`` are IOB2 over the
    parse's top-level slots, aligned with ``tokens`` (the words of the parse).
    """

    utterance: str
    tokens: list[str]
    intent: str
    slot_tags: list[str]
    parse: str
    domain: str
    line: int


# --------------------------------------------------------------------------- lines


def source_name(source: Source) -> str:
    """The name errors use for ``source``."""
    if isinstance(source, tuple):
        return str(source[0])
    return os.fspath(source)


def iter_lines(source: Source, encoding: str = "auto") -> Iterator[tuple[int, str | None]]:
    """Yield ``(line_number, text)`` for each line, without its line end.

    ``text`` is ``None`` for a line that cannot be decoded with ``encoding``; readers turn it into
    a :class:`FormatError` (reason ``"encoding"``) naming the file and line, never a raw
    ``UnicodeDecodeError``.

    Reads bytes and decodes line by line, so a file's encoding may be decided per line:
    ``encoding="auto"`` decodes UTF-8 and falls back to ISO-8859-1 for a line that is not valid
    UTF-8 (CoNLL-2002 circulates in both; Latin-1 text is valid UTF-8 only by accident, as in
    ``"Ã©"``). A UTF-8 byte-order mark on the first line is dropped; ``\\r\\n`` ends are accepted.
    Splitting on ``\\n`` only (not ``str.splitlines``) keeps U+0085 and other separators inside tokens.
    """
    if isinstance(source, tuple):
        yield from _decode_lines(source[1], encoding)
        return
    path = os.fspath(source)
    if "://" in path:
        # URLs and chained paths (zip://...::https://...) in streaming mode.
        from datasets.utils.file_utils import xopen

        with xopen(path, "rb") as handle:
            yield from _decode_lines(handle, encoding)
    else:
        with open(path, "rb") as handle:
            yield from _decode_lines(handle, encoding)


def _decode_lines(handle: BinaryIO, encoding: str) -> Iterator[tuple[int, str | None]]:
    for number, raw in enumerate(handle, start=1):
        if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        raw = raw.rstrip(b"\r\n")
        if encoding == "auto":
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                text = raw.decode("iso-8859-1")
        else:
            try:
                text = raw.decode(encoding)
            except UnicodeDecodeError:
                text = None  # the reader reports it as a FormatError naming file and line
        yield number, text


def _undecodable(name: str, number: int, encoding: str) -> FormatError:
    return FormatError(name, number, f"text in {encoding}", reason="encoding")


class _Skipper:
    """Raises or counts a :class:`FormatError` according to ``errors``; logs the total at the end."""

    def __init__(self, name: str, errors: Errors, skipped: SkippedRecords | None) -> None:
        if errors not in ("strict", "skip"):
            raise ValueError(f"errors must be 'strict' or 'skip', got {errors!r}")
        self.name = name
        self.errors = errors
        self.skipped = skipped if skipped is not None else SkippedRecords()
        self.start_total = self.skipped.total

    def handle(self, error: FormatError) -> None:
        if self.errors == "strict":
            raise error
        self.skipped.add(error)

    def defer(self, error: FormatError) -> FormatError:
        """Raise now in strict mode; otherwise return ``error`` to count once the record ends."""
        if self.errors == "strict":
            raise error
        return error

    def finish(self) -> None:
        dropped = self.skipped.total - self.start_total
        if dropped:
            logger.warning("%s: skipped %d malformed records; so far %s", self.name, dropped, self.skipped)


# --------------------------------------------------------------------------- tags


def _to_iob2(
    name: str,
    tags: list[str],
    lines: list[int],
    scheme: Scheme,
    label_map: Mapping[str, str | None] | None,
    label_set: LabelSet | None,
) -> list[str]:
    """Validate raw tags, convert them to IOB2, map their types; errors name the token's line."""
    if scheme == "IOB2" and label_map is None and label_set is not None:
        known = label_set.label2id
        if all(tag in known for tag in tags):  # the common case: nothing to convert or report
            return tags
    for tag, line in zip(tags, lines, strict=True):
        try:
            prefix, entity_type = split_tag(tag)
        except ValueError:
            raise FormatError(name, line, "a tag such as 'O', 'B-PER' or 'I-PER' in the last column", tag, "tag") from None
        if prefix in {"E", "S"} and scheme != "BIOES":
            raise FormatError(name, line, f"an {scheme} tag (prefix B or I)", tag, "tag")
        if label_map is not None and entity_type is not None and entity_type not in label_map:
            raise FormatError(name, line, f"an entity type among {', '.join(label_map)}", tag, "label")
    if scheme == "IOB1":
        tags = iob1_to_iob2(tags)
    elif scheme == "BIOES":
        tags = bioes_to_iob2(tags)
    elif scheme != "IOB2":
        raise ValueError(f"unknown tag scheme {scheme!r}; expected IOB1, IOB2 or BIOES")
    if label_map is not None:
        # Tag by tag is exact in IOB2: every entity starts with B-, so merging two types never joins entities.
        mapped = []
        for tag in tags:
            prefix, entity_type = split_tag(tag)
            if entity_type is None:
                mapped.append(tag)
                continue
            target = label_map[entity_type]
            mapped.append("O" if target is None else f"{prefix}-{target}")
        tags = mapped
    if label_set is not None:
        known = label_set.label2id
        for tag, line in zip(tags, lines, strict=True):
            if tag not in known:
                raise FormatError(name, line, f"a tag among {', '.join(label_set.names)}", tag, "label")
    return tags


class _SentenceBuffer:
    """Token lines of the sentence being read; a bad line marks the whole sentence for skipping."""

    def __init__(self, name: str, skipper: _Skipper, scheme: Scheme, label_map, label_set: LabelSet | None) -> None:
        self.name, self.skipper = name, skipper
        self.scheme, self.label_map, self.label_set = scheme, label_map, label_set
        self.tokens: list[str] = []
        self.tags: list[str] = []
        self.lines: list[int] = []
        self.lang: str | None = None
        self.broken: FormatError | None = None

    def add(self, token: str, tag: str, line: int) -> None:
        self.tokens.append(token)
        self.tags.append(tag)
        self.lines.append(line)

    def fail(self, error: FormatError) -> None:
        self.broken = self.skipper.defer(error)

    def flush(self) -> TaggedSentence | None:
        """The finished sentence (``None`` for none or a skipped one); the buffer starts afresh."""
        tokens, tags, lines, lang, broken = self.tokens, self.tags, self.lines, self.lang, self.broken
        self.tokens, self.tags, self.lines, self.lang, self.broken = [], [], [], None, None
        if broken is not None:
            self.skipper.skipped.add(broken)
            return None
        if not tokens:
            return None
        try:
            converted = _to_iob2(self.name, tags, lines, self.scheme, self.label_map, self.label_set)
        except FormatError as error:
            self.skipper.handle(error)
            return None
        return TaggedSentence(tokens, converted, lines[0], lang)


# --------------------------------------------------------------------------- CoNLL columns


def read_conll(
    source: Source,
    *,
    scheme: Scheme = "IOB2",
    label_map: Mapping[str, str | None] | None = None,
    label_set: LabelSet | None = CONLL_LABELS,
    encoding: str = "auto",
    separator: str | None = None,
    min_columns: int = 2,
    max_columns: int = 5,
    token_column: int = 0,
    errors: Errors = "strict",
    skipped: SkippedRecords | None = None,
) -> Iterator[TaggedSentence]:
    """Read a CoNLL column file: a token per line, the NER tag in the last column, blank lines between sentences.

    Covers CoNLL-2002 (2 or 3 columns, Latin-1 or UTF-8), CoNLL-2003 (4 columns, 5 for German; IOB1:
    pass ``scheme="IOB1"``) and NoDaLiDa's ``.bioes`` (see :func:`read_bioes`). ``-DOCSTART-`` lines
    separate documents and are not sentences. ``separator=None`` splits on any whitespace (CoNLL's
    files use spaces); pass ``"\\t"`` for tab-separated files whose words may hold spaces.
    ``label_map`` renames entity types (``None`` drops an entity to ``O``); ``label_set`` checks the
    result (``None`` accepts any type). The column count may vary between lines (CoNLL-2002 Dutch
    has 2-column lines among 3-column ones): only the range is checked.
    """
    name = source_name(source)
    skipper = _Skipper(name, errors, skipped)
    buffer = _SentenceBuffer(name, skipper, scheme, label_map, label_set)
    columns = f"{min_columns}" if min_columns == max_columns else f"{min_columns} to {max_columns}"
    for number, text in iter_lines(source, encoding):
        if text is None:
            if buffer.broken is None:
                buffer.fail(_undecodable(name, number, encoding))
            continue
        if separator is None:
            fields = text.split()
        else:
            stripped = text.strip()
            fields = [f.strip() for f in stripped.split(separator)] if stripped else []
        if not fields or fields[0] == "-DOCSTART-":
            sentence = buffer.flush()
            if sentence is not None:
                yield sentence
        elif buffer.broken is not None:
            continue
        elif not min_columns <= len(fields) <= max_columns or (separator is not None and not all(fields)):
            buffer.fail(FormatError(name, number, f"{columns} non-empty columns with the tag last", text, "columns"))
        else:
            buffer.add(fields[token_column], fields[-1], number)
    sentence = buffer.flush()
    if sentence is not None:
        yield sentence
    skipper.finish()


def read_bioes(
    source: Source,
    *,
    label_map: Mapping[str, str | None] | None = NODALIDA_TYPE_MAP,
    label_set: LabelSet | None = CONLL_LABELS,
    errors: Errors = "strict",
    skipped: SkippedRecords | None = None,
) -> Iterator[TaggedSentence]:
    """Read the NoDaLiDa-2019 ``.bioes`` release: tab-separated ``idx word lemma UPOS tag``, BIOES.

    Types GEO ORG OTH PRS map to CoNLL's with :data:`NODALIDA_TYPE_MAP` unless ``label_map`` says otherwise.
    """
    return read_conll(
        source,
        scheme="BIOES",
        label_map=label_map,
        label_set=label_set,
        separator="\t",
        min_columns=5,
        max_columns=5,
        token_column=1,
        errors=errors,
        skipped=skipped,
    )


# --------------------------------------------------------------------------- CoNLL-U (NorNE)


def read_conllu_ner(
    source: Source,
    *,
    misc_key: str = "name",
    label_map: Mapping[str, str | None] | None = NORNE_TYPE_MAP,
    label_set: LabelSet | None = CONLL_LABELS,
    errors: Errors = "strict",
    skipped: SkippedRecords | None = None,
) -> Iterator[TaggedSentence]:
    """Read NorNE's CoNLL-U files: the IOB2 tag sits in MISC as ``name=B-PER``, among other keys.

    Multiword-token lines (``3-4``) and empty nodes (``5.1``) are not words of the sentence and are
    passed over. Types map with :data:`NORNE_TYPE_MAP` unless ``label_map`` says otherwise.
    """
    name = source_name(source)
    skipper = _Skipper(name, errors, skipped)
    buffer = _SentenceBuffer(name, skipper, "IOB2", label_map, label_set)
    prefix = f"{misc_key}="
    for number, text in iter_lines(source, "utf-8"):
        if text is None:
            if buffer.broken is None:
                buffer.fail(_undecodable(name, number, "UTF-8"))
            continue
        if not text.strip():
            sentence = buffer.flush()
            if sentence is not None:
                yield sentence
            continue
        if text.startswith("#") or buffer.broken is not None:
            continue
        fields = text.rstrip().split("\t")
        if len(fields) != 10:
            buffer.fail(FormatError(name, number, "10 tab-separated CoNLL-U columns", text, "columns"))
        elif "-" in fields[0] or "." in fields[0]:
            continue
        else:
            tag = next((item[len(prefix) :] for item in fields[9].split("|") if item.startswith(prefix)), None)
            if tag is None:
                buffer.fail(FormatError(name, number, f"a '{prefix}' entry in the MISC column", fields[9], "tag"))
            else:
                buffer.add(fields[1], tag, number)
    sentence = buffer.flush()
    if sentence is not None:
        yield sentence
    skipper.finish()


# --------------------------------------------------------------------------- PAN-X


def read_panx(
    source: Source,
    *,
    label_set: LabelSet | None = PANX_LABELS,
    errors: Errors = "strict",
    skipped: SkippedRecords | None = None,
) -> Iterator[TaggedSentence]:
    """Read PAN-X / WikiANN as XTREME ships it: ``lang:token<TAB>TAG``, blank lines between sentences.

    Only the first colon separates the language, so ``de:3:57,22`` is the token ``3:57,22``.
    """
    name = source_name(source)
    skipper = _Skipper(name, errors, skipped)
    buffer = _SentenceBuffer(name, skipper, "IOB2", None, label_set)
    for number, text in iter_lines(source, "utf-8"):
        if text is None:
            if buffer.broken is None:
                buffer.fail(_undecodable(name, number, "UTF-8"))
            continue
        if not text.strip():
            sentence = buffer.flush()
            if sentence is not None:
                yield sentence
            continue
        if buffer.broken is not None:
            continue
        body, tab, tag = text.strip().rpartition("\t")
        token_lang, colon, token = body.partition(":")
        if not tab or not colon or not token or not token_lang or not tag.strip():
            buffer.fail(FormatError(name, number, "'lang:token<TAB>TAG'", text, "columns"))
        elif buffer.lang is not None and token_lang != buffer.lang:
            buffer.fail(FormatError(name, number, f"the language prefix '{buffer.lang}:' of the sentence", text, "lang"))
        else:
            buffer.lang = token_lang
            buffer.add(token, tag.strip(), number)
    sentence = buffer.flush()
    if sentence is not None:
        yield sentence
    skipper.finish()


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


def _top_level_flat(tree: Tree) -> tuple[list[str], list[Span]]:
    """Tokens and top-level slot spans of a nested tree (a slot spans every word under it)."""
    tokens: list[str] = []
    slots: list[Span] = []
    for child in tree.children:
        if isinstance(child, str):
            tokens.append(child)
        else:
            words = child.tokens
            slots.append(Span(len(tokens), len(tokens) + len(words), child.name))
            tokens.extend(words)
    return tokens, slots


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
    skipper = _Skipper(name, errors, skipped)
    layout: _Layout | None = None
    header: list[str] | None = None
    first = True  # only the first non-empty line may be a header
    for number, text in iter_lines(source, "utf-8"):
        if text is None:
            skipper.handle(_undecodable(name, number, "UTF-8"))
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
        tokens, slots = _top_level_flat(tree)
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
