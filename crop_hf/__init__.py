"""crop-hf: cross-lingual data generation for the Hugging Face ecosystem.

Importing ``crop_hf`` registers its pipelines with transformers (``labeled-translation``,
``projection``) so that ``transformers.pipeline(task, model=...)`` finds them. The import itself
stays light: heavy libraries load only when a feature that needs them is used. The main verbs
(:func:`synthesize`, :func:`translate_align`, :func:`project_examples`, :func:`generate_and_filter`)
and their configs are offered here lazily, as transformers offers its classes: ``crop_hf.synthesize``
imports :mod:`crop_hf.synthesis` on first use, never at ``import crop_hf``.
"""

from typing import Any

from crop_hf import labels, markers, seqlogical
from crop_hf._registration import install as _install_pipelines
from crop_hf.data import load_dataset
from crop_hf.labels import CONLL_LABELS, PANX_LABELS, LabelSet, Span
from crop_hf.markers import (
    BracketMarkers,
    Extraction,
    MarkedSentence,
    SlotMarkers,
    extract,
    mark_text,
    mark_tokens,
)
from crop_hf.ner.evaluate import evaluate_pretrained
from crop_hf.ner.train import train_ner
from crop_hf.self_training import self_train
from crop_hf.seqlogical import ParseError, Tree, TreeTooDeepError

__version__ = "0.1.0.dev0"

#: name -> the module that defines it, imported on the first ``crop_hf.<name>`` (PEP 562)
_LAZY = {
    "synthesize": "crop_hf.synthesis.runner",
    "SynthesisConfig": "crop_hf.synthesis.config",
    "translate_align": "crop_hf.augment.translate_align",
    "TranslateAlignConfig": "crop_hf.augment.translate_align",
    "project_examples": "crop_hf.projection.methods",
    "ProjectionExample": "crop_hf.projection.methods",
    "generate_and_filter": "crop_hf.augment.generate_filter",
    "GenerateFilterConfig": "crop_hf.augment.generate_filter",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'crop_hf' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "CONLL_LABELS",
    "PANX_LABELS",
    "BracketMarkers",
    "Extraction",
    "GenerateFilterConfig",
    "LabelSet",
    "MarkedSentence",
    "ParseError",
    "ProjectionExample",
    "SlotMarkers",
    "Span",
    "SynthesisConfig",
    "TranslateAlignConfig",
    "Tree",
    "TreeTooDeepError",
    "__version__",
    "evaluate_pretrained",
    "extract",
    "generate_and_filter",
    "labels",
    "load_dataset",
    "mark_text",
    "mark_tokens",
    "markers",
    "project_examples",
    "self_train",
    "seqlogical",
    "synthesize",
    "train_ner",
    "translate_align",
]

_install_pipelines()
