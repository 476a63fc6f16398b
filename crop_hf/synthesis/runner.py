"""Run CroP corpus synthesis: shards, processes, resumption, the merged dataset and its card."""

from __future__ import annotations

import contextlib
import json
import logging
import shlex
import shutil
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crop_hf.synthesis.config import SynthesisConfig
from crop_hf.synthesis.filters import STATISTICS_COLUMNS, LanguageIdFilter
from crop_hf.synthesis.inputs import iter_raw_sentences, shards_of
from crop_hf.synthesis.shards import ShardStore, atomic_write_bytes
from crop_hf.synthesis.stages import SynthesisModels, process_shard

logger = logging.getLogger(__name__)

__all__ = ["SynthesisResult", "SynthesisRunner", "push_to_hub", "run_shards", "synthesize"]


@dataclass
class SynthesisResult:
    """Where the run wrote its output, and its counts per language.

    ``statistics[lang]`` has ``input`` (sentences read), ``kept`` and one count per filter reason.
    """

    output_dir: Path
    statistics: dict[str, dict[str, int]] = field(default_factory=dict)
    #: per language, the finished shards a resumed run skipped (those of the main process)
    skipped_shards: dict[str, int] = field(default_factory=dict)

    @property
    def dataset_path(self) -> Path:
        return self.output_dir / "dataset"

    @property
    def discarded_path(self) -> Path:
        return self.output_dir / "discarded"

    def table(self) -> str:
        """The counts as a plain-text table, one row per language and a total row."""
        from crop_hf.tables import format_table

        rows = [[lang, *(stats.get(c, 0) for c in STATISTICS_COLUMNS)] for lang, stats in self.statistics.items()]
        rows.append(["total", *(sum(stats.get(c, 0) for stats in self.statistics.values())
                                for c in STATISTICS_COLUMNS)])
        return format_table(["lang", *STATISTICS_COLUMNS], rows)

    def report(self) -> str:
        """The table and where the outputs are: what the CLI prints at the end of a run."""
        resumed = ""
        if any(self.skipped_shards.values()):
            counts = ", ".join(f"{lang} {count}" for lang, count in self.skipped_shards.items() if count)
            resumed = (f"\nresumed: skipped {sum(self.skipped_shards.values())} shard(s) an earlier run had "
                       f"finished ({counts})")
        return (f"{self.table()}\n\ndataset: {self.dataset_path}\ndiscarded sentences: {self.discarded_path}"
                f"\ncard: {self.output_dir / 'README.md'}{resumed}")


class SynthesisRunner:
    """Synthesizes pseudo-labeled NER corpora for ``config.target_langs`` (see :mod:`crop_hf.synthesis`).

    Args:
        config: what to run.
        models: already loaded pipelines; loaded from ``config`` on first use otherwise.
        inputs: overrides ``config.input`` with in-memory sources (a ``datasets.Dataset`` or a dict of
            them per language); see :func:`~crop_hf.synthesis.inputs.iter_raw_sentences`.

    Several processes (``torchrun`` / ``accelerate launch``) split the shards between them: shard
    ``k`` of every language belongs to process ``k % num_processes``; the main process waits for
    the others and merges. Each finished shard is on disk, so a rerun skips it.
    """

    def __init__(self, config: SynthesisConfig, models: SynthesisModels | None = None, inputs: Any = None) -> None:
        self.config = config
        self._models = models
        self._inputs = inputs
        self.store = ShardStore(config.output_dir, {**config.result_arguments(), "inputs": _describe(inputs)})
        #: per language, how many of this process's shards an earlier run had already finished
        self.skipped_shards: dict[str, int] = {}

    @property
    def models(self) -> SynthesisModels:
        if self._models is None:
            self._models = SynthesisModels.load(self.config, device=self.config.device or _state().device)
        return self._models

    def _shards(self, lang: str) -> Iterator[tuple[int, list[str]]]:
        source = self._inputs if self._inputs is not None else self.config.input
        sentences = iter_raw_sentences(source, lang, limit=self.config.max_sentences, strict=self.config.strict_input)
        return shards_of(sentences, self.config.shard_size)

    def run(self) -> SynthesisResult:
        """Process every unfinished shard of this process, then (main process) merge and write the card."""
        from crop_hf.console import progress_bars

        with _own_progress_only(), progress_bars(self.config.show_progress):
            return self._run()

    def _run(self) -> SynthesisResult:
        state = _state()
        if state.is_main_process:
            self.store.prepare()
        state.wait_for_everyone()
        for lang in self.config.target_langs:
            self._run_language(lang, state)
        state.wait_for_everyone()
        result = SynthesisResult(Path(self.config.output_dir))
        if state.is_main_process:
            result = self.merge()
            result.skipped_shards = dict(self.skipped_shards)
        state.wait_for_everyone()
        return result

    def _run_language(self, lang: str, state) -> None:
        language_filter = None
        progress = _progress(self.config.show_progress and state.is_main_process, lang)

        def process(index: int, sentences: list[str]) -> tuple[list[dict], list[dict], dict]:
            nonlocal language_filter
            if language_filter is None and self.config.language_filter:
                language_filter = LanguageIdFilter([self.config.source_lang, lang])
            kept, discarded, reasons = process_shard(
                sentences, lang, self.config, self.models, language_filter,
                on_stage=lambda name: progress.set_postfix_str(f"shard {index}: {name}"),
            )
            logger.info("%s shard %d: %d of %d kept", lang, index, len(kept), len(sentences))
            return kept, discarded, dict(reasons)

        total, skipped = run_shards(self.store, lang, self._shards(lang), process, state, progress)
        progress.close()
        if skipped:  # each process says it for its own shards (only the main one's lines are shown by crop-hf)
            logger.info("%s: resumed: skipped %d of %d shard(s) already finished in %s", lang, skipped, total,
                        self.store.root / lang)
        self.skipped_shards[lang] = self.skipped_shards.get(lang, 0) + skipped

    def merge(self) -> SynthesisResult:
        """Merge the finished shards into ``dataset/`` and ``discarded/`` (``DatasetDict`` per language)."""
        import datasets

        output = Path(self.config.output_dir)
        labels = self._label_names()
        statistics: dict[str, dict[str, int]] = {}
        kept, discarded = datasets.DatasetDict(), datasets.DatasetDict()
        for lang in self.config.target_langs:
            finished = list(self.store.finished(lang))  # read each shard's statistics once
            counts: Counter = Counter()
            for _, _, stats in finished:
                counts.update(stats)
            statistics[lang] = {column: counts[column] for column in STATISTICS_COLUMNS}
            kept[lang] = _dataset(finished, True, _kept_features(labels))
            discarded[lang] = _dataset(finished, False, _discarded_features())
        _save_atomically(kept, output / "dataset")
        _save_atomically(discarded, output / "discarded")
        result = SynthesisResult(output, statistics)
        atomic_write_bytes(output / "statistics.json", json.dumps(statistics, indent=2).encode("utf-8"))
        from crop_hf.hub import synthesis_card

        command_line = shlex.join([Path(sys.argv[0]).name, *sys.argv[1:]])
        card = synthesis_card(self.config, statistics, labels, command_line=command_line,
                              fingerprint=self.store.fingerprint, columns=STATISTICS_COLUMNS)
        atomic_write_bytes(output / "README.md", card.encode("utf-8"))
        if self.config.report:
            from crop_hf.report import write_report

            write_report(output)  # plots under report/, linked from the card just written
        return result


    def _label_names(self) -> list[str]:
        """The NER model's label set; read from its config when the models were never loaded (all shards done)."""
        if self._models is not None:
            return list(self._models.labels.names)
        from transformers import AutoConfig

        from crop_hf.errors import reaching
        from crop_hf.labels import LabelSet

        with reaching(self.config.ner_model, "NER model (ner_model)"):
            config = AutoConfig.from_pretrained(self.config.ner_model, revision=self.config.ner_revision)
        return list(LabelSet.of_model(config.id2label).names)


def run_shards(store: ShardStore, key: str, shards, process, state, progress=None) -> tuple[int, int]:
    """Process this process's unfinished shards of ``key`` and write each one when it is done.

    ``shards`` yields ``(index, items)``; shard ``k`` belongs to process ``k % state.num_processes``
    (an Accelerate ``PartialState``, see :func:`_state`), and a shard already in ``store`` is
    skipped. ``process(index, items)`` returns ``(kept rows, discarded rows, counts)``; the rows
    are written in one Parquet file (column ``kept`` and the row as JSON) with the statistics
    ``input``, ``kept``, the counts and ``process_index``, which is what :func:`_dataset` merges.
    Used by corpus synthesis and by :mod:`crop_hf.augment`'s translate-and-align. Returns
    ``(shards of this process, of which skipped as already finished)``.
    """
    total = skipped = 0
    for index, items in shards:
        if index % state.num_processes != state.process_index:
            continue
        total += 1
        if store.is_done(key, index):
            skipped += 1
        else:
            kept, discarded, counts = process(index, items)
            stats = {"input": len(items), "kept": len(kept), **counts, "process_index": state.process_index}
            # Kept and discarded rows share one file, so a shard is written (and renamed) in one step.
            rows = [{"kept": flag, "row": json.dumps(row, ensure_ascii=False)}
                    for flag, part in ((True, kept), (False, discarded)) for row in part]
            store.write(key, index, rows, stats)
        if progress is not None:
            progress.update(len(items))
    return total, skipped


def synthesize(config: SynthesisConfig, models: SynthesisModels | None = None, inputs: Any = None) -> SynthesisResult:
    """Run :class:`SynthesisRunner` once; see it for the arguments."""
    return SynthesisRunner(config, models=models, inputs=inputs).run()


def push_to_hub(result: SynthesisResult, repo_id: str, *, private: bool = False, token: str | None = None) -> str:
    """Publish the synthesized dataset (parquet, one split per language), its report plots, then its card; returns the URL."""
    import datasets

    from crop_hf.hub import push_dataset

    card = (result.output_dir / "README.md").read_text(encoding="utf-8")
    report = result.output_dir / "report"  # the card links these files (crop-hf report / synthesize --report)
    return push_dataset(datasets.load_from_disk(str(result.dataset_path)), repo_id, card, private=private,
                        token=token, folders={"report": report} if report.is_dir() else None)


def _state():
    from accelerate import PartialState
    from accelerate.utils import parse_flag_from_env

    # Unlike Accelerator, PartialState does not read ACCELERATE_USE_CPU itself; without it, CPU
    # processes started by torchrun would each believe they are alone.
    return PartialState(cpu=parse_flag_from_env("ACCELERATE_USE_CPU"))


@contextlib.contextmanager
def _own_progress_only():
    """During a run: no ``datasets`` "Generating"/"Saving" bars, and a library warning repeated per batch said once."""
    import warnings

    import datasets
    from datasets.utils import logging as datasets_logging

    was_disabled = datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()
    verbosity = datasets_logging.get_verbosity()
    datasets_logging.set_verbosity_error()
    try:
        with warnings.catch_warnings():
            # transformers' token-classification pipeline warns on every call with a SentencePiece tokenizer.
            warnings.filterwarnings("once", message="Tokenizer does not support real words")
            yield
    finally:
        datasets_logging.set_verbosity(verbosity)
        if not was_disabled:
            datasets.enable_progress_bars()


def _describe(inputs: Any) -> Any:
    """What identifies in-memory inputs in the fingerprint (their fingerprint when they have one)."""
    if inputs is None:
        return None
    if isinstance(inputs, dict):
        return {lang: _describe(value) for lang, value in sorted(inputs.items())}
    return getattr(inputs, "_fingerprint", None) or repr(type(inputs))


def _progress(enabled: bool, lang: str):
    from tqdm.auto import tqdm

    return tqdm(desc=f"synthesize {lang}", unit="sent", disable=not enabled)


def _kept_features(labels):
    from crop_hf.data.features import ner_features

    return ner_features(labels, extra={
        "source_translation": "string", "labeled_translation": "string", "back_translation": "string",
        "source_labels": ["string"], "projection_status": ["string"], "tokenization": "string"})


def _discarded_features():
    import datasets

    return datasets.Features({
        "text": datasets.Value("string"),
        "tokens": datasets.List(datasets.Value("string")),
        "projected_tags": datasets.List(datasets.Value("string")),
        "lang": datasets.Value("string"),
        "reason": datasets.Value("string"),
        "source_translation": datasets.Value("string"),
        "labeled_translation": datasets.Value("string"),
        "back_translation": datasets.Value("string"),
        "source_labels": datasets.List(datasets.Value("string")),
        "projection_status": datasets.List(datasets.Value("string")),
    })


def _rows(paths: list[str], kept: bool):
    import pyarrow.parquet as pq

    for path in paths:  # one shard at a time: memory stays flat however large the corpus
        table = pq.read_table(path)
        for flag, row in zip(table.column("kept").to_pylist(), table.column("row").to_pylist(), strict=True):
            if flag == kept:
                yield json.loads(row)


def _dataset(finished: list[tuple[int, Path, dict]], kept: bool, features):
    """The kept (or discarded) rows of a language's finished shards, as one ``Dataset``."""
    import datasets

    rows = sum(stats["kept"] if kept else stats["input"] - stats["kept"] for _, _, stats in finished)
    if rows == 0:  # from_generator cannot build an empty dataset
        return datasets.Dataset.from_dict({name: [] for name in features}, features=features)
    paths = [str(path) for _, path, _ in finished]
    # from_generator writes Arrow to the cache as it goes; its cache key covers the shard paths,
    # whose content is fixed by the run fingerprint in their folder name.
    return datasets.Dataset.from_generator(_rows, gen_kwargs={"paths": paths, "kept": kept}, features=features)


def _save_atomically(dataset_dict, path: Path) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    if temporary.exists():
        shutil.rmtree(temporary)
    # datasets 5 writes an empty split of a DatasetDict with zero shards, and load_from_disk then
    # fails (IndexError); one explicit shard keeps an all-dropped language loadable.
    dataset_dict.save_to_disk(str(temporary), num_shards={name: 1 for name, split in dataset_dict.items()
                                                         if len(split) == 0})
    if path.exists():
        shutil.rmtree(path)
    temporary.rename(path)
