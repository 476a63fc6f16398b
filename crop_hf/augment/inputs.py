"""English bracket parses in, from a TSV file, a source spec or a ``datasets.Dataset``, each with where it came from.

:func:`iter_parse_inputs` yields one :class:`ParseInput` per record without judging it (an
unparsable parse, an empty utterance and a nested tree all come through), so that the
augmentation that reads it can drop it *with a counted reason and its line* instead of crashing;
:func:`read_parse` does the judging.

A TSV file: the parse column is the one named ``parse_column`` (header) or, by default, ``en_parse``
or the first column whose header contains ``parse``, or, without a header, the first field
starting with ``[``. The utterance is ``utterance_column`` or the first of ``en_query``,
``en_utterance``, ``utterance``, ``query``, ``text``; without a header, the first other non-empty
field. Without an utterance the words of the parse are used.

``#en`` after a file, a folder or a spec (as train-parser and evaluate-projection take it) names
the side of a parallel corpus to read: the parse is then ``en_parse`` and the utterance the first
of ``en_query``, ``en_utterance`` (:func:`~crop_hf.data.sources.split_side`).

A builder spec validates its release itself (it stops at a malformed row, naming file and line,
or skips it with ``?skip_bad_records=true``); nested trees come through (``parse`` keeps them) and
are dropped here as ``nested_source``.

>>> import tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "en.tsv")
>>> _ = open(path, "w").write("Pause my timer\\t[IN:PAUSE_TIMER Pause my [SL:METHOD_TIMER timer ] ]\\n[IN:BROKEN\\n")
>>> [(item.where, item.utterance) for item in iter_parse_inputs(path)]
[('en.tsv:1', 'Pause my timer'), ('en.tsv:2', None)]
>>> read_parse(next(iter_parse_inputs(path))).slots
[Span(start=2, end=3, label='METHOD_TIMER')]
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crop_hf.data import sources
from crop_hf.data.readers import iter_lines
from crop_hf.seqlogical import FlatParse, ParseError, flatten_top_level, parse

__all__ = ["BadParse", "ParseInput", "iter_parse_inputs", "read_parse"]

_UTTERANCE_COLUMNS = ("en_query", "en_utterance", "utterance", "query", "text")
_UNDECODABLE = "<undecodable line>"
_PARSE_COLUMNS = ("en_parse", "parse", "semantic_parse", "seqlogical")


@dataclass
class ParseInput:
    """One English record as read: its parse text, its utterance (``None``: the parse's words) and where it was."""

    parse: str
    utterance: str | None
    where: str  # "file.tsv:12" or "train:41" (split and row)
    domain: str | None = None


class BadParse(ValueError):
    """A record that cannot be augmented; ``reason`` is its counted drop reason."""

    def __init__(self, reason: str, item: ParseInput, message: str) -> None:
        self.reason = reason
        super().__init__(f"{item.where}: {message}: {item.parse!r}")


def read_parse(item: ParseInput) -> FlatParse:
    """The flat parse of ``item``, or :class:`BadParse` with reason ``invalid_source`` (not a valid
    tree, an empty slot), ``nested_source`` (a slot holding an intent: its slots could not be
    projected without losing the nested ones) or ``empty_utterance``."""
    if item.parse is _UNDECODABLE:
        raise BadParse("invalid_source", item, "the line is not valid UTF-8")
    try:
        tree = parse(item.parse)
    except ParseError as error:
        raise BadParse("invalid_source", item, f"not a bracket parse ({str(error).splitlines()[0]})") from None
    if tree.kind != "IN":
        raise BadParse("invalid_source", item, "the root of a parse must be an intent")
    try:
        flat, nested = flatten_top_level(tree)
    except ValueError as error:  # an empty slot
        raise BadParse("invalid_source", item, str(error)) from None
    if nested:
        raise BadParse("nested_source", item, "a slot holds a nested intent")
    if not flat.tokens or (item.utterance is not None and not item.utterance.strip()):
        raise BadParse("empty_utterance", item, "the utterance is empty")
    return flat


def _looks_like_header(fields: list[str]) -> bool:
    return not any(f.startswith("[") for f in fields) and all(f and " " not in f for f in fields)


def _defaults(side: str | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The parse and utterance columns looked for, in order: a side's own (``en_parse``), else the usual ones."""
    if side is None:
        return _PARSE_COLUMNS, _UTTERANCE_COLUMNS
    return (f"{side}_parse",), (f"{side}_query", f"{side}_utterance")


def _iter_tsv(path: Path, parse_column: str | None, utterance_column: str | None,
              side: str | None = None) -> Iterator[ParseInput]:
    parse_defaults, utterance_defaults = _defaults(side)
    names: list[str] | None = None
    first = True
    for number, text in iter_lines(str(path), "utf-8"):
        where = f"{path.name}:{number}"
        if text is None:  # undecodable: the parse text says so, and read_parse drops it as invalid
            yield ParseInput(_UNDECODABLE, None, where)
            continue
        if not text.strip():
            continue
        fields = [f.strip() for f in text.split("\t")]
        if first:
            first = False
            if _looks_like_header(fields):
                names = [f.lower() for f in fields]
                for wanted in (parse_column, utterance_column):
                    if wanted and wanted.lower() not in names:
                        raise ValueError(f"{path}:{number}: no column {wanted!r} in the header {names}")
                continue
        if names is not None:
            parse_at = _column(names, parse_column, parse_defaults)
            if parse_at is None and side is None:
                parse_at = next((i for i, n in enumerate(names) if "parse" in n), None)
            utterance_at = _column(names, utterance_column, utterance_defaults)
            domain_at = _column(names, None, ("domain",))
        else:
            parse_at = next((i for i, f in enumerate(fields) if f.startswith("[")), None)
            utterance_at = next((i for i, f in enumerate(fields)
                                 if i != parse_at and f and not f.startswith("[") and not f.isdigit()), None)
            domain_at = None
        if parse_at is None or parse_at >= len(fields):
            yield ParseInput(text, None, where)  # no parse column: dropped as invalid_source, with the line
            continue
        yield ParseInput(fields[parse_at], _get(fields, utterance_at), where, _get(fields, domain_at))


def _column(names: list[str], wanted: str | None, defaults: tuple[str, ...]) -> int | None:
    for name in ([wanted.lower()] if wanted else defaults):
        if name in names:
            return names.index(name)
    return None


def _get(fields: list[str], index: int | None) -> str | None:
    return fields[index] if index is not None and index < len(fields) else None


def _iter_dataset(dataset: Any, split: str, parse_column: str | None, utterance_column: str | None,
                  side: str | None = None) -> Iterator[ParseInput]:
    columns = dataset.column_names
    parse_defaults, utterance_defaults = _defaults(side)
    parse_name = parse_column or next((c for c in parse_defaults if c in columns), None)
    if parse_name is None or parse_name not in columns:
        raise ValueError(f"no parse column ({parse_column or ' or '.join(parse_defaults)}) among {columns}")
    utterance_name = utterance_column or next((c for c in utterance_defaults if c in columns), None)
    if utterance_column and utterance_column not in columns:
        raise ValueError(f"no column {utterance_column!r} among {columns}")
    for row_index, row in enumerate(dataset):
        yield ParseInput(row[parse_name] or "", row[utterance_name] if utterance_name else None,
                         f"{split}:{row_index}", row.get("domain"))


def iter_parse_inputs(source: Any, *, split: str = "train", parse_column: str | None = None,
                      utterance_column: str | None = None, option: str | None = None) -> Iterator[ParseInput]:
    """Every English record of ``source``: a TSV path, a source spec (``hinglish_top?data_dir=...``,
    ``cstop?...``, ``disk:...``), or a ``datasets.Dataset``/``DatasetDict`` (``split`` picks one).

    A file that does not exist (:func:`~crop_hf.data.sources.names_a_file`) is a ``FileNotFoundError``
    naming ``option`` (``"--input"``), not a dataset looked up on the Hub. ``#en`` after a path or a
    spec reads that side's columns (``en_parse``, ``en_query``), the same after a file as after a folder.
    """
    side = None
    if isinstance(source, (str, os.PathLike)) and not Path(source).exists():
        source, side = sources.split_side(str(source))  # a path that is there is never cut
    if isinstance(source, (str, os.PathLike)) and Path(source).is_file():
        yield from _iter_tsv(Path(source), parse_column, utterance_column, side)
        return
    if isinstance(source, (str, os.PathLike)) and not Path(source).exists() and sources.names_a_file(source):
        raise FileNotFoundError(f"{option + ': ' if option else ''}no file {source}")
    if isinstance(source, (str, os.PathLike)):
        source = sources.load_spec(str(source))
    columns = getattr(source, "column_names", None)
    if isinstance(columns, dict):  # a DatasetDict: one split
        if split not in source:
            raise ValueError(f"no split {split!r}; the corpus has {sorted(source)}")
        source = source[split]
    elif columns is None:
        raise TypeError(f"cannot read English parses from {type(source).__name__}")
    yield from _iter_dataset(source, split, parse_column, utterance_column, side)
