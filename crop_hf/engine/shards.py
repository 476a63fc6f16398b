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

    OUTPUT_DIR/shards/result.json                        which run the merged outputs come from
    OUTPUT_DIR/shards/<fingerprint>/run.json             the arguments behind the fingerprint
    OUTPUT_DIR/shards/<fingerprint>/<key>/00042.parquet  rows of shard 42: ``kept`` (bool), ``row`` (JSON)
    OUTPUT_DIR/shards/<fingerprint>/<key>/00042.json     its statistics (written last: marks it done)

The parts, lowest first: :func:`fingerprint` and :class:`ShardStore` (the folder),
:func:`run_shards` (one key's shards of this process), :func:`merge_shards` and
:func:`shard_statistics` (the main process's merge), :func:`save_dataset_dict` and
:func:`atomic_write_bytes` (atomic outputs), and :func:`run_sharded`, the whole run every long
job drives. Before anything is written, :func:`check_output_dir` refuses to replace a finished
result of other settings (``OutputExistsError``, unless ``overwrite``); the run folder and its
``run.json`` appear with the first finished shard, so a run that fails before it leaves the
output folder as it was. :func:`describe_processes` is the line every long job logs at start.
Rows are dataclasses whose ``datasets.Features`` come from their fields
(:func:`row_features`, :func:`row_descriptions`).

>>> fingerprint({"b": 1, "a": [2]}) == fingerprint({"a": [2], "b": 1})
True
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
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

from crop_hf.errors import OutputExistsError

logger = logging.getLogger(__name__)

__all__ = [
    "RESULT_RECORD",
    "FinishedShard",
    "ShardRun",
    "ShardStore",
    "atomic_write_bytes",
    "check_output_dir",
    "describe_inputs",
    "describe_processes",
    "fingerprint",
    "merge_shards",
    "process_state",
    "read_shard_rows",
    "row_descriptions",
    "row_features",
    "run_sharded",
    "run_shards",
    "running_alone",
    "save_dataset_dict",
    "shard_statistics",
    "shards_of",
]

#: One finished shard: ``(index, Parquet path, statistics)``, as :meth:`ShardStore.finished` yields it.
FinishedShard = tuple[int, Path, dict[str, Any]]

#: What processing one shard gives: ``(kept rows, discarded rows, counts per reason)``.
ShardOutput = tuple[Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]], Mapping[str, int]]

Merged = TypeVar("Merged")
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


def process_state() -> Any:
    """This process's Accelerate ``PartialState`` (index, count, device, barriers), honouring ``ACCELERATE_USE_CPU``."""
    from accelerate import PartialState
    from accelerate.utils import parse_flag_from_env

    # Unlike Accelerator, PartialState does not read ACCELERATE_USE_CPU itself; without it, CPU
    # processes started by torchrun would each believe they are alone.
    return PartialState(cpu=parse_flag_from_env("ACCELERATE_USE_CPU"))


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


def _meant_processes(environ: Mapping[str, str]) -> str | None:
    """How many processes the launcher meant to start, when more than one ("several" when it does not say).

    ``torchrun`` sets ``WORLD_SIZE``; ``accelerate launch --num_processes N`` with its simple
    launcher (the CPU, or no ``accelerate config``) sets only ``MASTER_ADDR``/``MASTER_PORT``,
    and only when N > 1, then starts one process. ``None``: not launched for several.

    >>> _meant_processes({"WORLD_SIZE": "4"}), _meant_processes({"WORLD_SIZE": "1"})
    ('4', None)
    >>> _meant_processes({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}), _meant_processes({"MASTER_PORT": "1"})
    ('several', None)
    """
    if environ.get("WORLD_SIZE"):
        return environ["WORLD_SIZE"] if int(environ["WORLD_SIZE"]) > 1 else None
    if environ.get("MASTER_ADDR") and environ.get("MASTER_PORT"):
        return "several"
    return None


def running_alone(job: str, count: int, environ: Mapping[str, str] | None = None) -> str | None:
    """The warning for a process launched for several that finds itself alone (``count`` 1), or ``None``.

    ``accelerate launch`` starts a single process on the CPU, whatever ``--num_processes`` says:
    the line names the commands that start several (training and corpus runs log it alike).

    >>> running_alone("train-ner", 1, {"WORLD_SIZE": "2"})[:57]
    'train-ner: launched for 2 processes but running alone (1 '
    >>> running_alone("train-ner", 2, {"WORLD_SIZE": "2"}) is None
    True
    """
    meant = _meant_processes(os.environ if environ is None else environ) if count == 1 else None
    if meant is None:
        return None
    return (f"{job}: launched for {meant} processes but running alone (1 process): `accelerate launch` "
            "starts a single process on the CPU, and on GPUs without `accelerate config`; for N CPU "
            "processes use `ACCELERATE_USE_CPU=1 torchrun --standalone --nproc_per_node N -m crop_hf.cli "
            "...`, for N GPUs `accelerate launch --multi_gpu --num_processes N -m crop_hf.cli ...`")


def describe_processes(state: Any, job: str, *, per: str = "",
                       environ: Mapping[str, str] | None = None) -> tuple[int, str]:
    """``(logging level, line)`` a long job logs at start: how many processes run it and which shards each takes.

    ``state`` has ``num_processes``; ``per`` names what each key is (``" of each language"``). A
    process launched for several that finds itself alone gets a WARNING naming commands that work.

    >>> from types import SimpleNamespace
    >>> describe_processes(SimpleNamespace(num_processes=2), "synthesize", per=" of each language", environ={})[1]
    'synthesize: 2 processes; shard k of each language goes to process k mod 2 (process 0: shards 0, 2, 4, ...; process 1: shards 1, 3, 5, ...)'
    >>> describe_processes(SimpleNamespace(num_processes=1), "synthesize", environ={})
    (20, 'synthesize: 1 process, taking every shard')
    >>> describe_processes(SimpleNamespace(num_processes=1), "synthesize", environ={"WORLD_SIZE": "4"})[1][:60]
    'synthesize: launched for 4 processes but running alone (1 pr'
    """
    count = state.num_processes
    alone = running_alone(job, count, environ)
    if alone is not None:
        return logging.WARNING, alone
    if count == 1:
        return logging.INFO, f"{job}: 1 process, taking every shard"
    shown = min(count, 4)
    each = "; ".join(f"process {k}: shards {', '.join(str(k + i * count) for i in range(3))}, ..."
                     for k in range(shown))
    rest = f"; ... process {count - 1}" if count > shown else ""
    return logging.INFO, f"{job}: {count} processes; shard k{per} goes to process k mod {count} ({each}{rest})"


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
    per_key: str = "",
    overwrite: bool = False,
    spellings: Mapping[str, str] | None = None,
    keys_name: str | None = None,
) -> ShardRun[Merged]:
    """A whole sharded run: check the output folder, process every key's shards, and merge on the main process.

    Every process first checks that the folder holds no finished result of other settings
    (:func:`check_output_dir`; ``overwrite`` lifts it) and the main process logs how many
    processes run and which shards each takes (:func:`describe_processes`). Each process then
    runs its shards of every key (:func:`run_shards`) with a progress bar (``description key``,
    main process only); when all are done the main process calls ``merge()`` (which reads
    ``store.finished(key)``) and records the result (``shards/result.json``) while the others
    wait. ``per_key`` names a key in that log line (``" of each language"``). ``shards(key)`` yields ``(index, items)``; ``process(key, index, items, status)``
    returns ``(kept rows, discarded rows, counts)`` and may call ``status(text)`` to show what it
    is doing on the bar.
    """
    keys = list(keys)
    state = process_state()
    # every process: all stop, none waits at a barrier
    check_output_dir(store, keys, overwrite=overwrite, spellings=spellings, keys_name=keys_name)
    if state.is_main_process:
        logger.log(*describe_processes(state, description or "run", per=per_key))
    run: ShardRun[Merged] = ShardRun(None, state.is_main_process)
    for key in keys:
        run.shards[key], run.skipped[key] = run_shards(
            store, key, shards(key), functools.partial(process, key), state, unit=unit,
            show_progress=show_progress and state.is_main_process, description=f"{description} {key}".strip())
    state.wait_for_everyone()
    if state.is_main_process:
        run.merged = merge()
        store.record_result(keys)
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
