"""Build XTREME-40 (PAN-X / WikiANN, 40 languages) from the PAN-X archive; write parquet or push.

    python dataset_scripts/build_xtreme40.py --configs de en nl --data-dir wikiann --output-dir out/xtreme40

The same as ``crop-hf build-dataset --name xtreme40 ...``; ``--help`` lists the options.
"""

import sys

from crop_hf.cli import main

if __name__ == "__main__":
    sys.exit(main(["build-dataset", "--name", "xtreme40", *sys.argv[1:]]))
