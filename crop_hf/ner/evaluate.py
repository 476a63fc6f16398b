"""Per-language NER evaluation: predictions read at first subwords, seqeval scores, the CroP-style table.

Scores are seqeval's entity-level micro precision, recall and F1 (conlleval reading of IOB2:
a stray ``I-X`` starts an entity), overall and per entity type, for each language; the ``avg``
column is the unweighted mean over languages, as in the CroP paper's tables.

>>> from crop_hf.ner.evaluate import score_tags
>>> s = score_tags([["B-PER", "O", "B-LOC"]], [["B-PER", "O", "O"]])
>>> round(s.precision, 2), round(s.recall, 2), round(s.f1, 2)
(1.0, 0.5, 0.67)
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from crop_hf.data.features import tag_strings
from crop_hf.data.sources import load_source, parse_source_spec, split_by_language
from crop_hf.data.tokenization import pad_batch, tokenize_words
from crop_hf.errors import check_model, reaching
from crop_hf.labels import LabelConflictError, split_tag
from crop_hf.tables import format_table, score_rows

logger = logging.getLogger(__name__)

__all__ = [
    "LanguageScores",
    "NerEvaluation",
    "evaluate_ner",
    "evaluate_pretrained",
    "format_ner_table",
    "load_eval_sets",
    "ner_results",
    "predict_tags",
    "score_tags",
]

AVERAGE = "avg"


@dataclass
class LanguageScores:
    """Scores of one language (or of the ``avg`` column); values are fractions in [0, 1]."""

    precision: float
    recall: float
    f1: float
    sentences: int
    per_type: dict[str, dict[str, float]] = field(default_factory=dict)
    #: where the sentences came from: the source spec, its dataset name and config (for model cards)
    source: str | None = None
    dataset: str | None = None
    config: str | None = None


@dataclass
class NerEvaluation:
    """Scores of one split: ``languages`` in evaluation order, and their mean in ``average``."""

    split: str
    languages: dict[str, LanguageScores]
    average: LanguageScores | None

    def flat(self, prefix: str | None = None) -> dict[str, float | int]:
        """``{"<split>_<lang>_f1": ..., "<split>_<lang>_PER_f1": ..., "<split>_avg_f1": ...}`` for ``all_results.json``."""
        prefix = self.split if prefix is None else prefix
        out: dict[str, float | int] = {}
        columns = dict(self.languages)
        if self.average is not None:
            columns[AVERAGE] = self.average
        for lang, scores in columns.items():
            for metric in ("precision", "recall", "f1"):
                out[f"{prefix}_{lang}_{metric}"] = getattr(scores, metric)
            out[f"{prefix}_{lang}_sentences"] = scores.sentences
            for entity_type, values in scores.per_type.items():
                out[f"{prefix}_{lang}_{entity_type}_f1"] = values["f1"]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"split": self.split, "languages": {k: asdict(v) for k, v in self.languages.items()},
                "average": asdict(self.average) if self.average else None}


def score_tags(references: Sequence[Sequence[str]], predictions: Sequence[Sequence[str]]) -> LanguageScores:
    """seqeval micro P/R/F1 and per-type scores of IOB2 tag sequences."""
    from seqeval.metrics import classification_report, f1_score, precision_score, recall_score

    if len(references) != len(predictions):
        raise ValueError(f"{len(references)} reference sentences but {len(predictions)} predicted ones")
    for i, (ref, pred) in enumerate(zip(references, predictions, strict=True)):
        if len(ref) != len(pred):
            raise ValueError(f"sentence {i}: {len(ref)} reference tags but {len(pred)} predicted ones")
    refs, preds = [list(r) for r in references], [list(p) for p in predictions]
    per_type = {}
    if any(tag != "O" for sentence in refs + preds for tag in sentence):
        report = classification_report(refs, preds, output_dict=True, zero_division=0)
        per_type = {name: {"precision": float(v["precision"]), "recall": float(v["recall"]),
                           "f1": float(v["f1-score"]), "support": int(v["support"])}
                    for name, v in report.items() if not name.endswith(" avg")}
    return LanguageScores(
        precision=float(precision_score(refs, preds, zero_division=0)),
        recall=float(recall_score(refs, preds, zero_division=0)),
        f1=float(f1_score(refs, preds, zero_division=0)),
        sentences=len(refs),
        per_type=dict(sorted(per_type.items())),
    )


def average_scores(scores: Sequence[LanguageScores]) -> LanguageScores | None:
    """Unweighted mean over languages (the paper's "avg"); per type over the languages that have the type."""
    if not scores:
        return None
    mean = lambda values: sum(values) / len(values)  # noqa: E731
    types = sorted({t for s in scores for t in s.per_type})
    per_type = {}
    for entity_type in types:
        having = [s.per_type[entity_type] for s in scores if entity_type in s.per_type]
        per_type[entity_type] = {m: mean([h[m] for h in having]) for m in ("precision", "recall", "f1")}
        per_type[entity_type]["support"] = sum(h["support"] for h in having)
    return LanguageScores(mean([s.precision for s in scores]), mean([s.recall for s in scores]),
                          mean([s.f1 for s in scores]), sum(s.sentences for s in scores), per_type)


def predict_tags(model, tokenizer, sentences: Sequence[Sequence[str]], *, batch_size: int = 64,
                 max_length: int = 256, accelerator=None, show_progress: bool = False) -> list[list[str]]:
    """Tag pre-split sentences with a token-classification model, one tag per word (read at its first subword).

    With an ``accelerate.Accelerator`` the sentences are shared between its processes and the
    predictions gathered, so every process returns all of them. Words past ``max_length``
    subwords are tagged ``O`` (and counted in a warning).
    """
    import torch
    from torch.utils.data import DataLoader

    id2label = {int(k): v for k, v in model.config.id2label.items()} if hasattr(model, "config") else None
    if id2label is None:  # a DDP-wrapped model
        id2label = {int(k): v for k, v in model.module.config.id2label.items()}
    encoded = tokenize_words(tokenizer, sentences, max_length)
    rows = [{"input_ids": encoded["input_ids"][i], "attention_mask": encoded["attention_mask"][i],
             "word_index": encoded["word_index"][i], "example_index": i} for i in range(len(sentences))]
    loader = DataLoader(rows, batch_size=batch_size, shuffle=False,
                        collate_fn=lambda b: pad_batch(b, tokenizer.pad_token_id))
    device = None
    if accelerator is not None:
        loader = accelerator.prepare_data_loader(loader)
    else:
        device = next(model.parameters()).device
    is_main = accelerator is None or accelerator.is_local_main_process
    predicted: dict[int, list[int]] = {}
    was_training = model.training
    model.eval()
    from tqdm.auto import tqdm

    for batch in tqdm(loader, desc="predicting", disable=not (show_progress and is_main)):
        if device is not None:
            batch = {k: v.to(device) for k, v in batch.items()}
        with torch.no_grad():
            logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        best = logits.argmax(-1)
        word_index = batch["word_index"]
        words = int(word_index.max().item()) + 1 if word_index.numel() else 0
        # One row of word-level predictions per sentence (-1 where a word has no subword).
        per_word = torch.full((best.shape[0], max(words, 1)), -1, dtype=torch.long, device=best.device)
        rows_i, cols = (word_index >= 0).nonzero(as_tuple=True)
        per_word[rows_i, word_index[rows_i, cols]] = best[rows_i, cols]
        example_index = batch["example_index"]
        if accelerator is not None:
            per_word = accelerator.pad_across_processes(per_word, dim=1, pad_index=-1)
            per_word, example_index = accelerator.gather((per_word, example_index))
        for index, row in zip(example_index.tolist(), per_word.tolist(), strict=True):
            predicted.setdefault(index, row)  # gathering repeats a few rows to even out the last batch
    model.train(was_training)
    out, unread = [], 0
    for i, sentence in enumerate(sentences):
        ids = predicted[i]
        tags = []
        for w in range(len(sentence)):
            label_id = ids[w] if w < len(ids) else -1
            unread += label_id < 0
            tags.append("O" if label_id < 0 else id2label[label_id])
        out.append(tags)
    if unread:
        logger.warning("%d words had no subword within max_length=%d (or no subword at all) and were tagged O",
                       unread, max_length)
    return out


def _check_types(reference_names: set[str], model_types: set[str], where: str, drop_unknown: bool) -> set[str]:
    unknown = {t for name in reference_names if (t := split_tag(name)[1]) is not None} - model_types
    if unknown and not drop_unknown:
        raise LabelConflictError(
            f"{where}: entity types {sorted(unknown)} are not among the model's labels {sorted(model_types)}; the model "
            "can never predict them. Rename them with label_map, or pass drop_unknown_types to score them as O")
    return unknown


def evaluate_ner(model, tokenizer, eval_sets: Mapping[str, Any], *, split: str = "test", batch_size: int = 64,
                 max_length: int = 256, accelerator=None, label_map: Mapping[str, str] | None = None,
                 average_exclude: Sequence[str] = (), drop_unknown_types: bool = False,
                 show_progress: bool = False) -> NerEvaluation:
    """Score ``model`` on each language of ``eval_sets``.

    ``eval_sets`` maps a language to a ``datasets.Dataset`` with ``tokens`` and ``ner_tags`` (ids
    of a ``ClassLabel`` or tag strings), or to a ``(dataset, source_spec)`` pair, as
    :func:`load_eval_sets` returns. References are compared with predictions by tag name, so the
    corpus and the model need not number their labels alike. Entity types the model does not know
    raise :class:`~crop_hf.labels.LabelConflictError` unless ``drop_unknown_types``.
    """
    config = model.config if hasattr(model, "config") else model.module.config
    model_types = {t for name in config.id2label.values() if (t := split_tag(name)[1]) is not None}
    languages: dict[str, LanguageScores] = {}
    for lang, entry in eval_sets.items():
        dataset, spec = entry if isinstance(entry, tuple) else (entry, None)
        references = tag_strings(dataset, label_map)
        names = {tag for sentence in references for tag in sentence}
        unknown = _check_types(names, model_types, f"{spec or lang} ({split})", drop_unknown_types)
        if unknown:
            references = [[("O" if split_tag(t)[1] in unknown else t) for t in s] for s in references]
        predictions = predict_tags(model, tokenizer, dataset["tokens"], batch_size=batch_size, max_length=max_length,
                                   accelerator=accelerator, show_progress=show_progress)
        scores = score_tags(references, predictions)
        if spec is not None:
            parsed = parse_source_spec(spec)
            scores.source = spec
            scores.dataset = Path(parsed.name).name if parsed.kind == "disk" else parsed.name
            scores.config = lang if parsed.config in (None, "all") else parsed.config
        languages[lang] = scores
    averaged = [s for lang, s in languages.items() if lang not in set(average_exclude)]
    return NerEvaluation(split, languages, average_scores(averaged) if len(languages) > 1 else None)


def load_eval_sets(specs: Sequence[str], split: str, *, max_samples: int | None = None,
                   datasets: Mapping[str, Any] | None = None, option: str | None = None) -> dict[str, tuple[Any, str]]:
    """``{lang: (rows, spec)}`` for ``split`` of each source spec; a corpus with several languages in its
    ``lang`` column (``xtreme40:all``) gives one entry per language. With ``option`` (``"--sources"``), a
    spec whose split holds no sentence is an error naming the option and the spec."""
    out: dict[str, tuple[Any, str]] = {}
    for spec in specs:
        source = load_source(spec, dataset=(datasets or {}).get(spec), splits=(split,))
        rows = source.sentences(split, option) if option else source.split(split)
        if max_samples is not None:
            rows = rows.select(range(min(max_samples, len(rows))))
        default = source.lang or Path(spec.split("?")[0]).name.split(":")[-1]
        for lang, part in split_by_language(rows, default).items():
            key = lang if lang not in out else f"{lang}:{spec}"
            out[key] = (part, spec)
    return out


def evaluate_pretrained(model_name_or_path: str, specs: Sequence[str], *, split: str = "test",
                        batch_size: int = 64, max_length: int = 256, max_samples: int | None = None,
                        label_map: Mapping[str, str] | None = None, average_exclude: Sequence[str] = (),
                        drop_unknown_types: bool = False, show_progress: bool = False) -> NerEvaluation:
    """Load any token-classification model (folder or Hub id) and score it per language on ``specs``.

    The model is checked (:func:`~crop_hf.errors.check_model`) and every spec read, an empty one
    refused, before the model loads.

    >>> evaluation = evaluate_pretrained("my-model", ["conll5:es", "conll5:nl"])  # doctest: +SKIP
    >>> print(format_ner_table(evaluation))  # doctest: +SKIP
    """
    import torch
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    check_model(model_name_or_path, "model (--model)")
    eval_sets = load_eval_sets(specs, split, max_samples=max_samples, option="--sources")
    with reaching(model_name_or_path):
        tokenizer = AutoTokenizer.from_pretrained(model_name_or_path)
        model = AutoModelForTokenClassification.from_pretrained(model_name_or_path)
    model.to("cuda" if torch.cuda.is_available() else "cpu")
    return evaluate_ner(model, tokenizer, eval_sets, split=split, batch_size=batch_size, max_length=max_length,
                        label_map=label_map, average_exclude=average_exclude, drop_unknown_types=drop_unknown_types,
                        show_progress=show_progress)


def format_ner_table(evaluation: NerEvaluation, per_type: bool = True) -> str:
    """A text table: languages (and ``avg``) as columns; P, R, F1 and per-type F1 as rows, in percent."""
    columns, rows = score_rows(evaluation, per_type)
    return format_table([evaluation.split, *columns], rows, align_first="left")


def ner_results(evaluations: Sequence[NerEvaluation], extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What NER training writes to ``all_results.json``: ``extra`` (training figures) plus flat
    ``<split>_<lang>_<metric>`` keys of each evaluation (written by :func:`crop_hf.engine.training.write_all_results`)."""
    results: dict[str, Any] = dict(extra or {})
    for evaluation in evaluations:
        results.update(evaluation.flat())
    return results
