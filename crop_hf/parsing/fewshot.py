"""Few-shot subsets (CSTOP_100): the selection lives in :mod:`crop_hf.data.fewshot`, where every job may read it."""

from crop_hf.data.fewshot import CSTOP_SEEDS, few_shot_indices

__all__ = ["CSTOP_SEEDS", "few_shot_indices"]
