"""The one loader of a labeled translator: a model name or folder, or ``"apertium"``."""

from __future__ import annotations

from typing import Any

from crop_hf.errors import reaching
from crop_hf.translation.apertium import Apertium, is_apertium
from crop_hf.translation.text_engine import TextEngineTranslationPipeline

__all__ = ["load_translator"]


def load_translator(mt_model: Any, *, revision: str | None = None, device: Any = None,
                    batch_size: int | None = None, **options: Any) -> Any:
    """``pipeline("labeled-translation")`` over ``mt_model``: what synthesis, translate-and-align and translate-train use.

    ``mt_model`` is a model name or folder (or a loaded model, with ``tokenizer=`` in ``options``),
    or ``"apertium"`` (or an :class:`~crop_hf.translation.apertium.Apertium`), which gives a
    :class:`~crop_hf.translation.text_engine.TextEngineTranslationPipeline` with the same calls and
    outputs. ``batch_size`` is the model's generation batch; Apertium keeps its own (many sentences
    per process), and a ``revision`` or an option it cannot honour is refused in one line.
    ``options`` are the pipeline's construction options (``backend``, ``marker_style``,
    ``constrain_markers``, ...).
    """
    if is_apertium(mt_model):
        if revision is not None:
            raise ValueError(f"mt_revision={revision!r} does not apply to Apertium (it has no revisions)")
        engine = mt_model if isinstance(mt_model, Apertium) else Apertium()
        return TextEngineTranslationPipeline(engine, **options)
    from transformers import pipeline  # crop_hf is imported, so labeled-translation is registered

    with reaching(mt_model, "translation model (--mt_model)"):
        return pipeline("labeled-translation", model=mt_model, revision=revision, device=device,
                        batch_size=batch_size, **options)
