"""Rows per second of building a corpus config, against just reading the lines of the same files.

    python benchmarks/bench_builders.py                      # conll5/es from ../shared/data/conll2002
    python benchmarks/bench_builders.py --name xtreme40 --config de --data-dir ../shared/data/wikiann

Baseline: iterating over the raw lines of the config's release files (``for line in open(f, "rb")``),
the floor any reader pays. Measured in the same run: building into a fresh cache
(``download_and_prepare``, i.e. reading, converting tags and writing Arrow) and the reader alone.
Both are reported as sentences per second; the ratio says how many times slower building is than
reading the lines.

Streaming check: the train file repeated 1x and 4x is built in a fresh subprocess each, and the peak
Python heap (tracemalloc) and the Arrow pool's peak are printed. Flat numbers mean the builder streams:
its memory does not grow with the corpus.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "conll2002"


def release_files(builder) -> list[str]:
    """The files the builder reads, via its own split generators (data_dir configs only)."""
    generators = builder._split_generators(None)
    files = []
    for generator in generators:
        kwargs = generator.gen_kwargs
        files += [kwargs["path"]] if "path" in kwargs else list(kwargs.get("files", []))
        for source in kwargs.get("sources", {}).values():
            files.append(str(Path(source) / {"train": "train", "validation": "dev", "test": "test"}[generator.name]))
    return files


def make_builder(name: str, config: str, data_dir: str, cache_dir: str):
    from crop_hf.data.loading import builder_class

    return builder_class(name)(config_name=config, data_dir=data_dir, cache_dir=cache_dir)


def time_lines(files: list[str]) -> float:
    start = time.perf_counter()
    for path in files:
        with open(path, "rb") as handle:
            for _ in handle:
                pass
    return time.perf_counter() - start


def time_build(name: str, config: str, data_dir: str) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as cache:
        builder = make_builder(name, config, data_dir, cache)
        start = time.perf_counter()
        builder.download_and_prepare()
        seconds = time.perf_counter() - start
        rows = sum(split.num_examples for split in builder.info.splits.values())
    return seconds, rows


def time_readers(builder) -> float:
    start = time.perf_counter()
    for generator in builder._split_generators(None):
        for _ in builder._generate_examples(**generator.gen_kwargs):
            pass
    return time.perf_counter() - start


def memory_run(name: str, config: str, data_dir: str) -> dict:
    """Build in this (fresh) process and report peak heap and Arrow pool use."""
    import tracemalloc

    import pyarrow as pa

    tracemalloc.start()
    with tempfile.TemporaryDirectory() as cache:
        builder = make_builder(name, config, data_dir, cache)
        builder.download_and_prepare()
        rows = sum(split.num_examples for split in builder.info.splits.values())
    _, peak = tracemalloc.get_traced_memory()
    return {"rows": rows, "heap_peak_mb": peak / 2**20, "arrow_peak_mb": pa.default_memory_pool().max_memory() / 2**20}


def scaled_copy(files: list[str], factor: int, folder: Path) -> None:
    """The config's files with the train file repeated ``factor`` times (other splits unchanged)."""
    for path in files:
        with open(folder / Path(path).name, "wb") as out:
            for _ in range(factor if path == files[0] else 1):
                with open(path, "rb") as handle:
                    shutil.copyfileobj(handle, out)
                out.write(b"\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--name", default="conll5")
    parser.add_argument("--config", default="es")
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA))
    parser.add_argument("--memory-run", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    import datasets

    datasets.disable_progress_bars()
    if args.memory_run:
        print(json.dumps(memory_run(args.name, args.config, args.data_dir)))
        return

    with tempfile.TemporaryDirectory() as cache:
        builder = make_builder(args.name, args.config, args.data_dir, cache)
        files = release_files(builder)
        line_seconds = min(time_lines(files) for _ in range(3))
        reader_seconds = time_readers(builder)
    build_seconds, rows = time_build(args.name, args.config, args.data_dir)
    lines_rate, reader_rate, build_rate = rows / line_seconds, rows / reader_seconds, rows / build_seconds
    print(f"{args.name}/{args.config}: {rows} sentences in {len(files)} files")
    print(f"  baseline, reading the lines: {lines_rate:12,.0f} sentences/s")
    print(f"  our readers (parse + tags):  {reader_rate:12,.0f} sentences/s  ({lines_rate / reader_rate:.1f}x slower)")
    print(f"  building the config (Arrow): {build_rate:12,.0f} sentences/s  ({lines_rate / build_rate:.1f}x slower)")
    print(f"  ratio build / read lines: {build_rate / lines_rate:.3f}")

    if args.name != "conll5" or args.config not in ("es", "nl", "en"):
        return
    print("memory while building (fresh process each; train file repeated):")
    for factor in (1, 4):
        with tempfile.TemporaryDirectory() as folder:
            scaled_copy(files, factor, Path(folder))
            result = subprocess.run(
                [sys.executable, __file__, "--name", args.name, "--config", args.config, "--data-dir", folder,
                 "--memory-run"], capture_output=True, text=True, check=True,
            )
            numbers = json.loads(result.stdout.strip().splitlines()[-1])
            print(f"  {factor}x: {numbers['rows']:7d} sentences, Python heap peak {numbers['heap_peak_mb']:6.1f} MB, "
                  f"Arrow pool peak {numbers['arrow_peak_mb']:6.1f} MB")


if __name__ == "__main__":
    multiprocessing.freeze_support()
    main()
