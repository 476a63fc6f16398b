"""Resumable, atomic shard storage for long corpus runs.

A run splits each language's input into numbered shards of ``shard_size`` sentences. Each
finished shard is written as Parquet plus a JSON statistics file, both under a temporary name
and then renamed, so a killed run leaves either a whole shard or nothing. Shards live under a
folder named after the run's *fingerprint* (a hash of every argument that changes results), so a
rerun with the same arguments finds and skips finished shards, and a rerun with different
arguments starts a fresh folder instead of mixing old and new results.

Layout::

    OUTPUT_DIR/shards/<fingerprint>/run.json            the arguments behind the fingerprint
    OUTPUT_DIR/shards/<fingerprint>/<lang>/00042.parquet rows of shard 42
    OUTPUT_DIR/shards/<fingerprint>/<lang>/00042.json    its statistics (written last: marks it done)
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["ShardStore", "atomic_write_bytes", "fingerprint"]


def fingerprint(arguments: Mapping[str, Any]) -> str:
    """A short stable hash of JSON-serialisable arguments (key order does not matter)."""
    blob = json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()[:16]


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


class ShardStore:
    """Finished shards of one run (one fingerprint) under ``output_dir``."""

    def __init__(self, output_dir: str | Path, arguments: Mapping[str, Any]) -> None:
        self.arguments = dict(arguments)
        self.fingerprint = fingerprint(self.arguments)
        self.root = Path(output_dir) / "shards" / self.fingerprint

    def prepare(self) -> None:
        """Create the run folder and record its arguments (idempotent)."""
        record = self.root / "run.json"
        if not record.exists():
            text = json.dumps(self.arguments, indent=2, sort_keys=True, ensure_ascii=False, default=str)
            atomic_write_bytes(record, text.encode("utf-8"))

    def _paths(self, lang: str, index: int) -> tuple[Path, Path]:
        base = self.root / lang / f"{index:05d}"
        return base.with_suffix(".parquet"), base.with_suffix(".json")

    def is_done(self, lang: str, index: int) -> bool:
        return self._paths(lang, index)[1].exists()

    def write(self, lang: str, index: int, rows: Sequence[Mapping[str, Any]], stats: Mapping[str, Any]) -> None:
        """Write one finished shard: its rows (Parquet) first, then its statistics (the done mark)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        rows_path, stats_path = self._paths(lang, index)
        table = pa.Table.from_pylist(list(rows))
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink)
        atomic_write_bytes(rows_path, sink.getvalue().to_pybytes())
        atomic_write_bytes(stats_path, json.dumps(dict(stats), sort_keys=True).encode("utf-8"))

    def finished(self, lang: str) -> Iterator[tuple[int, Path, dict[str, Any]]]:
        """``(index, parquet path, statistics)`` of every finished shard of ``lang``, in shard order."""
        folder = self.root / lang
        if not folder.is_dir():
            return
        for stats_path in sorted(folder.glob("[0-9]*.json")):
            index = int(stats_path.stem)
            yield index, stats_path.with_suffix(".parquet"), json.loads(stats_path.read_text(encoding="utf-8"))
