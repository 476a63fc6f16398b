"""One contract for every long corpus job, and the one driver that runs them.

Corpus synthesis, translate-and-align, generate-and-filter and mark-parallel are each a
:class:`CorpusJob`. A job declares four things:

1. **its config**, a dataclass. The fields that change results are marked in their metadata
   (``metadata=changes_results({"help": ...})``, :func:`crop_hf.arguments.changes_results`);
   :func:`result_arguments` reads the marks by one rule for every job, and they make the run's
   fingerprint (the name of its shard folder). A field added after runs were written is marked
   ``unless_default=True``: at its default it is left out, so those runs keep their fingerprint.
2. **how it reads its input**: :meth:`CorpusJob.shard_keys` (a target language, say) and
   :meth:`CorpusJob.shards` (numbered lists of input items per key);
3. **a per-shard step**, :meth:`CorpusJob.process`, which returns a :class:`ShardResult` of typed
   kept and dropped records (dataclasses, declared as :attr:`CorpusJob.kept_type` and
   :attr:`CorpusJob.dropped_type`); each dropped record has a ``reason`` from the job's declared
   :attr:`CorpusJob.reasons`, and any other reason is an error, not a new column;
4. **its card**, :meth:`CorpusJob.card`, rendered from its own config.

:func:`run_job` does the rest alike for every job: the output-folder check, sharding, resume,
several processes (:func:`crop_hf.engine.shards.run_sharded`), the merge into ``dataset/`` and
``discarded/``, ``statistics.json``, the card (``README.md``) and the job's own extras;
:func:`push_output` uploads a finished folder. The per-record pieces the jobs share sit beside
this module (:mod:`~crop_hf.engine.records`, :mod:`~crop_hf.engine.language`,
:func:`~crop_hf.engine.shards.shards_of`), so no feature package imports another.

>>> from dataclasses import dataclass, field
>>> @dataclass
... class Config:
...     output_dir: str = field(default="out", metadata={"help": "where"})
...     max_words: int = field(default=128, metadata=changes_results({"help": "longest sentence"}))
...     symmetrization: str = field(default="gdfa", metadata=changes_results({"help": "how"}, unless_default=True))
>>> result_arguments(Config()), result_arguments(Config(symmetrization="union"))
({'max_words': 128}, {'max_words': 128, 'symmetrization': 'union'})
"""

from __future__ import annotations

import dataclasses
import json
import logging
import shlex
import sys
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from crop_hf import hub
from crop_hf.arguments import RENAMED_FROM, RESULT, UNLESS_DEFAULT, changes_results
from crop_hf.engine.shards import (
    ShardStore,
    atomic_write_bytes,
    describe_inputs,
    merge_shards,
    row_features,
    run_sharded,
    save_dataset_dict,
    shard_statistics,
)
from crop_hf.errors import check_output_path

logger = logging.getLogger(__name__)

__all__ = [
    "RESULT",
    "UNLESS_DEFAULT",
    "CorpusJob",
    "ShardResult",
    "changes_results",
    "push_output",
    "result_arguments",
    "result_fields",
    "run_job",
]


Kept = TypeVar("Kept")
Dropped = TypeVar("Dropped")
Result = TypeVar("Result")


def result_fields(config_type: type) -> tuple[str, ...]:
    """The names of ``config_type``'s fields marked as changing results, in field order."""
    return tuple(f.name for f in dataclasses.fields(config_type) if f.metadata.get(RESULT))


def result_arguments(config: Any) -> dict[str, Any]:
    """The values of ``config``'s fields marked as changing results: what a run's fingerprint is made of.

    A field marked :data:`UNLESS_DEFAULT` is left out while it holds its default; a renamed field
    (:func:`crop_hf.arguments.renamed_from`) appears under its old name.
    """
    values = dataclasses.asdict(config)
    arguments = {}
    for item in dataclasses.fields(config):
        mark = item.metadata.get(RESULT)
        if not mark or (mark == UNLESS_DEFAULT and values[item.name] == item.default):
            continue
        # A renamed option keeps its old name here: the runs written before the rename keep their fingerprint.
        arguments[item.metadata.get(RENAMED_FROM) or item.name] = values[item.name]
    return arguments


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

    def rows(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Counter]:
        """``(kept rows, dropped rows, counts per reason)``: the records as the dicts a shard file holds."""
        return ([dataclasses.asdict(row) for row in self.kept], [dataclasses.asdict(row) for row in self.dropped],
                self.reasons())


class CorpusJob(ABC, Generic[Kept, Dropped, Result]):
    """A long corpus job on the one contract; :func:`run_job` runs it.

    Subclasses set the class attributes and implement :meth:`shard_keys`, :meth:`shards`,
    :meth:`process`, :meth:`card` and :meth:`result`; the other methods have defaults that suit
    a job writing one ``DatasetDict`` split per key.

    Args:
        config: the job's config dataclass (with ``output_dir``; ``overwrite_output_dir`` and
            ``show_progress`` when it has them).
        inputs: in-memory inputs that replace the config's (part of the fingerprint, through
            their ``datasets`` fingerprint).
    """

    #: the job's name in log lines and progress bars (the command's name)
    name: ClassVar[str]
    #: why the job drops a record, in funnel order, and what each reason means
    reasons: ClassVar[Mapping[str, str]]
    kept_type: ClassVar[type]
    dropped_type: ClassVar[type]
    #: what the progress bar counts
    unit: ClassVar[str] = "it"
    #: what a key is, in the start-up line (``" of each language"``)
    per_key: ClassVar[str] = ""
    #: counts beyond ``input``, ``kept`` and the reasons that the statistics list (from :attr:`ShardResult.counts`)
    extra_counts: ClassVar[tuple[str, ...]] = ()
    #: the option that lists the keys, as refusals name it (``"--tgt_langs"``); ``None``: the keys go unnamed
    keys_option: ClassVar[str | None] = None

    def __init__(self, config: Any, inputs: Any = None) -> None:
        self.config = config
        self.inputs = inputs
        self.store = ShardStore(self.output_dir, self.fingerprint_arguments())

    # --- identity -------------------------------------------------------------------------------

    @property
    def output_dir(self) -> Path:
        return Path(self.config.output_dir)

    @property
    def show_progress(self) -> bool:
        """Whether the main process shows this run's progress bar (the config's ``show_progress``, else yes)."""
        return getattr(self.config, "show_progress", True)

    @property
    def overwrite(self) -> bool:
        """Whether a finished result of other settings in the output folder may be replaced."""
        return getattr(self.config, "overwrite_output_dir", False)

    def fingerprint_arguments(self) -> dict[str, Any]:
        """What makes the run's fingerprint: the config's result fields and the in-memory inputs."""
        return {**result_arguments(self.config), "inputs": describe_inputs(self.inputs)}

    def option_spellings(self) -> dict[str, str]:
        """How the user spells each fingerprint name (``{"max_sentences": "--max_examples"}``): the config's
        fields, and those of a config it holds, by their option names; a renamed field keeps its old name
        in the fingerprint."""
        spellings: dict[str, str] = {}
        configs = [self.config]
        while configs:
            config = configs.pop()
            for item in dataclasses.fields(config):
                value = getattr(config, item.name)
                if dataclasses.is_dataclass(value) and not isinstance(value, type):
                    configs.append(value)
                else:
                    spellings[item.metadata.get(RENAMED_FROM) or item.name] = f"--{item.name}"
        return spellings

    @property
    def statistics_columns(self) -> tuple[str, ...]:
        """The counts a run reports per key, in table order."""
        return ("input", "kept", *self.reasons, *self.extra_counts)

    # --- what every job declares ----------------------------------------------------------------

    @abstractmethod
    def shard_keys(self) -> list[str]:
        """The run's keys (each has its own shards and its own split of the outputs)."""

    @abstractmethod
    def shards(self, key: str) -> Iterable[tuple[int, Sequence[Any]]]:
        """``(index, items)`` of every shard of ``key``, in order (:func:`~crop_hf.engine.shards.shards_of`)."""

    @abstractmethod
    def process(self, key: str, index: int, items: Sequence[Any], status: Any) -> ShardResult[Kept, Dropped]:
        """The job's step on one shard; ``status(text)`` shows what it is doing on the progress bar."""

    @abstractmethod
    def card(self, statistics: Mapping[str, Mapping[str, float]], *, command_line: str) -> str:
        """The dataset card of the merged outputs (``README.md``)."""

    @abstractmethod
    def result(self, statistics: Mapping[str, Mapping[str, float]], skipped: Mapping[str, int]) -> Result:
        """What :func:`run_job` returns (``statistics`` is empty on a process other than the main one)."""

    # --- hooks with defaults --------------------------------------------------------------------

    def before_run(self) -> None:
        """Called once per run before any shard (warnings a user should see before hours of work)."""

    def split(self, key: str) -> str:
        """The split of ``dataset/`` and ``discarded/`` that ``key``'s rows go to."""
        return key

    def kept_features(self) -> Any:
        """The ``datasets.Features`` of the kept rows."""
        return row_features(self.kept_type)

    def dropped_features(self) -> Any:
        """The ``datasets.Features`` of the dropped rows."""
        return row_features(self.dropped_type)

    def finish_kept(self, dataset: Any) -> Any:
        """The merged kept rows of a key as they are saved (e.g. numbered)."""
        return dataset

    def statistics_record(self, statistics: Mapping[str, Mapping[str, float]]) -> Any:
        """What ``statistics.json`` holds (default: the counts per key)."""
        return dict(statistics)

    def write_outputs(self, statistics: Mapping[str, Mapping[str, float]]) -> None:
        """Write the merged outputs (main process, after every shard): ``dataset/`` and ``discarded/`` by default."""
        import datasets

        kept, dropped = datasets.DatasetDict(), datasets.DatasetDict()
        for key in self.shard_keys():
            finished = list(self.store.finished(key))
            kept[self.split(key)] = self.finish_kept(merge_shards(finished, True, self.kept_features()))
            dropped[self.split(key)] = merge_shards(finished, False, self.dropped_features())
        save_dataset_dict(kept, self.output_dir / "dataset")
        save_dataset_dict(dropped, self.output_dir / "discarded")

    def after_merge(self, statistics: Mapping[str, Mapping[str, float]]) -> None:
        """Called on the main process once the outputs and the card are written (reports, saved models)."""


def _check_types(records: Sequence[Any], expected: type, what: str, job: CorpusJob) -> None:
    for record in records:
        if not isinstance(record, expected):
            raise TypeError(f"{job.name}: a {what} record must be a {expected.__name__}, got {type(record).__name__}")


def _step(job: CorpusJob, key: str, index: int, items: Sequence[Any], status: Any):
    """Run the job's step on one shard and check its records: ``(kept rows, dropped rows, counts)``."""
    result = job.process(key, index, items, status)
    _check_types(result.kept, job.kept_type, "kept", job)
    _check_types(result.dropped, job.dropped_type, "dropped", job)
    kept, dropped, reasons = result.rows()
    undeclared = sorted(str(reason) for reason in reasons if reason not in job.reasons)
    if undeclared:
        raise ValueError(f"{job.name}: dropped records with undeclared reason(s) {undeclared}; "
                         f"its reasons are {list(job.reasons)}")
    unknown = sorted(set(result.counts) - set(job.extra_counts))
    if unknown:
        raise ValueError(f"{job.name}: counts {unknown} are not among its extra_counts {list(job.extra_counts)}")
    logger.info("%s shard %d: %d of %d kept", key, index, len(result.kept), len(items))
    return kept, dropped, {**reasons, **result.counts}


def _merge(job: CorpusJob) -> dict[str, dict[str, float]]:
    statistics = {key: shard_statistics(job.store.finished(key), job.statistics_columns) for key in job.shard_keys()}
    job.write_outputs(statistics)
    atomic_write_bytes(job.output_dir / "statistics.json",
                       json.dumps(job.statistics_record(statistics), indent=2).encode("utf-8"))
    command_line = shlex.join([Path(sys.argv[0]).name, *sys.argv[1:]])
    atomic_write_bytes(job.output_dir / "README.md", job.card(statistics, command_line=command_line).encode("utf-8"))
    job.after_merge(statistics)
    return statistics


def run_job(job: CorpusJob[Any, Any, Result]) -> Result:
    """Run ``job`` to the end: every unfinished shard of this process, then (main process) the merge.

    The output folder must not hold a finished result of other settings (``overwrite_output_dir``
    lifts that); shard ``k`` of every key belongs to process ``k % num_processes``; a finished
    shard is skipped on a rerun. The main process merges the finished shards (:meth:`CorpusJob.write_outputs`),
    writes ``statistics.json`` and the card, and calls :meth:`CorpusJob.after_merge`. An output folder
    that is a file (or lies under one) fails first, before :meth:`CorpusJob.before_run` reads or loads anything.
    """
    check_output_path(job.output_dir, "--output_dir")
    keys = job.shard_keys()
    job.before_run()
    run = run_sharded(job.store, keys, job.shards, lambda *shard: _step(job, *shard), lambda: _merge(job),
                      show_progress=job.show_progress, description=job.name, unit=job.unit, per_key=job.per_key,
                      overwrite=job.overwrite, spellings=job.option_spellings(), keys_name=job.keys_option)
    return job.result(run.merged or {}, dict(run.skipped))


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
