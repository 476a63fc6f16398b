"""Marker MT training data: marked pairs read from disk, tokenized per direction, re-marked, batched.

A marked dataset (``source``, ``target``, ``src_lang``, ``tgt_lang``, and ``phrase_pairs`` for
re-sampling) comes from ``crop-hf mark-parallel`` (:mod:`crop_hf.translation.parallel`).
:class:`EpochSampler` orders an epoch from the seed and the epoch number alone, so a resumed run
sees the batches an uninterrupted one would have.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

from crop_hf.data.sources import length_grouped_order
from crop_hf.errors import EmptyInputError
from crop_hf.translation.arguments import TranslationDataArguments
from crop_hf.translation.languages import resolve_languages
from crop_hf.translation.parallel import MarkingConfig, remark

__all__ = ["EpochSampler", "collate_pairs", "load_marked_dataset", "resampled", "tokenize_pairs"]


def load_marked_dataset(path: str | Path, option: str | None = None):
    """A marked dataset from a ``mark-parallel`` folder (``data-*.parquet``), parquet file(s) or ``save_to_disk`` folder.

    With ``option`` (``"--train_file"``, as the command line spells it), the errors name it, and a
    dataset without a pair is an :class:`~crop_hf.errors.EmptyInputError`.
    """
    from datasets import Dataset, load_from_disk

    path = Path(path)
    where = f"{option} {path}" if option else str(path)
    if path.is_dir() and (path / "dataset_info.json").exists():
        dataset = load_from_disk(str(path))
    else:
        files = sorted(path.glob("*.parquet")) if path.is_dir() else [path]
        if not files or not all(f.exists() for f in files):
            raise FileNotFoundError(f"{where}: no marked dataset (expected data-*.parquet from crop-hf mark-parallel, "
                                    "a parquet file or a save_to_disk folder)")
        dataset = Dataset.from_parquet([str(f) for f in files], split="train")
    if option and not len(dataset):
        raise EmptyInputError(f"{where}: no marked pairs")
    return dataset


def tokenize_pairs(dataset, tokenizer, codes: Mapping[str, str], max_source: int, max_target: int):
    """Tokenize each language pair with the tokenizer's own source/target conventions (language tokens)."""
    from datasets import concatenate_datasets

    pairs = sorted(set(zip(dataset["src_lang"], dataset["tgt_lang"], strict=True)))
    parts = []
    for src, tgt in pairs:
        setup = resolve_languages(tokenizer, codes.get(src, src), codes.get(tgt, tgt))
        rows = dataset.filter(lambda s, t, a=src, b=tgt: s == a and t == b, input_columns=["src_lang", "tgt_lang"],
                              desc=f"selecting {src}-{tgt}")

        def encode(batch, setup=setup):
            setup.apply(tokenizer)
            if setup.tgt_lang is not None and hasattr(tokenizer, "tgt_lang"):
                tokenizer.tgt_lang = setup.tgt_lang
            out = tokenizer([setup.prefix + s for s in batch["source"]], text_target=batch["target"],
                            max_length=max_source, truncation=True)
            labels = [ids[:max_target] for ids in out["labels"]]
            return {"input_ids": out["input_ids"], "attention_mask": out["attention_mask"], "labels": labels}

        parts.append(rows.map(encode, batched=True, remove_columns=rows.column_names, desc=f"tokenizing {src}-{tgt}"))
    return concatenate_datasets(parts) if parts else dataset


def collate_pairs(rows: list[dict], pad_id: int, decoder_start: int, pad_multiple: int | None = None) -> dict:
    """A batch of tokenized pairs: padded ``input_ids``/``attention_mask``, ``labels`` padded with -100, and
    ``decoder_input_ids`` (the labels shifted right after ``decoder_start``); widths rounded up to ``pad_multiple``."""
    import torch

    def padded(key: str, value: int, length: int) -> torch.Tensor:
        return torch.tensor([r[key] + [value] * (length - len(r[key])) for r in rows], dtype=torch.long)

    def width(key: str) -> int:
        n = max(len(r[key]) for r in rows)
        return n if not pad_multiple else math.ceil(n / pad_multiple) * pad_multiple

    src_len, tgt_len = width("input_ids"), width("labels")
    labels = padded("labels", -100, tgt_len)
    # fairseq convention: the decoder reads the labels shifted right after the start token.
    decoder_input_ids = torch.cat([torch.full((len(rows), 1), decoder_start), labels[:, :-1]], dim=1)
    decoder_input_ids[decoder_input_ids == -100] = pad_id
    return {"input_ids": padded("input_ids", pad_id, src_len), "attention_mask": padded("attention_mask", 0, src_len),
            "decoder_input_ids": decoder_input_ids, "labels": labels}


def resampled(dataset, data_args: TranslationDataArguments, style: str, seed: int):
    """The dataset with markers drawn afresh from each pair's phrase pairs (``seed`` = base seed + epoch)."""
    import random

    config = MarkingConfig(slot_prob=data_args.slot_prob, max_slots=data_args.max_slots, min_gap=data_args.min_gap,
                           marker_style=style)

    def draw(row, index):
        marked = remark(row["source_text"], row["target_text"], [tuple(p) for p in row["phrase_pairs"]], config,
                        random.Random(seed * 1_000_003 + index))
        return {"source": marked.source, "target": marked.target}

    return dataset.map(draw, with_indices=True, desc=f"re-sampling markers (seed {seed})")


class EpochSampler:
    """A random order per epoch from ``seed`` and the epoch number alone (exact resume needs no RNG state).

    With ``lengths`` set, batches hold pairs of similar length and pad little
    (:func:`crop_hf.data.sources.length_grouped_order`).
    """

    def __init__(self, size: int, seed: int, batch_size: int = 1, lengths: list[int] | None = None) -> None:
        self.size, self.seed, self.epoch = size, seed, 0
        self.batch_size, self.lengths = batch_size, lengths

    def set_epoch(self, epoch: int) -> None:
        """The epoch whose order :meth:`__iter__` gives (the training engine and Accelerate's loader set it)."""
        self.epoch = epoch

    def __len__(self) -> int:
        return self.size

    def __iter__(self):
        import torch

        generator = torch.Generator().manual_seed(self.seed * 7919 + self.epoch)
        if self.lengths is None:
            return iter(torch.randperm(self.size, generator=generator).tolist())
        if len(self.lengths) != self.size:
            raise ValueError(f"{len(self.lengths)} lengths for {self.size} training pairs")
        # bench_marker_mt.py has the runs with and without the batches' shuffle
        return iter(length_grouped_order(self.lengths, self.batch_size, generator))
