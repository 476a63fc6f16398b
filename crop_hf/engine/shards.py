"""Long corpus runs in resumable, atomically written shards shared between processes.

A corpus job cuts each *key*'s input (a target language) into numbered shards; each finished
shard is written as one Parquet file plus a JSON statistics file, both under a temporary name and
then renamed, so a killed run leaves either a whole shard or nothing. Shards live under a folder named after the run's *fingerprint* (a hash of
every argument that changes results): a rerun with the same arguments skips finished shards, a
rerun with different arguments starts a fresh folder instead of mixing old and new results.
When every process is done, the main process merges the finished shards into ``Dataset`` objects.

Layout (runs written by earlier releases resume: the paths, the fingerprint and the columns are fixed)::

    OUTPUT_DIR/shards/result.json                        which run the merged outputs come from
    OUTPUT_DIR/shards/<fingerprint>/run.json             the arguments behind the fingerprint
    OUTPUT_DIR/shards/<fingerprint>/<key>/00042.parquet  rows of shard 42: ``kept`` (bool), ``row`` (JSON)
    OUTPUT_DIR/shards/<fingerprint>/<key>/00042.json     its statistics (written last: marks it done)

The parts: :func:`fingerprint` and :class:`ShardStore` (the folder, written shard by shard),
:func:`check_output_dir` (a finished result of other settings is refused, ``OutputExistsError``,
unless ``overwrite``; nothing is read but ``shards/``), :func:`read_shard_rows`,
:func:`merge_shards` and :func:`shard_statistics` (the merge), :func:`save_dataset_dict` and
:func:`atomic_write_bytes` (atomic outputs). The run itself, which
process takes which shard and when the merge happens, is :func:`crop_hf.engine.jobs.run_job`'s.

>>> fingerprint({"b": 1, "a": [2]}) == fingerprint({"a": [2], "b": 1})
True
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from crop_hf.errors import OutputExistsError

logger = logging.getLogger(__name__)

__all__ = [
    "RESULT_RECORD",
    "FinishedShard",
    "ShardStore",
    "atomic_write_bytes",
    "check_output_dir",
    "describe_inputs",
    "fingerprint",
    "honour_umask",
    "merge_shards",
    "read_shard_rows",
    "save_dataset_dict",
    "save_hub_layout",
    "shard_statistics",
    "shards_of",
]

#: One finished shard: ``(index, Parquet path, statistics)``, as :meth:`ShardStore.finished` yields it.
FinishedShard = tuple[int, Path, dict[str, Any]]

T = TypeVar("T")

#: ``OUTPUT_DIR/shards/result.json``: the fingerprint and keys of the run whose merge wrote the outputs.
RESULT_RECORD = "result.json"


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


def _umask() -> int:
    """The process's umask (read by setting it and putting it back: the only way POSIX offers)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename.

    A reader (or a resumed run) sees the old file or the whole new one, never a partial write.
    The file gets the mode a plain ``open(path, "w")`` would give it (0644 under the usual umask
    0022), not the owner-only 0600 of the temporary file it was written as.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), 0o666 & ~_umask())
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def honour_umask(folder: str | Path) -> None:
    """Give the files directly in ``folder`` the mode a plain ``open`` would (0644 under umask 0022).

    transformers' ``save_pretrained`` writes ``model.safetensors`` owner-only (0600), through a
    temporary file of its own; a saved model others cannot read is an output only its owner can use.
    """
    folder = Path(folder)
    if not folder.is_dir():  # a stand-in model that saved nothing: nothing to open up
        return
    mode = 0o666 & ~_umask()
    for path in folder.iterdir():
        if path.is_file() and not path.is_symlink() and path.stat().st_mode & 0o777 != mode:
            path.chmod(mode)


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


#: the largest Parquet file of :func:`save_hub_layout` (what ``push_to_hub`` cuts at)
MAX_SHARD_BYTES = 500 << 20


def save_hub_layout(dataset_dict: Any, output_dir: str | Path, max_shard_bytes: int = MAX_SHARD_BYTES) -> None:
    """Write ``dataset_dict`` as the Hub holds a pushed dataset: ``data/<split>-<i>-of-<n>.parquet``.

    With a card whose ``configs`` name these files (:func:`crop_hf.hub.hub_data_files`), ``datasets.load_dataset(output_dir)``
    opens the folder locally with the splits and features (kept in the Parquet metadata) that the
    pushed repository has. The folder is written under a temporary name and renamed, so a reader
    sees the old files or the whole new set. A split with no rows is left out (``load_dataset``
    cannot open one: "corresponds to no data"), and so is it from the card's ``configs``.
    """
    import math

    output_dir = Path(output_dir)
    folder, temporary = output_dir / "data", output_dir / ".data.tmp"
    if temporary.exists():
        shutil.rmtree(temporary)
    temporary.mkdir(parents=True)
    for split, dataset in dataset_dict.items():
        if not len(dataset):
            continue
        count = max(1, math.ceil(dataset.data.nbytes / max_shard_bytes))
        for index in range(count):
            part = dataset.shard(num_shards=count, index=index, contiguous=True)
            part.to_parquet(str(temporary / f"{split}-{index:05d}-of-{count:05d}.parquet"))
    if folder.exists():
        shutil.rmtree(folder)
    temporary.rename(folder)


class ShardStore:
    """Finished shards of one run (one fingerprint of ``arguments``) under ``output_dir/shards/``."""

    def __init__(self, output_dir: str | Path, arguments: Mapping[str, Any]) -> None:
        self.arguments = dict(arguments)
        self.fingerprint = fingerprint(self.arguments)
        self.root = Path(output_dir) / "shards" / self.fingerprint

    def prepare(self) -> None:
        """Create the run folder and record its arguments in ``run.json`` (idempotent; the first :meth:`write` calls it).

        Several processes may call it at once: each writes the same bytes through a rename.
        """
        record = self.root / "run.json"
        if not record.exists():
            text = json.dumps(self.arguments, indent=2, sort_keys=True, ensure_ascii=False, default=str)
            atomic_write_bytes(record, text.encode("utf-8"))

    def record_result(self, keys: Sequence[str]) -> None:
        """Note in ``shards/result.json`` that the outputs beside ``shards/`` were merged from this run's ``keys``."""
        record = {"fingerprint": self.fingerprint, "keys": list(keys)}
        atomic_write_bytes(self.root.parent / RESULT_RECORD, json.dumps(record, sort_keys=True).encode("utf-8"))

    def finished_result(self) -> tuple[dict[str, Any], list[str] | None] | None:
        """``(arguments, keys)`` of the run whose merge wrote this folder's outputs; ``None`` when none did.

        Folders written before ``result.json`` existed hold ``statistics.json`` (every job writes it at
        its merge): their result is taken to be the newest run folder's, its keys unknown (``None``).
        """
        shards = self.root.parent
        record_path = shards / RESULT_RECORD
        if record_path.is_file():
            record = json.loads(record_path.read_text(encoding="utf-8"))
            run_json = shards / record["fingerprint"] / "run.json"
            arguments = json.loads(run_json.read_text(encoding="utf-8")) if run_json.is_file() else {}
            return {**arguments, "fingerprint": record["fingerprint"]}, record["keys"]
        if not (shards.parent / "statistics.json").is_file():
            return None
        runs = sorted(shards.glob("*/run.json"), key=lambda path: path.stat().st_mtime)
        if not runs:
            return None
        return {**json.loads(runs[-1].read_text(encoding="utf-8")), "fingerprint": runs[-1].parent.name}, None

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

        self.prepare()  # the run folder appears with its first shard: a run that fails before leaves no trace
        rows_path, stats_path = self._paths(key, index)
        # the schema is given so that a shard with no rows still has its two columns
        table = pa.Table.from_pylist(list(rows), schema=pa.schema([("kept", pa.bool_()), ("row", pa.string())]))
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


def shards_of(items: Iterable[T], shard_size: int) -> Iterator[tuple[int, list[T]]]:
    """Cut a stream into numbered shards of ``shard_size`` items (the last may be shorter)."""
    iterator = iter(items)
    for index in itertools.count():
        shard = list(itertools.islice(iterator, shard_size))
        if not shard:
            return
        yield index, shard


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def check_output_dir(store: ShardStore, keys: Sequence[str], *, overwrite: bool = False,
                     spellings: Mapping[str, str] | None = None, keys_name: str | None = None) -> None:
    """Refuse to replace a finished result of other settings in ``store``'s output folder.

    The folder's outputs (dataset, statistics, card) came from a run: when its arguments or keys
    differ from this one's, :class:`~crop_hf.errors.OutputExistsError` names the differing settings
    (at most five) unless ``overwrite``, each as the user spells it: ``spellings`` maps a
    fingerprint name to its option (``{"max_sentences": "--max_examples"}``), and ``keys_name``
    names the keys (``--tgt_langs``). The same settings resume (or merge again) as before.
    Nothing is read but ``shards/``; nothing is written.
    """
    spellings = spellings or {}
    finished = store.finished_result()
    if overwrite or finished is None:
        return
    arguments, old_keys = finished
    if arguments.get("fingerprint") == store.fingerprint and (old_keys is None or list(old_keys) == list(keys)):
        return
    names = sorted((set(arguments) | set(store.arguments)) - {"fingerprint"})
    differences = [f"{spellings.get(name, name)}: {_shown(arguments.get(name))} there, "
                   f"{_shown(store.arguments.get(name))} here"
                   for name in names if arguments.get(name) != store.arguments.get(name)]
    if old_keys is not None and list(old_keys) != list(keys):
        differences.insert(0, f"{keys_name + ': ' if keys_name else ''}{_shown(list(old_keys))} there, "
                              f"{_shown(list(keys))} here")
    if not differences:  # a fingerprint of arguments the record no longer has (run.json removed)
        differences = [f"run {arguments.get('fingerprint')} there, {store.fingerprint} here"]
    more = f" and {len(differences) - 5} more" if len(differences) > 5 else ""
    raise OutputExistsError(
        f"{store.root.parent.parent} holds a finished result of other settings ({'; '.join(differences[:5])}{more}): "
        "pass --overwrite_output_dir to replace it (finished shards of either run are kept and reused), "
        "or choose another --output_dir")


def shard_statistics(finished: Iterable[FinishedShard], columns: Sequence[str]) -> dict[str, int]:
    """The sum of finished shards' statistics, one count per column (0 when no shard counted it)."""
    counts: Counter = Counter()
    for _, _, stats in finished:
        counts.update(stats)
    return {column: counts[column] for column in columns}


def read_shard_rows(paths: Sequence[str | Path], kept: bool, stamps: Sequence[tuple[int, int]] = ()
                    ) -> Iterator[dict[str, Any]]:
    """The kept (or dropped) rows of shard files, in order, one file in memory at a time.

    ``stamps`` (the files' sizes and modification times) is not read: it keys :func:`merge_shards`' cache.
    """
    import pyarrow.parquet as pq

    for path in paths:  # one shard at a time: memory stays flat however large the corpus
        table = pq.read_table(path)
        if not table.num_rows:  # an empty shard of an earlier release has no columns
            continue
        for flag, row in zip(table.column("kept").to_pylist(), table.column("row").to_pylist(), strict=True):
            if flag == kept:
                yield json.loads(row)


def merge_shards(finished: Sequence[FinishedShard], kept: bool, features: Any) -> Any:
    """The kept (or discarded) rows of finished shards, in shard order, as one ``datasets.Dataset`` of ``features``."""
    import datasets
    import pyarrow.parquet as pq

    # Counted from the files' flags, not from the statistics: one input item may give several rows
    # (mark-parallel's two directions), so input - kept is not the number of dropped rows.
    # (An empty shard written by an earlier release has no columns at all.)
    rows = sum(pq.read_table(path, columns=["kept"]).column("kept").to_pylist().count(kept)
               for _, path, _ in finished if pq.read_metadata(path).num_rows)
    if rows == 0:  # from_generator cannot build an empty dataset
        return datasets.Dataset.from_dict({name: [] for name in features}, features=features)
    paths = [str(path) for _, path, _ in finished]
    # from_generator writes Arrow to the cache as it goes and keys it on its arguments: the paths, and
    # their sizes and modification times, since a run whose inputs cannot be fingerprinted (mark-parallel
    # without inputs_id) writes the same paths again with other rows.
    stamps = [(path.stat().st_size, path.stat().st_mtime_ns) for _, path, _ in finished]
    return datasets.Dataset.from_generator(read_shard_rows, gen_kwargs={"paths": paths, "kept": kept, "stamps": stamps},
                                           features=features)
