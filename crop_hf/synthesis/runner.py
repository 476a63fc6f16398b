"""Run CroP corpus synthesis as a job of :mod:`crop_hf.engine.jobs`: its shards, the merged dataset and its card."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import crop_hf.report
from crop_hf.console import without_subword_heuristic_warning
from crop_hf.engine import processes
from crop_hf.engine.jobs import CorpusJob, JobResult, ShardResult, push_output, run_job
from crop_hf.engine.language import language_filter
from crop_hf.engine.records import DropTally
from crop_hf.engine.shards import shards_of
from crop_hf.errors import EmptyInputError, reaching
from crop_hf.labels import LabelSet
from crop_hf.synthesis.card import synthesis_card
from crop_hf.synthesis.config import SynthesisConfig
from crop_hf.synthesis.inputs import iter_raw_sentences
from crop_hf.synthesis.rows import REASONS, STATISTICS_COLUMNS, DiscardedSentence, KeptSentence, kept_features
from crop_hf.synthesis.stages import SynthesisModels, shard_scorer, synthesize_shard
from crop_hf.translation.apertium import describe_translator, is_apertium, not_applicable

logger = logging.getLogger(__name__)

__all__ = ["SynthesisJob", "SynthesisResult", "push_to_hub", "synthesize"]


#: what a synthesis run gives back (one type for every corpus job); its ``statistics`` are per language
SynthesisResult = JobResult


class SynthesisJob(CorpusJob[KeptSentence, DiscardedSentence]):
    """Synthesizes pseudo-labeled NER corpora for ``config.tgt_langs`` (see :mod:`crop_hf.synthesis`).

    A job on the contract of :mod:`crop_hf.engine.jobs`: one key per target language, whose raw
    sentences are cut into shards of ``config.shard_size``; the step is
    :func:`~crop_hf.synthesis.stages.synthesize_shard`.

    Args:
        config: what to run.
        models: already loaded pipelines; loaded from ``config`` on first use otherwise.
        inputs: overrides ``config.input`` with in-memory sources (a ``datasets.Dataset`` or a dict of
            them per language); see :func:`~crop_hf.synthesis.inputs.iter_raw_sentences`.

    Several processes (``torchrun`` / ``accelerate launch``) split the shards between them: shard
    ``k`` of every language belongs to process ``k % num_processes``; the main process waits for
    the others and merges. Each finished shard is on disk, so a rerun skips it
    (:func:`crop_hf.engine.jobs.run_job`).
    """

    name = "synthesize"
    reasons = REASONS
    kept_type = KeptSentence
    dropped_type = DiscardedSentence
    keys_field = "tgt_langs"
    key_name = "lang"
    unit = "sent"
    per_key = " of each language"

    def __init__(self, config: SynthesisConfig, models: SynthesisModels | None = None, inputs: Any = None) -> None:
        self._models = models
        super().__init__(config, inputs)
        #: per language, how many of this process's shards an earlier run had already finished (set by :meth:`run`)
        self.skipped_shards: dict[str, int] = {}

    @property
    def models(self) -> SynthesisModels:
        if self._models is None:
            self._models = SynthesisModels.load(self.config, device=self.config.device or processes.process_state().device)
        return self._models

    def run(self) -> SynthesisResult:
        """Process every unfinished shard of this process, then (main process) merge and write the card.

        Bars: this run's own (``config.show_progress``, main process); other libraries' bars are
        the caller's to switch (``crop-hf synthesize`` uses :func:`crop_hf.console.progress_bars`).
        """
        with without_subword_heuristic_warning():  # said by the tagger on every call (XLM-R's tokenizer)
            result = run_job(self)
        self.skipped_shards = dict(result.skipped_shards)
        return result

    def fingerprint_arguments(self) -> dict[str, Any]:
        # Apertium's version and pair data change its translations: a run with others starts afresh
        return {**super().fingerprint_arguments(), **self.translator}

    @cached_property
    def translator(self) -> dict[str, Any]:
        """What the fingerprint and the card say of a translation engine (Apertium); empty for a model."""
        return describe_translator(self.config.mt_model, self.config.translation_directions())

    def before_run(self) -> None:
        self.check_inputs()
        for line in self.config.projection.foreign_rules(self.config.tgt_langs):
            logger.warning(line)  # German's rules on Spanish, say: once per run, before hours of work
        if is_apertium(self.config.mt_model):
            ignored, _ = not_applicable(num_beams=self.config.num_beams,
                                        num_return_sequences=self.config.num_return_sequences)
            if ignored:
                logger.warning("--mt_model apertium gives one translation per sentence: %s %s not apply",
                               " and ".join(ignored), "does" if len(ignored) == 1 else "do")
        if self._models is not None and self.config.projection.uses_scorer:
            for lang in self.config.tgt_langs:  # models given: their scorer is checked before any shard
                shard_scorer(self.config, self._models.scorer, lang)  # (loaded ones are checked as they load)

    def check_inputs(self) -> None:
        """Open every language's input and read its first sentence, before any model loads: a missing file
        of the last language, or an empty one, fails now (one line naming ``--input`` and the language)."""
        source = self.inputs if self.inputs is not None else self.config.input
        for lang in self.config.tgt_langs:  # a peek: the run's own reading reports the file's undecodable lines
            if next(iter_raw_sentences(source, lang, limit=1, encoding=self.config.encoding, report=False), None) is None:
                where = (f" in {str(source).replace('{lang}', lang)}" if isinstance(source, (str, Path))
                         else " in the inputs given")
                raise EmptyInputError(f"--input: no sentences for {lang!r}{where} (blank lines are skipped)")

    def shards(self, lang: str) -> Iterator[tuple[int, list[str]]]:
        source = self.inputs if self.inputs is not None else self.config.input
        sentences = iter_raw_sentences(source, lang, limit=self.config.max_examples, strict=self.config.strict_input,
                                       encoding=self.config.encoding)
        return shards_of(sentences, self.config.shard_size)

    def process(self, lang: str, index: int, sentences: Sequence[str], status: Any
                ) -> ShardResult[KeptSentence, DiscardedSentence]:
        # built on first use (a resumed language never needs langid), once per process
        checks = language_filter(self.config.src_lang, lang) if self.config.language_filter else None
        # refusals are said once per reason per shard, the first one named by its index in the language's input
        drops = DropTally(f"{lang} shard {index}", offset=index * self.config.shard_size, noun="sentence")
        return synthesize_shard(sentences, lang, self.config, self.models, checks, on_stage=status, drops=drops)

    def kept_features(self) -> Any:
        return kept_features(self._label_names())

    def card(self, statistics: Mapping[str, Mapping[str, float]], *, command_line: str) -> str:
        return synthesis_card(self.config, statistics, self._label_names(), command_line=command_line,
                              fingerprint=self.store.fingerprint, columns=STATISTICS_COLUMNS,
                              translator=self.translator.get("translator"))

    def after_merge(self) -> None:
        if self.config.report:  # crop_hf.report.write_report read per call: a test's replacement is seen
            crop_hf.report.write_report(self.output_dir)  # plots under report/, linked from the card just written

    def notes(self) -> list[str]:
        how = self.config.projection.placement()
        return [f"labels: {how}"] if how else []

    def _label_names(self) -> list[str]:
        """The NER model's label set; read from its config when the models were never loaded (all shards done)."""
        if self._models is not None:
            return list(self._models.labels.names)
        from transformers import AutoConfig

        with reaching(self.config.ner_model, "NER model (--ner_model)"):
            config = AutoConfig.from_pretrained(self.config.ner_model, revision=self.config.ner_revision)
        return list(LabelSet.of_model(config.id2label).names)


#: the job's name before it was called a job (the glossary's word); kept so old imports work
SynthesisRunner = SynthesisJob


def synthesize(config: SynthesisConfig, models: SynthesisModels | None = None, inputs: Any = None) -> SynthesisResult:
    """Run :class:`SynthesisJob` once; see it for the arguments."""
    return SynthesisJob(config, models=models, inputs=inputs).run()


def push_to_hub(result: SynthesisResult, repo_id: str, *, private: bool = False, token: str | None = None) -> str:
    """Publish the synthesized dataset (parquet, one split per language), its report plots, then its card; returns the URL.

    An empty corpus (no sentence kept in any language) is refused: there is nothing to publish.
    """
    if result.statistics and len(result.empty()) == len(result.statistics):
        raise EmptyInputError(f"--push_to_hub {repo_id}: the corpus is empty (no sentence kept for "
                              f"{', '.join(result.statistics)}): nothing is published")
    return push_output(result.output_dir, repo_id, private=private, token=token)
