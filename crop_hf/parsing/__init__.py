"""Code-switched semantic parsing (CSTOP): arguments, data, training, evaluation, prediction, the pipeline.

The same file shape as every task family (:mod:`crop_hf.ner`, :mod:`crop_hf.translation`):
:mod:`~crop_hf.parsing.arguments`, :mod:`~crop_hf.parsing.data`, :mod:`~crop_hf.parsing.train`
(:func:`~crop_hf.parsing.train.train_parser` on the training engine) and
:mod:`~crop_hf.parsing.evaluate`; besides them :mod:`~crop_hf.parsing.predict`,
:mod:`~crop_hf.parsing.pipeline` and :mod:`~crop_hf.parsing.fewshot`.

Importing this package is light; its modules import torch and transformers when used.
"""

from crop_hf.parsing.fewshot import CSTOP_SEEDS, few_shot_indices

__all__ = ["CSTOP_SEEDS", "few_shot_indices"]
