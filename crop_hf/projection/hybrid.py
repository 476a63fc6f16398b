"""Hybrid projection: lexical matching where it can place a slot, word alignment where it cannot.

Lexical matching is precise but finds only the entities whose words reappear in the target
(names, and the English words of a code-switched rewrite); alignment finds them all but places
some wrongly. Hybrid projection takes the best of both, entity by entity:

1. **exact**: each entity's text (its source words, or its translation when ``entities`` are
   given) is looked for in the target as :func:`~crop_hf.projection.project_lexical` does
   (longest first, whole tokens, no overlaps);
2. **normalized**: the entities still missing are looked for again case-folded
   (``Normalizer(ignore_case=True)``), never touching a token the exact pass claimed;
3. **alignment**: the entities still missing are projected through the word alignment as
   :func:`~crop_hf.projection.project_alignment` does, with every token that lexical matching
   placed reserved (no link into it counts, no gap is filled across it), so alignment never
   overlaps what lexical matching found. Defaults chosen on Hinglish-TOP
   (``benchmarks/bench_projection_quality.py``): gaps of one word are filled (``fill_gaps=1``)
   and of several pieces only the one with the most links is kept (``pieces="largest"``);
   ``fill_gaps=0, pieces="split"`` is CSTOP's plain split rule.

Three options for **named entities in translated text**, off by default (chosen on Europarl-NER's
dev part and measured on both data sets in ``benchmarks/bench_projection_quality.py``):
``threshold=80`` adds fuzzy projection's similarity pass between the lexical passes and the
alignment (``Indonesien`` for ``Indonesia``, ``Millenium-Bug`` for ``Millennium bug``);
``trim_edges=True`` and ``one_word=True`` narrow what the alignment pass takes (rules 5 and 6 of
:func:`~crop_hf.projection.project_alignment`). Together they raise Europarl-NER en→de F1 by about
two points (dev 0.819 → 0.841, test 0.807 → 0.828, means of four eflomal runs) but lower
Hinglish-TOP slot F1 (its train rows, the dev data there: 0.884 → 0.831; slots are not names and
romanized Hindi words look like English ones to a similarity measure), so the defaults stay those
chosen on Hinglish-TOP. Name the entity setting wherever a method is named (pipeline, synthesis,
translate-and-align): ``method="hybrid?trim_edges=true&one_word=true&threshold=80"``.

For **Hindi and Hinglish targets**, ``postpositions="hi"`` (rule 9 of
:func:`~crop_hf.projection.project_alignment`: no slot starts with a postposition, a slot whose
English words start with a preposition takes the postpositions after it) also keeps the lexical
passes off target words that are all postpositions (English ``me`` is Hindi's ``me``, "in"). Chosen
on Hinglish-TOP's train rows; with eflomal's grow-diag-final links it scores 0.933-0.935 slot F1 on
validation against 0.91-0.92 for the defaults (``benchmarks/bench_projection_quality.py``).

Statuses: ``"found"`` for both lexical passes (the entity's ``match`` says ``"exact"`` or
``"normalized"``), ``"fuzzy"`` for the similarity pass, then the alignment statuses
(``"projected"``, ``"split"``, ``"unaligned"``, ...). Like alignment projection, incomplete sentences are kept by default (CSTOP).

>>> result = project_hybrid(["Pause", "my", "timer", "for", "Liz"], ["O", "O", "B-METHOD", "O", "B-NAME"],
...                         ["liz", "ke", "liye", "mera", "ghadi", "roko"], [(1, 3), (2, 4), (4, 0), (0, 5)])
>>> result.tags, [s.status for s in result.statuses]
(['B-NAME', 'O', 'O', 'O', 'B-METHOD', 'O'], ['projected', 'found'])
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import replace
from typing import Any, Literal

from crop_hf.data.readers.words import adposition_set
from crop_hf.labels import TagScheme
from crop_hf.projection.alignment import project_alignment, source_spans
from crop_hf.projection.fuzzy import fuzzy_pass
from crop_hf.projection.lexical import LexicalMatcher, PassState, TranslatedEntity, read_entities
from crop_hf.projection.result import EntityStatus, ProjectedEntity, ProjectionResult
from crop_hf.projection.target import Normalizer, TargetSentence, Tokenization, tokenize_target

__all__ = ["project_hybrid"]


def project_hybrid(
    source_tokens: Sequence[str],
    source_tags: Sequence,
    target: str | Sequence[str] | TargetSentence,
    alignment: Iterable[tuple[int, int]] | str,
    *,
    entities: Any = None,
    lang: str | None = None,
    tokenization: Tokenization = "auto",
    normalizer: Normalizer | None = None,
    fill_gaps: int = 1,
    pieces: Literal["split", "largest"] = "largest",
    trim_edges: bool = False,
    one_word: bool = False,
    capitalized_nouns: bool = False,
    function_words: str | Collection[str] | None = None,
    postpositions: str | Collection[str] | None = None,
    prepositions: str | Collection[str] = "en",
    threshold: float | None = None,
    scheme: TagScheme = "IOB2",
    drop_incomplete: bool = False,
) -> ProjectionResult:
    """Project source spans by lexical matching first and word alignment for the rest (see the module docstring).

    Args:
        source_tokens: the source words.
        source_tags: source tags in ``scheme``, or ``(start, end, label)`` spans.
        target: the target sentence, as text or tokens (tokenized like the alignment's target side).
        alignment: ``(source_word, target_word)`` pairs, or Pharaoh text.
        entities: the entities' target-language texts, one per source span in order (a
            labeled-translation output, its entity list, or ``(text, label)`` pairs); by default
            the source words themselves are looked for (right for code-switched rewrites and names).
        normalizer: the exact pass's comparison (the normalized pass adds case folding to it).
        fill_gaps: the alignment pass joins pieces separated by at most this many words.
        pieces: what the alignment pass keeps of a discontinuous slot: ``"largest"`` or ``"split"``.
        threshold: a ``fuzz.ratio`` threshold (0-100) for a similarity pass over what both lexical passes
            missed, before alignment (:func:`~crop_hf.projection.project_fuzzy`'s pass, case-folded:
            ``Indonesien`` for ``Indonesia``); ``None`` skips it.
        trim_edges: the alignment pass trims edge words linked as much outside every span
            (:func:`~crop_hf.projection.project_alignment`'s rule 5).
        one_word: the alignment pass gives a one-word source span only its best-linked word (rule 6).
        capitalized_nouns, function_words: the alignment pass's rules 7 and 8 (German names end in
            a capitalized word; closed-class words are trimmed from the edges).
        postpositions, prepositions: the alignment pass's rule 9 (``postpositions="hi"`` for Hindi and
            Hinglish targets: no slot starts with a postposition, a span that starts with a preposition
            takes the postpositions after it); with them the lexical passes also leave alone target
            words that are all postpositions (English ``me`` is Hindi's ``me``, "in"), so such a span
            goes to the alignment pass.
        drop_incomplete: mark sentences with an unprojected span as not kept.
    """
    sentence = target if isinstance(target, TargetSentence) else tokenize_target(target, lang, tokenization)
    spans = source_spans(source_tags, scheme)
    if entities is None:
        texts = [(" ".join(source_tokens[span.start:span.end]), span.label) for span in spans]
    else:
        items, _ = read_entities(entities)
        if len(items) != len(spans):
            raise ValueError(f"{len(items)} entity texts for {len(spans)} source spans; give one per span, in order")
        texts = [(item.text, span.label) for item, span in zip(items, spans, strict=True)]

    closing = adposition_set(postpositions)
    exact = normalizer or Normalizer()
    claimed = bytearray(len(sentence.tokens))  # shared by both lexical passes
    status: list[str | None] = [None] * len(spans)
    projected: list[ProjectedEntity] = []
    for compare, match in ((exact, "exact"), (replace(exact, ignore_case=True), "normalized")):
        matcher = LexicalMatcher(sentence, compare)
        matcher.claimed = claimed
        keys = {k: matcher.keys(text) for k, (text, _) in enumerate(texts) if status[k] is None}
        for k in sorted(keys, key=lambda k: -len(keys[k][0])):  # longest first, as lexical projection
            for key in keys[k]:
                found = matcher.find(key, claim=False)
                if found is not None and not (closing and all(word.lower() in closing
                                                              for word in sentence.tokens[found[0]:found[1]])):
                    matcher.claim(*found)
                    status[k] = "found"
                    projected.append(matcher.entity(*found, texts[k][1], k, match))
                    break

    if threshold is not None and None in status:
        _fuzzy_step(sentence, replace(exact, ignore_case=True), claimed, texts, status, projected, threshold)
    missing = [k for k, value in enumerate(status) if value is None]
    if missing:
        aligned = project_alignment(source_tokens, [spans[k] for k in missing], sentence, alignment,
                                    fill_gaps=fill_gaps, pieces=pieces, trim_edges=trim_edges, one_word=one_word,
                                    capitalized_nouns=capitalized_nouns, function_words=function_words,
                                    postpositions=closing or None, prepositions=prepositions,
                                    reserved=[j for j, taken in enumerate(claimed) if taken])
        for position, k in enumerate(missing):
            status[k] = aligned.statuses[position].status
        projected += [entity._replace(source=missing[entity.source]) for entity in aligned.entities]
    statuses = [EntityStatus(text, label, value) for (text, label), value in zip(texts, status, strict=True)]
    return ProjectionResult.build(sentence, projected, statuses, "hybrid", drop_incomplete=drop_incomplete)


def _fuzzy_step(sentence: TargetSentence, normalizer: Normalizer, claimed: bytearray, texts: list[tuple[str, str]],
                status: list[str | None], projected: list[ProjectedEntity], threshold: float) -> None:
    """Fuzzy projection's similarity pass over the entities both lexical passes missed, on the free tokens."""
    matcher = LexicalMatcher(sentence, normalizer)
    matcher.claimed = claimed
    keys = [matcher.keys(text) for text, _ in texts]
    state = PassState(matcher, [TranslatedEntity(text, label) for text, label in texts], keys, [""] * len(texts),
                      sorted(range(len(texts)), key=lambda k: -len(keys[k][0])),
                      ["missing" if value is None and keys[k][-1] else "done" for k, value in enumerate(status)],
                      projected, True)
    fuzzy_pass(state, threshold)
    for k, value in enumerate(state.statuses):
        if value == "fuzzy":
            status[k] = "fuzzy"

