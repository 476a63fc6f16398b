"""The suite's own plumbing: real-data tests that cannot run are counted once in the summary."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).parent


def run_suite(folder: Path, data: Path) -> subprocess.CompletedProcess:
    """pytest over ``folder`` with this suite's conftest and the corpora expected at ``data``."""
    (folder / "conftest.py").write_text((TESTS / "conftest.py").read_text())
    env = {**os.environ, "CROP_HF_SHARED_DATA": str(data)}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(folder)],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=120)


def test_summary_counts_real_data_tests_skipped_without_the_corpora(tmp_path):
    (tmp_path / "test_uses_corpora.py").write_text(
        "def test_a(shared_data):\n    assert False\n\n"
        "def test_b(shared_data):\n    assert False\n\n"
        "def test_no_data():\n    assert True\n")
    run = run_suite(tmp_path, tmp_path / "absent")
    assert run.returncode == 0, run.stdout + run.stderr
    lines = [line for line in run.stdout.splitlines() if "real-data tests did not run" in line]
    assert lines == [f"2 real-data tests did not run: real corpora not found at {tmp_path / 'absent'} "
                     "(put the corpora there or set CROP_HF_SHARED_DATA)"]
    assert "1 passed, 2 skipped" in run.stdout


def test_no_summary_line_when_the_corpora_are_there(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "test_uses_corpora.py").write_text("def test_a(shared_data):\n    assert shared_data.is_dir()\n")
    run = run_suite(tmp_path, tmp_path / "data")
    assert run.returncode == 0 and "1 passed" in run.stdout
    assert "real-data tests did not run" not in run.stdout
