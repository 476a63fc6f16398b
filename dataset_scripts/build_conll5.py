"""Build CoNLL-5 (CoNLL-2002/2003 en de es nl, Norwegian) from the original releases; write parquet or push.

    python dataset_scripts/build_conll5.py --configs es nl --data-dir conll2002 --output-dir out/conll5
    python dataset_scripts/build_conll5.py --configs en es nl no --push-to-hub my-org/conll5

German (``de``) is licensed and needs ``--data-dir`` with ``deu.train``, ``deu.testa``, ``deu.testb``.
"""

import logging

from crop_hf.data.publish import main


def _norwegian_source(parser):
    parser.add_argument("--source", choices=["nodalida", "norne"],
                        help="Norwegian release for the `no` config (default: nodalida)")


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    main("conll5", ["en", "de", "es", "nl", "no"], pretty_name="CoNLL-5 NER", add_arguments=_norwegian_source)
