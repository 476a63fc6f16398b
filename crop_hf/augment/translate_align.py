"""CSTOP's translate-and-align (section 6.1): English bracket parses become target-language parses.

For every English parse (a TSV, a source spec such as ``hinglish_top?data_dir=...`` read through
its ``en_*`` columns, ``cstop``/``top``, or a ``datasets.Dataset``):

1. translate the utterance with any seq2seq model through ``pipeline("labeled-translation")``
   (plain translation: a string in, ``src_lang``/``tgt_lang``);
2. tokenize the translation (:func:`crop_hf.projection.tokenize_target`: punctuation split from
   words, characters for languages written without spaces);
3. align the English words of the parse with the target tokens, every pair of a shard in one
   call (:class:`crop_hf.alignment.EflomalAligner`, grow-diag-final-and, as in CSTOP);
4. project the slots through the method registry (``method="alignment"``: CSTOP's rule, a
   discontinuous slot becomes separate slots of the same type; ``"hybrid"``: lexical matching
   first; the model-scored methods score with the translation model itself, ``mt_model``:
   ``"insertion"`` places each slot's markers in the translation (a marker-trained model; no
   word alignment, step 3 is skipped), ``"rerank"``/``"hybrid_rerank"`` rank candidate spans
   with T-Projection's score (any multilingual model: it must translate both ways)), and build
   the target parse from tokens, intent and slots (:func:`crop_hf.seqlogical.from_flat`),
   checked to round-trip through :func:`crop_hf.seqlogical.parse`.

Every input is either kept (an :class:`AlignedParse`) or dropped with one reason (a
:class:`DroppedParse`), counted (:data:`TRANSLATE_ALIGN_REASONS`); a dropped row keeps where it
came from (``file:line`` or ``split:row``) and why. A parse goes through the steps as a
:class:`ParseRecord`, whose first drop reason wins. The run is a :class:`TranslateAlignJob` on the
corpus-job contract (:mod:`crop_hf.engine.jobs`): shards are written atomically and a rerun
resumes; several processes (``accelerate launch``) share the shards as in ``crop-hf synthesize``.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial
from pathlib import Path
from typing import Any, ClassVar

from crop_hf.alignment import EflomalAligner
from crop_hf.alignment.symmetrize import DEFAULT_SYMMETRIZATION, check_symmetrization
from crop_hf.augment.card import augmentation_card
from crop_hf.augment.inputs import BadParse, ParseInput, iter_parse_inputs, read_parse
from crop_hf.augment.rows import ParseRow
from crop_hf.engine import processes
from crop_hf.engine.contents import DATA, MODEL
from crop_hf.engine.jobs import CorpusJob, JobResult, ShardResult, run_job
from crop_hf.engine.language import language_filter
from crop_hf.engine.options import RunOptions
from crop_hf.engine.records import DropTally, each_or_none, row_descriptions
from crop_hf.engine.shards import shards_of
from crop_hf.errors import EmptyInputError, check_language_code, check_model
from crop_hf.labels import Span, spans_to_tags, tags_to_spans
from crop_hf.projection import tokenize_target
from crop_hf.projection.loading import load_method_models
from crop_hf.projection.methods import (
    PROJECTION_METHODS,
    ProjectionExample,
    align_missing,
    method_help,
    resolve_method,
)
from crop_hf.seqlogical import FlatParse, from_flat, parse, to_flat
from crop_hf.translation.apertium import check_apertium, describe_translator, is_apertium, not_applicable
from crop_hf.translation.text_engine import TextEngineTranslationPipeline

logger = logging.getLogger(__name__)

__all__ = ["TRANSLATE_ALIGN_REASONS", "AlignedParse", "DroppedParse", "ParseRecord", "TranslateAlignConfig",
           "TranslateAlignJob", "TranslateAlignModels", "TranslateAlignResult", "align_batch",
           "translate_align"]

#: Why an English parse gives no target parse (first reason wins), in funnel order.
TRANSLATE_ALIGN_REASONS: dict[str, str] = {
    "invalid_source": "the English parse is not a valid bracket parse (or has an empty slot)",
    "nested_source": "a slot of the English parse holds a nested intent (its slots cannot be projected)",
    "empty_utterance": "the English utterance is empty",
    "no_translation": "the translator returned nothing (or refused the utterance)",
    "wrong_language": "langid put the translation in the source language, not the target one",
    "slots_lost": "a slot had no aligned target word (unaligned, only punctuation, or taken by another slot)",
    "invalid_tree": "the target tokens cannot be written as a parse that round-trips (a bracket in a word)",
}

#: The counts of a run: inputs read, parses kept, and one count per reason.
STATISTICS_COLUMNS: tuple[str, ...] = ("input", "kept", *TRANSLATE_ALIGN_REASONS)


@dataclass
class AlignedParse(ParseRow):
    """A target-language parse made from an English one (a row of ``dataset/``, which adds ``id`` first)."""

    domain: str = field(metadata={"help": "the domain of the English record, when it had one"})
    lang: str = field(metadata={"help": "the target language"})
    source_utterance: str = field(metadata={"help": "the English utterance that was translated"})
    source_parse: str = field(metadata={"help": "the English parse"})
    source: str = field(metadata={"help": "where the English parse came from (`file:line` or `split:row`)"})
    projection_status: list[str] = field(metadata={"help": "what became of each English slot (`projected`, "
                                                           "`split`, ...)"})
    method: str = field(metadata={"help": "the projection method"})


@dataclass
class DroppedParse:
    """An English parse that gave no target parse, and why (a row of ``discarded/``)."""

    source: str = field(metadata={"help": "where the English parse came from (`file:line` or `split:row`)"})
    source_parse: str = field(metadata={"help": "the English parse as read"})
    source_utterance: str = field(metadata={"help": "the English utterance"})
    translation: str = field(metadata={"help": "the translation, when there was one"})
    reason: str = field(metadata={"help": "why it was dropped (:data:`TRANSLATE_ALIGN_REASONS`)"})
    detail: str = field(metadata={"help": "where and what exactly went wrong"})


#: The columns of ``dataset/`` and what they hold (the dataset card lists them): ``id``, then :class:`AlignedParse`.
FEATURES: dict[str, str] = {"id": "the row's number", **row_descriptions(AlignedParse)}


@dataclass
class TranslateAlignConfig(RunOptions):
    """What a translate-and-align run reads, which models it uses, and where it writes.

    Every field changes results (the run's fingerprint) but the run options and ``batch_size`` (how
    many utterances one translation call takes); ``symmetrization`` came later, so CSTOP's default
    leaves the fingerprint of earlier runs as it was. ``projection`` is ``method`` read once, when
    the config is built (a :class:`~crop_hf.projection.methods.ResolvedMethod`, an attribute, not a
    field): every step of the run asks it.
    """

    run_only = ("batch_size",)
    added_later = ("symmetrization",)
    local_inputs: ClassVar[Mapping[str, str]] = {"input": DATA, "mt_model": MODEL}

    input: str = field(metadata={
        "help": "English parses: a TSV file (a bracket-parse column, optional utterance column), or a source spec "
                "(hinglish_top?data_dir=DIR reads its en_* columns; cstop?data_dir=DIR; top; disk:PATH); '#en' after "
                "a file, a folder or a spec reads the en_parse and en_query columns, as train-parser's sources do."})
    tgt_lang: str = field(metadata={
        "help": "Target language code of the translation model's family (es, hi, ...)."})
    src_lang: str = field(default="en", metadata={"help": "Language of the parses."})
    mt_model: str = field(default="facebook/m2m100_418M", metadata={
        "help": "Any seq2seq translation model (M2M100, NLLB, MarianMT, mBART-50), or 'apertium' (the rule-based "
                "engine, from Debian's apertium and its pair packages; alignment methods only)."})
    mt_revision: str | None = field(default=None, metadata={"help": "Revision of mt_model."})
    method: str = field(default="alignment", metadata={
        "help": method_help(
            "Projection method, one of {methods} (the installed packages' that align or score included): "
            "alignment (CSTOP's split rule), hybrid (lexical first, alignment for the rest), or scored by mt_model "
            "itself: insertion (a marker-trained mt_model places each slot's markers in its translation; no "
            "alignment), rerank, hybrid_rerank (a multilingual mt_model ranks candidate spans).",
            lambda method: method.uses_alignment or method.uses_scorer)})
    symmetrization: str = field(default=DEFAULT_SYMMETRIZATION, metadata={
        "help": "How eflomal's two directions are joined: grow-diag-final-and (CSTOP's), or grow-diag-final, which "
                "places more words and projects better onto Hinglish (benchmarks/bench_projection_quality.py); "
                "intersection, union, grow, grow-diag."})
    split: str = field(default="train", metadata={"help": "Split of a source spec to read."})
    parse_column: str | None = field(default=None, metadata={
        "help": "Column holding the English parse (default en_parse, then parse)."})
    utterance_column: str | None = field(default=None, metadata={
        "help": "Column holding the English utterance (default en_query/en_utterance/utterance)."})
    max_examples: int | None = field(default=None, metadata={
        "help": "Read at most this many English parses."})
    keep_incomplete: bool = field(default=False, metadata={
        "help": "Keep parses that lost a slot (CSTOP keeps every translation); else dropped as slots_lost."})
    language_filter: bool = field(default=True, metadata={
        "help": "Drop translations langid puts in src_lang (turn off for code-switched targets)."})
    tokenization: str = field(default="words", metadata={
        "help": "words, whitespace, characters or auto."})
    num_beams: int = field(default=4, metadata={"help": "Beams of the translation."})
    max_new_tokens: int = field(default=128, metadata={"help": "Longest translation, in model tokens."})
    batch_size: int = field(default=16, metadata={"help": "Translation batch size."})
    shard_size: int = field(default=5000, kw_only=True, metadata={
        "help": "English parses per shard; each shard is aligned in one eflomal run, so larger shards align better."})
    device: str | None = field(default=None, metadata={"help": "Device of the translation model (default: "
                                                                "Accelerate's choice for this process)."})

    def __post_init__(self) -> None:
        super().__post_init__()
        check_language_code(self.tgt_lang, "tgt_lang", "the English parses go in --input")
        check_language_code(self.src_lang, "src_lang")

        self.projection = method = resolve_method(self.method)  # the spec is read here, once per run
        if not (method.uses_alignment or method.uses_scorer):
            usable = [name for name, row in PROJECTION_METHODS.items() if row.uses_alignment or row.uses_scorer]
            raise ValueError(f"translate-and-align projects the English slots themselves, through a word alignment "
                             f"or scored by the translation model: method must be one of {', '.join(usable)}, got "
                             f"{self.method!r}")
        check_symmetrization(self.symmetrization)
        if is_apertium(self.mt_model):
            _, refused = not_applicable(scoring_method=self.method if method.uses_scorer else None)
            if self.mt_revision is not None:
                refused.append(f"--mt_revision {self.mt_revision}")
            if refused:
                raise ValueError(f"--mt_model apertium: {', '.join(refused)} cannot apply to Apertium, which "
                                 "translates text itself (no beams, scores or revisions)")
            check_apertium([(self.src_lang, self.tgt_lang)])  # binary and pair, before any work


@dataclass
class TranslateAlignModels:
    """The translator (``labeled-translation`` pipeline or anything called the same way), the word aligner
    (``None`` for a method that aligns nothing: ``insertion``) and, for a model-scored method, the
    :class:`~crop_hf.projection.TranslationScorer` over the translator's model (``src_lang`` → ``tgt_lang``).

    For a model-scored method :meth:`load` loads ``mt_model`` once, as the scorer, checks it (a
    model without the marker style's tokens asked to insert, or without the reverse direction asked
    to rerank, fails here, naming the model) and builds the translator on the same weights, adding
    no marker token (it translates plain utterances): :func:`~crop_hf.projection.loading.load_method_models`,
    which synthesis shares.
    """

    translator: Any
    aligner: Any
    scorer: Any = None

    @classmethod
    def load(cls, config: TranslateAlignConfig, device: Any = None) -> TranslateAlignModels:
        chosen = config.projection
        if not is_apertium(config.mt_model):  # it exists (a folder, or offline a cached Hub id) before it loads
            check_model(config.mt_model, "translation model (--mt_model)")
        # a scorer is checked before any utterance is translated
        translator, scorer = load_method_models(chosen, config.mt_model, src_lang=config.src_lang,
                                                tgt_langs=[config.tgt_lang], revision=config.mt_revision,
                                                device=device, batch_size=config.batch_size)
        aligner = EflomalAligner(symmetrization=config.symmetrization) if chosen.uses_alignment else None
        return cls(translator, aligner, scorer)


@dataclass
class ParseRecord:
    """One English parse on its way through the steps: what each step made of it, and why it was dropped.

    A step drops it with :meth:`drop`; the first reason wins, later steps skip it.
    """

    item: ParseInput
    flat: FlatParse | None = None  # its flat parse, once read
    utterance: str = ""  # what is translated: the item's utterance, else the parse's words
    translation: str = ""
    target: Any = None  # the tokenized translation (a TargetSentence)
    reason: str | None = None
    detail: str = ""

    @classmethod
    def read(cls, item: ParseInput) -> ParseRecord:
        """The record of ``item``, dropped with :class:`~crop_hf.augment.inputs.BadParse`'s reason when it does not read."""
        record = cls(item)
        try:
            record.flat = read_parse(item)
        except BadParse as error:  # its message starts with where the parse came from
            record.reason, record.detail = error.reason, str(error)
        else:
            record.utterance = item.utterance or " ".join(record.flat.tokens)
        return record

    @property
    def alive(self) -> bool:
        return self.reason is None

    def drop(self, reason: str, detail: str = "") -> None:
        """Drop the parse for ``reason`` (``detail`` follows where it came from), unless an earlier step did."""
        if self.reason is None:
            self.reason, self.detail = reason, f"{self.item.where}: {detail}" if detail else self.item.where

    def dropped(self) -> DroppedParse:
        return DroppedParse(source=self.item.where, source_parse=self.item.parse, source_utterance=self.utterance,
                            translation=self.translation, reason=self.reason, detail=self.detail)


def align_batch(
    items: Sequence[ParseInput],
    config: TranslateAlignConfig,
    models: TranslateAlignModels,
    language_filter: Any = None,
    drops: DropTally | None = None,
) -> ShardResult[AlignedParse, DroppedParse]:
    """Translate, align and project one batch (a shard): every item kept or dropped with its reason.

    The dropped parses are counted in ``drops`` (a new tally named after the target language when
    none is given; the job names the shard) and logged once at the end: one line per reason, with
    the first parse and why, not one per parse.
    """
    # the run's method, read once with its config; a parse that lost a slot is for keep_incomplete to judge
    method = config.projection.with_options(drop_incomplete=False)
    if method.uses_scorer:
        method.check_scorer(models.scorer)  # models given without a (fitting) scorer: said before translating
    records = [ParseRecord.read(item) for item in items]
    alive = [record for record in records if record.alive]
    # a text engine (Apertium) decodes nothing: the run said once, before any work, that beams do not apply
    generation = {} if isinstance(models.translator, TextEngineTranslationPipeline) else {
        "num_return_sequences": 1, "num_beams": config.num_beams, "max_new_tokens": config.max_new_tokens}
    translate = partial(models.translator, src_lang=config.src_lang, tgt_lang=config.tgt_lang, **generation)
    refusals: dict[int, Exception] = {}  # what the pipeline said of each record it refused, by index
    outputs = each_or_none(translate, [r.utterance for r in alive], refusals.__setitem__)
    for index, (record, output) in enumerate(zip(alive, outputs, strict=True)):
        record.translation = ((output or {}).get("translation") or "").strip()
        if index in refusals:
            record.drop("no_translation", f"the translator refused it: {refusals[index]}")
        elif not record.translation:
            record.drop("no_translation", "the translator returned nothing")
        elif language_filter is not None and not language_filter.accepts(record.translation, config.tgt_lang):
            record.drop("wrong_language", f"identified as {language_filter.identify(record.translation)}")
        else:
            record.target = tokenize_target(record.translation, config.tgt_lang, config.tokenization)
            if not record.target.tokens:
                record.drop("no_translation", "the translation has no tokens")
    alive = [record for record in records if record.alive]

    examples = [ProjectionExample(r.target, source_tokens=r.flat.tokens, source_spans=r.flat.slots) for r in alive]
    if method.uses_scorer:
        if method.uses_alignment and examples:
            align_missing(examples, models.aligner)  # the shard in one eflomal run, even if a pair is refused
        place = partial(method.project, aligner=models.aligner, scorer=models.scorer)
        refusals.clear()  # a pair the method refuses (a marker in the translation) is dropped alone
        results = each_or_none(place, examples, refusals.__setitem__)
        for index, (record, result) in enumerate(zip(alive, results, strict=True)):
            if result is None:
                why = f": {refusals[index]}" if index in refusals else ""
                record.drop("slots_lost", f"the projection method refused the translation{why}")
        alive, results = [r for r in alive if r.alive], [result for result in results if result is not None]
    else:
        results = method.project(examples, aligner=models.aligner) if alive else []
    kept: list[AlignedParse] = []
    for record, result in zip(alive, results, strict=True):
        lost = [s for s in result.statuses if s.status not in ("projected", "split", "found", "fuzzy")]
        if lost and not config.keep_incomplete:
            record.drop("slots_lost", ", ".join(f"{s.label} {s.text!r} {s.status}" for s in lost))
            continue
        slots = tags_to_spans(result.tags)
        tree_text = _round_trip(result.tokens, record.flat.intent, slots)
        if tree_text is None:
            record.drop("invalid_tree", f"tokens {result.tokens} cannot be written as a parse")
            continue
        kept.append(AlignedParse(
            utterance=record.translation, tokens=list(result.tokens), intent=record.flat.intent,
            slot_tags=spans_to_tags(slots, len(result.tokens)), parse=tree_text, domain=record.item.domain or "",
            lang=config.tgt_lang, source_utterance=record.utterance, source_parse=str(parse(record.item.parse)),
            source=record.item.where, projection_status=[s.status for s in result.statuses], method=config.method,
        ))

    dropped = [record.dropped() for record in records if not record.alive]
    drops = drops if drops is not None else DropTally(config.tgt_lang, noun="parse")
    for row in dropped:
        drops.add(row.reason, row.source, row.detail)
    drops.log(logger, logging.INFO)
    return ShardResult(kept, dropped)


def _round_trip(tokens: Sequence[str], intent: str, slots: Sequence[Span]) -> str | None:
    """The parse of ``tokens`` with ``slots``, or ``None`` when it could not be read back identically."""
    try:
        text = str(from_flat(tokens, intent, slots))
        back = to_flat(parse(text))
    except ValueError:  # a token with a bracket or a space, an empty token
        return None
    if back.tokens != list(tokens) or back.intent != intent or back.slots != sorted(slots, key=lambda s: s.start):
        return None
    return text


#: what a translate-and-align run gives back (one type for every corpus job); its ``statistics`` are keyed by the
#: split the run read (``--split``), though every kept parse is saved in the split ``train``
TranslateAlignResult = JobResult


class TranslateAlignJob(CorpusJob[AlignedParse, DroppedParse]):
    """Translate-and-align on the corpus-job contract: one key (the target language), whose shards are
    ``config.shard_size`` English parses each, saved as the split ``train``.

    ``models`` replace the configured ones (their aligner must symmetrize as the config says:
    the card and the fingerprint name the config's); otherwise they are loaded on the first
    shard, so a run whose every shard is finished never loads them.
    """

    name = "translate-align"
    reasons = TRANSLATE_ALIGN_REASONS
    kept_type = AlignedParse
    dropped_type = DroppedParse
    keys_field = "tgt_lang"
    split_name = "train"
    unit = "parse"

    def __init__(self, config: TranslateAlignConfig, models: TranslateAlignModels | None = None,
                 inputs: Any = None) -> None:
        given = getattr(getattr(models, "aligner", None), "symmetrization", config.symmetrization)
        if given != config.symmetrization:
            raise ValueError(f"the aligner passed in symmetrizes with {given!r} but config.symmetrization is "
                             f"{config.symmetrization!r}: build both with the same method")
        super().__init__(config, inputs)
        self.given_models = models

    def fingerprint_arguments(self) -> dict[str, Any]:
        return {**super().fingerprint_arguments(), "recipe": "translate-align", **self.translator}

    @cached_property
    def translator(self) -> dict[str, Any]:
        """What the fingerprint and the card say of a translation engine (Apertium); empty for a model."""
        return describe_translator(self.config.mt_model, [(self.config.src_lang, self.config.tgt_lang)])

    def before_run(self) -> None:
        # the input opens and holds a parse, before any model loads
        if next(iter(self.shards(self.config.tgt_lang)), None) is None:
            source = self.inputs if self.inputs is not None else self.config.input
            where = f" in {source}" if isinstance(source, (str, Path)) else ""
            raise EmptyInputError(f"--input: no English parses{where} (split {self.config.split!r})")
        for line in self.config.projection.foreign_rules([self.config.tgt_lang]):
            logger.warning(line)  # Hindi's postpositions on Spanish, say: once per run
        if is_apertium(self.config.mt_model) and self.config.num_beams != 1:
            logger.warning("--mt_model apertium gives one translation per sentence: --num_beams %d does not apply",
                           self.config.num_beams)

    @cached_property
    def models(self) -> tuple[TranslateAlignModels, Any]:
        """The models and the language filter (``None`` when off), built on first use."""
        config = self.config  # processes.process_state read through the module: a test's replacement is seen
        models = self.given_models or TranslateAlignModels.load(config, device=config.device or processes.process_state().device)
        return models, language_filter(config.src_lang, config.tgt_lang) if config.language_filter else None

    def shards(self, key: str):
        config = self.config
        source = self.inputs if self.inputs is not None else config.input
        items = source if isinstance(source, list) else iter_parse_inputs(
            source, split=config.split, parse_column=config.parse_column, utterance_column=config.utterance_column,
            option="--input")
        return shards_of(itertools.islice(items, config.max_examples), config.shard_size)

    def process(self, key: str, index: int, items: Sequence[ParseInput], status: Any) -> ShardResult:
        # the drops are said once per reason per shard; each parse is named by where it came from
        return align_batch(items, self.config, *self.models, drops=DropTally(f"{key} shard {index}", noun="parse"))

    def finish_kept(self, dataset: Any) -> Any:
        import datasets

        # Shards hold rows without ids: numbered here, in shard order, after the merge.
        features = datasets.Features({"id": datasets.Value("string"), **self.kept_features()})
        return dataset.add_column("id", [str(i) for i in range(len(dataset))]).cast(features) \
            .select_columns(list(features))

    def card(self, statistics: Mapping[str, Mapping[str, float]], *, command_line: str) -> str:
        config = self.config
        method = config.projection
        aligned = f"the words aligned by eflomal ({config.symmetrization}) and " if method.uses_alignment else ""
        if method.uses_scorer:
            placed = (f"the slots placed by `{config.mt_model}` itself ({config.method} projection, scored by the "
                      "translation model).")
        else:
            placed = f"the slots projected ({config.method} projection; a discontinuous slot becomes separate slots " \
                     "of its type)."
        role = "translation and slot placement" if method.uses_scorer else "translation"
        engine = self.translator.get("translator")
        translator = (f"Apertium {engine['version']} ({', '.join(engine['pairs'])}, data "
                      f"{', '.join(engine['pairs'].values())})" if engine else config.mt_model)
        models = {role: translator, **({"word alignment": "eflomal"} if method.uses_alignment else {})}
        return augmentation_card(
            recipe="translate-and-align",
            description=(f"English parses were translated into `{config.tgt_lang}` by `{translator}`, "
                         f"{aligned}{placed}"),
            languages=[config.tgt_lang], models=models,
            counts=statistics["train"], reasons=TRANSLATE_ALIGN_REASONS, features=FEATURES,
            command_line=command_line, settings=config.card_settings(),
            source=config.input if isinstance(config.input, str) else None)


def translate_align(config: TranslateAlignConfig, models: TranslateAlignModels | None = None,
                    inputs: Any = None) -> JobResult:
    """Run translate-and-align over ``config.input`` (or the in-memory ``inputs``: a ``Dataset``,
    ``DatasetDict`` or list of :class:`ParseInput`), resuming finished shards; the main process merges.

    Several processes (``accelerate launch``) split the shards: shard ``k`` belongs to process
    ``k % num_processes`` (:func:`crop_hf.engine.jobs.run_job`). The result's table names the split
    the run read (``--split validation``: a row ``validation``), where the outputs keep the one
    split ``train`` that the commands reading them expect.
    """
    result = run_job(TranslateAlignJob(config, models, inputs))
    read, saved = config.split, TranslateAlignJob.split_name
    if read == saved:
        return result

    def relabelled(by_split: Mapping[str, Any]) -> dict[str, Any]:
        return {read: by_split[saved]} if saved in by_split else {}  # the other processes' stay empty

    return dataclasses.replace(result, statistics=relabelled(result.statistics),
                               skipped_shards=relabelled(result.skipped_shards))
