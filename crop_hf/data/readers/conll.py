"""Readers of the CoNLL family: CoNLL-2002/2003 columns, NoDaLiDa's BIOES, NorNE's CoNLL-U, PAN-X, Europarl-NER.

Each yields one :class:`TaggedSentence` per sentence with IOB2 tags, whatever scheme the release
used; entity types are renamed with a ``label_map`` and checked against a label set.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import NamedTuple

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
from crop_hf.labels import (
    CONLL_LABELS,
    PANX_LABELS,
    LabelSet,
    TagScheme,
    bioes_to_iob2,
    iob1_to_iob2,
    split_tag,
)

__all__ = [
    "NODALIDA_TYPE_MAP",
    "NORNE_TYPE_MAP",
    "TaggedSentence",
    "read_bioes",
    "read_conll",
    "read_conllu_ner",
    "read_europarl_ner",
    "read_panx",
]

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


class TaggedSentence(NamedTuple):
    """One sentence: tokens, IOB2 tags, the 1-based line of its first token, and its language if the file says."""

    tokens: list[str]
    tags: list[str]
    line: int
    lang: str | None = None


# --------------------------------------------------------------------------- tags


def _to_iob2(
    name: str,
    tags: list[str],
    lines: list[int],
    scheme: TagScheme,
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

    def __init__(self, name: str, skipper: Skipper, scheme: TagScheme, label_map, label_set: LabelSet | None) -> None:
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

    def undecodable(self, number: int, encoding: str) -> None:
        """A line of the sentence could not be decoded: the sentence is broken (once)."""
        if self.broken is None:
            self.fail(undecodable_error(self.name, number, encoding))

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

    def sentences(self, lines: Iterable[tuple[int, str | None]], encoding: str, read_line: Callable[[int, str], None],
                  ends: Callable[[str], bool] = lambda text: not text.strip()) -> Iterator[TaggedSentence]:
        """The sentences of ``lines`` (``iter_lines``): a line that ``ends`` says ends one (a blank line), or
        the end of the file, finishes the sentence; ``read_line(number, text)`` reads every other line of a
        sentence not already broken into the buffer. The readers below differ only in their lines."""
        for number, text in lines:
            if text is None:
                self.undecodable(number, encoding)
            elif ends(text):
                if (sentence := self.flush()) is not None:
                    yield sentence
            elif self.broken is None:
                read_line(number, text)
        if (sentence := self.flush()) is not None:
            yield sentence
        self.skipper.finish()


# --------------------------------------------------------------------------- CoNLL columns


def read_conll(
    source: Source,
    *,
    scheme: TagScheme = "IOB2",
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
    skipper = Skipper(name, errors, skipped)
    buffer = _SentenceBuffer(name, skipper, scheme, label_map, label_set)
    columns = f"{min_columns}" if min_columns == max_columns else f"{min_columns} to {max_columns}"

    def fields_of(text: str) -> list[str]:
        if separator is None:
            return text.split()
        stripped = text.strip()
        return [f.strip() for f in stripped.split(separator)] if stripped else []

    def read_line(number: int, text: str) -> None:
        fields = fields_of(text)
        if not min_columns <= len(fields) <= max_columns or (separator is not None and not all(fields)):
            buffer.fail(FormatError(name, number, f"{columns} non-empty columns with the tag last", text, "columns"))
        else:
            buffer.add(fields[token_column], fields[-1], number)

    def ends(text: str) -> bool:  # a blank line, or a -DOCSTART- line between documents
        fields = fields_of(text)
        return not fields or fields[0] == "-DOCSTART-"

    yield from buffer.sentences(iter_lines(source, encoding), encoding, read_line, ends)


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


def read_europarl_ner(
    source: Source,
    *,
    label_map: Mapping[str, str | None] | None = None,
    label_set: LabelSet | None = CONLL_LABELS,
    errors: Errors = "strict",
    skipped: SkippedRecords | None = None,
) -> Iterator[TaggedSentence]:
    """Read a Europarl-NER release file (Agerri et al., 2018): ``token<TAB>tag``, UTF-8, IOB2, blank lines between sentences.

    Exactly two tab-separated columns per line (a token never holds a tab); no ``-DOCSTART-``
    lines. Sentence *k* of ``en-europarl.test.conll02`` is the translation of sentence *k* of
    ``de-europarl.test.conll02`` (and of the ``es`` and ``it`` files), each tagged by hand.
    """
    return read_conll(
        source,
        scheme="IOB2",
        label_map=label_map,
        label_set=label_set,
        encoding="utf-8",
        separator="\t",
        min_columns=2,
        max_columns=2,
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
    skipper = Skipper(name, errors, skipped)
    buffer = _SentenceBuffer(name, skipper, "IOB2", label_map, label_set)
    prefix = f"{misc_key}="

    def read_line(number: int, text: str) -> None:
        if text.startswith("#"):
            return
        fields = text.rstrip().split("\t")
        if len(fields) != 10:
            buffer.fail(FormatError(name, number, "10 tab-separated CoNLL-U columns", text, "columns"))
        elif "-" not in fields[0] and "." not in fields[0]:
            tag = next((item[len(prefix) :] for item in fields[9].split("|") if item.startswith(prefix)), None)
            if tag is None:
                buffer.fail(FormatError(name, number, f"a '{prefix}' entry in the MISC column", fields[9], "tag"))
            else:
                buffer.add(fields[1], tag, number)

    yield from buffer.sentences(iter_lines(source, "utf-8"), "UTF-8", read_line)


# --------------------------------------------------------------------------- PAN-X


def read_panx(
    source: Source,
    *,
    label_set: LabelSet | None = PANX_LABELS,
    errors: Errors = "strict",
    skipped: SkippedRecords | None = None,
) -> Iterator[TaggedSentence]:
    """Read PAN-X / WikiANN as XTREME ships it: ``lang:token<TAB>TAG``, blank lines between sentences.

    Only the first colon separates the language, so ``de:3:57,22`` is the token ``3:57,22``, and
    only the last tab the tag, so a token may hold a tab.
    """
    name = source_name(source)
    skipper = Skipper(name, errors, skipped)
    buffer = _SentenceBuffer(name, skipper, "IOB2", None, label_set)

    def read_line(number: int, text: str) -> None:
        body, tab, tag = text.strip().rpartition("\t")
        token_lang, colon, token = body.partition(":")
        if not tab or not colon or not token or not token_lang or not tag.strip():
            buffer.fail(FormatError(name, number, "'lang:token<TAB>TAG'", text, "columns"))
        elif buffer.lang is not None and token_lang != buffer.lang:
            buffer.fail(FormatError(name, number, f"the language prefix '{buffer.lang}:' of the sentence", text, "lang"))
        else:
            buffer.lang = token_lang
            buffer.add(token, tag.strip(), number)

    yield from buffer.sentences(iter_lines(source, "utf-8"), "UTF-8", read_line)

