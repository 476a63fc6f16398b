#!/usr/bin/env python
"""Fine-tune the joint intent + slot parser of CSTOP and print its exact match per domain.

    accelerate launch examples/train_parser.py examples/configs/hinglish_top_xlmr_base.yaml
    # staged recipe (CSTOP): English parses first, then code-switched, continuing from stage 1
    accelerate launch examples/train_parser.py examples/configs/hinglish_top_xlmr_base.yaml \
        --train_sources "hinglish_top?data_dir=data/hinglish-top#en" --output_dir xlmr-hinglish-stage1
    accelerate launch examples/train_parser.py examples/configs/hinglish_top_xlmr_base.yaml \
        --init_from xlmr-hinglish-stage1

Options are the dataclasses of ``crop_hf.parsing.arguments`` (``--help`` lists them), as for
``crop-hf train-parser``; a JSON or YAML file may come first and options after it override it.
"""

import sys

from crop_hf.commands import train_parser


def main(argv=None) -> int:
    from crop_hf.arguments import parse_config

    return train_parser.run(*parse_config(train_parser.CONFIG_CLASSES, argv, prog="train_parser.py"))


if __name__ == "__main__":
    sys.exit(main())
