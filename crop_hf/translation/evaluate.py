"""How well a translation model keeps markers: completeness, slot accuracy, BLEU and chrF per direction.

On held-out marked pairs (:mod:`crop_hf.translation.parallel`), each marked source is translated
with ``pipeline("labeled-translation")`` (free or marker-constrained decoding) and scored against
the marked reference:

* **completeness** — share of sentences with slots whose markers all come back, each slot
  exactly once, paired, neither crossing nor nesting (:attr:`crop_hf.markers.Extraction.complete`);
* **slot accuracy** — share of reference slots whose text between the hypothesis' markers equals
  the reference phrase (whitespace-normalised), under the same slot and label;
* **kept** — share of sentences with slots that are complete *and* have every slot right: the
  sentences a synthesis run could use without error;
* **BLEU** and **chrF** (sacrebleu, corpus level) of the translation with markers removed
  against the reference with markers removed.

>>> row = {"source": "a __SLOT1__ red cat __SLOT1__", "target": "eine __SLOT1__ rote Katze __SLOT1__",
...        "src_lang": "en", "tgt_lang": "de"}
>>> score_direction([row], ["eine __SLOT1__ rote Katze __SLOT1__"])["slot_accuracy"]
1.0
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from crop_hf.markers import MarkedEntity, MarkedSentence, MarkerStyle, get_marker_style

__all__ = ["DECODINGS", "TranslationEvaluation", "check_decodings", "evaluate_translation",
           "format_translation_table", "marked_sentence", "score_direction"]

logger = logging.getLogger(__name__)

METRICS = ("completeness", "slot_accuracy", "kept", "bleu", "chrf")

#: How a model may decode: freely, or constrained to give back every marker of the source.
DECODINGS = ("free", "constrained")


def check_decodings(decodings: Sequence[str], option: str = "decodings") -> Sequence[str]:
    """Return ``decodings`` if each is one of :data:`DECODINGS`; otherwise ``ValueError`` naming ``option``.

    >>> check_decodings(["free", "beam"], "--decodings")
    Traceback (most recent call last):
    ...
    ValueError: --decodings: decoding must be 'free' or 'constrained', got 'beam'
    """
    for decoding in decodings:
        if decoding not in DECODINGS:
            raise ValueError(f"{option}: decoding must be 'free' or 'constrained', got {decoding!r}")
    return decodings


def marked_sentence(row: Mapping[str, Any], style: str | MarkerStyle | None = None) -> tuple[MarkedSentence, Any]:
    """The :class:`MarkedSentence` of a marked pair's source, and the extraction of its reference.

    Every slot gets the label ``SLOT{i}`` for typed styles (the number is the label) and one shared
    label for untyped ones, whose slots are then restored by order.
    """
    style = get_marker_style(style)
    found = style.find(row["source"])
    if style.typed:
        slots = sorted({m.slot for m in found if m.slot is not None})
        entities = tuple(MarkedEntity(s, f"SLOT{s}", "") for s in slots)
    else:
        entities = tuple(MarkedEntity(k, "X", "") for k in range(sum(m.kind == "open" for m in found)))
    # The source's own extraction gives its clean text and each slot's phrase.
    bare = MarkedSentence(row["source"], "", entities, style.name)
    source = style.extract(bare, row["source"])
    texts = {e.slot: e.text for e in source.entities}
    marked = MarkedSentence(row["source"], source.translation,
                            tuple(MarkedEntity(e.slot, e.label, texts.get(e.slot, "")) for e in entities), style.name)
    return marked, style.extract(marked, row["target"])


def score_direction(rows: Sequence[Mapping[str, Any]], hypotheses: Sequence[str],
                    style: str | MarkerStyle | None = None) -> dict[str, float]:
    """Scores of marked hypotheses (one per row, markers kept) against the rows' marked references."""
    import sacrebleu

    style = get_marker_style(style)
    with_slots = complete = kept = slots = right = 0
    clean_hyps, clean_refs = [], []
    for row, hypothesis in zip(rows, hypotheses, strict=True):
        marked, reference = marked_sentence(row, style)
        extraction = style.extract(marked, hypothesis)
        clean_hyps.append(extraction.translation)
        clean_refs.append(reference.translation)
        if not marked.entities:
            continue
        with_slots += 1
        got = {(e.slot, e.label): " ".join(e.text.split()) for e in extraction.entities}
        correct = sum(got.get((e.slot, e.label)) == " ".join(e.text.split()) for e in reference.entities)
        slots += len(reference.entities)
        right += correct
        complete += extraction.complete
        kept += extraction.complete and correct == len(reference.entities)
    return {
        "sentences": len(clean_hyps),
        "sentences_with_slots": with_slots,
        "slots": slots,
        "completeness": complete / with_slots if with_slots else 1.0,
        "slot_accuracy": right / slots if slots else 1.0,
        "kept": kept / with_slots if with_slots else 1.0,
        "bleu": sacrebleu.corpus_bleu(clean_hyps, [clean_refs]).score if clean_hyps else 0.0,
        "chrf": sacrebleu.corpus_chrf(clean_hyps, [clean_refs]).score if clean_hyps else 0.0,
    }


@dataclass
class TranslationEvaluation:
    """Scores per ``(model, decoding, direction)``: ``scores[(model, decoding, "en-de")] = {...}``."""

    scores: dict[tuple[str, str, str], dict[str, float]] = field(default_factory=dict)
    examples: dict[tuple[str, str, str], list[str]] = field(default_factory=dict)

    def merge(self, other: TranslationEvaluation) -> TranslationEvaluation:
        self.scores.update(other.scores)
        self.examples.update(other.examples)
        return self

    def flat(self) -> dict[str, float]:
        """``{"trained_free_en-de_bleu": 27.1, ...}`` for ``all_results.json``."""
        return {f"{m}_{d}_{direction}_{k}": v for (m, d, direction), s in self.scores.items() for k, v in s.items()}

    def to_dict(self) -> list[dict[str, Any]]:
        return [{"model": m, "decoding": d, "direction": direction, **s} for (m, d, direction), s in self.scores.items()]

    @classmethod
    def from_dict(cls, items: Iterable[Mapping[str, Any]]) -> TranslationEvaluation:
        """The scores :meth:`to_dict` wrote (a learning-curve point of ``all_results.json``), read back."""
        keys = ("model", "decoding", "direction")
        return cls({tuple(item[k] for k in keys): {k: v for k, v in item.items() if k not in keys} for item in items})


def _directions(dataset: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], list[Mapping[str, Any]]]:
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for row in dataset:
        groups.setdefault((row["src_lang"], row["tgt_lang"]), []).append(row)
    return groups


def evaluate_translation(
    model: Any,
    tokenizer: Any,
    dataset: Iterable[Mapping[str, Any]],
    *,
    name: str = "model",
    marker_style: str | MarkerStyle | None = None,
    decodings: Sequence[str] = ("free", "constrained"),
    batch_size: int = 32,
    num_beams: int = 1,
    max_new_tokens: int = 128,
    language_codes: Mapping[str, str] | None = None,
    max_samples: int | None = None,
    show_progress: bool = False,
) -> TranslationEvaluation:
    """Translate every marked source of ``dataset`` and score it per direction and decoding.

    ``dataset`` rows have ``source``, ``target`` (marked), ``src_lang`` and ``tgt_lang`` (a
    ``crop-hf mark-parallel`` dataset); ``language_codes`` maps its codes to the model's
    (``{"en": "eng_Latn"}`` for NLLB). ``decodings``: ``"free"`` and/or ``"constrained"``.
    """
    from tqdm.auto import tqdm

    from crop_hf.translation.pipeline import LabeledSequenceTranslationPipeline  # heavy (torch): on first use

    style = get_marker_style(marker_style)
    check_decodings(decodings)
    codes = dict(language_codes or {})
    translate = LabeledSequenceTranslationPipeline(model=model, tokenizer=tokenizer, marker_style=style,
                                                   device=model.device)
    evaluation = TranslationEvaluation()
    for (src, tgt), rows in _directions(dataset).items():
        rows = rows[:max_samples] if max_samples else rows
        direction = f"{src}-{tgt}"
        marked = [marked_sentence(row, style)[0] for row in rows]
        for decoding in decodings:
            hypotheses = []
            chunks = range(0, len(marked), batch_size * 8)
            for start in tqdm(chunks, desc=f"{name} {direction} {decoding}", disable=not show_progress):
                outputs = translate(marked[start : start + batch_size * 8], src_lang=codes.get(src, src),
                                    tgt_lang=codes.get(tgt, tgt), batch_size=batch_size, num_beams=num_beams,
                                    max_new_tokens=max_new_tokens, constrain_markers=decoding == "constrained")
                hypotheses += [out["marked_translation"] for out in outputs]
            evaluation.scores[(name, decoding, direction)] = score_direction(rows, hypotheses, style)
            evaluation.examples[(name, decoding, direction)] = hypotheses[:5]
    return evaluation


def format_translation_table(evaluation: TranslationEvaluation) -> str:
    """One row per direction and metric, one column per model and decoding (before/after side by side)."""
    columns = sorted({(m, d) for m, d, _ in evaluation.scores}, key=lambda c: (c[0] != "untrained", c[0], c[1]))
    directions = sorted({direction for _, _, direction in evaluation.scores})
    header = ["direction", "metric", *[f"{m} {d}" for m, d in columns]]
    lines = [header]
    for direction in directions:
        for metric in METRICS:
            cells = []
            for m, d in columns:
                value = evaluation.scores.get((m, d, direction), {}).get(metric)
                if value is None:
                    cells.append("-")
                else:
                    cells.append(f"{value:.1f}" if metric in ("bleu", "chrf") else f"{value:.3f}")
            lines.append([direction, metric, *cells])
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)) for line in lines)
