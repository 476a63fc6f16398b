"""Build CSTOP from its release folder; write parquet or push.

    python dataset_scripts/build_cstop.py --data-dir CSTOP --output-dir out/cstop

The same as ``crop-hf build-dataset --name cstop ...``; ``--help`` lists the options.
"""

import sys

from crop_hf.cli import main

if __name__ == "__main__":
    sys.exit(main(["build-dataset", "--name", "cstop", *sys.argv[1:]]))
