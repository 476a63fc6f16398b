"""Alignment projection (CSTOP's translate-and-align): copy source spans onto aligned target words.

Given a labeled source sentence, a target sentence and a word alignment between them (from
:mod:`crop_hf.alignment`: eflomal + grow-diag-final-and as in CSTOP, or an embedding aligner):

1. a source span's label goes to the **union of the target words aligned to any of its words**;
2. if those words are not contiguous, each contiguous piece becomes **a separate span of the
   same type** (CSTOP's rule for discontinuous slots; ``pieces="largest"`` keeps only the piece
   with the most links, then the longest, then the first); ``fill_gaps=N`` first joins pieces
   separated by at most ``N`` unaligned-to-this-span words;
3. a target word claimed by several source spans goes to the span with the **most alignment
   links to that word**; ties go to the span with more links overall, then to the earlier span.
   The losers keep their other words (split again into contiguous pieces);
4. punctuation-only words are trimmed from the edges of every piece, so a piece that is **only
   punctuation is dropped**;
5. with ``trim_edges=True``, a word at the edge of a piece is also trimmed while it has **at least
   as many links to source words outside every span as to this span** (or none to either: a
   filled gap left at the edge): ``Mitgliedstaaten dar`` for ``Member States`` when ``dar`` is
   also linked to the verb ``are``. A piece keeps at least its best-linked word;
6. with ``one_word=True``, a one-word source span (a name, a nationality adjective) keeps only one
   target word, its best-linked (most links, then the first; one source word links each target
   word at most once, so this is its first aligned word): ``niederländischer`` for ``Dutch``, not
   ``niederländischer Sender`` (preferring the word with fewest links from outside the spans
   instead measured no better on Europarl-NER's dev part);
7. with ``capitalized_nouns=True`` (for a target language that capitalizes every noun, as German
   does), trailing lowercase words are trimmed from every piece: a German name ends in a noun,
   a number or a symbol, so ``Mitgliedstaaten bemüht`` for ``Member States`` becomes
   ``Mitgliedstaaten``. A piece keeps at least one word (``europäischen`` for ``European``);
8. with ``function_words`` (the target language's closed-class words, or the code of a list
   crop-hf ships), those words are trimmed from both edges of every piece (``den Niederlanden``
   → ``Niederlanden``) and a piece made only of them is dropped (``für`` for ``Structural Fund``);
9. with ``postpositions`` (for a target language whose adpositions follow the noun, as Hindi's
   do: its words, or ``"hi"`` for the romanized list crop-hf ships), a postposition closes the
   phrase before it, so it is trimmed from the **start** of every piece (``ko Tuesday`` → ``Tuesday``;
   a piece keeps at least one word), and a source span that **starts with a preposition**
   (``prepositions``, English's by default) takes the postpositions right after its piece that no
   other span holds: ``for 3 pm`` → ``3 pm ka``, ``at 6 pm`` → ``shaam 6 baje ko``, where the
   preposition's own link is often missing. Chosen on Hinglish-TOP's train rows
   (``benchmarks/bench_projection_quality.py``).

Each source span gets a status: ``"projected"`` (one piece), ``"split"`` (several),
``"unaligned"`` (no links), ``"punctuation"`` (aligned only to punctuation, or only to
function words under rule 8) or ``"conflict"``
(all its words went to other spans). A sentence is complete when every span is projected or
split; unlike lexical projection, incomplete sentences are kept by default (CSTOP keeps every
translation).

>>> result = project_alignment(
...     ["I", "live", "in", "New", "York", "."], ["O", "O", "O", "B-LOC", "I-LOC", "O"],
...     ["Vivo", "en", "Nueva", "York", "."], [(1, 0), (2, 1), (3, 2), (4, 3), (5, 4)])
>>> result.tags
['O', 'O', 'B-LOC', 'I-LOC', 'O']
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from typing import Literal

from crop_hf.alignment.symmetrize import parse_pharaoh
from crop_hf.data.readers.words import adposition_set, builtin_function_words
from crop_hf.labels import Span, TagScheme, tags_to_spans
from crop_hf.projection.result import EntityStatus, ProjectedEntity, ProjectionResult
from crop_hf.projection.target import TargetSentence, Tokenization, is_punctuation, tokenize_target

__all__ = ["project_alignment", "source_spans"]


def source_spans(tags_or_spans: Sequence, scheme: TagScheme = "IOB2") -> list[Span]:
    """Spans from a tag sequence (``"B-PER"``, ...) or from ``(start, end, label)`` triples."""
    items = list(tags_or_spans)
    if items and not isinstance(items[0], str):
        return [Span(*item) for item in items]
    return tags_to_spans(items, scheme)


def _runs(words: Iterable[int], fill_gaps: int = 0) -> list[list[int]]:
    """Sorted word indices → contiguous runs; runs separated by at most ``fill_gaps`` words are joined."""
    runs: list[list[int]] = []
    for j in sorted(words):
        if runs and j - runs[-1][-1] - 1 <= fill_gaps:
            runs[-1].extend(range(runs[-1][-1] + 1, j + 1))
        else:
            runs.append([j])
    return runs


def _trim_shared(run: list[int], own: Counter, outside: Counter) -> list[int]:
    """``run`` without edge words linked at least as much outside every span as to this one; never emptied."""
    start, end = 0, len(run)
    while end - start > 1 and outside[run[start]] >= own[run[start]]:
        start += 1
    while end - start > 1 and outside[run[end - 1]] >= own[run[end - 1]]:
        end -= 1
    if end - start == 1 and own[run[start]] == 0:  # only a filled gap word is left: keep the best-linked one
        return [max(run, key=lambda j: (own[j], -outside[j]))]
    return run[start:end]


def _lowercase(word: str) -> bool:
    return word[:1].islower()


def _without_edge_words(run: list[int], tokens: Sequence[str], words: Collection[str]) -> list[int]:
    """``run`` without the words of ``words`` (lower-cased) at either edge; emptied if it holds only them."""
    start, end = 0, len(run)
    while start < end and tokens[run[start]].lower() in words:
        start += 1
    while end > start and tokens[run[end - 1]].lower() in words:
        end -= 1
    return run[start:end]


def _take_postpositions(placed: list[tuple[int, list[int]]], spans: Sequence[Span], source_tokens: Sequence[str],
                        tokens: Sequence[str], opening: Collection[str], closing: Collection[str],
                        reserved: Collection[int]) -> None:
    """Rule 9: each piece of a span that starts with a preposition takes the free postpositions right after it."""
    held = set(reserved).union(*(run for _, run in placed))
    for k, run in placed:
        # a piece that is one postposition (what trimming leaves of a piece of only them) takes no more
        if source_tokens[spans[k].start].lower() not in opening or tokens[run[0]].lower() in closing:
            continue
        following = run[-1] + 1
        while following < len(tokens) and following not in held and tokens[following].lower() in closing:
            run.append(following)  # pieces are disjoint: no other piece ends right before this word
            following += 1


def project_alignment(
    source_tokens: Sequence[str] | None,
    source_tags: Sequence,
    target: str | Sequence[str] | TargetSentence,
    alignment: Iterable[tuple[int, int]] | str,
    *,
    lang: str | None = None,
    tokenization: Tokenization = "auto",
    fill_gaps: int = 0,
    scheme: TagScheme = "IOB2",
    drop_incomplete: bool = False,
    reserved: Collection[int] = (),
    pieces: Literal["split", "largest"] = "split",
    trim_edges: bool = False,
    one_word: bool = False,
    capitalized_nouns: bool = False,
    function_words: str | Collection[str] | None = None,
    postpositions: str | Collection[str] | None = None,
    prepositions: str | Collection[str] = "en",
) -> ProjectionResult:
    """Project source spans through a word alignment (see the module docstring for the rules).

    Args:
        source_tokens: the source words (used for entity texts; may be ``None``).
        source_tags: source tags in ``scheme``, or ``(start, end, label)`` spans.
        target: the target sentence, as text or tokens (tokenized like the alignment's target side).
        alignment: ``(source_word, target_word)`` pairs, or Pharaoh text ``"0-0 1-2"``.
        fill_gaps: join pieces of one span separated by at most this many words.
        drop_incomplete: mark sentences with an unprojected span as not kept.
        pieces: ``"split"`` makes every contiguous piece a slot (CSTOP); ``"largest"`` keeps the
            piece with the most alignment links (fewer false positives from stray links).
        reserved: target words already labeled by other means (hybrid projection's lexical
            matches): no span takes them, links into them are ignored and no gap is filled across them.
        trim_edges: trim edge words linked at least as much to source words outside every span
            (rule 5 of the module docstring).
        one_word: a one-word source span keeps only its best-linked target word (rule 6).
        capitalized_nouns: the target language writes every noun capitalized (German,
            Luxembourgish): trailing lowercase words are trimmed from each piece (rule 7).
        function_words: closed-class words of the target language, or the code of a list crop-hf
            ships (``"de"``, ``"en"``: :func:`~crop_hf.data.readers.builtin_function_words`):
            trimmed from both edges of each piece, and a piece of only such words is dropped (rule 8).
        postpositions: postpositions of the target language, or the code of a list crop-hf ships
            (``"hi"``: :func:`~crop_hf.data.readers.builtin_adpositions`): trimmed from the start of
            each piece, and taken after a piece whose source span starts with a preposition (rule 9).
        prepositions: the source language's prepositions for rule 9 (words, or a list code; English's
            by default); unused without ``postpositions``.
    """
    if fill_gaps < 0:
        raise ValueError(f"fill_gaps must be >= 0, got {fill_gaps}")
    if pieces not in ("split", "largest"):
        raise ValueError(f"pieces must be 'split' or 'largest', got {pieces!r}")
    closed_class = builtin_function_words(function_words) if isinstance(function_words, str) else function_words
    closing = adposition_set(postpositions)
    sentence = target if isinstance(target, TargetSentence) else tokenize_target(target, lang, tokenization)
    links = parse_pharaoh(alignment) if isinstance(alignment, str) else sorted(set(alignment))
    spans = source_spans(source_tags, scheme)
    if source_tokens is not None:
        n_source = len(source_tokens)
    elif source_tags and isinstance(source_tags[0], str):
        n_source = len(source_tags)
    else:
        n_source = max((span.end for span in spans), default=0) if not links else max(i for i, _ in links) + 1
    n_target = len(sentence.tokens)
    for i, j in links:
        if not (0 <= i < n_source and 0 <= j < n_target):
            raise ValueError(f"alignment link {i}-{j} is outside the sentences ({n_source} source and "
                             f"{n_target} target words)")

    source_of = {}
    for k, span in enumerate(spans):
        for i in range(span.start, span.end):
            source_of[i] = k
    link_counts = [Counter() for _ in spans]  # per span: target word -> links into it
    outside: Counter = Counter()  # target word -> links from source words outside every span
    for i, j in links:
        if i in source_of:
            link_counts[source_of[i]][j] += 1
        else:
            outside[j] += 1
    reserved = set(reserved)
    for counts in link_counts:
        for j in reserved & counts.keys():
            del counts[j]
    candidates = [{j for run in _runs(counts, fill_gaps) for j in run if j not in reserved} for counts in link_counts]
    totals = [sum(counts.values()) for counts in link_counts]

    owner: dict[int, int] = {}
    for k, words in enumerate(candidates):
        for j in words:
            best = owner.get(j)
            if best is None or (link_counts[k][j], totals[k], -k) > (link_counts[best][j], totals[best], -best):
                owner[j] = k

    placed: list[tuple[int, list[int]]] = []  # (source span, target words) of every piece, in order
    statuses: list[EntityStatus] = []
    for k, span in enumerate(spans):
        found = []
        for run in _runs(j for j in candidates[k] if owner[j] == k):
            while run and is_punctuation(sentence.tokens[run[0]]):
                run.pop(0)
            while run and is_punctuation(sentence.tokens[run[-1]]):
                run.pop()
            if trim_edges and run:
                run = _trim_shared(run, link_counts[k], outside)
            if capitalized_nouns:
                while len(run) > 1 and _lowercase(sentence.tokens[run[-1]]):
                    run.pop()
            if closed_class:
                run = _without_edge_words(run, sentence.tokens, closed_class)
            while len(run) > 1 and sentence.tokens[run[0]].lower() in closing:
                run.pop(0)
            if run:
                found.append(run)
        if not link_counts[k]:
            status = "unaligned"
        elif not found:
            won = [j for j in candidates[k] if owner[j] == k]
            status = "punctuation" if won else "conflict"
        else:
            status = "projected" if len(found) == 1 else "split"
        if pieces == "largest" and len(found) > 1:
            found = [max(found, key=lambda run, k=k: (sum(link_counts[k][j] for j in run), len(run), -run[0]))]
        if one_word and found and span.end - span.start == 1 and (len(found) > 1 or len(found[0]) > 1):
            found = [[max((j for run in found for j in run), key=lambda j, k=k: (link_counts[k][j], -j))]]
        text = " ".join(source_tokens[span.start:span.end]) if source_tokens is not None else ""
        statuses.append(EntityStatus(text, span.label, status))
        placed += [(k, run) for run in found]
    if closing and source_tokens is not None:
        _take_postpositions(placed, spans, source_tokens, sentence.tokens, adposition_set(prepositions), closing,
                            reserved)
    projected = [ProjectedEntity.over(sentence, run[0], run[-1] + 1, spans[k].label, k, "alignment")
                 for k, run in placed]
    return ProjectionResult.build(sentence, projected, statuses, "alignment", drop_incomplete=drop_incomplete)
