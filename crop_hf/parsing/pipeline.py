"""``pipeline("semantic-parsing")``: utterances in, bracket parses (nested trees too) out.

>>> import crop_hf  # doctest: +SKIP
>>> from transformers import pipeline  # doctest: +SKIP
>>> parser = pipeline("semantic-parsing", model="path/to/parser")  # doctest: +SKIP
>>> parser("Delhi ka weather batao")  # doctest: +SKIP
{'intent': 'GET_WEATHER', 'slots': [{'label': 'LOCATION', 'text': 'Delhi', 'start': 0, 'end': 5}],
 'parse': '[IN:GET_WEATHER [SL:LOCATION Delhi ] ka weather batao ]', 'score': 0.93}

Inputs: a string (split on whitespace, as TOP-style corpora are tokenized), a list of strings (a
batch), or a list of word lists (a batch of pre-split utterances; offsets then refer to the words
joined by single spaces). Batches run ``batch_size`` utterances at a time (default 32), tokenized
together and sorted by length as :func:`crop_hf.parsing.predict.predict_parses` does (the pipeline
calls it), so the pipeline runs as fast as the model called directly. ``score`` is the probability
of the intent times that of the whole slot-tag sequence (and of the nested decisions of a
hierarchical model). ``parse`` always reads back with :func:`crop_hf.seqlogical.parse` (a ``[`` or
``]`` inside a word is written as ``(``/``)`` there, while ``slots[...]["text"]`` keeps the
original). A slot that a hierarchical parser (``max_intent_depth`` above 1) fills with an intent
also carries ``"intent"`` and its own ``"slots"`` (offsets in the whole utterance), recursively::

    {'label': 'TODO', 'text': 'my shopping', 'start': 12, 'end': 23, 'intent': 'GET_TODO',
     'slots': [{'label': 'TODO', 'text': 'shopping', 'start': 15, 'end': 23}]}
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from transformers import Pipeline

import crop_hf.modeling  # noqa: F401  (registers the model with the Auto classes)
from crop_hf._registration import register_pipelines
from crop_hf.labels import tags_to_spans
from crop_hf.parsing.predict import predict_parses

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


def _slots(frame, text: str, offsets: list[tuple[int, int]], base: int = 0) -> list[dict[str, Any]]:
    """The slot dicts of an :class:`~crop_hf.seqlogical.IntentFrame` whose first word is word ``base``."""
    slots = []
    for span in tags_to_spans(frame.slot_tags):
        start, end = offsets[base + span.start][0], offsets[base + span.end - 1][1]
        slot: dict[str, Any] = {"label": span.label, "text": text[start:end], "start": start, "end": end}
        inner = frame.nested.get(span.start)
        if inner is not None:
            slot["intent"] = inner.intent
            slot["slots"] = _slots(inner, text, offsets, base + span.start)
        slots.append(slot)
    return slots


class SemanticParsingPipeline(Pipeline):
    """Joint intent + slot parsing with a :class:`~crop_hf.modeling.JointIntentSlotModel`.

    Call parameters: ``max_length`` (sub-word limit per utterance, default 256; words beyond it are
    tagged ``O``), ``batch_size``.
    """

    def _sanitize_parameters(self, max_length: int | None = None, **kwargs):
        preprocess = {"max_length": max_length} if max_length is not None else {}
        return preprocess, {}, {}

    def __call__(self, inputs, *args, batch_size: int | None = None, max_length: int | None = None, **kwargs):
        """Parse one utterance (a string: one dict back) or a batch (a list: a list back)."""
        if args or kwargs:
            raise TypeError(f"semantic-parsing takes batch_size and max_length, got {args or ''}{kwargs or ''}")
        single = isinstance(inputs, str)
        items = [self.preprocess(item) for item in ([inputs] if single else inputs)]
        if not items:
            return []
        outputs = self._forward({"items": items, "max_length": max_length or 256,
                                 "batch_size": batch_size or self._batch_size or 32})
        parsed = [self.postprocess({"item": item, "prediction": prediction})
                  for item, prediction in zip(items, outputs["predictions"], strict=True)]
        return parsed[0] if single else parsed

    def preprocess(self, inputs, max_length: int = 256) -> dict[str, Any]:
        text, words, offsets = _words(inputs)
        return {"text": text, "words": words, "offsets": offsets}

    def _forward(self, model_inputs: dict[str, Any]) -> dict[str, Any]:
        words = [item["words"] for item in model_inputs["items"]]
        return {"predictions": predict_parses(self.model, self.tokenizer, words, batch_size=model_inputs["batch_size"],
                                              max_length=model_inputs["max_length"])}

    def postprocess(self, model_outputs: dict[str, Any]) -> dict[str, Any]:
        item, prediction = model_outputs["item"], model_outputs["prediction"]
        return {"intent": prediction.intent, "slots": _slots(prediction.frame, item["text"], item["offsets"]),
                "parse": prediction.parse, "score": prediction.score}


register_pipelines()
