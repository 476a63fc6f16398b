"""``crop-hf train-parser``: fine-tune the joint intent + slot parser (CSTOP) with Accelerate.

Examples::

    crop-hf train-parser --train_sources "hinglish_top?data_dir=data/hinglish-top" --output_dir parser
    # staged recipe: English first, then code-switched
    crop-hf train-parser --train_sources "hinglish_top?data_dir=data/hinglish-top#en" --output_dir stage1
    crop-hf train-parser --init_from stage1 --train_sources "hinglish_top?data_dir=data/hinglish-top" \\
        --output_dir stage2
    # CSTOP_100 few-shot, one of the three draws
    crop-hf train-parser parser.yaml --few_shot 100 --few_shot_seed 1

Several processes: ``accelerate launch -m crop_hf.cli train-parser ...``.
"""

from __future__ import annotations

from crop_hf.console import setup_logging
from crop_hf.parsing.arguments import ParserDataArguments, ParserModelArguments, ParserTrainingArguments
from crop_hf.parsing.train import train_parser

CONFIG_CLASSES = (ParserModelArguments, ParserDataArguments, ParserTrainingArguments)


def run(model_args: ParserModelArguments, data_args: ParserDataArguments,
        training_args: ParserTrainingArguments) -> int:
    import logging

    setup_logging(logging.INFO)
    result = train_parser(model_args, data_args, training_args)
    print(f"trained {result.completed_steps} steps; model in {result.output_dir}")
    return 0
