"""Options of marker MT training: the model and its markers, the marked data, and how to train.

:class:`TranslationTrainingArguments` is the engine's :class:`~crop_hf.engine.arguments.TrainingLoopArguments`
with marker MT's defaults (16 pairs a batch, learning rate 5e-5, no weight decay, 5% warm-up) and
its own options: length grouping, label smoothing, the marker loss weight, the fused loss and the
evaluation's decodings.

>>> model_args, data_args, training_args = parse_translation_arguments(
...     ["--train_file", "marked/train", "--output_dir", "out"])
>>> model_args.model_name_or_path, training_args.label_smoothing, training_args.warmup_ratio
('facebook/m2m100_418M', 0.1, 0.05)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from crop_hf.arguments import parse_config
from crop_hf.engine.arguments import LoraArguments, TrainingLoopArguments

__all__ = ["ARGUMENT_CLASSES", "TranslationDataArguments", "TranslationModelArguments",
           "TranslationTrainingArguments", "parse_translation_arguments"]


@dataclass
class TranslationModelArguments(LoraArguments):
    """The translation model to fine-tune, its marker tokens and LoRA (adapting q_proj and v_proj by default;
    marker embeddings always train)."""

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
    lora_alpha: int = field(default=32, metadata={"help": "LoRA scaling numerator."})
    lora_dropout: float = field(default=0.05, metadata={"help": "Dropout on the LoRA branch."})


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
class TranslationTrainingArguments(TrainingLoopArguments):
    """Optimisation, evaluation, checkpointing and publishing (the engine's options with marker MT's defaults)."""

    per_device_train_batch_size: int = field(default=16, metadata={"help": "Sentence pairs per batch and process."})
    per_device_eval_batch_size: int = field(default=32, metadata={"help": "Sentences per generation batch."})
    learning_rate: float = field(default=5e-5, metadata={"help": "Peak learning rate of AdamW."})
    weight_decay: float = field(default=0.0, metadata={"help": "AdamW weight decay (not on biases and norms)."})
    warmup_ratio: float = field(default=0.05, metadata={"help": "Share of the optimizer steps spent warming up."})
    label_smoothing: float = field(default=0.1, metadata={"help": "Label smoothing of the cross-entropy (fairseq's 0.1)."})
    marker_loss_weight: float = field(
        default=1.0, metadata={"help": "Weight of marker tokens in the loss relative to other tokens (3 helps small "
                                       "models keep markers; see benchmarks/bench_marker_mt.py)."})
    compile_loss: bool = field(
        default=False, metadata={"help": "Fuse the cross-entropy over the vocabulary with torch.compile (needs a C++ "
                                         "compiler on CPU, Triton on GPU). Its eager form makes several passes over "
                                         "a tokens x vocabulary tensor; fused, a CPU step of a small model was 1.2-1.3x "
                                         "faster (benchmarks/bench_translation_step.py)."})
    eval_decodings: list[str] = field(
        default_factory=lambda: ["free", "constrained"],
        metadata={"help": "Decodings evaluated: free and/or constrained (marker-constrained search)."})
    eval_num_beams: int = field(default=4, metadata={"help": "Beam size at evaluation."})
    eval_max_new_tokens: int = field(default=128, metadata={"help": "Generation length limit at evaluation."})
    evaluate_before_training: bool = field(
        default=True, metadata={"help": "Score the model before training too (the 'untrained' columns)."})


ARGUMENT_CLASSES = (TranslationModelArguments, TranslationDataArguments, TranslationTrainingArguments)


def parse_translation_arguments(argv: Sequence[str] | None = None):
    """``(model_args, data_args, training_args)`` from a command line, optionally after a JSON/YAML file."""
    return parse_config(ARGUMENT_CLASSES, argv, prog="train-translation")
