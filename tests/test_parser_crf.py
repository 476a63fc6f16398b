"""The joint parser's CRF: exact likelihood, valid BIO decoding, masking independent of batch-mates."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from crop_hf.modeling.crf import FORBIDDEN, ConstrainedCRF, bio_constraints, is_valid_bio, viterbi_decode

LABELS = ["O", "B-DATE", "I-DATE", "B-LOC", "I-LOC"]


def _crf(constrained: bool, seed: int = 0) -> ConstrainedCRF:
    torch.manual_seed(seed)
    allowed_start, allowed = bio_constraints(LABELS)
    crf = ConstrainedCRF(len(LABELS), allowed_start if constrained else None, allowed if constrained else None)
    with torch.no_grad():  # larger than the init, so transitions matter in the sums
        for p in crf.parameters():
            p.normal_(0, 1.0)
    return crf


def _path_score(crf: ConstrainedCRF, emissions: torch.Tensor, path: tuple[int, ...], constrained: bool) -> float:
    transitions, start, end = crf._scores(constrained)
    score = start[path[0]] + emissions[0, path[0]]
    for t in range(1, len(path)):
        score = score + transitions[path[t - 1], path[t]] + emissions[t, path[t]]
    return float((score + end[path[-1]]).detach())


@pytest.mark.parametrize("constrained", [False, True])
@pytest.mark.parametrize("length", [1, 2, 3, 4])
@torch.no_grad()
def test_log_likelihood_equals_brute_force_enumeration(constrained, length):
    crf = _crf(constrained, seed=length)
    emissions = torch.randn(1, length, len(LABELS), dtype=torch.float64)
    crf = crf.double()
    mask = torch.ones(1, length, dtype=torch.bool)
    paths = list(itertools.product(range(len(LABELS)), repeat=length))
    scores = torch.tensor([_path_score(crf, emissions[0], p, constrained) for p in paths], dtype=torch.float64)
    log_z = torch.logsumexp(scores, 0)
    for index in (0, len(paths) // 2, len(paths) - 1):
        tags = torch.tensor([paths[index]])
        expected = scores[index] - log_z
        if constrained and not is_valid_bio([LABELS[i] for i in paths[index]]):
            assert float(crf.log_likelihood(emissions, tags, mask)) < FORBIDDEN / 2
            continue
        assert float(crf.log_likelihood(emissions, tags, mask)) == pytest.approx(float(expected), abs=1e-9)
    # Probabilities of all sequences sum to one.
    total = sum(math.exp(float(crf.log_likelihood(emissions, torch.tensor([p]), mask))) for p in paths)
    assert total == pytest.approx(1.0, abs=1e-9)
    # Viterbi finds the best valid sequence of the enumeration, and its probability.
    best_paths, log_probs = crf.decode(emissions, mask)
    valid = [(float(s), p) for s, p in zip(scores, paths, strict=True)
             if not constrained or is_valid_bio([LABELS[i] for i in p])]
    best_score, best_path = max(valid)
    assert tuple(best_paths[0]) == best_path
    assert float(log_probs[0]) == pytest.approx(best_score - float(log_z), abs=1e-6)


@given(st.integers(1, 9), st.integers(0, 2**16), st.floats(0.1, 20.0))
def test_constrained_decoding_never_returns_invalid_bio(length, seed, scale):
    generator = torch.Generator().manual_seed(seed)
    allowed_start, allowed = bio_constraints(LABELS)
    crf = ConstrainedCRF(len(LABELS), allowed_start, allowed)
    with torch.no_grad():
        for p in crf.parameters():
            # Transitions that push hard towards invalid moves (into I-* tags).
            p.copy_(torch.randn(p.shape, generator=generator) * scale)
        crf.transitions[:, [2, 4]] += scale
        crf.start_transitions[[2, 4]] += scale
    emissions = torch.randn(3, length, len(LABELS), generator=generator) * scale
    emissions[..., [2, 4]] += 2 * scale
    mask = torch.arange(length).unsqueeze(0) < torch.tensor([[length], [max(1, length // 2)], [1]])
    paths, _ = crf.decode(emissions, mask)
    for row, path in enumerate(paths):
        assert len(path) == int(mask[row].sum())
        assert is_valid_bio([LABELS[i] for i in path]), [LABELS[i] for i in path]
    # The same holds for decoding without a CRF (zero transitions, only the constraints).
    penalty = torch.where(torch.tensor(allowed), 0.0, FORBIDDEN)
    start = torch.where(torch.tensor(allowed_start), 0.0, FORBIDDEN)
    plain, _ = viterbi_decode(emissions.log_softmax(-1), mask, penalty, start, torch.zeros(len(LABELS)))
    assert all(is_valid_bio([LABELS[i] for i in p]) for p in plain)


def test_sentences_of_different_lengths_score_in_a_batch_as_alone():
    crf = _crf(True, seed=3).double()
    lengths = [5, 1, 3, 0]
    emissions = torch.randn(len(lengths), 5, len(LABELS), dtype=torch.float64)
    mask = torch.arange(5).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)
    tags = torch.tensor([[1, 2, 0, 3, 4], [3, 0, 0, 0, 0], [0, 1, 2, 0, 0], [0, 0, 0, 0, 0]])
    # Padding positions hold garbage that must not matter.
    emissions = torch.where(mask.unsqueeze(-1), emissions, torch.full_like(emissions, 50.0))
    batched = crf.log_likelihood(emissions, tags, mask)
    paths, probs = crf.decode(emissions, mask)
    for row, n in enumerate(lengths):
        if n == 0:
            assert float(batched[row]) == 0.0 and paths[row] == []
            continue
        alone_mask = torch.ones(1, n, dtype=torch.bool)
        alone = crf.log_likelihood(emissions[row : row + 1, :n], tags[row : row + 1, :n], alone_mask)
        assert float(batched[row]) == pytest.approx(float(alone[0]), abs=1e-9)
        alone_paths, alone_probs = crf.decode(emissions[row : row + 1, :n], alone_mask)
        assert paths[row] == alone_paths[0]
        assert float(probs[row]) == pytest.approx(float(alone_probs[0]), abs=1e-9)


def test_bio_constraints_reject_non_iob2_labels():
    with pytest.raises(ValueError, match="not an IOB2 tag"):
        bio_constraints(["O", "S-LOC"])


def test_is_valid_bio_on_hand_written_sequences():
    assert is_valid_bio([]) and is_valid_bio(["O", "B-A", "I-A", "I-A", "B-B", "O"])
    assert is_valid_bio(["B-A", "B-A", "I-A"])
    assert not is_valid_bio(["I-A"])  # at the start
    assert not is_valid_bio(["O", "I-A"]) and not is_valid_bio(["B-A", "I-B"]) and not is_valid_bio(["B-A", "O", "I-A"])


def test_an_empty_row_between_others_decodes_to_nothing_with_score_zero():
    torch.manual_seed(0)
    emissions = torch.randn(3, 3, 4)
    mask = torch.tensor([[1, 1, 1], [0, 0, 0], [1, 0, 0]], dtype=torch.bool)
    zeros = torch.zeros(4)
    paths, scores = viterbi_decode(emissions, mask, torch.zeros(4, 4), zeros, zeros)
    assert [len(p) for p in paths] == [3, 0, 1]
    assert float(scores[1]) == 0.0
    # With no transition scores the best path takes each word's best tag.
    assert paths[0] == emissions[0].argmax(1).tolist() and paths[2] == [int(emissions[2, 0].argmax())]
    assert float(scores[0]) == pytest.approx(float(emissions[0].max(1).values.sum()))


def test_transition_scores_start_small_and_of_both_signs():
    crf = ConstrainedCRF(9)
    assert crf.num_tags == 9
    for parameter in (crf.start_transitions, crf.end_transitions, crf.transitions):
        values = parameter.detach().flatten()
        assert float(values.abs().max()) <= 0.1
        assert float(values.min()) < 0 < float(values.max())


def test_bio_constraints_matrix_on_two_types():
    labels = ["O", "B-A", "I-A", "B-B", "I-B", "B-A-X", "I-A-X"]  # a type may hold a dash
    start, allowed = bio_constraints(labels)
    assert start == [True, True, False, True, False, True, False]
    follows = {(labels[i], labels[j]) for i in range(len(labels)) for j in range(len(labels)) if allowed[i][j]}
    everything_but_i = {(a, b) for a in labels for b in labels if not b.startswith("I-")}
    assert follows == everything_but_i | {("B-A", "I-A"), ("I-A", "I-A"), ("B-B", "I-B"), ("I-B", "I-B"),
                                          ("B-A-X", "I-A-X"), ("I-A-X", "I-A-X")}
    assert is_valid_bio(["B-A-X", "I-A-X"]) and not is_valid_bio(["B-A", "I-A-X"])


def test_constraints_leave_allowed_scores_as_they_are_and_push_forbidden_ones_down():
    crf = _crf(constrained=True)
    allowed_start, allowed = bio_constraints(LABELS)
    transitions, start, end = crf._scores(True)
    expected = crf.transitions + torch.where(torch.tensor(allowed), 0.0, FORBIDDEN)
    assert torch.equal(transitions, expected) and torch.equal(end, crf.end_transitions)
    assert torch.equal(start, crf.start_transitions + torch.where(torch.tensor(allowed_start), 0.0, FORBIDDEN))
    assert torch.equal(transitions[0], crf.transitions[0].detach() + torch.tensor([0.0, 0.0, FORBIDDEN, 0.0, FORBIDDEN]))
    assert crf._scores(False) == (crf.transitions, crf.start_transitions, crf.end_transitions)


def test_constraint_masks_are_made_on_the_parameters_device():
    # The meta device stands in for a GPU: a mask built on the CPU cannot be added to its parameters.
    crf = _crf(constrained=True).to("meta")
    transitions, start, end = crf._scores(True)
    assert transitions.device.type == start.device.type == end.device.type == "meta"
    assert transitions.shape == (len(LABELS), len(LABELS)) and start.shape == (len(LABELS),)


@torch.no_grad()
def test_a_crf_trained_without_the_constraints_scores_paths_as_decoding_does_when_asked():
    allowed_start, allowed = bio_constraints(LABELS)
    crf = ConstrainedCRF(len(LABELS), allowed_start, allowed, constrain_training=False).double()
    torch.manual_seed(3)
    for p in crf.parameters():
        p.normal_(0, 1.0)
    emissions = torch.randn(2, 4, len(LABELS), dtype=torch.float64)
    mask = torch.tensor([[True] * 4, [True, True, False, False]])
    paths, log_probs = crf.decode(emissions, mask)
    tags = torch.tensor([path + [0] * (4 - len(path)) for path in paths])
    # decoding normalises over valid sequences only; training (by default here) over all of them
    assert crf.log_likelihood(emissions, tags, mask, constrained=True).tolist() == pytest.approx(log_probs.tolist())
    unconstrained = crf.log_likelihood(emissions, tags, mask)
    assert (unconstrained < log_probs - 1e-3).all()
    assert crf.log_likelihood(emissions, tags, mask, constrained=False).tolist() == unconstrained.tolist()
