"""Raw target-language sentences for synthesis, streamed one at a time."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from crop_hf.data import BUILDERS, load_dataset
from crop_hf.data.sources import parse_source_spec
from crop_hf.errors import UnreachableError, UserError, offline_mode

logger = logging.getLogger(__name__)

__all__ = ["UndecodableLine", "iter_raw_sentences"]


class UndecodableLine(str):
    """Stands in a sentence stream for a line that is not valid UTF-8, so that it is dropped and counted.

    It is an empty string (nothing of the broken line is guessed at) that knows where it came
    from; synthesis drops it with the reason ``undecodable``.
    """

    where: str

    def __new__(cls, where: str) -> UndecodableLine:
        line = super().__new__(cls, "")
        line.where = where
        return line


def _read_lines(path: Path, strict: bool = False) -> Iterator[str]:
    """Whitespace-normalized non-blank lines of a UTF-8 file (a BOM is tolerated).

    A line that is not valid UTF-8 is logged with its file and line and yields an
    :class:`UndecodableLine`, or, with ``strict``, stops the run with an error naming both.
    """
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                where = f"{path}:{number}"
                message = f"{where}: not valid UTF-8 ({error.reason} at byte {error.start})"
                if strict:
                    raise ValueError(f"{message}; fix the file, or run without strict_input to drop such lines") from None
                logger.warning("%s; the line is dropped (reason 'undecodable')", message)
                yield UndecodableLine(where)
                continue
            text = " ".join(line.split())
            if text:
                yield text


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


def _from_string(text: str, lang: str, text_column: str | None, strict: bool = False) -> Iterator[str]:
    spec = parse_source_spec(text) if text.startswith("hub:") or text.split(":")[0].split("?")[0] in BUILDERS else None
    if spec is None:
        path = Path(text)
        if path.is_dir():
            path = path / f"{lang}.txt"
        if not path.is_file():
            raise FileNotFoundError(f"--input: no raw sentences for {lang!r}: {path} does not exist")
        return _read_lines(path, strict)
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


def iter_raw_sentences(source: Any, lang: str, *, text_column: str | None = None,
                       limit: int | None = None, strict: bool = False) -> Iterator[str]:
    """Yield the raw sentences of ``lang`` from ``source``, whitespace-normalized, blank ones skipped.

    ``source`` is one of:

    * a path containing ``{lang}`` (``raw/{lang}.txt``): a UTF-8 text file, one sentence a line;
    * a folder holding ``<lang>.txt``;
    * a ``datasets.Dataset``/``IterableDataset`` (or any iterable of dicts) with a ``text`` or
      ``tokens`` column (or ``text_column``), or a dict mapping languages to such datasets;
    * a source spec as ``examples/train_ner.py`` reads them: a crop-hf builder (``"xtreme40"``,
      ``"xtreme40?data_dir=/data/panx"``; the config defaults to ``lang``) or a Hub dataset
      (``"hub:NAME:{lang}"``): the sentences of its ``train`` split, streamed, labels ignored.

    Nothing is held in memory: lines are read as they are consumed. A text-file line that is not
    valid UTF-8 comes out as an :class:`UndecodableLine` (dropped and counted by synthesis), or,
    with ``strict``, raises ``ValueError`` naming the file and line.
    """
    if isinstance(source, dict):
        if lang not in source:
            raise KeyError(f"no input for language {lang!r}; have {sorted(source)}")
        source = source[lang]
    if isinstance(source, (str, Path)):
        sentences = _from_string(str(source).replace("{lang}", lang), lang, text_column, strict)
    else:
        sentences = _from_rows(source, text_column)
    return itertools.islice(sentences, limit)
