"""The marker-constrained decoder as it was before its state was carried between steps (a reference).

``crop_hf.translation.constraints.MarkerConstraintProcessor``'s ``__call__`` (and the ``_state`` it
read rows with) copied verbatim from before it kept each hypothesis's marker state between steps:
it rebuilds every row's state from its whole prefix at every call. ``tests/test_translation_constraints.py``
checks that the incremental processor returns exactly what this one returns, step by step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# The state machine's rules on signature events are the module's own (unchanged, and tested event
# by event on their own); what this copy keeps is how every step re-read whole prefixes.
from crop_hf.translation.constraints import MarkerConstraintProcessor, _apply, _State
from crop_hf.translation.marker_tokens import MarkerVocabulary


class ReferenceMarkerConstraintProcessor(MarkerConstraintProcessor):
    """The processor's per-step work as it was: every row re-read, two full masks, a list of every text token.

    The arguments, the end-of-sentence and length rules (``_complete``, ``_needed``,
    ``_tokens_left``) are the processor's own, unchanged by carrying the state.
    """

    def __init__(self, vocabulary: MarkerVocabulary, slots_per_row: Sequence[Sequence[int]],
                 eos_token_id: int | Sequence[int] | None, prompt_length: int = 0,
                 max_new_tokens: int | None = None, max_length: int | None = None) -> None:
        super().__init__(vocabulary, slots_per_row, eos_token_id, prompt_length, max_new_tokens, max_length)
        self._marker_ids: Any = None
        self._text_ids = sorted(vocabulary.text_tokens)

    def _state(self, row: Sequence[int], sentence: int) -> _State:
        state = _State({}, None, False, 0)
        signatures, text_tokens = self.vocabulary.signatures, self.vocabulary.text_tokens
        for token in row[self.prompt_length:]:
            signature = signatures.get(token)
            if signature is not None:
                state = _apply(state, signature, self.n_slots[sentence], self.slots[sentence])
            elif token in text_tokens:
                state.text_since_open = True
        return state

    def __call__(self, input_ids, scores):
        import torch

        rows = input_ids.shape[0]
        per_sentence = max(1, rows // max(1, len(self.slots)))
        if self._marker_ids is None:
            self._marker_ids = torch.tensor(self.vocabulary.marker_ids, dtype=torch.long,
                                            device=scores.device)
        # Rows with no marker token so far share one state per sentence: only scan the others.
        has_marker = torch.isin(input_ids, self._marker_ids.to(input_ids.device)).any(dim=1).tolist()
        banned = torch.zeros_like(scores, dtype=torch.bool)
        # Rows whose tokens left only just complete their markers may take only tokens that progress.
        short = torch.zeros_like(scores, dtype=torch.bool)
        left = self._tokens_left(input_ids.shape[1])
        ids = input_ids.tolist()
        for r in range(rows):
            sentence = min(r // per_sentence, len(self.slots) - 1)
            state = self._state(ids[r], sentence) if has_marker[r] else _State({}, None, False, 0)
            tight = left is not None and self._needed(state, sentence) == left
            if tight:  # text only fills an open, still empty slot; no other unmarked token helps
                short[r] = True
                if state.open_slot is not None and not state.text_since_open:
                    short[r, self._text_ids] = False
            for signature, token_ids in self.vocabulary.groups.items():
                after = _apply(state, signature, self.n_slots[sentence], self.slots[sentence])
                if not after.valid:
                    banned[r, token_ids] = True
                elif tight:  # each marker a valid token holds opens or closes a slot: it needs one token less
                    short[r, token_ids] = False
            if not self._complete(state, sentence):
                banned[r, self.eos] = True
        constrained = scores.masked_fill(banned, float("-inf"))
        if not short.any():
            return constrained
        # Where the length rule leaves no token at all (another processor, e.g. a forced language
        # token, allows only one), the row keeps the other rules alone.
        shorter = constrained.masked_fill(short, float("-inf"))
        return torch.where(torch.isfinite(shorter).any(dim=1, keepdim=True), shorter, constrained)
