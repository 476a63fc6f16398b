"""Training the joint intent + slot parser with Accelerate: sources, staged recipe, few-shot, resume, card.

:func:`train_parser` runs the whole recipe behind ``examples/train_parser.py`` and
``crop-hf train-parser``:

* **sources**: source specs as NER training reads them (``hinglish_top?data_dir=...``, ``cstop``,
  ``top:v2?domains=weather``, ``hub:NAME[:CONFIG]``, ``disk:PATH``; see
  :func:`crop_hf.data.sources.parse_source_spec`) with mixing weights. Each corpus has
  ``tokens``, ``intent`` and ``slot_tags`` columns; ``#en`` after a spec reads the English side of a
  parallel corpus instead (``en_tokens``, ``en_intent``, ``en_slot_tags``, as Hinglish-TOP has them).
* **staged recipe** (CSTOP): fine-tune on English, then continue from that model on code-switched
  data with ``init_from``; labels the first stage did not see are added to the heads.
* **few-shot** (CSTOP_100): ``few_shot=100`` trains on a sample covering every intent and slot label
  (:func:`crop_hf.parsing.fewshot.few_shot_indices`), ``few_shot_seed`` picks one of the draws.
* **checkpoints** every N steps or epoch (``accelerator.save_state``) and exact resume; the model,
  tokenizer, ``all_results.json`` and a model card in ``output_dir``; ``push_to_hub``.

>>> args = ParserDataArguments(train_sources=["hinglish_top#en"])
>>> split_side(args.train_sources[0])
('hinglish_top', 'en')
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from crop_hf.training.arguments import NerTrainingArguments

logger = logging.getLogger(__name__)

__all__ = ["ParserDataArguments", "ParserModelArguments", "ParserTrainingArguments", "ParserTrainingResult",
           "evaluate_parser", "load_parse_rows", "split_side", "train_parser"]

COLUMNS = ("tokens", "intent", "slot_tags")


@dataclass
class ParserModelArguments:
    """The encoder to start from (or a trained parser to continue) and the model's options."""

    model_name_or_path: str = field(
        default="FacebookAI/xlm-roberta-base",
        metadata={"help": "Encoder to build the parser on: a Hub id (FacebookAI/xlm-roberta-base; "
                          "FacebookAI/xlm-roberta-large as in CSTOP's best results) or a folder."})
    init_from: str | None = field(
        default=None,
        metadata={"help": "A parser trained earlier (folder or Hub id) to continue from: the second stage of the "
                          "staged recipe (English first, then code-switched). Overrides model_name_or_path."})
    use_crf: bool = field(default=True, metadata={"help": "Score slot tags with a CRF (else per-word softmax)."})
    slot_loss_weight: float = field(default=1.0, metadata={"help": "Weight of the slot loss against the intent loss."})
    intent_pooling: str = field(
        default="first", metadata={"help": "Intent classifier input: 'first' hidden state (CSTOP) or 'mean'."})
    classifier_dropout: float = field(default=0.1, metadata={"help": "Dropout before both classifiers."})


@dataclass
class ParserDataArguments:
    """Training and evaluation corpora of semantic parses."""

    train_sources: list[str] = field(
        default_factory=list,
        metadata={"help": "Source specs of the training corpora (their train split), e.g. "
                          "'hinglish_top?data_dir=data/hinglish-top'; add '#en' to train on the English side."})
    train_weights: list[float] | None = field(
        default=None, metadata={"help": "Sampling weight of each training source per epoch (default 1 each)."})
    eval_sources: list[str] = field(
        default_factory=list, metadata={"help": "Source specs scored after training (default: the train sources)."})
    eval_split: str | None = field(default="validation", metadata={"help": "Split scored after training."})
    test_split: str | None = field(default=None, metadata={"help": "Second split scored after training."})
    few_shot: int | None = field(
        default=None,
        metadata={"help": "Train on about N utterances covering every intent and slot label (CSTOP_100: 100)."})
    few_shot_seed: int = field(
        default=0, metadata={"help": "Which few-shot draw (CSTOP reports seeds 0, 1 and 2)."})
    skip_nested: bool = field(
        default=False,
        metadata={"help": "Leave out training rows whose gold tree nests intents in slots (a 'nested' column)."})
    max_seq_length: int = field(default=128, metadata={"help": "Sub-word limit per utterance."})
    max_train_samples: int | None = field(
        default=None, metadata={"help": "Keep only the first N rows of each training source (debugging)."})
    max_eval_samples: int | None = field(
        default=None, metadata={"help": "Keep only the first N rows of each evaluation split (debugging)."})


@dataclass
class ParserTrainingArguments(NerTrainingArguments):
    """Optimisation, checkpointing and publishing (the NER training options, with parser defaults)."""

    per_device_train_batch_size: int = field(default=32, metadata={"help": "Utterances per batch and process."})
    learning_rate: float = field(default=3e-5, metadata={"help": "Peak learning rate of AdamW."})
    num_train_epochs: float = field(default=10.0, metadata={"help": "Passes over the (weighted) training mix."})
    head_learning_rate: float | None = field(
        default=None,
        metadata={"help": "Learning rate of the new heads and CRF (default: learning_rate); pretrained encoders "
                          "often train better with heads at 10-100x the encoder's rate."})


@dataclass
class ParserTrainingResult:
    """What :func:`train_parser` did: output folder, steps, losses and scores per split."""

    output_dir: Path
    completed_steps: int
    step_losses: list[float] = field(default_factory=list)
    scores: dict[str, dict[str, Any]] = field(default_factory=dict)  # split -> source -> parse_scores


def split_side(spec: str) -> tuple[str, str | None]:
    """``"spec#en"`` → ``("spec", "en")``: the column prefix of the side to read, or ``None``."""
    body, _, side = spec.partition("#")
    return body, side or None


def load_parse_rows(spec: str, split: str, *, dataset=None):
    """One split of a source as a ``Dataset`` with ``tokens``, ``intent``, ``slot_tags`` (and its other columns).

    ``#en`` reads the ``en_*`` columns into those names. Raises ``KeyError`` naming the missing
    columns or split.
    """
    import datasets

    from crop_hf.data.sources import load_spec

    body, side = split_side(spec)
    loaded = dataset if dataset is not None else load_spec(body)
    if isinstance(loaded, datasets.Dataset):
        loaded = datasets.DatasetDict({"train": loaded})
    if split not in loaded:
        raise KeyError(f"{spec}: no {split!r} split (has {', '.join(loaded)})")
    rows = loaded[split]
    prefix = f"{side}_" if side else ""
    wanted = [prefix + c for c in COLUMNS]
    missing = [c for c in wanted if c not in rows.column_names]
    if missing:
        raise KeyError(f"{spec}: no column(s) {missing} (columns: {rows.column_names})")
    if side:  # the side's columns take the standard names
        swapped = [c for c in (*COLUMNS, "parse", "nested", "utterance") if prefix + c in rows.column_names]
        rows = rows.remove_columns([c for c in swapped if c in rows.column_names])
        rows = rows.rename_columns({prefix + c: c for c in swapped})
    return rows


def _gold_parses(rows) -> list[str]:
    from crop_hf.parsing.predict import to_parse

    if "parse" in rows.column_names:
        return list(rows["parse"])
    return [to_parse(t, i, s) for t, i, s in zip(rows["tokens"], rows["intent"], rows["slot_tags"], strict=True)]


def evaluate_parser(model, tokenizer, rows, *, batch_size: int = 64, max_length: int = 128,
                    show_progress: bool = False) -> tuple[dict[str, Any], list]:
    """``(parse_scores, predictions)`` of a model on rows with ``tokens`` and ``parse`` (or tags)."""
    from crop_hf.metrics.parsing import parse_scores
    from crop_hf.parsing.predict import predict_parses

    predictions = predict_parses(model, tokenizer, rows["tokens"], batch_size=batch_size, max_length=max_length,
                                 show_progress=show_progress)
    domains = rows["domain"] if "domain" in rows.column_names else None
    scores = parse_scores([p.parse for p in predictions], _gold_parses(rows), domains)
    return scores, predictions


def _label_sets(parts: Sequence[Any], model_config=None) -> tuple[list[str], list[str]]:
    """Intents and IOB2 tags: a trained model's own first (same ids), then new names sorted."""
    intents = list(model_config.intent_labels) if model_config else []
    tags = list(model_config.slot_labels) if model_config else ["O"]
    intents += sorted({i for p in parts for i in p.unique("intent")} - set(intents))
    strange = sorted({t for p in parts for row in p["slot_tags"] for t in row
                      if t != "O" and not (t[:2] in ("B-", "I-") and len(t) > 2)})
    if strange:
        raise ValueError(f"slot tags must be IOB2 (O, B-NAME, I-NAME); found {strange[:5]} "
                         "(convert BIOES or other schemes with crop_hf.labels first)")
    known = {t[2:] for t in tags if t != "O"}
    for name in sorted({t[2:] for p in parts for row in p["slot_tags"] for t in row if t != "O"} - known):
        tags += [f"B-{name}", f"I-{name}"]
    return intents, tags


def _extend_labels(model, intents: list[str], tags: list[str]):
    """Grow the heads (and CRF) of a trained parser to new labels, keeping what it learned for the old ones."""
    import torch

    from crop_hf.modeling import JointIntentSlotModel

    old = model.config
    if list(old.intent_labels) == intents and list(old.slot_labels) == tags:
        return model
    logger.info("extending the parser's labels: %d -> %d intents, %d -> %d slot tags",
                len(old.intent_labels), len(intents), len(old.slot_labels), len(tags))
    config = old.__class__(**{**old.to_dict(), "intent_labels": intents, "slot_labels": tags})
    grown = JointIntentSlotModel(config)
    state = model.state_dict()
    new_state = grown.state_dict()
    intent_rows = [intents.index(n) for n in old.intent_labels]
    tag_rows = [tags.index(n) for n in old.slot_labels]
    with torch.no_grad():
        for key, value in state.items():
            target = new_state[key]
            if key.startswith("intent_classifier."):
                target[intent_rows] = value
            elif key.startswith("slot_classifier."):
                target[tag_rows] = value
            elif key == "crf.transitions":
                target[torch.tensor(tag_rows).unsqueeze(1), torch.tensor(tag_rows)] = value
            elif key.startswith("crf."):
                target[tag_rows] = value
            else:
                target.copy_(value)
    grown.load_state_dict(new_state)
    return grown


def _load_model(model_args: ParserModelArguments, parts):
    from transformers import AutoTokenizer

    from crop_hf.modeling import JointIntentSlotModel

    if model_args.init_from:
        model = JointIntentSlotModel.from_pretrained(model_args.init_from)
        tokenizer = AutoTokenizer.from_pretrained(model_args.init_from)
        intents, tags = _label_sets(parts, model.config)
        return tokenizer, _extend_labels(model, intents, tags)
    intents, tags = _label_sets(parts)
    tokenizer = AutoTokenizer.from_pretrained(model_args.model_name_or_path)
    model = JointIntentSlotModel.from_encoder(
        model_args.model_name_or_path, intents, tags, use_crf=model_args.use_crf,
        slot_loss_weight=model_args.slot_loss_weight, intent_pooling=model_args.intent_pooling,
        classifier_dropout=model_args.classifier_dropout)
    return tokenizer, model


def _encode(rows, tokenizer, model, max_length: int):
    from crop_hf.labels import iob1_to_iob2
    from crop_hf.modeling.crf import is_valid_bio
    from crop_hf.parsing.predict import encode_words

    intent_ids = {name: i for i, name in enumerate(model.config.intent_labels)}
    tag_ids = {name: i for i, name in enumerate(model.config.slot_labels)}

    def encode(batch):
        out = encode_words(tokenizer, batch["tokens"], max_length)
        out["intent_labels"] = [intent_ids[i] for i in batch["intent"]]
        # An I-X that starts a slot (IOB1 habits of some corpora) would score as impossible under the
        # BIO-constrained CRF: it is read as B-X, which is what it means.
        out["slot_labels"] = [[tag_ids[t] for t in (tags if is_valid_bio(tags) else iob1_to_iob2(tags))]
                              for tags in batch["slot_tags"]]
        return out

    return rows.map(encode, batched=True, remove_columns=rows.column_names, desc="encoding")


def _optimizer(model, training_args: ParserTrainingArguments):
    import torch

    from crop_hf.optim import adamw

    if training_args.head_learning_rate is None:
        return adamw(model, training_args.learning_rate, training_args.weight_decay)
    head = [p for n, p in model.named_parameters() if not n.startswith("encoder.") and p.requires_grad]
    encoder = [p for n, p in model.named_parameters() if n.startswith("encoder.") and p.requires_grad]
    return torch.optim.AdamW([
        {"params": encoder, "weight_decay": training_args.weight_decay},
        {"params": head, "weight_decay": 0.0, "lr": training_args.head_learning_rate},
    ], lr=training_args.learning_rate)


def train_parser(model_args: ParserModelArguments, data_args: ParserDataArguments,
                 training_args: ParserTrainingArguments, *, datasets: Mapping[str, Any] | None = None,
                 accelerator=None) -> ParserTrainingResult:
    """Fine-tune a joint intent + slot parser on a weighted mix of corpora, then score it.

    ``datasets`` maps source specs (without ``#side``) to ``Dataset``/``DatasetDict`` objects already
    in memory; other specs are loaded. Writes the model, tokenizer, ``all_results.json``, a model card
    (``README.md``) and ``step_N``/``epoch_N`` checkpoints to ``output_dir``.
    """
    import torch
    from accelerate import Accelerator
    from accelerate.utils import set_seed
    from datasets import concatenate_datasets
    from torch.utils.data import DataLoader
    from tqdm.auto import tqdm
    from transformers import get_scheduler

    from crop_hf.data.sources import WeightedMixSampler
    from crop_hf.metrics.parsing import format_parse_table
    from crop_hf.optim import apply_gradients, resume_position, save_checkpoint
    from crop_hf.parsing.fewshot import few_shot_indices
    from crop_hf.parsing.predict import collate

    output_dir = Path(training_args.output_dir)
    checkpoint_every = training_args.checkpoint_every()
    if accelerator is None:
        accelerator = Accelerator(gradient_accumulation_steps=training_args.gradient_accumulation_steps,
                                  mixed_precision=training_args.mixed_precision)
    if accelerator.is_main_process:
        output_dir.mkdir(parents=True, exist_ok=True)
    set_seed(training_args.seed)
    datasets = dict(datasets or {})
    if not data_args.train_sources:
        raise ValueError("no training corpora: pass train_sources (e.g. 'hinglish_top?data_dir=...')")
    weights = data_args.train_weights or [1.0] * len(data_args.train_sources)
    if len(weights) != len(data_args.train_sources):
        raise ValueError(f"{len(weights)} train_weights for {len(data_args.train_sources)} train_sources")

    with accelerator.main_process_first():
        parts = []
        for spec in data_args.train_sources:
            rows = load_parse_rows(spec, "train", dataset=datasets.get(split_side(spec)[0]))
            if data_args.skip_nested and "nested" in rows.column_names:
                rows = rows.filter(lambda row: not row["nested"], desc="leaving out nested trees")
            if data_args.max_train_samples is not None:
                rows = rows.select(range(min(data_args.max_train_samples, len(rows))))
            if data_args.few_shot:
                picked = few_shot_indices(rows["intent"], rows["slot_tags"], data_args.few_shot,
                                          data_args.few_shot_seed)
                rows = rows.select(picked)
                logger.info("%s: few-shot sample of %d utterances (seed %d)", spec, len(rows), data_args.few_shot_seed)
            parts.append(rows)
    tokenizer, model = _load_model(model_args, parts)
    with accelerator.main_process_first():
        encoded = [_encode(rows, tokenizer, model, data_args.max_seq_length) for rows in parts]
    train_rows = concatenate_datasets(encoded)
    sampler = WeightedMixSampler([len(p) for p in encoded], weights, seed=training_args.seed)
    if len(sampler) == 0:
        raise ValueError("the training mix is empty (check train_sources, train_weights and max_train_samples)")
    train_loader = DataLoader(train_rows, batch_size=training_args.per_device_train_batch_size, sampler=sampler,
                              collate_fn=lambda rows: collate(rows, tokenizer.pad_token_id),
                              generator=torch.Generator().manual_seed(training_args.seed))
    optimizer = _optimizer(model, training_args)
    batches_per_epoch = math.ceil(math.ceil(len(sampler) / training_args.per_device_train_batch_size)
                                  / accelerator.num_processes)
    steps_per_epoch = math.ceil(batches_per_epoch / training_args.gradient_accumulation_steps)
    max_steps = training_args.max_train_steps or math.ceil(training_args.num_train_epochs * steps_per_epoch)
    num_epochs = math.ceil(max_steps / steps_per_epoch)
    scheduler = get_scheduler("linear", optimizer=optimizer,
                              num_warmup_steps=math.ceil(training_args.warmup_ratio * max_steps)
                              * accelerator.num_processes,
                              num_training_steps=max_steps * accelerator.num_processes)
    model, optimizer, train_loader, scheduler = accelerator.prepare(model, optimizer, train_loader, scheduler)

    completed_steps, start_epoch, skip_batches = resume_position(
        accelerator, output_dir, training_args.resume_from_checkpoint, len(train_loader))

    def checkpoint(name: str, epoch: int, batches_in_epoch: int) -> None:
        save_checkpoint(accelerator, output_dir / name, completed_steps=completed_steps, epoch=epoch,
                        batches_in_epoch=batches_in_epoch)

    logger.info("training the parser: %d utterances per epoch, %d steps, %d intents, %d slot tags",
                len(sampler), max_steps, len(accelerator.unwrap_model(model).config.intent_labels),
                len(accelerator.unwrap_model(model).config.slot_labels))
    progress = tqdm(total=max_steps, initial=completed_steps, desc="training",
                    disable=not (training_args.show_progress and accelerator.is_local_main_process))
    step_losses: list[float] = []
    pending: list[torch.Tensor] = []
    for epoch in range(start_epoch, num_epochs):
        if completed_steps >= max_steps:
            break
        sampler.use_epoch(epoch)
        model.train()
        loader, first = train_loader, 0
        if epoch == start_epoch and skip_batches:
            loader, first = accelerator.skip_first_batches(train_loader, skip_batches), skip_batches
        for batch_index, batch in enumerate(loader, start=first):
            with accelerator.accumulate(model):
                loss = model(**batch).loss
                apply_gradients(accelerator, model, loss, optimizer, scheduler, training_args.max_grad_norm)
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
            if completed_steps >= max_steps:
                break
        if checkpoint_every == "epoch":
            checkpoint(f"epoch_{epoch}", epoch, len(train_loader))
    progress.close()
    accelerator.wait_for_everyone()
    model = accelerator.unwrap_model(model)
    if accelerator.is_main_process:
        model.save_pretrained(output_dir)
        tokenizer.save_pretrained(output_dir)

    scores: dict[str, dict[str, Any]] = {}
    eval_sources = data_args.eval_sources or list(data_args.train_sources)
    for split in (data_args.eval_split, data_args.test_split):
        if not split or not accelerator.is_main_process:
            continue
        for spec in eval_sources:
            try:
                rows = load_parse_rows(spec, split, dataset=datasets.get(split_side(spec)[0]))
            except KeyError:
                if data_args.eval_sources:  # asked for by name: a missing split is an error
                    raise
                logger.warning("%s has no %s split; not scored", spec, split)
                continue
            if data_args.max_eval_samples is not None:
                rows = rows.select(range(min(data_args.max_eval_samples, len(rows))))
            result, _ = evaluate_parser(model, tokenizer, rows, batch_size=training_args.per_device_eval_batch_size,
                                        max_length=data_args.max_seq_length)
            scores.setdefault(split, {})[spec] = result
            print(f"{spec} ({split})\n{format_parse_table(result)}", flush=True)

    if accelerator.is_main_process:
        results = {"train_steps": completed_steps, "train_utterances_per_epoch": len(sampler),
                   "train_loss": sum(step_losses) / len(step_losses) if step_losses else None, "scores": scores}
        tmp = output_dir / "all_results.json.tmp"
        tmp.write_text(json.dumps(results, indent=2) + "\n")
        tmp.replace(output_dir / "all_results.json")
        from crop_hf.hub import parser_model_card

        hyperparameters = {**asdict(model_args), **asdict(data_args), **asdict(training_args)}
        hyperparameters.pop("hub_token", None)
        card = parser_model_card(
            model_name=training_args.hub_model_id or output_dir.name, config=model.config,
            train_sources=list(zip(data_args.train_sources, weights, [len(p) for p in parts], strict=True)),
            init_from=model_args.init_from, scores=scores, hyperparameters=hyperparameters)
        card.save(output_dir / "README.md")
        if training_args.push_to_hub:
            from crop_hf.hub import push_folder

            push_folder(output_dir, training_args.hub_model_id or output_dir.name, token=training_args.hub_token,
                        private=training_args.hub_private_repo,
                        commit_message="Upload semantic parser trained with crop-hf")
    accelerator.wait_for_everyone()
    accelerator.free_memory()
    return ParserTrainingResult(output_dir, completed_steps, step_losses, scores)
