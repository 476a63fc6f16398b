"""Insertion projection: a marker-trained translation model places each span's markers in a fixed target sentence.

CroP reads a span's target words from between the markers of a *labeled translation*, so what it
finds depends on the translation the model produced. Insertion keeps the target fixed (a human
translation, the raw sentence of synthesis, any MT output) and asks the marker-trained model
where the markers go (CODEC, Le et al. 2024): for a source span, every target span ``[i, j)`` of
at most ``max_span_words`` words is a candidate, and the candidate whose **marked target** is most
probable under the model, teacher-forced on the source marked around that span, wins:

    score(i, j) = log P( w_0 … w_{i-1} M w_i … w_{j-1} M w_j … w_n </s>  |  marked source )

Markers go only at word boundaries of the target's own tokenization
(:func:`~crop_hf.projection.tokenize_target`: words, or characters for Chinese, Japanese, Thai,
...), written as marker MT training writes them (whitespace around each marker), and the marked
text is tokenized by the model's own tokenizer: what is scored is exactly what the model was trained
to produce. ``source_markers="one"`` (default) marks only the span being placed, as slot 0 (the
reference search: one slot at a time); ``"all"`` marks every span of the sentence, numbered in
sentence order, as labeled translation does.

**The search is exact.** Scoring every candidate in full (``exhaustive=True``) costs one decoder
row per candidate. The default search returns the same span, pruning where the model allows:

* the marked source is encoded once and shared by every pass for that slot; passes of all slots
  and sentences of a batch go through the decoder together;
* the log-probability of a token depends only on the tokens before it, so one teacher-forced pass
  over the unmarked target gives the exact log-probability of every candidate's prefix up to its
  opening marker, and (gathered) of that marker: the prefix's log-probability;
* the unmarked target's decoder states are kept (:class:`~crop_hf.translation.scoring.DecoderPrefix`),
  and every candidate's row, the exhaustive search's too, resumes from them at its opening marker:
  the words before a span are decoded once per slot, not once per candidate;
* log-probabilities are never positive, so a prefix's log-probability **bounds** every sequence
  that extends it. The search is best-first: candidates are taken in order of their bound, ``width``
  per slot per batched round (doubling each round once one is fully scored); it stops when the
  best fully scored candidate beats every other candidate's bound. A pruned candidate is therefore
  strictly worse than the one returned (by more than a float tolerance of 1e-4 in float32), and ties
  go to the first candidate (smallest ``i``, then ``j``) as in the exhaustive enumeration.
  ``tests/test_projection_model_scored.py`` checks search = exhaustive enumeration on random
  sentences, with random models and with probabilities the test sets.

How much the bounds prune depends on the model. They rule out an opening position the model finds
improbable, so a model that is sure where a span begins saves most rows; on Multi30k val, with a
small caption model, the search decodes 6.5% fewer tokens than the exhaustive one (the same spans),
and under random weights it decodes the same rows. (A probe per opening position, bounding each
span's closing marker, was tried and removed: it cost 5 to 24% more tokens than it saved.)

**A shorter objective, for speed** (``tail_tokens``; default none, the exact objective above). The
tokens after a span's closing marker make up most of what the search decodes, and no exact search
can share them: they depend on where both markers are. With ``tail_tokens=k`` a candidate's marked
target is decoded only ``k`` tokens into the ending it shares with the unmarked target; the rest of
that ending is scored as in the unmarked target (decoded once per slot). The search is exact for
that objective (exhaustive enumeration with the same ``tail_tokens`` agrees), but the objective is
not the model's probability of the marked target: the unmarked target's tail is scored where the
model still expects markers. On Multi30k val (a small caption model) ``tail_tokens=2`` decodes 2.0x
fewer tokens and loses 6.8 points of slot accuracy (1.3 with ``nbest=10``); the benchmark page
has every window.

**One sentence's spans never overlap.** Each slot's best span carries its **score**, the model's
geometric-mean probability of the two markers' tokens in that position (0-1, comparable across
slots and sentences). Slots whose best spans overlap are resolved by score: in order of score each
slot takes its span if it is free; a slot whose span was taken searches again among the free spans
(``conflict`` when none is left). A span scoring under ``min_score`` is left out with status
``below_threshold``.

**Reranking by the reverse direction** (CODEC's last step). A small model may find a wrong
placement most probable, often a word it cannot translate. With ``nbest`` > 1 the search returns
each slot's ``nbest`` most probable placements, exactly as it returns the best one, and the slot
takes the placement of highest

    score(i, j) + reverse_weight x mean log P(entity words | target words i..j)

read from the same model's target→source direction (one decoder pass per placement, batched). The
model must translate both ways (``bench_marker_mt.py --both_directions``); one that cannot is an
error before any work.

Statuses: ``projected`` (placed; the entity's ``match`` is ``"insertion"``), ``below_threshold``,
``conflict``, ``empty_target`` (the target has no tokens) and ``too_many_spans``
(``source_markers="all"`` with more spans than the model has marker tokens). A model whose
vocabulary lacks the marker style's tokens is an error naming the model and the style.

>>> candidate_spans(3, 2)
[(0, 1), (0, 2), (1, 2), (1, 3), (2, 3)]
>>> mark_target("Ich wohne in Göteborg.", [(0, 3), (4, 9), (10, 12), (13, 21), (21, 22)], 3, 4, "__SLOT0__", "__SLOT0__")
'Ich wohne in __SLOT0__ Göteborg __SLOT0__ .'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from crop_hf.labels import Span
from crop_hf.markers import MarkerStyle, get_marker_style
from crop_hf.projection.options import InsertionOptions
from crop_hf.projection.result import EntityStatus, ProjectedEntity, ProjectionResult
from crop_hf.projection.target import TargetSentence, uses_characters
from crop_hf.translation.scoring import TranslationScorer, require_scorer, shared_prefix

__all__ = ["candidate_spans", "check_insertion", "check_marker_tokens", "mark_target", "project_insertion"]

#: Statuses of spans insertion could not place (each counted where statuses are counted).
BELOW_THRESHOLD, CONFLICT, EMPTY_TARGET, TOO_MANY_SPANS = "below_threshold", "conflict", "empty_target", "too_many_spans"


def candidate_spans(length: int, max_span_words: int) -> list[tuple[int, int]]:
    """Every span ``[i, j)`` of at most ``max_span_words`` of ``length`` tokens, by ``i`` then ``j``."""
    return [(i, j) for i in range(length) for j in range(i + 1, min(length, i + max_span_words) + 1)]


def target_text(sentence: TargetSentence) -> tuple[str, list[tuple[int, int]]]:
    """The sentence's text and its tokens' character offsets (tokens given without text are joined)."""
    if sentence.text is not None and sentence.offsets is not None:
        return sentence.text, list(sentence.offsets)
    tokens = sentence.tokens
    joiner = "" if sentence.tokenization == "characters" or uses_characters(" ".join(tokens)) else " "
    offsets, position = [], 0
    for token in tokens:
        offsets.append((position, position + len(token)))
        position += len(token) + len(joiner)
    return joiner.join(tokens), offsets


def mark_target(text: str, offsets: Sequence[tuple[int, int]], start: int, end: int, opening: str,
                closing: str) -> str:
    """``text`` with ``opening`` before token ``start`` and ``closing`` after token ``end - 1``.

    Written as marker MT training writes marked targets: whitespace around each marker, runs of
    whitespace made single.
    """
    a, b = offsets[start][0], offsets[end - 1][1]
    return " ".join(f"{text[:a]} {opening} {text[a:b]} {closing} {text[b:]}".split())


def check_marker_tokens(scorer: TranslationScorer, style: MarkerStyle) -> int:
    """How many slots the model's vocabulary has marker tokens for (0 for an untyped style that has them all).

    A model without the style's marker tokens is a ``ValueError`` naming the model and the style.
    """
    vocabulary = scorer.marker_vocabulary(style)
    if style.typed:
        slots = 0
        while slots in vocabulary.single_token_slots:
            slots += 1
        if slots:
            return slots
        opening, _ = style.markers(0)
    else:
        events = {event for signature in vocabulary.signatures.values() for event in signature}
        if ("open",) in events and ("close",) in events:
            return 0
        opening = "".join(style.markers(0))
    raise ValueError(
        f"insertion projection needs a model trained with markers of the {style.name!r} marker style, but "
        f"{scorer.name} has no token for {opening!r}: fine-tune one on marked parallel text (crop-hf "
        "mark-parallel, then crop-hf train-translation), or name the marker_style it was trained with")


def check_insertion(options: InsertionOptions, scorer: TranslationScorer) -> None:
    """Insertion's check of a scorer before any work: the model must have ``options.marker_style``'s marker tokens,
    and the target→source direction when ``options.nbest`` > 1."""
    check_marker_tokens(scorer, get_marker_style(options.marker_style))
    _check_reverse(options, scorer)


def _check_reverse(options: InsertionOptions, scorer: TranslationScorer) -> None:
    if options.nbest > 1:
        try:
            scorer.reverse()
        except ValueError as error:
            raise ValueError(f"insertion with nbest={options.nbest} reranks placements by the reverse direction: "
                             f"{error}") from None


def _reverse_scores(slots: Sequence[_Slot], examples: Sequence[Any], scorer: TranslationScorer) -> None:
    """Each slot's ``nbest`` placements not yet scored the other way: mean log P(entity | span), batched."""
    asked = []
    for slot in slots:
        example = examples[slot.example]
        text, offsets = target_text(example.target)
        span = Span(*example.source_spans[slot.span])
        entity = " ".join(example.source_tokens[span.start:span.end])
        for c in slot.ranked()[:slot.nbest]:
            if c not in slot.reverse:
                i, j = slot.candidates[c]
                asked.append((slot, c, text[offsets[i][0]:offsets[j - 1][1]], entity))
    if asked:
        values = scorer.reverse().mean_log_probs([item[2] for item in asked], [item[3] for item in asked])
        for (slot, c, _, _), value in zip(asked, values, strict=True):
            slot.reverse[c] = value


@dataclass
class _Slot:
    """One source span to place: its candidates, their token sequences, and what the search knows of them."""

    example: int
    span: int
    source: int  # index into the encoded sources
    candidates: list[tuple[int, int]]
    sequences: list[tuple[int, ...]]
    plain: tuple[int, ...]
    marker_ids: frozenset[int]
    bound: list[float] = field(default_factory=list)
    exact: list[float | None] = field(default_factory=list)
    score: list[float | None] = field(default_factory=list)
    allowed: list[bool] = field(default_factory=list)
    ran: set = field(default_factory=set)
    rounds: int = 0
    prefix: Any = None  # the unmarked target's decoder states, which every other row of the slot resumes from
    nbest: int = 1  # the search ends once this many are fully scored and beat every other bound
    reverse: dict = field(default_factory=dict)  # candidate -> mean log P(entity | its span), when reranking
    tails: list[int] = field(default_factory=list)  # per candidate: final tokens read from the unmarked target
    tail_value: list[float] = field(default_factory=list)  # their log-probability there, once it is scored

    def __post_init__(self) -> None:
        count = len(self.candidates)
        self.bound, self.exact, self.score, self.allowed = [0.0] * count, [None] * count, [None] * count, [True] * count
        self.tails = self.tails or [0] * count
        self.tail_value = [0.0] * count

    def read_tails(self, log_probs: Sequence[float]) -> None:
        """Each candidate's tail value: the unmarked target's log-probability of its last ``tails[c]`` tokens."""
        suffix = [0.0]
        for value in reversed(log_probs):
            suffix.append(suffix[-1] + value)
        self.tail_value = [suffix[tail] for tail in self.tails]

    def ranked(self) -> list[int]:
        """The allowed, fully scored candidates, highest score first (ties: the first candidate)."""
        return sorted((c for c, value in enumerate(self.exact) if value is not None and self.allowed[c]),
                      key=lambda c: (-self.exact[c], c))

    def best(self) -> int | None:
        """The allowed, fully scored candidate of highest score (ties: the first)."""
        ranked = self.ranked()
        return ranked[0] if ranked else None

    def live(self, slack: float) -> list[int]:
        """Allowed candidates not fully scored whose bound does not rule them out of the ``nbest`` best."""
        ranked = self.ranked()
        floor = -math.inf if len(ranked) < self.nbest else self.exact[ranked[self.nbest - 1]] - slack
        return [c for c, value in enumerate(self.exact)
                if value is None and self.allowed[c] and self.bound[c] >= floor]

    def choice(self, weight: float) -> int | None:
        """The best candidate; with reverse scores, the best of the ``nbest`` by log-probability + weight x reverse."""
        top = self.ranked()[:self.nbest]
        if len(top) < 2:
            return top[0] if top else None
        return max(top, key=lambda c: (self.exact[c] + weight * self.reverse[c], -c))

    def next_probe(self, c: int) -> tuple:
        """What to run next for candidate ``c``: the unmarked target (once per slot), then its own full pass."""
        return ("plain",) if ("plain",) not in self.ran else ("full", c)

    def probe(self, key: tuple) -> tuple[tuple[int, ...], list[int]]:
        """The probe's token sequence and the candidates it tells something about."""
        if key[0] == "plain":
            return self.plain, [c for c, value in enumerate(self.exact) if value is None]
        return self.sequences[key[1]], [key[1]]


def _search(slots: Sequence[_Slot], scorer: TranslationScorer, encoded: Any, *, width: int, exhaustive: bool,
            slack: float) -> None:
    """Run batched rounds until every slot's best allowed candidate is fully scored and beats every other bound."""
    active = list(slots)
    while active:
        requests: dict[tuple[int, tuple], _Slot] = {}
        still = []
        for slot in active:
            live = slot.live(slack)
            if not live:
                continue
            still.append(slot)
            # once a candidate is fully scored, the number taken doubles each round: few rounds where the
            # bounds prune little, while the best candidates go first (and prune) where they prune much
            taken = width << min(slot.rounds, 16)
            slot.rounds += slot.best() is not None
            chosen = live if exhaustive else sorted(live, key=lambda c: (-slot.bound[c], c))[:taken]
            for c in chosen:
                requests.setdefault((id(slot), slot.next_probe(c)), slot)
        if not requests:
            return
        rows, gathers, plans, resume = [], [], [], []
        for (_, key), slot in requests.items():
            sequence, informed = slot.probe(key)
            plan, gather = [], []
            for c in informed:
                candidate = slot.sequences[c]
                shared = shared_prefix(sequence, candidate)
                asks = shared < len(sequence) and shared < len(candidate)
                plan.append((c, shared, len(gather) if asks else None))
                if asks:
                    gather.append((shared, candidate[shared]))
            # the unmarked target is read only up to where its candidates leave it (to its end where they read
            # their tails from it): decode no further
            whole = key[0] == "full" or any(slot.tails)
            cut = len(sequence) if whole else max(shared + 1 for _, shared, _ in plan)
            rows.append((slot.source, sequence[:cut]))
            gathers.append(gather)
            resume.append(slot.prefix if key != ("plain",) else None)
            plans.append((slot, key, sequence, plan))
        keep = [key == ("plain",) for _, key, _, _ in plans]
        scored = _score(scorer, encoded, rows, gathers, keep, resume)
        for (slot, key, sequence, plan), scores in zip(plans, scored, strict=True):
            slot.ran.add(key)
            if key == ("plain",):
                slot.prefix = scores.prefix
                slot.read_tails(scores.log_probs[scores.skip:])
            prefix = [0.0]
            for t, value in enumerate(scores.log_probs):
                prefix.append(prefix[-1] + (value if t >= scores.skip else 0.0))
            for c, shared, asked in plan:
                if shared == len(sequence) == len(slot.sequences[c]):
                    slot.exact[c] = slot.bound[c] = prefix[-1] + slot.tail_value[c]
                    slot.score[c] = _marker_score(scores.log_probs, sequence, slot.marker_ids, scores.skip)
                    continue
                bound = prefix[shared] + (scores.gathered[asked] if asked is not None and shared >= scores.skip else 0.0)
                slot.bound[c] = min(slot.bound[c], bound + slot.tail_value[c])
        active = still


def _score(scorer: TranslationScorer, encoded: Any, rows: list, gathers: list, keep: list[bool],
           resume: list) -> list:
    """Score the unmarked-target probes keeping their decoder states, and every other row resuming from its slot's."""
    kept = [r for r, value in enumerate(keep) if value]
    rest = [r for r, value in enumerate(keep) if not value]
    out: list = [None] * len(rows)
    for members, options in ((kept, {"keep": True}), (rest, {"resume": [resume[r] for r in rest]})):
        if members:
            scored = scorer.score_rows(encoded, [rows[r] for r in members], [gathers[r] for r in members], **options)
            for r, scores in zip(members, scored, strict=True):
                out[r] = scores
    return out


def _tail(sequence: Sequence[int], plain: Sequence[int], tail_tokens: int | None) -> int:
    """How many final tokens of a candidate's marked target are read from the unmarked target: those of the
    two sequences' common ending past the first ``tail_tokens`` (none: 0, the whole marked target is scored)."""
    if tail_tokens is None:
        return 0
    return max(0, shared_prefix(sequence[::-1], plain[::-1]) - tail_tokens)


def _marker_score(log_probs: Sequence[float], sequence: Sequence[int], marker_ids: frozenset[int], skip: int) -> float:
    """The geometric-mean probability of the sequence's marker tokens (of all its tokens, if it has none)."""
    values = [value for value, token in zip(log_probs, sequence, strict=True) if token in marker_ids]
    values = values or list(log_probs[skip:])
    return math.exp(sum(values) / len(values))


def project_insertion(examples: Sequence[Any], options: InsertionOptions, scorer: TranslationScorer | None = None
                      ) -> list[ProjectionResult]:
    """Place each source span of each example on its fixed target with a marker-trained model (module docstring).

    Args:
        examples: :class:`~crop_hf.projection.methods.ProjectionExample` items with ``target``,
            ``source_tokens`` and ``source_spans``.
        options: an :class:`~crop_hf.projection.options.InsertionOptions` (its values checked when it was built).
        scorer: a :class:`~crop_hf.translation.scoring.TranslationScorer` over the marker-trained model,
            in the source → target direction.

    Returns one :class:`~crop_hf.projection.ProjectionResult` per example, in order; every placed
    entity carries its score. Raises ``ValueError`` for a model without the style's marker tokens,
    an example without source words, an invalid source span, or a source or target that already
    contains a marker.
    """
    require_scorer(scorer, "insertion")
    style = get_marker_style(options.marker_style)
    available = check_marker_tokens(scorer, style)
    _check_reverse(options, scorer)
    results: list[ProjectionResult] = []
    for begin in range(0, len(examples), scorer.sentences_per_batch):
        results += _project_batch(examples[begin:begin + scorer.sentences_per_batch], begin, options, style,
                                  available, scorer)
    return results


def _project_batch(examples: Sequence[Any], offset: int, options: InsertionOptions, style: MarkerStyle,
                   available: int, scorer: TranslationScorer) -> list[ProjectionResult]:
    marker_ids = frozenset(scorer.marker_vocabulary(style).marker_ids)
    sources: dict[str, int] = {}
    texts: dict[str, int] = {}
    planned: list[tuple[int, int, str, dict]] = []  # (example, span, source text, target texts by key)
    done: dict[int, tuple[list[str], str | None]] = {}  # example -> statuses, sentence reason
    for k, example in enumerate(examples):
        spans = [Span(*span) for span in example.source_spans]
        if example.source_tokens is None:
            raise ValueError(f"sentence {offset + k}: insertion projection needs source_tokens and source_spans")
        if not spans:
            done[k] = ([], None)
            continue
        if not example.target.tokens:
            done[k] = ([EMPTY_TARGET] * len(spans), EMPTY_TARGET)
            continue
        if options.source_markers == "all" and style.typed and len(spans) > available:
            done[k] = ([TOO_MANY_SPANS] * len(spans), TOO_MANY_SPANS)
            continue
        text, offsets = target_text(example.target)
        if style.find(text):
            raise ValueError(f"sentence {offset + k}: the target already contains a marker of the {style.name!r} "
                             f"style: {text!r}")
        order = sorted(range(len(spans)), key=lambda s: (spans[s].start, spans[s].end))
        try:
            everything = style.mark_tokens(example.source_tokens, spans).text if options.source_markers == "all" else None
            marked = [everything or style.mark_tokens(example.source_tokens, [span]).text for span in spans]
        except ValueError as error:
            raise ValueError(f"sentence {offset + k}: {error}") from None
        candidates = candidate_spans(len(example.target.tokens), options.max_span_words)
        for s in range(len(spans)):
            opening, closing = style.markers(order.index(s) if options.source_markers == "all" else 0)
            wanted = {("plain",): " ".join(text.split())}
            wanted.update({("full", c): mark_target(text, offsets, i, j, opening, closing)
                           for c, (i, j) in enumerate(candidates)})
            for value in wanted.values():
                texts.setdefault(value, len(texts))
            sources.setdefault(marked[s], len(sources))
            planned.append((k, s, marked[s], wanted))

    labels = scorer.encode_targets(list(texts))
    encoded = scorer.encode_sources(list(sources))
    slots = []
    for k, s, source, wanted in planned:
        ids = {key: tuple(labels[texts[value]]) for key, value in wanted.items()}
        candidates = candidate_spans(len(examples[k].target.tokens), options.max_span_words)
        plain = ids[("plain",)]
        full = [ids[("full", c)] for c in range(len(candidates))]
        tails = [_tail(sequence, plain, options.tail_tokens) for sequence in full]
        slots.append(_Slot(k, s, sources[source], candidates, [sequence[:len(sequence) - tail]
                                                              for sequence, tail in zip(full, tails, strict=True)],
                           plain, marker_ids, nbest=options.nbest, tails=tails))
    slack = scorer.tolerance

    placed: dict[int, list[tuple[int, int, int, float]]] = {k: [] for k in range(len(examples))}  # (i, j, span, score)
    status: dict[tuple[int, int], str] = {}
    pending = slots
    while pending:
        for slot in pending:  # a candidate overlapping a placed span is out
            taken = placed[slot.example]
            slot.allowed = [not any(i < b and a < j for a, b, _, _ in taken) for i, j in slot.candidates]
        _search(pending, scorer, encoded, width=options.width, exhaustive=options.exhaustive, slack=slack)
        if options.nbest > 1:
            _reverse_scores(pending, examples, scorer)
        ranked = []
        for slot in pending:
            best = slot.choice(options.reverse_weight)
            if best is None:
                status[(slot.example, slot.span)] = CONFLICT
            else:
                ranked.append((-slot.score[best], slot.example, slot.span, slot, best))
        pending = []
        for _, k, s, slot, best in sorted(ranked, key=lambda item: item[:3]):
            i, j = slot.candidates[best]
            if slot.score[best] < options.min_score:
                status[(k, s)] = BELOW_THRESHOLD
            elif any(i < b and a < j for a, b, _, _ in placed[k]):
                pending.append(slot)  # its span went to a slot of higher score: search again among the free ones
            else:
                placed[k].append((i, j, s, slot.score[best]))
                status[(k, s)] = "projected"

    results = []
    for k, example in enumerate(examples):
        spans = [Span(*span) for span in example.source_spans]
        texts_of = [" ".join(example.source_tokens[span.start:span.end]) if example.source_tokens else ""
                    for span in spans]
        if k in done:
            values, reason = done[k]
        else:
            values, reason = [status[(k, s)] for s in range(len(spans))], None
        entities = [ProjectedEntity.over(example.target, i, j, spans[s].label, s, "insertion", score)
                    for i, j, s, score in placed[k]]
        statuses = [EntityStatus(text, span.label, value) for text, span, value in zip(texts_of, spans, values,
                                                                                      strict=True)]
        results.append(ProjectionResult.build(example.target, entities, statuses, "insertion",
                                              drop_incomplete=options.drop_incomplete, reason=reason))
    return results
