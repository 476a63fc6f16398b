"""Search over the joint parser's outputs: the best tree of each row (:func:`decode_outputs`) and the
log-probability of a given tree (:func:`score_outputs`).

:meth:`JointIntentSlotModel.decode <crop_hf.modeling.modeling_joint.JointIntentSlotModel.decode>` and
``.score`` call these with the model, whose forward pass made ``outputs``. The top level is tagged by
the model's top tagger (:class:`~crop_hf.modeling.tagger.SlotTagger`): one that reads the words alone
keeps the likeliest intent and tags independently; one conditioned on the intent tags each row under
its three likeliest intents and keeps the intent and tags with the highest joint probability. Below
it, down to ``max_intent_depth`` levels, the hierarchical decoder decides for each slot whether an
intent fills it and tags that intent's words with the inner tagger, greedily, level by level for the
whole batch at once; a flat model has no levels below. Like the rest of the model's code this module
imports only its siblings, so saved models carry it as remote code. It reads the model through a
small declared interface (:class:`ParserModel`, :class:`ParserOutputs`: public attributes and config
fields), never the model's module, so the two import in one direction only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol

import torch

from .tagger import SlotTagger

__all__ = ["NestedParse", "ParsedUtterance", "ParserModel", "ParserOutputs", "decode_outputs", "score_outputs"]


class ParserOutputs(Protocol):
    """What the search reads of a forward pass (:class:`~crop_hf.modeling.modeling_joint.JointParserOutput`)."""

    intent_logits: torch.Tensor
    word_mask: torch.Tensor
    slot_emissions: torch.Tensor | None
    word_hidden: torch.Tensor | None  # None for a flat model that reads words alone


class ParserModel(Protocol):
    """What the search reads of the joint parser (:class:`~crop_hf.modeling.modeling_joint.JointIntentSlotModel`):
    its config (``slot_labels``, ``max_intent_depth``), its two taggers, and the two scoring layers of
    a hierarchical model."""

    config: Any
    top_level_tagger: SlotTagger
    inner_tagger: SlotTagger | None

    def span_logits(self, word_hidden: torch.Tensor, spans: torch.Tensor) -> torch.Tensor: ...

    def inner_emissions(self, word_hidden: torch.Tensor, spans: Any) -> tuple[torch.Tensor, torch.Tensor]: ...


@lru_cache(maxsize=16)
def _slot_layout(slot_labels: tuple[str, ...]) -> tuple[list[str], list[int]]:
    """Of IOB2 slot tags: each tag's prefix (``B``, ``I``, ``O``) and its slot name id (the order of the
    ``B-`` tags; ``O`` is -1), as the model's slot-name embeddings number them."""
    prefixes = [tag.partition("-")[0] for tag in slot_labels]
    names = [tag[2:] for tag in slot_labels if tag.startswith("B-")]
    return prefixes, [names.index(tag[2:]) if tag != "O" else -1 for tag in slot_labels]


def _layout(model: ParserModel) -> tuple[list[str], list[int]]:
    return _slot_layout(tuple(model.config.slot_labels))


@dataclass
class NestedParse:
    """An intent the model put inside a slot: the slot's words ``start:end`` (of the whole utterance),
    the intent, the tags of the slot's words, and the intents nested in its own slots."""

    start: int
    end: int
    intent_id: int
    slot_ids: list[int]
    nested: list[NestedParse] = field(default_factory=list)


@dataclass
class ParsedUtterance:
    """Decoded output of one row: intent and tag ids, and probabilities of each.

    ``nested`` (hierarchical models only) holds the intents predicted inside top-level slots;
    ``nested_probability`` is the product of the probabilities of every nested decision (which
    slots hold an intent, which one, its tags), 1.0 for a flat model.
    """

    intent_id: int
    intent_probability: float
    slot_ids: list[int]
    slot_probability: float  # of the whole tag sequence
    nested: list[NestedParse] = field(default_factory=list)
    nested_probability: float = 1.0


def _tag_spans(tag_ids: list[int], prefixes: list[str]) -> list[tuple[int, int, int]]:
    """``(start, end, tag id of the B-)`` of each slot in a valid IOB2 sequence of tag ids."""
    spans: list[list[int]] = []
    for position, tag in enumerate(tag_ids):
        if prefixes[tag] == "B":
            spans.append([position, position + 1, tag])
        elif prefixes[tag] == "I" and spans and spans[-1][1] == position:
            spans[-1][1] = position + 1
    return [tuple(span) for span in spans]


def _depth(nodes: list[NestedParse]) -> int:
    """Levels of intents nested below a parse's top level (0 for a flat parse)."""
    return max((1 + _depth(node.nested) for node in nodes), default=0)


def _slot_spans(model: ParserModel, row: int, slot_ids: list[int], offset: int,
                nested: list[NestedParse]) -> list[tuple]:
    """``(row, start, end, slot name id, nested)`` of each slot of one level whose words start at ``offset``.

    The slots :func:`_decode_nested` and :func:`_score_nested` decide on, level by level; ``nested``
    is the list of the level's nested intents (the decoder appends to it, scoring reads it).
    """
    prefixes, tag_name = _layout(model)
    return [(row, offset + start, offset + end, tag_name[tag], nested)
            for start, end, tag in _tag_spans(slot_ids, prefixes)]


def _top_slot_spans(model: ParserModel, parses: list[ParsedUtterance]) -> list[tuple]:
    """:func:`_slot_spans` of the top level of every row: where both nested walks start."""
    return [span for row, parse in enumerate(parses) for span in _slot_spans(model, row, parse.slot_ids, 0, parse.nested)]


# ---------------------------------------------------------------------- decoding


def decode_outputs(model: ParserModel, outputs: ParserOutputs) -> list[ParsedUtterance]:
    """Best intent and best valid IOB2 tag sequence of each row, with their probabilities.

    A hierarchical model then decides, level by level for the whole batch at once, which
    predicted slots an intent fills and tags that intent's words (greedy: each level takes the
    best decision of the one above).
    """
    intent_probs = outputs.intent_logits.float().softmax(-1)
    mask = outputs.word_mask
    top = model.top_level_tagger
    if top.conditioned and outputs.word_hidden is not None:
        parsed = _decode_with_intents(top, outputs.word_hidden.float(), mask, intent_probs)
    else:
        best_prob, best_intent = intent_probs.max(-1)
        paths, log_probs = top.decode(outputs.slot_emissions.float(), mask)
        parsed = [ParsedUtterance(int(best_intent[i]), float(best_prob[i]), paths[i], float(log_probs[i].exp()))
                  for i in range(len(paths))]
    if outputs.word_hidden is not None:  # a flat model's loop below has no level to visit
        _decode_nested(model, outputs.word_hidden.float(), parsed)
    return parsed


def _decode_with_intents(top: SlotTagger, word_hidden: torch.Tensor, mask: torch.Tensor, intent_probs: torch.Tensor,
                         candidates: int = 3) -> list[ParsedUtterance]:
    """Intent and tags of each row with the best joint probability among its ``candidates`` likeliest intents."""
    batch = intent_probs.shape[0]
    k = min(candidates, intent_probs.shape[1])
    top_probs, top_intents = intent_probs.topk(k, dim=-1)  # (batch, k)
    flat_intents = top_intents.reshape(-1)
    repeated = word_hidden.repeat_interleave(k, dim=0)
    emissions = top.emissions(repeated, flat_intents).float()
    paths, log_probs = top.decode(emissions, mask.repeat_interleave(k, dim=0))
    joint = top_probs.log() + log_probs.reshape(batch, k)
    best = joint.argmax(-1).tolist()
    return [ParsedUtterance(int(top_intents[i, j]), float(top_probs[i, j]), paths[i * k + j],
                            float(log_probs[i * k + j].exp())) for i, j in enumerate(best)]


def _decode_nested(model: ParserModel, word_hidden: torch.Tensor, parsed: list[ParsedUtterance]) -> None:
    device = word_hidden.device
    pending = _top_slot_spans(model, parsed)
    for _ in range(1, model.config.max_intent_depth):
        if not pending:
            break
        spans = torch.tensor([p[:4] for p in pending], device=device)
        probabilities = model.span_logits(word_hidden, spans).float().softmax(-1)
        best_prob, best = probabilities.max(-1)
        for (row, *_), p in zip(pending, best_prob.tolist(), strict=True):
            parsed[row].nested_probability *= p
        chosen = [(i, int(best[i]) - 1) for i in range(len(pending)) if int(best[i]) > 0]
        if not chosen:
            break
        inner = torch.tensor([[*pending[i][:3], intent] for i, intent in chosen], device=device)
        emissions, mask = model.inner_emissions(word_hidden, inner)
        tag_paths, tag_log_probs = model.inner_tagger.decode(emissions.float(), mask)
        following = []
        for (i, intent), path, log_prob in zip(chosen, tag_paths, tag_log_probs.tolist(), strict=True):
            row, start, end, _, siblings = pending[i]
            node = NestedParse(start, end, intent, path)
            siblings.append(node)
            parsed[row].nested_probability *= float(torch.tensor(log_prob).exp())
            following += _slot_spans(model, row, path, start, node.nested)
        pending = following


# ---------------------------------------------------------------------- scoring given parses


def score_outputs(model: ParserModel, outputs: ParserOutputs, parses: list[ParsedUtterance]) -> torch.Tensor:
    """Log-probability ``(batch,)`` under the model of one given parse per row, as :func:`decode_outputs` scores its own.

    The sum of the log-probabilities of the intent, of the top-level tags (given that intent for
    a conditioned ``top_tagger``), and for a hierarchical model of the decision on each slot (words
    only, or the intent filling it) and of each nested intent's tags, down to ``max_intent_depth``
    levels: scoring what :func:`decode_outputs` returns gives the log of its ``intent_probability *
    slot_probability * nested_probability``. ``parses`` take the decoder's form
    (:class:`ParsedUtterance`: ids; tags for the row's words, ``word_mask``'s count of them;
    :class:`NestedParse` positions over the whole utterance). An intent nested deeper than
    ``max_intent_depth`` (or in a flat model) scores ``-inf``.

    Compare a gold tree's score with the decoded one's to tell the decoder's errors from the
    model's: where the gold tree scores higher, the greedy search missed it; where it scores lower,
    the model prefers its own tree and no search would return the gold one.
    """
    mask = outputs.word_mask
    if mask is None or len(parses) != mask.shape[0]:
        raise ValueError(f"score needs word_index in the forward pass and one parse per row "
                         f"({len(parses)} parses for {0 if mask is None else mask.shape[0]} rows)")
    device = mask.device
    intents = torch.tensor([p.intent_id for p in parses], device=device)
    tags = torch.zeros(mask.shape, dtype=torch.long, device=device)
    for row, parse in enumerate(parses):
        if len(parse.slot_ids) != int(mask[row].sum()):
            raise ValueError(f"parse {row} has {len(parse.slot_ids)} tags for the row's "
                             f"{int(mask[row].sum())} words")
        tags[row, : len(parse.slot_ids)] = torch.tensor(parse.slot_ids, dtype=torch.long)
        _check_nested(model, row, parse.slot_ids, 0, parse.nested)
    total = outputs.intent_logits.float().log_softmax(-1).gather(1, intents.unsqueeze(1)).squeeze(1)
    top = model.top_level_tagger
    if top.conditioned and outputs.word_hidden is not None:
        emissions = top.emissions(outputs.word_hidden.float(), intents)
    else:
        emissions = outputs.slot_emissions
    total = total + top.log_probability(emissions.float(), mask, tags)
    if outputs.word_hidden is not None:  # a flat model's loop below has no level to visit
        _score_nested(model, outputs.word_hidden.float(), parses, total)
    too_deep = [row for row, parse in enumerate(parses) if _depth(parse.nested) + 1 > model.config.max_intent_depth]
    total[too_deep] = float("-inf")
    return total


def _check_nested(model: ParserModel, row: int, slot_ids: list[int], offset: int,
                  nodes: list[NestedParse]) -> None:
    spans = {(offset + start, offset + end) for start, end, _ in _tag_spans(slot_ids, _layout(model)[0])}
    for node in nodes:
        if (node.start, node.end) not in spans:
            raise ValueError(f"parse {row}: the intent nested at words {node.start}:{node.end} does not fill "
                             "one of its level's slots")
        if len(node.slot_ids) != node.end - node.start:
            raise ValueError(f"parse {row}: the intent nested at words {node.start}:{node.end} has "
                             f"{len(node.slot_ids)} tags for {node.end - node.start} words")
        _check_nested(model, row, node.slot_ids, node.start, node.nested)


def _score_nested(model: ParserModel, word_hidden: torch.Tensor, parses: list[ParsedUtterance],
                  total: torch.Tensor) -> None:
    device = word_hidden.device
    pending = _top_slot_spans(model, parses)
    for _ in range(1, model.config.max_intent_depth):
        if not pending:
            break
        filled = [next((n for n in nodes if (n.start, n.end) == (start, end)), None)
                  for _, start, end, _, nodes in pending]
        rows = torch.tensor([p[0] for p in pending], device=device)
        targets = torch.tensor([0 if node is None else 1 + node.intent_id for node in filled], device=device)
        decisions = model.span_logits(word_hidden, torch.tensor([p[:4] for p in pending], device=device))
        total.index_add_(0, rows, decisions.float().log_softmax(-1).gather(1, targets.unsqueeze(1)).squeeze(1))
        inner = [(p[0], node) for p, node in zip(pending, filled, strict=True) if node is not None]
        if not inner:
            break
        spans = torch.tensor([[row, node.start, node.end, node.intent_id] for row, node in inner], device=device)
        emissions, mask = model.inner_emissions(word_hidden, spans)
        tags = torch.zeros(mask.shape, dtype=torch.long, device=device)
        for i, (_, node) in enumerate(inner):
            tags[i, : len(node.slot_ids)] = torch.tensor(node.slot_ids, dtype=torch.long)
        total.index_add_(0, spans[:, 0], model.inner_tagger.log_probability(emissions.float(), mask, tags))
        pending = [span for row, node in inner for span in _slot_spans(model, row, node.slot_ids, node.start,
                                                                        node.nested)]
