"""Self-training (CroP, section 3): a better synthetic corpus from the first one.

The paper trains a multilingual NER model Θ_all on the synthesized target corpora plus the source
corpus, re-labels the sentences that synthesis discarded with it, and combines those labels with
the source model Θ_src's. :func:`self_train` does exactly that and records, for every sentence,
which rule gave its labels.

What it consumes (written by corpus synthesis, or by hand):

* **kept corpus** — the synthesized sentences that passed the filters: a ``Dataset`` /
  ``DatasetDict`` (its ``train`` split, or all of it when it is keyed by language as
  :mod:`crop_hf.synthesis` writes ``dataset/``) or a source spec / ``save_to_disk`` folder, with
  ``tokens`` (list of str), ``ner_tags`` (``ClassLabel`` ids or IOB2 strings) and ``lang`` (str).
  Other columns are ignored.
* **discarded sentences** — the target sentences synthesis dropped (marker damage, language-id
  mismatch, projection failure, ...; synthesis's ``discarded/``), same kinds of input, with
  ``tokens`` and ``lang`` and optionally ``projected_tags``: the labels the source model's
  entities gave them through projection (IOB2 strings or ``ClassLabel`` ids, one per target
  token; corpora written before this name used ``source_tags``). Where the column is absent
  (or a row's value is ``None`` or empty), the source model Θ_src
  (``source_model``) tags the sentence directly (zero-shot); with neither, only the multilingual
  model's labels are used.

**Combination rule** (``rule``), applied to entity spans (:func:`crop_hf.labels.tags_to_spans`):

* ``"union"`` (default): every span of the multilingual model, plus every source-model span that
  overlaps none of them. The self-trained model wins where the two disagree (it has seen the
  target languages), while entities it missed are recovered from the source model.
* ``"intersection"``: only spans both models predict identically (boundaries and type): fewer,
  more precise labels.
* ``"multilingual"``: the multilingual model's labels alone (the source labels are ignored).

What it writes: a ``DatasetDict`` with one ``train`` split — the kept sentences followed by the
re-labeled discarded ones — with columns ``tokens``, ``ner_tags`` (``ClassLabel`` over the
multilingual model's labels), ``lang`` and ``label_rule``, one of:

* ``"synthesis"`` — a kept sentence, labels unchanged;
* ``"agree"`` — both models gave the same entities;
* ``"multilingual"`` — the result equals the multilingual model's labels (the source model's
  differed, or were ignored or missing);
* ``"source"`` — the result equals the source model's labels (the multilingual model found a
  subset of them);
* ``"union"`` / ``"intersection"`` — a mix that equals neither model's labels.

Re-labeled sentences left with no entity are dropped unless ``keep_all_o`` (as the paper filters
sentences that only contain ``O``); the drop is counted.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from crop_hf.data.features import ner_features, tag_strings
from crop_hf.data.sources import is_split_by_language, join_languages, load_source, load_spec
from crop_hf.engine.training import telling_where_saved
from crop_hf.errors import EmptyInputError, check_model, check_output_path, reaching
from crop_hf.labels import LabelSet, repair_tags, spans_to_tags, tags_to_spans
from crop_hf.ner import DataArguments, train_ner
from crop_hf.ner.evaluate import predict_tags

logger = logging.getLogger(__name__)

__all__ = ["COMBINATION_RULES", "SelfTrainingResult", "combine_labels", "relabel", "self_train"]

CombinationRule = Literal["union", "intersection", "multilingual"]
COMBINATION_RULES: tuple[str, ...] = ("union", "intersection", "multilingual")
LABEL_RULES: tuple[str, ...] = ("synthesis", "agree", "multilingual", "source", "union", "intersection")


def combine_labels(source_tags: Sequence[str] | None, multilingual_tags: Sequence[str],
                   rule: CombinationRule = "union") -> tuple[list[str], str]:
    """Combine the source model's and the multilingual model's IOB2 tags of one sentence.

    Returns ``(tags, label_rule)``; see the module docstring for the rules and the names.

    >>> combine_labels(["B-PER", "O", "B-LOC"], ["B-PER", "O", "O"])
    (['B-PER', 'O', 'B-LOC'], 'source')
    >>> combine_labels(["B-ORG", "I-ORG", "B-LOC"], ["B-PER", "O", "O"])
    (['B-PER', 'O', 'B-LOC'], 'union')
    >>> combine_labels(["B-ORG", "I-ORG", "B-LOC"], ["B-PER", "O", "O"], rule="intersection")
    (['O', 'O', 'O'], 'intersection')
    """
    if rule not in COMBINATION_RULES:
        raise ValueError(f"unknown combination rule {rule!r}; expected one of {', '.join(COMBINATION_RULES)}")
    multi = repair_tags(multilingual_tags)
    if source_tags is None or rule == "multilingual":
        return multi, "multilingual"
    if len(source_tags) != len(multi):
        raise ValueError(f"{len(source_tags)} source tags for {len(multi)} tokens")
    source_spans = set(tags_to_spans(source_tags))
    multi_spans = set(tags_to_spans(multi))
    if source_spans == multi_spans:
        return multi, "agree"
    if rule == "intersection":
        chosen = source_spans & multi_spans
    else:
        chosen = set(multi_spans)
        for span in source_spans:
            if all(span.end <= other.start or other.end <= span.start for other in multi_spans):
                chosen.add(span)
    tags = spans_to_tags(chosen, len(multi))
    if chosen == multi_spans:
        return tags, "multilingual"
    if chosen == source_spans:
        return tags, "source"
    return tags, rule


@dataclass
class SelfTrainingResult:
    """The new corpus, the multilingual model used, and counts of rules and drops."""

    corpus: Any  # datasets.DatasetDict
    multilingual_model: str
    rule_counts: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)
    corpus_dir: Path | None = None


def _as_dataset(value, what: str, option: str | None = None):
    """A ``Dataset`` from a Dataset, a DatasetDict (its ``train`` split), a folder or a source spec.

    With ``option`` (``"--kept"``, as the command line spells it), one without a sentence is an
    :class:`~crop_hf.errors.EmptyInputError` naming it."""
    import datasets

    given = value
    if isinstance(value, (str, Path)):
        value = load_spec(str(value))
    if isinstance(value, datasets.DatasetDict):
        value = join_languages(value) if is_split_by_language(value) else value["train"]
    if not isinstance(value, datasets.Dataset):
        raise TypeError(f"{what}: expected a Dataset, DatasetDict, folder or source spec, got {type(value).__name__}")
    if option and not len(value):
        where = given if isinstance(given, (str, Path)) else "(the dataset given)"
        raise EmptyInputError(f"{option} {where}: no sentences ({what})")
    return value


def _discarded_rows(discarded, option: str | None = None):
    """The discarded sentences as a ``Dataset``, checked for the ``tokens`` and ``lang`` columns (none at all
    is no mistake: a synthesis run may keep every sentence)."""
    discarded = _as_dataset(discarded, "discarded sentences")
    for column in ("tokens", "lang"):
        if column not in discarded.column_names:
            raise KeyError(f"{option + ': ' if option else ''}discarded sentences need a {column!r} column "
                           f"(columns: {discarded.column_names})")
    return discarded


#: The discarded corpus's column of projected (source-model) tags; older corpora call it ``source_tags``.
PROJECTED_TAGS_COLUMNS = ("projected_tags", "source_tags")


def _source_tag_strings(discarded) -> list[list[str] | None]:
    column = next((c for c in PROJECTED_TAGS_COLUMNS if c in discarded.column_names), None)
    if column is None:
        return [None] * len(discarded)
    return [tags or None for tags in tag_strings(discarded, column=column)]


def relabel(discarded, multilingual_model, tokenizer, *, source_model=None, source_tokenizer=None,
            rule: CombinationRule = "union", keep_all_o: bool = False, batch_size: int = 64,
            max_length: int = 256, accelerator=None, show_progress: bool = False):
    """Re-label discarded sentences: returns ``(rows, rule_counts, dropped)``.

    ``rows`` is a list of dicts with ``tokens``, ``tags`` (IOB2 strings), ``lang`` and ``label_rule``.
    ``multilingual_model``/``source_model`` are loaded token-classification models.
    """
    discarded = _discarded_rows(discarded)
    sentences = list(discarded["tokens"])
    multi = predict_tags(multilingual_model, tokenizer, sentences, batch_size=batch_size, max_length=max_length,
                         accelerator=accelerator, show_progress=show_progress)
    source = _source_tag_strings(discarded)
    missing = [i for i, tags in enumerate(source) if tags is None]
    if missing and source_model is not None:
        predicted = predict_tags(source_model, source_tokenizer or tokenizer, [sentences[i] for i in missing],
                                 batch_size=batch_size, max_length=max_length, accelerator=accelerator,
                                 show_progress=show_progress)
        for i, tags in zip(missing, predicted, strict=True):
            source[i] = tags
    rows, counts, dropped = [], Counter(), Counter()
    for i, (tokens, lang) in enumerate(zip(sentences, discarded["lang"], strict=True)):
        if source[i] is not None and len(source[i]) != len(tokens):
            dropped["projected_tags length differs from tokens"] += 1
            continue
        tags, label_rule = combine_labels(source[i], multi[i], rule)
        if not keep_all_o and all(tag == "O" for tag in tags):
            dropped["no entities after re-labeling"] += 1
            continue
        counts[label_rule] += 1
        rows.append({"tokens": list(tokens), "tags": tags, "lang": lang, "label_rule": label_rule})
    return rows, dict(counts), dict(dropped)


def self_train(kept, discarded, *, source_corpus=None, model_args=None, training_args=None, data_args=None,
               multilingual_model: str | None = None, source_model: str | None = None,
               rule: CombinationRule = "union", keep_all_o: bool = False,
               corpus_dir: str | Path | None = None, show_progress: bool = False) -> SelfTrainingResult:
    """Train Θ_all on ``kept`` + ``source_corpus``, re-label ``discarded``, combine with Θ_src's labels.

    Args:
        kept: the kept synthesized corpus (see the module docstring for the schema).
        discarded: the sentences synthesis discarded (``tokens``, ``lang``, optional ``projected_tags``).
        source_corpus: the labeled source-language corpus, e.g. ``"conll5:en"``, trained on with
            the kept corpus.
        model_args, training_args, data_args: how to train Θ_all
            (:class:`~crop_hf.ner.arguments.ModelArguments` etc.; ``train_sources`` is filled in here).
        multilingual_model: an already trained Θ_all (folder or Hub id): skips training.
        source_model: Θ_src, which tags discarded sentences that have no ``projected_tags``.
        rule: how the two models' labels are combined (``union``, ``intersection``, ``multilingual``).
        keep_all_o: keep re-labeled sentences without entities.
        corpus_dir: where to ``save_to_disk`` the new corpus (default: ``<output_dir>/corpus``).

    Returns a :class:`SelfTrainingResult`; its ``corpus`` is a ``DatasetDict`` with a ``train``
    split (``tokens``, ``ner_tags``, ``lang``, ``label_rule``).

    Before the first model loads, every model is checked (:func:`~crop_hf.errors.check_model`), the
    folder of the corpus too, and every corpus read: a kept or source corpus without a sentence is
    an error naming it (no discarded sentence is only a warning: synthesis may have kept them all).
    A failure after the multilingual model is trained says where it is saved.
    """
    from accelerate import Accelerator

    if multilingual_model is not None:
        check_model(multilingual_model, "multilingual model (--multilingual_model)")
    if source_model is not None:
        check_model(source_model, "source model (--source_model)")
    if training_args is not None:  # the model's folder, and the corpus's unless corpus_dir says otherwise
        check_output_path(training_args.output_dir, "--output_dir")
    if corpus_dir is not None:
        check_output_path(corpus_dir, "--corpus_dir")
    elif training_args is not None:
        corpus_dir = Path(training_args.output_dir) / "corpus"
    kept_rows = _as_dataset(kept, "kept corpus", "--kept")
    discarded = _discarded_rows(discarded, "--discarded")  # read now: not after hours of training
    if not len(discarded):
        logger.warning("--discarded holds no sentence: nothing to re-label, the new corpus is the kept one")
    accumulation = training_args.gradient_accumulation_steps if training_args else 1
    accelerator = Accelerator(gradient_accumulation_steps=accumulation,
                              mixed_precision=training_args.mixed_precision if training_args else None)
    if multilingual_model is None:
        if model_args is None or training_args is None:
            raise ValueError("pass model_args and training_args to train the multilingual model, "
                             "or multilingual_model to use one already trained")
        memory = {"synthesized": kept_rows}
        sources = ["synthesized"]
        if source_corpus is not None:
            key = source_corpus if isinstance(source_corpus, str) else "source"
            with accelerator.main_process_first():  # read here: an empty one is named as the command line spells it
                source = load_source(key, dataset=None if isinstance(source_corpus, str) else source_corpus,
                                     splits=("train",))
            source.sentences("train", "--source_corpus")
            memory[key] = source.splits
            sources.append(key)
        data_args = replace(data_args or DataArguments(eval_split=None, test_split=None), train_sources=sources,
                            train_weights=(data_args.train_weights if data_args and data_args.train_weights
                                           else None))
        result = train_ner(model_args, data_args, training_args, datasets=memory, accelerator=accelerator)
        multilingual_model = str(result.output_dir)
        trained = telling_where_saved(multilingual_model, "re-labeling the discarded sentences",
                                      f"rerun with --multilingual_model {multilingual_model} to skip training")
    else:
        trained = nullcontext()

    with trained:
        corpus, counts, dropped = _relabeled_corpus(
            kept_rows, discarded, multilingual_model, source_model, accelerator, rule=rule, keep_all_o=keep_all_o,
            max_length=data_args.max_seq_length if data_args else 256, show_progress=show_progress)
        if corpus_dir is not None and accelerator.is_main_process:
            corpus.save_to_disk(str(corpus_dir))
    accelerator.wait_for_everyone()
    logger.info("self-training corpus: %s; dropped: %s", counts, dropped or "none")
    return SelfTrainingResult(corpus, multilingual_model, counts, dropped, Path(corpus_dir) if corpus_dir else None)


def _relabeled_corpus(kept_rows, discarded, multilingual_model: str, source_model: str | None, accelerator, *,
                      rule: CombinationRule, keep_all_o: bool, max_length: int, show_progress: bool):
    """The new corpus (kept sentences, then the re-labeled discarded ones), its rule counts and drops."""
    import datasets
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    with reaching(multilingual_model, "multilingual model (--multilingual_model)"):
        tokenizer = AutoTokenizer.from_pretrained(multilingual_model)
        model = AutoModelForTokenClassification.from_pretrained(multilingual_model).to(accelerator.device)
    source = source_tokenizer = None
    if source_model is not None:
        with reaching(source_model, "source model (--source_model)"):
            source = AutoModelForTokenClassification.from_pretrained(source_model).to(accelerator.device)
            source_tokenizer = AutoTokenizer.from_pretrained(source_model)
    rows, counts, dropped = relabel(discarded, model, tokenizer, source_model=source,
                                    source_tokenizer=source_tokenizer, rule=rule, keep_all_o=keep_all_o,
                                    max_length=max_length, accelerator=accelerator, show_progress=show_progress)
    label_set = LabelSet(tuple(model.config.id2label[i] for i in range(len(model.config.id2label))))
    kept_tags = tag_strings(kept_rows)
    known = set(label_set.names)
    for i, tags in enumerate(kept_tags):
        unknown = set(tags) - known
        if unknown:
            raise ValueError(f"kept corpus sentence {i}: tags {sorted(unknown)} are not among the multilingual "
                             f"model's labels {list(label_set.names)}")
    features = ner_features(label_set.names, extra={"label_rule": datasets.ClassLabel(names=list(LABEL_RULES))})
    langs = list(kept_rows["lang"]) if "lang" in kept_rows.column_names else [None] * len(kept_rows)
    records = {
        "tokens": list(kept_rows["tokens"]) + [r["tokens"] for r in rows],
        "ner_tags": [label_set.encode(t) for t in kept_tags] + [label_set.encode(r["tags"]) for r in rows],
        "lang": langs + [r["lang"] for r in rows],
        "label_rule": ["synthesis"] * len(kept_rows) + [r["label_rule"] for r in rows],
    }
    corpus = datasets.DatasetDict({"train": datasets.Dataset.from_dict(records, features=features)})
    return corpus, {"synthesis": len(kept_rows), **counts}, dropped
