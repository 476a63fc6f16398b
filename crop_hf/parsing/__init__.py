"""Code-switched semantic parsing (CSTOP): data preparation, prediction, training, the pipeline.

Importing this package is light; :mod:`crop_hf.parsing.training`, :mod:`crop_hf.parsing.predict`
and :mod:`crop_hf.parsing.pipeline` import torch and transformers when used.
"""

from crop_hf.parsing.fewshot import CSTOP_SEEDS, few_shot_indices

__all__ = ["CSTOP_SEEDS", "few_shot_indices"]
