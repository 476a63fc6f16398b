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


def _from_string(text: str, lang: str, text_column: str | None) -> Iterator[str]:
    from crop_hf.data import BUILDERS
    from crop_hf.data.sources import parse_source_spec

    spec = parse_source_spec(text) if text.startswith("hub:") or text.split(":")[0].split("?")[0] in BUILDERS else None
    if spec is None:
        path = Path(text)
        if path.is_dir():
            path = path / f"{lang}.txt"
        if not path.is_file():
            raise FileNotFoundError(f"no raw sentences for {lang!r}: {path} does not exist")
        return _read_lines(path)
    if spec.kind == "hub":
        import datasets

        rows = datasets.load_dataset(spec.name, spec.config, split="train", streaming=True, **spec.kwargs)
    else:
        from crop_hf.data import load_dataset

        rows = load_dataset(spec.name, spec.config or lang, split="train", streaming=True, **spec.kwargs)
    return _from_rows(rows, text_column or "tokens")


def iter_raw_sentences(source: Any, lang: str, *, text_column: str | None = None,
                       limit: int | None = None) -> Iterator[str]:
    """Yield the raw sentences of ``lang`` from ``source``, whitespace-normalised, blank ones skipped.

    ``source`` is one of:

    * a path containing ``{lang}`` (``raw/{lang}.txt``): a UTF-8 text file, one sentence a line;
    * a folder holding ``<lang>.txt``;
    * a ``datasets.Dataset``/``IterableDataset`` (or any iterable of dicts) with a ``text`` or
      ``tokens`` column (or ``text_column``), or a dict mapping languages to such datasets;
    * a source spec as ``examples/train_ner.py`` reads them: a crop-hf builder (``"xtreme40"``,
      ``"xtreme40?data_dir=/data/panx"``; the config defaults to ``lang``) or a Hub dataset
      (``"hub:NAME:{lang}"``): the sentences of its ``train`` split, streamed, labels ignored.

    Nothing is held in memory: lines are read as they are consumed.
    """
    if isinstance(source, dict):
        if lang not in source:
            raise KeyError(f"no input for language {lang!r}; have {sorted(source)}")
        source = source[lang]
    if isinstance(source, (str, Path)):
        sentences = _from_string(str(source).replace("{lang}", lang), lang, text_column)
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
