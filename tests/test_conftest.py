"""The suite's own plumbing: real-data tests that cannot run are counted once in the summary; under
mutation testing a mutant's tests run fastest first, Hypothesis does not shrink and tiny models are
built once per run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tiny_models import session_model

TESTS = Path(__file__).parent


def run_suite(folder: Path, data: Path, *options: str, **environ: str) -> subprocess.CompletedProcess:
    """pytest over ``folder`` with this suite's conftest and the corpora expected at ``data``."""
    (folder / "conftest.py").write_text((TESTS / "conftest.py").read_text())
    env = {k: v for k, v in os.environ.items() if k != "MUTANT_UNDER_TEST"}
    env.update(CROP_HF_SHARED_DATA=str(data), **environ)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options, str(folder)],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=120)


ORDER_TESTS = """
import pytest
from hypothesis import given, settings, strategies as st, Phase

@pytest.mark.parametrize("name", ["slow", "fast", "unknown", "medium"])
def test_order(name):
    print("RAN", name)

def test_shrinking():
    print("SHRINK", Phase.shrink in settings().phases)
"""


def test_under_mutmut_tests_run_fastest_first_without_shrinking(tmp_path):
    (tmp_path / "test_order.py").write_text(ORDER_TESTS)
    durations = {f"test_order.py::test_order[{name}]": seconds
                 for name, seconds in (("slow", 9.0), ("fast", 0.1), ("medium", 2.0))}
    durations["test_order.py::test_shrinking"] = 5.0
    (tmp_path / "mutmut-stats.json").write_text(json.dumps({"duration_by_test": durations}))

    def ran(run):
        assert run.returncode == 0, run.stdout + run.stderr
        return re.findall(r"(?:RAN|SHRINK) (\w+)", run.stdout)

    mutating = ran(run_suite(tmp_path, tmp_path, "-s", MUTANT_UNDER_TEST="crop_hf.markers.x_find__mutmut_1"))
    assert mutating == ["fast", "medium", "False", "slow", "unknown"]  # unknown durations last
    plain = ran(run_suite(tmp_path, tmp_path, "-s"))
    assert plain == ["slow", "fast", "unknown", "medium", "True"]  # file order, Hypothesis' default phases


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


def test_under_mutmut_tiny_models_are_built_once_by_an_unmutated_phase(tmp_path, monkeypatch, tmp_path_factory):
    builds = []

    def build(folder):
        builds.append(folder)
        (folder / "weights").write_text(f"build {len(builds)}")
        return folder

    cache = tmp_path / "fixture-models" / "tiny"
    monkeypatch.chdir(tmp_path)
    # A mutant's process before any cache exists builds its own model and keeps none: it may be mutated.
    monkeypatch.setenv("MUTANT_UNDER_TEST", "crop_hf.markers.x_find__mutmut_1")
    assert session_model(tmp_path_factory, "tiny", build) == builds[0] and not cache.exists()
    monkeypatch.setenv("MUTANT_UNDER_TEST", "stats")  # unmutated code: its model is kept
    assert session_model(tmp_path_factory, "tiny", build) == builds[1]
    assert (cache / "weights").read_text() == "build 2" and sorted(p.name for p in cache.parent.iterdir()) == ["tiny"]
    for phase in ("crop_hf.labels.x_split_tag__mutmut_2", ""):
        monkeypatch.setenv("MUTANT_UNDER_TEST", phase)
        assert session_model(tmp_path_factory, "tiny", build) == cache and len(builds) == 2
    monkeypatch.delenv("MUTANT_UNDER_TEST")  # a plain test session builds in its own temporary folder
    assert session_model(tmp_path_factory, "tiny", build) == builds[2] != cache
