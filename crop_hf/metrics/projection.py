"""Label projection scored against gold target tags: every method and aligner of crop-hf in one table.

Given a source corpus with tags and a target corpus with its own gold tags, sentence *k* of one
the translation of sentence *k* of the other (Europarl-NER's English and German files, the two
sides of Hinglish-TOP, any pair of tagged corpora), :func:`evaluate_projection`

1. aligns the pairs once per aligner (eflomal with grow-diag-final-and by default; any object with
   ``align(source_words, target_words)``, such as :class:`~crop_hf.alignment.EmbeddingAligner`;
   ``extra_parallel`` unlabelled sentence pairs are aligned with them by corpus aligners such as
   eflomal, whose estimates improve with more text, and then set aside);
2. projects the source tags onto the gold target tokens with every method of
   :data:`~crop_hf.projection.methods.PROJECTION_METHODS` through
   :func:`~crop_hf.projection.methods.project_examples` (the code path of ``pipeline("projection")``
   and corpus synthesis);
3. scores each (method, aligner) row: span P/R/F1 (seqeval, exact type and boundaries) over all
   sentences (a dropped sentence's gold entities count as missed) and over kept ones only, the
   share of sentences kept and of source entities projected, F1 per entity type, an error
   breakdown (:func:`projection_errors`) and sentences per second (projection only; each
   aligner's time is reported apart).

**Methods scored by a translation model** (``insertion``, ``rerank``, ``hybrid_rerank``) run once
per model given as ``scorers={name: TranslationScorer}`` (each in the source → target direction),
one :class:`ScoredProjectionRow` per (method, aligner, model), its sentences per second measured
around that method's projection with that model (model loading apart). Named in ``methods``
without ``scorers`` they are an error; each is scored with every model that suits it
(:func:`~crop_hf.projection.methods.check_scorer`: insertion for models with marker tokens,
reranking for models with the reverse direction), the other pairs skipped with a warning and
listed with why in :attr:`ProjectionEvaluation.skipped`; a method no model suits is an error.
Without ``scorers`` and ``methods`` the rows are those of the model-free methods.

**What lexical methods read.** Lexical and fuzzy projection (CroP) look for the *translated* text
of each entity, which a labeled translation provides; a corpus of human translations has no such
text. Here they are given **the source entity's own words** (``Millennium bug`` is looked for in
the German sentence): this is what hybrid projection does by default, it finds names spelled alike
in both languages and nothing else, so their recall is a floor, not CroP's score with a
translation model. Nothing of the target's gold tags is ever shown to a method.

>>> source = [(["I", "met", "Anna", "in", "Oslo"], ["O", "O", "B-PER", "O", "B-LOC"])]
>>> target = [(["Ich", "traf", "Anna", "in", "Oslo"], ["O", "O", "B-PER", "O", "B-LOC"])]
>>> identity = {"identity": _Identity()}
>>> evaluation = evaluate_projection(source, target, methods=["alignment"], aligners=identity)
>>> evaluation.rows[0].f1
1.0
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import crop_hf.projection.methods
from crop_hf.alignment import EflomalAligner
from crop_hf.labels import Span, tags_to_spans
from crop_hf.ner.evaluate import score_tags
from crop_hf.projection.methods import (
    PROJECTION_METHODS,
    ProjectionExample,
    check_options,
    check_scorer,
    get_method,
    parse_method,
)
from crop_hf.projection.target import TargetSentence
from crop_hf.tables import format_table

__all__ = [
    "ERROR_KINDS",
    "ProjectionEvaluation",
    "ProjectionRow",
    "ScoredProjectionRow",
    "evaluate_projection",
    "format_projection_table",
    "projection_errors",
    "projection_scores",
    "span_errors",
]

logger = logging.getLogger(__name__)

#: What :func:`projection_errors` counts: gold spans found exactly, with the wrong type only, with
#: wrong boundaries (overlapped by a projected span that is not it), missed (overlapped by none),
#: and projected spans that overlap no gold span.
ERROR_KINDS = ("correct", "type", "boundary", "missed", "spurious")


def span_errors(predicted: Sequence[str], gold: Sequence[str]) -> list[tuple[str, Span | None, tuple[Span, ...]]]:
    """Every span of one sentence by :data:`ERROR_KINDS`: ``(kind, gold span, predicted spans)``.

    Each gold span comes first, in order, with the predicted spans that decide its kind: the one of
    the same boundaries for ``"correct"`` and ``"type"``, every overlapping one for ``"boundary"``,
    none for ``"missed"``; then each predicted span that overlaps no gold span, as
    ``("spurious", None, (span,))``. :func:`projection_errors` counts these; a corpus check
    (:mod:`crop_hf.metrics.corpus`) also shows them.

    >>> [(kind, gold and gold.label, [p.label for p in found])
    ...  for kind, gold, found in span_errors(["B-LOC", "I-LOC", "O", "B-PER"], ["B-LOC", "O", "O", "B-ORG"])]
    [('boundary', 'LOC', ['LOC']), ('type', 'ORG', ['PER'])]
    """
    if len(predicted) != len(gold):
        raise ValueError(f"{len(predicted)} predicted tags but {len(gold)} gold tags")
    found, expected = tags_to_spans(predicted), tags_to_spans(gold)
    exact = {(span.start, span.end): span for span in found}
    out: list[tuple[str, Span | None, tuple[Span, ...]]] = []
    for span in expected:
        same = exact.get((span.start, span.end))
        if same is not None:
            out.append(("correct" if same.label == span.label else "type", span, (same,)))
            continue
        overlapping = tuple(p for p in found if p.start < span.end and span.start < p.end)
        out.append(("boundary" if overlapping else "missed", span, overlapping))
    out += [("spurious", None, (p,)) for p in found
            if not any(p.start < g.end and g.start < p.end for g in expected)]
    return out


def projection_errors(predictions: Sequence[Sequence[str]], references: Sequence[Sequence[str]]) -> dict[str, int]:
    """Count every gold span as correct, wrong type, wrong boundary or missed, and every extra projected span.

    A gold span is ``"correct"`` when a projected span has its start, end and type; ``"type"`` when
    one has its start and end but another type; ``"boundary"`` when projected spans overlap it but
    none has its boundaries; ``"missed"`` when none overlaps it. A projected span that overlaps no
    gold span is ``"spurious"``. (A projected span with the right boundaries and type is never
    counted twice; one that overlaps two gold spans makes both ``"boundary"``.) Each sentence's
    spans are read by :func:`span_errors`.

    >>> projection_errors([["B-LOC", "I-LOC", "O", "B-PER", "O"]], [["B-LOC", "O", "O", "B-ORG", "B-PER"]])
    {'correct': 0, 'type': 1, 'boundary': 1, 'missed': 1, 'spurious': 0}
    """
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions but {len(references)} references")
    counts = dict.fromkeys(ERROR_KINDS, 0)
    for index, (predicted, gold) in enumerate(zip(predictions, references, strict=True)):
        if len(predicted) != len(gold):
            raise ValueError(f"sentence {index}: {len(predicted)} projected tags but {len(gold)} gold tags")
        for kind, _, _ in span_errors(predicted, gold):
            counts[kind] += 1
    return counts


@dataclass
class ProjectionRow:
    """The scores of one projection method over one aligner's links (``aligner`` is ``None`` for lexical methods)."""

    name: str
    method: str
    aligner: str | None
    options: dict[str, Any]
    precision: float
    recall: float
    f1: float
    kept_precision: float
    kept_recall: float
    kept_f1: float
    kept_rate: float
    entities_projected: float
    per_type: dict[str, dict[str, float]]
    errors: dict[str, int]
    seconds: float
    sentences_per_second: float


@dataclass
class ScoredProjectionRow(ProjectionRow):
    """The scores of a model-scored method with one translation model (``model``: its name in ``scorers``)."""

    model: str = ""


@dataclass
class ProjectionEvaluation:
    """Every row of :func:`evaluate_projection`, and what they were computed on."""

    rows: list[ProjectionRow]
    sentences: int
    source_entities: int
    gold_entities: int
    #: aligner name -> ``{"seconds": ..., "pairs": ...}`` (pairs aligned, extra parallel ones included)
    aligners: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: translation model name -> the checkpoint it scored with (only when model-scored methods ran)
    models: dict[str, str] = field(default_factory=dict)
    #: ``(method row, model, why)`` of each pair of a model-scored method and a model that does not suit it
    skipped: list[tuple[str, str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out = {"sentences": self.sentences, "source_entities": self.source_entities,
               "gold_entities": self.gold_entities, "aligners": self.aligners}
        if self.models:
            out["models"] = self.models
        if self.skipped:
            out["skipped"] = [{"method": method, "model": model, "why": why} for method, model, why in self.skipped]
        return {**out, "rows": [asdict(row) for row in self.rows]}

    def row(self, name: str, aligner: str | None = None, model: str | None = None) -> ProjectionRow:
        """The row called ``name`` (over ``aligner`` when several aligners were scored; with ``model`` when
        several translation models were)."""
        for row in self.rows:
            if (row.name == name and (aligner is None or row.aligner in (aligner, None))
                    and (model is None or getattr(row, "model", None) == model)):
                return row
        raise KeyError(f"no row {name!r}" + (f" over {aligner!r}" if aligner else "")
                       + (f" with {model!r}" if model else "")
                       + f"; rows: {', '.join(sorted({r.name for r in self.rows}))}")


def format_projection_table(evaluation: ProjectionEvaluation, *, style: str = "text", max_types: int = 8) -> str:
    """The rows as one table (:func:`crop_hf.tables.format_table`): scores in percent, speed in sentences/s.

    F1 per entity type gets a column per type when there are at most ``max_types`` types (semantic
    parses have dozens of slot types: their per-type scores are in the JSON and the plot).
    """
    types = sorted({t for row in evaluation.rows for t in row.per_type})
    types = types if len(types) <= max_types else []
    scored = any(isinstance(row, ScoredProjectionRow) for row in evaluation.rows)  # a model column only then
    header = ["method", "aligner", *(["model"] if scored else []), "P", "R", "F1", "kept P", "kept R", "kept F1",
              "kept", "entities", *(f"{t} F1" for t in types), "boundary", "missed", "type", "spurious", "sent/s"]
    percent = lambda value: f"{100 * value:.1f}"  # noqa: E731
    body = []
    for row in evaluation.rows:
        model = [getattr(row, "model", None) or "-"] if scored else []
        body.append([row.name, row.aligner or "-", *model, percent(row.precision), percent(row.recall), percent(row.f1),
                     percent(row.kept_precision), percent(row.kept_recall), percent(row.kept_f1),
                     percent(row.kept_rate), percent(row.entities_projected),
                     *(percent(row.per_type[t]["f1"]) if t in row.per_type else "-" for t in types),
                     row.errors["boundary"], row.errors["missed"], row.errors["type"], row.errors["spurious"],
                     f"{row.sentences_per_second:.0f}"])
    return format_table(header, body, style=style, align_first="left")


def _pairs(corpus: Sequence[Any], side: str) -> list[tuple[list[str], list[str]]]:
    """``(tokens, tags)`` per sentence from pairs or records with ``tokens`` and ``tags`` attributes."""
    sentences = []
    for k, item in enumerate(corpus):
        tokens, tags = (item.tokens, item.tags) if hasattr(item, "tokens") else (item[0], item[1])
        if len(tokens) != len(tags):
            raise ValueError(f"{side} sentence {k}: {len(tokens)} tokens but {len(tags)} tags")
        sentences.append((list(tokens), list(tags)))
    return sentences


def _method_rows(methods: Sequence[str] | Mapping[str, Any] | None,
                 scored: bool = False) -> list[tuple[str, str, dict[str, Any]]]:
    """``(row name, method, options)``: method names (with ``?key=value&...`` options), or
    ``{row name: (method, options)}``; by default every method (the model-scored ones only when
    ``scored``: there are translation models to score with)."""
    if methods is None:
        methods = [name for name, method in PROJECTION_METHODS.items() if scored or not method.uses_scorer]
    if isinstance(methods, Mapping):
        rows = [(name, *spec) if not isinstance(spec, str) else (name, spec, {}) for name, spec in methods.items()]
    else:
        rows = [(name, *parse_method(name)) for name in methods]
    for _, method, options in rows:
        check_options(get_method(method), options)
    return [(name, method, dict(options)) for name, method, options in rows]


def evaluate_projection(
    source: Sequence[Any],
    target: Sequence[Any],
    *,
    methods: Sequence[str] | Mapping[str, Any] | None = None,
    aligners: Mapping[str, Any] | None = None,
    extra_parallel: tuple[Sequence[Sequence[str]], Sequence[Sequence[str]]] | None = None,
    alignments: Mapping[str, Sequence[Sequence[tuple[int, int]]]] | None = None,
    scorers: Mapping[str, Any] | None = None,
) -> ProjectionEvaluation:
    """Project ``source``'s tags onto ``target``'s tokens with every method and aligner and score them (see the module).

    Args:
        source: the labeled source sentences, as ``(tokens, IOB2 tags)`` pairs or records with
            ``tokens`` and ``tags`` (:class:`~crop_hf.data.readers.TaggedSentence`).
        target: the gold target sentences, sentence *k* the translation of source sentence *k*.
        methods: names from :data:`~crop_hf.projection.methods.PROJECTION_METHODS` (default: all
            of them, with their defaults), each optionally with options as ``?key=value&...``
            (``"hybrid?trim_edges=true&one_word=true&threshold=80"``), or ``{row name: (method,
            {option: value})}`` to score settings side by side.
        aligners: ``{name: aligner}``; default ``{"eflomal": EflomalAligner()}``
            (grow-diag-final-and).
        extra_parallel: ``(source sentences, target sentences)`` of unlabelled tokenized bitext,
            aligned together with the scored pairs by an :class:`~crop_hf.alignment.EflomalAligner`
            (better priors from more text) and not scored; other aligners ignore it.
        alignments: ``{name: links per sentence}`` computed already (they replace aligning with the
            aligner of that name, which then need not be given).
        scorers: ``{name: TranslationScorer}`` (source → target) for the model-scored methods: one
            row per method and model (see the module docstring).
    """
    source_pairs, target_pairs = _pairs(source, "source"), _pairs(target, "target")
    if len(source_pairs) != len(target_pairs):
        raise ValueError(f"{len(source_pairs)} source sentences but {len(target_pairs)} target sentences: "
                         "sentence k of the target must be the translation of sentence k of the source")
    scorers = dict(scorers or {})
    rows_wanted = _method_rows(methods, scored=bool(scorers))
    scored_rows, skipped = _scored_rows(rows_wanted, scorers)  # before aligning: errors cost nothing
    alignments = dict(alignments or {})
    if aligners is None:
        aligners = {} if alignments else {"eflomal": EflomalAligner()}
    if extra_parallel is not None and len(extra_parallel[0]) != len(extra_parallel[1]):
        raise ValueError(f"extra parallel text: {len(extra_parallel[0])} source but {len(extra_parallel[1])} "
                         "target sentences")

    aligner_info: dict[str, dict[str, Any]] = {}
    if any(get_method(method).uses_alignment for _, method, _ in rows_wanted):
        for name, aligner in aligners.items():
            if name in alignments:
                continue
            src = [tokens for tokens, _ in source_pairs]
            tgt = [tokens for tokens, _ in target_pairs]
            extra = isinstance(aligner, EflomalAligner) and extra_parallel is not None
            if extra:
                src, tgt = src + [list(s) for s in extra_parallel[0]], tgt + [list(t) for t in extra_parallel[1]]
            started = time.perf_counter()
            links = aligner.align(src, tgt)
            aligner_info[name] = {"seconds": round(time.perf_counter() - started, 3), "pairs": len(src)}
            alignments[name] = links[:len(source_pairs)]
        for name, links in alignments.items():
            if len(links) != len(source_pairs):
                raise ValueError(f"alignments {name!r}: {len(links)} sentences for {len(source_pairs)} pairs")
            aligner_info.setdefault(name, {"seconds": 0.0, "pairs": len(links)})

    gold = [tags for _, tags in target_pairs]
    spans = [tags_to_spans(tags) for _, tags in source_pairs]
    rows: list[ProjectionRow] = []
    for row_index, (name, method, options) in enumerate(rows_wanted):
        chosen = get_method(method)
        for aligner_name, scorer_name in [(a, m) for a in (alignments if chosen.uses_alignment else [None])
                                          for m in (scored_rows[row_index] if chosen.uses_scorer else [None])]:
            examples = []
            for k, ((tokens, _), (target_tokens, _)) in enumerate(zip(source_pairs, target_pairs, strict=True)):
                example = ProjectionExample(TargetSentence(list(target_tokens), "given"), source_tokens=tokens,
                                            source_spans=spans[k])
                if chosen.uses_alignment:
                    example.alignment = [tuple(pair) for pair in alignments[aligner_name][k]]
                else:  # the source entity's own words: see "What lexical methods read" above
                    example.entities = [(" ".join(tokens[s.start:s.end]), s.label) for s in spans[k]]
                examples.append(example)
            scorer = {"scorer": scorers[scorer_name]} if scorer_name is not None else {}
            started = time.perf_counter()
            results = crop_hf.projection.methods.project_examples(method, examples, **scorer, **options)
            seconds = time.perf_counter() - started
            row = _score(name, method, aligner_name, options, results, gold, seconds)
            rows.append(ScoredProjectionRow(**asdict(row), model=scorer_name) if scorer_name is not None else row)
    models = {name: str(getattr(scorer, "name", name)) for name, scorer in scorers.items()
              if any(name in names for names in scored_rows.values())}
    return ProjectionEvaluation(rows, len(source_pairs), sum(map(len, spans)),
                                sum(len(tags_to_spans(tags)) for tags in gold), aligner_info, models, skipped)


def _scored_rows(rows_wanted: Sequence[tuple[str, str, dict[str, Any]]], scorers: Mapping[str, Any]
                 ) -> tuple[dict[int, list[str]], list[tuple[str, str, str]]]:
    """Per wanted row of a model-scored method, the models it is scored with; and the pairs skipped, with why.

    Each method is scored with the models that suit it (:func:`~crop_hf.projection.methods.check_scorer`:
    insertion needs a model with its markers, reranking the reverse direction); each other pair is
    skipped with a warning saying why. A method that suits none of the models is the error of the
    last one, naming it: nothing could score that row.
    """
    out: dict[int, list[str]] = {}
    skipped: list[tuple[str, str, str]] = []
    for index, (name, method, options) in enumerate(rows_wanted):
        if not get_method(method).uses_scorer:
            continue
        if not scorers:
            raise ValueError(f"projection method {name!r} scores spans with a translation model: give "
                             "scorers={name: TranslationScorer} (crop-hf evaluate-projection --scorer_models "
                             "NAME=PATH --src_lang .. --tgt_lang ..)")
        out[index] = []
        refusals = []
        for model, scorer in scorers.items():
            try:
                check_scorer(method, scorer, **options)
            except ValueError as error:
                refusals.append((name, model, str(error), error))
                continue
            out[index].append(model)
        if not out[index]:
            raise refusals[-1][3]
        for name_, model, why, _ in refusals:
            logger.warning("no %s row for %s: %s", name_, model, why)
            skipped.append((name_, model, why))
    return out, skipped



def projection_scores(
    predictions: Sequence[Sequence[str] | Mapping[str, Any] | None],
    references: Sequence[Sequence[str]],
    *,
    kept: Sequence[bool] | None = None,
    over: Literal["kept", "all"] = "kept",
) -> dict[str, Any]:
    """Score projected tags against gold tags of the same target tokens.

    Args:
        predictions: per sentence, the projected IOB2 tags, a projection output (a dict with
            ``tags`` and ``kept``, as :class:`crop_hf.projection.ProjectionPipeline` returns), or
            ``None`` for a sentence that was dropped.
        references: the gold IOB2 tags of each sentence.
        kept: which sentences were kept, when ``predictions`` are bare tag lists that include
            dropped ones.
        over: ``"kept"`` scores only kept sentences (the quality of the projected corpus, as in
            CroP); ``"all"`` also counts every gold entity of a dropped sentence as missed.

    Returns:
        ``precision``, ``recall``, ``f1`` (micro-averaged over entities: a prediction is correct
        when type, start and end all match), ``per_type`` (the same per entity type, with
        ``support``), ``sentences``, ``kept`` and ``kept_rate``.
    """
    if over not in {"kept", "all"}:
        raise ValueError(f"over must be 'kept' or 'all', got {over!r}")
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions but {len(references)} references")
    if kept is not None and len(kept) != len(predictions):
        raise ValueError(f"{len(kept)} kept flags but {len(predictions)} predictions")
    # A dropped sentence scored over "all" is one whose every gold entity was missed: all-O
    # predictions. The scoring itself is evaluation's seqeval scoring, so the two agree.
    gold_tags: list[list[str]] = []
    projected_tags: list[list[str]] = []
    n_kept = 0
    for index, (prediction, reference) in enumerate(zip(predictions, references, strict=True)):
        is_kept = prediction is not None
        if isinstance(prediction, Mapping):
            is_kept = bool(prediction.get("kept", True))
            prediction = prediction["tags"]
        if kept is not None:
            is_kept = is_kept and bool(kept[index])
        n_kept += is_kept
        if not is_kept:
            if over == "all":
                gold_tags.append(list(reference))
                projected_tags.append(["O"] * len(reference))
            continue
        if len(prediction) != len(reference):
            raise ValueError(f"sentence {index}: {len(prediction)} projected tags but {len(reference)} gold tags; "
                             "projection and gold must tag the same tokens")
        gold_tags.append(list(reference))
        projected_tags.append(list(prediction))
    scores = score_tags(gold_tags, projected_tags) if gold_tags else None
    return {
        "precision": scores.precision if scores else 0.0,
        "recall": scores.recall if scores else 0.0,
        "f1": scores.f1 if scores else 0.0,
        "per_type": scores.per_type if scores else {},
        "sentences": len(references),
        "kept": n_kept,
        "kept_rate": n_kept / len(references) if references else 0.0,
    }

def _score(name: str, method: str, aligner: str | None, options: dict[str, Any], results: Sequence[Any],
           gold: Sequence[Sequence[str]], seconds: float) -> ProjectionRow:
    predictions = [{"tags": result.tags, "kept": result.kept} for result in results]
    over_all = projection_scores(predictions, gold, over="all")
    over_kept = projection_scores(predictions, gold, over="kept")
    statuses = [status for result in results for status in result.statuses]
    reached = sum(status.reached for status in statuses)
    return ProjectionRow(
        name=name, method=method, aligner=aligner, options=options,
        precision=over_all["precision"], recall=over_all["recall"], f1=over_all["f1"],
        kept_precision=over_kept["precision"], kept_recall=over_kept["recall"], kept_f1=over_kept["f1"],
        kept_rate=over_all["kept_rate"], entities_projected=reached / len(statuses) if statuses else 1.0,
        per_type=over_all["per_type"],
        errors=projection_errors([r["tags"] if r["kept"] else ["O"] * len(g) for r, g in zip(predictions, gold, strict=True)],
                                 gold),
        seconds=round(seconds, 4), sentences_per_second=len(results) / seconds if seconds > 0 else float("inf"),
    )


class _Identity:
    """Links word i to word i (the docstring's aligner: a target that is a word-for-word copy)."""

    def align(self, source, target):
        return [[(i, i) for i in range(min(len(s), len(t)))] for s, t in zip(source, target, strict=True)]
