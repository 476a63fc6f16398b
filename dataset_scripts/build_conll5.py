"""Build CoNLL-5 (CoNLL-2002/2003 en de es nl, Norwegian) from the original releases; write parquet or push.

    python dataset_scripts/build_conll5.py --configs es nl --data-dir conll2002 --output-dir out/conll5
    python dataset_scripts/build_conll5.py --configs en es nl no --push-to-hub my-org/conll5
    python dataset_scripts/build_conll5.py --configs no --options source=norne --data-dir norne --output-dir out/no

German (``de``) is licensed and needs ``--data-dir`` with ``deu.train``, ``deu.testa``, ``deu.testb``.

The same as ``crop-hf build-dataset --name conll5 ...``; ``--help`` lists the options.
"""

import sys

from crop_hf.cli import main

if __name__ == "__main__":
    sys.exit(main(["build-dataset", "--name", "conll5", *sys.argv[1:]]))
