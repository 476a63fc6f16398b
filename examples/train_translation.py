#!/usr/bin/env python
"""Fine-tune a translation model on marker-annotated parallel data (CroP's labeled sequence translation model).

    crop-hf mark-parallel --source_files train.en.gz --target_files train.de.gz --language_pairs en-de \
        --output_dir marked/train
    accelerate launch examples/train_translation.py --model_name_or_path facebook/m2m100_418M \
        --train_file marked/train --validation_file marked/val --output_dir m2m100-markers

Arguments are the dataclasses of ``crop_hf.translation.arguments`` (``--help`` lists them); a JSON or
YAML file may come first. Everything else lives in the library (also ``crop-hf train-translation``).
"""

import sys

from crop_hf.commands.train_translation import run
from crop_hf.translation.arguments import parse_translation_arguments


def main(argv=None) -> int:
    return run(*parse_translation_arguments(argv))


if __name__ == "__main__":
    sys.exit(main())
