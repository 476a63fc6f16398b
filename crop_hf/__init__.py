"""crop-hf: cross-lingual data generation for the Hugging Face ecosystem.

Importing ``crop_hf`` registers its pipelines with transformers (``labeled-translation``,
``projection``) so that ``transformers.pipeline(task, model=...)`` finds them. The import itself
stays light: heavy libraries load only when a feature that needs them is used.
"""

from crop_hf import labels, seqlogical
from crop_hf._registration import install as _install_pipelines
from crop_hf.data import load_dataset
from crop_hf.labels import CONLL_LABELS, PANX_LABELS, LabelSet, Span
from crop_hf.seqlogical import ParseError, Tree, TreeTooDeepError

__version__ = "0.1.0.dev0"

__all__ = [
    "CONLL_LABELS",
    "PANX_LABELS",
    "LabelSet",
    "ParseError",
    "Span",
    "Tree",
    "TreeTooDeepError",
    "__version__",
    "labels",
    "load_dataset",
    "seqlogical",
]

_install_pipelines()
