"""CSTOP's generate-and-filter (section 6.2): a seq2seq model turns English parses into code-switched ones.

1. **Pairs.** For each code-switched parse of a few-shot set (CSTOP_100: :mod:`crop_hf.parsing.fewshot`)
   the ``top_k`` English parses of a pool with the same *signature* (the intent and the multiset
   of slot labels, :func:`signature`), nearest by Levenshtein distance over words (rapidfuzz), are
   paired with it (:func:`neighbour_pairs`).
2. **Fine-tune** a seq2seq generator (default ``facebook/bart-base``) on English parse →
   code-switched parse, with a small Accelerate loop (:func:`fine_tune`).
3. **Generate** with beam search from the English parses of the pool (:func:`generate`).
4. **Filter** (:func:`filter_generations`): a generation is dropped, counted, when it is not a
   valid flat tree (``invalid_tree``), is already in the few-shot set (``in_few_shot``), has a
   signature other than its source's (``signature_changed``) or repeats an earlier generation
   (``duplicate``).

The augmented set is the few-shot set plus what survives (``origin`` says which), with the
English source of each generation.

>>> signature("[IN:PLAY_MUSIC play [SL:ARTIST a ] and [SL:ARTIST b ] [SL:GENRE jazz ] ]")
('PLAY_MUSIC', ('ARTIST', 'ARTIST', 'GENRE'))
"""

from __future__ import annotations

import json
import logging
import shlex
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from crop_hf.augment.inputs import BadParse, ParseInput, iter_parse_inputs, read_parse
from crop_hf.seqlogical import FlatParse, parse, to_flat

logger = logging.getLogger(__name__)

__all__ = ["FILTER_REASONS", "GenerateFilterConfig", "filter_generations", "fine_tune", "generate",
           "generate_and_filter", "neighbour_pairs", "signature"]

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


def filter_generations(sources: Sequence[str], generations: Sequence[Sequence[str]],
                       few_shot: Sequence[str]) -> tuple[list[dict], list[dict], Counter]:
    """Judge each generation of each English source parse; returns ``(kept rows, discarded rows, counts)``.

    >>> kept, dropped, counts = filter_generations(
    ...     ["[IN:A stop [SL:X timer ] ]"],
    ...     [["[IN:A roko [SL:X timer ] ]", "[IN:A roko timer ]", "[IN:A roko [SL:X timer ]"]], few_shot=[])
    >>> [row["parse"] for row in kept], dict(counts)
    (['[IN:A roko [SL:X timer ] ]'], {'signature_changed': 1, 'invalid_tree': 1})
    """
    seen = {str(parse(p)) for p in few_shot}
    produced: set[str] = set()
    kept: list[dict] = []
    discarded: list[dict] = []
    for source, outputs in zip(sources, generations, strict=True):
        wanted = signature(source)
        for text in outputs:
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
                discarded.append({"generation": text, "source_parse": source, "reason": reason, "detail": detail})
                continue
            produced.add(canonical)
            kept.append({"utterance": " ".join(flat.tokens), "tokens": flat.tokens, "intent": flat.intent,
                         "slot_tags": flat.slot_tags, "parse": canonical, "origin": "generated",
                         "source_parse": source})
    return kept, discarded, Counter(row["reason"] for row in discarded)


@dataclass
class GenerateFilterConfig:
    """What generate-and-filter reads, the generator and its training, and where it writes."""

    few_shot: str = field(metadata={"help": "Code-switched parses: a TSV or a source spec "
                                            "(hinglish_top?data_dir=DIR reads its code-switched 'parse' column)."})
    english: str = field(metadata={"help": "English parses: a TSV or a source spec (hinglish_top?data_dir=DIR "
                                           "reads en_parse)."})
    output_dir: str = field(metadata={"help": "Folder for dataset/, discarded/, statistics.json and README.md."})
    lang: str = field(default="hi", metadata={"help": "Language code mixed with English in the few-shot set "
                                                      "(hi: Hinglish, es: CSTOP's Spanglish); for the card."})
    few_shot_split: str = field(default="train", metadata={"help": "Split of the few-shot source."})
    english_split: str = field(default="train", metadata={"help": "Split of the English source."})
    few_shot_parse_column: str = field(default="parse", metadata={"help": "Column of the code-switched parse."})
    english_parse_column: str | None = field(default=None, metadata={"help": "Column of the English parse "
                                                                              "(default en_parse, then parse)."})
    few_shot_size: int = field(default=100, metadata={"help": "Draw a CSTOP_100-style sample of this many rows "
                                                               "covering every intent and slot (0: use all rows)."})
    few_shot_seed: int = field(default=0, metadata={"help": "Seed of the few-shot draw (CSTOP: 0, 1, 2)."})
    model: str = field(default="facebook/bart-base", metadata={"help": "Seq2seq generator to fine-tune."})
    top_k: int = field(default=10, metadata={"help": "English neighbours per code-switched parse."})
    num_beams: int = field(default=5, metadata={"help": "Beams of the generation."})
    num_return_sequences: int = field(default=1, metadata={"help": "Generations kept per English source."})
    max_sources: int | None = field(default=None, metadata={"help": "Generate from at most this many English parses."})
    epochs: int = field(default=10, metadata={"help": "Fine-tuning epochs."})
    learning_rate: float = field(default=5e-5, metadata={"help": "AdamW learning rate."})
    batch_size: int = field(default=16, metadata={"help": "Batch size of fine-tuning and generation."})
    max_length: int = field(default=128, metadata={"help": "Longest parse, in model tokens."})
    seed: int = field(default=0, metadata={"help": "Seed of fine-tuning."})
    cpu: bool = field(default=False, metadata={"help": "Train on the CPU even when an accelerator is there."})
    save_model: bool = field(default=False, metadata={"help": "Save the fine-tuned generator under output_dir/generator."})

    def settings(self) -> dict[str, Any]:
        return {name: value for name, value in asdict(self).items() if name != "output_dir"}


def _read(source: Any, split: str, column: str | None, drop: Callable[[str, ParseInput, str], None]
          ) -> list[tuple[ParseInput, FlatParse]]:
    rows = []
    for item in iter_parse_inputs(source, split=split, parse_column=column):
        try:
            rows.append((item, read_parse(item)))
        except BadParse as error:
            drop(error.reason, item, str(error))
    return rows


def fine_tune(pairs: Sequence[tuple[str, str]], config: GenerateFilterConfig):
    """Fine-tune ``config.model`` on ``(English parse, code-switched parse)`` pairs; returns ``(model, tokenizer)``.

    It runs the training engine (:mod:`crop_hf.engine.training`) as every trainer does: AdamW
    without decay on biases and norms, linear warm-up over a tenth of the steps (at most 100) and
    decay, gradient clipping at 1.0; ``config.epochs`` passes over the shuffled pairs.
    """
    import math

    import torch
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, DataCollatorForSeq2Seq

    from crop_hf.engine.arguments import TrainingArguments
    from crop_hf.engine.training import TrainingTask, start, train

    steps = config.epochs * math.ceil(len(pairs) / config.batch_size)
    args = TrainingArguments(output_dir=str(Path(config.output_dir) / "generator"),
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
    for start in range(0, len(sources), batch_size):
        batch = tokenizer(list(sources[start:start + batch_size]), return_tensors="pt", padding=True,
                          truncation=True, max_length=max_length).to(model.device)
        with torch.no_grad():
            ids = model.generate(**batch, num_beams=max(num_beams, num_return_sequences),
                                 num_return_sequences=num_return_sequences, max_new_tokens=max_length)
        texts = [" ".join(t.split()) for t in tokenizer.batch_decode(ids, skip_special_tokens=True)]
        outputs.extend(texts[i:i + num_return_sequences] for i in range(0, len(texts), num_return_sequences))
    return outputs


@dataclass
class GenerateFilterResult:
    """Where the run wrote and its funnel (``statistics``)."""

    output_dir: Path
    statistics: dict[str, int]

    def table(self) -> str:
        from crop_hf.tables import format_table

        return format_table(list(self.statistics), [list(self.statistics.values())])

    def report(self) -> str:
        return f"{self.table()}\n\ndataset: {self.output_dir / 'dataset'}\ncard: {self.output_dir / 'README.md'}"


def generate_and_filter(config: GenerateFilterConfig, *, generator: Callable[[list[str]], list[list[str]]] | None = None,
                        few_shot: Any = None, english: Any = None) -> GenerateFilterResult:
    """Run the whole recipe; ``generator`` (English parses → generations each) replaces fine-tuning
    and generation, and ``few_shot``/``english`` replace the configured sources (``Dataset``s)."""
    import datasets

    from crop_hf.parsing.fewshot import few_shot_indices

    input_counts: Counter = Counter()
    bad: list[dict] = []

    def drop(reason: str, item: ParseInput, message: str) -> None:
        input_counts[reason] += 1
        bad.append({"generation": "", "source_parse": item.parse, "reason": reason, "detail": message})
        logger.warning("skipped %s", message)

    cs_rows = _read(few_shot if few_shot is not None else config.few_shot, config.few_shot_split,
                    config.few_shot_parse_column, drop)
    en_rows = _read(english if english is not None else config.english, config.english_split,
                    config.english_parse_column, drop)
    if not cs_rows or not en_rows:
        raise ValueError(f"no usable parses: {len(cs_rows)} code-switched, {len(en_rows)} English ({dict(input_counts)})")
    if config.few_shot_size:
        chosen = few_shot_indices([f.intent for _, f in cs_rows], [f.slot_tags for _, f in cs_rows],
                                  n=config.few_shot_size, seed=config.few_shot_seed)
        cs_rows = [cs_rows[i] for i in chosen]
    cs_flat = [flat for _, flat in cs_rows]
    en_flat = [flat for _, flat in en_rows]
    pairs = neighbour_pairs(cs_flat, en_flat, config.top_k)
    few_shot_parses = [str(f.to_tree()) for f in cs_flat]
    wanted = {signature(f) for f in cs_flat}
    # Sources: English parses whose signature the few-shot set knows (the generator never saw others).
    sources = [str(f.to_tree()) for f in en_flat if signature(f) in wanted][: config.max_sources]
    logger.info("%d few-shot parses, %d training pairs, %d English sources", len(cs_flat), len(pairs), len(sources))
    model = None
    if generator is None:
        model, tokenizer = fine_tune([(str(en_flat[j].to_tree()), few_shot_parses[i]) for i, j in pairs], config)
        generations = generate(model, tokenizer, sources, num_beams=config.num_beams,
                               num_return_sequences=config.num_return_sequences, batch_size=config.batch_size,
                               max_length=config.max_length)
    else:
        generations = generator(sources)
    kept, discarded, counts = filter_generations(sources, generations, few_shot_parses)

    statistics = {"few_shot": len(cs_flat), "english": len(en_flat), "pairs": len(pairs), "sources": len(sources),
                  "generated": sum(len(g) for g in generations),
                  **{reason: input_counts[reason] for reason in INPUT_REASONS},
                  **{reason: counts[reason] for reason in FILTER_REASONS}, "kept": len(kept)}
    output = Path(config.output_dir)
    few_rows = [{"utterance": " ".join(f.tokens), "tokens": f.tokens, "intent": f.intent,
                 "slot_tags": f.slot_tags, "parse": str(f.to_tree()), "origin": "few_shot", "source_parse": ""}
                for item, f in cs_rows]
    features = _features()
    augmented = datasets.Dataset.from_list(few_rows + kept, features=features)
    dropped = datasets.Dataset.from_list(bad + discarded, features=_discarded_features()) if bad + discarded else \
        datasets.Dataset.from_dict({name: [] for name in _discarded_features()}, features=_discarded_features())
    _save(output, augmented, dropped, statistics, config)
    if model is not None and config.save_model:
        model.save_pretrained(output / "generator")
        tokenizer.save_pretrained(output / "generator")
    return GenerateFilterResult(output, statistics)


def _features():
    import datasets

    string, strings = datasets.Value("string"), datasets.List(datasets.Value("string"))
    return datasets.Features({"utterance": string, "tokens": strings, "intent": string, "slot_tags": strings,
                              "parse": string, "origin": string, "source_parse": string})


def _discarded_features():
    import datasets

    return datasets.Features({name: datasets.Value("string") for name in
                              ("generation", "source_parse", "reason", "detail")})


def _save(output: Path, augmented, dropped, statistics: dict[str, int], config: GenerateFilterConfig) -> None:
    import datasets

    from crop_hf.engine.shards import atomic_write_bytes, save_dataset_dict
    from crop_hf.hub import augmentation_card

    output.mkdir(parents=True, exist_ok=True)
    save_dataset_dict(datasets.DatasetDict({"train": augmented}), output / "dataset")
    save_dataset_dict(datasets.DatasetDict({"train": dropped}), output / "discarded")
    atomic_write_bytes(output / "statistics.json", json.dumps(statistics, indent=2).encode("utf-8"))
    reasons = {"few_shot": "code-switched parses in the few-shot set", "english": "usable English parses",
               "pairs": "(English, code-switched) training pairs", "sources": "English parses generated from",
               "generated": "generations", **INPUT_REASONS, **FILTER_REASONS, "kept": "generations kept"}
    card = augmentation_card(
        recipe="generate-and-filter",
        description=(f"`{config.model}` was fine-tuned to turn English parses into code-switched ones on "
                     f"{statistics['pairs']} pairs (each few-shot parse with its {config.top_k} nearest English "
                     "parses of the same signature), generated with beam search from English parses, and the "
                     "generations were filtered. The dataset holds the few-shot parses and the kept generations "
                     "(`origin`)."),
        languages=[config.lang, "en"], models={"generator": config.model}, counts=statistics, reasons=reasons,
        features={"utterance": "the words of the parse", "tokens": "the words of `parse`", "intent": "intent name",
                  "slot_tags": "IOB2 slot tags", "parse": "the bracket parse",
                  "origin": "`few_shot` or `generated`", "source_parse": "the English parse it was generated from"},
        command_line=shlex.join([Path(sys.argv[0]).name, *sys.argv[1:]]), settings=config.settings(),
        source=config.few_shot)
    atomic_write_bytes(output / "README.md", card.encode("utf-8"))
