"""``pipeline("labeled-translation")``: translate labeled sentences and read the entities back.

transformers 5 removed its translation pipeline; this one subclasses :class:`transformers.Pipeline`
and calls ``model.generate`` itself. Each sentence is marked (:mod:`crop_hf.markers`), translated,
and its markers are extracted; with several hypotheses the first one whose markers extract
completely wins, as in CroP.

>>> import crop_hf
>>> from transformers import pipeline
>>> translate = pipeline("labeled-translation", model="facebook/m2m100_418M")  # doctest: +SKIP
>>> translate({"tokens": ["I", "live", "in", "Gothenburg", "."], "ner_tags": ["O", "O", "O", "B-LOC", "O"]},
...           src_lang="en", tgt_lang="de", num_beams=4, num_return_sequences=4)  # doctest: +SKIP
{'translation': 'Ich wohne in Göteborg .', 'entities': [{'text': 'Göteborg', 'label': 'LOC', ...}], ...}
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from itertools import islice
from typing import Any

from transformers import GenerationConfig, Pipeline

from crop_hf import _registration
from crop_hf.data.features import tag_names
from crop_hf.markers import Extraction, MarkedSentence, MarkerStyle, get_marker_style
from crop_hf.translation.backends import make_backend
from crop_hf.translation.constraints import MarkerConstraintProcessor
from crop_hf.translation.languages import LanguageSetup, resolve_languages
from crop_hf.translation.marker_tokens import MarkerVocabulary, add_marker_tokens
from crop_hf.translation.text_engine import TextEngine, TextEngineTranslationPipeline, mark_all, mark_record

__all__ = ["LabeledSequenceTranslationPipeline"]

logger = logging.getLogger(__name__)

# Sorting by length happens within windows of this many batches, so a stream is never held whole.
_BUCKET_WINDOW = 32


class LabeledSequenceTranslationPipeline(Pipeline):
    """Translate sentences whose entities are wrapped in boundary markers; return the entities.

    Inputs (one, a list, a ``datasets.Dataset`` or any iterable, streamed):

    * ``{"tokens": [...], "ner_tags": [...]}`` with IOB2 tag strings, or tag ids together with
      ``label_names`` (taken from a ``datasets.Dataset``'s ``ClassLabel`` feature when omitted);
    * ``{"text": "...", "entities": [{"start": 10, "end": 20, "label": "LOC"}, ...]}``;
    * a plain string (no entities) or an already :class:`~crop_hf.markers.MarkedSentence`.

    Parameters (at construction or per call): ``src_lang``, ``tgt_lang`` (codes of the model's
    family, see :mod:`crop_hf.translation.languages`), ``num_beams``, ``num_return_sequences``
    (hypotheses tried per sentence), ``max_new_tokens``, ``batch_size`` (sentences of similar length
    are batched together; results come back in input order), ``label_names``, ``scheme``.
    ``constrain_markers`` (construction or per call) lets a hypothesis emit only well-formed markers
    of its source (:mod:`crop_hf.translation.constraints`). Construction only: ``marker_style``
    (``"crop"`` or ``"easyproject"``), ``max_slots``, and the generation engine
    (:mod:`crop_hf.translation.backends`): ``backend`` (``"transformers"``, the default, or
    ``"ctranslate2"``), ``compute_type``, ``converted_model`` (an already converted CTranslate2
    folder) and ``backend_options`` (e.g. ``{"intra_threads": 2, "cache_dir": ...}``).

    Output per sentence: ``translation`` (markers removed), ``marked_translation``, ``entities``
    (``text``, ``label``, ``start``, ``end`` into ``translation``, ``slot``), ``complete``,
    ``failures`` (``slot``, ``reason``, ``label``, ``text`` per broken slot), ``hypotheses_tried``,
    ``source`` and ``marked_source``.

    ``model`` may also be a text-level engine such as :class:`~crop_hf.translation.apertium.Apertium`:
    the pipeline is then a :class:`~crop_hf.translation.text_engine.TextEngineTranslationPipeline`,
    with the same inputs, parameters and outputs.
    """

    _load_processor = False
    _load_image_processor = False
    _load_feature_extractor = False
    # optional, so that a text-level engine (no tokenizer) passes through transformers.pipeline; a model
    # still gets its tokenizer, and one that cannot be loaded raises its own error in __init__
    _load_tokenizer = None
    _pipeline_calls_generate = True
    _default_generation_config = GenerationConfig(max_new_tokens=256)

    def __new__(cls, *args, **kwargs):
        model = kwargs.get("model", args[0] if args else None)
        if isinstance(model, TextEngine):  # not an instance of cls: Python does not call __init__ again
            return TextEngineTranslationPipeline(model, **{k: v for k, v in kwargs.items() if k != "model"})
        return super().__new__(cls)

    def __init__(
        self,
        *args,
        marker_style: str | MarkerStyle | None = None,
        max_slots: int = 16,
        constrain_markers: bool = False,
        backend: str = "transformers",
        compute_type: str | None = None,
        converted_model: str | None = None,
        backend_options: dict | None = None,
        **kwargs,
    ):
        self.marker_style = get_marker_style(marker_style)
        self.constrain_markers = constrain_markers
        self._marker_vocabulary = None
        model = kwargs.get("model", args[0] if args else None)
        if kwargs.get("tokenizer", args[1] if len(args) > 1 else None) is None:
            from transformers import AutoTokenizer

            name = getattr(model, "name_or_path", None)
            if not name:
                raise ValueError("labeled-translation needs the model's tokenizer: pass tokenizer=...")
            kwargs["tokenizer"] = AutoTokenizer.from_pretrained(name)  # raises the loader's own error
            args = args[:1]
        super().__init__(*args, **kwargs)
        self._ensure_marker_tokens(max_slots)
        self._default_languages: LanguageSetup | None = None
        # After the markers are added: a CTranslate2 conversion must contain them.
        self.backend = make_backend(backend, self.model, self.tokenizer, compute_type=compute_type,
                                    converted_model=converted_model, **(backend_options or {}))

    # --- set-up ---------------------------------------------------------------------------

    def _ensure_marker_tokens(self, max_slots: int) -> None:
        """Give every marker its own token id, adding missing ones (and embedding rows) as training does.

        An untrained model has never seen added markers, so it will rarely keep them: fine-tune
        it on marked parallel data first (CroP's labeled sequence translation model).
        """
        added = add_marker_tokens(self.tokenizer, self.model, self.marker_style, max_slots)
        if added:
            logger.warning(
                "added %d marker tokens (%s ...) to the tokenizer and resized the embeddings; a model not "
                "fine-tuned on marked text will not keep them, so expect incomplete records",
                len(added), self.tokenizer.convert_ids_to_tokens(added[0]),
            )

    @property
    def marker_vocabulary(self):
        """The tokenizer's :class:`~crop_hf.translation.marker_tokens.MarkerVocabulary` (read on first use)."""
        if self._marker_vocabulary is None:
            self._marker_vocabulary = MarkerVocabulary(self.tokenizer, self.marker_style)
        return self._marker_vocabulary

    def _sanitize_parameters(
        self,
        src_lang: str | None = None,
        tgt_lang: str | None = None,
        num_beams: int | None = None,
        num_return_sequences: int | None = None,
        max_new_tokens: int | None = None,
        label_names: Sequence[str] | None = None,
        scheme: str | None = None,
        generate_kwargs: dict | None = None,
        constrain_markers: bool | None = None,
        **kwargs,
    ):
        if kwargs:
            raise TypeError(f"unexpected parameters for labeled-translation: {sorted(kwargs)}")
        preprocess: dict[str, Any] = {}
        forward: dict[str, Any] = {}
        if src_lang is not None or tgt_lang is not None:
            languages = resolve_languages(self.tokenizer, src_lang, tgt_lang)
            preprocess["languages"] = forward["languages"] = languages
        if label_names is not None:
            preprocess["label_names"] = list(label_names)
        if scheme is not None:
            preprocess["scheme"] = scheme
        generate = dict(generate_kwargs or {})
        for key, value in (("num_beams", num_beams), ("num_return_sequences", num_return_sequences),
                           ("max_new_tokens", max_new_tokens)):
            if value is not None:
                generate[key] = value
        if generate:
            forward["generate_kwargs"] = generate
        if constrain_markers is not None:
            forward["constrain_markers"] = constrain_markers
        return preprocess, forward, {}

    # --- inputs ---------------------------------------------------------------------------

    def mark(
        self,
        record: Any,
        label_names: Sequence[str] | None = None,
        scheme: str = "IOB2",
    ) -> MarkedSentence:
        """Turn one input record into a :class:`MarkedSentence` in this pipeline's marker style
        (:func:`~crop_hf.translation.text_engine.mark_record`)."""
        return mark_record(self.marker_style, record, label_names, scheme)

    # --- calling ----------------------------------------------------------------------------

    def __call__(self, inputs, *args, **kwargs):
        """Translate one record (returns a dict), a list (a list) or a dataset/iterable (an iterator)."""
        if isinstance(inputs, (Mapping, str, MarkedSentence)):
            return super().__call__(inputs, *args, **kwargs)
        # Explicit > the dataset's ClassLabel names > what the pipeline was built with.
        label_names = kwargs.pop("label_names", None) or _class_label_names(inputs)
        label_names = label_names or self._preprocess_params.get("label_names")
        scheme = kwargs.pop("scheme", None) or self._preprocess_params.get("scheme", "IOB2")
        batch_size = kwargs.get("batch_size") or self._batch_size or 1
        if isinstance(inputs, (list, tuple)):
            return list(self._bucketed(iter(inputs), len(inputs) or 1, label_names, scheme, kwargs))
        return self._bucketed(iter(inputs), batch_size * _BUCKET_WINDOW, label_names, scheme, kwargs)

    def _bucketed(
        self, records: Iterator[Any], window: int, label_names, scheme: str, kwargs: dict
    ) -> Iterator[dict]:
        """Translate ``window`` records at a time, sorted by length so batches pad little."""
        offset = 0
        while chunk := list(islice(records, window)):
            marked = mark_all(self.marker_style, chunk, label_names, scheme, offset)
            order = sorted(range(len(marked)), key=lambda i: len(marked[i].text))
            outputs = super().__call__([marked[i] for i in order], **kwargs)
            results: list[dict | None] = [None] * len(marked)
            for position, output in zip(order, outputs, strict=True):
                results[position] = output
            yield from results
            offset += len(chunk)

    def preprocess(
        self,
        record: Any,
        languages: LanguageSetup | None = None,
        label_names: Sequence[str] | None = None,
        scheme: str = "IOB2",
    ) -> dict[str, Any]:
        marked = self.mark(record, label_names, scheme)
        languages = self._languages(languages)
        languages.apply(self.tokenizer)
        encoded = self.tokenizer(languages.prefix + marked.text, return_tensors="pt")
        return {"input_ids": encoded["input_ids"], "attention_mask": encoded["attention_mask"], "marked": marked}

    def _languages(self, languages: LanguageSetup | None) -> LanguageSetup:
        if languages is not None:
            return languages
        if self._default_languages is None:
            # Families without language codes (MarianMT) need none; the others raise a clear error.
            self._default_languages = resolve_languages(self.tokenizer, None, None)
        return self._default_languages

    def _forward(
        self, model_inputs: dict[str, Any], languages: LanguageSetup | None = None, generate_kwargs: dict | None = None,
        constrain_markers: bool | None = None,
    ) -> dict[str, Any]:
        marked = model_inputs.pop("marked")
        marked = marked if isinstance(marked, list) else [marked]
        languages = self._languages(languages)
        generate_kwargs = dict(generate_kwargs or {})
        settings = self._get_set_generation_params({**self._generate_kwargs, **generate_kwargs})
        returns = settings.get("num_return_sequences") or 1
        if not settings.get("do_sample") and returns > (settings.get("num_beams") or 1):
            generate_kwargs["num_beams"] = returns  # beam search returns at most num_beams hypotheses
        generate_kwargs = self._prepare_generate_kwargs(generate_kwargs, **languages.generate_kwargs())
        constrained = dict(generate_kwargs)
        if self.constrain_markers if constrain_markers is None else constrain_markers:
            limits = self._get_set_generation_params(generate_kwargs)
            constrained["logits_processor"] = self._marker_constraint(
                marked, constrained.get("logits_processor"), limits.get("max_new_tokens"), limits.get("max_length"))
        output_ids = self.backend.generate(model_inputs, constrained)
        batch = model_inputs["input_ids"].shape[0]
        output_ids = output_ids.reshape(batch, output_ids.shape[0] // batch, *output_ids.shape[1:])

        entity_translations: list[dict[int, str]] = [{} for _ in marked]
        wanted = [(i, e) for i, m in enumerate(marked) if self.marker_style.needs_entity_translations(m)
                  for e in m.entities]
        if wanted:
            encoded = self.tokenizer([languages.prefix + e.text for _, e in wanted], return_tensors="pt", padding=True)
            single = {k: v for k, v in generate_kwargs.items() if k != "num_return_sequences"}
            ids = self.backend.generate(dict(encoded.to(self.device)), single)
            for (i, entity), text in zip(wanted, self._decode(ids), strict=True):
                entity_translations[i][entity.slot] = text
        return {"output_ids": output_ids, "marked": marked, "entity_translations": entity_translations}

    def _marker_constraint(self, marked: list[MarkedSentence], processors=None, max_new_tokens: int | None = None,
                           max_length: int | None = None):
        """``processors`` plus a :class:`~crop_hf.translation.constraints.MarkerConstraintProcessor` for
        ``marked`` that completes the markers within the length limit."""
        from transformers import LogitsProcessorList

        processor = MarkerConstraintProcessor(self.marker_vocabulary, [[e.slot for e in m.entities] for m in marked],
                                              self.model.generation_config.eos_token_id,
                                              max_new_tokens=max_new_tokens, max_length=max_length)
        return LogitsProcessorList([*(processors or []), processor])

    def _decode(self, ids) -> list[str]:
        """Decode keeping marker tokens even where they are special, dropping every other special token."""
        return self.marker_vocabulary.decode(self.tokenizer, [row.tolist() for row in ids])

    def postprocess(self, model_outputs: dict[str, Any]) -> dict[str, Any]:
        marked = _first(model_outputs["marked"])
        entity_translations = _first(model_outputs["entity_translations"])
        hypotheses = self._decode(model_outputs["output_ids"].reshape(-1, model_outputs["output_ids"].shape[-1]))
        best: Extraction | None = None
        tried = 0
        for hypothesis in hypotheses:
            tried += 1
            extraction = self.marker_style.extract(marked, hypothesis, entity_translations)
            if best is None or len(extraction.entities) > len(best.entities):
                best = extraction
            if extraction.complete:
                best = extraction
                break
        result = best.as_dict()
        result.update(hypotheses_tried=tried, source=marked.source, marked_source=marked.text)
        return result


def _first(value):
    """Unbatched pipeline outputs keep non-tensor values either bare or in a one-element list."""
    return value[0] if isinstance(value, list) else value


def _class_label_names(inputs: Any) -> list[str] | None:
    """Label names of a ``datasets`` ``ner_tags`` column of ``ClassLabel`` ids, if there is one."""
    return tag_names(inputs)


# Registers this pipeline when this module was what first imported transformers.pipelines.
_registration.register_pipelines()
