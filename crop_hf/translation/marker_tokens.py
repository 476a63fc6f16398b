"""Marker tokens: the one home for boundary markers as tokens of a translation model.

:mod:`crop_hf.markers` knows markers as text. A translation model needs them as tokens, in three
places that must agree: the labeled-translation pipeline (which keeps them when decoding), the
marker-constrained decoder (which steers them) and marker MT training (which weights them in the
loss). All three use this module:

* :func:`add_marker_tokens` makes every marker of a style one special token and gives new rows of
  the embedding matrix their starting values;
* :class:`MarkerVocabulary` reads a tokenizer once: which token spells which marker events (its
  *signature*), which tokens are plain text, and :attr:`MarkerVocabulary.marker_ids`, the ids of
  every token that holds a marker.

Why special tokens: a special token is never split, normalised or merged with a neighbour, so
``__SLOT3__`` is always exactly one id, which the constrained decoder needs; the pipeline decodes
them back (:meth:`MarkerVocabulary.decode` drops the other special tokens only).

Why this initialisation: each new row is the mean of the pretrained rows plus Gaussian noise of a
tenth of their per-dimension standard deviation. The mean keeps the first forward passes in the
range the network was trained on (a random row of the wrong scale disturbs every layer above it);
the noise lets the slots tell each other apart from the first step. transformers' own
``resize_token_embeddings`` (``mean_resizing``) samples around the mean with a covariance scaled by
1e-9, so every new row past the old matrix starts as the same vector (and markers that land in
spare rows keep whatever those rows held). Measured on the marker-MT benchmark, markers added to a
tokenizer that lacked them (``benchmarks/bench_marker_mt.py --marker_init mean|resize``, 900 steps,
11.7 minutes each, 300 val pairs, greedy): the noisy mean reached constrained slot accuracy 0.346
and BLEU 15.2, transformers' resizing 0.179 and 7.1 (free-decoding completeness 0.863 vs 0.953).

EasyProject's brackets are ordinary text and need no new tokens.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Literal

from crop_hf.markers import MarkerStyle, get_marker_style

__all__ = ["MarkerVocabulary", "add_marker_tokens", "marker_strings"]

logger = logging.getLogger(__name__)

_SPACE_PIECES = str.maketrans({"▁": " ", "Ġ": " ", "Ċ": " "})

#: Signature events: ("text",), ("slot", i) for a typed marker, ("open",), ("close",), ("garbled",).
Event = tuple


def marker_strings(marker_style: str | MarkerStyle = "crop", num_markers: int = 16) -> list[str]:
    """Every marker string of slots ``0 .. num_markers-1`` in ``marker_style``, each once, in slot order.

    >>> marker_strings("crop", 2)
    ['__SLOT0__', '__SLOT1__']
    """
    style = get_marker_style(marker_style)
    return list(dict.fromkeys(m for slot in range(num_markers) for m in style.markers(slot)))


def add_marker_tokens(tokenizer: Any, model: Any, marker_style: str | MarkerStyle = "crop", num_markers: int = 16,
                      *, seed: int = 0, init: Literal["mean", "resize"] = "mean") -> list[int]:
    """Make every marker of ``marker_style`` one special token and give new ones their embeddings.

    Returns the ids of the tokens added (empty when the tokenizer already has them all, or for an
    untyped style such as EasyProject's brackets, which are text). ``init="mean"`` (the default,
    see the module docstring) starts each new row at the mean of the existing rows plus noise of
    0.1 of their per-dimension standard deviation, drawn from ``seed``; the output projection is
    tied to the input embeddings in M2M100/NLLB/mBART and set the same way where it is not.
    ``init="resize"`` keeps what ``resize_token_embeddings`` gives (transformers' mean resizing),
    for comparison only.
    """
    import torch

    style = get_marker_style(marker_style)
    if not style.typed:
        return []
    if init not in ("mean", "resize"):
        raise ValueError(f"init must be 'mean' or 'resize', got {init!r}")
    vocab = tokenizer.get_vocab()
    missing = [m for m in marker_strings(style, num_markers) if m not in vocab]
    if not missing:
        return []
    old_rows = model.get_input_embeddings().weight.shape[0]
    tokenizer.add_tokens(missing, special_tokens=True)
    new_ids = tokenizer.convert_tokens_to_ids(missing)
    if len(tokenizer) > old_rows:
        model.resize_token_embeddings(len(tokenizer), mean_resizing=init == "resize")
    if init == "mean":
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            matrices = (model.get_input_embeddings(), model.get_output_embeddings())
            for matrix in {id(m): m for m in matrices if m is not None}.values():
                weight = matrix.weight
                keep = torch.ones(weight.shape[0], dtype=torch.bool)
                keep[new_ids] = False
                keep[min(old_rows, weight.shape[0]):] = False
                reference = weight[keep].float()
                mean, std = reference.mean(0), reference.std(0)
                noise = torch.randn(len(new_ids), weight.shape[1], generator=generator) * std.cpu() * 0.1
                weight[new_ids] = (mean.cpu() + noise).to(weight.dtype).to(weight.device)
    logger.info("added %d marker tokens (%s ... %s) as special tokens", len(missing), missing[0], missing[-1])
    return list(new_ids)


class MarkerVocabulary:
    """The marker signature of every token of a tokenizer, for one marker style (read once, reused).

    Attributes:
        signatures: token id -> the marker events and text its piece spells, for every token that
            holds a marker or a fragment extraction would report as garbled.
        text_tokens: ids of the tokens with text and no marker (special tokens excluded).
        single_token_slots: typed styles: the slots whose marker is one token.
        groups: signature -> the token ids that spell it (each distinct signature tested once).
    """

    def __init__(self, tokenizer: Any, style: str | MarkerStyle | None = None) -> None:
        self.style = get_marker_style(style)
        pieces = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
        self.special_ids: frozenset[int] = frozenset(tokenizer.all_special_ids)
        self.signatures: dict[int, tuple[Event, ...]] = {}
        self.text_tokens: set[int] = set()
        for token_id, piece in enumerate(pieces):
            if piece is None:
                continue
            text = str(piece).translate(_SPACE_PIECES)
            found = self.style.find(text)
            if found:
                events: list[Event] = []
                cursor = 0
                for marker in found:
                    if text[cursor : marker.start].strip():
                        events.append(("text",))
                    # a paired marker is its slot; any other kind (garbled, open, close) is just that
                    events.append(("slot", marker.slot) if marker.kind == "paired" else (marker.kind,))
                    cursor = marker.end
                if text[cursor:].strip():
                    events.append(("text",))
                self.signatures[token_id] = tuple(events)
            elif token_id not in self.special_ids and text.strip():
                self.text_tokens.add(token_id)
        if self.style.typed:
            self.single_token_slots = {sig[0][1] for sig in self.signatures.values()
                                       if len(sig) == 1 and sig[0][0] == "slot"}
        else:
            self.single_token_slots = set()
        self.groups: dict[tuple[Event, ...], list[int]] = {}
        for token_id, signature in self.signatures.items():
            self.groups.setdefault(signature, []).append(token_id)

    @property
    def marker_ids(self) -> list[int]:
        """Ids of every token that holds a marker, ascending: what the loss weights and decoding keeps."""
        return sorted(self.signatures)

    def decode(self, tokenizer: Any, rows: Sequence[Sequence[int]]) -> list[str]:
        """Decode token rows keeping marker tokens, even special ones, and dropping every other special token."""
        drop = self.special_ids - set(self.signatures)
        return [tokenizer.decode([i for i in row if i not in drop], clean_up_tokenization_spaces=False)
                for row in rows]
