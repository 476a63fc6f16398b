"""Symmetrization heuristics against hand-worked cases and an independent transcription of the pseudocode."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crop_hf.alignment import SYMMETRIZATION_METHODS, parse_pharaoh, symmetrize, to_pharaoh

# -- an independent reference: the published pseudocode, transcribed literally over boolean matrices --
#
# Koehn et al. (2003) / Moses "Training step 3": repeat passes until nothing is added; in each pass
# scan English word e, then foreign word f; for every aligned (e, f) try its neighbours in the
# order below; add a union point whose e or f is unaligned. FINAL(a) scans the grid and adds points
# of a whose e or f (final) / e and f (final-and) are unaligned; FINAL(e2f) runs before FINAL(f2e).
# Unlike the library (a heap over points, set look-ups), this scans the whole grid every time.

NEIGHBOURS = [(-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1)]


def reference(forward, reverse, m, n, method):
    e2f = np.zeros((m, n), dtype=bool)
    f2e = np.zeros((m, n), dtype=bool)
    for e, f in forward:
        e2f[e, f] = True
    for e, f in reverse:
        f2e[e, f] = True
    union = e2f | f2e
    if method == "union":
        return sorted(zip(*(axis.tolist() for axis in np.nonzero(union)), strict=True))
    alignment = e2f & f2e
    if method != "intersection":
        neighbours = NEIGHBOURS[:4] if method == "grow" else NEIGHBOURS
        while True:
            added = False
            for e in range(m):
                for f in range(n):
                    if not alignment[e, f]:
                        continue
                    for de, df in neighbours:
                        e_new, f_new = e + de, f + df
                        if not (0 <= e_new < m and 0 <= f_new < n):
                            continue
                        e_unaligned = not alignment[e_new, :].any()
                        f_unaligned = not alignment[:, f_new].any()
                        if (e_unaligned or f_unaligned) and union[e_new, f_new]:
                            alignment[e_new, f_new] = True
                            added = True
            if not added:
                break
    if method in {"grow-diag-final", "grow-diag-final-and"}:
        for direction in (e2f, f2e):
            for e in range(m):
                for f in range(n):
                    if not direction[e, f]:
                        continue
                    e_unaligned = not alignment[e, :].any()
                    f_unaligned = not alignment[:, f].any()
                    ok = (e_unaligned and f_unaligned) if method == "grow-diag-final-and" else (e_unaligned or f_unaligned)
                    if ok:
                        alignment[e, f] = True
    return sorted(zip(*(axis.tolist() for axis in np.nonzero(alignment)), strict=True))


# -- hand-worked example ---------------------------------------------------------------------------
#
#   forward = {(0,0), (1,1), (2,2), (4,0)}      reverse = {(0,0), (2,0), (2,2), (3,2), (4,4)}
#   intersection = {(0,0), (2,2)}
#   grow:      (3,2) is a vertical neighbour of (2,2) and word 3 is unaligned        -> added
#              (1,1) touches (0,0) and (2,2) only diagonally                         -> not added
#   grow-diag: (1,1) is a diagonal neighbour of (0,0), words 1 and 1 unaligned        -> added
#              (2,0) neighbours (1,1) but source 2 and target 0 are both aligned      -> never added
#   final(forward) then final(reverse):
#     -final:     (4,0): source 4 unaligned -> added; then (4,4): target 4 unaligned  -> added
#     -final-and: (4,0): target 0 aligned   -> not added; (4,4): both unaligned        -> added
FORWARD = [(0, 0), (1, 1), (2, 2), (4, 0)]
REVERSE = [(0, 0), (2, 0), (2, 2), (3, 2), (4, 4)]
EXPECTED = {
    "intersection": [(0, 0), (2, 2)],
    "union": [(0, 0), (1, 1), (2, 0), (2, 2), (3, 2), (4, 0), (4, 4)],
    "grow": [(0, 0), (2, 2), (3, 2)],
    "grow-diag": [(0, 0), (1, 1), (2, 2), (3, 2)],
    "grow-diag-final": [(0, 0), (1, 1), (2, 2), (3, 2), (4, 0), (4, 4)],
    "grow-diag-final-and": [(0, 0), (1, 1), (2, 2), (3, 2), (4, 4)],
}


@pytest.mark.parametrize("method", SYMMETRIZATION_METHODS)
def test_hand_worked_example(method):
    assert symmetrize(FORWARD, REVERSE, method) == EXPECTED[method]
    assert reference(FORWARD, REVERSE, 5, 5, method) == EXPECTED[method]


def test_neighbour_order_follows_the_pseudocode():
    # From (1,1): (2,1) [offset (1,0)] and (1,2) [offset (0,1)] come before the diagonal (2,2); once
    # both are in, source 2 and target 2 are aligned and (2,2) is blocked. Visiting diagonals
    # first (or candidates in sorted order with another tie rule) would keep (2,2) instead.
    union_extra = [(1, 2), (2, 1), (2, 2)]
    assert symmetrize([(1, 1), *union_extra], [(1, 1)], "grow-diag") == [(1, 1), (1, 2), (2, 1)]


def test_diagonals_are_visited_up_left_before_up_right():
    # Source 0 is free and targets 0 and 2 are taken: from (1,1) the first diagonal tried, (-1,-1),
    # takes source 0, which blocks (0,2). Trying the diagonals mirrored ((-1,1) first) keeps (0,2).
    intersection = [(1, 1), (2, 0), (2, 2)]
    forward, reverse = [*intersection, (0, 0), (0, 2)], intersection
    expected = [(0, 0), (1, 1), (2, 0), (2, 2)]
    assert symmetrize(forward, reverse, "grow-diag") == expected
    assert reference(forward, reverse, 3, 3, "grow-diag") == expected


def test_points_added_behind_the_scan_are_grown_in_the_next_pass():
    # (2,1) is added while visiting (2,2) but lies before it, so only the second pass grows from it
    # to (1,0); a single pass would stop at (2,1).
    assert symmetrize([(2, 2), (2, 1), (1, 0)], [(2, 2)], "grow-diag") == [(1, 0), (2, 1), (2, 2)]
    assert symmetrize([(2, 2), (2, 1), (1, 0)], [(2, 2)], "grow") == [(2, 1), (2, 2)]


def test_final_runs_forward_before_reverse():
    # Both directions offer a link for source word 1: the forward one comes first and wins under -and.
    forward, reverse = [(0, 0), (1, 2)], [(0, 0), (1, 3)]
    assert symmetrize(forward, reverse, "grow-diag-final-and") == [(0, 0), (1, 2)]
    assert symmetrize(reverse, forward, "grow-diag-final-and") == [(0, 0), (1, 3)]
    assert symmetrize(forward, reverse, "grow-diag-final") == [(0, 0), (1, 2), (1, 3)]


alignments = st.integers(1, 7).flatmap(
    lambda m: st.integers(1, 7).flatmap(
        lambda n: st.tuples(
            st.just(m), st.just(n),
            st.sets(st.tuples(st.integers(0, m - 1), st.integers(0, n - 1)), max_size=12),
            st.sets(st.tuples(st.integers(0, m - 1), st.integers(0, n - 1)), max_size=12),
        )
    )
)


@settings(max_examples=300, deadline=None)
@given(alignments)
def test_equals_the_reference_transcription(case):
    m, n, forward, reverse = case
    for method in SYMMETRIZATION_METHODS:
        assert symmetrize(forward, reverse, method) == reference(forward, reverse, m, n, method), method


@settings(max_examples=200, deadline=None)
@given(alignments)
def test_invariants_of_the_heuristics(case):
    _, _, forward, reverse = case
    result = {method: set(symmetrize(forward, reverse, method)) for method in SYMMETRIZATION_METHODS}
    for method in SYMMETRIZATION_METHODS:
        assert result["intersection"] <= result[method] <= result["union"], method
    # The final steps only add points to grow-diag.
    assert result["grow-diag"] <= result["grow-diag-final-and"]
    assert result["grow-diag"] <= result["grow-diag-final"]
    # After -final every word linked in either direction is aligned.
    union = result["union"]
    assert {e for e, _ in result["grow-diag-final"]} == {e for e, _ in union}
    assert {f for _, f in result["grow-diag-final"]} == {f for _, f in union}
    # Growing depends only on the intersection and the union, not on which side is "forward".
    assert set(symmetrize(reverse, forward, "grow-diag")) == result["grow-diag"]


def test_pharaoh_round_trip_and_errors():
    assert parse_pharaoh("2-1 0-0 2-1") == [(0, 0), (2, 1)]
    assert to_pharaoh(parse_pharaoh(" 3-4  0-0 ")) == "0-0 3-4"
    assert parse_pharaoh("") == []
    with pytest.raises(ValueError, match=r"line 7: expected Pharaoh links .* got '1:2'"):
        parse_pharaoh("0-0 1:2", where="line 7")
    with pytest.raises(ValueError, match="unknown symmetrization 'gdfa'"):
        symmetrize([], [], "gdfa")


def test_pharaoh_items_need_digits_on_both_sides_of_one_dash():
    from crop_hf.alignment.symmetrize import parse_pharaoh

    assert parse_pharaoh(" 2-1  0-0 2-1 ") == [(0, 0), (2, 1)]
    for item in ("x-1", "0-x", "01", "-1", "1-"):
        with pytest.raises(ValueError, match=f"^alignment: expected Pharaoh links such as '0-1 2-3', got '{item}'$"):
            parse_pharaoh(f"0-0 {item}")
    with pytest.raises(ValueError, match=r"^line 3: expected"):
        parse_pharaoh("a-b", where="line 3")


def test_symmetrize_defaults_to_grow_diag_final_and_and_names_the_methods():
    from crop_hf.alignment.symmetrize import SYMMETRIZATION_METHODS, symmetrize

    forward, reverse = [(0, 0), (1, 1), (2, 1)], [(0, 0), (1, 1), (1, 2)]
    assert symmetrize(forward, reverse) == symmetrize(forward, reverse, "grow-diag-final-and")
    assert symmetrize(forward, reverse) != symmetrize(forward, reverse, "intersection")
    with pytest.raises(ValueError, match=r"^unknown symmetrization 'union-ish'; expected one of (.+)$") as info:
        symmetrize(forward, reverse, "union-ish")
    assert str(info.value).endswith(", ".join(SYMMETRIZATION_METHODS))
