"""``pipeline("semantic-parsing")``: utterances in, flat bracket parses out.

>>> import crop_hf  # doctest: +SKIP
>>> from transformers import pipeline  # doctest: +SKIP
>>> parser = pipeline("semantic-parsing", model="path/to/parser")  # doctest: +SKIP
>>> parser("Delhi ka weather batao")  # doctest: +SKIP
{'intent': 'GET_WEATHER', 'slots': [{'label': 'LOCATION', 'text': 'Delhi', 'start': 0, 'end': 5}],
 'parse': '[IN:GET_WEATHER [SL:LOCATION Delhi ] ka weather batao ]', 'score': 0.93}

Inputs: a string (split on whitespace, as TOP-style corpora are tokenized), a list of strings (a
batch), or a list of word lists (a batch of pre-split utterances; offsets then refer to the words
joined by single spaces). Batches run ``batch_size`` utterances at a time. ``score`` is the probability of the intent times that of the whole slot-tag
sequence. ``parse`` always reads back with :func:`crop_hf.seqlogical.parse` (a ``[`` or ``]``
inside a word is written as ``(``/``)`` there, while ``slots[...]["text"]`` keeps the original).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from transformers import Pipeline

import crop_hf.modeling  # noqa: F401  (registers the model with the Auto classes)
from crop_hf._registration import register_pipelines
from crop_hf.labels import tags_to_spans
from crop_hf.parsing.predict import encode_words, to_parse

__all__ = ["SemanticParsingPipeline"]

_WORD = re.compile(r"\S+")


def _words(inputs: str | Sequence[str]) -> tuple[str, list[str], list[tuple[int, int]]]:
    if isinstance(inputs, str):
        matches = list(_WORD.finditer(inputs))
        return inputs, [m.group() for m in matches], [m.span() for m in matches]
    words = [str(w) for w in inputs]
    if any(not w or any(c.isspace() for c in w) for w in words):
        raise ValueError(f"words must be non-empty and without spaces, got {words!r}")
    offsets, position = [], 0
    for word in words:
        offsets.append((position, position + len(word)))
        position += len(word) + 1
    return " ".join(words), words, offsets


class SemanticParsingPipeline(Pipeline):
    """Joint intent + slot parsing with a :class:`~crop_hf.modeling.JointIntentSlotModel`.

    Call parameters: ``max_length`` (sub-word limit per utterance, default 256; words beyond it are
    tagged ``O``), ``batch_size``.
    """

    def _sanitize_parameters(self, max_length: int | None = None, **kwargs):
        preprocess = {"max_length": max_length} if max_length is not None else {}
        return preprocess, {}, {}

    def preprocess(self, inputs, max_length: int = 256) -> dict[str, Any]:
        import torch

        text, words, offsets = _words(inputs)
        encoded = encode_words(self.tokenizer, [words], max_length)
        return {
            "input_ids": torch.tensor([encoded["input_ids"][0]]),
            "attention_mask": torch.tensor([encoded["attention_mask"][0]]),
            # Shifted by one: batching pads with 0, which must mean "no word here".
            "word_position": torch.tensor([[p + 1 for p in encoded["word_index"][0]]]),
            "text": [text], "words": [words], "offsets": [offsets],
        }

    def _forward(self, model_inputs: dict[str, Any]) -> dict[str, Any]:
        outputs = self.model(input_ids=model_inputs["input_ids"], attention_mask=model_inputs["attention_mask"],
                             word_index=model_inputs["word_position"] - 1)
        return {"decoded": self.model.decode(outputs), "text": model_inputs["text"],
                "words": model_inputs["words"], "offsets": model_inputs["offsets"]}

    def postprocess(self, model_outputs: dict[str, Any]) -> dict[str, Any]:
        decoded = model_outputs["decoded"]
        decoded = decoded[0] if isinstance(decoded, list) else decoded
        text, words, offsets = (model_outputs[k] for k in ("text", "words", "offsets"))
        if isinstance(words, list) and words and isinstance(words[0], list):  # unbatched by hand
            text, words, offsets = text[0], words[0], offsets[0]
        config = self.model.config
        tags = [config.slot_labels[t] for t in decoded.slot_ids]
        tags += ["O"] * (len(words) - len(tags))
        intent = config.intent_labels[decoded.intent_id]
        slots = []
        for span in tags_to_spans(tags):
            start, end = offsets[span.start][0], offsets[span.end - 1][1]
            slots.append({"label": span.label, "text": text[start:end], "start": start, "end": end})
        return {"intent": intent, "slots": slots, "parse": to_parse(words, intent, tags),
                "score": decoded.intent_probability * decoded.slot_probability}


register_pipelines()
