"""What a command shows: logs from the main process only, a repeated warning once, no bars when asked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import logging
from crop_hf.console import setup_logging
setup_logging(logging.INFO)
log = logging.getLogger("crop_hf.synthesis.stages")
log.info("shard 0 done")
for _ in range(3):
    log.warning("a pipeline warning said per batch")
log.warning("another warning")
log.error("a failure")
log.error("a failure")
"""


def run_as_rank(rank: str | None) -> list[str]:
    import os

    env = {key: value for key, value in os.environ.items() if key not in {"RANK", "LOCAL_RANK", "WORLD_SIZE"}}
    env["PYTHONPATH"] = str(REPO_ROOT)
    if rank is not None:  # what torchrun and accelerate launch set in each process
        env.update(RANK=rank, LOCAL_RANK=rank, WORLD_SIZE="2")
    result = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True)
    return result.stderr.splitlines()


@pytest.mark.parametrize("rank", [None, "0"])
def test_the_main_process_logs_and_says_a_repeated_warning_once(rank):
    assert run_as_rank(rank) == [
        "INFO crop_hf.synthesis.stages: shard 0 done",
        "WARNING crop_hf.synthesis.stages: a pipeline warning said per batch",
        "WARNING crop_hf.synthesis.stages: another warning",
        "ERROR crop_hf.synthesis.stages: a failure",
        "ERROR crop_hf.synthesis.stages: a failure",  # errors are never folded
    ]


def test_other_processes_log_errors_only():
    assert run_as_rank("1") == ["ERROR crop_hf.synthesis.stages: a failure"] * 2


def test_importing_the_library_configures_no_logging():
    code = "import logging, crop_hf, crop_hf.console; print(len(logging.getLogger().handlers))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            env={"PYTHONPATH": str(REPO_ROOT), "PATH": ""})
    assert result.stdout.strip() == "0"


def test_progress_bars_off_switches_every_library_and_restores_them():
    import datasets
    from huggingface_hub.utils import are_progress_bars_disabled
    from transformers.utils import logging as transformers_logging

    from crop_hf.console import progress_bars

    assert transformers_logging.is_progress_bar_enabled() and not datasets.are_progress_bars_disabled()
    with progress_bars(False):
        assert not transformers_logging.is_progress_bar_enabled()
        assert datasets.are_progress_bars_disabled() and are_progress_bars_disabled()
    assert transformers_logging.is_progress_bar_enabled() and not datasets.are_progress_bars_disabled()
    assert not are_progress_bars_disabled()
    with progress_bars(True):
        assert transformers_logging.is_progress_bar_enabled()


#: Calls that set up what a command shows; only crop_hf/console.py makes them, for the commands.
_SWITCHES = {"basicConfig", "disable_progress_bars", "enable_progress_bars", "disable_progress_bar",
             "enable_progress_bar", "set_verbosity", "set_verbosity_error", "set_verbosity_warning"}


def _calls(path):
    import ast

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            function = node.func
            name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
            yield name, node.lineno


def test_only_console_configures_logging_and_bars_and_only_commands_call_it():
    package = REPO_ROOT / "crop_hf"
    offenders = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package).as_posix()
        for name, line in _calls(path):
            if name in _SWITCHES and relative != "console.py":
                offenders.append(f"{relative}:{line} calls {name}")
            commands_only = relative.startswith("commands/") or relative in ("cli.py", "console.py")
            if name in ("setup_logging", "progress_bars") and not commands_only:
                offenders.append(f"{relative}:{line} calls console.{name} (library code only logs)")
    assert not offenders, offenders


def test_a_long_runs_own_bars_only_silences_datasets_and_restores_it():
    import datasets
    from datasets.utils import logging as datasets_logging
    from transformers.utils import logging as transformers_logging

    from crop_hf.console import progress_bars

    verbosity = datasets_logging.get_verbosity()
    assert verbosity != datasets_logging.ERROR and not datasets.are_progress_bars_disabled()
    with progress_bars(True, own_only=True):
        assert datasets.are_progress_bars_disabled() and datasets_logging.get_verbosity() == datasets_logging.ERROR
        assert transformers_logging.is_progress_bar_enabled()  # shown: only datasets' bars are off
    assert not datasets.are_progress_bars_disabled() and datasets_logging.get_verbosity() == verbosity
    with progress_bars(False, own_only=True):
        assert datasets.are_progress_bars_disabled() and not transformers_logging.is_progress_bar_enabled()
    assert not datasets.are_progress_bars_disabled() and transformers_logging.is_progress_bar_enabled()
    with progress_bars(True):
        assert not datasets.are_progress_bars_disabled() and datasets_logging.get_verbosity() == verbosity

