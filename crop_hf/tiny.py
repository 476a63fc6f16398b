"""Former home of the demo's tiny models, kept so that existing imports work: see :mod:`crop_hf.demo_models`."""

from crop_hf.demo_models import SAMPLE_CORPUS, SLOT_TOKENS, build_tiny_m2m100, build_tiny_xlmr_ner

__all__ = ["SAMPLE_CORPUS", "SLOT_TOKENS", "build_tiny_m2m100", "build_tiny_xlmr_ner"]
