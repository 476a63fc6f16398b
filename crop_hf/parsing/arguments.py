"""Options of parser training: the encoder, the corpora of semantic parses, and how to train.

:class:`ParserTrainingArguments` is the engine's :class:`~crop_hf.engine.arguments.TrainingLoopArguments`
with the parser's defaults (32 utterances a batch, learning rate 3e-5, 10 epochs) and one option of
its own, ``head_learning_rate``.

>>> from crop_hf.arguments import parse_config
>>> _, data_args, training_args = parse_config(ARGUMENT_CLASSES, ["--train_sources", "cstop", "--output_dir", "o"])
>>> data_args.train_sources, training_args.per_device_train_batch_size, training_args.warmup_ratio
(['cstop'], 32, 0.1)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from crop_hf.engine.arguments import TrainingLoopArguments

__all__ = ["ARGUMENT_CLASSES", "ParserDataArguments", "ParserModelArguments", "ParserTrainingArguments"]


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
    max_intent_depth: int = field(
        default=1,
        metadata={"help": "Levels of intents the parser predicts: 1 = flat (CSTOP's model); 2 or more adds the "
                          "hierarchical decoder for intents inside slots (TOP and Hinglish-TOP need 4). With "
                          "init_from, the larger of this and the trained model's."})
    span_hidden_size: int | None = field(
        default=None, metadata={"help": "Width of the hierarchical decoder's layers (default: the encoder's)."})
    top_tagger: str = field(
        default="words",
        metadata={"help": "Top-level slot tagger: 'words' (each word's state, CSTOP's), 'intent' (each word's state "
                          "and the utterance's intent; decoding keeps the intent and tags with the best joint "
                          "probability) or 'shared' (as 'intent', with the hierarchical decoder's inner tagger: one "
                          "tagger for every level). With init_from, the trained model's."})


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
    dev_size: float | None = field(
        default=None,
        metadata={"help": "Hold out this fraction (below 1) or number of each training source's rows as a dev "
                          "split (seeded with seed, stratified by intent); the learning curve scores it and the "
                          "best point's model is saved. Nothing is ever selected on eval_split or test_split."})
    dev_split: str | None = field(
        default=None,
        metadata={"help": "Use this split of the training sources as the dev split instead of carving one "
                          "(it must differ from eval_split and test_split)."})
    select_on_dev: bool = field(
        default=True,
        metadata={"help": "With a dev split and eval_steps or eval_minutes, save the model of the learning-curve "
                          "point with the best dev exact match (else the last step's)."})
    test_split: str | None = field(default=None, metadata={"help": "Second split scored after training."})
    few_shot: int | None = field(
        default=None,
        metadata={"help": "Train on about N utterances covering every intent and slot label (CSTOP_100: 100)."})
    few_shot_seed: int = field(
        default=0, metadata={"help": "Which few-shot draw (CSTOP reports seeds 0, 1 and 2)."})
    skip_nested: bool = field(
        default=False,
        metadata={"help": "Leave out training rows whose gold tree nests intents in slots (a 'nested' column). "
                          "Otherwise a flat parser trains on them with each top-level slot over all its words, "
                          "a hierarchical one (max_intent_depth above 1) on the whole tree."})
    slot_substitution: int = field(
        default=0,
        metadata={"help": "Add N copies of each training source's rows in which each top-level slot is, with "
                          "probability 0.5, swapped for the filler (words and nested tree) of a slot of the same "
                          "name in another training row (seeded; the dev split is carved first and never "
                          "substituted). 0: none."})
    nested_copies: int = field(
        default=0,
        metadata={"help": "Add N more copies of each training row whose tree nests an intent in a slot (a 'nested' "
                          "column), before slot substitution: nested trees are rare (14% of Hinglish-TOP) and the "
                          "hierarchical decoder learns them from few rows. 0: none."})
    max_seq_length: int = field(default=128, metadata={"help": "Sub-word limit per utterance."})
    max_train_samples: int | None = field(
        default=None, metadata={"help": "Keep only the first N rows of each training source (debugging)."})
    max_eval_samples: int | None = field(
        default=None, metadata={"help": "Keep only the first N rows of each evaluation split (debugging)."})


@dataclass
class ParserTrainingArguments(TrainingLoopArguments):
    """Optimisation, time budget, checkpointing and publishing (the engine's options, with parser defaults)."""

    per_device_train_batch_size: int = field(default=32, metadata={"help": "Utterances per batch and process."})
    learning_rate: float = field(default=3e-5, metadata={"help": "Peak learning rate of AdamW."})
    num_train_epochs: float = field(default=10.0, metadata={"help": "Passes over the (weighted) training mix."})
    head_learning_rate: float | None = field(
        default=None,
        metadata={"help": "Learning rate of the new heads and CRF (default: learning_rate); pretrained encoders "
                          "often train better with heads at 10-100x the encoder's rate."})
    input_dropout: float = field(
        default=0.0,
        metadata={"help": "Share of sub-words (never special tokens) replaced by the tokenizer's unknown token in "
                          "each training batch: the tags and intent must then come from the context, a regulariser "
                          "for small corpora whose spellings vary (romanized Hindi). 0: off."})
    ema_decay: float | None = field(
        default=None,
        metadata={"help": "Keep an exponential moving average of the weights, updated after every optimizer step "
                          "with this decay (0.998: about the last 500 steps), and score and save the averaged "
                          "weights (the dev split then selects among them): steadier than the last step's weights "
                          "on a small corpus. None: off."})


ARGUMENT_CLASSES = (ParserModelArguments, ParserDataArguments, ParserTrainingArguments)
