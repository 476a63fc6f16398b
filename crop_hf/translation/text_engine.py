"""``labeled-translation`` over a text-level engine: the pipeline's inputs and outputs, with no model.

A text-level engine (:class:`~crop_hf.translation.apertium.Apertium`) translates marked
sentences into marked translations itself, through its own format handling; there are no
token ids to generate. :class:`TextEngineTranslationPipeline` takes the records
``pipeline("labeled-translation")`` takes and returns what it returns, so every caller (synthesis,
translate-and-align, translate-train) runs unchanged on either. ``transformers.pipeline`` builds it
when the model is an engine::

    from transformers import pipeline
    from crop_hf.translation.apertium import Apertium

    translate = pipeline("labeled-translation", model=Apertium(), src_lang="en", tgt_lang="es")

:func:`mark_record` is the one reading of an input record, shared with the model pipeline.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import islice
from typing import Any, Protocol, runtime_checkable

from crop_hf.data.features import tag_names
from crop_hf.labels import tags_to_spans
from crop_hf.markers import MarkedSentence, MarkerStyle, get_marker_style

__all__ = ["TextEngine", "TextEngineTranslationPipeline", "mark_record"]

logger = logging.getLogger(__name__)


@runtime_checkable
class TextEngine(Protocol):
    """What a text-level translator offers: marked sentences in, marked translations (and entity translations) out."""

    name: str
    batch_size: int

    def translate_marked(self, sentences: Sequence[MarkedSentence], src_lang: str, tgt_lang: str,
                         style: MarkerStyle | None = None) -> tuple[list[str], list[dict[int, str]]]:
        ...


def mark_record(style: MarkerStyle, record: Any, label_names: Sequence[str] | None = None,
                scheme: str = "IOB2") -> MarkedSentence:
    """Turn one input record of ``labeled-translation`` into a :class:`~crop_hf.markers.MarkedSentence` in ``style``.

    Records: ``{"tokens", "ner_tags"}`` (IOB2 strings, or ids with ``label_names``), ``{"text",
    "entities"}`` (character spans), a plain string (no entities) or a ``MarkedSentence`` (as is).
    """
    if isinstance(record, MarkedSentence):
        return record
    if isinstance(record, str):
        return style.mark_text(record, [])
    if not isinstance(record, Mapping):
        raise TypeError(f"expected a dict with 'tokens' and 'ner_tags' or 'text' and 'entities', got {type(record)}")
    if "tokens" in record:
        tags = record.get("ner_tags", record.get("tags"))
        if tags is None:
            raise ValueError("a record with 'tokens' needs 'ner_tags' (IOB2 strings, or ids with label_names)")
        tags = list(tags)
        if len(tags) != len(record["tokens"]):
            raise ValueError(f"{len(record['tokens'])} tokens but {len(tags)} tags")
        if tags and not isinstance(tags[0], str):
            if label_names is None:
                raise ValueError("ner_tags are ids: pass label_names (e.g. crop_hf.CONLL_LABELS.names)")
            tags = [label_names[int(tag)] for tag in tags]
        return style.mark_tokens(list(record["tokens"]), tags_to_spans(tags, scheme))
    if "text" in record:
        return style.mark_text(record["text"], record.get("entities") or [])
    raise ValueError(f"expected 'tokens' and 'ner_tags', or 'text' and 'entities'; got keys {sorted(record)}")


def mark_all(style: MarkerStyle, records: Iterable[Any], label_names: Sequence[str] | None, scheme: str,
             offset: int = 0) -> list[MarkedSentence]:
    """:func:`mark_record` for each record; an error names the record's index (``sentence N: ...``)."""
    marked = []
    for index, record in enumerate(records, start=offset):
        try:
            marked.append(mark_record(style, record, label_names, scheme))
        except (ValueError, TypeError, KeyError, IndexError) as err:
            raise type(err)(f"sentence {index}: {err}") from err
    return marked


class TextEngineTranslationPipeline:
    """``labeled-translation`` with a text-level engine: same inputs, parameters and outputs as the model pipeline.

    Parameters at construction or per call: ``src_lang``, ``tgt_lang`` (both needed), ``label_names``,
    ``scheme``, ``batch_size`` (sentences per engine call; default the engine's). Construction only:
    ``marker_style`` (any registered style). ``num_beams``, ``num_return_sequences`` and
    ``max_new_tokens`` are accepted and do not apply (an engine gives one translation; a line says
    so once); ``constrain_markers``, another ``backend``, ``compute_type`` or ``converted_model``
    are refused, since nothing here decodes tokens.

    Output per sentence: ``translation``, ``marked_translation``, ``entities``, ``complete``,
    ``failures``, ``hypotheses_tried`` (always 1), ``source`` and ``marked_source``.
    """

    task = "labeled-translation"

    def __init__(
        self,
        engine: TextEngine,
        *,
        marker_style: str | MarkerStyle | None = None,
        max_slots: int | None = None,
        backend: str | None = "transformers",
        compute_type: str | None = None,
        converted_model: str | None = None,
        backend_options: Mapping[str, Any] | None = None,
        task: str | None = None,
        dtype: Any = None,
        device: Any = None,
        **parameters: Any,
    ) -> None:
        refused = [f"{name}={value!r}" for name, value in (("backend", backend), ("compute_type", compute_type),
                                                             ("converted_model", converted_model),
                                                             ("backend_options", backend_options))
                   if value not in (None, "transformers", {})]
        if refused:
            raise ValueError(f"{engine.name} translates text itself: {', '.join(refused)} "
                             f"{'does' if len(refused) == 1 else 'do'} not apply to it")
        self.engine = engine
        self.marker_style = get_marker_style(marker_style)
        self._defaults: dict[str, Any] = {}
        self._said: set[str] = set()
        self._defaults = self._parameters(**parameters)

    def __repr__(self) -> str:
        return f"TextEngineTranslationPipeline({self.engine!r})"

    def _parameters(self, src_lang: str | None = None, tgt_lang: str | None = None,
                    label_names: Sequence[str] | None = None, scheme: str | None = None,
                    batch_size: int | None = None, num_beams: int | None = None,
                    num_return_sequences: int | None = None, max_new_tokens: int | None = None,
                    generate_kwargs: Mapping[str, Any] | None = None, constrain_markers: bool | None = None,
                    **unknown: Any) -> dict[str, Any]:
        if unknown:
            raise TypeError(f"unexpected parameters for labeled-translation: {sorted(unknown)}")
        if constrain_markers:
            raise ValueError(f"{self.engine.name} writes the markers through its own format handling: "
                             "constrained decoding (constrain_markers) does not apply to it")
        ignored = {name: value for name, value in (("num_beams", num_beams),
                                                   ("num_return_sequences", num_return_sequences))
                   if value not in (None, 1)}
        ignored.update((name, value) for name, value in (generate_kwargs or {}).items()
                       if name not in ("num_beams", "num_return_sequences", "max_new_tokens") or value not in (None, 1))
        new = [f"{name}={value!r}" for name, value in ignored.items() if name not in self._said]
        if new:
            logger.warning("%s gives one translation per sentence: %s %s not apply", self.engine.name,
                           ", ".join(new), "does" if len(new) == 1 else "do")
            self._said.update(ignored)
        given = {"src_lang": src_lang, "tgt_lang": tgt_lang, "label_names": label_names, "scheme": scheme,
                 "batch_size": batch_size}
        return {**self._defaults, **{key: value for key, value in given.items() if value is not None}}

    def __call__(self, inputs: Any, **parameters: Any) -> Any:
        """Translate one record (returns a dict), a list (a list) or a dataset/iterable (an iterator)."""
        settings = self._parameters(**parameters)
        if not settings.get("src_lang") or not settings.get("tgt_lang"):
            raise ValueError(f"labeled-translation with {self.engine.name} needs src_lang and tgt_lang")
        if isinstance(inputs, (Mapping, str, MarkedSentence)):
            return next(self._translate(iter([inputs]), settings))
        # explicit > the dataset's ClassLabel names > what the pipeline was built with
        settings["label_names"] = parameters.get("label_names") or tag_names(inputs) or settings.get("label_names")
        if isinstance(inputs, (list, tuple)):
            return list(self._translate(iter(inputs), settings))
        return self._translate(iter(inputs), settings)

    def _translate(self, records: Iterator[Any], settings: Mapping[str, Any]) -> Iterator[dict]:
        size = settings.get("batch_size") or self.engine.batch_size
        offset = 0
        while chunk := list(islice(records, size)):
            marked = mark_all(self.marker_style, chunk, settings.get("label_names"), settings.get("scheme") or "IOB2",
                              offset)
            translations, entity_translations = self.engine.translate_marked(
                marked, settings["src_lang"], settings["tgt_lang"], self.marker_style)
            for sentence, translation, entities in zip(marked, translations, entity_translations, strict=True):
                result = self.marker_style.extract(sentence, translation, entities).as_dict()
                result.update(hypotheses_tried=1, source=sentence.source, marked_source=sentence.text)
                yield result
            offset += len(chunk)
