"""Write the demo app's screenshots for the docs: ``docs/images/app-{tab}.png``, one per tab.

    python scripts/app_screenshots.py [FOLDER]

Runs the browser test (``tests/test_app_browser.py``: the app on tiny offline models, headless
Chromium) with ``CROP_HF_SCREENSHOTS`` set, so each picture shows a tab after the test filled and
submitted it. Needs what that test needs: gradio, selenium, Debian's chromium and chromedriver.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> int:
    folder = Path(argv[0]) if argv else REPO_ROOT / "docs" / "images"
    env = {**os.environ, "CROP_HF_SCREENSHOTS": str(folder.resolve()), "HF_HUB_OFFLINE": "1",
           "GRADIO_ANALYTICS_ENABLED": "False"}
    test = REPO_ROOT / "tests" / "test_app_browser.py"
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", str(test)], env=env, cwd=REPO_ROOT)
    written = sorted(folder.glob("app-*.png"))
    print("\n".join(str(path) for path in written) or "no screenshot written", file=sys.stderr)
    return result.returncode or (0 if len(written) == 3 else 1)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
