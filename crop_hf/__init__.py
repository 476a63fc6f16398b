"""crop-hf: cross-lingual data generation for the Hugging Face ecosystem.

Importing ``crop_hf`` registers its pipelines with transformers (``labeled-translation``,
``projection``) so that ``transformers.pipeline(task, model=...)`` finds them. The import itself
stays light: heavy libraries load only when a feature that needs them is used.
"""

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

__all__ = [
    "CONLL_LABELS",
    "PANX_LABELS",
    "BracketMarkers",
    "Extraction",
    "LabelSet",
    "MarkedSentence",
    "ParseError",
    "SlotMarkers",
    "Span",
    "Tree",
    "TreeTooDeepError",
    "__version__",
    "evaluate_pretrained",
    "extract",
    "labels",
    "load_dataset",
    "mark_text",
    "mark_tokens",
    "markers",
    "self_train",
    "seqlogical",
    "train_ner",
]

_install_pipelines()
