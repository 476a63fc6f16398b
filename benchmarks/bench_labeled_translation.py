"""Throughput of ``pipeline("labeled-translation")``: one sentence at a time vs length-bucketed batches.

Same model, same inputs, same generation settings, one run. The baseline is ``batch_size=1``; the
script also times batches in input order (no length sorting) to show what bucketing itself adds.

    python benchmarks/bench_labeled_translation.py                      # tiny random M2M100, offline
    python benchmarks/bench_labeled_translation.py --model facebook/m2m100_418M --device 0

A random-weight model never emits end-of-sentence, so every hypothesis runs to ``--max-new-tokens``:
the numbers measure the pipeline's batching, not translation quality.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time

WORDS = [
    "the", "of", "and", "to", "in", "a", "is", "that", "for", "it", "as", "was", "with", "be", "by", "on", "not",
    "he", "I", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an", "they", "you", "were", "her",
    "she", "there", "been", "one", "all", "we", "their", "has", "would", "when", "if", "so", "no", "will", "more",
]
NAMES = ["Gothenburg", "Volvo", "Angela Merkel", "Paris", "Monday", "United Nations", "Lisbon"]


def make_records(count: int, seed: int = 0) -> list[dict]:
    """Labeled sentences of 3 to 40 words, each with one to three entities."""
    rng = random.Random(seed)
    records = []
    for _ in range(count):
        tokens: list[str] = [rng.choice(WORDS) for _ in range(rng.randint(3, 40))]
        tags = ["O"] * len(tokens)
        for _ in range(rng.randint(1, 3)):
            position = rng.randrange(len(tokens) + 1)
            name = rng.choice(NAMES).split()
            tokens[position:position] = name
            tags[position:position] = ["B-MISC"] + ["I-MISC"] * (len(name) - 1)
        # Adjacent inserted names may merge into one entity; that is fine for a throughput test.
        records.append({"tokens": tokens, "ner_tags": tags})
    return records


def timed(function) -> tuple[float, object]:
    start = time.perf_counter()
    result = function()
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="model id or folder (default: a tiny random M2M100 built here)")
    parser.add_argument("--sentences", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--num-beams", type=int, default=2)
    parser.add_argument("--device", default="-1", help="-1 for CPU, or a GPU index")
    parser.add_argument("--src-lang", default="en")
    parser.add_argument("--tgt-lang", default="de")
    parser.add_argument("--threads", type=int, help="torch intra-op threads (default: torch's choice)")
    args = parser.parse_args()

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    from transformers import Pipeline, pipeline

    import crop_hf  # noqa: F401  (registers the task)

    with tempfile.TemporaryDirectory() as folder:
        model = args.model
        if model is None:
            from crop_hf.demo_models import build_tiny_m2m100

            model = str(build_tiny_m2m100(folder, d_model=256, layers=2))
        device = int(args.device) if args.device.lstrip("-").isdigit() else args.device
        translator = pipeline("labeled-translation", model=model, device=device)
        records = make_records(args.sentences)
        settings = {"src_lang": args.src_lang, "tgt_lang": args.tgt_lang, "max_new_tokens": args.max_new_tokens,
                    "num_beams": args.num_beams, "num_return_sequences": args.num_beams}
        translator(records[:4], batch_size=2, **settings)  # warm-up: first-call allocations, lazy imports

        one_s, one = timed(lambda: translator(records, batch_size=1, **settings))
        bucket_s, bucketed = timed(lambda: translator(records, batch_size=args.batch_size, **settings))
        # Batches in input order: the base class's batching, without the length sort.
        marked = [translator.mark(record) for record in records]
        plain_s, _ = timed(lambda: Pipeline.__call__(translator, marked, batch_size=args.batch_size, **settings))

    assert [r["source"] for r in bucketed] == [r["source"] for r in one]
    n = len(records)
    print(f"model: {model if args.model else 'tiny random M2M100 (d_model=256, 2 layers)'}, {n} sentences, "
          f"{args.num_beams} beams, max_new_tokens={args.max_new_tokens}, device={translator.device}, "
          f"{torch.get_num_threads()} threads")
    print(f"batch_size=1 (baseline):                {n / one_s:8.1f} sentences/s")
    print(f"batch_size={args.batch_size}, input order:           {n / plain_s:8.1f} sentences/s")
    print(f"batch_size={args.batch_size}, length-bucketed:       {n / bucket_s:8.1f} sentences/s")
    print(f"speed-up of length-bucketed batches over batch_size=1: {one_s / bucket_s:.2f}x "
          f"(over unsorted batches: {plain_s / bucket_s:.2f}x)")


if __name__ == "__main__":
    main()
