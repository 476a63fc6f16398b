"""Raw target-language sentences for synthesis, streamed one at a time."""

from __future__ import annotations

import codecs
import itertools
import logging
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from crop_hf.data import BUILDERS, load_dataset
from crop_hf.data.sources import parse_source_spec
from crop_hf.engine.records import DropTally
from crop_hf.errors import UnreachableError, UserError, offline_mode

logger = logging.getLogger(__name__)

__all__ = ["UndecodableLine", "iter_raw_sentences"]


class UndecodableLine(str):
    """Stands in a sentence stream for a line that does not decode (``--encoding``), so that it is dropped and counted.

    It is an empty string (nothing of the broken line is guessed at) that knows where it came
    from; synthesis drops it with the reason ``undecodable``.
    """

    where: str

    def __new__(cls, where: str) -> UndecodableLine:
        line = super().__new__(cls, "")
        line.where = where
        return line


#: how many line numbers the summary of a file's undecodable lines lists
SHOWN_LINES = 5


def _read_lines(path: Path, strict: bool = False, encoding: str = "utf-8", report: bool = True) -> Iterator[str]:
    """Whitespace-normalized non-blank lines of a text file in ``encoding`` (a UTF-8 BOM is tolerated).

    A line that does not decode yields an :class:`UndecodableLine`, or, with ``strict``, stops the
    run with an error naming the file and the line. With ``report``, the file's undecodable lines
    are logged once, when the reading ends (the file is exhausted, or its reader closed early):
    their count and first line numbers, never a line each (a Latin-1 file read as UTF-8 has
    thousands).
    """
    undecodable = DropTally(str(path), noun="line", keep=SHOWN_LINES)
    bom = codecs.lookup(encoding).name == "utf-8"
    try:
        with path.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                if number == 1 and bom and raw.startswith(codecs.BOM_UTF8):
                    raw = raw[len(codecs.BOM_UTF8):]
                try:
                    line = raw.decode(encoding)
                except UnicodeDecodeError as error:
                    if strict:
                        raise ValueError(f"{path}:{number}: not valid {encoding} ({error.reason} at byte "
                                         f"{error.start}); fix the file, or run without strict_input to drop such "
                                         "lines") from None
                    undecodable.add("undecodable", str(number))
                    yield UndecodableLine(f"{path}:{number}")
                    continue
                text = " ".join(line.split())
                if text:
                    yield text
    finally:
        if report and undecodable.total:
            logger.warning("%s", undecodable_summary(path, undecodable, encoding))


def undecodable_summary(path: Path, undecodable: DropTally, encoding: str) -> str:
    """The one line that reports a file's undecodable lines: how many, the first line numbers, what to do.

    >>> tally = DropTally("raw/es.txt", noun="line")
    >>> for number in (3, 8, 12, 40, 41, 57):
    ...     tally.add("undecodable", str(number))
    >>> undecodable_summary(Path("raw/es.txt"), tally, "utf-8")  # doctest: +NORMALIZE_WHITESPACE
    "raw/es.txt: 6 lines are not valid utf-8 (lines 3, 8, 12, 40, 41, ...): dropped as 'undecodable';
    pass --encoding latin-1 if the file is ISO-8859-1"
    """
    count, numbers = undecodable.counts["undecodable"], undecodable.records("undecodable")
    shown = ", ".join(numbers) + (", ..." if count > len(numbers) else "")
    hint = ("pass --encoding latin-1 if the file is ISO-8859-1" if codecs.lookup(encoding).name == "utf-8"
            else "is --encoding right for this file?")
    return (f"{path}: {count} {'line is' if count == 1 else 'lines are'} not valid {encoding} "
            f"({'line' if count == 1 else 'lines'} {shown}): dropped as 'undecodable'; {hint}")


def _from_rows(rows: Iterable[dict[str, Any]], column: str | None) -> Iterator[str]:
    for row in rows:
        if column is None:
            column = "text" if "text" in row else "tokens" if "tokens" in row else None
            if column is None:
                raise ValueError(f"no 'text' or 'tokens' column among {sorted(row)}; name one with text_column")
        value = row[column]
        text = " ".join(value) if isinstance(value, list) else " ".join(str(value).split())
        if text:
            yield text


def _from_string(text: str, lang: str, text_column: str | None, strict: bool = False, encoding: str = "utf-8",
                 report: bool = True) -> Iterator[str]:
    spec = parse_source_spec(text) if text.startswith("hub:") or text.split(":")[0].split("?")[0] in BUILDERS else None
    if spec is None:
        path = Path(text)
        if path.is_dir():
            path = path / f"{lang}.txt"
        if not path.is_file():
            raise FileNotFoundError(f"--input: no raw sentences for {lang!r}: {path} does not exist")
        return _read_lines(path, strict, encoding, report)
    if spec.kind == "hub":
        import datasets

        rows = datasets.load_dataset(spec.name, spec.config, split="train", streaming=True, **spec.kwargs)
    else:
        rows = load_dataset(spec.name, spec.config or lang, split="train", streaming=True, **spec.kwargs)
    return _from_rows(_downloaded(rows, text), text_column or "tokens")


def _downloaded(rows: Iterable[dict[str, Any]], spec: str) -> Iterator[dict[str, Any]]:
    """``rows`` of a streamed corpus; a release that cannot be downloaded is an error naming the spec.

    Streaming fails only when iterated, with a bare ``FileNotFoundError(url)`` when offline.
    """
    try:
        yield from rows
    except (ConnectionError, FileNotFoundError) as error:
        if isinstance(error, UserError) or "://" not in str(error):
            raise
        first = str(error).strip().splitlines()[0]
        raise UnreachableError(f"input {spec!r}: cannot download {first} ({offline_mode()}); give a local copy: "
                               f"'{spec.split('?')[0]}?data_dir=<folder>' or text files '<folder>/{{lang}}.txt'"
                               ) from error


def iter_raw_sentences(source: Any, lang: str, *, text_column: str | None = None, limit: int | None = None,
                       strict: bool = False, encoding: str = "utf-8", report: bool = True) -> Iterator[str]:
    """Yield the raw sentences of ``lang`` from ``source``, whitespace-normalized, blank ones skipped.

    ``source`` is one of:

    * a path containing ``{lang}`` (``raw/{lang}.txt``): a text file in ``encoding`` (UTF-8 by
      default; CoNLL-2002's Spanish and Dutch are ``latin-1``), one sentence a line;
    * a folder holding ``<lang>.txt``;
    * a ``datasets.Dataset``/``IterableDataset`` (or any iterable of dicts) with a ``text`` or
      ``tokens`` column (or ``text_column``), or a dict mapping languages to such datasets;
    * a source spec as ``examples/train_ner.py`` reads them: a crop-hf builder (``"xtreme40"``,
      ``"xtreme40?data_dir=/data/panx"``; the config defaults to ``lang``) or a Hub dataset
      (``"hub:NAME:{lang}"``): the sentences of its ``train`` split, streamed, labels ignored.

    Nothing is held in memory: lines are read as they are consumed. A text-file line that does not
    decode comes out as an :class:`UndecodableLine` (dropped and counted by synthesis), or, with
    ``strict``, raises ``ValueError`` naming the file and line; such lines are logged once per file
    (a count and the first line numbers) when its reading ends, unless ``report`` is false (a
    peek at the first sentence). Builders and Hub datasets decode their own files.
    """
    if isinstance(source, dict):
        if lang not in source:
            raise KeyError(f"no input for language {lang!r}; have {sorted(source)}")
        source = source[lang]
    if isinstance(source, (str, Path)):
        sentences = _from_string(str(source).replace("{lang}", lang), lang, text_column, strict, encoding, report)
    else:
        sentences = _from_rows(source, text_column)
    return itertools.islice(sentences, limit)
