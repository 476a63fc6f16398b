"""How many processes run a long job, and which is this one: the helpers corpus jobs and training share.

A corpus job (:func:`crop_hf.engine.jobs.run_job`) and a training loop
(:mod:`crop_hf.engine.training`) both run under ``torchrun`` or ``accelerate launch``; both ask
:func:`process_state` who they are, and both warn alike when a launch meant for several processes
finds itself alone (:func:`running_alone`), a trap of ``accelerate launch`` on the CPU.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

__all__ = ["describe_processes", "process_state", "running_alone"]


def process_state() -> Any:
    """This process's Accelerate ``PartialState`` (index, count, device, barriers), honouring ``ACCELERATE_USE_CPU``."""
    from accelerate import PartialState
    from accelerate.utils import parse_flag_from_env

    # Unlike Accelerator, PartialState does not read ACCELERATE_USE_CPU itself; without it, CPU
    # processes started by torchrun would each believe they are alone.
    return PartialState(cpu=parse_flag_from_env("ACCELERATE_USE_CPU"))


def _meant_processes(environ: Mapping[str, str]) -> str | None:
    """How many processes the launcher meant to start, when more than one ("several" when it does not say).

    ``torchrun`` sets ``WORLD_SIZE``; ``accelerate launch --num_processes N`` with its simple
    launcher (the CPU, or no ``accelerate config``) sets only ``MASTER_ADDR``/``MASTER_PORT``,
    and only when N > 1, then starts one process. ``None``: not launched for several.

    >>> _meant_processes({"WORLD_SIZE": "4"}), _meant_processes({"WORLD_SIZE": "1"})
    ('4', None)
    >>> _meant_processes({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}), _meant_processes({"MASTER_PORT": "1"})
    ('several', None)
    """
    if environ.get("WORLD_SIZE"):
        return environ["WORLD_SIZE"] if int(environ["WORLD_SIZE"]) > 1 else None
    if environ.get("MASTER_ADDR") and environ.get("MASTER_PORT"):
        return "several"
    return None


def running_alone(job: str, count: int, environ: Mapping[str, str] | None = None) -> str | None:
    """The warning for a process launched for several that finds itself alone (``count`` 1), or ``None``.

    ``accelerate launch`` starts a single process on the CPU, whatever ``--num_processes`` says:
    the line names the commands that start several (training and corpus runs log it alike).

    >>> running_alone("train-ner", 1, {"WORLD_SIZE": "2"})[:57]
    'train-ner: launched for 2 processes but running alone (1 '
    >>> running_alone("train-ner", 2, {"WORLD_SIZE": "2"}) is None
    True
    """
    meant = _meant_processes(os.environ if environ is None else environ) if count == 1 else None
    if meant is None:
        return None
    return (f"{job}: launched for {meant} processes but running alone (1 process): `accelerate launch` "
            "starts a single process on the CPU, and on GPUs without `accelerate config`; for N CPU "
            "processes use `ACCELERATE_USE_CPU=1 torchrun --standalone --nproc_per_node N -m crop_hf.cli "
            "...`, for N GPUs `accelerate launch --multi_gpu --num_processes N -m crop_hf.cli ...`")


def describe_processes(state: Any, job: str, *, per: str = "",
                       environ: Mapping[str, str] | None = None) -> tuple[int, str]:
    """``(logging level, line)`` a long job logs at start: how many processes run it and which shards each takes.

    ``state`` has ``num_processes``; ``per`` names what each key is (``" of each language"``). A
    process launched for several that finds itself alone gets a WARNING naming commands that work.

    >>> from types import SimpleNamespace
    >>> describe_processes(SimpleNamespace(num_processes=2), "synthesize", per=" of each language", environ={})[1]
    'synthesize: 2 processes; shard k of each language goes to process k mod 2 (process 0: shards 0, 2, 4, ...; process 1: shards 1, 3, 5, ...)'
    >>> describe_processes(SimpleNamespace(num_processes=1), "synthesize", environ={})
    (20, 'synthesize: 1 process, taking every shard')
    >>> describe_processes(SimpleNamespace(num_processes=1), "synthesize", environ={"WORLD_SIZE": "4"})[1][:60]
    'synthesize: launched for 4 processes but running alone (1 pr'
    """
    count = state.num_processes
    alone = running_alone(job, count, environ)
    if alone is not None:
        return logging.WARNING, alone
    if count == 1:
        return logging.INFO, f"{job}: 1 process, taking every shard"
    shown = min(count, 4)
    each = "; ".join(f"process {k}: shards {', '.join(str(k + i * count) for i in range(3))}, ..."
                     for k in range(shown))
    rest = f"; ... process {count - 1}" if count > shown else ""
    return logging.INFO, f"{job}: {count} processes; shard k{per} goes to process k mod {count} ({each}{rest})"
