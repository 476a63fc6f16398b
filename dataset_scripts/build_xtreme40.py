"""Build XTREME-40 (PAN-X / WikiANN, 40 languages) from the PAN-X archive; write parquet or push.

    python dataset_scripts/build_xtreme40.py --configs de en nl --data-dir wikiann --output-dir out/xtreme40
"""

import logging

from crop_hf.data.publish import main
from crop_hf.data.xtreme40 import XTREME40_LANGUAGES

if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    main("xtreme40", [*XTREME40_LANGUAGES, "all"], pretty_name="XTREME-40 PAN-X NER")
