"""Run CroP corpus synthesis: its shards (:mod:`crop_hf.engine.shards`), the merged dataset and its card."""

from __future__ import annotations

import json
import logging
import shlex
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crop_hf.console import without_subword_heuristic_warning
from crop_hf.engine.shards import (
    ShardStore,
    atomic_write_bytes,
    describe_inputs,
    merge_shards,
    process_state,
    run_sharded,
    save_dataset_dict,
    shard_statistics,
)
from crop_hf.projection.methods import foreign_rules
from crop_hf.synthesis.config import SynthesisConfig
from crop_hf.synthesis.filters import STATISTICS_COLUMNS, language_filter
from crop_hf.synthesis.inputs import iter_raw_sentences, shards_of
from crop_hf.synthesis.rows import discarded_features, kept_features
from crop_hf.synthesis.stages import SynthesisModels, process_shard

logger = logging.getLogger(__name__)

__all__ = ["SynthesisResult", "SynthesisRunner", "push_to_hub", "synthesize"]


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
    the others and merges. Each finished shard is on disk, so a rerun skips it
    (:func:`crop_hf.engine.shards.run_sharded`).
    """

    def __init__(self, config: SynthesisConfig, models: SynthesisModels | None = None, inputs: Any = None) -> None:
        self.config = config
        self._models = models
        self._inputs = inputs
        self.store = ShardStore(config.output_dir, {**config.result_arguments(), "inputs": describe_inputs(inputs)})
        #: per language, how many of this process's shards an earlier run had already finished (set by :meth:`run`)
        self.skipped_shards: dict[str, int] = {}

    @property
    def models(self) -> SynthesisModels:
        if self._models is None:
            self._models = SynthesisModels.load(self.config, device=self.config.device or process_state().device)
        return self._models

    def _shards(self, lang: str) -> Iterator[tuple[int, list[str]]]:
        source = self._inputs if self._inputs is not None else self.config.input
        sentences = iter_raw_sentences(source, lang, limit=self.config.max_sentences, strict=self.config.strict_input)
        return shards_of(sentences, self.config.shard_size)

    def run(self) -> SynthesisResult:
        """Process every unfinished shard of this process, then (main process) merge and write the card.

        Bars: this run's own (``config.show_progress``, main process); other libraries' bars are
        the caller's to switch (``crop-hf synthesize`` uses :func:`crop_hf.console.progress_bars`).
        """
        for line in foreign_rules(self.config.method, self.config.target_langs):
            logger.warning(line)  # German's rules on Spanish, say: once per run, before hours of work
        with without_subword_heuristic_warning():  # said by the tagger on every call (XLM-R's tokenizer)
            run = run_sharded(self.store, self.config.target_langs, self._shards, self._process, self.merge,
                              show_progress=self.config.show_progress, description="synthesize", unit="sent",
                              per_key=" of each language", overwrite=self.config.overwrite_output_dir)
        self.skipped_shards = run.skipped
        result = run.merged or SynthesisResult(Path(self.config.output_dir))
        result.skipped_shards = dict(run.skipped)
        return result

    def _process(self, lang: str, index: int, sentences: list[str], status) -> tuple[list[dict], list[dict], dict]:
        # built on first use (a resumed language never needs langid), once per process
        checks = language_filter(self.config.source_lang, lang) if self.config.language_filter else None
        kept, discarded, reasons = process_shard(sentences, lang, self.config, self.models, checks, on_stage=status)
        logger.info("%s shard %d: %d of %d kept", lang, index, len(kept), len(sentences))
        return kept, discarded, dict(reasons)

    def merge(self) -> SynthesisResult:
        """Merge the finished shards into ``dataset/`` and ``discarded/`` (``DatasetDict`` per language)."""
        import datasets

        output = Path(self.config.output_dir)
        labels = self._label_names()
        statistics: dict[str, dict[str, int]] = {}
        kept, discarded = datasets.DatasetDict(), datasets.DatasetDict()
        for lang in self.config.target_langs:
            finished = list(self.store.finished(lang))  # read each shard's statistics once
            statistics[lang] = shard_statistics(finished, STATISTICS_COLUMNS)
            kept[lang] = merge_shards(finished, True, kept_features(labels))
            discarded[lang] = merge_shards(finished, False, discarded_features())
        save_dataset_dict(kept, output / "dataset")
        save_dataset_dict(discarded, output / "discarded")
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

