"""README's runnable examples print what their comments say.

Blocks that need the Hub or the user's own data folders are skipped; the rest run offline.
Each ``print(...)  # expected`` line is checked against the line it printed.
"""

import contextlib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
NEEDS_NETWORK_OR_DATA = ("facebook/", "google-bert/", "FacebookAI/", "data_dir=", "from_pretrained(")
BLOCKS = [block for block in re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
          if "print(" in block and not any(marker in block for marker in NEEDS_NETWORK_OR_DATA)]


def test_readme_has_offline_examples_to_run():
    assert BLOCKS


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_example_prints_what_it_claims(block, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    expected = [line.split("#", 1)[1].strip() for line in block.splitlines()
                if line.startswith("print(") and "#" in line]
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(block, str(README), "exec"), {"__name__": "readme"})
    printed = [line for line in output.getvalue().splitlines() if line.strip()]
    assert printed[-len(expected):] == expected
