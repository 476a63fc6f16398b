"""Reranking projection: candidate target spans scored by a plain translation model (T-Projection's score).

No markers and no fine-tuning: any multilingual seq2seq checkpoint a user already has (M2M100,
NLLB, mBART-50) scores how well a candidate target span ``c`` translates a source entity ``e``
with the symmetric, length-normalised score of T-Projection (García-Ferrero et al., 2023):

    s(e, c) = ½ [ P(e | c) / P(e | e)  +  P(c | e) / P(c | c) ]

where ``P(y | x)`` is the per-token geometric-mean probability of ``y`` teacher-forced on ``x``
(:meth:`~crop_hf.projection.scoring.TranslationScorer.mean_log_probs`). ``P(c | e)`` is the
source → target direction, ``P(e | c)`` the reverse one, ``P(e | e)`` and ``P(c | c)`` each
language copied onto itself: they cancel how easy a text is to produce at all, so a short, frequent
candidate does not win by being short. The model must translate both ways; one that cannot (a
one-direction MarianMT checkpoint, or a tokenizer without one of the language codes) is a
``ValueError`` saying which direction is missing.

**rerank**: the candidates of a sentence are its word n-grams of up to ``max_span_words`` words
that neither start nor end with a punctuation-only token, plus (``candidates="all"``) the spans
hybrid projection finds when the example has a word alignment and those fuzzy projection finds when
it has translated entities. Each source entity, in source order, takes its best-scoring candidate
that no earlier entity took (overlap counts as taken); one scoring under ``min_score`` is left out
(``below_threshold``), one with no free candidate is a ``conflict``.

**hybrid_rerank**: hybrid projection first (its options), then reranking over the same candidates
plus hybrid's spans. Hybrid's span for an entity stays unless the model scores another candidate
more than ``margin`` higher: the spans hybrid keeps are reserved first (they never overlap), then
the other entities, in source order, take their best free candidate (hybrid's own span still
counting ``margin`` extra). A kept span keeps hybrid's status and ``match``; a replaced or
filled-in one is ``projected`` with ``match="rerank"``. Every entity carries its score ``s``.

>>> from crop_hf.projection import tokenize_target
>>> ngram_spans(tokenize_target("Ich wohne in Göteborg ."), 2)
[(0, 1), (0, 2), (1, 2), (1, 3), (2, 3), (2, 4), (3, 4)]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from crop_hf.labels import Span
from crop_hf.projection.fuzzy import project_fuzzy
from crop_hf.projection.hybrid import project_hybrid
from crop_hf.projection.result import EntityStatus, ProjectedEntity, ProjectionResult
from crop_hf.projection.scoring import TranslationScorer, require_scorer
from crop_hf.projection.target import TargetSentence, is_punctuation

__all__ = ["check_rerank", "ngram_spans", "project_hybrid_rerank", "project_rerank", "symmetric_scores"]

BELOW_THRESHOLD, CONFLICT, EMPTY_TARGET = "below_threshold", "conflict", "empty_target"


def ngram_spans(sentence: TargetSentence, max_span_words: int) -> list[tuple[int, int]]:
    """Spans of 1 to ``max_span_words`` tokens that neither start nor end with a punctuation-only token."""
    tokens = sentence.tokens
    return [(i, j) for i in range(len(tokens)) if not is_punctuation(tokens[i])
            for j in range(i + 1, min(len(tokens), i + max_span_words) + 1) if not is_punctuation(tokens[j - 1])]


def directions(scorer: TranslationScorer) -> tuple[TranslationScorer, TranslationScorer, TranslationScorer,
                                                    TranslationScorer]:
    """The four directions the symmetric score reads: source→target, target→source, source→source, target→target."""
    src, tgt = scorer.languages.src_lang, scorer.languages.tgt_lang
    try:
        reverse = scorer.reverse()
        return scorer, reverse, scorer.direction(src, src), scorer.direction(tgt, tgt)
    except ValueError as error:
        raise ValueError(f"reranking needs the reverse direction ({tgt or 'target'}→{src or 'source'}) and each "
                         f"language copied onto itself: {error}") from None


def check_rerank(options: Any, scorer: TranslationScorer) -> None:
    """Reranking's check of a scorer before any work: the model must have every direction the score reads."""
    directions(scorer)


def symmetric_scores(scorer: TranslationScorer, pairs: Sequence[tuple[str, str]]) -> list[float]:
    """T-Projection's ``s(e, c)`` of each ``(source entity text, target candidate text)`` pair (module docstring).

    Each distinct pair, entity and candidate is scored once, each text encoded once; all of them are batched.
    """
    forward, reverse, source_copy, target_copy = directions(scorer)
    unique = list(dict.fromkeys(pairs))
    entities = list(dict.fromkeys(e for e, _ in unique))
    candidates = list(dict.fromkeys(c for _, c in unique))
    # each language's texts are encoded once: the two directions from a language read the same encoder outputs
    from_source, from_target = forward.encode_sources(entities), reverse.encode_sources(candidates)
    c_given_e = forward.mean_log_probs([e for e, _ in unique], [c for _, c in unique], encoded=from_source)
    e_given_c = reverse.mean_log_probs([c for _, c in unique], [e for e, _ in unique], encoded=from_target)
    e_given_e = dict(zip(entities, source_copy.mean_log_probs(entities, entities, encoded=from_source), strict=True))
    c_given_c = dict(zip(candidates, target_copy.mean_log_probs(candidates, candidates, encoded=from_target),
                         strict=True))
    score = {pair: 0.5 * (math.exp(ec - e_given_e[pair[0]]) + math.exp(ce - c_given_c[pair[1]]))
             for pair, ce, ec in zip(unique, c_given_e, e_given_c, strict=True)}
    return [score[pair] for pair in pairs]


def _source(example: Any, method: str, index: int) -> tuple[list[Span], list[str]]:
    if example.source_tokens is None:
        raise ValueError(f"sentence {index}: {method} projection needs source_tokens and source_spans")
    spans = [Span(*span) for span in example.source_spans]
    for span in spans:
        if not 0 <= span.start < span.end <= len(example.source_tokens):
            raise ValueError(f"sentence {index}: span {tuple(span)} is empty or outside the "
                             f"{len(example.source_tokens)} source tokens")
    return spans, [" ".join(example.source_tokens[span.start:span.end]) for span in spans]


def _candidates(example: Any, spans: list[Span], max_span_words: int, extra: bool,
                hybrid: ProjectionResult | None = None) -> list[tuple[int, int]]:
    found = ngram_spans(example.target, max_span_words)
    if extra:
        if hybrid is None and example.alignment is not None:
            hybrid = project_hybrid(example.source_tokens, spans, example.target, example.alignment)
        if example.entities is not None:
            found += [(e.token_start, e.token_end) for e in project_fuzzy(example.target, example.entities).entities]
    if hybrid is not None:
        found += [(e.token_start, e.token_end) for e in hybrid.entities]
    return list(dict.fromkeys(found))


def _score_batch(scorer: TranslationScorer, examples: Sequence[Any], plans: list) -> list[list[list[float]]]:
    """Per planned example, per entity, the score of each candidate (one batched call for the whole batch)."""
    pairs = [(text, examples[k].target.span_text(i, j))
             for k, texts, candidates in plans for text in texts for i, j in candidates]
    values = iter(symmetric_scores(scorer, pairs) if pairs else [])
    return [[[next(values) for _ in candidates] for _ in texts] for _, texts, candidates in plans]


def _overlaps(span: tuple[int, int], taken: Sequence[tuple[int, int]]) -> bool:
    return any(span[0] < b and a < span[1] for a, b in taken)


def _take(options: list[tuple[float, int, list[tuple[int, int]]]], taken: list[tuple[int, int]]):
    """The best option ``(score, kind, spans)`` whose spans are all free, or ``None``."""
    for option in options:
        if not any(_overlaps(span, taken) for span in option[2]):
            return option
    return None


def project_rerank(examples: Sequence[Any], options: Any, scorer: TranslationScorer | None = None
                   ) -> list[ProjectionResult]:
    """Rerank candidate spans of each example with the symmetric translation score (module docstring).

    Args:
        examples: :class:`~crop_hf.projection.methods.ProjectionExample` items with ``target``,
            ``source_tokens``, ``source_spans`` (and optionally ``alignment``, ``entities``: more candidates).
        options: a :class:`~crop_hf.projection.options.RerankOptions`.
        scorer: a :class:`~crop_hf.projection.scoring.TranslationScorer` over a plain multilingual model,
            source → target.
    """
    require_scorer(scorer, "rerank")
    return _project(examples, options, scorer, hybrid=False)


def project_hybrid_rerank(examples: Sequence[Any], options: Any, scorer: TranslationScorer | None = None
                          ) -> list[ProjectionResult]:
    """Hybrid projection, whose spans the model replaces only when it prefers another by ``options.margin``.

    ``examples`` carry their word ``alignment`` (hybrid's); ``options`` is a
    :class:`~crop_hf.projection.options.HybridRerankOptions`.
    """
    require_scorer(scorer, "hybrid_rerank")
    return _project(examples, options, scorer, hybrid=True)


def _project(examples: Sequence[Any], options: Any, scorer: TranslationScorer, *, hybrid: bool) -> list[ProjectionResult]:
    if options.max_span_words < 1:
        raise ValueError(f"max_span_words must be at least 1, got {options.max_span_words}")
    directions(scorer)  # a missing direction is an error before any work
    results: list[ProjectionResult] = []
    for begin in range(0, len(examples), scorer.sentences_per_batch):
        results += _rerank_batch(examples[begin:begin + scorer.sentences_per_batch], begin, options, scorer, hybrid)
    return results


def _rerank_batch(examples: Sequence[Any], offset: int, options: Any, scorer: TranslationScorer,
                  hybrid: bool) -> list[ProjectionResult]:
    method = "hybrid_rerank" if hybrid else "rerank"
    sources, hybrids, plans = [], [], []
    for k, example in enumerate(examples):
        spans, texts = _source(example, method, offset + k)
        first = None
        if hybrid:
            if example.alignment is None:
                raise ValueError(f"sentence {offset + k}: hybrid_rerank needs an alignment (see align_missing)")
            first = project_hybrid(example.source_tokens, spans, example.target, example.alignment,
                                   entities=example.entities, **options.hybrid_arguments())
        extra = hybrid or options.candidates == "all"
        candidates = _candidates(example, spans, options.max_span_words, extra, first) if example.target.tokens else []
        sources.append((spans, texts))
        hybrids.append(first)
        plans.append((k, texts if candidates else [], candidates))
    scores = _score_batch(scorer, examples, plans)

    results = []
    for (k, _, candidates), (spans, texts), first, table in zip(plans, sources, hybrids, scores, strict=True):
        example = examples[k]
        if not example.target.tokens and spans:
            statuses = [EntityStatus(text, span.label, EMPTY_TARGET) for text, span in zip(texts, spans, strict=True)]
            results.append(ProjectionResult.build(example.target, [], statuses, method,
                                                  drop_incomplete=options.drop_incomplete, reason=EMPTY_TARGET))
            continue
        choices = {}  # entity -> its options, best first: (score that ranks it, 1 for hybrid's, spans, score)
        for e in range(len(spans)):
            ranked = [(table[e][c], 0, [span], table[e][c]) for c, span in enumerate(candidates)]
            if first is not None:
                pieces = [(p.token_start, p.token_end) for p in first.entities if p.source == e]
                if pieces:
                    own = max(table[e][candidates.index(piece)] for piece in pieces)
                    ranked.append((own + options.margin, 1, pieces, own))
            ranked.sort(key=lambda option: (-option[0], -option[1], option[2]))
            choices[e] = ranked
        taken: list[tuple[int, int]] = []
        chosen: dict[int, tuple] = {}
        for e, ranked in choices.items():  # hybrid's spans the model does not beat by the margin go first
            if ranked and ranked[0][1] == 1:
                chosen[e] = ranked[0]
                taken += ranked[0][2]
        status: dict[int, str] = {}
        for e, ranked in choices.items():
            if e in chosen:
                continue
            option = _take(ranked, taken)
            if option is None:
                status[e] = CONFLICT
            elif option[1] == 0 and option[3] < options.min_score:
                status[e] = BELOW_THRESHOLD
            else:
                chosen[e] = option
                taken += option[2]
        entities = []
        for e, (_, kind, pieces, score) in chosen.items():
            if kind == 1:
                status[e] = first.statuses[e].status
                entities += [p._replace(score=round(float(score), 2)) for p in first.entities if p.source == e]
            else:
                status[e] = "projected"
                entities += [ProjectedEntity.over(example.target, i, j, spans[e].label, e, "rerank", score)
                             for i, j in pieces]
        statuses = [EntityStatus(text, span.label, status[e]) for e, (text, span) in enumerate(zip(texts, spans,
                                                                                                  strict=True))]
        results.append(ProjectionResult.build(example.target, entities, statuses, method,
                                              drop_incomplete=options.drop_incomplete))
    return results
