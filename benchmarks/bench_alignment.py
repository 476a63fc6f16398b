"""Sentence pairs per second of batched embedding alignment, against the ``simalign`` package.

    python benchmarks/bench_alignment.py                  # tiny BERT, 240 pairs, CPU
    python benchmarks/bench_alignment.py --pairs 2000 --hidden 768 --layers 12 --device cuda

Both aligners get the same model folder (a random-weight BERT with a WordPiece vocabulary, built
offline by ``crop_hf.demo_models.build_tiny_bert``; ``--hidden``/``--layers`` make it as big
as mBERT), the same layer, the same sentence pairs and the same methods (by default ArgMax, IterMax
and Match — simalign's ``matching_methods="mai"``; ``--methods ai`` leaves out Match, which
simalign solves with networkx in pure Python). Baseline: ``simalign.SentenceAligner.get_word_aligns``
one pair at a time, its only API. Ours: ``EmbeddingAligner.align_methods`` over all pairs, at
``--batch-size`` pairs per forward pass, and at batch size 1 to separate batching from the rest.
The outputs are compared; the ratio is between identical alignments.
"""

from __future__ import annotations

import argparse
import logging
import random
import tempfile
import time
from pathlib import Path

from crop_hf.alignment import EmbeddingAligner
from crop_hf.demo_models import PARALLEL_SAMPLE, build_tiny_bert


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=240)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--layer", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--methods", default="mai",
                        help="simalign's letters: m = Match, a = ArgMax, i = IterMax (Match is the slow one there)")
    args = parser.parse_args()
    logging.getLogger("simalign").setLevel(logging.WARNING)

    import torch
    from simalign import SentenceAligner

    rng = random.Random(0)
    pairs = [rng.choice(PARALLEL_SAMPLE) for _ in range(args.pairs)]
    source = [s.split() for s, _ in pairs]
    target = [t.split() for _, t in pairs]
    letters = {"a": "argmax", "i": "itermax", "m": "match"}
    methods = [letters[letter] for letter in args.methods]

    with tempfile.TemporaryDirectory() as folder:
        path = build_tiny_bert(Path(folder) / "bert", hidden_size=args.hidden, layers=args.layers)
        reference = SentenceAligner(model=str(path), token_type="bpe", matching_methods=args.methods,
                                    device=args.device, layer=args.layer)
        batched = EmbeddingAligner(path, layer=args.layer, batch_size=args.batch_size, device=args.device)
        single = EmbeddingAligner(path, layer=args.layer, batch_size=1, device=args.device)
        print(f"{args.pairs} pairs, BERT hidden {args.hidden} x {args.layers} layers, layer {args.layer}, methods "
              f"{methods}, device {args.device}, torch {torch.__version__}, {torch.get_num_threads()} threads")

        # Warm both up once (lazy initialisation, first-call allocation).
        reference.get_word_aligns(source[0], target[0])
        batched.align_methods(source[:2], target[:2], methods)

        start = time.perf_counter()
        expected = [reference.get_word_aligns(s, t) for s, t in zip(source, target, strict=True)]
        simalign_time = time.perf_counter() - start

        start = time.perf_counter()
        ours = batched.align_methods(source, target, methods)
        batched_time = time.perf_counter() - start

        start = time.perf_counter()
        single.align_methods(source, target, methods)
        single_time = time.perf_counter() - start

    names = {"argmax": "inter", "itermax": "itermax", "match": "mwmf"}
    same = sum(all(ours[m][k] == expected[k][names[m]] for m in methods) for k in range(args.pairs))

    def rate(seconds: float) -> str:
        return f"{args.pairs / seconds:>10,.1f} pairs/s"

    print(f"simalign (baseline)               {rate(simalign_time)}")
    print(f"EmbeddingAligner batch {args.batch_size:<4}        {rate(batched_time)}")
    print(f"EmbeddingAligner batch 1          {rate(single_time)}")
    print(f"identical alignments: {same}/{args.pairs} pairs")
    print(f"speed ratio batched / simalign:   {simalign_time / batched_time:.1f}")
    print(f"speed ratio batch 1 / simalign:   {simalign_time / single_time:.1f}")


if __name__ == "__main__":
    main()
