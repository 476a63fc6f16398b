"""``crop-hf mark-parallel``: marker-annotated parallel data for training a labeled sequence translation model.

    crop-hf mark-parallel --source_files train.en.gz --target_files train.de.gz --language_pairs en-de \\
        --output_dir marked/train --both_directions true

Aligns each language pair with eflomal (grow-diag-final-and), extracts consistent phrase pairs and
wraps randomly chosen ones in the same marker on both sides. Writes ``data-*.parquet`` files
(``--rows_per_file`` rows each), ``statistics.json`` (counts by drop reason, timings),
``discarded/`` (the dropped pairs) and a dataset card (``README.md``) to ``--output_dir``;
``crop-hf train-translation --train_file`` reads that folder. A dataset with a ``translation``
column (or two text columns) works too: ``--dataset wmt19 --dataset_config de-en --language_pairs
en-de``.

Each ``--shard_size`` pairs (formerly ``--align_chunk_size``) are aligned together and are a shard
under ``--output_dir/shards/``: a rerun with the same options and unchanged inputs (same files,
sizes and modification times) skips the finished shards, a folder holding a finished result of
other options is refused unless ``--overwrite_output_dir``, and several processes share the shards
(``ACCELERATE_USE_CPU=1 torchrun --standalone --nproc_per_node N -m crop_hf.cli mark-parallel ...``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from crop_hf.commands import run_corpus_job
from crop_hf.engine.contents import content_digest
from crop_hf.engine.jobs import run_job
from crop_hf.errors import EmptyInputError, check_output_path
from crop_hf.translation.mark_parallel import (
    MarkParallelConfig,
    MarkParallelJob,
    pairs_from_dataset,
    pairs_from_files,
)


@dataclass
class MarkParallelArguments:
    """What to mark (where the result goes, and how, is :class:`MarkParallelConfig`)."""

    source_files: list[str] = field(
        default_factory=list, metadata={"help": "Source-side text files (.gz allowed), one per language pair."})
    target_files: list[str] = field(
        default_factory=list, metadata={"help": "Target-side text files, line-aligned with source_files."})
    language_pairs: list[str] = field(
        default_factory=list, metadata={"help": "SRC-TGT per file pair (or per translation-column pair), e.g. en-de."})
    dataset: str | None = field(
        default=None, metadata={"help": "Instead of files: a dataset folder (save_to_disk) or Hub dataset name."})
    dataset_config: str | None = field(default=None, metadata={"help": "Config of --dataset."})
    dataset_split: str = field(default="train", metadata={"help": "Split of --dataset."})
    source_column: str | None = field(default=None, metadata={"help": "Source text column (else 'translation')."})
    target_column: str | None = field(default=None, metadata={"help": "Target text column (else 'translation')."})


CONFIG_CLASSES = (MarkParallelArguments, MarkParallelConfig)


def _language_pairs(values: list[str]) -> list[tuple[str, str]]:
    pairs = []
    for value in values:
        src, sep, tgt = value.partition("-")
        if not sep or not src or not tgt:
            raise ValueError(f"--language_pairs: language pairs are SRC-TGT (e.g. en-de), got {value!r}")
        pairs.append((src, tgt))
    return pairs


def _pairs(args: MarkParallelArguments):
    """The sentence pairs to mark; every file is read, and a dataset's first pair, before any work."""
    from itertools import chain

    language_pairs = _language_pairs(args.language_pairs)
    if args.dataset:
        import datasets

        if Path(args.dataset).is_dir() and (Path(args.dataset) / "dataset_info.json").exists():
            rows = datasets.load_from_disk(args.dataset)
        else:
            rows = datasets.load_dataset(args.dataset, args.dataset_config, split=args.dataset_split, streaming=True)
        pairs = pairs_from_dataset(rows, language_pairs or None, source_column=args.source_column,
                                   target_column=args.target_column, origin=args.dataset)
        first = next(pairs, None)
        if first is None:
            raise EmptyInputError(f"--dataset {args.dataset}: no sentence pairs (split {args.dataset_split!r})")
        return chain([first], pairs)
    if not args.source_files or len(args.source_files) != len(args.target_files):
        raise ValueError("give as many --source_files as --target_files (or --dataset)")
    if len(language_pairs) != len(args.source_files):
        raise ValueError(f"{len(args.source_files)} file pairs need as many --language_pairs, got {len(language_pairs)}")
    # Opened (every file read, line counts compared) now, so that a mistake fails before any work.
    streams = [pairs_from_files(s, t, a, b)
               for s, t, (a, b) in zip(args.source_files, args.target_files, language_pairs, strict=True)]
    return chain.from_iterable(streams)


def _file(path: str | Path) -> dict:
    return {"path": str(Path(path).resolve()), "content": content_digest(path)}


def inputs_id(args: MarkParallelArguments) -> str:
    """What the pairs of ``args`` are, for the run's fingerprint: a rerun resumes only on the same inputs.

    Files are named with the digests of their contents (:func:`~crop_hf.engine.contents.content_digest`,
    cached by size and modification time), a dataset folder by its files; a Hub dataset by its name,
    config and split only (a new revision of it is not noticed).
    """
    if args.dataset:
        folder = Path(args.dataset)
        described = {"dataset": args.dataset, "config": args.dataset_config, "split": args.dataset_split,
                     "source_column": args.source_column, "target_column": args.target_column,
                     "files": [_file(p) for p in sorted(folder.rglob("*")) if p.is_file()] if folder.is_dir() else None}
    else:
        described = {"source_files": [_file(p) for p in args.source_files],
                     "target_files": [_file(p) for p in args.target_files]}
    return json.dumps({**described, "language_pairs": list(args.language_pairs)}, sort_keys=True)


def run(args: MarkParallelArguments, config: MarkParallelConfig) -> int:
    check_output_path(config.output_dir, "--output_dir")  # before the files are read
    result = run_corpus_job(lambda config: run_job(MarkParallelJob(config, _pairs(args), inputs_id=inputs_id(args))),
                            config)
    if result.statistics:  # the main process
        print(f"{result.statistics['train']['rows']} rows written to {config.output_dir}")
    return 0
