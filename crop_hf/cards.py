"""Former home of model cards and model uploads, kept so that existing imports work: see :mod:`crop_hf.hub`."""

from crop_hf.hub import TEMPLATES_DIR, model_index_results, ner_model_card, push_folder

__all__ = ["TEMPLATES_DIR", "model_index_results", "ner_model_card", "push_folder"]
