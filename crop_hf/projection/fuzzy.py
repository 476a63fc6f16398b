"""Fuzzy projection (in the spirit of EasyProject): exact matches first, then string similarity.

Machine translation often renders a name slightly differently from the raw sentence
(``Gotemburgo``/``Gotemburg``, ``哥的堡``/``哥德堡``, an inflected ending). After the exact pass of
:func:`~crop_hf.projection.lexical.project_lexical`, every entity still missing is compared with
every run of free target tokens, and the best pairs above ``threshold`` are accepted:

* similarity is RapidFuzz's ``fuzz.ratio`` (normalized Indel similarity, 0-100) between the
  normalized entity and the normalized, concatenated tokens of the run;
* all (entity, run) pairs scoring at least ``threshold`` are ranked by score (then the longer
  entity, then the earlier one, then the leftmost run) and accepted greedily: an entity gets at
  most one run and **no target token is ever assigned twice**;
* further occurrences of exactly matched entities are labeled afterwards (``repeated="all"``),
  so a fuzzy candidate is never pre-empted by a repeat.

``threshold=80`` accepts ``Gotemburg`` for ``Gotemburgo`` (95) but not ``哥的堡`` for ``哥德堡``
(67): one wrong character in three is too much to trust by default; lower it to catch those.

>>> project_fuzzy("Vivo en Gotemburg .", [("Gotemburgo", "LOC")]).tags
['O', 'O', 'B-LOC', 'O']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from crop_hf.projection.lexical import PassState, Repeated, exact_pass, finish_passes, repeat_pass
from crop_hf.projection.result import ProjectionResult
from crop_hf.projection.target import Normalizer, TargetSentence, Tokenization

__all__ = ["fuzzy_pass", "project_fuzzy"]


def _candidate_runs(state: PassState, max_chars: int) -> list[tuple[int, int, str]]:
    """Every run of free tokens whose normalized text is at most ``max_chars`` long."""
    units, claimed = state.matcher.units, state.matcher.claimed
    runs = []
    for start in range(len(units)):
        text = ""
        for end in range(start, len(units)):
            if claimed[end]:
                break
            text += units[end]
            if len(text) > max_chars:
                break
            runs.append((start, end + 1, text))
    return runs


def _fuzzy_pass(state: PassState, threshold: float) -> None:
    from rapidfuzz import fuzz, process

    missing = [k for k in state.order if state.statuses[k] == "missing"]
    if not missing:
        return
    # fuzz.ratio >= t needs len(run) <= len(entity) * (200 - t) / t: longer runs cannot qualify.
    # The form without edge punctuation is compared: a fuzzy match should not hinge on a comma.
    longest = max(len(state.keys[k][-1]) for k in missing)
    runs = _candidate_runs(state, int(longest * (200 - threshold) / max(threshold, 1e-9)) + 1)
    if not runs:
        return
    # Case-folded: "NEW YORK" in the raw sentence is a match for a translated "New York".
    scores = process.cdist([state.keys[k][-1] for k in missing], [text for _, _, text in runs],
                           scorer=fuzz.ratio, processor=str.casefold, score_cutoff=threshold)
    pairs = [
        (-float(scores[row, col]), row, runs[col][0], col)
        for row, col in zip(*scores.nonzero(), strict=True)
    ]
    pairs.sort()  # best score first; rows follow the longest-first entity order; then leftmost run
    done: set[int] = set()
    claimed = state.matcher.claimed
    for negative_score, row, _, col in pairs:
        start, end, _ = runs[col]
        if row in done or any(claimed[start:end]):
            continue
        done.add(row)
        state.matcher.claim(start, end)
        k = missing[row]
        state.statuses[k] = "fuzzy"
        state.projected.append(state.matcher.entity(start, end, state.entities[k].label, k, "fuzzy", -negative_score))


def fuzzy_pass(state: PassState, threshold: float) -> None:
    """The similarity pass on its own: place the entities of ``state`` still ``"missing"`` (hybrid projection runs it too)."""
    _fuzzy_pass(state, threshold)


def project_fuzzy(
    target: str | Sequence[str] | TargetSentence,
    entities: Any,
    *,
    threshold: float = 80.0,
    lang: str | None = None,
    tokenization: Tokenization = "auto",
    normalizer: Normalizer | None = None,
    repeated: Repeated = "all",
    drop_incomplete: bool = True,
) -> ProjectionResult:
    """Exact matching, then similarity matching of what is still missing (see the module docstring).

    Arguments are those of :func:`~crop_hf.projection.lexical.project_lexical`, plus ``threshold``,
    the minimum ``fuzz.ratio`` (0-100) of an accepted fuzzy match.
    """
    if not 0 < threshold <= 100:
        raise ValueError(f"threshold is a similarity in (0, 100], got {threshold}")
    state = exact_pass(target, entities, lang, tokenization, normalizer, repeated)
    _fuzzy_pass(state, threshold)
    if repeated == "all":
        repeat_pass(state)
    return finish_passes(state, "fuzzy", drop_incomplete)
