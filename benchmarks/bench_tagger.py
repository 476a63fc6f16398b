"""The synthesis tagger against transformers' token-classification pipeline, at XLM-R base's size (issue 72).

Synthesis tags every English translation with the source NER model. It used
``pipeline("token-classification", aggregation_strategy="first")``, whose per-sentence Python
postprocess cost more than the model's forward on a CPU profile; it now uses
:class:`crop_hf.synthesis.tagging.EntityTagger`, which gives the same entities (tests/test_fast_tagger.py)
with the aggregation done as array work. This script times both on the same random-weight
``FacebookAI/xlm-roberta-base``-shaped model (built here, offline: 250,002 tokens, 12 layers) and
the same sentences, and the model's forward alone on the same batches, so each tagger's time
outside the model shows as a share:

    python benchmarks/bench_tagger.py                      # 512 sentences of 12-24 words, batch 16
    python benchmarks/bench_tagger.py --sentences 2000 --workdir /tmp/bench-tagger

Each figure is the best of ``--repeats`` runs; the baseline is the pipeline in the same run.

Latest (2026-12-08, 2 cores of an AMD EPYC, idle; 512 sentences, 38,683 tokens: the benchmark's
small SentencePiece model cuts words finer than XLM-R's, about 75 tokens a sentence)::

    tagger                            seconds  sentences/s  outside the forward
    pipeline (aggregation 'first')      52.61          9.7               18.5%
    EntityTagger                        39.02         13.1                0.0%
    the model's forward alone           42.88         11.9                0.0%
    EntityTagger / pipeline speed: 1.35x

(the forward alone is timed in its own loop and came out slower than EntityTagger's whole call:
EntityTagger's time outside the model is below this measurement's noise; the pipeline's is 18.5%,
and a larger share at real sentence lengths, where the forward is cheaper per sentence.)
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_synthesis_profile import WORDS, build_ner_model


def sentences(count: int, seed: int = 0) -> list[str]:
    """``count`` sentences of 12 to 24 words drawn from the tokenizer's words (capitalised names included)."""
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(12, 24))) + " ." for _ in range(count)]


def best_of(repeats: int, call) -> float:
    times = []
    for _ in range(repeats):
        tick = time.perf_counter()
        call()
        times.append(time.perf_counter() - tick)
    return min(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=512)
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--workdir", help="keep the built model here (default: a temporary folder)")
    args = parser.parse_args(argv)

    import torch
    from transformers import pipeline

    from crop_hf.synthesis.tagging import EntityTagger

    torch.set_num_threads(args.threads)
    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench-tagger-"))
    folder = build_ner_model(work / "xlm-roberta-base-ner-random")
    texts = sentences(args.sentences)
    ours = EntityTagger.from_pretrained(str(folder), device="cpu", batch_size=args.batch_size)
    theirs = pipeline("token-classification", model=str(folder), aggregation_strategy="first", device=-1)
    def spans(outputs):
        return [[(e["entity_group"], e["start"], e["end"]) for e in entities] for entities in outputs]

    if spans(ours(texts[:64])) != spans(theirs(texts[:64], batch_size=args.batch_size)):
        raise SystemExit("the two taggers disagree on the first 64 sentences: no timing of different answers")

    model, tokenizer = ours.model, ours.tokenizer

    def forward_only() -> None:  # the same length-sorted batches, the model alone
        order = sorted(range(len(texts)), key=lambda k: len(texts[k]))
        with torch.inference_mode():
            for start in range(0, len(order), args.batch_size):
                batch = tokenizer([texts[k] for k in order[start:start + args.batch_size]], padding=True,
                                  return_tensors="pt")
                model(**batch)

    with torch.inference_mode():
        pipeline_seconds = best_of(args.repeats, lambda: theirs(texts, batch_size=args.batch_size))
        ours_seconds = best_of(args.repeats, lambda: ours(texts))
    model_seconds = best_of(args.repeats, forward_only)
    tokens = sum(len(ids) for ids in tokenizer(texts)["input_ids"])
    print(f"{len(texts)} sentences ({tokens} tokens), batch {args.batch_size}, {args.threads} threads, "
          f"best of {args.repeats}")
    print(f"{'tagger':<32} {'seconds':>8} {'sentences/s':>12} {'outside the forward':>20}")
    for name, seconds in (("pipeline (aggregation 'first')", pipeline_seconds), ("EntityTagger", ours_seconds),
                          ("the model's forward alone", model_seconds)):
        outside = max(seconds - model_seconds, 0.0) / seconds
        print(f"{name:<32} {seconds:8.2f} {len(texts) / seconds:12.1f} {outside:19.1%}")
    print(f"EntityTagger / pipeline speed: {pipeline_seconds / ours_seconds:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
