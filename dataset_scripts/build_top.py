"""Build TOP (v1) or TOPv2 from the release, optionally only some domains; write parquet or push.

    python dataset_scripts/build_top.py --configs v2 --domains weather --data-dir TOPv2_Dataset --output-dir out/top
"""

import logging

from crop_hf.data.publish import main


def _domains(parser):
    parser.add_argument("--domains", nargs="+", help="keep only these domains (e.g. weather)")


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    main("top", ["v1", "v2"], pretty_name="TOP", add_arguments=_domains)
