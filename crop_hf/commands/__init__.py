"""Subcommands of the ``crop-hf`` command; see :mod:`crop_hf.cli`."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from crop_hf.console import progress_bars, setup_logging


def run_corpus_job(run: Callable[[Any], Any], config: Any) -> Any:
    """Run a corpus job's entry point (``synthesize``, ``translate_align``, ...) as a command does: its log
    lines on, only its own bars, and the result's report printed by the main process; the result."""
    setup_logging(logging.INFO)
    with progress_bars(config.show_progress, own_only=True):
        result = run(config)
    if result.statistics:  # the main process
        print(result.report())
    return result
