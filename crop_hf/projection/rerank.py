"""Reranking projection: candidate target spans scored by a plain translation model (T-Projection's score).

No markers and no fine-tuning: any multilingual seq2seq checkpoint a user already has (M2M100,
NLLB, mBART-50) scores how well a candidate target span ``c`` translates a source entity ``e``
with the symmetric, length-normalised score of T-Projection (García-Ferrero et al., 2023):

    s(e, c) = ½ [ P(e | c) / P(e | e)  +  P(c | e) / P(c | c) ]

where ``P(y | x)`` is the per-token geometric-mean probability of ``y`` teacher-forced on ``x``
(:meth:`~crop_hf.translation.scoring.TranslationScorer.mean_log_probs`). ``P(c | e)`` is the
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

**shortlist** (``rerank``: default none; ``hybrid_rerank``: default 4): ``P(e | c)`` decodes the entity
once per candidate, over half of the work. With ``shortlist=k`` it is computed only for each entity's
``k`` n-grams that score best on the other half, ``P(c | e) / P(c | c)`` (read from shared rows, cheap),
and for every span hybrid or fuzzy proposes; the other n-grams are not taken. It is approximate: the
pair that scores best in full may fall outside the shortlist. On the dev parts of
``benchmarks/bench_model_projection.py --parts shortlist``, 4 decoded 0.61x the tokens of none on
Multi30k val; ``hybrid_rerank``, whose spans are always scored, lost nothing (Multi30k val and
Europarl-NER dev), but ``rerank`` over n-grams alone (no alignment, no translated entities) lost 3
points of slot accuracy (0.777 → 0.747), so only ``hybrid_rerank`` shortlists by default.

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
from collections.abc import Hashable, Sequence
from typing import Any

from crop_hf.labels import Span
from crop_hf.projection.fuzzy import project_fuzzy
from crop_hf.projection.hybrid import project_hybrid
from crop_hf.projection.options import HybridRerankOptions, RerankOptions
from crop_hf.projection.result import EntityStatus, ProjectedEntity, ProjectionResult
from crop_hf.projection.target import TargetSentence, is_punctuation
from crop_hf.translation.scoring import TranslationScorer, require_scorer

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


def check_rerank(options: RerankOptions | HybridRerankOptions, scorer: TranslationScorer) -> None:
    """Reranking's check of a scorer before any work: the model must have every direction the score reads."""
    directions(scorer)


def symmetric_scores(scorer: TranslationScorer, pairs: Sequence[tuple[str, str]], *, shortlist: int | None = None,
                     groups: Sequence[Hashable] | None = None, always: Sequence[bool] | None = None
                     ) -> list[float | None]:
    """T-Projection's ``s(e, c)`` of each ``(source entity text, target candidate text)`` pair (module docstring).

    Each distinct pair, entity and candidate is scored once, each text encoded once; all of them are batched.

    ``shortlist=k`` computes the reverse half ``P(e | c) / P(e | e)`` (the costly one: the entity is decoded once
    per candidate) only for the ``k`` pairs of each group that score highest on the other half,
    ``P(c | e) / P(c | c)``, and for the pairs marked in ``always``; the other pairs get ``None``. ``groups[i]``
    names pair ``i``'s group (any hashable; default: its entity text).
    """
    forward, reverse, source_copy, target_copy = directions(scorer)
    if shortlist is not None:  # bad arguments are an error before any model pass
        groups, always = _shortlist_arguments(pairs, shortlist, groups, always)
    unique = list(dict.fromkeys(pairs))
    entities = list(dict.fromkeys(e for e, _ in unique))
    candidates = list(dict.fromkeys(c for _, c in unique))
    # each language's texts are encoded once: the two directions from a language read the same encoder outputs
    from_source, from_target = forward.encode_sources(entities), reverse.encode_sources(candidates)
    c_given_e = forward.mean_log_probs([e for e, _ in unique], [c for _, c in unique], encoded=from_source)
    c_given_c = dict(zip(candidates, target_copy.mean_log_probs(candidates, candidates, encoded=from_target),
                         strict=True))
    target_half = {pair: math.exp(ce - c_given_c[pair[1]]) for pair, ce in zip(unique, c_given_e, strict=True)}
    wanted = unique if shortlist is None else _shortlist(pairs, target_half, shortlist, groups, always)
    e_given_c = reverse.mean_log_probs([c for _, c in wanted], [e for e, _ in wanted], encoded=from_target)
    # every entity keeps at least one pair (each group keeps its best), so each needs its copy score
    e_given_e = dict(zip(entities, source_copy.mean_log_probs(entities, entities, encoded=from_source), strict=True))
    score = {pair: 0.5 * (math.exp(ec - e_given_e[pair[0]]) + target_half[pair])
             for pair, ec in zip(wanted, e_given_c, strict=True)}
    return [score.get(pair) for pair in pairs]


def _shortlist_arguments(pairs: Sequence[tuple[str, str]], size: int, groups: Sequence[Hashable] | None,
                         always: Sequence[bool] | None) -> tuple[Sequence[Hashable], Sequence[bool]]:
    """``groups`` and ``always`` with their defaults filled in, after checking them and ``size``."""
    if size < 1:
        raise ValueError(f"shortlist must be at least 1, got {size}")
    groups = groups if groups is not None else [e for e, _ in pairs]
    always = always if always is not None else [False] * len(pairs)
    if len(groups) != len(pairs) or len(always) != len(pairs):
        raise ValueError(f"{len(groups)} groups and {len(always)} always flags for {len(pairs)} pairs")
    return groups, always


def _shortlist(pairs: Sequence[tuple[str, str]], target_half: dict, size: int, groups: Sequence[Hashable],
               always: Sequence[bool]) -> list[tuple[str, str]]:
    """The distinct pairs whose reverse half is computed: each group's ``size`` best by ``target_half``, and ``always``'s."""
    members: dict[Hashable, list[int]] = {}
    for index, group in enumerate(groups):
        members.setdefault(group, []).append(index)
    chosen = {index for index, flag in enumerate(always) if flag}
    for indices in members.values():
        chosen.update(sorted(indices, key=lambda index: -target_half[pairs[index]])[:size])
    return list(dict.fromkeys(pairs[index] for index in sorted(chosen)))


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
                hybrid: ProjectionResult | None = None) -> tuple[list[tuple[int, int]], set[tuple[int, int]]]:
    """The candidate spans of an example: its n-grams and the spans other methods propose (the second item)."""
    proposed: list[tuple[int, int]] = []
    if extra:
        if hybrid is None and example.alignment is not None:
            hybrid = project_hybrid(example.source_tokens, spans, example.target, example.alignment)
        if example.entities is not None:
            proposed += [(e.token_start, e.token_end) for e in project_fuzzy(example.target, example.entities).entities]
    if hybrid is not None:
        proposed += [(e.token_start, e.token_end) for e in hybrid.entities]
    return list(dict.fromkeys(ngram_spans(example.target, max_span_words) + proposed)), set(proposed)


def _score_batch(scorer: TranslationScorer, examples: Sequence[Any], plans: list, shortlist: int | None
                 ) -> list[list[list[float | None]]]:
    """Per planned example, per entity, the score of each candidate (one batched call for the whole batch).

    A proposed candidate is always scored in full; with ``shortlist``, an n-gram only when it is among its entity's
    ``shortlist`` best on the target half (``None`` otherwise)."""
    pairs, groups, always = [], [], []
    for k, texts, candidates, proposed in plans:
        for e, text in enumerate(texts):
            for i, j in candidates:
                pairs.append((text, examples[k].target.span_text(i, j)))
                groups.append((k, e))
                always.append((i, j) in proposed)
    values = iter(symmetric_scores(scorer, pairs, shortlist=shortlist, groups=groups, always=always) if pairs else [])
    return [[[next(values) for _ in candidates] for _ in texts] for _, texts, candidates, _ in plans]


def _overlaps(span: tuple[int, int], taken: Sequence[tuple[int, int]]) -> bool:
    return any(span[0] < b and a < span[1] for a, b in taken)


def _take(options: list[tuple[float, int, list[tuple[int, int]]]], taken: list[tuple[int, int]]):
    """The best option ``(score, kind, spans)`` whose spans are all free, or ``None``."""
    for option in options:
        if not any(_overlaps(span, taken) for span in option[2]):
            return option
    return None


def project_rerank(examples: Sequence[Any], options: RerankOptions, scorer: TranslationScorer | None = None
                   ) -> list[ProjectionResult]:
    """Rerank candidate spans of each example with the symmetric translation score (module docstring).

    Args:
        examples: :class:`~crop_hf.projection.methods.ProjectionExample` items with ``target``,
            ``source_tokens``, ``source_spans`` (and optionally ``alignment``, ``entities``: more candidates).
        options: a :class:`~crop_hf.projection.options.RerankOptions`.
        scorer: a :class:`~crop_hf.translation.scoring.TranslationScorer` over a plain multilingual model,
            source → target.
    """
    require_scorer(scorer, "rerank")
    return _project(examples, options, scorer, hybrid=False)


def project_hybrid_rerank(examples: Sequence[Any], options: HybridRerankOptions,
                          scorer: TranslationScorer | None = None) -> list[ProjectionResult]:
    """Hybrid projection, whose spans the model replaces only when it prefers another by ``options.margin``.

    ``examples`` carry their word ``alignment`` (hybrid's); ``options`` is a
    :class:`~crop_hf.projection.options.HybridRerankOptions`.
    """
    require_scorer(scorer, "hybrid_rerank")
    return _project(examples, options, scorer, hybrid=True)


def _project(examples: Sequence[Any], options: RerankOptions | HybridRerankOptions, scorer: TranslationScorer, *,
             hybrid: bool) -> list[ProjectionResult]:
    # the options checked their own values when they were built (RerankOptions.__post_init__)
    directions(scorer)  # a missing direction is an error before any work
    results: list[ProjectionResult] = []
    for begin in range(0, len(examples), scorer.sentences_per_batch):
        results += _rerank_batch(examples[begin:begin + scorer.sentences_per_batch], begin, options, scorer, hybrid)
    return results


def _rerank_batch(examples: Sequence[Any], offset: int, options: RerankOptions | HybridRerankOptions,
                  scorer: TranslationScorer, hybrid: bool) -> list[ProjectionResult]:
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
        candidates, proposed = (_candidates(example, spans, options.max_span_words, extra, first)
                                if example.target.tokens else ([], set()))
        sources.append((spans, texts))
        hybrids.append(first)
        plans.append((k, texts if candidates else [], candidates, proposed))
    scores = _score_batch(scorer, examples, plans, options.shortlist)

    results = []
    for (k, _, candidates, _), (spans, texts), first, table in zip(plans, sources, hybrids, scores, strict=True):
        example = examples[k]
        if not example.target.tokens and spans:
            statuses = [EntityStatus(text, span.label, EMPTY_TARGET) for text, span in zip(texts, spans, strict=True)]
            results.append(ProjectionResult.build(example.target, [], statuses, method,
                                                  drop_incomplete=options.drop_incomplete, reason=EMPTY_TARGET))
            continue
        choices = {}  # entity -> its options, best first: (score that ranks it, 1 for hybrid's, spans, score)
        for e in range(len(spans)):
            ranked = [(table[e][c], 0, [span], table[e][c]) for c, span in enumerate(candidates)
                      if table[e][c] is not None]
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
