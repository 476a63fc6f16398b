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
events and text it spells. Each hypothesis's state is carried from step to step: beam search
reorders hypotheses, so a row's parent is found by its prefix (the last step's row it extends,
among the rows of its sentence; a row with none, such as the first step of a ``generate`` call, is
read whole), and only the new token is applied. A state is a hashable value, so what it allows
(a *verdict*: which marker tokens and end-of-sentence ids it bans, how many tokens complete it) is
worked out once per distinct state and kind of sentence, and each step costs a lookup per row.
The masks touch only the marker and end-of-sentence columns, one gather and scatter for the whole
batch; the length rule writes the few non-text columns of a row (or all but its progressing
markers), never a vocabulary-sized list. The only transfer from the device per step is each row's
parent and new token. Works with greedy, beam, n-best and sampling, batched:
``slots_per_row[k]`` describes input sentence *k*, and the hypotheses of one sentence are
consecutive rows, as ``generate`` lays them out.

Measured (``benchmarks/bench_constrained_decoding.py``, ``facebook/m2m100_418M``'s shape, batch 16,
on CPU): see that script's docstring for constrained against free decoding time per step.
"""

from __future__ import annotations

import weakref
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


#: A marker state as a hashable value: ``(opened slots as sorted (slot, status) pairs, open slot,
#: text since open, bracket pairs used, valid)``; states are compared, cached and shared as these.
StateKey = tuple


def _key(state: _State) -> StateKey:
    """``state`` as a :data:`StateKey`."""
    return tuple(sorted(state.opened.items())), state.open_slot, state.text_since_open, state.used, state.valid


def _state_of(key: StateKey) -> _State:
    """A fresh :class:`_State` from a :data:`StateKey` (changing it leaves the key alone)."""
    return _State(dict(key[0]), key[1], key[2], key[3], key[4])


_FRESH: StateKey = _key(_State({}, None, False, 0))


@dataclass(frozen=True)
class _Verdict:
    """What one marker state allows in one kind of sentence (read once, then looked up).

    ``index`` is its row in the processor's table of banned columns, ``banned`` that row (one flag
    per column of ``MarkerConstraintProcessor._columns``), ``needed`` the fewest tokens that
    complete the markers, ``fill`` whether text may fill the open slot when the length is tight,
    and ``progress`` the ids of the marker tokens that stay allowed then.
    """

    index: int
    banned: tuple[bool, ...]
    needed: int
    fill: bool
    progress: tuple[int, ...]


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
        # Sentences with the same slots share their states' verdicts and transitions: their "kind".
        kinds: dict[tuple[int, frozenset[int]], int] = {}
        self._kind = [kinds.setdefault((n, slots), len(kinds)) for n, slots in zip(self.n_slots, self.slots, strict=True)]
        self._example = {kind: self._kind.index(kind) for kind in kinds.values()}  # a sentence of each kind
        #: The only columns the rules other than the length rule touch: marker tokens and end of sentence.
        self._columns = sorted(set(vocabulary.signatures) | set(self.eos))
        self._transitions: dict[tuple[int, StateKey, tuple[Event, ...]], StateKey] = {}
        self._verdicts: dict[tuple[int, StateKey], _Verdict] = {}
        self._tensors: dict[str, Any] = {}  # on the scores' device, for their width (see _tables)
        # Carried between steps: the last step's rows and the marker state of each.
        self._previous: Any = None
        self._keys: list[StateKey] = []

    # --- the state machine, per hypothesis ----------------------------------------------------

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

    def _step(self, kind: int, key: StateKey, token: int) -> StateKey:
        """The state after ``token``: a marker token applies its signature, a text token marks the
        open slot as filled, any other token (special, bare space) changes nothing."""
        signature = self.vocabulary.signatures.get(token)
        if signature is None:
            if not key[2] and token in self.vocabulary.text_tokens:
                return key[0], key[1], True, key[3], key[4]
            return key
        after = self._transitions.get((kind, key, signature))
        if after is None:
            sentence = self._example[kind]
            after = _key(_apply(_state_of(key), signature, self.n_slots[sentence], self.slots[sentence]))
            self._transitions[kind, key, signature] = after
        return after

    def _scan(self, row: Sequence[int], kind: int) -> StateKey:
        """The state of a whole decoder row (its first ``prompt_length`` tokens skipped)."""
        key = _FRESH
        for token in row[self.prompt_length:]:
            key = self._step(kind, key, token)
        return key

    def _verdict(self, kind: int, key: StateKey) -> _Verdict:
        verdict = self._verdicts.get((kind, key))
        if verdict is None:
            sentence, state = self._example[kind], _state_of(key)
            n_slots, slots = self.n_slots[sentence], self.slots[sentence]
            banned: set[int] = set()
            progress: list[int] = []
            for signature, token_ids in self.vocabulary.groups.items():
                if _apply(state, signature, n_slots, slots).valid:
                    progress.extend(token_ids)  # each of its markers opens or closes a slot
                else:
                    banned.update(token_ids)
            if not self._complete(state, sentence):
                banned.update(self.eos)
            verdict = _Verdict(len(self._verdicts), tuple(c in banned for c in self._columns),
                               self._needed(state, sentence), state.open_slot is not None and not state.text_since_open,
                               tuple(progress))
            self._verdicts[kind, key] = verdict
        return verdict

    # --- following hypotheses from step to step -------------------------------------------------

    def _sentences(self, rows: int) -> list[int]:
        """The input sentence of each row: its hypotheses are consecutive rows, as ``generate`` lays them out."""
        per_sentence = max(1, rows // max(1, len(self.slots)))
        return [min(r // per_sentence, len(self.slots) - 1) for r in range(rows)]

    def _parents(self, input_ids: Any, sentences: list[int]) -> tuple[list[int], list[int]]:
        """For each row, a row of the last step that holds its prefix (-1: none), and its new token.

        Beam search reorders hypotheses between steps; a row's prefix identifies its parent (rows
        with the same prefix have the same state, so any of them will do). Only rows of the same
        sentence are compared; the one transfer from the device holds these two short lists.
        """
        import torch

        rows, width = input_ids.shape[0], input_ids.shape[1] - 1
        prefix, previous = input_ids[:, :-1], self._previous
        per_sentence = max(1, rows // max(1, len(self.slots)))
        if rows % per_sentence == 0 and rows // per_sentence <= max(1, len(self.slots)):
            # Sentences are whole blocks of rows: compare each row with its own block only.
            blocks = rows // per_sentence
            same = (prefix.reshape(blocks, per_sentence, 1, width)
                    == previous.reshape(blocks, 1, per_sentence, width)).all(-1)
            offsets = torch.arange(blocks, device=input_ids.device)[:, None, None] * per_sentence
        else:
            sentence = torch.tensor(sentences, device=input_ids.device)
            same = (prefix[:, None] == previous[None]).all(-1) & (sentence[:, None] == sentence[None, :])
            same, offsets = same[None], torch.zeros(1, 1, 1, dtype=torch.long, device=input_ids.device)
        first = same.to(torch.uint8).argmax(-1, keepdim=True)  # the first matching row
        parent = torch.where(same.any(-1, keepdim=True), first + offsets, -1).reshape(rows)
        parents, last = torch.stack([parent, input_ids[:, -1]]).tolist()
        return parents, last

    def _advance(self, input_ids: Any) -> list[_Verdict]:
        """The verdict of every row, its state carried over from its parent at the last step."""
        rows, length = input_ids.shape
        sentences = self._sentences(rows)
        kinds = [self._kind[s] for s in sentences]
        previous = self._previous
        if previous is not None and previous.shape == (rows, length - 1) and previous.device == input_ids.device:
            parents, last = self._parents(input_ids, sentences)
            counted = length - 1 >= self.prompt_length  # the new token is generated text
            keys = [self._scan(input_ids[r].tolist(), kind) if p < 0  # no parent: read the row whole
                    else self._step(kind, self._keys[p], token) if counted else self._keys[p]
                    for r, (kind, p, token) in enumerate(zip(kinds, parents, last, strict=True))]
        else:  # the first step of a generate call: read the (short) rows whole
            keys = [self._scan(row, kind) for row, kind in zip(input_ids.tolist(), kinds, strict=True)]
        self._previous, self._keys = input_ids.detach().clone(), keys
        return [self._verdict(kind, key) for kind, key in zip(kinds, keys, strict=True)]

    # --- masks ------------------------------------------------------------------------------

    def _tables(self, scores: Any) -> dict[str, Any]:
        """Tensors on the scores' device, built once per processor: the columns the rules touch,
        the banned flags of every verdict so far (one row each), and per verdict the ids the length
        rule keeps (``progress``) or, where text may fill the open slot, the few it blocks."""
        import torch

        tensors, device, width = self._tensors, scores.device, scores.shape[1]
        if tensors.get("device") != device or tensors.get("width") != width:
            tensors.clear()
            tensors.update(device=device, width=width, progress={}, blocked={},
                           columns=torch.tensor(self._columns, dtype=torch.long, device=device))
        if tensors.get("verdicts") != len(self._verdicts):
            flags = [v.banned for v in sorted(self._verdicts.values(), key=lambda v: v.index)]
            tensors["banned"] = torch.tensor(flags, dtype=torch.bool, device=device).reshape(
                len(flags), len(self._columns))
            tensors["verdicts"] = len(self._verdicts)
        return tensors

    def _kept(self, tensors: dict[str, Any], verdict: _Verdict) -> Any:
        """The ids a tight row of ``verdict`` may still take where its open slot needs no text: the
        marker tokens that progress."""
        kept = tensors["progress"].get(verdict.index)
        if kept is None:
            import torch

            kept = torch.tensor(verdict.progress, dtype=torch.long, device=tensors["device"])
            tensors["progress"][verdict.index] = kept
        return kept

    def _blocked(self, tensors: dict[str, Any], verdict: _Verdict) -> Any:
        """The ids a tight row of ``verdict`` may not take where text may fill its open slot: every
        token that is not text (special tokens, bare spaces, rows past the tokenizer), except the
        marker tokens that progress. Few, so they are written one by one."""
        blocked = tensors["blocked"].get(verdict.index)
        if blocked is None:
            import torch

            not_text = _not_text(self.vocabulary, tensors["width"])
            progress = set(verdict.progress)
            blocked = torch.tensor([i for i in not_text if i not in progress], dtype=torch.long,
                                   device=tensors["device"])
            tensors["blocked"][verdict.index] = blocked
        return blocked

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

        verdicts = self._advance(input_ids)
        left = self._tokens_left(input_ids.shape[1])
        tensors = self._tables(scores)
        columns = tensors["columns"].expand(scores.shape[0], -1)
        banned = tensors["banned"][torch.tensor([v.index for v in verdicts], device=scores.device)]
        constrained = scores.scatter(1, columns, scores.gather(1, columns).masked_fill(banned, float("-inf")))
        if left is None:
            return constrained
        # Rows whose tokens left only just complete their markers may take only tokens that progress;
        # where that leaves no finite score (another processor, e.g. a forced language token, allows
        # a single token), the row keeps the other rules alone. ``constrained`` is this call's own.
        markers_only: dict[int, list[int]] = {}
        with_text: dict[int, list[int]] = {}
        for r, verdict in enumerate(verdicts):
            if verdict.needed == left:
                (with_text if verdict.fill else markers_only).setdefault(verdict.index, []).append(r)
        by_index = {v.index: v for v in verdicts}
        for index, rows in markers_only.items():
            kept = self._kept(tensors, by_index[index])
            which = torch.tensor(rows, device=scores.device)[:, None]
            values = constrained[which, kept]
            finite = torch.isfinite(values).any(dim=1)
            which, values = which[finite], values[finite]
            constrained[which[:, 0]] = float("-inf")
            constrained[which, kept] = values
        if with_text:
            saved = []
            for index, rows in with_text.items():
                blocked = self._blocked(tensors, by_index[index])
                which = torch.tensor(rows, device=scores.device)[:, None]
                saved.append((which, blocked, constrained[which, blocked]))
                constrained[which, blocked] = float("-inf")
            # One read of those rows: a finite maximum is a finite score, -inf is none; only a NaN or
            # +inf maximum needs the element-wise test.
            which = torch.cat([w for w, _, _ in saved])[:, 0]
            top = constrained.amax(dim=1)[which] if 2 * len(which) >= len(constrained) else \
                constrained[which].amax(dim=1)
            finite = torch.isfinite(top)
            unsure = torch.isnan(top) | (top == float("inf"))
            if bool(unsure.any()):
                finite[unsure] = torch.isfinite(constrained[which[unsure]]).any(dim=1)
            start = 0
            for rows_in, blocked, values in saved:  # no finite score left: give the row back its values
                back = ~finite[start : start + len(rows_in)]
                start += len(rows_in)
                constrained[rows_in[back], blocked] = values[back]
        return constrained


def _not_text(vocabulary: MarkerVocabulary, width: int) -> list[int]:
    """The ids below ``width`` that are not text tokens of ``vocabulary`` (read once per vocabulary)."""
    by_width = _NOT_TEXT.setdefault(vocabulary, {})
    if width not in by_width:
        text = vocabulary.text_tokens
        by_width[width] = [i for i in range(width) if i not in text]
    return by_width[width]


_NOT_TEXT: weakref.WeakKeyDictionary[MarkerVocabulary, dict[int, list[int]]] = weakref.WeakKeyDictionary()
