"""What a ``crop-hf`` command shows while it runs: its log lines and progress bars.

Library code only logs (``logging.getLogger(__name__)``) and takes a ``show_progress`` switch;
the *commands* decide what reaches the terminal, through this module:

* :func:`setup_logging` — a handler on the root logger; under ``torchrun`` / ``accelerate
  launch`` only the main process (``RANK`` 0) logs below ERROR, so a line appears once, not
  once per process; an identical warning repeated (per batch, per shard) is said once.
* :func:`progress_bars` — with ``show_progress=False`` no bar at all: neither crop-hf's own nor
  those of ``transformers`` ("Loading weights"), ``datasets`` ("Generating", "Saving the
  dataset", "Map") or ``huggingface_hub`` (downloads). Other processes than the main one never
  show bars. A long run's command (``synthesize``, ``translate-align``) passes ``own_only=True``:
  its own per-language bar stays, but the ``datasets`` bars and info lines its merges would
  print are off.

Importing this module loads nothing heavy; ``transformers``/``datasets`` are switched only
when already imported or installed.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator

__all__ = ["OnceFilter", "is_main_process", "progress_bars", "setup_logging", "without_subword_heuristic_warning"]

LOG_FORMAT = "%(levelname)s %(name)s: %(message)s"


def is_main_process(environ: os._Environ | dict | None = None) -> bool:
    """Whether this is the main process of a ``torchrun`` / ``accelerate launch`` run (or not a launched run).

    >>> is_main_process({"RANK": "0"}), is_main_process({"RANK": "3"}), is_main_process({})
    (True, False, True)
    """
    environ = os.environ if environ is None else environ
    return int(environ.get("RANK", "0") or 0) == 0


class OnceFilter(logging.Filter):
    """Lets each distinct WARNING-or-lower message through once (errors always pass).

    >>> once = OnceFilter()
    >>> record = logging.LogRecord("x", logging.WARNING, "", 0, "slow tokenizer", None, None)
    >>> once.filter(record), once.filter(record)
    (True, False)
    """

    def __init__(self) -> None:
        super().__init__()
        self._seen: set[tuple[str, int, str]] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR or record.levelno < logging.WARNING:
            return True
        key = (record.name, record.levelno, record.getMessage())
        if key in self._seen:
            return False
        self._seen.add(key)
        return True


class _MainProcessOnly(logging.Filter):
    """On other processes than the main one, only errors pass."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.ERROR or is_main_process()


def setup_logging(level: int = logging.INFO, fmt: str = LOG_FORMAT) -> None:
    """Log to stderr at ``level`` from the main process only, each repeated warning once (commands call this)."""
    root = logging.getLogger()
    if not root.handlers:  # handlers someone else set up (an application, pytest) are left as they are
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter(fmt))
        handler.addFilter(OnceFilter())
        handler.addFilter(_MainProcessOnly())
        root.addHandler(handler)
    root.setLevel(level)
    for noisy in ("httpx", "urllib3", "filelock", "fsspec"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    if not is_main_process():  # transformers and datasets log through their own handlers
        for name in ("transformers", "datasets", "accelerate"):
            logging.getLogger(name).setLevel(logging.ERROR)


@contextlib.contextmanager
def without_subword_heuristic_warning() -> Iterator[None]:
    """Inside: transformers' "Tokenizer does not support real words" ``UserWarning`` is not shown.

    The ``token-classification`` pipeline says it on every call whose tokenizer is not a
    BPE with a continuing-subword prefix: every SentencePiece tagger, XLM-R's included. The
    heuristic it names (a piece that does not follow a space continues a word) is exact for the
    space-joined words crop-hf tags, so there is nothing a user could do about it. Only that
    message from that module is filtered; every other warning passes.
    """
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Tokenizer does not support real words", category=UserWarning,
                                module=r"transformers\.pipelines\.token_classification")
        yield


@contextlib.contextmanager
def progress_bars(show: bool = True, *, own_only: bool = False) -> Iterator[None]:
    """Inside: every library's progress bars off unless ``show`` (and this is the main process); restored after.

    ``own_only``: even when shown, ``datasets``' bars ("Generating", "Saving the dataset") are off
    and its verbosity is ERROR, so a long run's output is its own bar and its lines only.
    """
    with _datasets_quiet() if own_only else contextlib.nullcontext():
        if show and is_main_process():
            yield
            return
        with _every_bar_off():
            yield


@contextlib.contextmanager
def _datasets_quiet() -> Iterator[None]:
    try:
        import datasets
        from datasets.utils import logging as datasets_logging
    except ImportError:
        yield
        return
    was_disabled = datasets.are_progress_bars_disabled()
    verbosity = datasets_logging.get_verbosity()
    datasets.disable_progress_bars()
    datasets_logging.set_verbosity_error()
    try:
        yield
    finally:
        datasets_logging.set_verbosity(verbosity)
        if not was_disabled:
            datasets.enable_progress_bars()


@contextlib.contextmanager
def _every_bar_off() -> Iterator[None]:
    switches = []
    with contextlib.suppress(ImportError):
        from transformers.utils import logging as transformers_logging

        switches.append((transformers_logging.is_progress_bar_enabled(), transformers_logging.disable_progress_bar,
                         transformers_logging.enable_progress_bar))
    with contextlib.suppress(ImportError):
        import datasets

        switches.append((not datasets.are_progress_bars_disabled(), datasets.disable_progress_bars,
                         datasets.enable_progress_bars))
    with contextlib.suppress(ImportError):
        from huggingface_hub.utils import (
            are_progress_bars_disabled,
            disable_progress_bars,
            enable_progress_bars,
        )

        switches.append((not are_progress_bars_disabled(), disable_progress_bars, enable_progress_bars))
    for _, disable, _ in switches:
        disable()
    try:
        yield
    finally:
        for was_enabled, _, enable in switches:
            if was_enabled:
                enable()
