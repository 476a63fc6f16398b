"""Learning check on real data: a tiny M2M100 trained from scratch to translate Multi30k en→de *with markers*.

    python benchmarks/bench_marker_mt.py --minutes 30          # the issue's budget (2 CPU cores)
    python benchmarks/bench_marker_mt.py --minutes 8 --recipes recommended naive
    python benchmarks/bench_marker_mt.py --evaluate_model bench-marker-mt/content --num_beams 1   # re-score
    python benchmarks/bench_marker_mt.py --both_directions --init_model bench-marker-mt/content \
        --minutes 8 --recipes content --work_dir bench-marker-mt-bi    # then synthesize_multi30k.py

Steps: mark Multi30k train+val en-de once (eflomal over all 30,014 pairs, consistent phrase pairs,
≤ ``--max_slots`` slots); build a tiny M2M100 offline whose SentencePiece model is trained on
Multi30k train; train it with :func:`crop_hf.translation.train.train_translation` for
``--minutes`` of training time per recipe, evaluating on Multi30k val every ``--eval_minutes``:
completeness, slot accuracy, kept share, BLEU and chrF with free and marker-constrained decoding,
next to the untrained model, plus training throughput (target tokens/s). The learning rate
(AdamW, peak ``--learning_rate`` after ``--warmup_steps``) decays linearly to 0 at ``--minutes`` ×
``--steps_per_minute`` steps, and training stops there or when the time is up, whichever is first.

Recipes (each changes one choice against ``recommended``, so its effect shows in the table):

* ``recommended`` — at least one word between chosen phrases, slots numbered left to right (as
  the labeled-translation pipeline numbers them), 3× loss weight on marker tokens;
* ``content`` — like recommended but no slot begins or ends with a function word (article,
  preposition, pronoun, auxiliary: ``crop_hf/resources/function_words.tsv``, ``mark-parallel
  --function_words_file``), so slots look like the entity mentions synthesis will mark;
* ``naive`` — adjacent slots allowed, slots numbered left to right, plain loss;
* ``adjacent`` — like recommended but adjacent slots allowed;
* ``random_numbers`` — like recommended but slot numbers drawn at random (``mark-parallel``'s default);
* ``plain_loss`` — like recommended but marker loss weight 1.

Latest (2026-12-02, 2 cores of an AMD EPYC; the defaults, ``--recipes content``, 4 beams, content
held-out slots; the ``--steps_per_minute 180`` run after 28.7 minutes):

    run                      minutes  step  tokens/s  decoding     completeness  slot_acc  kept   BLEU  chrF
                                28.7  5400      3635  free                0.980     0.624  0.420   37.5  61.0
                                28.7  5400      3635  constrained         1.000     0.626  0.420   37.4  61.0

Results, settings and history: docs/benchmarks/bench-marker-mt.md
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import random
import time
from collections.abc import Iterator
from pathlib import Path

RECIPES = {
    "recommended": {"min_gap": 1, "random_slot_numbers": False, "marker_loss_weight": 3.0, "content": False},
    "content": {"min_gap": 1, "random_slot_numbers": False, "marker_loss_weight": 3.0, "content": True},
    "naive": {"min_gap": 0, "random_slot_numbers": False, "marker_loss_weight": 1.0, "content": False},
    "adjacent": {"min_gap": 0, "random_slot_numbers": False, "marker_loss_weight": 3.0, "content": False},
    "random_numbers": {"min_gap": 1, "random_slot_numbers": True, "marker_loss_weight": 3.0, "content": False},
    "plain_loss": {"min_gap": 1, "random_slot_numbers": False, "marker_loss_weight": 1.0, "content": False},
}
#: Held-out slot sets: any phrase pair, or phrase pairs that neither begin nor end with a function word.
HELDOUT = ("any", "content")
CORPORA = ("multi30k", "news")
#: news-parallel's origin of the FLORES-101 devtest lines: never trained on (first half dev, second half test).
FLORES = "flores101-devtest"


def corpus_pairs(args) -> Iterator:
    """Every pair to mark, its ``origin`` prefixed with its part: ``train:``, ``dev:`` (scored while training),
    and the sets scored at the end (``val:`` for multi30k; ``test:`` FLORES and ``multi30k_test:`` for news).

    All parts are aligned together, as before (eflomal learns from every pair it is given; no part's
    translations are trained on but ``train:``'s).
    """
    from crop_hf.translation.mark_parallel import pairs_from_files
    from crop_hf.translation.parallel import ParallelPair

    data = Path(args.data_dir)

    def tagged(part: str, pairs):
        for pair in pairs:
            yield ParallelPair(pair.source, pair.target, pair.src_lang, pair.tgt_lang, f"{part}:{pair.origin}", pair.line)

    if args.corpus == "multi30k":
        yield from tagged("train", pairs_from_files(data / "train.en.gz", data / "train.de.gz", "en", "de"))
        yield from tagged("dev", pairs_from_files(data / "val.en.gz", data / "val.de.gz", "en", "de"))
        return
    import gzip

    news = Path(args.news_dir)
    with gzip.open(news / "de-en.origin.gz", "rt", encoding="utf-8") as handle:
        origins = [line.rstrip("\n") for line in handle]
    flores = [k for k, origin in enumerate(origins) if origin == FLORES]
    if not flores:
        raise SystemExit(f"{news}: no {FLORES} lines to hold out")
    dev = set(flores[: len(flores) // 2])
    for pair, origin in zip(pairs_from_files(news / "de-en.en.gz", news / "de-en.de.gz", "en", "de"), origins,
                            strict=True):
        part = ("dev" if pair.line - 1 in dev else "test") if origin == FLORES else "train"
        yield ParallelPair(pair.source, pair.target, "en", "de", f"{part}:{origin}", pair.line)
    yield from tagged("train", pairs_from_files(data / "train.en.gz", data / "train.de.gz", "en", "de"))
    yield from tagged("multi30k_test", pairs_from_files(data / "test_2016_flickr.en.gz",
                                                        data / "test_2016_flickr.de.gz", "en", "de"))


def part(dataset, name: str):
    """The rows of ``dataset`` whose origin :func:`corpus_pairs` put in part ``name``."""
    return dataset.filter(lambda origin: origin.split(":", 1)[0] == name, input_columns="origin")
FUNCTION_WORDS = Path(__file__).resolve().parents[1] / "crop_hf" / "resources" / "function_words.tsv"


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data_dir", default=str(Path(__file__).resolve().parents[1].parent / "shared/data/multi30k"))
    parser.add_argument("--corpus", choices=CORPORA, default="multi30k",
                        help="multi30k: train on Multi30k train, val held out; news: train both directions on "
                             "news-parallel de-en (--news_dir) plus Multi30k train, with FLORES-101 devtest held out "
                             "(first half dev, second half test) and Multi30k test_2016 scored at the end")
    parser.add_argument("--news_dir", default=str(Path(__file__).resolve().parents[1].parent / "shared/data/news-parallel"))
    parser.add_argument("--max_new_tokens", type=int, default=None,
                        help="generation limit at evaluation (default: 64 for multi30k, 160 for news)")
    parser.add_argument("--work_dir", default="bench-marker-mt")
    parser.add_argument("--minutes", type=float, default=30.0, help="training minutes per recipe")
    parser.add_argument("--eval_minutes", type=float, default=None, help="evaluate every N minutes (default minutes/3)")
    parser.add_argument("--recipes", nargs="+", default=["recommended"], choices=sorted(RECIPES))
    parser.add_argument("--max_slots", type=int, default=3)
    parser.add_argument("--max_phrase_length", type=int, default=2,
                        help="most words per side of a slot (2 covers 94%% of CoNLL-2003 English train entities)")
    parser.add_argument("--both_directions", action="store_true",
                        help="train en->de and de->en (a model for crop-hf synthesize; see synthesize_multi30k.py)")
    parser.add_argument("--init_model", default=None,
                        help="start from this trained model instead of a new one (its size options are ignored)")
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--d_model", type=int, default=256)
    parser.add_argument("--vocab_size", type=int, default=8000)
    parser.add_argument("--batch_size", type=int, default=48)
    parser.add_argument("--learning_rate", type=float, default=1e-3)
    parser.add_argument("--warmup_steps", type=int, default=150)
    parser.add_argument("--lr_scheduler", choices=["linear", "cosine", "inverse_sqrt"], default="linear",
                        help="linear/cosine: decay to 0 at minutes x --steps_per_minute steps; inverse_sqrt: no end")
    parser.add_argument("--steps_per_minute", type=float, default=180.0,
                        help="training steps this machine runs per minute (180: 3 layers, d_model 256, 2 cores of an "
                             "AMD EPYC in bf16 with the defaults; 123 for --layers 4 --d_model 320); the decay ends "
                             "and training stops at minutes x this, or when the time is up")
    parser.add_argument("--dropout", type=float, default=0.1, help="dropout of the new model (residual and embeddings)")
    parser.add_argument("--attn_implementation", default="eager", choices=["eager", "sdpa"],
                        help="attention kernel in training (eager: 1.3-1.6x faster steps than sdpa on CPU in bf16)")
    parser.add_argument("--compile_loss", action=argparse.BooleanOptionalAction, default=True,
                        help="fuse the vocabulary cross-entropy with torch.compile (1.2-1.3x faster steps on CPU)")
    parser.add_argument("--group_by_length", action=argparse.BooleanOptionalAction, default=True,
                        help="batches of similar length (1.2x tokens/s with the faster step; see above)")
    parser.add_argument("--eval_samples", type=int, default=None, help="first N val pairs (default: all 1,014)")
    parser.add_argument("--num_beams", type=int, default=4, help="beam size at evaluation (1: greedy)")
    parser.add_argument("--evaluate_model", default=None,
                        help="only score this trained model on both held-out sets (no training), e.g. "
                             "bench-marker-mt/content with another --num_beams")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--mixed_precision", choices=["auto", "no", "bf16"], default="auto",
                        help="bf16 autocast for training; auto: bf16 where the CPU has AMX/AVX512-BF16 "
                             "(2.2x faster steps measured), else float32")
    parser.add_argument("--heldout", choices=HELDOUT, default="content",
                        help="held-out slots evaluated during training; the final models are scored on both sets")
    parser.add_argument("--function_words", default=str(FUNCTION_WORDS),
                        help="lang<TAB>word file of the 'content' phrase selection and held-out set")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--evaluate_untrained", action=argparse.BooleanOptionalAction, default=True,
                        help="score the untrained model before training (the first recipe's baseline row)")
    parser.add_argument("--final_kinds", nargs="+", choices=HELDOUT, default=list(HELDOUT),
                        help="held-out slot kinds the test sets are scored on at the end (news; each costs a "
                             "translation of every test pair, free and constrained)")
    parser.add_argument("--final_scores", action=argparse.BooleanOptionalAction, default=True,
                        help="score the trained models on the other held-out kind and the test sets at the end "
                             "(--no-final_scores for a probe compared on the dev learning curve alone)")
    parser.add_argument("--marker_init", choices=["pieces", "mean", "resize"], default="pieces",
                        help="markers as SentencePiece pieces of the new tokenizer (default), or left out of it and "
                             "added as special tokens the way a pretrained model gets them, with their embeddings "
                             "initialised as crop-hf does (mean) or as transformers' resize_token_embeddings does")
    args = parser.parse_args(argv)
    if args.steps_per_minute <= 0:
        parser.error("--steps_per_minute must be positive")
    if args.corpus == "news":
        args.both_directions = True  # the news translator is CroP's: it translates both ways
    if args.max_new_tokens is None:
        args.max_new_tokens = 160 if args.corpus == "news" else 64
    return args


def _fast_bf16() -> bool:
    """Whether this machine runs bf16 matrix products natively (a GPU, or a CPU with AMX/AVX512-BF16)."""
    import torch

    if torch.cuda.is_available():
        return torch.cuda.is_bf16_supported()
    try:  # the check PyTorch's own CPU autocast tests use; private, hence the fallback
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def build_model(path: Path, corpus: list[str], args) -> Path:
    """The tiny M2M100 of :mod:`crop_hf.demo_models`, widened to the benchmark's size (4 heads, FFN 4×, dropout 0.1)."""
    import torch
    from transformers import M2M100Config, M2M100ForConditionalGeneration

    from crop_hf.demo_models import build_tiny_m2m100

    build_tiny_m2m100(path, corpus, vocab_size=args.vocab_size, d_model=args.d_model, layers=args.layers,
                      marker_pieces=args.marker_init == "pieces")
    config = M2M100Config.from_pretrained(path)
    config.update({"encoder_attention_heads": 4, "decoder_attention_heads": 4, "encoder_ffn_dim": 4 * args.d_model,
                   "decoder_ffn_dim": 4 * args.d_model, "dropout": args.dropout, "attention_dropout": 0.0,
                   "activation_dropout": 0.0, "encoder_layerdrop": 0.0, "decoder_layerdrop": 0.0})
    torch.manual_seed(args.seed)
    model = M2M100ForConditionalGeneration(config)
    if args.marker_init != "pieces":  # markers added as a pretrained model gets them, initialised as asked
        from transformers import AutoTokenizer

        from crop_hf.translation.marker_tokens import add_marker_tokens

        tokenizer = AutoTokenizer.from_pretrained(path)
        add_marker_tokens(tokenizer, model, "crop", 16, seed=args.seed, init=args.marker_init)
        tokenizer.save_pretrained(path)
    model.save_pretrained(path)
    return path


def _redraw(row, index, config, seed, function_words=None):
    """Markers drawn afresh for one marked pair from its candidate phrase pairs (``function_words``:
    only those that neither begin nor end with one of them)."""
    from crop_hf.translation.parallel import remark, without_function_word_edges

    candidates = [tuple(p) for p in row["phrase_pairs"]]
    if function_words is not None:
        candidates = without_function_word_edges(
            row["source_text"], row["target_text"], candidates,
            function_words.get(row["src_lang"], frozenset()), function_words.get(row["tgt_lang"], frozenset()))
    pair = remark(row["source_text"], row["target_text"], candidates, config, random.Random(seed * 1_000_003 + index))
    return {"source": pair.source, "target": pair.target, "slots": list(pair.slots)}


def _final_scores(path: Path, dataset, args):
    """A trained model's scores on another held-out set (its learning curve is on ``--heldout``)."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    from crop_hf.translation.evaluate import evaluate_translation

    model = AutoModelForSeq2SeqLM.from_pretrained(path).eval()
    return evaluate_translation(model, AutoTokenizer.from_pretrained(path), dataset, name="trained", batch_size=64,
                                num_beams=args.num_beams, max_new_tokens=args.max_new_tokens)


def _relabelled(evaluation, name: str, kind: str) -> dict:
    """``evaluation``'s scores keyed for the final table: ``(name, decoding, "en-de <kind>")``."""
    return {(name, decoding, f"{direction} {kind}"): scores
            for (_, decoding, direction), scores in evaluation.scores.items()}


def print_curve(recipe: str, history: list, heldout: str) -> None:
    """One recipe's learning curve on the dev pairs, one line per evaluation, direction and decoding."""
    print(f"\n== {recipe}: learning curve (dev, {heldout} held-out slots) ==")
    print("minutes  step  tokens/s  direction  decoding     completeness  slot_acc  kept   BLEU  chrF")
    for entry in history:
        for item in entry.get("scores", []):
            print(f"{entry['train_minutes']:7.1f} {entry['step']:5d} {entry['target_tokens_per_second']:9.0f}  "
                  f"{item['direction']:<9}  {item['decoding']:<11}  {item['completeness']:12.3f}  "
                  f"{item['slot_accuracy']:8.3f}  {item['kept']:5.3f}  {item['bleu']:5.1f} {item['chrf']:5.1f}",
                  flush=True)


def main(argv=None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    import torch

    torch.set_num_threads(args.threads)
    if args.mixed_precision == "auto":
        args.mixed_precision = "bf16" if _fast_bf16() else "no"
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    for noisy in ("httpx", "urllib3", "filelock", "accelerate", "datasets"):
        logging.getLogger(noisy).setLevel(logging.WARNING)

    from crop_hf.translation.arguments import parse_translation_arguments
    from crop_hf.translation.evaluate import TranslationEvaluation, format_translation_table
    from crop_hf.translation.mark_parallel import mark_parallel
    from crop_hf.translation.parallel import MarkingConfig, read_function_words
    from crop_hf.translation.train import train_translation

    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    marking = MarkingConfig(max_slots=args.max_slots, max_phrase_length=args.max_phrase_length,
                            both_directions=args.both_directions, seed=args.seed)
    tick = time.perf_counter()
    # Every part is aligned together: eflomal learns from every pair it is given.
    marked = mark_parallel(corpus_pairs(args), marking, output_dir=work / "marked", overwrite_output_dir=True).dataset
    marking_seconds = time.perf_counter() - tick
    train, val = part(marked, "train"), part(marked, "dev")
    if args.eval_samples:
        val = val.select(range(min(args.eval_samples, len(val))))
    # Held-out slots are numbered left to right, as the labeled-translation pipeline numbers them.
    function_words = read_function_words(args.function_words)
    in_order = MarkingConfig(max_slots=args.max_slots, random_slot_numbers=False, seed=args.seed)

    def held_out(rows, name: str) -> dict:
        return {kind: rows.map(lambda row, index, kind=kind: _redraw(row, index, in_order, args.seed,
                                                                     function_words if kind == "content" else None),
                               with_indices=True, desc=f"{name} markers ({kind} phrases), numbered left to right")
                for kind in HELDOUT}

    heldout = held_out(val, "held-out")
    # the sets scored once, by the final models: the other held-out kind of dev (multi30k), or the test sets (news)
    finals = {f"{name}": held_out(part(marked, name), name) for name in ("test", "multi30k_test")
              if args.corpus == "news"}
    print(f"marked {len(train)} train and {len(val)} dev pairs in {marking_seconds:.0f} s; held-out slots: "
          + ", ".join(f"{kind} {sum(len(s) for s in data['slots'])}" for kind, data in heldout.items())
          + "".join(f"; {name} {len(sets['content'])} pairs" for name, sets in finals.items()), flush=True)

    if args.evaluate_model:
        scored = TranslationEvaluation()
        for name, sets in {"dev": heldout, **finals}.items():
            for kind, data in sets.items():
                scored.scores.update(_relabelled(_final_scores(Path(args.evaluate_model), data, args),
                                                 f"beams={args.num_beams}", kind if name == "dev" else f"{name} {kind}"))
        print(format_translation_table(scored))
        return 0
    if args.init_model:  # go on from a trained model (e.g. en->de, now both ways for synthesis)
        model_path = Path(args.init_model)
    else:
        # both sides of every training pair (each pair once: with both directions, rows come in both orders)
        forward = train.filter(lambda lang: lang == "en", input_columns="src_lang")
        model_path = build_model(work / "tiny-m2m100", [*forward["source_text"], *forward["target_text"]], args)
    eval_minutes = args.eval_minutes or max(args.minutes / 3, 0.5)
    max_steps = 1_000_000 if args.lr_scheduler == "inverse_sqrt" else math.ceil(args.minutes * args.steps_per_minute)
    summary = {"args": vars(args), "marking_seconds": marking_seconds, "recipes": {}}
    table = TranslationEvaluation()
    for k, recipe in enumerate(args.recipes):
        options = RECIPES[recipe]
        config = MarkingConfig(max_slots=args.max_slots, min_gap=options["min_gap"],
                               random_slot_numbers=options["random_slot_numbers"], seed=args.seed)
        words = function_words if options["content"] else None
        recipe_train = train.map(lambda row, index, config=config, words=words: _redraw(row, index, config,
                                                                                        args.seed, words),
                                 with_indices=True, desc=f"markers for {recipe}")
        model_args, data_args, training_args = parse_translation_arguments([
            "--model_name_or_path", str(model_path), "--output_dir", str(work / recipe),
            "--max_train_steps", str(max_steps), "--max_train_minutes", str(args.minutes),
            "--eval_minutes", str(eval_minutes), "--per_device_train_batch_size", str(args.batch_size),
            "--per_device_eval_batch_size", "64", "--learning_rate", str(args.learning_rate),
            "--lr_scheduler_type", args.lr_scheduler, "--warmup_steps", str(args.warmup_steps),
            "--group_by_length", str(args.group_by_length), "--attn_implementation", args.attn_implementation,
            "--compile_loss", str(args.compile_loss),
            "--marker_loss_weight", str(options["marker_loss_weight"]), "--eval_num_beams", str(args.num_beams),
            "--eval_max_new_tokens", str(args.max_new_tokens), "--seed", str(args.seed), "--mixed_precision", args.mixed_precision,
            "--evaluate_before_training", "true" if k == 0 and not args.init_model and args.evaluate_untrained else "false", "--no_show_progress"])
        result = train_translation(model_args, data_args, training_args, train_dataset=recipe_train,
                                   eval_dataset=heldout[args.heldout])
        for (model, decoding, direction), scores in result.evaluation.scores.items():
            name = model if model == "untrained" else recipe
            table.scores[(name, decoding, f"{direction} {args.heldout}")] = scores
        other = next(kind for kind in HELDOUT if kind != args.heldout)
        summary["recipes"][recipe] = {"history": result.history, "results": {
            key: value for key, value in result.results.items() if key != "history"}}
        if not args.final_scores:
            print_curve(recipe, result.history, args.heldout)
            continue
        final = _final_scores(work / recipe, heldout[other], args)
        table.scores.update(_relabelled(final, recipe, other))
        summary["recipes"][recipe][f"final_{other}_heldout"] = final.to_dict()
        for name, sets in finals.items():
            for kind, data in sets.items():
                if kind not in args.final_kinds:
                    continue
                final = _final_scores(work / recipe, data, args)
                table.scores.update(_relabelled(final, recipe, f"{name} {kind}"))
                summary["recipes"][recipe][f"final_{name}_{kind}"] = final.to_dict()
        print_curve(recipe, result.history, args.heldout)

    print("\n== final table: untrained vs each recipe, free vs constrained decoding ==")
    print(format_translation_table(table))
    (work / "bench_marker_mt.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
