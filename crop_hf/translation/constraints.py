"""Marker-constrained decoding: a ``LogitsProcessor`` that lets a hypothesis emit only well-formed markers.

Free decoding leaves it to the model to copy every marker of the source exactly once and in
pairs; a model that has not learned it (or learned it imperfectly) drops, repeats or nests
markers. Constraining the search (as CODEC does for label projection) makes the markers
complete by construction; what remains for the model is *where* they land. Per hypothesis:

* only the source's own slots may appear (typed styles: ``__SLOT3__`` only if the source has
  slot 3; untyped styles: no more bracket pairs than the source has);
* each slot opens once and closes once, and closes only after it opened, with at least one
  token of text in between;
* no marker inside another slot's span (the source never nests slots);
* no end of sentence while a slot is open or unused;
* within the length limit (``max_new_tokens``): once the tokens left are just enough to close the
  open slot and open, fill and close each unused one, only tokens that do so are allowed, so a
  hypothesis that runs to the limit (a looping model) still comes back complete.

The vocabulary is read once: every token whose text holds a marker (or a fragment such as
``__SLOT3`` that extraction would report as garbled) gets a *signature*, the sequence of marker
events and text it spells. At each step the state of every hypothesis is rebuilt from the marker
tokens it holds (beam search reorders hypotheses, so nothing is carried between steps), and each
distinct signature is tested once per hypothesis. Works with greedy, beam, n-best and sampling,
batched: ``slots_per_row[k]`` describes input sentence *k*, and the hypotheses of one sentence are
consecutive rows, as ``generate`` lays them out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from crop_hf.translation.marker_tokens import Event, MarkerVocabulary

__all__ = ["MarkerConstraintProcessor"]



@dataclass
class _State:
    opened: dict[int, int]  # typed: slot -> 1 (open) or 2 (closed)
    open_slot: Any  # the slot currently open (untyped: True), or None
    text_since_open: bool
    used: int  # untyped: bracket pairs opened so far
    valid: bool = True

    def copy(self) -> _State:
        return _State(dict(self.opened), self.open_slot, self.text_since_open, self.used, self.valid)


def _apply(state: _State, events: Sequence[Event], n_slots: int, slots: frozenset[int]) -> _State:
    state = state.copy()
    for event in events:
        kind = event[0]
        if kind == "text":
            state.text_since_open = True
        elif kind == "garbled":
            state.valid = False
        elif kind == "slot":
            slot = event[1]
            status = state.opened.get(slot, 0)
            if slot not in slots or status == 2:
                state.valid = False
            elif status == 0:
                if state.open_slot is not None:
                    state.valid = False
                state.opened[slot], state.open_slot, state.text_since_open = 1, slot, False
            else:
                if not state.text_since_open:
                    state.valid = False
                state.opened[slot], state.open_slot = 2, None
        elif kind == "open":
            if state.open_slot is not None or state.used >= n_slots:
                state.valid = False
            state.open_slot, state.text_since_open, state.used = True, False, state.used + 1
        elif kind == "close":
            if state.open_slot is None or not state.text_since_open:
                state.valid = False
            state.open_slot = None
        if not state.valid:
            return state
    return state


class MarkerConstraintProcessor:
    """A ``transformers`` logits processor enforcing well-formed markers (see the module docstring).

    Args:
        vocabulary: the :class:`MarkerVocabulary` of the model's tokenizer.
        slots_per_row: for each input sentence, the slot numbers its source holds (typed styles),
            or, for untyped styles, as many slot numbers as it has slots (they are counted).
        eos_token_id: the end-of-sentence id(s), forbidden while a slot is open or unused.
        prompt_length: tokens at the start of every decoder row that are not generated text
            (decoder start and forced language token are never markers, so 0 is safe).
        max_new_tokens: ``generate``'s limit on new tokens (counted from the decoder length at the
            first call); ``max_length``: its limit on the whole decoder row, used when
            ``max_new_tokens`` is ``None``. With neither, hypotheses that reach the limit may stop
            with a slot open or unused.
    """

    def __init__(self, vocabulary: MarkerVocabulary, slots_per_row: Sequence[Sequence[int]],
                 eos_token_id: int | Sequence[int] | None, prompt_length: int = 0,
                 max_new_tokens: int | None = None, max_length: int | None = None) -> None:
        self.vocabulary = vocabulary
        self.max_new_tokens, self.max_length = max_new_tokens, max_length
        self._start: int | None = None  # the decoder length at the first step of the current call
        self._last = 0
        self.slots = [frozenset(int(s) for s in slots) for slots in slots_per_row]
        self.n_slots = [len(slots) for slots in slots_per_row]
        eos = [] if eos_token_id is None else [eos_token_id] if isinstance(eos_token_id, int) else list(eos_token_id)
        self.eos = eos
        self.prompt_length = prompt_length
        style = vocabulary.style
        if style.typed:
            missing = sorted({s for slots in self.slots for s in slots} - vocabulary.single_token_slots)
            if missing:
                raise ValueError(
                    f"constrained decoding needs every marker as one token, but slot(s) {missing} of the "
                    f"{style.name!r} style are not single tokens of this tokenizer; add them "
                    "(crop_hf.translation.marker_tokens.add_marker_tokens) or decode without constrain_markers")
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

    def _complete(self, state: _State, sentence: int) -> bool:
        if not state.valid or state.open_slot is not None:
            return False
        if self.vocabulary.style.typed:
            return all(state.opened.get(s) == 2 for s in self.slots[sentence])
        return state.used >= self.n_slots[sentence]

    def _needed(self, state: _State, sentence: int) -> int:
        """The fewest tokens that complete ``state``'s markers: a text token if the open slot has none
        and its closing marker, then an opening marker, a text token and a closing marker per unused slot."""
        needed = 0 if state.open_slot is None else 2 - state.text_since_open
        if self.vocabulary.style.typed:
            unused = sum(state.opened.get(s, 0) == 0 for s in self.slots[sentence])
        else:
            unused = self.n_slots[sentence] - state.used
        return needed + 3 * max(unused, 0)

    def _tokens_left(self, length: int) -> int | None:
        """How many tokens ``generate`` still lets a row of ``length`` emit, this step's included."""
        if self._start is None or length <= self._last:  # the first step of a generate call
            self._start = length
        self._last = length
        if self.max_new_tokens is not None:
            return self._start + self.max_new_tokens - length
        return None if self.max_length is None else self.max_length - length

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
