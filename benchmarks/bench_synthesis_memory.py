"""Peak memory of ``crop-hf synthesize`` does not grow with the number of input sentences.

Runs the whole synthesis (all stages, shards, merge, card) with tiny random-weight models on
N and 10×N generated input lines, each in a fresh process, and prints the peak RSS of both and
their ratio. The baseline is the same run on N lines: a ratio near 1.0 means memory is flat in
corpus size (input streamed, shards written as they finish, the merge reading one shard at a
time). For comparison it also prints the size of the input file.

    python benchmarks/bench_synthesis_memory.py                  # 10k vs 100k lines (long: minutes)
    python benchmarks/bench_synthesis_memory.py --lines 2000     # 2k vs 20k, quicker
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

WORDS = ["Haus", "Stadt", "Berlin", "Anna", "fährt", "nach", "Hamburg", "und", "trifft", "Peter", "im", "Hafen", "der", "Elbe", "am", "Montag", "mit", "Freunden", "aus", "München", "zur", "Arbeit", "bei", "Siemens"]


def write_input(path: Path, lines: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as handle:
        for _ in range(lines):
            handle.write(" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 10))) + " .\n")


CHILD = """
import json, resource, sys
from crop_hf.synthesis import SynthesisConfig, synthesize
config = SynthesisConfig(tgt_langs=["de"], input=sys.argv[1], output_dir=sys.argv[2], mt_model=sys.argv[3],
                         ner_model=sys.argv[4], num_beams=1, num_return_sequences=1, max_new_tokens=8,
                         batch_size=64, shard_size=2000, language_filter=False, show_progress=False)
result = synthesize(config)
print(json.dumps({"peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "statistics": result.statistics}))
"""


def measure(lines: int, workdir: Path, mt_model: Path, ner_model: Path) -> dict:
    raw = workdir / f"raw-{lines}" / "de.txt"
    raw.parent.mkdir(parents=True, exist_ok=True)
    write_input(raw, lines)
    output = subprocess.run(
        [sys.executable, "-c", CHILD, str(raw.parent / "{lang}.txt"), str(workdir / f"out-{lines}"),
         str(mt_model), str(ner_model)],
        capture_output=True, text=True, check=True,
    ).stdout.strip().splitlines()[-1]
    result = json.loads(output)
    result["input_mb"] = raw.stat().st_size / 2**20
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=10_000, help="N: the smaller input (the larger is 10×N)")
    args = parser.parse_args()

    from crop_hf.demo_models import build_tiny_m2m100, build_tiny_xlmr_ner

    with tempfile.TemporaryDirectory() as folder:
        workdir = Path(folder)
        corpus = [" ".join(WORDS)]
        mt_model = build_tiny_m2m100(workdir / "m2m", corpus=corpus, d_model=16)
        ner_model = build_tiny_xlmr_ner(workdir / "ner", corpus=corpus, hidden_size=16)
        small = measure(args.lines, workdir, mt_model, ner_model)
        large = measure(10 * args.lines, workdir, mt_model, ner_model)
    print(f"{'input lines':>12}  {'input MB':>9}  {'peak RSS MB':>11}  kept")
    for lines, result in ((args.lines, small), (10 * args.lines, large)):
        print(f"{lines:>12}  {result['input_mb']:>9.1f}  {result['peak_rss_mb']:>11.0f}  "
              f"{result['statistics']['de']['kept']}")
    print(f"peak RSS ratio (10x input / baseline {args.lines} lines): {large['peak_rss_mb'] / small['peak_rss_mb']:.2f}")


if __name__ == "__main__":
    main()
