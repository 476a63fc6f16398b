"""``ProjectionPipeline``: label projection as a ``transformers`` pipeline (task ``"projection"``).

Design. Of the three methods only ``"alignment"`` with an embedding aligner needs a model;
``"lexical"`` and ``"fuzzy"`` need none, and neither does alignment when each input carries its
``alignment`` (say from :class:`~crop_hf.alignment.EflomalAligner` run over the whole corpus,
which is how eflomal works best) or when the pipeline is given ``aligner=``. So:

* ``pipeline("projection")`` or ``pipeline("projection", method="fuzzy")`` builds one with no
  model at all (CPU, nothing loaded or downloaded): the task's registered default is
  :data:`crop_hf._registration.MODEL_FREE`, not a checkpoint;
* ``pipeline("projection", model="google-bert/bert-base-multilingual-cased", layer=8)`` loads the
  encoder with ``AutoModel`` and aligns with SimAlign's methods (batched), with ``device``,
  ``batch_size`` and ``dtype`` as for any pipeline; lexical and fuzzy projection work with it too
  (``method=...`` at construction or per call);
* ``ProjectionPipeline(method="lexical")`` is the same as the first, without the factory.

The model-scored methods (``insertion``, ``rerank``, ``hybrid_rerank``) score spans with a
translation model, given the way an aligner is: ``scorer=`` (a built
:class:`~crop_hf.projection.TranslationScorer`), or ``scorer_model=`` (a seq2seq checkpoint name
or folder, loaded with ``AutoModelForSeq2SeqLM`` on the pipeline's ``device``) with ``src_lang``
and ``tgt_lang`` (codes of the model's family: the source sentences' language and the
targets'). ``model=`` stays the aligner's encoder, so ``hybrid_rerank`` can take both::

    pipeline("projection", method="insertion", scorer_model="my-org/m2m100-markers", src_lang="en", tgt_lang="de")
    pipeline("projection", model="google-bert/bert-base-multilingual-cased", method="hybrid_rerank",
             scorer_model="facebook/m2m100_418M", src_lang="en", tgt_lang="de")

The scorer is checked when the pipeline is built (a model without the marker style's tokens
asked to insert, a model without the reverse direction asked to rerank: an error naming the model),
and each batch of inputs is projected in one pass (``batch_size=``), so model passes are batched
across sentences.

Asking for alignment projection of an input that has no ``alignment`` from a pipeline with
neither a model nor an aligner is an error that says what to pass; asking for a model-scored
method of a pipeline without a scorer is one too.

Inputs are dicts (a list of them, a generator, or a ``datasets.Dataset`` whose rows have these
columns):

* ``target``: the raw target sentence, text or tokens (required);
* ``translation``: for ``lexical``/``fuzzy``, the ``labeled-translation`` pipeline's output for
  this sentence (or ``entities``: just its entity list, or ``(text, label)`` pairs);
* ``source_tokens`` and ``source_tags`` (IOB2 strings, or ids with ``label_names=``): for
  ``alignment``, ``hybrid`` and the model-scored methods (the source sentence whose spans are
  placed); optional ``alignment`` (pairs or Pharaoh text) to skip the aligner;
* optional ``lang``: the target language (``zh``, ``ja``, ``th``, ... are matched by character).

Each output is :meth:`crop_hf.projection.ProjectionResult.to_dict`: ``tokens``, ``tags``,
``entities``, ``entity_status``, ``tokenization``, ``method``, ``complete``, ``kept``, ``reason``.

>>> from crop_hf.projection import ProjectionPipeline
>>> projector = ProjectionPipeline(method="lexical")
>>> out = projector({"target": "我住在哥德堡。", "entities": [{"text": "哥德堡", "label": "LOC"}]})
>>> out["tags"], out["tokenization"]
(['O', 'O', 'O', 'B-LOC', 'I-LOC', 'I-LOC', 'O'], 'characters')
"""

from __future__ import annotations

import collections.abc
import logging
from collections.abc import Mapping, Sequence

from torch.utils.data import Dataset as TorchDataset
from transformers import Pipeline

from crop_hf import _registration
from crop_hf.alignment.embedding import EmbeddingAligner
from crop_hf.alignment.symmetrize import parse_pharaoh
from crop_hf.data.features import tag_names
from crop_hf.projection.alignment import source_spans
from crop_hf.projection.methods import (
    PROJECTION_METHODS,
    ProjectionExample,
    ProjectionMethod,
    check_scorer,
    get_method,
    method_options,
    run_method,
)
from crop_hf.projection.target import tokenize_target
from crop_hf.translation.scoring import TranslationScorer

__all__ = ["PROJECTION_METHODS", "ProjectionPipeline"]

logger = logging.getLogger(__name__)

_PREPROCESS = ("method", "lang", "tokenization", "label_names", "scheme")


def _forward_options() -> tuple[str, ...]:
    """Every option some projection method takes (each method checks its own); read per call, so that
    a method registered after this module was imported takes its options here too."""
    return ("method", *sorted({option for method in PROJECTION_METHODS.values() for option in method.options}))


def _method_of(spec: str) -> ProjectionMethod:
    """The method a spec names, without reading its options again (``_sanitize_parameters`` checked them)."""
    return PROJECTION_METHODS.get(spec.partition("?")[0])


class _Rows(TorchDataset):
    """A ``datasets.Dataset`` seen as a torch ``Dataset`` of row dicts, so the pipeline streams it."""

    def __init__(self, rows) -> None:
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> dict:
        return self.rows[int(index)]


def _collate(items: list[dict]) -> dict:
    return {"example": [item["example"] for item in items]}


class ProjectionPipeline(Pipeline):
    """Projects entity labels onto raw target sentences (see the module docstring for inputs and design).

    Args:
        model: an encoder (loaded ``PreTrainedModel``) for embedding alignment, or ``None``.
        tokenizer: its (fast) tokenizer.
        method: ``"lexical"`` (default), ``"fuzzy"``, ``"alignment"``, ``"hybrid"``, or a model-scored
            ``"insertion"``, ``"rerank"``, ``"hybrid_rerank"`` (any registered method, with options
            written ``"hybrid?threshold=80"``).
        aligner: any object with ``align(source_words, target_words) -> list of pairs`` to use instead
            of the model (an :class:`~crop_hf.alignment.EmbeddingAligner` or
            :class:`~crop_hf.alignment.EflomalAligner`).
        scorer: a :class:`~crop_hf.projection.TranslationScorer` for the model-scored methods.
        scorer_model: instead of ``scorer``, a seq2seq checkpoint (name or folder) to build one from,
            on the pipeline's ``device``, scoring ``src_lang`` → ``tgt_lang`` (codes of its family;
            none for a one-direction model).
        layer, token_type, distortion: of the embedding aligner built from ``model`` (SimAlign's
            defaults: layer 8, ``"bpe"``, 0).
        align_method: the embedding aligner's method, ``"itermax"`` (default), ``"argmax"``, ``"match"``.
        lang, tokenization: target language / ``"auto"``, ``"words"``, ``"whitespace"``, ``"characters"``.
        ignore_case, nfkc, strip_punctuation, repeated, threshold: lexical and fuzzy matching options
            (:func:`~crop_hf.projection.project_lexical`, :func:`~crop_hf.projection.project_fuzzy`).
        fill_gaps, label_names, scheme: alignment projection options.
        drop_incomplete: mark incomplete sentences ``kept=False``; default ``True`` for lexical
            and fuzzy (CroP), ``False`` for alignment (CSTOP).

    Every option except the aligner's and the scorer's can also be given per call.
    """

    _load_tokenizer = None  # optional: the model-free pipeline has none
    _load_processor = False
    _load_image_processor = False
    _load_feature_extractor = False
    _load_video_processor = False

    def __init__(
        self,
        model=None,
        tokenizer=None,
        *,
        aligner=None,
        scorer=None,
        scorer_model: str | None = None,
        src_lang: str | None = None,
        tgt_lang: str | None = None,
        layer: int = 8,
        token_type: str = "bpe",
        distortion: float = 0.0,
        align_method: str = "itermax",
        **kwargs,
    ) -> None:
        kwargs.setdefault("method", "lexical")
        if scorer is not None and scorer_model is not None:
            raise ValueError("give the projection pipeline scorer= or scorer_model=, not both")
        if (src_lang or tgt_lang) and scorer_model is None:
            raise ValueError("src_lang and tgt_lang are the directions of scorer_model=; a built scorer= has its own")
        if model is _registration.MODEL_FREE:
            model = None
        if model is not None:
            super().__init__(model, tokenizer, **kwargs)
        else:
            self._init_without_model(tokenizer, **kwargs)
        if aligner is None and model is not None:
            if tokenizer is None:
                raise ValueError("alignment with a model needs its tokenizer: pass tokenizer=...")
            aligner = EmbeddingAligner(model, tokenizer, layer=layer, token_type=token_type, distortion=distortion,
                                       method=align_method)
        self.aligner = aligner
        if scorer_model is not None:
            scorer = TranslationScorer.from_pretrained(scorer_model, src_lang, tgt_lang, device=self.device)
        self.scorer = scorer
        # a model without the markers asked to insert, or without the reverse direction asked to rerank:
        # said now, before any input (a method named per call is checked on its first batch)
        method = self._forward_params["method"]
        accepted = _method_of(method).options
        check_scorer(method, scorer, **{name: value for name, value in self._forward_params.items() if name in accepted})

    def _init_without_model(self, tokenizer=None, *, task: str = "projection", device=None, **kwargs) -> None:
        """What ``Pipeline.__init__`` sets up, minus everything that needs a model."""
        import torch

        for unused in ("dtype", "torch_dtype", "args_parser", "binary_output"):
            kwargs.pop(unused, None)
        self.task = task
        self.model = None
        self.tokenizer = tokenizer
        self.feature_extractor = self.image_processor = self.video_processor = self.processor = None
        self.device = torch.device("cpu") if device is None or device == -1 else torch.device(device)
        self.binary_output = False
        self.call_count = 0
        self._batch_size = kwargs.pop("batch_size", None)
        self._num_workers = kwargs.pop("num_workers", None)
        self._preprocess_params, self._forward_params, self._postprocess_params = self._sanitize_parameters(**kwargs)

    def __repr__(self) -> str:
        model = type(self.model).__name__ if self.model is not None else None
        scorer = getattr(self, "scorer", None)
        scored = f", scorer={scorer.name!r}" if scorer is not None else ""
        return f"{type(self).__name__}(method={self._forward_params.get('method')!r}, model={model}{scored})"

    def _sanitize_parameters(self, **kwargs):
        forward_options = _forward_options()
        known = set(_PREPROCESS) | set(forward_options)
        unknown = sorted(set(kwargs) - known)
        if unknown:
            raise TypeError(f"unknown projection option(s) {unknown}; expected some of {sorted(known)}")
        method = kwargs.get("method")
        if method is not None:
            get_method(method)
        preprocess, forward = ({name: kwargs[name] for name in names if name in kwargs}
                               for names in (_PREPROCESS, forward_options))
        return preprocess, forward, {}

    # -- the three stages ---------------------------------------------------------------------

    def preprocess(self, inputs, method="lexical", lang=None, tokenization="auto", label_names=None,
                   scheme="IOB2") -> dict:
        if not isinstance(inputs, Mapping) or "target" not in inputs:
            raise ValueError("a projection input is a dict with a 'target' sentence (text or tokens) and, for "
                             "lexical/fuzzy, 'translation' or 'entities'; for alignment and the model-scored "
                             f"methods, 'source_tokens' and 'source_tags'; got {type(inputs).__name__}")
        sentence = tokenize_target(inputs["target"], inputs.get("lang") or lang, tokenization)
        example = ProjectionExample(sentence)
        chosen = _method_of(method)
        if not (chosen.uses_alignment or chosen.uses_scorer):
            example.entities = inputs.get("translation", inputs.get("entities"))
            if example.entities is None:
                raise ValueError(f"{method} projection needs 'translation' (the labeled-translation output) or "
                                 f"'entities' for the target {_preview(inputs['target'])}")
            return {"example": example}
        if "source_tags" not in inputs and "source_spans" not in inputs:
            raise ValueError(f"{chosen.name} projection needs 'source_tokens' and 'source_tags' for the target "
                             f"{_preview(inputs['target'])}")
        tags = inputs.get("source_tags", inputs.get("source_spans"))
        if label_names is not None and tags and not isinstance(tags[0], (str, Sequence)):
            tags = [label_names[int(t)] for t in tags]
        example.source_tokens = list(inputs["source_tokens"]) if inputs.get("source_tokens") is not None else None
        example.entities = inputs.get("translation", inputs.get("entities"))  # hybrid: target texts of the spans
        example.source_spans = source_spans(tags, scheme)
        alignment = inputs.get("alignment")
        if alignment is not None:
            example.alignment = parse_pharaoh(alignment) if isinstance(alignment, str) else [tuple(p) for p in alignment]
        return {"example": example}

    def _forward(self, model_inputs, method="lexical", **options) -> dict:
        """Project the batch in one go: one aligner call for the examples without links, one scorer search
        for a model-scored method; the method spec is read once per batch."""
        examples = model_inputs["example"]
        if not isinstance(examples, list):
            examples = [examples]
        accepted = _method_of(method).options  # the options meant for other methods are left out
        chosen, resolved = method_options(method, **{name: value for name, value in options.items() if name in accepted})
        return {"result": run_method(chosen, resolved, examples, aligner=self.aligner, scorer=self.scorer)}

    def postprocess(self, model_outputs) -> dict:
        result = model_outputs["result"]
        if isinstance(result, list):
            (result,) = result
        return result.to_dict()

    # -- batching ---------------------------------------------------------------------------

    def __call__(self, inputs, *args, **kwargs):
        """Project one input dict, a list of them (returns a list), or a generator or ``datasets.Dataset``
        (returns a lazy iterator, as transformers does for datasets). ``batch_size=`` batches the aligner
        and the scorer.
        """
        if type(inputs).__module__.startswith("datasets.") and hasattr(inputs, "column_names"):
            names = tag_names(inputs, "source_tags")
            if names is not None and "label_names" not in kwargs and "label_names" not in self._preprocess_params:
                kwargs["label_names"] = names  # ClassLabel ids read by name, as labeled-translation does
            inputs = _Rows(inputs)
        return super().__call__(inputs, *args, **kwargs)

    def get_iterator(self, inputs, num_workers, batch_size, preprocess_params, forward_params, postprocess_params):
        """As ``Pipeline.get_iterator``, but batches by collecting examples instead of padding tensors.

        The stock collate function pads ``input_ids`` and refuses to batch without a tokenizer;
        a projection example is a sentence pair (or a sentence and entities), tokenized by the
        aligner or the scorer inside ``_forward`` where a whole batch is encoded at once.
        """
        from torch.utils.data import DataLoader
        from transformers.pipelines.pt_utils import PipelineDataset, PipelineIterator

        if isinstance(inputs, collections.abc.Sized):
            dataset = PipelineDataset(inputs, self.preprocess, preprocess_params)
        else:
            dataset = PipelineIterator(inputs, self.preprocess, preprocess_params)
            num_workers = min(num_workers, 1)  # an iterable cannot be split between workers safely
        loader = DataLoader(dataset, num_workers=num_workers, batch_size=batch_size, collate_fn=_collate)
        model_iterator = PipelineIterator(loader, self.forward, forward_params, loader_batch_size=batch_size)
        return PipelineIterator(model_iterator, self.postprocess, postprocess_params)


def _preview(target) -> str:
    text = target if isinstance(target, str) else " ".join(map(str, target))
    return repr(text[:60] + ("…" if len(text) > 60 else ""))


# Registers this pipeline when this module was what first imported transformers.pipelines.
_registration.register_pipelines()
