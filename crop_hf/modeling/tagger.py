"""One level's slot tagger of the joint parser: tag scores of words, their CRF, their loss and best path.

:class:`~crop_hf.modeling.modeling_joint.JointIntentSlotModel` builds this type twice: the top-level
tagger and, for a hierarchical model, the inner tagger that tags the words of each intent nested in a
slot. What ``top_tagger`` chose is settled when they are built, so the model's forward pass, losses
and search (:mod:`crop_hf.modeling.search`) call a tagger instead of testing the switch:

* ``"words"``: the top tagger scores each word's own state (``slot_classifier``, ``crf``);
* ``"intent"``: it scores each word's state given the utterance's intent, by layers of its own
  (``top_projection``, ``top_intent_embeddings``, ``top_slot_classifier``, ``crf``);
* ``"shared"``: the top tagger *is* the inner tagger (``inner_projection``,
  ``inner_intent_embeddings``, ``inner_slot_classifier``, ``inner_crf``).

A tagger owns no parameters: its layers stay registered on the model under those names (the
state-dict keys of checkpoints saved before the tagger existed), and it looks them up by name at each
call, so a layer that another library swaps in place (an adapter) is the one used. Like the rest of
the model's code it imports only its siblings, so saved models carry it as remote code.
"""

from __future__ import annotations

import torch
from torch import nn

from .crf import ConstrainedCRF, sequence_score, viterbi_decode

__all__ = ["SlotTagger", "compact", "tag_loss"]


def compact(token_scores: torch.Tensor, word_index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Token-level scores ``(batch, tokens, tags)`` at first sub-words → ``(batch, words, tags)`` and a word mask."""
    batch, _, tags = token_scores.shape
    words = int(word_index.max().item()) + 1 if word_index.numel() else 0
    words = max(words, 1)
    out = token_scores.new_zeros(batch, words, tags)
    mask = torch.zeros(batch, words, dtype=torch.bool, device=token_scores.device)
    rows, columns = (word_index >= 0).nonzero(as_tuple=True)
    positions = word_index[rows, columns]
    out[rows, positions] = token_scores[rows, columns]
    mask[rows, positions] = True
    lengths = mask.sum(1, keepdim=True)
    if not torch.equal(mask, torch.arange(words, device=mask.device).unsqueeze(0) < lengths):
        raise ValueError("word_index must number each row's words 0, 1, 2, ... at their first sub-words "
                         "(a word without sub-words leaves a gap)")
    return out, mask


def tag_loss(emissions: torch.Tensor, mask: torch.Tensor, labels: torch.Tensor,
             crf: ConstrainedCRF | None) -> torch.Tensor:
    """Mean negative log-likelihood (``crf``) or cross-entropy per word (no CRF) of word-level ``labels``."""
    words = emissions.shape[1]
    if labels.shape[1] < words:
        labels = nn.functional.pad(labels, (0, words - labels.shape[1]), value=-100)
    labels = labels[:, :words]  # words cut off by truncation are not trained on
    if bool(((labels < 0) & mask).any()):
        raise ValueError("slot_labels hold -100 inside an utterance; label every word")
    if crf is None:
        return nn.functional.cross_entropy(emissions[mask], labels[mask]) if mask.any() else emissions.sum() * 0
    log_likelihood = crf.log_likelihood(emissions, labels, mask)
    return -log_likelihood.sum() / mask.any(1).sum().clamp(min=1)


class SlotTagger:
    """A slot tagger over the layers of ``owner`` named here: ``classifier`` scores tags, ``crf`` (its
    value may be ``None``: no CRF) scores paths, and with ``projection`` and ``intent_embeddings`` the
    scores are conditioned on an intent. ``allowed_start``/``allowed`` are the IOB2 constraints
    (:func:`~crop_hf.modeling.crf.bio_constraints`) that decoding keeps without a CRF.
    """

    def __init__(self, owner: nn.Module, classifier: str, crf: str, allowed_start: list[bool],
                 allowed: list[list[bool]], *, projection: str | None = None,
                 intent_embeddings: str | None = None) -> None:
        if (projection is None) != (intent_embeddings is None):
            raise ValueError("a conditioned tagger needs both a projection and intent embeddings")
        self._owner = owner
        self._classifier, self._crf = classifier, crf
        self._projection, self._intent_embeddings = projection, intent_embeddings
        self._allowed_start, self._allowed = allowed_start, allowed

    def __repr__(self) -> str:
        layers = [self._projection, self._intent_embeddings, self._classifier, self._crf]
        return f"SlotTagger({', '.join(name for name in layers if name)})"

    @property
    def conditioned(self) -> bool:
        """Whether tag scores depend on an intent (the top level's with ``top_tagger`` ``"intent"``/``"shared"``)."""
        return self._projection is not None

    @property
    def crf(self) -> ConstrainedCRF | None:
        return getattr(self._owner, self._crf)

    # ------------------------------------------------------------------ tag scores

    def emissions(self, words: torch.Tensor, intents: torch.Tensor | None = None) -> torch.Tensor:
        """Tag scores ``(n, words, tags)`` of word states ``(n, words, hidden)``, each row given its intent
        (``(n,)``; an unconditioned tagger reads the words alone)."""
        classifier = getattr(self._owner, self._classifier)
        if not self.conditioned:
            return classifier(words)
        projection, embeddings = getattr(self._owner, self._projection), getattr(self._owner, self._intent_embeddings)
        state = nn.functional.gelu(projection(words) + embeddings(intents).unsqueeze(1))
        return classifier(self._owner.dropout(state))

    def utterance_emissions(self, hidden: torch.Tensor, word_index: torch.Tensor, word_hidden: torch.Tensor,
                            intents: torch.Tensor) -> torch.Tensor:
        """The top level's tag scores ``(batch, words, tags)``: an unconditioned tagger scores each word
        at its first sub-word (token states ``hidden``, then :func:`compact`), a conditioned one the word
        states ``word_hidden`` given ``intents``."""
        if not self.conditioned:
            return compact(self.emissions(hidden), word_index)[0]
        return self.emissions(word_hidden, intents)

    # ------------------------------------------------------------------ paths

    def loss(self, emissions: torch.Tensor, mask: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """:func:`tag_loss` under this tagger's CRF."""
        return tag_loss(emissions, mask, labels, self.crf)

    def _without_crf(self, emissions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        # Without a CRF a path scores its words' log-softmax, and a move invalid in IOB2 a penalty.
        device = emissions.device
        penalty = torch.where(torch.tensor(self._allowed, device=device), 0.0, -1e4)
        start = torch.where(torch.tensor(self._allowed_start, device=device), 0.0, -1e4)
        return emissions.log_softmax(-1), penalty, start, torch.zeros_like(start)

    def decode(self, emissions: torch.Tensor, mask: torch.Tensor) -> tuple[list[list[int]], torch.Tensor]:
        """Best valid IOB2 path of each row and its log-probability (Viterbi)."""
        crf = self.crf
        if crf is not None:
            return crf.decode(emissions, mask)
        log_softmax, penalty, start, end = self._without_crf(emissions)
        return viterbi_decode(log_softmax, mask, penalty, start, end)

    def log_probability(self, emissions: torch.Tensor, mask: torch.Tensor, tags: torch.Tensor) -> torch.Tensor:
        """Log-probability ``(n,)`` of given tag sequences, as :meth:`decode` scores the one it returns."""
        crf = self.crf
        if crf is not None:
            return crf.log_likelihood(emissions, tags, mask, constrained=True)
        log_softmax, penalty, start, end = self._without_crf(emissions)
        return sequence_score(log_softmax, tags, mask, penalty, start, end)
