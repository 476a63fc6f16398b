#!/usr/bin/env python
"""Fine-tune a multilingual NER model and evaluate it zero-shot on every target language.

    accelerate launch examples/train_ner.py examples/configs/conll5_xlmr_base.yaml
    accelerate launch examples/train_ner.py --model_name_or_path FacebookAI/xlm-roberta-base \
        --train_sources conll5:en --eval_sources conll5:es conll5:nl conll5:de conll5:no \
        --output_dir xlmr-base-conll5

The same as ``crop-hf train-ner``: arguments are the dataclasses of ``crop_hf.ner.arguments`` (``--help``
lists them); a JSON or YAML file may come first, and options after it override it.
"""

import sys

from crop_hf.cli import main

if __name__ == "__main__":
    sys.exit(main(["train-ner", *sys.argv[1:]]))
