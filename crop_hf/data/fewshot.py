"""CSTOP_100-style few-shot samples: about N utterances that cover every intent and slot label.

CSTOP's few-shot experiments train on 100 utterances chosen so that every intent and every slot
label of the corpus occurs at least once, over three random draws. :func:`few_shot_indices` draws
such a sample: it walks the rows in a seeded random order and takes each row that brings a label
not yet covered, then fills up to ``n`` with further random rows. When covering everything needs
more than ``n`` rows, all covering rows are returned (and a warning says how many). The three
seeds of the paper's protocol are :data:`CSTOP_SEEDS`.

>>> intents = ["A", "A", "B", "A"]
>>> tags = [["O"], ["B-X"], ["O"], ["O"]]
>>> picked = few_shot_indices(intents, tags, n=3, seed=0)
>>> len(picked), sorted({intents[i] for i in picked}), any(tags[i] == ["B-X"] for i in picked)
(3, ['A', 'B'], True)
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence

logger = logging.getLogger(__name__)

__all__ = ["CSTOP_SEEDS", "few_shot_indices"]

#: The three draws of a CSTOP_100 experiment (report the mean and spread over them).
CSTOP_SEEDS: tuple[int, int, int] = (0, 1, 2)


def _labels(intent: str, tags: Sequence[str]) -> set[str]:
    return {f"IN:{intent}"} | {f"SL:{tag[2:]}" for tag in tags if tag != "O"}


def few_shot_indices(intents: Sequence[str], slot_tags: Sequence[Sequence[str]], n: int = 100,
                     seed: int = 0) -> list[int]:
    """Indices (sorted) of about ``n`` rows covering every intent and slot name at least once."""
    if len(intents) != len(slot_tags):
        raise ValueError(f"{len(intents)} intents but {len(slot_tags)} tag sequences")
    if n <= 0:
        raise ValueError(f"n must be positive, got {n}")
    order = list(range(len(intents)))
    random.Random(seed).shuffle(order)
    labels = [_labels(intents[i], slot_tags[i]) for i in range(len(intents))]
    needed = set().union(*labels) if labels else set()
    chosen: list[int] = []
    # Rarest labels first: a row holding a rare label is taken before common labels use up the budget.
    counts: dict[str, int] = {}
    for row in labels:
        for label in row:
            counts[label] = counts.get(label, 0) + 1
    for label in sorted(needed, key=lambda name: (counts[name], name)):
        if label not in needed:
            continue
        row = next(i for i in order if label in labels[i] and i not in chosen)
        chosen.append(row)
        needed -= labels[row]
    if len(chosen) > n:
        logger.warning("covering every label takes %d utterances, more than the %d asked for", len(chosen), n)
    taken = set(chosen)
    for i in order:
        if len(chosen) >= n:
            break
        if i not in taken:
            chosen.append(i)
            taken.add(i)
    return sorted(chosen)
