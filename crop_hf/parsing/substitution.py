"""Slot substitution: more training trees from the same ones, for parsers trained on a few thousand.

A copy of a training tree in which top-level slots are swapped for the fillers of slots of the same
name in other training trees is still a plausible utterance with a correct parse
(``[IN:GET_WEATHER [SL:LOCATION Pune ] me kal barish hogi ? ]`` with ``[SL:LOCATION [IN:GET_LOCATION
[SL:LOCATION_USER mere ] [SL:SEARCH_RADIUS aas pas ] ] ]`` from another row): a model that has seen
each filler in several contexts leans less on the exact sentences it memorised. A filler moves
with everything under it, so nested intents travel into new contexts too, and a tree never gets
deeper than the deepest tree it was built from.

Only training rows are substituted (``train-parser --slot_substitution N`` adds N copies of the
training rows after the dev split is carved), so dev and evaluation trees stay as written.
"""

from __future__ import annotations

import bisect
import random
from collections import defaultdict
from typing import Any

from crop_hf.seqlogical import ParseError, Tree, flatten_top_level, from_flat, parse

__all__ = ["substitute_slots", "with_substituted_slots"]


def substitute_slots(rows: Any, copies: int, *, probability: float = 0.5, seed: int = 0) -> Any:
    """``copies`` new versions of every row of ``rows`` (a ``datasets.Dataset`` of parse rows) with swapped slots.

    In each copy, each top-level slot of a row's tree is replaced, with ``probability``, by the
    slot (words and nested tree) of that name in another row, drawn at random; a row whose copy
    came out unchanged (no slot drawn, or only identical fillers) is left out, so at most
    ``copies * len(rows)`` rows come back. Trees are read from the ``parse`` column, else from
    ``tokens``/``intent``/``slot_tags``; unreadable ones are neither substituted nor used as
    fillers. The result has the columns ``tokens``, ``intent``, ``slot_tags``, ``parse`` and
    ``nested`` (the training reader's), and ``source`` (the original row's ``file:line``) where
    ``rows`` has it. Seeded: the same rows, ``copies``, ``probability`` and ``seed`` give the same
    rows back.

    >>> import datasets
    >>> rows = datasets.Dataset.from_dict({"parse": [
    ...     "[IN:GET_WEATHER weather in [SL:LOCATION Pune ] ]",
    ...     "[IN:GET_WEATHER is it cold in [SL:LOCATION New York ] ]"]})
    >>> for text in substitute_slots(rows, copies=1, probability=1.0, seed=0)["parse"]:
    ...     print(text)
    [IN:GET_WEATHER weather in [SL:LOCATION New York ] ]
    [IN:GET_WEATHER is it cold in [SL:LOCATION Pune ] ]
    """
    import datasets

    if copies < 0:
        raise ValueError(f"copies must be 0 or more, got {copies}")
    if not 0.0 <= probability <= 1.0:
        raise ValueError(f"probability must be between 0 and 1, got {probability}")
    columns = rows.column_names
    texts = rows["parse"] if "parse" in columns else None
    trees: list[Tree | None] = []
    for index in range(len(rows)):
        try:
            if texts is not None:
                trees.append(parse(texts[index]))
            else:
                row = rows[index]
                trees.append(from_flat(row["tokens"], row["intent"], slot_tags=row["slot_tags"]))
        except (ParseError, ValueError):
            trees.append(None)
    fillers: dict[str, list[tuple[int, Tree]]] = defaultdict(list)  # slot name -> (row, slot) of every slot
    for index, tree in enumerate(trees):
        for child in tree.children if tree is not None else ():
            if isinstance(child, Tree) and child.tokens:
                fillers[child.name].append((index, child))

    def filler(slot: Tree, row: int) -> Tree:
        """A slot of ``slot``'s name from another row, uniformly (``slot`` itself when no other row has one)."""
        pool = fillers[slot.name]  # in row order, so this row's own slots are the run [low, high)
        low = bisect.bisect_left(pool, row, key=lambda entry: entry[0])
        high = bisect.bisect_right(pool, row, key=lambda entry: entry[0])
        others = len(pool) - (high - low)
        if not others:
            return slot
        drawn = generator.randrange(others)
        return pool[drawn + (high - low) if drawn >= low else drawn][1]

    generator = random.Random(seed)
    out: dict[str, list] = {"tokens": [], "intent": [], "slot_tags": [], "parse": [], "nested": []}
    sources = rows["source"] if "source" in columns else None
    if sources is not None:
        out["source"] = []
    for _ in range(copies):
        for index, tree in enumerate(trees):
            if tree is None:
                continue
            children = [filler(child, index) if isinstance(child, Tree) and generator.random() < probability
                        else child for child in tree.children]
            copy = Tree(tree.kind, tree.name, children)
            text = copy.to_string()
            if text == tree.to_string():  # no slot drawn, or only fillers written as its own
                continue
            flat, nested = flatten_top_level(copy)
            out["tokens"].append(flat.tokens)
            out["intent"].append(flat.intent)
            out["slot_tags"].append(flat.slot_tags)
            out["parse"].append(text)
            out["nested"].append(nested)
            if sources is not None:
                out["source"].append(sources[index])
    features = datasets.Features({
        "tokens": datasets.Sequence(datasets.Value("string")), "intent": datasets.Value("string"),
        "slot_tags": datasets.Sequence(datasets.Value("string")), "parse": datasets.Value("string"),
        "nested": datasets.Value("bool"), **({"source": datasets.Value("string")} if sources is not None else {})})
    return datasets.Dataset.from_dict(out, features=features)


def with_substituted_slots(rows: Any, copies: int, seed: int) -> Any:
    """``rows`` followed by :func:`substitute_slots`' copies, in the columns both have (``rows``' types).

    Columns only ``rows`` has (``domain``, ``utterance``, ...) are dropped: training reads the tree.
    """
    import datasets

    added = substitute_slots(rows, copies, seed=seed)
    shared = [column for column in added.column_names if column in rows.column_names]
    if not {"tokens", "intent", "slot_tags"} <= set(shared):
        raise ValueError(f"slot substitution needs tokens, intent and slot_tags columns; the rows have {rows.column_names}")
    kept = rows.select_columns(shared)
    return datasets.concatenate_datasets([kept, added.select_columns(shared).cast(kept.features)])
