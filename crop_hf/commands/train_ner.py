"""``crop-hf train-ner``: fine-tune a multilingual NER model and evaluate it per language.

    crop-hf train-ner examples/configs/conll5_xlmr_base.yaml
    accelerate launch -m crop_hf.cli train-ner --model_name_or_path FacebookAI/xlm-roberta-base \\
        --train_sources conll5:en --eval_sources conll5:es conll5:nl --output_dir xlmr-base-conll5

The options are the dataclasses of :mod:`crop_hf.ner.arguments` (``--help`` lists them);
``examples/train_ner.py`` is this command.
"""

from __future__ import annotations

from crop_hf.console import setup_logging
from crop_hf.ner.arguments import DataArguments, ModelArguments, NerTrainingArguments
from crop_hf.ner.train import train_ner

CONFIG_CLASSES = (ModelArguments, DataArguments, NerTrainingArguments)


def run(model_args: ModelArguments, data_args: DataArguments, training_args: NerTrainingArguments) -> int:
    import logging

    setup_logging(logging.INFO, fmt="%(asctime)s %(levelname)s %(name)s: %(message)s")
    train_ner(model_args, data_args, training_args)
    return 0
