"""``mark-parallel`` as a corpus job: read sentence pairs, align them a shard at a time, mark, write.

The job behind ``crop-hf mark-parallel`` and :func:`mark_parallel`, on the contract of
:mod:`crop_hf.engine.jobs`: its config (:class:`MarkParallelConfig`: the marking options and the
run options), the readers of parallel text (:func:`pairs_from_files`, :func:`pairs_from_dataset`),
the rows it writes, and its card (``model_cards/marked_parallel_card.md``). The phrase extraction
and the marking themselves are :mod:`crop_hf.translation.parallel`.

A shard is ``shard_size`` sentence pairs, screened, aligned per language pair (eflomal learns
from the whole shard), then extracted and marked; the merge writes ``data-*.parquet``
(``rows_per_file`` kept rows each: ``crop-hf train-translation --train_file`` reads them),
``discarded/`` (the dropped pairs), ``statistics.json`` and ``README.md``.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import itertools
import json
import logging
import random
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from crop_hf.alignment import EflomalAligner
from crop_hf.data.readers.words import read_function_words
from crop_hf.engine import processes
from crop_hf.engine.jobs import CorpusJob, JobResult, ShardResult, run_job
from crop_hf.engine.options import RunOptions
from crop_hf.engine.records import row_descriptions
from crop_hf.engine.shards import (
    atomic_write_bytes,
    read_shard_rows,
    save_dataset_dict,
    shard_statistics,
    shards_of,
)
from crop_hf.errors import EmptyInputError
from crop_hf.hub import card_template, size_category
from crop_hf.markers import MarkerStyle, get_marker_style
from crop_hf.tables import format_table
from crop_hf.translation.parallel import (
    MarkedPair,
    MarkingConfig,
    ParallelPair,
    PhrasePair,
    mark_aligned,
    words,
)

__all__ = [
    "DROP_REASONS",
    "DroppedPair",
    "MarkParallelConfig",
    "MarkParallelJob",
    "MarkedRow",
    "mark_parallel",
    "pairs_from_dataset",
    "pairs_from_files",
]

logger = logging.getLogger(__name__)

#: Why a sentence pair is dropped before alignment.
DROP_REASONS: dict[str, str] = {
    "empty": "one side is empty or whitespace only",
    "has_marker": "one side already contains a marker of the chosen style",
    "too_long": "one side has more words than max_words",
}


@dataclass
class MarkParallelConfig(MarkingConfig, RunOptions):
    """The options of a mark-parallel run: the marking (:class:`~crop_hf.translation.parallel.MarkingConfig`)
    and the run options, of which ``shard_size`` is the pairs aligned together and resumed as one.

    Every field changes the rows (the run's fingerprint) but the run options and ``rows_per_file``,
    which only cuts the same rows into other files. ``shard_size`` was called ``align_chunk_size``
    (the former spelling still reads, and names it in the fingerprint).
    """

    run_only = ("rows_per_file",)
    renamed: ClassVar[Mapping[str, str]] = {"align_chunk_size": "shard_size"}

    output_dir: str = field(kw_only=True, metadata={
        "help": "Folder for the data-*.parquet files, statistics.json, discarded/, README.md and the resumable "
                "shards/ of the run."})
    shard_size: int = field(default=200_000, kw_only=True, metadata={
        "help": "Sentence pairs aligned together (eflomal learns from the whole shard; memory grows with it), "
                "each the unit a rerun resumes from."})
    rows_per_file: int = field(default=10_000, metadata={"help": "Rows per data-*.parquet file written."})

    def __post_init__(self) -> None:
        RunOptions.__post_init__(self)
        MarkingConfig.__post_init__(self)
        if self.rows_per_file < 1:
            raise ValueError(f"rows_per_file must be at least 1, got {self.rows_per_file}")


def _open_text(path: Path):
    return gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else path.open(encoding="utf-8")


def _count_lines(path: Path) -> tuple[int, int]:
    """The lines of a text file, and those that are not blank."""
    lines = sentences = 0
    with _open_text(path) as handle:
        for line in handle:
            lines += 1
            sentences += bool(line.strip())
    return lines, sentences


def pairs_from_files(source_file: str | Path, target_file: str | Path, src_lang: str, tgt_lang: str) -> Iterator[ParallelPair]:
    """Stream the line pairs of two aligned text files (``.gz`` read as gzip).

    Before the first pair is given out, both files are read: a missing file is a ``FileNotFoundError``,
    one without a sentence (blank lines skipped) an :class:`~crop_hf.errors.EmptyInputError`, each
    naming the file and its option (``--source_files``, ``--target_files``); files of different
    lengths are a ``ValueError`` naming both files and both line counts.
    """
    source_file, target_file = Path(source_file), Path(target_file)
    counts = []
    for path, option in ((source_file, "--source_files"), (target_file, "--target_files")):
        if not path.is_file():
            raise FileNotFoundError(f"{option}: no file {path}")
        lines, sentences = _count_lines(path)
        if not sentences:
            raise EmptyInputError(f"{option} {path}: no sentences (blank lines are skipped)")
        counts.append(lines)
    n_source, n_target = counts
    if n_source != n_target:
        raise ValueError(f"--source_files, --target_files: {source_file} has {n_source} lines but {target_file} has "
                         f"{n_target}: the files of a parallel corpus must be line-aligned")

    def generate() -> Iterator[ParallelPair]:
        with _open_text(source_file) as src, _open_text(target_file) as tgt:
            for number, (s, t) in enumerate(zip(src, tgt, strict=True), start=1):
                yield ParallelPair(s.rstrip("\n"), t.rstrip("\n"), src_lang, tgt_lang, str(source_file), number)

    return generate()


def pairs_from_dataset(
    dataset: Iterable[Mapping[str, Any]],
    language_pairs: Sequence[tuple[str, str]] | None = None,
    *,
    source_column: str | None = None,
    target_column: str | None = None,
    origin: str = "dataset",
) -> Iterator[ParallelPair]:
    """Sentence pairs of a ``datasets.Dataset`` (or any iterable of rows).

    * a ``translation`` column of ``{"en": ..., "de": ...}`` dicts: one pair per row and
      language pair in ``language_pairs`` (default: every ordered pair of the first row's
      languages taken once, in column order, e.g. ``[("en", "de")]``);
    * ``source_column``/``target_column``: two text columns; ``language_pairs`` then holds the
      one ``(src_lang, tgt_lang)`` they are in.
    """
    rows = iter(dataset)
    if source_column or target_column:
        if not (source_column and target_column) or not language_pairs or len(language_pairs) != 1:
            raise ValueError("two text columns need source_column, target_column and one (src_lang, tgt_lang)")
        (src_lang, tgt_lang), = language_pairs
        for index, row in enumerate(rows):
            yield ParallelPair(str(row[source_column] or ""), str(row[target_column] or ""), src_lang, tgt_lang,
                               origin, index)
        return
    first = next(rows, None)
    if first is None:
        return
    if "translation" not in first:
        raise ValueError(f"{origin}: expected a 'translation' column or source_column/target_column; "
                         f"columns are {sorted(first)}")
    if not language_pairs:
        langs = list(first["translation"])
        language_pairs = [(langs[i], langs[j]) for i in range(len(langs)) for j in range(i + 1, len(langs))]
    for index, row in enumerate(itertools.chain([first], rows)):
        translation = row["translation"]
        for src_lang, tgt_lang in language_pairs:
            if src_lang not in translation or tgt_lang not in translation:
                raise ValueError(f"{origin} row {index}: no {src_lang!r} or {tgt_lang!r} in its translation "
                                 f"(it has {sorted(translation)})")
            yield ParallelPair(str(translation[src_lang] or ""), str(translation[tgt_lang] or ""), src_lang, tgt_lang,
                               origin, index)


@dataclass
class MarkedRow:
    """One row of the marked dataset: a sentence pair in one direction."""

    source: str = field(metadata={"help": "the source sentence with markers"})
    target: str = field(metadata={"help": "the target sentence with the same markers"})
    src_lang: str = field(metadata={"help": "the source language"})
    tgt_lang: str = field(metadata={"help": "the target language"})
    slots: list[dict[str, Any]] = field(metadata={"help": "per marked phrase pair: its slot number, source and target"})
    source_text: str = field(metadata={"help": "the source sentence without markers"})
    target_text: str = field(metadata={"help": "the target sentence without markers"})
    phrase_pairs: list[list[int]] = field(
        metadata={"help": "every candidate phrase pair as character spans (source start, end, target start, end), "
                          "for drawing markers afresh each epoch"})
    origin: str = field(metadata={"help": "the file or dataset the pair comes from"})
    line: int = field(metadata={"help": "its line (files, from 1) or row (datasets, from 0) there"})


@dataclass
class DroppedPair:
    """A sentence pair dropped before alignment, why, and where it came from."""

    reason: str = field(metadata={"help": "why it was dropped (DROP_REASONS)"})
    source: str = field(metadata={"help": "the source sentence"})
    target: str = field(metadata={"help": "the target sentence"})
    src_lang: str = field(metadata={"help": "the source language"})
    tgt_lang: str = field(metadata={"help": "the target language"})
    origin: str = field(metadata={"help": "the file or dataset the pair comes from"})
    line: int = field(metadata={"help": "its line (files, from 1) or row (datasets, from 0) there"})


def _schema():
    """The Arrow schema of ``data-*.parquet`` (fixed: ``crop-hf train-translation`` reads these files)."""
    import pyarrow as pa

    slot = pa.struct([("slot", pa.int32()), ("source", pa.string()), ("target", pa.string())])
    return pa.schema([
        ("source", pa.string()), ("target", pa.string()), ("src_lang", pa.string()), ("tgt_lang", pa.string()),
        ("slots", pa.list_(slot)), ("source_text", pa.string()), ("target_text", pa.string()),
        ("phrase_pairs", pa.list_(pa.list_(pa.int32()))), ("origin", pa.string()), ("line", pa.int64()),
    ])


def _screen(pair: ParallelPair, style: MarkerStyle, max_words: int) -> str | None:
    if not pair.source.strip() or not pair.target.strip():
        return "empty"
    if style.find(pair.source) or style.find(pair.target):
        return "has_marker"
    if len(words(pair.source)) > max_words or len(words(pair.target)) > max_words:
        return "too_long"
    return None


def _shard_rng(seed: int, index: int) -> random.Random:
    """Shard 0 draws from ``Random(seed)`` (a one-chunk corpus marks as earlier releases did); shard k from
    a generator of its own, so that shards can be resumed and shared between processes in any order."""
    return random.Random(seed) if index == 0 else random.Random(f"mark-parallel:{seed}:{index}")


class MarkParallelJob(CorpusJob[MarkedRow, DroppedPair]):
    """Mark-parallel on the corpus-job contract (:func:`crop_hf.engine.jobs.run_job`).

    ``inputs_id`` describes ``pairs`` (files with sizes and modification times, or a dataset, its
    config, split and language pairs): with it, a rerun with the same settings and inputs resumes
    from the finished shards; without it, the pairs cannot be recognised again and every run starts
    afresh (the job is not ``resumable``). ``aligner`` (default :class:`~crop_hf.alignment.EflomalAligner`)
    is not part of the fingerprint: change ``inputs_id`` with it.
    """

    name = "mark-parallel"
    reasons = DROP_REASONS
    kept_type = MarkedRow
    dropped_type = DroppedPair
    unit = " pairs"
    extra_counts = ("marked_pairs", "slots", "seconds_align", "seconds_extract_and_mark")

    def __init__(self, config: MarkParallelConfig, pairs: Iterable[ParallelPair], aligner: Any = None,
                 inputs_id: str | None = None) -> None:
        self.inputs_id = inputs_id
        super().__init__(config, pairs)
        self.resumable = inputs_id is not None
        self.aligner = aligner if aligner is not None else EflomalAligner()
        self.style = get_marker_style(config.marker_style)
        self.function_words = read_function_words(config.function_words_file) if config.function_words_file else {}
        self.timings = {"read": 0.0, "align": 0.0, "extract_and_mark": 0.0}
        self.started = self.merge_started = time.perf_counter()
        self.language_pairs: Counter = Counter()

    def fingerprint_arguments(self) -> dict[str, Any]:
        arguments = {**self.config.result_arguments(), "inputs": self.inputs_id}
        if self.config.function_words_file:  # the file's words, not only its name, change the rows
            arguments["function_words_sha256"] = hashlib.sha256(
                Path(self.config.function_words_file).read_bytes()).hexdigest()[:16]
        return arguments

    def before_run(self) -> None:
        self.started = time.perf_counter()

    def shards(self, key: str) -> Iterator[tuple[int, list[ParallelPair]]]:
        chunks = shards_of(self.inputs, self.config.shard_size)
        while True:
            tick = time.perf_counter()
            chunk = next(chunks, None)
            self.timings["read"] += time.perf_counter() - tick
            if chunk is None:
                return
            yield chunk

    def process(self, key: str, index: int, items: Sequence[ParallelPair], status: Any) -> ShardResult:
        config, rng = self.config, _shard_rng(self.config.seed, index)
        kept: list[MarkedRow] = []
        dropped: list[DroppedPair] = []
        groups: dict[tuple[str, str], list[ParallelPair]] = {}
        for pair in items:
            reason = _screen(pair, self.style, config.max_words)
            if reason:
                dropped.append(DroppedPair(reason, pair.source, pair.target, pair.src_lang, pair.tgt_lang,
                                           pair.origin, pair.line))
            else:
                groups.setdefault((pair.src_lang, pair.tgt_lang), []).append(pair)
        seconds = {"align": 0.0, "extract_and_mark": 0.0}
        slots = 0
        for (src_lang, tgt_lang), group in groups.items():
            status(f"aligning {len(group)} {src_lang}-{tgt_lang} pairs")
            spans = [(words(p.source), words(p.target)) for p in group]
            tick = time.perf_counter()
            alignments = self.aligner.align([[p.source[s:e] for s, e in src] for p, (src, _) in zip(group, spans, strict=True)],
                                            [[p.target[s:e] for s, e in tgt] for p, (_, tgt) in zip(group, spans, strict=True)])
            seconds["align"] += time.perf_counter() - tick
            status(f"marking {len(group)} {src_lang}-{tgt_lang} pairs")
            tick = time.perf_counter()
            banned = (self.function_words.get(src_lang, frozenset()), self.function_words.get(tgt_lang, frozenset())) \
                if self.function_words else None
            for pair, pair_spans, links in zip(group, spans, alignments, strict=True):
                marks = mark_aligned(pair, pair_spans, links, config, rng, banned)
                kept += [_row(*mark) for mark in marks]
                slots += len(marks[0][2].slots)  # the marked pairs' slots: the forward direction's
            seconds["extract_and_mark"] += time.perf_counter() - tick
        for stage, value in seconds.items():
            self.timings[stage] += value
        return ShardResult(kept, dropped, {"marked_pairs": sum(len(g) for g in groups.values()),
                                           "slots": slots,
                                           "seconds_align": seconds["align"],
                                           "seconds_extract_and_mark": seconds["extract_and_mark"]})

    def kept_features(self) -> Any:
        """The columns of ``data-*.parquet`` (``slots`` is a list of structs, which a row dataclass cannot declare)."""
        import datasets

        return datasets.Features.from_arrow_schema(_schema())

    def _records(self, kept: bool) -> Iterator[dict[str, Any]]:
        """The kept (or dropped) rows of the finished shards, straight from the files (no dataset cache: a
        third copy of the corpus, and the rows only go into ``data-*.parquet``)."""
        return read_shard_rows([path for _, path, _ in self.store.finished("train")], kept)

    def write_outputs(self) -> None:
        """``data-*.parquet`` of ``rows_per_file`` kept rows each (those of an earlier run replaced) and ``discarded/``."""
        import datasets
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.merge_started = time.perf_counter()
        written = set()
        for index, rows in shards_of(self._records(True), self.config.rows_per_file):
            self.language_pairs.update((row["src_lang"], row["tgt_lang"]) for row in rows)
            sink = pa.BufferOutputStream()
            pq.write_table(pa.Table.from_pylist(rows, schema=_schema()), sink)
            path = self.output_dir / f"data-{index:05d}.parquet"
            atomic_write_bytes(path, sink.getvalue().to_pybytes())
            written.add(path)
        for stale in set(self.output_dir.glob("data-*.parquet")) - written:
            stale.unlink()
        schema = self.dropped_features().arrow_schema
        dropped = [pa.Table.from_pylist(rows, schema=schema) for _, rows in shards_of(self._records(False), 10_000)]
        table = pa.concat_tables(dropped) if dropped else schema.empty_table()
        save_dataset_dict(datasets.DatasetDict({"train": datasets.Dataset(table)}), self.output_dir / "discarded")

    def counts(self, statistics: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
        totals = statistics["train"]
        return {"train": {"read": totals["input"], **{f"dropped_{reason}": totals[reason] for reason in DROP_REASONS},
                          "marked_pairs": totals["marked_pairs"], "slots": totals["slots"], "rows": totals["kept"]}}

    def seconds(self) -> dict[str, float]:
        """This process's time so far: reading, aligning, extracting and marking, writing (the merge), in all."""
        total = time.perf_counter() - self.started
        return {**self.timings, "write": time.perf_counter() - self.merge_started, "total": total}

    def statistics_file(self, counts: Mapping[str, Mapping[str, float]]) -> dict[str, Any]:
        return {"counts": dict(counts["train"]), "timings": self.seconds(),
                "marking": {name: value for name, value in dataclasses.asdict(self.config).items()
                            if name not in RunOptions.RUN_FIELDS},
                "inputs": json.loads(self.inputs_id) if _is_json(self.inputs_id) else self.inputs_id}

    def card(self, statistics: Mapping[str, Mapping[str, float]], *, command_line: str) -> str:
        from huggingface_hub import DatasetCard, DatasetCardData

        counts, totals = statistics["train"], shard_statistics(self.store.finished("train"), self.statistics_columns)
        languages = sorted({lang for pair in self.language_pairs for lang in pair})
        pairs = ", ".join(f"{src}-{tgt}" for src, tgt in sorted(self.language_pairs)) or "none"
        data = DatasetCardData(language=languages or None, pretty_name=f"Marker-annotated parallel data ({pairs})",
                               task_categories=["translation"], size_categories=[size_category(counts["rows"])],
                               tags=["crop-hf", "parallel", "markers", "label-projection"],
                               # the folder's data-*.parquet files, so load_dataset(output_dir) opens it as the Hub would
                               configs=[{"config_name": "default",
                                         "data_files": [{"split": "train", "path": "data-*.parquet"}]}]
                               if counts["rows"] else None)
        return str(DatasetCard.from_template(
            data, template_path=str(card_template("marked_parallel_card.md")), pretty_name=data.pretty_name,
            funnel=format_table(list(counts), [list(counts.values())], style="markdown"), reasons=DROP_REASONS,
            per_pair=format_table(["language pair", "rows"], [[f"{s}-{t}", n] for (s, t), n
                                                              in sorted(self.language_pairs.items())], style="markdown"),
            seconds_align=totals["seconds_align"], seconds_extract_and_mark=totals["seconds_extract_and_mark"],
            columns=row_descriptions(MarkedRow), command_line=command_line,
            inputs_id=self.inputs_id, settings=format_table(["setting", "value"], [
                [name, f"`{value}`"] for name, value in self.config.card_settings().items()], style="markdown")))

    def notes(self) -> list[str]:
        seconds = self.seconds()
        total = seconds["total"] or 1e-9
        return ["time (s): " + ", ".join(f"{stage} {value:.1f} ({100 * value / total:.0f}%)"
                                         for stage, value in seconds.items())]


def _is_json(text: str | None) -> bool:
    return bool(text) and text.lstrip().startswith("{")


def mark_parallel(
    pairs: Iterable[ParallelPair],
    config: MarkingConfig | None = None,
    *,
    output_dir: str | Path | None = None,
    aligner: Any = None,
    show_progress: bool = False,
    inputs_id: str | None = None,
    overwrite_output_dir: bool = False,
) -> JobResult:
    """Align, extract phrase pairs and mark a parallel corpus; returns the run's :class:`~crop_hf.engine.jobs.JobResult`.

    ``pairs`` is any iterable of :class:`~crop_hf.translation.parallel.ParallelPair`
    (:func:`pairs_from_files`, :func:`pairs_from_dataset`); it is read ``shard_size`` pairs at a
    time, so memory stays bounded by the shard, whatever the corpus size. Pairs of several language
    pairs may be mixed: each shard is aligned per language pair. ``config`` is a
    :class:`MarkParallelConfig`, or the marking options alone (the run options then take their
    defaults). The rows go to ``output_dir`` (a temporary folder when ``None``) as
    ``data-*.parquet`` files, read back (memory-mapped) as ``result.dataset``; its columns are
    :class:`MarkedRow`'s. ``statistics["train"]`` counts the pairs read, dropped per reason,
    marked, the slots and the rows; the folder also gets ``discarded/``, ``statistics.json`` and a
    card, and several processes (``torchrun``, ``accelerate launch``) share the shards.
    ``inputs_id`` describes ``pairs`` (:class:`MarkParallelJob`); a finished result of other
    settings in ``output_dir`` is refused unless ``overwrite_output_dir``.

    Each shard draws its markers from its own random generator, shard 0 from ``Random(seed)`` as
    before: a corpus of one shard marks exactly as earlier releases did.
    """
    import tempfile

    if output_dir is None and processes.process_state().num_processes > 1:
        raise ValueError("mark_parallel: several processes share their shards through output_dir: pass one")
    folder = str(output_dir) if output_dir else tempfile.mkdtemp(prefix="crop-hf-marked-")
    if not isinstance(config, MarkParallelConfig):
        marking = dataclasses.asdict(config) if config is not None else {}
        config = MarkParallelConfig(**marking, output_dir=folder, show_progress=show_progress,
                                    overwrite_output_dir=overwrite_output_dir)
    elif output_dir is not None:
        config = dataclasses.replace(config, output_dir=folder)
    return run_job(MarkParallelJob(config, pairs, aligner, inputs_id))


def _row(pair: ParallelPair, candidates: list[PhrasePair], marked: MarkedPair) -> MarkedRow:
    return MarkedRow(marked.source, marked.target, pair.src_lang, pair.tgt_lang, list(marked.slots), pair.source,
                     pair.target, [list(c) for c in candidates], pair.origin, pair.line)
