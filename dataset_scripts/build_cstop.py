"""Build CSTOP (Spanglish task-oriented semantic parsing) from its release; write parquet or push.

    python dataset_scripts/build_cstop.py --data-dir CSTOP --output-dir out/cstop
"""

import logging

from crop_hf.data.publish import main

if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    main("cstop", ["default"], pretty_name="CSTOP")
