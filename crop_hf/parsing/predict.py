"""From words to parses with a :class:`~crop_hf.modeling.JointIntentSlotModel`: encoding, batching, decoding.

The training loop, ``crop-hf evaluate-parser`` and the ``semantic-parsing`` pipeline share these
steps, so they encode and decode identically.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from crop_hf.data.tokenization import pad_batch, tokenize_words
from crop_hf.seqlogical import IntentFrame, ParseError, UnrepresentableParse, from_flat, to_frame

__all__ = ["ParserPrediction", "collate", "encode_words", "nested_frame", "predict_parses", "prediction", "score_parses",
           "to_parse"]


@dataclass
class ParserPrediction:
    """One parsed utterance: ``intent``, IOB2 ``slot_tags`` over its words, ``parse`` and ``score``.

    ``score`` is the model's probability of the intent times that of the whole tag sequence (and,
    for a hierarchical model, those of its nested decisions). ``slot_tags`` are the top-level slots;
    ``frame`` holds the whole tree as an :class:`~crop_hf.seqlogical.IntentFrame` stack, ``parse``
    as a bracket string.
    """

    tokens: list[str]
    intent: str
    slot_tags: list[str]
    parse: str
    score: float
    frame: IntentFrame | None = None


def _writable(word: str) -> str:
    # A bracket inside a word cannot be written in a bracket parse; round brackets keep it readable.
    return word.replace("[", "(").replace("]", ")")


def to_parse(tokens: Sequence[str], intent: str, slot_tags: Sequence[str]) -> str:
    """The bracket parse of a flat prediction (``[``/``]`` inside words become ``(``/``)``).

    >>> to_parse(["Delhi", "ka", "weather"], "GET_WEATHER", ["B-LOCATION", "O", "O"])
    '[IN:GET_WEATHER [SL:LOCATION Delhi ] ka weather ]'
    """
    return str(from_flat([_writable(t) for t in tokens], intent, slot_tags=list(slot_tags)))


def nested_frame(intent: str, slot_tags: Sequence[str], nested: Sequence, intent_labels: Sequence[str],
                 slot_labels: Sequence[str]) -> IntentFrame:
    """The :class:`~crop_hf.seqlogical.IntentFrame` of a decoded utterance: names for ids, positions made relative.

    ``nested``: the :class:`~crop_hf.modeling.NestedParse` nodes of the top-level slots (word
    positions of the whole utterance).
    """

    def build(name: str, tags: list[str], nodes: Sequence, offset: int) -> IntentFrame:
        return IntentFrame(name, tags, {node.start - offset: build(intent_labels[node.intent_id],
                                                                   [slot_labels[t] for t in node.slot_ids],
                                                                   node.nested, node.start)
                                        for node in nodes})

    return build(intent, list(slot_tags), nested, 0)


def encode_words(tokenizer, words: Sequence[Sequence[str]], max_length: int) -> dict[str, list[list[int]]]:
    """``input_ids``, ``attention_mask`` and ``word_index`` of pre-split utterances.

    A word for which the tokenizer produces no sub-word (a lone zero-width or control character)
    would leave a gap in the word positions; such words are encoded as the unknown token instead,
    so every word keeps its position and gets a tag.
    """
    words = [list(w) for w in words]
    encoded = tokenize_words(tokenizer, words, max_length)
    for row, positions in enumerate(encoded["word_index"]):
        seen = {p for p in positions if p >= 0}
        last = max(seen, default=-1)
        if len(seen) == last + 1:
            continue
        fixed = [w if i in seen or i > last else (tokenizer.unk_token or "?") for i, w in enumerate(words[row])]
        single = tokenize_words(tokenizer, [fixed], max_length)
        for key in encoded:
            encoded[key][row] = single[key][0]
    return encoded


def collate(rows: Sequence[dict], pad_token_id: int) -> dict:
    """Pad encoded rows into tensors; ``intent_labels`` and word-level ``slot_labels`` (-100 padded) when present."""
    import torch

    batch = pad_batch([{k: row[k] for k in ("input_ids", "attention_mask", "word_index")} for row in rows],
                      pad_token_id)
    if "intent_labels" in rows[0]:
        batch["intent_labels"] = torch.tensor([row["intent_labels"] for row in rows])
    if "slot_labels" in rows[0]:
        longest = max(1, max(len(row["slot_labels"]) for row in rows))
        batch["slot_labels"] = torch.tensor([list(row["slot_labels"]) + [-100] * (longest - len(row["slot_labels"]))
                                             for row in rows])
    if "span_targets" in rows[0]:  # the hierarchical decoder's targets, each prefixed with its row
        for key, width in (("span_targets", 5), ("inner_targets", 4)):
            batch[key] = torch.tensor([[i, *target] for i, row in enumerate(rows) for target in row[key]],
                                      dtype=torch.long).reshape(-1, width)
        labels = [list(tags) for row in rows for tags in row["inner_labels"]]
        longest = max((len(tags) for tags in labels), default=1)
        batch["inner_labels"] = torch.tensor([tags + [-100] * (longest - len(tags)) for tags in labels],
                                             dtype=torch.long).reshape(-1, longest)
    return batch


def _forward_batches(model, tokenizer, words: Sequence[Sequence[str]], batch_size: int, max_length: int,
                     show_progress: bool = False):
    """``(row indices, model outputs)`` of each batch of pre-split utterances, without gradients.

    Longest utterances first, so each batch pads little; callers put results back in input order.
    """
    import torch
    from tqdm.auto import tqdm

    model.eval()
    device = next(model.parameters()).device
    order = sorted(range(len(words)), key=lambda i: -len(words[i]))
    for start in tqdm(range(0, len(order), batch_size), disable=not show_progress, desc="parsing"):
        chosen = order[start : start + batch_size]
        encoded = encode_words(tokenizer, [words[i] for i in chosen], max_length)
        rows = [{k: encoded[k][j] for k in ("input_ids", "attention_mask", "word_index")} for j in range(len(chosen))]
        batch = {k: v.to(device) for k, v in collate(rows, tokenizer.pad_token_id).items()}
        with torch.no_grad():
            outputs = model(**batch)
        yield chosen, outputs


def predict_parses(model, tokenizer, words: Sequence[Sequence[str]], *, batch_size: int = 64,
                   max_length: int = 128, show_progress: bool = False) -> list[ParserPrediction]:
    """Parse pre-split utterances; words beyond ``max_length`` sub-words are tagged ``O``."""
    intents, slot_names = model.config.intent_labels, model.config.slot_labels
    results: dict[int, ParserPrediction] = {}
    for chosen, outputs in _forward_batches(model, tokenizer, words, batch_size, max_length, show_progress):
        for i, result in zip(chosen, model.decode(outputs), strict=True):
            results[i] = prediction(words[i], result, intents, slot_names)
    return [results[i] for i in range(len(words))]


def prediction(words: Sequence[str], result, intent_labels: Sequence[str], slot_labels: Sequence[str]) -> ParserPrediction:
    """A :class:`ParserPrediction` from one decoded row (:class:`~crop_hf.modeling.ParsedUtterance`) of ``words``.

    Words past the sub-word limit are tagged ``O``.
    """
    tags = [slot_labels[t] for t in result.slot_ids]
    tags += ["O"] * (len(words) - len(tags))
    intent = intent_labels[result.intent_id]
    frame = nested_frame(intent, tags, result.nested, intent_labels, slot_labels)
    parse = str(frame.to_tree([_writable(w) for w in words])) if frame.nested else to_parse(words, intent, tags)
    return ParserPrediction(list(words), intent, tags, parse,
                            result.intent_probability * result.slot_probability * result.nested_probability, frame)


def _decoded_form(frame, kept: int, intent_ids: dict[str, int], tag_ids: dict[str, int]):
    """The :class:`~crop_hf.modeling.ParsedUtterance` of a gold frame over its first ``kept`` words, or
    ``None`` where the model cannot produce it (a label it lacks; a slot past the kept words)."""
    from crop_hf.modeling import NestedParse, ParsedUtterance  # heavy (torch): loaded on first use

    def nodes(current, offset: int) -> list:
        return [NestedParse(offset + start, offset + start + len(child.slot_tags), intent_ids[child.intent],
                            [tag_ids[t] for t in child.slot_tags], nodes(child, offset + start))
                for start, child in sorted(current.nested.items())]

    try:
        tags = [tag_ids[t] for t in frame.slot_tags]
        nested = nodes(frame, 0)
        intent = intent_ids[frame.intent]
    except KeyError:
        return None
    if any(t != "O" for t in frame.slot_tags[kept:]):
        return None
    return ParsedUtterance(intent, 1.0, tags[:kept], 1.0, nested)


def score_parses(model, tokenizer, parses: Sequence[str], *, batch_size: int = 64,
                 max_length: int = 128) -> list[float]:
    """Log-probability under ``model`` of each bracket parse (its words are the utterance), as decoding scores its own.

    :meth:`~crop_hf.modeling.JointIntentSlotModel.score` over batches: the intent, the top-level
    tags, and every nested decision and nested intent's tags. ``-inf`` for a tree the model cannot
    produce: a label it was not trained with, intents nested deeper than its ``max_intent_depth``,
    a slot without words, or a slot among words past ``max_length`` sub-words (which decoding tags
    ``O``). A gold tree that scores higher than the model's own prediction (``ParserPrediction.score``,
    a probability) is one the greedy decoder missed; one that scores lower, one the model prefers
    not to emit. Raises ``ValueError`` naming the parse that cannot be read.
    """
    import math

    from crop_hf.modeling import ParsedUtterance  # heavy (torch): loaded on first use

    config = model.config
    intent_ids = {name: i for i, name in enumerate(config.intent_labels)}
    tag_ids = {name: i for i, name in enumerate(config.slot_labels)}
    frames = []
    for index, text in enumerate(parses):
        try:
            frames.append(to_frame(text))
        except UnrepresentableParse:
            frames.append(None)  # a slot without words, a slot at the root: nothing the decoder emits
        except ParseError as error:
            raise ValueError(f"parse {index} cannot be read: {error}") from error
    readable = [i for i, frame in enumerate(frames) if frame is not None]
    scores = [-math.inf] * len(parses)
    for batch_rows, outputs in _forward_batches(model, tokenizer, [frames[i][0] for i in readable], batch_size,
                                                max_length):
        chosen = [readable[j] for j in batch_rows]
        kept = outputs.word_mask.sum(1).tolist()
        forms = [_decoded_form(frames[i][1], n, intent_ids, tag_ids) for i, n in zip(chosen, kept, strict=True)]
        # a tree the model cannot produce is scored as an all-O parse of its row, then set to -inf
        placeholder = [form or ParsedUtterance(0, 1.0, [tag_ids.get("O", 0)] * n, 1.0) for form, n in zip(forms, kept, strict=True)]
        for i, form, value in zip(chosen, forms, model.score(outputs, placeholder).tolist(), strict=True):
            scores[i] = value if form is not None else -math.inf
    return scores
