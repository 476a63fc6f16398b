"""One contract for every long corpus job, and the one driver that runs them.

Corpus synthesis, translate-and-align, generate-and-filter and mark-parallel are each a
:class:`CorpusJob`. A job declares four things:

1. **its config**, a :class:`~crop_hf.engine.options.RunOptions` dataclass; its fields that change
   results make the run's fingerprint (the name of its shard folder), by one rule;
2. **how it reads its input**: its keys are the values of one config field (:attr:`CorpusJob.keys_field`,
   the target languages, say) and :meth:`CorpusJob.shards` gives each key's input in
   numbered lists (:func:`~crop_hf.engine.shards.shards_of`);
3. **a per-shard step**, :meth:`CorpusJob.process`, which returns a :class:`ShardResult` of typed
   kept and dropped records (dataclasses, declared as :attr:`CorpusJob.kept_type` and
   :attr:`CorpusJob.dropped_type`); each dropped record has a ``reason`` from the job's declared
   :attr:`CorpusJob.reasons`, and any other reason is an error, not a new column;
4. **its card**, :meth:`CorpusJob.card`, rendered from its own config.

:func:`run_job` does the rest alike for every job: the output-folder check (before any hook of
the job), which process takes which shard, resume, the merge into ``dataset/`` and
``discarded/``, ``statistics.json``, the card (``README.md``) and the job's own extras; it
returns one :class:`JobResult`. :func:`push_output` uploads a finished folder. The storage
underneath is :mod:`crop_hf.engine.shards`; the process helpers, shared with training, are
:mod:`crop_hf.engine.processes`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import shlex
import shutil
import sys
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from crop_hf import hub
from crop_hf.engine import processes
from crop_hf.engine.records import row_features
from crop_hf.engine.shards import (
    ShardStore,
    atomic_write_bytes,
    check_output_dir,
    describe_inputs,
    merge_shards,
    save_dataset_dict,
    save_hub_layout,
    shard_statistics,
)
from crop_hf.errors import check_output_path
from crop_hf.tables import format_table

logger = logging.getLogger(__name__)

__all__ = ["CorpusJob", "JobResult", "ShardResult", "push_output", "run_job"]


Kept = TypeVar("Kept")
Dropped = TypeVar("Dropped")


@dataclasses.dataclass
class ShardResult(Generic[Kept, Dropped]):
    """What a job's step made of one shard: typed kept and dropped records, and counts of its own.

    ``counts`` holds what the statistics count beyond ``input``, ``kept`` and the drop reasons
    (which the driver counts from ``dropped``), e.g. generate-and-filter's ``generated``.
    """

    kept: list[Kept]
    dropped: list[Dropped]
    counts: dict[str, float] = dataclasses.field(default_factory=dict)

    def reasons(self) -> Counter:
        """How many dropped records each reason has."""
        return Counter(getattr(record, "reason", None) for record in self.dropped)


@dataclasses.dataclass
class JobResult:
    """What a corpus job's run gives back, alike for every job (:func:`run_job` builds it).

    ``statistics[split]`` holds the counts of one split of the outputs (``input``, ``kept``, one
    per drop reason, and the job's own), on the main process (empty on the others, which do not
    merge). ``skipped_shards[split]``: this process's shards an earlier run had
    finished. ``notes``: lines the report adds (how the labels were placed, where time went).
    """

    output_dir: Path
    statistics: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)
    skipped_shards: dict[str, int] = dataclasses.field(default_factory=dict)
    notes: list[str] = dataclasses.field(default_factory=list)
    #: what a split is, in the table's header (``"lang"``)
    key_name: str = "split"

    @property
    def dataset_path(self) -> Path:
        return self.output_dir / "dataset"

    @property
    def discarded_path(self) -> Path:
        return self.output_dir / "discarded"

    def _data_files(self) -> list[str]:
        """Mark-parallel's ``data-*.parquet`` files, where a job writes those instead of ``dataset/``."""
        if self.dataset_path.is_dir():
            return []
        return sorted(str(path) for path in self.output_dir.glob("data-*.parquet"))

    @cached_property
    def dataset(self) -> Any:
        """The kept rows: ``dataset/`` (a ``DatasetDict``, one split per key), or mark-parallel's
        ``data-*.parquet`` files (one ``Dataset``), memory-mapped; ``None`` when there are neither."""
        import datasets

        files = self._data_files()
        if files:
            return datasets.Dataset.from_parquet(files, split="train")
        return datasets.load_from_disk(str(self.dataset_path)) if self.dataset_path.is_dir() else None

    def empty(self) -> list[str]:
        """The splits whose corpus came out empty after filtering."""
        return [split for split, counts in self.statistics.items() if not counts.get("kept", 0)]

    def table(self) -> str:
        """The counts as a plain-text table: a row per split (and a total row when there are several)."""
        columns = list(next(iter(self.statistics.values()), {}))
        rows = [[split, *(counts.get(c, 0) for c in columns)] for split, counts in self.statistics.items()]
        if len(rows) > 1:
            rows.append(["total", *(sum(counts.get(c, 0) for counts in self.statistics.values()) for c in columns)])
        return format_table([self.key_name, *columns], rows)

    def report(self) -> str:
        """The table, the notes and where the outputs are: what a command prints at the end of a run."""
        lines, empty = [self.table(), *self.notes], self.empty()
        if empty:
            lines.append(f"nothing kept for {', '.join(empty)}: see {self.discarded_path} for why each was dropped")
        data = self.output_dir / "data-*.parquet" if self._data_files() else self.dataset_path
        lines += ["", f"dataset: {data}", f"discarded: {self.discarded_path}", f"card: {self.output_dir / 'README.md'}"]
        if any(self.skipped_shards.values()):
            counts = ", ".join(f"{split} {count}" for split, count in self.skipped_shards.items() if count)
            lines.append(f"resumed: skipped {sum(self.skipped_shards.values())} shard(s) an earlier run had "
                         f"finished ({counts})")
        return "\n".join(lines)


class CorpusJob(ABC, Generic[Kept, Dropped]):
    """A long corpus job on the one contract; :func:`run_job` runs it.

    Subclasses set the class attributes and implement :meth:`shards`, :meth:`process` and
    :meth:`card`; the other methods have defaults that suit a job writing one ``DatasetDict``
    split per key.

    Args:
        config: the job's :class:`~crop_hf.engine.options.RunOptions`.
        inputs: in-memory inputs that replace the config's (part of the fingerprint, through
            their ``datasets`` fingerprint).
    """

    #: the job's name in log lines and progress bars (the command's name)
    name: ClassVar[str]
    #: why the job drops a record, in funnel order, and what each reason means
    reasons: ClassVar[Mapping[str, str]]
    kept_type: ClassVar[type]
    dropped_type: ClassVar[type]
    #: the config field whose value (a list, or one value) is the run's keys; ``None``: one key, ``"train"``
    keys_field: ClassVar[str | None] = None
    #: the split of ``dataset/`` and ``discarded/`` every key's rows go to; ``None``: the key's own
    split_name: ClassVar[str | None] = None
    #: what a split is, in the result's table (``"lang"``)
    key_name: ClassVar[str] = "split"
    #: what the progress bar counts
    unit: ClassVar[str] = "it"
    #: what a key is, in the start-up line (``" of each language"``)
    per_key: ClassVar[str] = ""
    #: counts beyond ``input``, ``kept`` and the reasons that the statistics list (from :attr:`ShardResult.counts`)
    extra_counts: ClassVar[tuple[str, ...]] = ()
    #: whether a rerun can tell its inputs from others; if not, a run starts afresh (its shard folder removed)
    resumable: bool = True

    def __init__(self, config: Any, inputs: Any = None) -> None:
        self.config = config
        self.inputs = inputs
        self.store = ShardStore(self.output_dir, self.fingerprint_arguments())

    @property
    def output_dir(self) -> Path:
        return Path(self.config.output_dir)

    @property
    def keys(self) -> list[str]:
        """The run's keys (each has its own shards and its own split of the outputs)."""
        if self.keys_field is None:
            return ["train"]
        value = getattr(self.config, self.keys_field)
        return [value] if isinstance(value, str) else list(value)

    def split(self, key: str) -> str:
        return self.split_name or key

    def fingerprint_arguments(self) -> dict[str, Any]:
        """What makes the run's fingerprint: the config's result fields, the in-memory inputs, and the content
        digests of the local files and model folders the config names (:meth:`~crop_hf.engine.options.RunOptions.content_digests`)."""
        return {**self.config.result_arguments(), "inputs": describe_inputs(self.inputs),
                **self.config.content_digests(self.keys)}

    @property
    def statistics_columns(self) -> tuple[str, ...]:
        """The counts a run reports per key, in table order."""
        return ("input", "kept", *self.reasons, *self.extra_counts)

    # --- what every job declares ----------------------------------------------------------------

    @abstractmethod
    def shards(self, key: str) -> Iterable[tuple[int, Sequence[Any]]]:
        """``(index, items)`` of every shard of ``key``, in order (:func:`~crop_hf.engine.shards.shards_of`)."""

    @abstractmethod
    def process(self, key: str, index: int, items: Sequence[Any], status: Any) -> ShardResult[Kept, Dropped]:
        """The job's step on one shard; ``status(text)`` shows what it is doing on the progress bar."""

    @abstractmethod
    def card(self, statistics: Mapping[str, Mapping[str, float]], *, command_line: str) -> str:
        """The dataset card of the merged outputs (``README.md``); ``statistics`` as :meth:`counts` gives them."""

    # --- hooks with defaults --------------------------------------------------------------------

    def before_run(self) -> None:
        """Called once per run, after the output folder is checked and before any shard (read inputs, warn)."""

    def kept_features(self) -> Any:
        """The ``datasets.Features`` of the kept rows."""
        return row_features(self.kept_type)

    def dropped_features(self) -> Any:
        """The ``datasets.Features`` of the dropped rows."""
        return row_features(self.dropped_type)

    def finish_kept(self, dataset: Any) -> Any:
        """The merged kept rows of a key as they are saved (e.g. numbered)."""
        return dataset

    def write_outputs(self) -> None:
        """Write the merged outputs (main process, after every shard): by default ``dataset/`` (``load_from_disk``),
        the same rows as the Hub holds them (``data/``, which the card's ``configs`` name, so that
        ``load_dataset(output_dir)`` opens the folder; :func:`~crop_hf.engine.shards.save_hub_layout`) and
        ``discarded/``."""
        import datasets

        kept, dropped = datasets.DatasetDict(), datasets.DatasetDict()
        for key in self.keys:
            finished = list(self.store.finished(key))
            kept[self.split(key)] = self.finish_kept(merge_shards(finished, True, self.kept_features()))
            dropped[self.split(key)] = merge_shards(finished, False, self.dropped_features())
        save_dataset_dict(kept, self.output_dir / "dataset")
        save_hub_layout(kept, self.output_dir)
        save_dataset_dict(dropped, self.output_dir / "discarded")

    def counts(self, statistics: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
        """The counts per split that the result, the card and ``statistics.json`` show (default: the shards' sums)."""
        return {self.split(key): dict(values) for key, values in statistics.items()}

    def statistics_file(self, counts: Mapping[str, Mapping[str, float]]) -> Any:
        """What ``statistics.json`` holds: the counts per split, or the one split's own where every key's rows go
        to one (:attr:`split_name`: translate-and-align's and generate-and-filter's flat funnel)."""
        return dict(counts[self.split_name]) if self.split_name else dict(counts)

    def notes(self) -> list[str]:
        """Lines the result's report adds below its table."""
        return []

    def after_merge(self) -> None:
        """Called on the main process once the outputs and the card are written (reports, saved models)."""


def _step(job: CorpusJob, key: str, index: int, items: Sequence[Any], status: Any):
    """Run the job's step on one shard and check its records: ``(kept rows, dropped rows, counts)``."""
    result = job.process(key, index, items, status)
    for records, expected, what in ((result.kept, job.kept_type, "kept"), (result.dropped, job.dropped_type, "dropped")):
        for record in records:
            if not isinstance(record, expected):
                raise TypeError(f"{job.name}: a {what} record must be a {expected.__name__}, got "
                                f"{type(record).__name__}")
    reasons = result.reasons()
    undeclared = sorted(str(reason) for reason in reasons if reason not in job.reasons)
    if undeclared:
        raise ValueError(f"{job.name}: dropped records with undeclared reason(s) {undeclared}; "
                         f"its reasons are {list(job.reasons)}")
    unknown = sorted(set(result.counts) - set(job.extra_counts))
    if unknown:
        raise ValueError(f"{job.name}: counts {unknown} are not among its extra_counts {list(job.extra_counts)}")
    logger.info("%s shard %d: %d of %d kept", key, index, len(result.kept), len(items))
    return ([dataclasses.asdict(row) for row in result.kept], [dataclasses.asdict(row) for row in result.dropped],
            {**reasons, **result.counts})


def _run_key(job: CorpusJob, key: str, state: Any) -> int:
    """This process's unfinished shards of ``key``, each written when done; how many of its shards were skipped.

    Shard ``k`` belongs to process ``k % state.num_processes``; a finished shard is skipped (and
    logged). The rows go into one Parquet file (``kept`` and the row as JSON in ``row``) with the
    statistics ``input``, ``kept``, the counts and ``process_index``.
    """
    from tqdm.auto import tqdm

    total = skipped = 0
    shown = job.config.show_progress and state.is_main_process
    with tqdm(desc=f"{job.name} {key}", unit=job.unit, disable=not shown) as progress:
        for index, items in job.shards(key):
            if index % state.num_processes != state.process_index:
                continue
            total += 1
            if job.store.is_done(key, index):
                skipped += 1
            else:
                kept, dropped, counts = _step(job, key, index, items, lambda text, index=index:
                                              progress.set_postfix_str(f"shard {index}: {text}"))
                stats = {"input": len(items), "kept": len(kept), **counts, "process_index": state.process_index}
                # Kept and dropped rows share one file, so a shard is written (and renamed) in one step.
                rows = [{"kept": flag, "row": json.dumps(row, ensure_ascii=False)}
                        for flag, part in ((True, kept), (False, dropped)) for row in part]
                job.store.write(key, index, rows, stats)
            progress.update(len(items))
    if skipped:  # each process says it for its own shards (only the main one's lines are shown by crop-hf)
        logger.info("%s: resumed: skipped %d of %d shard(s) already finished in %s", key, skipped, total,
                    job.store.root / key)
    return skipped


def _statistics(job: CorpusJob) -> dict[str, dict[str, float]]:
    return {key: shard_statistics(job.store.finished(key), job.statistics_columns) for key in job.keys}


def _merge(job: CorpusJob) -> dict[str, dict[str, float]]:
    """Write the outputs, ``statistics.json`` and the card; the counts per split they show."""
    job.write_outputs()
    counts = job.counts(_statistics(job))
    atomic_write_bytes(job.output_dir / "statistics.json",
                       json.dumps(job.statistics_file(counts), indent=2).encode("utf-8"))
    command_line = shlex.join([Path(sys.argv[0]).name, *sys.argv[1:]])
    atomic_write_bytes(job.output_dir / "README.md", job.card(counts, command_line=command_line).encode("utf-8"))
    job.after_merge()
    return counts


def run_job(job: CorpusJob) -> JobResult:
    """Run ``job`` to the end: every unfinished shard of this process, then (main process) the merge.

    First, before any hook of the job reads or loads anything, the output folder is checked: it
    must not be a file, nor hold a finished result of other settings (``overwrite_output_dir``
    lifts that; :func:`~crop_hf.engine.shards.check_output_dir`). A job whose inputs cannot be
    recognised again (``resumable`` false) starts afresh: the main process removes its shard
    folder. Then :meth:`CorpusJob.before_run`; shard ``k`` of every key belongs to process ``k %
    num_processes``; a finished shard is skipped on a rerun. The main process merges
    (:meth:`CorpusJob.write_outputs`), writes ``statistics.json`` and the card, calls
    :meth:`CorpusJob.after_merge` and records the result (``shards/result.json``) while the
    others wait.
    """
    check_output_path(job.output_dir, "--output_dir")
    keys, state = job.keys, processes.process_state()
    # every process checks: all stop, none waits at a barrier
    check_output_dir(job.store, keys, overwrite=job.config.overwrite_output_dir, spellings=job.config.option_spellings(),
                     keys_name=f"--{job.keys_field}" if job.keys_field else None)
    if not job.resumable:
        if state.is_main_process:
            shutil.rmtree(job.store.root, ignore_errors=True)
        state.wait_for_everyone()
    job.before_run()
    if state.is_main_process:
        logger.log(*processes.describe_processes(state, job.name, per=job.per_key))
    skipped = {job.split(key): _run_key(job, key, state) for key in keys}
    state.wait_for_everyone()
    statistics = {}
    if state.is_main_process:
        statistics = _merge(job)
        job.store.record_result(keys)
    state.wait_for_everyone()
    return JobResult(job.output_dir, statistics, skipped, job.notes(), job.key_name)


def push_output(output_dir: str | Path, repo_id: str, *, private: bool = False, token: str | None = None) -> str:
    """Publish a finished job folder: ``dataset/`` (one split per key, parquet), ``report/`` if any, then the card.

    Returns the dataset's URL on the Hub.
    """
    import datasets

    output_dir = Path(output_dir)
    card = (output_dir / "README.md").read_text(encoding="utf-8")
    report = output_dir / "report"  # the card links these files (crop-hf report / synthesize --report)
    return hub.push_dataset(datasets.load_from_disk(str(output_dir / "dataset")), repo_id, card, private=private,
                        token=token, folders={"report": report} if report.is_dir() else None)
