"""Jinja templates of the model and dataset cards crop-hf writes (installed as ``crop_hf.model_cards``)."""
