"""A linear-chain CRF over word positions, with Viterbi decoding constrained to valid BIO.

Written here rather than taken from pytorch-crf because the joint parser needs two things that
package does not give: decoding restricted to valid IOB2 sequences (no ``I-X`` after ``O``, after
``B-Y`` or at the start), with the same restriction usable in training so that the model never
puts probability mass on sequences it can never output; and per-sequence path probabilities for
the pipeline's ``score``. pytorch-crf also requires the first position of every mask to be on,
which an empty utterance breaks; here a row without words scores 0 and decodes to ``[]``. The
module imports nothing from crop-hf, so a saved model folder carries it as remote code.

Masks are prefixes (the first ``n`` words of a row), which is what compacting first sub-words to
word positions produces.

>>> allowed_start, allowed = bio_constraints(["O", "B-DATE", "I-DATE"])
>>> allowed_start, allowed[0]
([True, True, False], [True, True, False])
>>> is_valid_bio(["O", "I-DATE"]), is_valid_bio(["B-DATE", "I-DATE", "O"])
(False, True)
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

__all__ = ["ConstrainedCRF", "bio_constraints", "is_valid_bio", "viterbi_decode"]

#: Score added to a forbidden transition: large enough that no sequence using one survives in
#: decoding or carries visible mass in the partition function, small enough to stay finite in
#: float16 sums of a few hundred positions (``-inf`` would give NaN gradients through logsumexp).
FORBIDDEN = -1e4


def _split(tag: str) -> tuple[str, str | None]:
    if tag == "O":
        return "O", None
    prefix, _, name = tag.partition("-")
    return prefix, name


def bio_constraints(labels: Sequence[str]) -> tuple[list[bool], list[list[bool]]]:
    """``(allowed_start, allowed)`` for IOB2 tags: ``allowed[i][j]`` says tag ``j`` may follow tag ``i``.

    ``I-X`` may only follow ``B-X`` or ``I-X`` and may not start a sequence; every other transition
    is allowed. Tags that are not ``O``, ``B-*`` or ``I-*`` raise ``ValueError``.
    """
    parts = [_split(tag) for tag in labels]
    for tag, (prefix, name) in zip(labels, parts, strict=True):
        if prefix not in ("O", "B", "I") or (prefix != "O" and not name):
            raise ValueError(f"slot label {tag!r} is not an IOB2 tag (O, B-NAME or I-NAME)")
    allowed_start = [prefix != "I" for prefix, _ in parts]
    allowed = [[prefix_j != "I" or (prefix_i in ("B", "I") and name_i == name_j)
                for prefix_j, name_j in parts] for prefix_i, name_i in parts]
    return allowed_start, allowed


def is_valid_bio(tags: Sequence[str]) -> bool:
    """Whether ``tags`` is a valid IOB2 sequence (every ``I-X`` continues a ``B-X``/``I-X``)."""
    previous = "O"
    for tag in tags:
        prefix, name = _split(tag)
        if prefix == "I" and _split(previous) not in (("B", name), ("I", name)):
            return False
        previous = tag
    return True


def viterbi_decode(emissions: torch.Tensor, mask: torch.Tensor, transitions: torch.Tensor,
                   start: torch.Tensor, end: torch.Tensor) -> tuple[list[list[int]], torch.Tensor]:
    """Best tag sequence of each row and its unnormalised score.

    ``emissions`` ``(batch, words, tags)``; ``mask`` ``(batch, words)`` prefixes; ``transitions``
    ``(tags, tags)`` (from, to); ``start``/``end`` ``(tags,)``. Forbidden moves are expressed as
    :data:`FORBIDDEN` scores by the caller. A row whose mask is all off decodes to ``[]`` (score 0).
    """
    batch, length, _ = emissions.shape
    lengths = mask.long().sum(1)
    score = start + emissions[:, 0]
    history = []
    for t in range(1, length):
        candidates = score.unsqueeze(2) + transitions.unsqueeze(0)  # (batch, from, to)
        best, index = candidates.max(1)
        history.append(index)
        score = torch.where(mask[:, t].unsqueeze(1), best + emissions[:, t], score)
    score = score + end
    best_scores, best_last = score.max(1)
    paths: list[list[int]] = []
    for row in range(batch):
        n = int(lengths[row])
        if n == 0:
            paths.append([])
            continue
        tag = int(best_last[row])
        path = [tag]
        for t in range(n - 1, 0, -1):
            tag = int(history[t - 1][row, tag])
            path.append(tag)
        paths.append(path[::-1])
    return paths, torch.where(lengths > 0, best_scores, torch.zeros_like(best_scores))


def sequence_score(emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor, transitions: torch.Tensor,
                   start: torch.Tensor, end: torch.Tensor) -> torch.Tensor:
    """Unnormalised score ``(batch,)`` of given tag sequences: what :func:`viterbi_decode` maximises.

    Same arguments as :func:`viterbi_decode`, plus ``tags`` ``(batch, words)`` (ids outside ``mask``
    are ignored). A row whose mask is all off scores 0.
    """
    batch, length, _ = emissions.shape
    lengths = mask.long().sum(1)
    safe = tags.clamp(min=0) * mask.long()  # ids outside the mask (padding, -100) never index
    rows = torch.arange(batch, device=emissions.device)
    score = start[safe[:, 0]] + emissions[rows, 0, safe[:, 0]]
    for t in range(1, length):
        step = transitions[safe[:, t - 1], safe[:, t]] + emissions[rows, t, safe[:, t]]
        score = score + step * mask[:, t]
    last = safe[rows, (lengths - 1).clamp(min=0)]
    score = score + end[last]
    return torch.where(lengths > 0, score, torch.zeros_like(score))


class ConstrainedCRF(nn.Module):
    """Linear-chain CRF with start, end and pairwise transition scores.

    Args:
        num_tags: number of tags.
        allowed_start, allowed: from :func:`bio_constraints`; ``None`` for an unconstrained CRF.
        constrain_training: apply the constraints in :meth:`log_likelihood` too, so the
            normaliser sums over valid sequences only (what decoding can return).
    """

    def __init__(self, num_tags: int, allowed_start: Sequence[bool] | None = None,
                 allowed: Sequence[Sequence[bool]] | None = None, constrain_training: bool = True) -> None:
        super().__init__()
        self.num_tags = num_tags
        self.constrain_training = constrain_training
        self.start_transitions = nn.Parameter(torch.empty(num_tags).uniform_(-0.1, 0.1))
        self.end_transitions = nn.Parameter(torch.empty(num_tags).uniform_(-0.1, 0.1))
        self.transitions = nn.Parameter(torch.empty(num_tags, num_tags).uniform_(-0.1, 0.1))
        # Plain lists, not buffers: the constraints follow from the label names, and buffers made in
        # __init__ are left uninitialised when transformers builds the model on the meta device.
        self.allowed_start = list(allowed_start) if allowed_start is not None else None
        self.allowed = [list(row) for row in allowed] if allowed is not None else None
        self._penalties: dict[torch.device, tuple[torch.Tensor | None, torch.Tensor | None]] = {}

    def _penalty(self, device: torch.device) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        # Built once per device: making a (tags, tags) tensor from lists cost ~9% of decoding time.
        if device not in self._penalties:
            self._penalties[device] = tuple(
                torch.where(torch.tensor(mask, device=device), 0.0, FORBIDDEN) if mask is not None else None
                for mask in (self.allowed, self.allowed_start))
        return self._penalties[device]

    def _scores(self, constrained: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        if not constrained:
            return self.transitions, self.start_transitions, self.end_transitions
        transitions, start = self.transitions, self.start_transitions
        penalty, start_penalty = self._penalty(self.transitions.device)
        if penalty is not None:
            transitions = transitions + penalty
        if start_penalty is not None:
            start = start + start_penalty
        return transitions, start, self.end_transitions

    def log_likelihood(self, emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor,
                       constrained: bool | None = None) -> torch.Tensor:
        """``log p(tags | emissions)`` of each row, shape ``(batch,)``; rows without words give 0.

        ``constrained``: normalise over valid sequences only (what :meth:`decode`'s probabilities do);
        default ``constrain_training``.
        """
        transitions, start, end = self._scores(self.constrain_training if constrained is None else constrained)
        return sequence_score(emissions, tags, mask, transitions, start, end) - \
            self._log_partition(emissions, mask, transitions, start, end)

    def decode(self, emissions: torch.Tensor, mask: torch.Tensor) -> tuple[list[list[int]], torch.Tensor]:
        """Constrained Viterbi: best valid path of each row and its log-probability under the model."""
        transitions, start, end = self._scores(True)
        paths, best = viterbi_decode(emissions, mask, transitions, start, end)
        log_z = self._log_partition(emissions, mask, transitions, start, end)
        return paths, best - log_z

    @staticmethod
    def _log_partition(emissions, mask, transitions, start, end) -> torch.Tensor:
        # The forward algorithm as a matrix product in scaled probability space, instead of a logsumexp
        # that materialises (and back-propagates through) a (batch, tags, tags) tensor at every word.
        lengths = mask.long().sum(1)
        shift = transitions.max().detach()
        probabilities = (transitions - shift).exp()  # forbidden moves become exactly 0
        alpha = start + emissions[:, 0]
        for t in range(1, emissions.shape[1]):
            top = alpha.max(1, keepdim=True).values.detach()
            step = ((alpha - top).exp() @ probabilities).clamp(min=1e-30).log() + top + shift + emissions[:, t]
            alpha = torch.where(mask[:, t].unsqueeze(1), step, alpha)
        log_z = torch.logsumexp(alpha + end, dim=1)
        return torch.where(lengths > 0, log_z, torch.zeros_like(log_z))
