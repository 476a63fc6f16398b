"""CSTOP's generate-and-filter (section 6.2): a seq2seq model turns English parses into code-switched ones.

1. **Pairs.** For each code-switched parse of a few-shot set (CSTOP_100: :mod:`crop_hf.data.fewshot`)
   the ``top_k`` English parses of a pool with the same *signature* (the intent and the multiset
   of slot labels, :func:`signature`), nearest by Levenshtein distance over words (rapidfuzz), are
   paired with it (:func:`neighbour_pairs`).
2. **Fine-tune** a seq2seq generator (default ``facebook/bart-base``) on English parse →
   code-switched parse, with a small Accelerate loop (:func:`fine_tune`).
3. **Generate** with beam search from the English parses of the pool (:func:`generate`).
4. **Filter** (:func:`judge_generations`): a generation is dropped, counted, when it is not a
   valid flat tree (``invalid_tree``), is already in the few-shot set (``in_few_shot``), has a
   signature other than its source's (``signature_changed``) or repeats an earlier generation
   (``duplicate``).

The augmented set is the few-shot set plus what survives (``origin`` says which), with the
English source of each generation.

The run is a :class:`GenerateFilterJob` on the corpus-job contract (:mod:`crop_hf.engine.jobs`):
its shards are the English parses generated from (``shard_size`` each); each shard is generated
and filtered, written atomically, and skipped by a rerun with the same settings. The inputs are
read and the few-shot set drawn once per run; the generator is fine-tuned once, and only when a
shard is left to generate. An earlier shard's generation repeated in a later one is dropped as
``duplicate`` at the merge, so the kept set does not depend on the shard size.

>>> signature("[IN:PLAY_MUSIC play [SL:ARTIST a ] and [SL:ARTIST b ] [SL:GENRE jazz ] ]")
('PLAY_MUSIC', ('ARTIST', 'ARTIST', 'GENRE'))
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

from crop_hf.augment.card import augmentation_card
from crop_hf.augment.inputs import BadParse, iter_parse_inputs, read_parse
from crop_hf.augment.rows import ParseRow
from crop_hf.data.fewshot import few_shot_indices
from crop_hf.engine import processes
from crop_hf.engine.arguments import TrainingLoopArguments
from crop_hf.engine.contents import DATA, MODEL
from crop_hf.engine.jobs import CorpusJob, JobResult, ShardResult, run_job
from crop_hf.engine.options import RunOptions
from crop_hf.engine.records import DropTally, row_descriptions
from crop_hf.engine.shards import honour_umask, merge_shards, save_dataset_dict, save_hub_layout, shards_of
from crop_hf.engine.training import TrainingTask, start, telling_where_saved, train
from crop_hf.errors import EmptyInputError, check_model
from crop_hf.seqlogical import FlatParse, parse, to_flat

logger = logging.getLogger(__name__)

__all__ = ["FILTER_REASONS", "GENERATE_FILTER_REASONS", "INPUT_REASONS", "AugmentedParse", "DiscardedParse",
           "GenerateFilterConfig", "GenerateFilterJob", "GenerateFilterResult", "GenerationPlan",
           "fine_tune", "generate", "generate_and_filter", "judge_generations", "neighbour_pairs", "read_plan",
           "signature"]

#: Why an input record is not used (bad input), counted per input.
INPUT_REASONS: dict[str, str] = {
    "invalid_source": "a parse that does not parse (or has an empty slot)",
    "nested_source": "a slot holding a nested intent",
    "empty_utterance": "an empty utterance",
}

#: Why a generation is dropped (first reason wins).
FILTER_REASONS: dict[str, str] = {
    "invalid_tree": "the generation is not a valid bracket parse of one intent with word-only slots",
    "in_few_shot": "the generation is already in the few-shot set",
    "signature_changed": "its intent or multiset of slot labels differs from the English source's",
    "duplicate": "an earlier generation is the same parse",
}

#: Every reason a record is dropped: an input's (counted when the inputs are read), then a generation's.
GENERATE_FILTER_REASONS: dict[str, str] = {**INPUT_REASONS, **FILTER_REASONS}

#: What ``statistics.json`` counts beyond the reasons, and what each count is (the card explains them).
COUNTS: dict[str, str] = {"few_shot": "code-switched parses in the few-shot set", "english": "usable English parses",
                          "pairs": "(English, code-switched) training pairs", "sources": "English parses generated from",
                          "generated": "generations"}


@dataclass
class AugmentedParse(ParseRow):
    """A row of the augmented set (``dataset/``): a parse of the few-shot set or a kept generation."""

    origin: str = field(metadata={"help": "`few_shot` or `generated`"})
    source_parse: str = field(metadata={"help": "the English parse it was generated from"})

    @classmethod
    def of(cls, flat: FlatParse, origin: str, source_parse: str = "") -> AugmentedParse:
        """The row of a flat parse (written canonically)."""
        return cls(utterance=" ".join(flat.tokens), tokens=list(flat.tokens), intent=flat.intent,
                   slot_tags=list(flat.slot_tags), parse=str(flat.to_tree()), origin=origin, source_parse=source_parse)


@dataclass
class DiscardedParse:
    """An input parse that could not be used, or a generation the filter dropped (a row of ``discarded/``)."""

    generation: str = field(metadata={"help": "the generation (empty for an input parse)"})
    source_parse: str = field(metadata={"help": "the English parse generated from, or the input parse as read"})
    reason: str = field(metadata={"help": "why it was dropped (:data:`GENERATE_FILTER_REASONS`)"})
    detail: str = field(metadata={"help": "where and what exactly went wrong"})


def signature(parse_or_flat: str | FlatParse) -> tuple[str, tuple[str, ...]]:
    """The intent and the sorted slot labels of a flat parse: what a generation must keep."""
    flat = to_flat(parse_or_flat) if isinstance(parse_or_flat, str) else parse_or_flat
    return flat.intent, tuple(sorted(span.label for span in flat.slots))


def neighbour_pairs(code_switched: Sequence[FlatParse], english: Sequence[FlatParse],
                    top_k: int = 10) -> list[tuple[int, int]]:
    """``(code-switched index, English index)`` training pairs: for each code-switched parse, the
    ``top_k`` English parses with its signature, nearest first by word-level Levenshtein distance
    (ties: pool order).

    >>> cs = [to_flat("[IN:A mera [SL:X timer ] roko ]")]
    >>> en = [to_flat(p) for p in ("[IN:A stop my [SL:X timer ] ]", "[IN:A stop [SL:X timer ] roko now ]",
    ...                            "[IN:B stop my [SL:X timer ] ]")]
    >>> neighbour_pairs(cs, en, top_k=5)
    [(0, 1), (0, 0)]
    """
    from rapidfuzz.distance import Levenshtein

    by_signature: dict[tuple, list[int]] = {}
    for j, flat in enumerate(english):
        by_signature.setdefault(signature(flat), []).append(j)
    pairs = []
    for i, flat in enumerate(code_switched):
        candidates = by_signature.get(signature(flat), [])
        ranked = sorted(candidates, key=lambda j: (Levenshtein.distance(flat.tokens, english[j].tokens), j))
        pairs.extend((i, j) for j in ranked[:top_k])
    return pairs


def judge_generations(sources: Sequence[str], generations: Sequence[Sequence[str]],
                      few_shot: Sequence[str]) -> ShardResult[AugmentedParse, DiscardedParse]:
    """Judge each generation of each English source parse (the step of one shard): kept rows, dropped
    rows with their reason, and the count of generations (``generated``).

    >>> judged = judge_generations(
    ...     ["[IN:A stop [SL:X timer ] ]"],
    ...     [["[IN:A roko [SL:X timer ] ]", "[IN:A roko timer ]", "[IN:A roko [SL:X timer ]"]], few_shot=[])
    >>> [row.parse for row in judged.kept], dict(judged.reasons())
    (['[IN:A roko [SL:X timer ] ]'], {'signature_changed': 1, 'invalid_tree': 1})
    """
    seen = {str(parse(p)) for p in few_shot}
    produced: set[str] = set()
    result: ShardResult[AugmentedParse, DiscardedParse] = ShardResult([], [], {"generated": 0})
    for source, outputs in zip(sources, generations, strict=True):
        wanted = signature(source)
        for text in outputs:
            result.counts["generated"] += 1
            reason, flat = None, None
            try:
                flat = to_flat(parse(text))
            except ValueError as error:  # ParseError, TreeTooDeepError, empty slot
                reason, detail = "invalid_tree", str(error).splitlines()[0]
            if flat is not None:
                canonical = str(flat.to_tree())
                if canonical in seen:
                    reason, detail = "in_few_shot", ""
                elif signature(flat) != wanted:
                    reason, detail = "signature_changed", f"{signature(flat)} instead of {wanted}"
                elif canonical in produced:
                    reason, detail = "duplicate", ""
            if reason is not None:
                result.dropped.append(DiscardedParse(generation=text, source_parse=source, reason=reason, detail=detail))
                continue
            produced.add(canonical)
            result.kept.append(AugmentedParse.of(flat, "generated", source))
    return result


@dataclass
class GenerateFilterConfig(RunOptions):
    """What generate-and-filter reads, the generator and its training, and where it writes.

    Every field changes results (the run's fingerprint) but the run options, ``lang`` (the run's
    one key: its shards have their own folder), ``cpu`` (where the generator runs) and
    ``save_model``. ``shard_size`` counts: the kept set does not depend on it, but a finished
    shard's number names its sources only for one shard size.
    """

    run_only = ("lang", "cpu", "save_model")
    local_inputs: ClassVar[Mapping[str, str]] = {"few_shot": DATA, "english": DATA, "model": MODEL}

    few_shot: str = field(metadata={
        "help": "Code-switched parses: a TSV or a source spec (hinglish_top?data_dir=DIR reads its code-switched "
                "'parse' column)."})
    english: str = field(metadata={
        "help": "English parses: a TSV or a source spec (hinglish_top?data_dir=DIR reads en_parse)."})
    lang: str = field(default="hi", metadata={"help": "Language code mixed with English in the few-shot set "
                                                      "(hi: Hinglish, es: CSTOP's Spanglish); for the card."})
    few_shot_split: str = field(default="train", metadata={"help": "Split of the few-shot source."})
    english_split: str = field(default="train", metadata={"help": "Split of the English source."})
    few_shot_parse_column: str = field(default="parse", metadata={
        "help": "Column of the code-switched parse."})
    english_parse_column: str | None = field(default=None, metadata={
        "help": "Column of the English parse (default en_parse, then parse)."})
    few_shot_size: int = field(default=100, metadata={
        "help": "Draw a CSTOP_100-style sample of this many rows covering every intent and slot (0: use all rows)."})
    few_shot_seed: int = field(default=0, metadata={
        "help": "Seed of the few-shot draw (CSTOP: 0, 1, 2)."})
    model: str = field(default="facebook/bart-base", metadata={
        "help": "Seq2seq generator to fine-tune."})
    top_k: int = field(default=10, metadata={"help": "English neighbours per code-switched parse."})
    num_beams: int = field(default=5, metadata={"help": "Beams of the generation."})
    num_return_sequences: int = field(default=1, metadata={
        "help": "Generations kept per English source."})
    max_sources: int | None = field(default=None, metadata={
        "help": "Generate from at most this many English parses."})
    shard_size: int = field(default=1000, kw_only=True, metadata={
        "help": "English parses generated from per resumable shard."})
    epochs: int = field(default=10, metadata={"help": "Fine-tuning epochs."})
    learning_rate: float = field(default=5e-5, metadata={"help": "AdamW learning rate."})
    batch_size: int = field(default=16, metadata={"help": "Batch size of fine-tuning and generation."})
    max_length: int = field(default=128, metadata={"help": "Longest parse, in model tokens."})
    seed: int = field(default=0, metadata={"help": "Seed of fine-tuning."})
    cpu: bool = field(default=False, metadata={"help": "Train on the CPU even when an accelerator is there."})
    save_model: bool = field(default=False, metadata={"help": "Save the fine-tuned generator under output_dir/generator."})


def _read(source: Any, split: str, column: str | None, dropped: list[DiscardedParse], option: str) -> list[FlatParse]:
    """The flat parses of ``source``; each one that does not read is appended to ``dropped``, and the
    source's drops are logged once it is read: one line per reason, with the first parse and why.

    A source without any record (blank lines and a header skipped) is an :class:`~crop_hf.errors.EmptyInputError`
    naming ``option`` (``"--english"``) and the source; so is one whose every record is unusable."""
    rows, before = [], len(dropped)
    where = f"{option} {source}" if isinstance(source, (str, Path)) else f"{option} (the dataset given)"
    drops = DropTally(where, noun="parse")
    for item in iter_parse_inputs(source, split=split, parse_column=column, option=option):
        try:
            rows.append(read_parse(item))
        except BadParse as error:
            dropped.append(DiscardedParse(generation="", source_parse=item.parse, reason=error.reason,
                                          detail=str(error)))
            drops.add(error.reason, item.where, error)
    drops.log(logger)
    if not rows:
        unusable = dict(Counter(row.reason for row in dropped[before:]))
        if unusable:
            raise EmptyInputError(f"{where}: no usable parses in its {split!r} split ({unusable})")
        raise EmptyInputError(f"{where}: no parses in its {split!r} split (blank lines and a header are skipped)")
    return rows


@dataclass
class GenerationPlan:
    """What a run reads once: the few-shot set, the English pool, the training pairs, the sources, the bad input."""

    few_shot: list[FlatParse]
    english: list[FlatParse]
    pairs: list[tuple[int, int]]
    #: the English parses generated from (canonical), in pool order
    sources: list[str]
    #: input parses that could not be read (``discarded/`` holds them first)
    dropped: list[DiscardedParse]

    @cached_property
    def few_shot_parses(self) -> list[str]:
        return [str(flat.to_tree()) for flat in self.few_shot]

    def training_pairs(self) -> list[tuple[str, str]]:
        """``(English parse, code-switched parse)`` texts to fine-tune on."""
        return [(str(self.english[j].to_tree()), self.few_shot_parses[i]) for i, j in self.pairs]


def read_plan(config: GenerateFilterConfig, few_shot: Any = None, english: Any = None) -> GenerationPlan:
    """Read both sides (``few_shot``/``english`` replace the configured sources), draw the few-shot set, pair
    it with its English neighbours and pick the sources: the English parses whose signature the few-shot set
    knows (the generator never saw others), at most ``config.max_sources``."""
    dropped: list[DiscardedParse] = []
    cs_flat = _read(few_shot if few_shot is not None else config.few_shot, config.few_shot_split,
                    config.few_shot_parse_column, dropped, "--few_shot")
    en_flat = _read(english if english is not None else config.english, config.english_split,
                    config.english_parse_column, dropped, "--english")
    if config.few_shot_size:
        chosen = few_shot_indices([f.intent for f in cs_flat], [f.slot_tags for f in cs_flat],
                                  n=config.few_shot_size, seed=config.few_shot_seed)
        cs_flat = [cs_flat[i] for i in chosen]
    pairs = neighbour_pairs(cs_flat, en_flat, config.top_k)
    wanted = {signature(f) for f in cs_flat}
    sources = [str(f.to_tree()) for f in en_flat if signature(f) in wanted][: config.max_sources]
    logger.info("%d few-shot parses, %d training pairs, %d English sources", len(cs_flat), len(pairs), len(sources))
    return GenerationPlan(cs_flat, en_flat, pairs, sources, dropped)


def fine_tune(pairs: Sequence[tuple[str, str]], config: GenerateFilterConfig):
    """Fine-tune ``config.model`` on ``(English parse, code-switched parse)`` pairs; returns ``(model, tokenizer)``.

    It runs the training engine (:mod:`crop_hf.engine.training`) as every trainer does: AdamW
    without decay on biases and norms, linear warm-up over a tenth of the steps (at most 100) and
    decay, gradient clipping at 1.0; ``config.epochs`` passes over the shuffled pairs.
    """
    import math

    import torch
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, DataCollatorForSeq2Seq

    check_model(config.model, "generator (--model)")  # before the accelerator starts and anything loads
    steps = config.epochs * math.ceil(len(pairs) / config.batch_size)
    args = TrainingLoopArguments(output_dir=str(Path(config.output_dir) / "generator"),
                             per_device_train_batch_size=config.batch_size, learning_rate=config.learning_rate,
                             num_train_epochs=config.epochs, warmup_steps=min(100, steps // 10), seed=config.seed,
                             show_progress=False)
    accelerator = start(args, cpu=config.cpu)
    tokenizer = AutoTokenizer.from_pretrained(config.model)
    model = AutoModelForSeq2SeqLM.from_pretrained(config.model)
    features = [dict(tokenizer(source, text_target=target, truncation=True, max_length=config.max_length))
                for source, target in pairs]
    loader = torch.utils.data.DataLoader(features, batch_size=config.batch_size, shuffle=True,
                                         collate_fn=DataCollatorForSeq2Seq(tokenizer, model=model),
                                         generator=torch.Generator().manual_seed(config.seed))
    run = train(TrainingTask(model, loader, loss=lambda model, batch: model(**batch).loss), args, accelerator)
    return run.unwrapped().eval(), tokenizer


def generate(model, tokenizer, sources: Sequence[str], *, num_beams: int = 5, num_return_sequences: int = 1,
             batch_size: int = 16, max_length: int = 128) -> list[list[str]]:
    """Beam-search ``num_return_sequences`` outputs per source text."""
    import torch

    outputs: list[list[str]] = []
    for first in range(0, len(sources), batch_size):
        batch = tokenizer(list(sources[first:first + batch_size]), return_tensors="pt", padding=True,
                          truncation=True, max_length=max_length).to(model.device)
        with torch.no_grad():
            ids = model.generate(**batch, num_beams=max(num_beams, num_return_sequences),
                                 num_return_sequences=num_return_sequences, max_new_tokens=max_length)
        texts = [" ".join(t.split()) for t in tokenizer.batch_decode(ids, skip_special_tokens=True)]
        outputs.extend(texts[i:i + num_return_sequences] for i in range(0, len(texts), num_return_sequences))
    return outputs


#: what a generate-and-filter run gives back (one type for every corpus job): the funnel is its ``train`` split
GenerateFilterResult = JobResult


class GenerateFilterJob(CorpusJob[AugmentedParse, DiscardedParse]):
    """Generate-and-filter on the corpus-job contract: one key (``config.lang``), whose shards are the
    English parses generated from (``config.shard_size`` each), saved as the split ``train``.

    The inputs are read once (:func:`read_plan`, at the start: bad input is reported first). The
    generator is fine-tuned at the start too, and only when a shard is left to generate: a rerun
    whose every shard is finished never fine-tunes, and under ``torchrun`` every process joins the
    (collective) fine-tuning or none does. ``generator`` (English parses → generations each)
    replaces fine-tuning and generation. The merge puts the few-shot parses first in ``dataset/``
    and the unusable input parses first in ``discarded/``, and drops as ``duplicate`` a generation
    an earlier shard kept.
    """

    name = "generate-filter"
    reasons = GENERATE_FILTER_REASONS
    kept_type = AugmentedParse
    dropped_type = DiscardedParse
    keys_field = "lang"
    split_name = "train"
    unit = "source"
    extra_counts = ("generated",)

    def __init__(self, config: GenerateFilterConfig, generator: Callable[[list[str]], list[list[str]]] | None = None,
                 few_shot: Any = None, english: Any = None) -> None:
        super().__init__(config, {"few_shot": few_shot, "english": english})
        self.generator = generator
        self.model = self.tokenizer = None  # the fine-tuned generator, once trained
        self.repeated = 0  # generations an earlier shard had kept, dropped at the merge

    @cached_property
    def plan(self) -> GenerationPlan:
        return read_plan(self.config, self.inputs["few_shot"], self.inputs["english"])

    def before_run(self) -> None:
        self.plan  # noqa: B018 - read now: bad input is reported, and empty input refused, before anything else
        key = self.config.lang
        if self.generator is not None or all(self.store.is_done(key, index) for index, _ in self.shards(key)):
            return  # nothing to fine-tune, or nothing left to generate
        # Every process sees the same shards here: none can finish one before all have joined the training.
        self.train_generator()

    def train_generator(self) -> None:
        """Fine-tune the generator on the plan's pairs (once per run)."""
        if self.model is None:
            self.model, self.tokenizer = fine_tune(self.plan.training_pairs(), self.config)

    @contextmanager
    def keeping_the_generator(self) -> Iterator[None]:
        """A failure after fine-tuning saves the generator (``save_model``) and says where it and the
        finished shards (which a rerun with the same options resumes from) are."""
        try:
            yield
        except Exception:
            shards = f"finished shards are kept in {self.store.root}: a rerun with the same options resumes them"
            if not self.config.save_model:
                logger.error("generating failed after fine-tuning the generator; %s", shards)
                raise
            folder = self.output_dir / "generator"
            with telling_where_saved(folder, "generating", shards):
                self.save_generator()
                raise

    def save_generator(self) -> None:
        """The fine-tuned generator and its tokenizer to ``output_dir/generator`` (main process)."""
        if processes.process_state().is_main_process:
            self.model.save_pretrained(self.output_dir / "generator")
            self.tokenizer.save_pretrained(self.output_dir / "generator")
            honour_umask(self.output_dir / "generator")  # save_pretrained writes the weights 0600

    def shards(self, key: str):
        return shards_of(self.plan.sources, self.config.shard_size)

    def process(self, key: str, index: int, items: Sequence[str], status: Any) -> ShardResult:
        sources = list(items)
        if self.generator is not None:
            generations = self.generator(sources)
        else:
            self.train_generator()  # done by before_run already
            config = self.config
            with self.keeping_the_generator():
                generations = generate(self.model, self.tokenizer, sources, num_beams=config.num_beams,
                                       num_return_sequences=config.num_return_sequences,
                                       batch_size=config.batch_size, max_length=config.max_length)
        return judge_generations(sources, generations, self.plan.few_shot_parses)

    def write_outputs(self) -> None:
        import datasets

        finished = list(self.store.finished(self.config.lang))
        generated = merge_shards(finished, True, self.kept_features())
        first: dict[str, int] = {}
        repeated = []  # each shard filtered its own duplicates; these repeat an earlier shard's
        for index, (text, source) in enumerate(zip(generated["parse"], generated["source_parse"], strict=True)):
            if text in first:
                repeated.append(DiscardedParse(generation=text, source_parse=source, reason="duplicate", detail=""))
            else:
                first[text] = index
        self.repeated = len(repeated)
        few_shot = [AugmentedParse.of(flat, "few_shot") for flat in self.plan.few_shot]
        kept = datasets.concatenate_datasets([_dataset(few_shot, self.kept_features()),
                                              generated.select(sorted(first.values()))])
        dropped = datasets.concatenate_datasets([
            _dataset(self.plan.dropped, self.dropped_features()),
            merge_shards(finished, False, self.dropped_features()), _dataset(repeated, self.dropped_features())])
        save_dataset_dict(datasets.DatasetDict({"train": kept}), self.output_dir / "dataset")
        save_hub_layout(datasets.DatasetDict({"train": kept}), self.output_dir)
        save_dataset_dict(datasets.DatasetDict({"train": dropped}), self.output_dir / "discarded")

    def counts(self, statistics: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
        """The funnel: the plan's counts, the generations, each reason, the kept generations (after the merge)."""
        counts, plan = statistics[self.config.lang], self.plan
        inputs = Counter(row.reason for row in plan.dropped)
        filtered = {reason: counts[reason] for reason in FILTER_REASONS}
        filtered["duplicate"] += self.repeated
        return {"train": {"few_shot": len(plan.few_shot), "english": len(plan.english), "pairs": len(plan.pairs),
                          "sources": len(plan.sources), "generated": counts["generated"],
                          **{reason: inputs[reason] for reason in INPUT_REASONS}, **filtered,
                          "kept": counts["kept"] - self.repeated}}

    def card(self, statistics: Mapping[str, Mapping[str, float]], *, command_line: str) -> str:
        config, record = self.config, statistics["train"]
        return augmentation_card(
            recipe="generate-and-filter",
            description=(f"`{config.model}` was fine-tuned to turn English parses into code-switched ones on "
                         f"{record['pairs']} pairs (each few-shot parse with its {config.top_k} nearest English "
                         "parses of the same signature), generated with beam search from English parses, and the "
                         "generations were filtered. The dataset holds the few-shot parses and the kept generations "
                         "(`origin`)."),
            languages=[config.lang, "en"], models={"generator": config.model}, counts=record,
            reasons={**COUNTS, **GENERATE_FILTER_REASONS, "kept": "generations kept"},
            features=row_descriptions(AugmentedParse), command_line=command_line, settings=config.card_settings(),
            source=config.few_shot)

    def after_merge(self) -> None:
        if not self.config.save_model:
            return
        if self.model is not None:
            self.save_generator()
        elif self.generator is None:
            logger.warning("save_model: every shard was finished by an earlier run, so no generator was fine-tuned "
                           "in this one (an earlier run with save_model saved its own under %s)",
                           self.output_dir / "generator")


def _dataset(rows: Sequence[Any], features: Any) -> Any:
    """``rows`` (dataclasses) as a ``Dataset`` of ``features``, empty or not."""
    import datasets

    return datasets.Dataset.from_dict({name: [getattr(row, name) for row in rows] for name in features},
                                      features=features)


def generate_and_filter(config: GenerateFilterConfig, *, generator: Callable[[list[str]], list[list[str]]] | None = None,
                        few_shot: Any = None, english: Any = None) -> JobResult:
    """Run the whole recipe (:class:`GenerateFilterJob`), resuming finished shards; ``generator`` (English
    parses → generations each) replaces fine-tuning and generation, and ``few_shot``/``english`` replace
    the configured sources (``Dataset``s)."""
    return run_job(GenerateFilterJob(config, generator, few_shot, english))
