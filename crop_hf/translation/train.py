"""Fine-tune a seq2seq translation model to keep boundary markers (CroP's labeled sequence translation model).

:func:`train_translation` runs the recipe on the training engine (:mod:`crop_hf.engine.training`)
on marked parallel data (:mod:`crop_hf.translation.data`): add the marker tokens, fine-tune (label
smoothing, warm-up, gradient accumulation, mixed precision, optional LoRA, a loss weight on marker
tokens), checkpoint and resume exactly, evaluate before, during (a learning curve) and after
(:mod:`crop_hf.translation.evaluate`),
write ``all_results.json`` and a model card, and push to the Hub. The saved folder loads straight
into ``pipeline("labeled-translation", model=output_dir)``.

Marker tokens are added, initialised and found exactly as the labeled-translation pipeline does
it (:mod:`crop_hf.translation.marker_tokens`): each ``__SLOT{i}__`` becomes one special token whose
embedding starts at the noisy mean of the pretrained rows; marker tokens weigh
``marker_loss_weight`` in the loss.
"""

from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crop_hf.engine.arguments import hyperparameters
from crop_hf.engine.training import TrainedModel, TrainingTask, start, telling_where_saved, train, wrap_lora
from crop_hf.errors import EmptyInputError, check_model
from crop_hf.hub import translation_model_card
from crop_hf.translation.arguments import (
    TranslationDataArguments,
    TranslationModelArguments,
    TranslationTrainingArguments,
)
from crop_hf.translation.data import (
    EpochSampler,
    collate_pairs,
    load_marked_dataset,
    resampled,
    tokenize_pairs,
)
from crop_hf.translation.evaluate import (
    TranslationEvaluation,
    check_decodings,
    evaluate_translation,
    format_translation_table,
)
from crop_hf.translation.languages import parse_language_codes
from crop_hf.translation.marker_tokens import MarkerVocabulary, add_marker_tokens

__all__ = [
    "TranslationTrainingResult",
    "marker_weighted_loss",
    "train_translation",
]

logger = logging.getLogger(__name__)


@dataclass(kw_only=True)
class TranslationTrainingResult(TrainedModel):
    """What :func:`train_translation` did: the run (:class:`~crop_hf.engine.training.TrainedModel`) and its evaluation."""

    evaluation: Any = None  # TranslationEvaluation: untrained and trained columns
    results: dict[str, Any] = field(default_factory=dict)


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
    from torch.utils.data import DataLoader
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    started = time.perf_counter()
    output_dir = Path(training_args.output_dir)
    accelerator = start(training_args, accelerator)  # a malformed option or output_dir fails before any loading
    codes = parse_language_codes(model_args.language_codes)

    if train_dataset is None:
        if not data_args.train_file:
            raise ValueError("no training data: pass --train_file (a crop-hf mark-parallel output)")
        train_dataset = load_marked_dataset(data_args.train_file, option="--train_file")
    if eval_dataset is None and data_args.validation_file:
        eval_dataset = load_marked_dataset(data_args.validation_file, option="--validation_file")
    if data_args.max_train_samples is not None:
        train_dataset = train_dataset.select(range(min(data_args.max_train_samples, len(train_dataset))))
    if len(train_dataset) == 0:
        raise EmptyInputError("the training data is empty (--train_file, --max_train_samples)")
    if data_args.resample_markers and "phrase_pairs" not in train_dataset.column_names:
        raise ValueError("resample_markers needs the phrase_pairs column that crop-hf mark-parallel writes")
    check_decodings(training_args.eval_decodings or (), "--eval_decodings")
    # every model it names exists (a folder, or offline a cached Hub id) before any loads
    if model_args.tokenizer_name:
        check_model(model_args.tokenizer_name, "tokenizer (--tokenizer_name)")
    check_model(model_args.model_name_or_path, "model (--model_name_or_path)")

    tokenizer = AutoTokenizer.from_pretrained(model_args.tokenizer_name or model_args.model_name_or_path,
                                              cache_dir=model_args.cache_dir)
    extra = {"attn_implementation": model_args.attn_implementation} if model_args.attn_implementation else {}
    model = AutoModelForSeq2SeqLM.from_pretrained(model_args.model_name_or_path, cache_dir=model_args.cache_dir,
                                                  **extra)
    added = add_marker_tokens(tokenizer, model, model_args.marker_style, model_args.num_marker_tokens,
                              seed=training_args.seed)
    marker_ids = torch.tensor(MarkerVocabulary(tokenizer, model_args.marker_style).marker_ids, dtype=torch.long)

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

    def learning_curve_scores(current) -> list[dict[str, Any]] | None:
        """The trained columns at a learning-curve point (generation runs on the main process only)."""
        if not accelerator.is_main_process:
            return None
        snapshot = evaluate(current, "trained")
        if not snapshot:
            return None
        logger.info("learning curve:\n%s", format_translation_table(snapshot))
        return snapshot.to_dict()

    evaluation = TranslationEvaluation()
    if training_args.evaluate_before_training and accelerator.is_main_process and not training_args.resume_from_checkpoint:
        model.to(accelerator.device)  # generate where training will run (a GPU), not on the CPU it was loaded to
        before = evaluate(model, "untrained")
        if before:
            evaluation.merge(before)

    if model_args.lora_r > 0:
        model = wrap_lora(model, "SEQ_2_SEQ_LM", model_args, default_targets=["q_proj", "v_proj"],
                          trainable_token_indices=added)

    def encoded(epoch: int):
        rows = resampled(train_dataset, data_args, model_args.marker_style, training_args.seed + epoch) \
            if data_args.resample_markers else train_dataset
        with accelerator.main_process_first():
            return tokenize_pairs(rows, tokenizer, codes, data_args.max_source_length, data_args.max_target_length)

    train_rows = encoded(0)
    pad_multiple = 8 if accelerator.mixed_precision != "no" else None
    decoder_start = model.config.decoder_start_token_id
    if decoder_start is None:
        decoder_start = tokenizer.eos_token_id

    # Accelerate hands each process whole batches in turn, so length groups are per-device batches.
    sampler = EpochSampler(len(train_rows), training_args.seed, batch_size=training_args.per_device_train_batch_size)

    def loader_for(rows):
        if training_args.group_by_length:
            sampler.lengths = [len(a) + len(b) for a, b in zip(rows["input_ids"], rows["labels"], strict=True)]
        return DataLoader(rows, batch_size=training_args.per_device_train_batch_size, sampler=sampler,
                          collate_fn=lambda batch: collate_pairs(batch, tokenizer.pad_token_id, decoder_start, pad_multiple))

    def loader_for_epoch(epoch: int):
        """Fresh markers every epoch after the first (the first epoch's loader is the one prepared with the model)."""
        return loader_for(encoded(epoch)) if data_args.resample_markers and epoch > 0 else None

    labelled = _LabelledPositions(model)
    loss_function = marker_weighted_loss
    if training_args.compile_loss:
        loss_function = torch.compile(marker_weighted_loss, dynamic=True)
    device_marker_ids = marker_ids.to(accelerator.device)

    def loss(model, batch):
        with labelled.only(batch["labels"]) as labels:
            logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                           decoder_input_ids=batch["decoder_input_ids"]).logits
        return loss_function(logits, labels, device_marker_ids, label_smoothing=training_args.label_smoothing,
                             marker_weight=training_args.marker_loss_weight)

    def count_tokens(batch) -> int:
        return int((batch["labels"] != -100).sum())

    run = train(TrainingTask(model, loader_for(train_rows), loss=loss, loader_for_epoch=loader_for_epoch,
                             evaluate=learning_curve_scores, tokens=count_tokens, tokens_name="target_tokens"),
                training_args, accelerator)
    labelled.remove()
    model = run.save_model(tokenizer, lora=model_args.lora_r > 0)

    results: dict[str, Any] = {}
    history = run.history
    if accelerator.is_main_process:
        if history and history[-1]["step"] == run.completed_steps and "scores" in history[-1]:
            evaluation.merge(TranslationEvaluation.from_dict(history[-1]["scores"]))
        else:
            again = (f"score it again with crop-hf evaluate-translation --model {output_dir} --data "
                     f"{data_args.validation_file or '<marked pairs>'}")
            with telling_where_saved(output_dir, "its evaluation", again):
                after = evaluate(model, "trained")
            if after:
                evaluation.merge(after)
        if evaluation.scores:
            print(format_translation_table(evaluation), flush=True)
        results = {
            "train_steps": run.completed_steps, "train_pairs": len(train_rows), "train_loss": run.train_loss,
            "train_minutes": run.train_minutes, "target_tokens_per_second": run.tokens_per_second,
            "total_minutes": (time.perf_counter() - started) / 60, "num_processes": accelerator.num_processes,
            "added_marker_tokens": len(added), **evaluation.flat(), "history": history,
        }

    def card():
        table = format_translation_table(evaluation) if evaluation and evaluation.scores else ""
        return translation_model_card(model_args, data_args, training_args, table, train_dataset,
                                      hyperparameters=hyperparameters(
                                          model_args, data_args, training_args,
                                          total_train_batch_size=run.total_train_batch_size))

    run.publish(results if accelerator.is_main_process else None, card=card,
                commit_message="Upload marker-trained translation model (crop-hf)")
    return TranslationTrainingResult.of(run, evaluation=evaluation, results=results)
