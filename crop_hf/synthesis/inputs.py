"""Raw target-language sentences for synthesis, streamed one at a time."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["iter_raw_sentences", "shards_of"]


def _read_lines(path: Path) -> Iterator[str]:
    with path.open(encoding="utf-8-sig") as handle:  # tolerate a BOM
        for line in handle:
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


def iter_raw_sentences(source: Any, lang: str, *, text_column: str | None = None,
                       limit: int | None = None) -> Iterator[str]:
    """Yield the raw sentences of ``lang`` from ``source``, whitespace-normalised, blank ones skipped.

    ``source`` is one of:

    * a path containing ``{lang}`` (``raw/{lang}.txt``): a UTF-8 text file, one sentence a line;
    * a folder holding ``<lang>.txt``;
    * a ``datasets.Dataset``/``IterableDataset`` (or any iterable of dicts) with a ``text`` or
      ``tokens`` column (or ``text_column``), or a dict mapping languages to such datasets;
    * a crop-hf builder name such as ``"xtreme40"``: the sentences of its ``train`` split, streamed,
      labels ignored.

    Nothing is held in memory: lines are read as they are consumed.
    """
    if isinstance(source, dict):
        if lang not in source:
            raise KeyError(f"no input for language {lang!r}; have {sorted(source)}")
        source = source[lang]
    if isinstance(source, (str, Path)):
        text = str(source)
        if "{lang}" in text:
            path = Path(text.format(lang=lang))
        elif Path(text).is_dir():
            path = Path(text) / f"{lang}.txt"
        else:
            path = None
        if path is not None:
            if not path.is_file():
                raise FileNotFoundError(f"no raw sentences for {lang!r}: {path} does not exist")
            sentences = _read_lines(path)
        else:
            from crop_hf.data import load_dataset

            rows = load_dataset(text, lang, split="train", streaming=True)
            sentences = _from_rows(rows, text_column or "tokens")
    else:
        sentences = _from_rows(source, text_column)
    return itertools.islice(sentences, limit)


def shards_of(sentences: Iterable[str], shard_size: int) -> Iterator[tuple[int, list[str]]]:
    """Cut a stream into numbered shards of ``shard_size`` sentences (the last may be shorter)."""
    iterator = iter(sentences)
    for index in itertools.count():
        shard = list(itertools.islice(iterator, shard_size))
        if not shard:
            return
        yield index, shard
