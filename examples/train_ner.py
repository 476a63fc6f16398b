#!/usr/bin/env python
"""Fine-tune a multilingual NER model and evaluate it zero-shot on every target language.

    accelerate launch examples/train_ner.py examples/configs/conll5_xlmr_base.yaml
    accelerate launch examples/train_ner.py --model_name_or_path FacebookAI/xlm-roberta-base \
        --train_sources conll5:en --eval_sources conll5:es conll5:nl conll5:de conll5:no \
        --output_dir xlmr-base-conll5

Arguments are the dataclasses of ``crop_hf.training`` (``--help`` lists them); a JSON or YAML file
may come first, and options after it override it. Everything else lives in the library.
"""

import logging
import sys

from crop_hf.training import parse_arguments, train_ner


def main(argv=None) -> int:
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
    for noisy in ("httpx", "urllib3", "filelock"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    model_args, data_args, training_args = parse_arguments(argv)
    train_ner(model_args, data_args, training_args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
