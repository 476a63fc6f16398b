"""Build TOP (v1, or TOPv2 with --configs v2) from its release folder; write parquet or push.

    python dataset_scripts/build_top.py --configs v2 --options domains=weather --data-dir TOPv2_Dataset --output-dir out/top

The same as ``crop-hf build-dataset --name top ...``; ``--help`` lists the options.
"""

import sys

from crop_hf.cli import main

if __name__ == "__main__":
    sys.exit(main(["build-dataset", "--name", "top", *sys.argv[1:]]))
