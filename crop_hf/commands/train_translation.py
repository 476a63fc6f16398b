"""``crop-hf train-translation``: fine-tune a translation model to keep boundary markers.

    crop-hf train-translation --model_name_or_path facebook/m2m100_418M --train_file marked/train \\
        --validation_file marked/val --output_dir m2m100-418M-markers --mixed_precision bf16
    accelerate launch -m crop_hf.cli train-translation run.yaml   # several GPUs

The options are the dataclasses of :mod:`crop_hf.translation.arguments`; a JSON/YAML file may come
first. ``examples/train_translation.py`` is the same entry point as a script.
"""

from __future__ import annotations

from crop_hf.console import setup_logging
from crop_hf.translation.arguments import (
    TranslationDataArguments,
    TranslationModelArguments,
    TranslationTrainingArguments,
)
from crop_hf.translation.train import train_translation

CONFIG_CLASSES = (TranslationModelArguments, TranslationDataArguments, TranslationTrainingArguments)


def run(model_args: TranslationModelArguments, data_args: TranslationDataArguments,
        training_args: TranslationTrainingArguments) -> int:
    import logging

    setup_logging(logging.INFO, fmt="%(asctime)s %(levelname)s %(name)s: %(message)s")
    train_translation(model_args, data_args, training_args)
    return 0
