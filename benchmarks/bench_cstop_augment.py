"""CSTOP's augmentations end to end, offline, on Hinglish-TOP: does the parser gain from them?

    nice -n 10 python benchmarks/bench_cstop_augment.py            # ../shared/data/hinglish-top
    python benchmarks/bench_cstop_augment.py --steps 200 --quick   # a shorter smoke run

The parser is bench_parser.py's set-up (a from-scratch 2-layer BERT-style encoder with dropout 0.1,
WordPiece trained on the train text, CRF, lr 3e-3, one torch thread), trained for the same number of
steps in every run and scored (exact match, exact match on the validation parses absent from the
train parses, intent accuracy, slot F1) on all 1,390 code-switched validation utterances. Every row
trains the parser once per ``--seeds`` seed (default 0 1 2) and prints the mean and the sample standard
deviation over the seeds. Rows:

1. **few-shot only**: a CSTOP_100-style sample (100 code-switched train utterances with flat trees
   covering every intent and slot label, seed ``--few_shot_seed``);
2. **few-shot + generate-and-filter**: a tiny BART (random weights, byte-level BPE on the train
   parses) fine-tuned on each few-shot parse paired with its ``--top_k`` nearest English train parses
   of the same signature, generating from English train parses; one generator run (seed: the first
   of ``--seeds``), so only the parser seed varies; the funnel is printed;
3. **English only**: all English train parses, no code-switched utterance at all (the zero-shot
   baseline);
4. **English + translate-and-align**, one row per ``--methods`` projection method (default
   ``alignment``, CSTOP's split rule; ``hybrid``; ``hybrid?postpositions=hi``): all English train
   parses, "translated" by the human code-switched rewrite of Hinglish-TOP (standing in for MT
   output), aligned by eflomal (grow-diag-final, once per method) and projected with the method,
   mixed with the English parses of row 3; one funnel row per method is printed. This is the
   zero-shot setting (no code-switched gold parse is used).

After the table, each row 4 is set against English only (the exact-match difference in points, and
whether it exceeds three times the larger of the two seed standard deviations), as CSTOP's zero-shot
table sets English + translate-and-align against English only, and row 2 against row 1 (the ratio of
mean exact match). ``--quick`` skips rows 3 and 4.

Measured (2026-12-06, defaults: 600 parser steps, seeds 0 1 2, 2 shared CPU cores), exact match on
validation: English only 5.2 ± 1.0; English + translate-and-align 29.4 ± 2.4 (alignment), 35.0 ± 1.0
(hybrid), 32.6 ± 3.5 (hybrid?postpositions=hi); few-shot only 8.9 ± 1.2, + generate-and-filter 8.8 ± 1.4.

Results, settings and history: docs/benchmarks/bench-cstop-augment.md
"""

from __future__ import annotations

import argparse
import atexit
import functools
import logging
import operator
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "hinglish-top"
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # tiny_models.build_tiny_bart

DEFAULT_METHODS = ["alignment", "hybrid", "hybrid?postpositions=hi"]
SYMMETRIZATION = "grow-diag-final"
#: the scores of a row, as (column header, key path in evaluate_parser's scores)
METRICS = {"exact": ("exact_match",), "exact unseen": ("unseen", "exact_match"),
           "intent": ("intent_accuracy",), "slot F1": ("slot_f1",)}


class HumanRewrite:
    """A translator that returns Hinglish-TOP's code-switched rewrite of each English utterance."""

    def __init__(self, rewrites: dict[str, str]) -> None:
        self.rewrites = rewrites

    def __call__(self, texts, **kwargs):
        return [{"translation": self.rewrites.get(text, "")} for text in texts]


@dataclass
class Row:
    """One run of the table: its training rows and, per metric, one percentage per parser seed."""

    name: str
    train_rows: int
    scores: dict[str, list[float]]

    def mean(self, metric: str = "exact") -> float:
        return statistics.fmean(self.scores[metric])

    def sd(self, metric: str = "exact") -> float | None:
        """The sample standard deviation over seeds (``None`` for a single seed)."""
        values = self.scores[metric]
        return statistics.stdev(values) if len(values) > 1 else None

    def cells(self) -> list:
        return [self.name, self.train_rows, *(mean_sd(self.scores[metric]) for metric in METRICS)]


def mean_sd(values: list[float]) -> str:
    """``"8.1 ± 1.9"``: the mean and the sample standard deviation (the mean alone for one value)."""
    mean = statistics.fmean(values)
    return f"{mean:.1f} ± {statistics.stdev(values):.1f}" if len(values) > 1 else f"{mean:.1f}"


def slug(name: str) -> str:
    """A folder name for a run name such as ``English + translate-and-align (hybrid?postpositions=hi)``."""
    return re.sub(r"[^A-Za-z0-9]+", "_", name.replace("+", "plus")).strip("_")


def compare_to_english(row: Row, english: Row) -> str:
    """The exact-match difference in points, and whether it exceeds three times the larger seed sd."""
    diff = row.mean() - english.mean()
    sds = [sd for sd in (row.sd(), english.sd()) if sd is not None]
    if not sds:
        return f"{row.name} vs English only: {diff:+.1f} points exact match (one seed: no standard deviation)"
    bound = 3 * max(sds)
    verdict = "exceeds" if abs(diff) > bound else "does not exceed"
    return (f"{row.name} vs English only: {diff:+.1f} points exact match; {verdict} 3 x the larger seed sd "
            f"({bound:.1f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data_dir", default=str(DEFAULT_DATA))
    parser.add_argument("--steps", type=int, default=600, help="parser optimizer steps per run")
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--few_shot_seed", type=int, default=0)
    parser.add_argument("--top_k", type=int, default=10)
    parser.add_argument("--generator_epochs", type=int, default=30)
    parser.add_argument("--max_sources", type=int, default=300, help="English parses generated from")
    parser.add_argument("--methods", nargs="+", default=DEFAULT_METHODS,
                        help=f"projection methods of translate-and-align, one row each (eflomal {SYMMETRIZATION})")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2],
                        help="parser seeds of every row (the first one also seeds the generator)")
    parser.add_argument("--quick", action="store_true", help="skip the English-only and translate-and-align runs")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    import datasets
    import torch
    import transformers
    from tiny_models import build_tiny_bart

    import crop_hf
    from crop_hf.alignment import EflomalAligner
    from crop_hf.augment.generate_filter import FILTER_REASONS, GenerateFilterConfig, generate_and_filter
    from crop_hf.augment.translate_align import (
        STATISTICS_COLUMNS,
        TranslateAlignConfig,
        TranslateAlignModels,
        translate_align,
    )
    from crop_hf.demo_models import build_tiny_bert
    from crop_hf.modeling import JointIntentSlotModel
    from crop_hf.parsing.arguments import ParserDataArguments, ParserModelArguments, ParserTrainingArguments
    from crop_hf.parsing.evaluate import evaluate_parser
    from crop_hf.parsing.fewshot import few_shot_indices
    from crop_hf.parsing.train import train_parser
    from crop_hf.tables import format_table

    transformers.logging.set_verbosity_error()
    datasets.disable_progress_bars()
    torch.set_num_threads(1)
    work = Path(tempfile.mkdtemp(prefix="bench-cstop-augment-"))
    atexit.register(shutil.rmtree, work, ignore_errors=True)  # models, caches and runs: ~50 MB
    started = time.perf_counter()
    ds = crop_hf.load_dataset("hinglish_top", data_dir=args.data_dir, cache_dir=str(work / "cache"))
    train, validation = ds["train"], ds["validation"]
    # Checked here, before any training: a misspelt method fails in seconds, not after the other rows.
    ta_configs = [] if args.quick else [
        TranslateAlignConfig(input="hinglish_top train (English side)", output_dir=str(work / f"translated-{i}"),
                             tgt_lang="hi", method=method, symmetrization=SYMMETRIZATION, language_filter=False,
                             shard_size=len(train), show_progress=False)
        for i, method in enumerate(args.methods)]
    lines = [" ".join(t) for t in train["tokens"]] + [" ".join(t) for t in train["en_tokens"]]
    encoder = build_tiny_bert(work / "encoder", corpus=lines, vocab_size=4000, hidden_size=128, layers=2)
    config = transformers.AutoConfig.from_pretrained(encoder)
    config.hidden_dropout_prob = config.attention_probs_dropout_prob = 0.1
    config.save_pretrained(encoder)

    # The sample is drawn from the flat trees: a nested gold tree cannot be a generator target.
    flat_train = train.filter(lambda row: not row["nested"])
    picked = few_shot_indices(flat_train["intent"], flat_train["slot_tags"], n=100, seed=args.few_shot_seed)
    few = flat_train.select(picked)
    print(f"Hinglish-TOP: {len(train)} train, {len(validation)} validation; few-shot sample {len(few)} "
          f"(seed {args.few_shot_seed}); parser {args.steps} steps per run, seeds {' '.join(map(str, args.seeds))}")

    def train_and_score(name: str, sources: dict[str, datasets.Dataset], seed: int) -> dict[str, float]:
        """One parser trained on ``sources`` with ``seed``: its validation scores in percent, per metric."""
        out = work / f"{slug(name)}-seed{seed}"
        start = time.perf_counter()
        train_parser(
            ParserModelArguments(model_name_or_path=str(encoder)),
            ParserDataArguments(train_sources=list(sources), eval_split=None),
            ParserTrainingArguments(output_dir=str(out), learning_rate=args.lr, max_train_steps=args.steps,
                                    seed=seed, show_progress=False),
            datasets={key: datasets.DatasetDict({"train": rows}) for key, rows in sources.items()})
        model = JointIntentSlotModel.from_pretrained(out)
        tokenizer = transformers.AutoTokenizer.from_pretrained(out)
        scores, _ = evaluate_parser(model, tokenizer, validation, seen=train)  # unseen: parses not in train
        shutil.rmtree(out, ignore_errors=True)
        percent = {metric: 100 * functools.reduce(operator.getitem, path, scores) for metric, path in METRICS.items()}
        print(f"  {name}, seed {seed}: exact match {percent['exact']:.1f} ({time.perf_counter() - start:.0f} s)",
              flush=True)
        return percent

    def parse_run(name: str, sources: dict[str, datasets.Dataset]) -> Row:
        """The parser trained on ``sources`` once per seed."""
        runs = [train_and_score(name, sources, seed) for seed in args.seeds]
        return Row(name, sum(len(r) for r in sources.values()),
                   {metric: [run[metric] for run in runs] for metric in METRICS})

    results = [parse_run("few-shot only", {"fewshot": few})]

    # 2. generate-and-filter with a tiny BART: one generator, seeded with the first parser seed
    start = time.perf_counter()
    parses = list(train["parse"]) + list(train["en_parse"])
    bart = build_tiny_bart(work / "bart", parses, vocab_size=2000, d_model=128, layers=2)
    gf_config = GenerateFilterConfig(
        few_shot="few-shot sample", english="hinglish_top train (English side)", output_dir=str(work / "generated"),
        few_shot_size=0, model=str(bart), top_k=args.top_k, epochs=args.generator_epochs, learning_rate=1e-3,
        batch_size=32, max_length=64, max_sources=args.max_sources, cpu=True, seed=args.seeds[0])
    generated = generate_and_filter(gf_config, few_shot=few, english=train)
    print(f"  generate-and-filter: {time.perf_counter() - start:.0f} s")
    augmented = datasets.load_from_disk(str(work / "generated" / "dataset"))["train"]
    results.append(parse_run("few-shot + generate-and-filter", {"augmented": augmented}))

    # 3. and 4.: zero-shot, English only and English + translate-and-align per projection method
    english_row, translated_rows, funnels = None, [], []
    if ta_configs:
        english = train.select_columns(["en_tokens", "en_intent", "en_slot_tags"]).rename_columns(
            {"en_tokens": "tokens", "en_intent": "intent", "en_slot_tags": "slot_tags"})
        english_row = parse_run("English only", {"english": english})
        rewrites = dict(zip(train["en_utterance"], train["utterance"], strict=True))
        for ta_config in ta_configs:
            start = time.perf_counter()
            # The aligner is passed in, so it must be given the config's symmetrization itself.
            models = TranslateAlignModels(HumanRewrite(rewrites), EflomalAligner(symmetrization=SYMMETRIZATION))
            translated = translate_align(ta_config, models, inputs=train)
            funnels.append([ta_config.method, *(translated.statistics.get(c, 0) for c in STATISTICS_COLUMNS)])
            print(f"  translate-and-align ({ta_config.method}): {time.perf_counter() - start:.0f} s")
            projected = datasets.load_from_disk(str(Path(ta_config.output_dir) / "dataset"))["train"]
            translated_rows.append(parse_run(f"English + translate-and-align ({ta_config.method})",
                                             {"english": english, "projected": projected}))
        results += [english_row, *translated_rows]

    seeds = f"{len(args.seeds)} parser seed{'s' if len(args.seeds) > 1 else ''}"
    print(f"\nvalidation ({len(validation):,} utterances), percent, mean ± sample sd over {seeds}")
    print(format_table(["run", "train rows", *METRICS], [row.cells() for row in results]))
    print()
    for row in translated_rows:
        print(compare_to_english(row, english_row))
    base = max(results[0].mean(), 1e-9)
    print(f"exact match ratio vs few-shot only, {results[1].name}: {results[1].mean() / base:.2f}")
    stats = generated.statistics
    print("\ngenerate-and-filter funnel")
    print(format_table(list(stats), [list(stats.values())]))
    print(f"(filter reasons: {', '.join(FILTER_REASONS)})")
    if funnels:
        print(f"\ntranslate-and-align funnel (eflomal {SYMMETRIZATION})")
        print(format_table(["method", *STATISTICS_COLUMNS], funnels))
    print(f"\ntotal wall time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
