"""Long corpus runs in resumable, atomically written shards shared between processes.

A run (corpus synthesis, translate-and-align) cuts each *key*'s input (a target language) into
numbered shards. Shard ``k`` belongs to process ``k % num_processes`` (``torchrun`` /
``accelerate launch``); each finished shard is written as one Parquet file plus a JSON
statistics file, both under a temporary name and then renamed, so a killed run leaves either a
whole shard or nothing. Shards live under a folder named after the run's *fingerprint* (a hash of
every argument that changes results): a rerun with the same arguments skips finished shards, a
rerun with different arguments starts a fresh folder instead of mixing old and new results.
When every process is done, the main process merges the finished shards into ``Dataset`` objects.

Layout (runs written by earlier releases resume: the paths, the fingerprint and the columns are fixed)::

    OUTPUT_DIR/shards/<fingerprint>/run.json             the arguments behind the fingerprint
    OUTPUT_DIR/shards/<fingerprint>/<key>/00042.parquet  rows of shard 42: ``kept`` (bool), ``row`` (JSON)
    OUTPUT_DIR/shards/<fingerprint>/<key>/00042.json     its statistics (written last: marks it done)

The parts, lowest first: :func:`fingerprint` and :class:`ShardStore` (the folder),
:func:`run_shards` (one key's shards of this process), :func:`merge_shards` and
:func:`shard_statistics` (the main process's merge), :func:`save_dataset_dict` and
:func:`atomic_write_bytes` (atomic outputs), and :func:`run_sharded`, the whole run every long
job drives. Rows are dataclasses whose ``datasets.Features`` come from their fields
(:func:`row_features`, :func:`row_descriptions`).

>>> fingerprint({"b": 1, "a": [2]}) == fingerprint({"a": [2], "b": 1})
True
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import logging
import os
import shutil
import tempfile
import types
import typing
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Generic, TypeVar

logger = logging.getLogger(__name__)

__all__ = [
    "FinishedShard",
    "ShardRun",
    "ShardStore",
    "atomic_write_bytes",
    "describe_inputs",
    "fingerprint",
    "merge_shards",
    "process_state",
    "row_descriptions",
    "row_features",
    "run_sharded",
    "run_shards",
    "save_dataset_dict",
    "shard_statistics",
]

#: One finished shard: ``(index, Parquet path, statistics)``, as :meth:`ShardStore.finished` yields it.
FinishedShard = tuple[int, Path, dict[str, Any]]

#: What processing one shard gives: ``(kept rows, discarded rows, counts per reason)``.
ShardOutput = tuple[Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]], Mapping[str, int]]

Merged = TypeVar("Merged")


def fingerprint(arguments: Mapping[str, Any]) -> str:
    """A short stable hash of JSON-serialisable arguments (key order does not matter).

    It names a run's shard folder, so it must never change for the same arguments: runs written
    by earlier releases would no longer resume.
    """
    blob = json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()[:16]


def describe_inputs(inputs: Any) -> Any:
    """What identifies in-memory inputs in a fingerprint: their ``datasets`` fingerprint when they have one.

    A dict (inputs per language) is described key by key; ``None`` (inputs read from the
    configuration's paths, already in the arguments) stays ``None``.

    >>> describe_inputs({"de": [1], "es": None})
    {'de': "<class 'list'>", 'es': None}
    """
    if inputs is None:
        return None
    if isinstance(inputs, dict):
        return {key: describe_inputs(value) for key, value in sorted(inputs.items())}
    return getattr(inputs, "_fingerprint", None) or repr(type(inputs))


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename.

    A reader (or a resumed run) sees the old file or the whole new one, never a partial write.
    """
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


def save_dataset_dict(dataset_dict: Any, path: str | Path) -> None:
    """``dataset_dict.save_to_disk(path)`` through a temporary folder and a rename (a whole result or the old one).

    An empty split is saved as one explicit shard: ``datasets`` writes an empty split of a
    ``DatasetDict`` with zero shards, and ``load_from_disk`` then fails (``IndexError``), which
    would make a language whose every sentence was dropped unloadable.
    """
    path = Path(path)
    temporary = path.with_name(f".{path.name}.tmp")
    if temporary.exists():
        shutil.rmtree(temporary)
    dataset_dict.save_to_disk(str(temporary), num_shards={name: 1 for name, split in dataset_dict.items()
                                                         if len(split) == 0})
    if path.exists():
        shutil.rmtree(path)
    temporary.rename(path)


class ShardStore:
    """Finished shards of one run (one fingerprint of ``arguments``) under ``output_dir/shards/``."""

    def __init__(self, output_dir: str | Path, arguments: Mapping[str, Any]) -> None:
        self.arguments = dict(arguments)
        self.fingerprint = fingerprint(self.arguments)
        self.root = Path(output_dir) / "shards" / self.fingerprint

    def prepare(self) -> None:
        """Create the run folder and record its arguments in ``run.json`` (idempotent; the main process calls it)."""
        record = self.root / "run.json"
        if not record.exists():
            text = json.dumps(self.arguments, indent=2, sort_keys=True, ensure_ascii=False, default=str)
            atomic_write_bytes(record, text.encode("utf-8"))

    def _paths(self, key: str, index: int) -> tuple[Path, Path]:
        base = self.root / key / f"{index:05d}"
        return base.with_suffix(".parquet"), base.with_suffix(".json")

    def is_done(self, key: str, index: int) -> bool:
        """Whether shard ``index`` of ``key`` was finished (its statistics, written last, exist)."""
        return self._paths(key, index)[1].exists()

    def write(self, key: str, index: int, rows: Sequence[Mapping[str, Any]], stats: Mapping[str, Any]) -> None:
        """Write one finished shard: its rows (Parquet) first, then its statistics (the done mark)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        rows_path, stats_path = self._paths(key, index)
        table = pa.Table.from_pylist(list(rows))
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink)
        atomic_write_bytes(rows_path, sink.getvalue().to_pybytes())
        atomic_write_bytes(stats_path, json.dumps(dict(stats), sort_keys=True).encode("utf-8"))

    def finished(self, key: str) -> Iterator[FinishedShard]:
        """``(index, Parquet path, statistics)`` of every finished shard of ``key``, in shard order."""
        folder = self.root / key
        if not folder.is_dir():
            return
        for stats_path in sorted(folder.glob("[0-9]*.json")):
            index = int(stats_path.stem)
            yield index, stats_path.with_suffix(".parquet"), json.loads(stats_path.read_text(encoding="utf-8"))


def process_state() -> Any:
    """This process's Accelerate ``PartialState`` (index, count, device, barriers), honouring ``ACCELERATE_USE_CPU``."""
    from accelerate import PartialState
    from accelerate.utils import parse_flag_from_env

    # Unlike Accelerator, PartialState does not read ACCELERATE_USE_CPU itself; without it, CPU
    # processes started by torchrun would each believe they are alone.
    return PartialState(cpu=parse_flag_from_env("ACCELERATE_USE_CPU"))


def run_shards(
    store: ShardStore,
    key: str,
    shards: Iterable[tuple[int, Sequence[Any]]],
    process: Callable[[int, Sequence[Any], Callable[[str], None]], ShardOutput],
    state: Any,
    *,
    show_progress: bool = False,
    description: str = "",
    unit: str = "it",
) -> tuple[int, int]:
    """Process this process's unfinished shards of ``key`` and write each one when it is done.

    ``shards`` yields ``(index, items)``; shard ``k`` belongs to process ``k % state.num_processes``
    (``state``: :func:`process_state`), and a shard already in ``store`` is skipped (and logged).
    ``process(index, items, status)`` returns ``(kept rows, discarded rows, counts)`` and may call
    ``status(text)`` to show what it is doing on the progress bar (``description``, shown when
    ``show_progress``; it advances by each shard's items). The rows go into one Parquet file
    (column ``kept`` and the row as JSON in ``row``) with the statistics ``input``, ``kept``, the
    counts and ``process_index`` (what :func:`merge_shards` and :func:`shard_statistics` read).
    Returns ``(shards of this process, of which skipped as already finished)``.
    """
    from tqdm.auto import tqdm

    total = skipped = 0
    with tqdm(desc=description or key, unit=unit, disable=not show_progress) as progress:
        for index, items in shards:
            if index % state.num_processes != state.process_index:
                continue
            total += 1
            if store.is_done(key, index):
                skipped += 1
            else:
                kept, discarded, counts = process(index, items, lambda text, index=index:
                                                  progress.set_postfix_str(f"shard {index}: {text}"))
                stats = {"input": len(items), "kept": len(kept), **counts, "process_index": state.process_index}
                # Kept and discarded rows share one file, so a shard is written (and renamed) in one step.
                rows = [{"kept": flag, "row": json.dumps(dict(row), ensure_ascii=False)}
                        for flag, part in ((True, kept), (False, discarded)) for row in part]
                store.write(key, index, rows, stats)
            progress.update(len(items))
    if skipped:  # each process says it for its own shards (only the main one's lines are shown by crop-hf)
        logger.info("%s: resumed: skipped %d of %d shard(s) already finished in %s", key, skipped, total,
                    store.root / key)
    return total, skipped


def shard_statistics(finished: Iterable[FinishedShard], columns: Sequence[str]) -> dict[str, int]:
    """The sum of finished shards' statistics, one count per column (0 when no shard counted it)."""
    counts: Counter = Counter()
    for _, _, stats in finished:
        counts.update(stats)
    return {column: counts[column] for column in columns}


def _rows(paths: list[str], kept: bool) -> Iterator[dict[str, Any]]:
    import pyarrow.parquet as pq

    for path in paths:  # one shard at a time: memory stays flat however large the corpus
        table = pq.read_table(path)
        for flag, row in zip(table.column("kept").to_pylist(), table.column("row").to_pylist(), strict=True):
            if flag == kept:
                yield json.loads(row)


def merge_shards(finished: Sequence[FinishedShard], kept: bool, features: Any) -> Any:
    """The kept (or discarded) rows of finished shards, in shard order, as one ``datasets.Dataset`` of ``features``."""
    import datasets

    rows = sum(stats["kept"] if kept else stats["input"] - stats["kept"] for _, _, stats in finished)
    if rows == 0:  # from_generator cannot build an empty dataset
        return datasets.Dataset.from_dict({name: [] for name in features}, features=features)
    paths = [str(path) for _, path, _ in finished]
    # from_generator writes Arrow to the cache as it goes; its cache key covers the shard paths,
    # whose content is fixed by the run fingerprint in their folder name.
    return datasets.Dataset.from_generator(_rows, gen_kwargs={"paths": paths, "kept": kept}, features=features)


@dataclasses.dataclass
class ShardRun(Generic[Merged]):
    """What :func:`run_sharded` did in this process.

    ``merged`` is what the merge returned (the main process only; ``None`` elsewhere);
    ``shards[key]`` / ``skipped[key]`` count this process's shards and those an earlier run had
    already finished.
    """

    merged: Merged | None
    is_main_process: bool
    shards: dict[str, int] = dataclasses.field(default_factory=dict)
    skipped: dict[str, int] = dataclasses.field(default_factory=dict)


def run_sharded(
    store: ShardStore,
    keys: Iterable[str],
    shards: Callable[[str], Iterable[tuple[int, Sequence[Any]]]],
    process: Callable[[str, int, Sequence[Any], Callable[[str], None]], ShardOutput],
    merge: Callable[[], Merged],
    *,
    show_progress: bool = True,
    description: str = "",
    unit: str = "it",
) -> ShardRun[Merged]:
    """A whole sharded run: prepare ``store``, process every key's shards, and merge on the main process.

    The main process prepares the store while the others wait; each process then runs its
    shards of every key (:func:`run_shards`) with a progress bar (``description key``, main
    process only); when all are done the main process calls ``merge()`` (which reads
    ``store.finished(key)``) while the others wait. ``shards(key)`` yields ``(index, items)``;
    ``process(key, index, items, status)`` returns ``(kept rows, discarded rows, counts)`` and
    may call ``status(text)`` to show what it is doing on the bar.
    """
    state = process_state()
    if state.is_main_process:
        store.prepare()
    state.wait_for_everyone()
    run: ShardRun[Merged] = ShardRun(None, state.is_main_process)
    for key in keys:
        run.shards[key], run.skipped[key] = run_shards(
            store, key, shards(key), functools.partial(process, key), state, unit=unit,
            show_progress=show_progress and state.is_main_process, description=f"{description} {key}".strip())
    state.wait_for_everyone()
    if state.is_main_process:
        run.merged = merge()
    state.wait_for_everyone()
    return run


def _feature(annotation: Any) -> Any:
    import datasets

    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        inner = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        if len(inner) != 1:
            raise TypeError(f"a row field may be one type or None, not {annotation}")
        return _feature(inner[0])  # None is a missing value, not a type of its own
    if typing.get_origin(annotation) is list:
        (item,) = typing.get_args(annotation)
        return datasets.List(_feature(item))
    values = {str: "string", int: "int64", float: "float64", bool: "bool"}
    if annotation in values:
        return datasets.Value(values[annotation])
    raise TypeError(f"no datasets feature for a row field of type {annotation}")


def row_features(row_type: type, overrides: Mapping[str, Any] | None = None) -> Any:
    """The ``datasets.Features`` of a row dataclass: one column per field, in field order.

    ``str``/``int``/``float``/``bool`` become ``Value``, ``list[T]`` a ``List``, ``T | None`` the
    feature of ``T`` (a missing value); ``overrides`` replaces the feature of named fields (e.g.
    ``ClassLabel`` tags).
    """
    import datasets

    hints = typing.get_type_hints(row_type)
    overrides = overrides or {}
    unknown = set(overrides) - {field.name for field in dataclasses.fields(row_type)}
    if unknown:
        raise KeyError(f"{row_type.__name__} has no field {sorted(unknown)}")
    return datasets.Features({field.name: overrides[field.name] if field.name in overrides
                              else _feature(hints[field.name]) for field in dataclasses.fields(row_type)})


def row_descriptions(row_type: type) -> dict[str, str]:
    """``{column: description}`` of a row dataclass, from each field's ``metadata["help"]`` (for dataset cards)."""
    return {field.name: field.metadata["help"] for field in dataclasses.fields(row_type)}
