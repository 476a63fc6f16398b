"""The one loader of the translation models a projection method runs with: synthesis and translate-and-align call it.

A corpus run translates with ``mt_model``; a model-scored method (``insertion``, ``rerank``,
``hybrid_rerank``) also scores spans with it. :func:`load_method_models` decides which:

* a method that uses no scorer gets a translator only (:func:`~crop_hf.translation.loading.load_translator`:
  ``pipeline("labeled-translation")``, or Apertium's text engine, which takes no model options);
* a model-scored method loads ``mt_model`` once, as a :class:`~crop_hf.translation.scoring.TranslationScorer`,
  checks it for every target language before anything else is loaded (:func:`method_scorer`: a model
  without the marker style's tokens, or without the reverse direction, fails here, naming the
  model), and builds the translator on the scorer's weights, adding no marker token
  (``max_slots=0``: it translates plain text).

The method is the run's :class:`~crop_hf.projection.methods.ResolvedMethod` (``config.projection``),
read once when the run's config was built.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from crop_hf.errors import reaching
from crop_hf.projection.methods import ResolvedMethod
from crop_hf.translation.apertium import is_apertium
from crop_hf.translation.loading import load_translator
from crop_hf.translation.scoring import TranslationScorer

__all__ = ["load_method_models", "load_method_scorer", "method_scorer"]


def method_scorer(method: ResolvedMethod, scorer: Any, src_lang: str, tgt_lang: str) -> Any:
    """``scorer`` turned to ``src_lang`` → ``tgt_lang``, checked for ``method``: the ``ValueError`` the method
    would raise on its first batch (no scorer, no marker tokens, no reverse direction), raised now."""
    if scorer is not None and (scorer.languages.src_lang, scorer.languages.tgt_lang) != (src_lang, tgt_lang):
        scorer = scorer.direction(src_lang, tgt_lang)
    method.check_scorer(scorer)
    return scorer


def load_method_scorer(method: ResolvedMethod, mt_model: Any, *, src_lang: str, tgt_langs: Sequence[str],
                       revision: str | None = None, device: Any = None,
                       batch_size: int | None = None) -> TranslationScorer:
    """``mt_model`` (at ``revision``) as the scorer of ``src_lang`` → ``tgt_langs[0]``, checked for ``method`` in
    the direction of every target language (:func:`method_scorer`)."""
    batches = {} if batch_size is None else {"batch_size": batch_size}  # else the scorer's own default
    with reaching(mt_model, "translation model (--mt_model)"):
        scorer = TranslationScorer.from_pretrained(mt_model, src_lang, tgt_langs[0], revision=revision, device=device,
                                                   **batches)
    for lang in tgt_langs:
        method_scorer(method, scorer, src_lang, lang)
    return scorer


def load_method_models(method: ResolvedMethod, mt_model: Any, *, src_lang: str, tgt_langs: Sequence[str],
                       revision: str | None = None, device: Any = None, batch_size: int | None = None,
                       **options: Any) -> tuple[Any, TranslationScorer | None]:
    """``(translator, scorer)`` for a run of ``method`` with ``mt_model``; the scorer is ``None`` for a method
    that uses none (module docstring).

    ``options`` are the translator's construction options (``backend``, ``compute_type``,
    ``constrain_markers``); Apertium takes none of them, nor ``revision``, ``device`` or ``batch_size``.
    """
    if not method.uses_scorer:
        if is_apertium(mt_model):  # its own batches and format handling: no model options
            return load_translator(mt_model), None
        return load_translator(mt_model, revision=revision, device=device, batch_size=batch_size, **options), None
    from transformers import pipeline  # crop_hf is imported, so labeled-translation is registered

    scorer = load_method_scorer(method, mt_model, src_lang=src_lang, tgt_langs=tgt_langs, revision=revision,
                                device=device, batch_size=batch_size)
    translator = pipeline("labeled-translation", model=scorer.model, tokenizer=scorer.tokenizer, device=device,
                          batch_size=batch_size, **options, marker_style=method.marker_style, max_slots=0)
    return translator, scorer
