"""Fine-tune a seq2seq translation model to keep boundary markers (CroP's labeled sequence translation model).

:func:`train_translation` runs the recipe with Accelerate on marked parallel data
(:mod:`crop_hf.translation.parallel`): add the marker tokens, fine-tune (label smoothing, warm-up,
gradient accumulation, mixed precision, optional LoRA, a loss weight on marker tokens),
checkpoint and resume exactly, evaluate before and after (:mod:`crop_hf.translation.evaluation`),
write ``all_results.json`` and a model card, and push to the Hub. The saved folder loads straight
into ``pipeline("labeled-translation", model=output_dir)``.

Marker tokens (:func:`add_marker_tokens`): each ``__SLOT{i}__`` of the ``crop`` style becomes one
special token, so that it is never split and the constrained decoder can steer it. The new
embedding rows start at the mean of the pretrained embedding rows plus Gaussian noise of a tenth
of their per-dimension standard deviation: the mean keeps the first forward passes in the range
the network was trained on (a random row of the wrong scale disturbs every layer above it), and
the noise lets the slots tell each other apart from the first step. EasyProject's brackets are
ordinary text and need no new tokens.

>>> from crop_hf.translation.training import parse_translation_arguments
>>> model_args, data_args, training_args = parse_translation_arguments(
...     ["--train_file", "marked/train", "--output_dir", "out"])
>>> model_args.model_name_or_path, training_args.label_smoothing
('facebook/m2m100_418M', 0.1)
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "TranslationDataArguments",
    "TranslationModelArguments",
    "TranslationTrainingArguments",
    "TranslationTrainingResult",
    "add_marker_tokens",
    "load_marked_dataset",
    "parse_translation_arguments",
    "train_translation",
]

logger = logging.getLogger(__name__)


@dataclass
class TranslationModelArguments:
    """The translation model to fine-tune and its marker tokens."""

    model_name_or_path: str = field(
        default="facebook/m2m100_418M",
        metadata={"help": "Hub id or folder of a seq2seq translation model: M2M100 (facebook/m2m100_418M), "
                          "NLLB (facebook/nllb-200-distilled-600M) or mBART-50 (facebook/mbart-large-50-many-to-many-mmt)."})
    tokenizer_name: str | None = field(default=None, metadata={"help": "Tokenizer when it differs from the model."})
    cache_dir: str | None = field(default=None, metadata={"help": "Where downloaded models are stored."})
    marker_style: Literal["crop", "easyproject"] = field(
        default="crop", metadata={"help": "Marker style of the data: crop (__SLOT{i}__) or easyproject ([ ])."})
    num_marker_tokens: int = field(
        default=16, metadata={"help": "Slot markers added as special tokens (__SLOT0__ ... __SLOT{n-1}__); the "
                                      "labeled-translation pipeline expects 16."})
    language_codes: list[str] | None = field(
        default=None,
        metadata={"help": "Map the data's language codes to the model's, as CODE=MODEL_CODE "
                          "(e.g. en=eng_Latn de=deu_Latn for NLLB, en=en_XX de=de_DE for mBART-50)."})
    attn_implementation: str | None = field(
        default=None, metadata={"help": "Attention kernel, as transformers names it: eager, sdpa, flash_attention_2 "
                                        "(default: transformers' choice, sdpa). On CPU, eager trains small models "
                                        "faster: 1.3-1.6x the steps per second of sdpa in bf16 "
                                        "(benchmarks/bench_translation_step.py)."})
    lora_r: int = field(default=0, metadata={"help": "Rank of LoRA adapters (peft); 0 fine-tunes all weights."})
    lora_alpha: int = field(default=32, metadata={"help": "LoRA scaling numerator."})
    lora_dropout: float = field(default=0.05, metadata={"help": "Dropout on the LoRA branch."})
    lora_target_modules: list[str] | None = field(
        default=None, metadata={"help": "Modules to adapt (default: q_proj v_proj). Marker embeddings always train."})


@dataclass
class TranslationDataArguments:
    """Marked parallel data (written by ``crop-hf mark-parallel``)."""

    train_file: str | None = field(
        default=None, metadata={"help": "Marked training pairs: a mark-parallel output folder, parquet file(s) or a "
                                        "dataset saved with save_to_disk."})
    validation_file: str | None = field(
        default=None, metadata={"help": "Held-out marked pairs, evaluated before and after training."})
    max_source_length: int = field(default=128, metadata={"help": "Subword limit of the source (truncated beyond)."})
    max_target_length: int = field(default=128, metadata={"help": "Subword limit of the target (truncated beyond)."})
    max_train_samples: int | None = field(default=None, metadata={"help": "First N training pairs only."})
    max_eval_samples: int | None = field(default=None, metadata={"help": "First N held-out pairs per direction only."})
    resample_markers: bool = field(
        default=False, metadata={"help": "Draw fresh markers from each pair's phrase pairs every epoch."})
    slot_prob: float = field(default=0.85, metadata={"help": "Re-sampling: probability that a pair gets markers."})
    max_slots: int = field(default=14, metadata={"help": "Re-sampling: most slots per pair."})
    min_gap: int = field(default=1, metadata={"help": "Re-sampling: fewest words between chosen phrases."})


@dataclass
class TranslationTrainingArguments:
    """Optimisation, evaluation, checkpointing and publishing."""

    output_dir: str = field(metadata={"help": "Folder for the model, checkpoints, all_results.json and the card."})
    per_device_train_batch_size: int = field(default=16, metadata={"help": "Sentence pairs per batch and process."})
    per_device_eval_batch_size: int = field(default=32, metadata={"help": "Sentences per generation batch."})
    learning_rate: float = field(default=5e-5, metadata={"help": "Peak learning rate of AdamW."})
    weight_decay: float = field(default=0.0, metadata={"help": "AdamW weight decay (not on biases and norms)."})
    num_train_epochs: float = field(default=3.0, metadata={"help": "Passes over the training pairs."})
    max_train_steps: int | None = field(default=None, metadata={"help": "Optimizer steps; overrides num_train_epochs."})
    max_train_minutes: float | None = field(
        default=None, metadata={"help": "Stop training after this many minutes (evaluation time not counted)."})
    gradient_accumulation_steps: int = field(default=1, metadata={"help": "Batches summed per optimizer step."})
    group_by_length: bool = field(
        default=False, metadata={"help": "Batch pairs of similar length together: less padding, more tokens per "
                                         "second (1.2x a CPU step in benchmarks/bench_translation_step.py); the "
                                         "order still depends on seed and epoch only."})
    lr_scheduler_type: str = field(
        default="linear", metadata={"help": "transformers scheduler: linear, cosine, inverse_sqrt, constant_with_warmup."})
    warmup_ratio: float = field(default=0.05, metadata={"help": "Share of the optimizer steps spent warming up."})
    warmup_steps: int | None = field(default=None, metadata={"help": "Warm-up steps; overrides warmup_ratio."})
    label_smoothing: float = field(default=0.1, metadata={"help": "Label smoothing of the cross-entropy (fairseq's 0.1)."})
    marker_loss_weight: float = field(
        default=1.0, metadata={"help": "Weight of marker tokens in the loss relative to other tokens (3 helps small "
                                       "models keep markers; see benchmarks/bench_marker_mt.py)."})
    max_grad_norm: float = field(default=1.0, metadata={"help": "Gradient clipping norm (0 disables)."})
    compile_loss: bool = field(
        default=False, metadata={"help": "Fuse the cross-entropy over the vocabulary with torch.compile (needs a C++ "
                                         "compiler on CPU, Triton on GPU). Its eager form makes several passes over "
                                         "a tokens x vocabulary tensor; fused, a CPU step of a small model was 1.2-1.3x "
                                         "faster (benchmarks/bench_translation_step.py)."})
    mixed_precision: Literal["no", "fp16", "bf16"] | None = field(
        default=None, metadata={"help": "Mixed precision; default: what accelerate config chose."})
    seed: int = field(default=42, metadata={"help": "Seed of weights, dropout, batch order and re-sampled markers."})
    checkpointing_steps: str | None = field(
        default=None, metadata={"help": "Save the training state every N optimizer steps, or 'epoch'."})
    resume_from_checkpoint: str | None = field(
        default=None, metadata={"help": "Checkpoint folder to continue from, or 'latest'."})
    eval_steps: int | None = field(
        default=None, metadata={"help": "Also evaluate every N optimizer steps (logged in all_results.json)."})
    eval_minutes: float | None = field(
        default=None, metadata={"help": "Also evaluate every N minutes of training time (a learning curve)."})
    eval_decodings: list[str] = field(
        default_factory=lambda: ["free", "constrained"],
        metadata={"help": "Decodings evaluated: free and/or constrained (marker-constrained search)."})
    eval_num_beams: int = field(default=4, metadata={"help": "Beam size at evaluation."})
    eval_max_new_tokens: int = field(default=128, metadata={"help": "Generation length limit at evaluation."})
    evaluate_before_training: bool = field(
        default=True, metadata={"help": "Score the model before training too (the 'untrained' columns)."})
    show_progress: bool = field(default=True, metadata={"help": "Progress bars on the main process."})
    push_to_hub: bool = field(default=False, metadata={"help": "Upload model, tokenizer, results and card."})
    hub_model_id: str | None = field(default=None, metadata={"help": "Repository to push to (default: output_dir's name)."})
    hub_token: str | None = field(default=None, metadata={"help": "Hub token (default: the logged-in one)."})
    hub_private_repo: bool = field(default=False, metadata={"help": "Create the Hub repository as private."})


ARGUMENT_CLASSES = (TranslationModelArguments, TranslationDataArguments, TranslationTrainingArguments)


def parse_translation_arguments(argv: Sequence[str] | None = None):
    """``(model_args, data_args, training_args)`` from a command line, optionally after a JSON/YAML file."""
    from crop_hf.arguments import parse_config

    return parse_config(ARGUMENT_CLASSES, argv, prog="train-translation")


@dataclass
class TranslationTrainingResult:
    """What :func:`train_translation` did."""

    output_dir: Path
    completed_steps: int
    step_losses: list[float] = field(default_factory=list)
    evaluation: Any = None  # TranslationEvaluation: untrained and trained columns
    history: list[dict[str, Any]] = field(default_factory=list)  # periodic evaluations during training
    results: dict[str, Any] = field(default_factory=dict)


# --- model and data --------------------------------------------------------------------------------


def add_marker_tokens(tokenizer: Any, model: Any, marker_style: str = "crop", num_markers: int = 16,
                      seed: int = 0) -> list[int]:
    """Make every marker of ``marker_style`` one special token and give new ones sensible embeddings.

    Returns the ids of the tokens added (empty when the tokenizer already has them). New rows are
    the mean of the existing rows plus noise of 0.1 of their per-dimension standard deviation (see
    the module docstring for why); the output projection is tied to them in M2M100/NLLB/mBART, and
    initialised the same way where it is not.
    """
    import torch

    from crop_hf.markers import get_marker_style

    style = get_marker_style(marker_style)
    if not style.typed:
        return []
    markers = [m for slot in range(num_markers) for m in dict.fromkeys(style.markers(slot))]
    vocab = tokenizer.get_vocab()
    missing = [m for m in markers if m not in vocab]
    if not missing:
        return []
    old_rows = model.get_input_embeddings().weight.shape[0]
    tokenizer.add_tokens(missing, special_tokens=True)
    new_ids = tokenizer.convert_tokens_to_ids(missing)
    if len(tokenizer) > old_rows:
        model.resize_token_embeddings(len(tokenizer), mean_resizing=False)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for matrix in {id(m): m for m in (model.get_input_embeddings(), model.get_output_embeddings()) if m is not None}.values():
            weight = matrix.weight
            keep = torch.ones(weight.shape[0], dtype=torch.bool)
            keep[new_ids] = False
            keep[min(old_rows, weight.shape[0]):] = False
            reference = weight[keep].float()
            mean, std = reference.mean(0), reference.std(0)
            noise = torch.randn(len(new_ids), weight.shape[1], generator=generator) * std.cpu() * 0.1
            weight[new_ids] = (mean.cpu() + noise).to(weight.dtype).to(weight.device)
    logger.info("added %d marker tokens (%s ... %s) as special tokens", len(missing), missing[0], missing[-1])
    return list(new_ids)


def load_marked_dataset(path: str | Path):
    """A marked dataset from a ``mark-parallel`` folder (``data-*.parquet``), parquet file(s) or ``save_to_disk`` folder."""
    from datasets import Dataset, load_from_disk

    path = Path(path)
    if path.is_dir() and (path / "dataset_info.json").exists():
        return load_from_disk(str(path))
    files = sorted(path.glob("*.parquet")) if path.is_dir() else [path]
    if not files or not all(f.exists() for f in files):
        raise FileNotFoundError(f"{path}: no marked dataset (expected data-*.parquet from crop-hf mark-parallel, "
                                "a parquet file or a save_to_disk folder)")
    return Dataset.from_parquet([str(f) for f in files], split="train")


def _codes(language_codes: Sequence[str] | None) -> dict[str, str]:
    out = {}
    for item in language_codes or ():
        code, sep, model_code = item.partition("=")
        if not sep or not code or not model_code:
            raise ValueError(f"language_codes entries are CODE=MODEL_CODE (e.g. en=eng_Latn), got {item!r}")
        out[code] = model_code
    return out


def _tokenize(dataset, tokenizer, codes: Mapping[str, str], max_source: int, max_target: int):
    """Tokenize each language pair with the tokenizer's own source/target conventions (language tokens)."""
    from datasets import concatenate_datasets

    from crop_hf.translation.languages import resolve_languages

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


def _collate(rows: list[dict], pad_id: int, decoder_start: int, pad_multiple: int | None = None) -> dict:
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


def marker_weighted_loss(logits, labels, marker_ids, *, label_smoothing: float = 0.0, marker_weight: float = 1.0):
    """Token cross-entropy (``-100`` ignored) with marker tokens weighted ``marker_weight``, averaged per token."""
    import torch
    import torch.nn.functional as F

    losses = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1), ignore_index=-100,
                             label_smoothing=label_smoothing, reduction="none")
    flat = labels.reshape(-1)
    mask = (flat != -100).float()
    weights = mask
    if marker_weight != 1.0 and marker_ids is not None and len(marker_ids):
        is_marker = torch.isin(flat, marker_ids)
        weights = mask * torch.where(is_marker, torch.full_like(mask, marker_weight), torch.ones_like(mask))
    return (losses * weights).sum() / mask.sum().clamp(min=1.0)


def _resampled(dataset, data_args: TranslationDataArguments, style: str, seed: int):
    """The dataset with markers drawn afresh from each pair's phrase pairs (``seed`` = base seed + epoch)."""
    import random

    from crop_hf.translation.parallel import MarkingConfig, remark

    config = MarkingConfig(slot_prob=data_args.slot_prob, max_slots=data_args.max_slots, min_gap=data_args.min_gap,
                           marker_style=style)

    def draw(row, index):
        marked = remark(row["source_text"], row["target_text"], [tuple(p) for p in row["phrase_pairs"]], config,
                        random.Random(seed * 1_000_003 + index))
        return {"source": marked.source, "target": marked.target}

    return dataset.map(draw, with_indices=True, desc=f"re-sampling markers (seed {seed})")


# --- the loop ----------------------------------------------------------------------------------------


def train_translation(
    model_args: TranslationModelArguments,
    data_args: TranslationDataArguments,
    training_args: TranslationTrainingArguments,
    *,
    train_dataset: Any = None,
    eval_dataset: Any = None,
    accelerator: Any = None,
) -> TranslationTrainingResult:
    """Fine-tune a translation model on marked pairs and evaluate it before and after.

    ``train_dataset``/``eval_dataset`` (marked ``datasets.Dataset`` objects) replace
    ``data_args.train_file``/``validation_file``. Writes to ``output_dir``: the model and tokenizer,
    ``all_results.json``, ``README.md`` (model card) and ``step_N``/``epoch_N`` checkpoints.
    """
    import torch
    from accelerate import Accelerator
    from accelerate.utils import set_seed
    from torch.utils.data import DataLoader
    from tqdm.auto import tqdm
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, get_scheduler

    from crop_hf.optim import adamw, apply_gradients, resume_position, save_checkpoint
    from crop_hf.translation.constraints import MarkerVocabulary
    from crop_hf.translation.evaluation import (
        TranslationEvaluation,
        evaluate_translation,
        format_translation_table,
    )

    started = time.perf_counter()
    output_dir = Path(training_args.output_dir)
    checkpoint_every = _checkpoint_every(training_args.checkpointing_steps)
    if accelerator is None:
        accelerator = Accelerator(gradient_accumulation_steps=training_args.gradient_accumulation_steps,
                                  mixed_precision=training_args.mixed_precision)
    if accelerator.is_main_process:
        output_dir.mkdir(parents=True, exist_ok=True)
    set_seed(training_args.seed)
    codes = _codes(model_args.language_codes)

    if train_dataset is None:
        if not data_args.train_file:
            raise ValueError("no training data: pass train_file (a crop-hf mark-parallel output)")
        train_dataset = load_marked_dataset(data_args.train_file)
    if eval_dataset is None and data_args.validation_file:
        eval_dataset = load_marked_dataset(data_args.validation_file)
    if data_args.max_train_samples is not None:
        train_dataset = train_dataset.select(range(min(data_args.max_train_samples, len(train_dataset))))
    if len(train_dataset) == 0:
        raise ValueError("the training data is empty")
    if data_args.resample_markers and "phrase_pairs" not in train_dataset.column_names:
        raise ValueError("resample_markers needs the phrase_pairs column that crop-hf mark-parallel writes")

    tokenizer = AutoTokenizer.from_pretrained(model_args.tokenizer_name or model_args.model_name_or_path,
                                              cache_dir=model_args.cache_dir)
    extra = {"attn_implementation": model_args.attn_implementation} if model_args.attn_implementation else {}
    model = AutoModelForSeq2SeqLM.from_pretrained(model_args.model_name_or_path, cache_dir=model_args.cache_dir,
                                                  **extra)
    added = add_marker_tokens(tokenizer, model, model_args.marker_style, model_args.num_marker_tokens,
                              seed=training_args.seed)
    vocabulary = MarkerVocabulary(tokenizer, model_args.marker_style)
    marker_ids = torch.tensor(sorted(vocabulary.signatures), dtype=torch.long)

    def evaluate(current, name: str):
        if eval_dataset is None or not training_args.eval_decodings:
            return None
        was_training = current.training
        current.eval()
        with torch.no_grad():
            result = evaluate_translation(
                current, tokenizer, eval_dataset, name=name, marker_style=model_args.marker_style,
                decodings=training_args.eval_decodings, batch_size=training_args.per_device_eval_batch_size,
                num_beams=training_args.eval_num_beams, max_new_tokens=training_args.eval_max_new_tokens,
                language_codes=codes, max_samples=data_args.max_eval_samples)
        current.train(was_training)
        return result

    evaluation = TranslationEvaluation()
    if training_args.evaluate_before_training and accelerator.is_main_process and not training_args.resume_from_checkpoint:
        model.to(accelerator.device)  # generate where training will run (a GPU), not on the CPU it was loaded to
        before = evaluate(model, "untrained")
        if before:
            evaluation.merge(before)

    if model_args.lora_r > 0:
        model = _wrap_lora(model, model_args, added)

    def encoded(epoch: int):
        rows = _resampled(train_dataset, data_args, model_args.marker_style, training_args.seed + epoch) \
            if data_args.resample_markers else train_dataset
        with accelerator.main_process_first():
            return _tokenize(rows, tokenizer, codes, data_args.max_source_length, data_args.max_target_length)

    train_rows = encoded(0)
    pad_multiple = 8 if accelerator.mixed_precision != "no" else None
    decoder_start = model.config.decoder_start_token_id
    if decoder_start is None:
        decoder_start = tokenizer.eos_token_id

    # Accelerate hands each process whole batches in turn, so length groups are per-device batches.
    sampler = _EpochSampler(len(train_rows), training_args.seed, batch_size=training_args.per_device_train_batch_size)

    def loader_for(rows):
        if training_args.group_by_length:
            sampler.lengths = [len(a) + len(b) for a, b in zip(rows["input_ids"], rows["labels"], strict=True)]
        return DataLoader(rows, batch_size=training_args.per_device_train_batch_size, sampler=sampler,
                          collate_fn=lambda batch: _collate(batch, tokenizer.pad_token_id, decoder_start, pad_multiple))

    train_loader = loader_for(train_rows)
    optimizer = adamw(model, training_args.learning_rate, training_args.weight_decay)
    batches_per_epoch = math.ceil(math.ceil(len(train_rows) / training_args.per_device_train_batch_size)
                                  / accelerator.num_processes)
    steps_per_epoch = math.ceil(batches_per_epoch / training_args.gradient_accumulation_steps)
    max_steps = training_args.max_train_steps or math.ceil(training_args.num_train_epochs * steps_per_epoch)
    num_epochs = math.ceil(max_steps / steps_per_epoch)
    warmup = training_args.warmup_steps if training_args.warmup_steps is not None \
        else math.ceil(training_args.warmup_ratio * max_steps)
    scheduler = get_scheduler(training_args.lr_scheduler_type, optimizer=optimizer,
                              num_warmup_steps=warmup * accelerator.num_processes,
                              num_training_steps=max_steps * accelerator.num_processes)
    labelled = _LabelledPositions(model)
    loss_function = marker_weighted_loss
    if training_args.compile_loss:
        loss_function = torch.compile(marker_weighted_loss, dynamic=True)
    model, optimizer, train_loader, scheduler = accelerator.prepare(model, optimizer, train_loader, scheduler)

    completed_steps, start_epoch, skip_batches = resume_position(
        accelerator, output_dir, training_args.resume_from_checkpoint, batches_per_epoch)

    def checkpoint(name: str, epoch: int, batches_in_epoch: int) -> None:
        save_checkpoint(accelerator, output_dir / name, completed_steps=completed_steps, epoch=epoch,
                        batches_in_epoch=batches_in_epoch)

    device_marker_ids = marker_ids.to(accelerator.device)
    progress = tqdm(total=max_steps, initial=completed_steps, desc="training",
                    disable=not (training_args.show_progress and accelerator.is_local_main_process))
    step_losses: list[float] = []
    history: list[dict[str, Any]] = []
    pending: list[Any] = []
    train_seconds, target_tokens = 0.0, 0
    tick = time.perf_counter()
    out_of_time = False
    for epoch in range(start_epoch, num_epochs):
        if completed_steps >= max_steps or out_of_time:
            break
        if data_args.resample_markers and epoch > 0:
            train_loader = accelerator.prepare(loader_for(encoded(epoch)))
        # The order of an epoch depends on the seed and the epoch only, so a resumed epoch sees the same batches.
        sampler.set_epoch(epoch)
        model.train()
        loader, first = train_loader, 0
        if epoch == start_epoch and skip_batches:
            loader, first = accelerator.skip_first_batches(train_loader, skip_batches), skip_batches
        for batch_index, batch in enumerate(loader, start=first):
            with accelerator.accumulate(model):
                with labelled.only(batch["labels"]) as labels:
                    logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                                   decoder_input_ids=batch["decoder_input_ids"]).logits
                loss = loss_function(logits, labels, device_marker_ids, label_smoothing=training_args.label_smoothing,
                                     marker_weight=training_args.marker_loss_weight)
                apply_gradients(accelerator, model, loss, optimizer, scheduler, training_args.max_grad_norm)
            target_tokens += int((batch["labels"] != -100).sum())
            pending.append(loss.detach().float())
            if not accelerator.sync_gradients:
                continue
            completed_steps += 1
            step_losses.append(accelerator.gather(torch.stack(pending).mean()).mean().item())
            pending = []
            progress.update(1)
            progress.set_postfix(loss=f"{step_losses[-1]:.4f}")
            if isinstance(checkpoint_every, int) and completed_steps % checkpoint_every == 0:
                checkpoint(f"step_{completed_steps}", epoch, batch_index + 1)
            elapsed = train_seconds + time.perf_counter() - tick
            out_of_time = training_args.max_train_minutes is not None and elapsed >= 60 * training_args.max_train_minutes
            periodic = bool(training_args.eval_steps and completed_steps % training_args.eval_steps == 0)
            if training_args.eval_minutes and elapsed >= 60 * training_args.eval_minutes * (len(history) + 1):
                periodic = True
            finished = out_of_time or completed_steps >= max_steps
            # A learning curve ends where training ends, whether the time budget or the step count ran out.
            curve = bool(training_args.eval_minutes or training_args.eval_steps)
            if (periodic or out_of_time or (curve and finished)) and accelerator.is_main_process:
                train_seconds = elapsed
                snapshot = evaluate(accelerator.unwrap_model(model), "trained")
                entry = {"step": completed_steps, "train_minutes": train_seconds / 60,
                         "target_tokens_per_second": target_tokens / max(train_seconds, 1e-9),
                         "loss": step_losses[-1]}
                if snapshot:
                    entry["scores"] = snapshot.to_dict()
                    logger.info("step %d (%.1f min):\n%s", completed_steps, train_seconds / 60,
                                format_translation_table(snapshot))
                history.append(entry)
                tick = time.perf_counter()  # evaluation time is not training time
            if finished:
                break
        if checkpoint_every == "epoch":
            checkpoint(f"epoch_{epoch}", epoch, batches_per_epoch)
    progress.close()
    labelled.remove()
    train_seconds += time.perf_counter() - tick

    accelerator.wait_for_everyone()
    model = accelerator.unwrap_model(model)
    if model_args.lora_r > 0:
        if accelerator.is_main_process:
            model.save_pretrained(output_dir / "adapter")
        model = model.merge_and_unload()  # a plain checkpoint that the pipeline loads as is
    if accelerator.is_main_process:
        model.save_pretrained(output_dir)
        tokenizer.save_pretrained(output_dir)

    results: dict[str, Any] = {}
    if accelerator.is_main_process:
        if history and history[-1]["step"] == completed_steps and "scores" in history[-1]:
            from crop_hf.translation.evaluation import TranslationEvaluation as _Eval

            last = _Eval()
            for item in history[-1]["scores"]:
                scores = {k: v for k, v in item.items() if k not in ("model", "decoding", "direction")}
                last.scores[(item["model"], item["decoding"], item["direction"])] = scores
            evaluation.merge(last)
        else:
            after = evaluate(model, "trained")
            if after:
                evaluation.merge(after)
        if evaluation.scores:
            print(format_translation_table(evaluation), flush=True)
        results = {
            "train_steps": completed_steps, "train_pairs": len(train_rows),
            "train_loss": sum(step_losses) / len(step_losses) if step_losses else None,
            "train_minutes": train_seconds / 60, "target_tokens_per_second": target_tokens / max(train_seconds, 1e-9),
            "total_minutes": (time.perf_counter() - started) / 60, "num_processes": accelerator.num_processes,
            "added_marker_tokens": len(added), **evaluation.flat(), "history": history,
        }
        (output_dir / "all_results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        from crop_hf.hub import translation_model_card
        from crop_hf.translation.evaluation import format_translation_table

        table = format_translation_table(evaluation) if evaluation and evaluation.scores else ""
        card = translation_model_card(model_args, data_args, training_args, table, train_dataset,
                                      total_batch=training_args.per_device_train_batch_size * accelerator.num_processes
                                      * training_args.gradient_accumulation_steps)
        card.save(output_dir / "README.md")
        if training_args.push_to_hub:
            from crop_hf.hub import push_folder

            push_folder(output_dir, training_args.hub_model_id or output_dir.name, token=training_args.hub_token,
                        private=training_args.hub_private_repo,
                        commit_message="Upload marker-trained translation model (crop-hf)")
    accelerator.wait_for_everyone()
    accelerator.free_memory()
    return TranslationTrainingResult(output_dir, completed_steps, step_losses, evaluation, history, results)


class _LabelledPositions:
    """Compute the output layer only where a label is, not at padding.

    The vocabulary projection and the loss over it are the largest tensors of a training step
    (tokens x vocabulary); a batch padded to its longest pair spends a third or more of them on
    padding. A pre-hook on the output layer passes it only the hidden states of labelled positions,
    so the model's ``logits`` come back as ``(labelled tokens, vocabulary)``. The hook sits inside
    the model's own forward, so DDP/FSDP wrappers and autocast see an ordinary call; outside
    :meth:`only` (evaluation, generation) it passes everything through. Models without an output
    layer that can be found this way keep full logits.
    """

    def __init__(self, model: Any) -> None:
        self._keep = None
        head = model.get_output_embeddings()
        self._handle = head.register_forward_pre_hook(self._select) if head is not None else None

    @property
    def active(self) -> bool:
        r"""Whether the hook is on (a model with a findable output layer, not yet :meth:`remove`\ d)."""
        return self._handle is not None

    def remove(self) -> None:
        """Take the hook off (the trained model is then exactly the plain model again)."""
        if self._handle is not None:
            self._handle.remove()
            self._handle = None

    def _select(self, module, args):
        if self._keep is None:
            return None
        return (args[0][self._keep], *args[1:])

    @contextmanager
    def only(self, labels):
        """Within the block the output layer sees labelled positions only; yields the labels to score them with."""
        if not self.active:
            yield labels
            return
        self._keep = labels != -100
        try:
            yield labels[self._keep]
        finally:
            self._keep = None


class _EpochSampler:
    """A random order per epoch from ``seed`` and the epoch number alone (exact resume needs no RNG state).

    With ``lengths`` set, batches are formed by transformers' length grouping (the Trainer's
    ``group_by_length``: a random permutation cut into mega-batches of 50 batches, each sorted by
    length), so that a batch holds pairs of similar length and pads little; then the batches are
    shuffled.
    """

    def __init__(self, size: int, seed: int, batch_size: int = 1, lengths: list[int] | None = None) -> None:
        self.size, self.seed, self.epoch = size, seed, 0
        self.batch_size, self.lengths = batch_size, lengths

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return self.size

    def __iter__(self):
        import torch

        generator = torch.Generator().manual_seed(self.seed * 7919 + self.epoch)
        if self.lengths is None:
            return iter(torch.randperm(self.size, generator=generator).tolist())
        from transformers.trainer_pt_utils import get_length_grouped_indices

        if len(self.lengths) != self.size:
            raise ValueError(f"{len(self.lengths)} lengths for {self.size} training pairs")
        grouped = get_length_grouped_indices(self.lengths, self.batch_size, generator=generator)
        batches = [grouped[k : k + self.batch_size] for k in range(0, self.size, self.batch_size)]
        # transformers leaves each mega-batch's batches in falling length order, 50 in a row; they are
        # shuffled so that steps do not come in runs of ever shorter pairs (fairseq shuffles its
        # length buckets too; bench_marker_mt.py has the runs with and without).
        order = torch.randperm(len(batches), generator=generator).tolist()
        return iter([index for b in order for index in batches[b]])


def _checkpoint_every(value: str | None):
    if value in (None, "", "no"):
        return None
    if value == "epoch":
        return "epoch"
    if str(value).isdigit() and int(value) > 0:
        return int(value)
    raise ValueError(f"checkpointing_steps must be a positive integer or 'epoch', got {value!r}")


def _wrap_lora(model, model_args: TranslationModelArguments, added: list[int]):
    """LoRA adapters on attention, plus trainable rows for the marker tokens (peft's trainable_token_indices)."""
    from peft import LoraConfig, TaskType, get_peft_model

    config = LoraConfig(task_type=TaskType.SEQ_2_SEQ_LM, r=model_args.lora_r, lora_alpha=model_args.lora_alpha,
                        lora_dropout=model_args.lora_dropout,
                        target_modules=model_args.lora_target_modules or ["q_proj", "v_proj"],
                        trainable_token_indices=list(added) or None)
    model = get_peft_model(model, config)
    trainable, total = model.get_nb_trainable_parameters()
    logger.info("LoRA: training %d of %d parameters (%.2f%%)", trainable, total, 100 * trainable / total)
    return model
