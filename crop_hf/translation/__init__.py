"""Labeled sequence translation: ``pipeline("labeled-translation")`` and language codes per model family.

The pipeline class is loaded on first access, so importing this package does not import transformers.
"""

from __future__ import annotations

from typing import Any

from crop_hf.translation.languages import LanguageSetup, resolve_languages

__all__ = ["LabeledSequenceTranslationPipeline", "LanguageSetup", "resolve_languages"]


def __getattr__(name: str) -> Any:
    if name == "LabeledSequenceTranslationPipeline":
        from crop_hf.translation.pipeline import LabeledSequenceTranslationPipeline  # heavy (torch)

        return LabeledSequenceTranslationPipeline
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
