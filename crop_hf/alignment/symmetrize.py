"""Symmetrization of two directional word alignments (Koehn, Och and Marcu 2003).

A directional aligner (IBM models, fast_align, eflomal) links each word of one side to at most
one word of the other, so its source→target and target→source runs disagree. The heuristics
here combine the two, from the sparse and precise ``intersection`` to the dense ``union``:

* ``intersection`` and ``union``;
* ``grow`` / ``grow-diag``: start from the intersection and repeatedly add union points that
  neighbour an existing point (horizontally and vertically, and for ``grow-diag`` diagonally
  too) and whose source or target word is still unaligned;
* ``grow-diag-final``: then add the remaining points of each direction whose source *or*
  target word is unaligned; ``grow-diag-final-and`` only those whose source *and* target words
  are both unaligned (the heuristic CSTOP uses after fast_align).

The result depends on the order points are visited. This module follows the published
pseudocode (Koehn et al. 2003; the Moses training documentation; Koehn, *Statistical Machine
Translation*, 2010, §4.5.3) exactly: repeated passes over source words ``e`` then target words
``f`` in increasing order, neighbours in the order ``(-1,0), (0,-1), (1,0), (0,1), (-1,-1),
(-1,1), (1,-1), (1,1)``, and ``final(forward)`` before ``final(reverse)``. Implementations
that grow from a FIFO work list (fast_align's ``atools``) can differ from it on rare inputs.

Alignments are lists of ``(source_index, target_index)`` pairs; :func:`parse_pharaoh` and
:func:`to_pharaoh` convert the ``"0-0 1-2"`` text format that aligners write.

>>> forward = [(0, 0), (1, 1), (2, 1)]
>>> reverse = [(0, 0), (1, 1), (2, 2)]
>>> symmetrize(forward, reverse, "intersection")
[(0, 0), (1, 1)]
>>> symmetrize(forward, reverse, "grow-diag-final-and")
[(0, 0), (1, 1), (2, 1), (2, 2)]
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Literal

__all__ = [
    "DEFAULT_SYMMETRIZATION",
    "SYMMETRIZATION_METHODS",
    "Alignment",
    "SymmetrizationMethod",
    "check_symmetrization",
    "parse_pharaoh",
    "symmetrize",
    "to_pharaoh",
]

#: A word alignment: sorted ``(source_index, target_index)`` pairs.
Alignment = list[tuple[int, int]]

SymmetrizationMethod = Literal[
    "intersection", "union", "grow", "grow-diag", "grow-diag-final", "grow-diag-final-and"
]
SYMMETRIZATION_METHODS: tuple[str, ...] = (
    "intersection", "union", "grow", "grow-diag", "grow-diag-final", "grow-diag-final-and"
)
#: CSTOP's symmetrization of fast_align's two directions, crop-hf's default everywhere.
DEFAULT_SYMMETRIZATION = "grow-diag-final-and"


def check_symmetrization(method: str) -> None:
    """``ValueError`` naming the known methods unless ``method`` is one of :data:`SYMMETRIZATION_METHODS`."""
    if method not in SYMMETRIZATION_METHODS:
        raise ValueError(f"unknown symmetrization {method!r}; expected one of {', '.join(SYMMETRIZATION_METHODS)}")

_NEIGHBOURS = ((-1, 0), (0, -1), (1, 0), (0, 1))
_DIAGONALS = ((-1, -1), (-1, 1), (1, -1), (1, 1))


def parse_pharaoh(line: str, *, where: str = "alignment") -> Alignment:
    """Read ``"0-0 1-2 2-1"`` into sorted pairs; ``where`` names the line in error messages.

    >>> parse_pharaoh("1-2 0-0")
    [(0, 0), (1, 2)]
    """
    pairs = set()
    for item in line.split():
        source, sep, target = item.partition("-")
        if not (sep and source.isdigit() and target.isdigit()):
            raise ValueError(f"{where}: expected Pharaoh links such as '0-1 2-3', got {item!r}")
        pairs.add((int(source), int(target)))
    return sorted(pairs)


def to_pharaoh(alignment: Iterable[tuple[int, int]]) -> str:
    """Write pairs as ``"i-j i-j ..."`` in sorted order.

    >>> to_pharaoh([(1, 2), (0, 0)])
    '0-0 1-2'
    """
    return " ".join(f"{i}-{j}" for i, j in sorted(set(alignment)))


def symmetrize(
    forward: Iterable[tuple[int, int]],
    reverse: Iterable[tuple[int, int]],
    method: SymmetrizationMethod = "grow-diag-final-and",
) -> Alignment:
    """Combine a source→target and a target→source alignment (both as ``(source, target)`` pairs).

    See the module docstring for the heuristics and the visiting order.
    """
    check_symmetrization(method)
    forward, reverse = set(forward), set(reverse)
    if method == "intersection":
        return sorted(forward & reverse)
    if method == "union":
        return sorted(forward | reverse)

    alignment = forward & reverse
    union = forward | reverse
    aligned_source = {i for i, _ in alignment}
    aligned_target = {j for _, j in alignment}

    def add(point: tuple[int, int]) -> None:
        alignment.add(point)
        aligned_source.add(point[0])
        aligned_target.add(point[1])

    neighbours = _NEIGHBOURS if method == "grow" else _NEIGHBOURS + _DIAGONALS
    # Only union points can ever be added, so candidates are looked up in the union instead of
    # scanning the whole grid; a heap keeps the row-major visiting order of the pseudocode,
    # including points added during a pass that lie ahead of the current one.
    added = True
    while added:
        added = False
        pending = sorted(alignment)
        while pending:
            e, f = heapq.heappop(pending)
            for de, df in neighbours:
                point = (e + de, f + df)
                if point in union and (point[0] not in aligned_source or point[1] not in aligned_target):
                    add(point)
                    added = True
                    if point > (e, f):
                        heapq.heappush(pending, point)
    if method.startswith("grow-diag-final"):
        both_unaligned = method == "grow-diag-final-and"
        for direction in (forward, reverse):
            for e, f in sorted(direction):
                source_free, target_free = e not in aligned_source, f not in aligned_target
                if (source_free and target_free) if both_unaligned else (source_free or target_free):
                    add((e, f))
    return sorted(alignment)
