"""Marker-MT training's loss and labelled positions, exactly, on hand-made tensors (no model download, fast).

``marker_weighted_loss``: token cross-entropy with ``-100`` ignored, label smoothing, marker tokens
weighted, averaged per labelled token. ``_LabelledPositions``: the output layer sees only labelled
positions inside ``only``, everything outside it and after ``remove``.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from crop_hf.translation.train import _LabelledPositions, marker_weighted_loss


def _logits(*shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0))


def test_loss_is_the_mean_token_cross_entropy_over_labelled_positions():
    logits = _logits(2, 3, 7)  # batch, length, vocabulary: all different, so a wrong reshape fails
    labels = torch.tensor([[1, 6, -100], [0, -100, -100]])
    expected = F.cross_entropy(logits[labels != -100], labels[labels != -100])
    assert marker_weighted_loss(logits, labels, torch.tensor([6])).item() == pytest.approx(expected.item(), rel=1e-6)
    assert marker_weighted_loss(logits, labels, None).item() == pytest.approx(expected.item(), rel=1e-6)


def test_label_smoothing_reaches_the_cross_entropy():
    logits = _logits(1, 4, 5)
    labels = torch.tensor([[1, 2, 3, -100]])
    expected = F.cross_entropy(logits[0, :3], labels[0, :3], label_smoothing=0.2)
    loss = marker_weighted_loss(logits, labels, None, label_smoothing=0.2)
    assert loss.item() == pytest.approx(expected.item(), rel=1e-6)
    assert loss.item() != pytest.approx(marker_weighted_loss(logits, labels, None).item(), rel=1e-3)


def test_marker_weight_multiplies_marker_tokens_and_still_divides_by_the_token_count():
    logits = _logits(1, 4, 6)
    labels = torch.tensor([[5, 2, 5, -100]])
    per_token = F.cross_entropy(logits[0, :3], labels[0, :3], reduction="none")
    weighted = marker_weighted_loss(logits, labels, torch.tensor([5, 4]), marker_weight=0.5)
    assert weighted.item() == pytest.approx(((0.5 * per_token[0] + per_token[1] + 0.5 * per_token[2]) / 3).item(),
                                            rel=1e-6)
    doubled = marker_weighted_loss(logits, labels, torch.tensor([5]), marker_weight=2.0)
    assert doubled.item() == pytest.approx(((2 * per_token[0] + per_token[1] + 2 * per_token[2]) / 3).item(), rel=1e-6)
    # no marker ids (None or empty) or a weight of 1: the plain mean
    plain = per_token.mean().item()
    assert marker_weighted_loss(logits, labels, None, marker_weight=0.5).item() == pytest.approx(plain, rel=1e-6)
    empty = torch.tensor([], dtype=torch.long)
    assert marker_weighted_loss(logits, labels, empty, marker_weight=0.5).item() == pytest.approx(plain, rel=1e-6)
    assert marker_weighted_loss(logits, labels, torch.tensor([5]), marker_weight=1.0).item() == pytest.approx(
        plain, rel=1e-6)


def test_one_labelled_token_and_none_at_all():
    logits = _logits(1, 2, 3)
    labels = torch.tensor([[2, -100]])
    single = F.cross_entropy(logits[0, :1], labels[0, :1]).item()
    assert marker_weighted_loss(logits, labels, None).item() == pytest.approx(single, rel=1e-6)
    # a batch without a labelled position: zero, not nan (the denominator is at least one)
    nothing = marker_weighted_loss(logits, torch.full((1, 2), -100), torch.tensor([2]), marker_weight=3.0)
    assert nothing.item() == 0.0


def test_loss_is_computed_in_float32_from_half_precision_logits():
    logits = _logits(1, 3, 4).to(torch.bfloat16)
    labels = torch.tensor([[0, 3, 1]])
    loss = marker_weighted_loss(logits, labels, None)
    assert loss.dtype == torch.float32
    assert loss.item() == pytest.approx(F.cross_entropy(logits[0].float(), labels[0]).item(), rel=1e-6)


class _Head(torch.nn.Module):
    """An output layer that records what it was called with (a second argument passes through)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = []

    def forward(self, hidden, scale=1.0):
        self.seen.append((hidden.shape, scale))
        return hidden * scale


class _Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.head = _Head()

    def get_output_embeddings(self):
        return self.head

    def forward(self, hidden, scale=2.0):
        return self.head(hidden, scale)


def test_the_output_layer_sees_labelled_positions_only_inside_the_block():
    model = _Model()
    hidden = torch.arange(2 * 3 * 4, dtype=torch.float32).reshape(2, 3, 4)
    labels = torch.tensor([[7, -100, 8], [-100, 9, -100]])
    labelled = _LabelledPositions(model)
    assert labelled.active
    assert model(hidden).shape == (2, 3, 4)  # before the block: everything
    with labelled.only(labels) as kept:
        assert torch.equal(kept, torch.tensor([7, 8, 9]))
        out = model(hidden, 3.0)
    assert torch.equal(out, hidden[labels != -100] * 3.0)  # the positional argument after the hidden states is kept
    assert model.head.seen[-1] == ((3, 4), 3.0)
    assert torch.equal(model(hidden), hidden * 2.0)  # after the block: everything again
    labelled.remove()
    assert not labelled.active
    labelled.remove()  # twice is harmless
    with labelled.only(labels) as kept:
        assert torch.equal(kept, labels) and model(hidden).shape == (2, 3, 4)


def test_an_exception_in_the_block_still_restores_full_outputs():
    model = _Model()
    labelled = _LabelledPositions(model)
    labels = torch.tensor([[1, -100]])
    with pytest.raises(RuntimeError), labelled.only(labels):
        raise RuntimeError("boom")
    assert model(torch.ones(1, 2, 3)).shape == (1, 2, 3)


def test_a_model_without_an_output_layer_keeps_its_outputs_and_labels():
    class NoHead(torch.nn.Module):
        def get_output_embeddings(self):
            return None

    labelled = _LabelledPositions(NoHead())
    assert not labelled.active
    labels = torch.tensor([[3, -100]])
    with labelled.only(labels) as kept:
        assert torch.equal(kept, labels)
    labelled.remove()
