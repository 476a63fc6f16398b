"""What every crop-hf training loop shares: the AdamW parameter groups, and checkpoints to resume from.

The NER, parser and translation loops (:mod:`crop_hf.training`, :mod:`crop_hf.parsing`,
:mod:`crop_hf.translation.training`) each save ``accelerator.save_state`` folders named
``step_N``/``epoch_N`` with a :data:`STATE_FILE` written last, so that a folder holding it is a
whole checkpoint; :func:`find_checkpoint` finds one (``"latest"``: the one with the most steps).
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["STATE_FILE", "adamw", "checkpoint_step", "find_checkpoint"]

#: Written last into a checkpoint folder: where the loop was (steps, epoch, batches into the epoch).
STATE_FILE = "crop_hf_state.json"

_NO_DECAY = ("bias", "LayerNorm.weight", "layer_norm.weight", "norm.weight")


def adamw(model, learning_rate: float, weight_decay: float):
    """AdamW without weight decay on biases and normalization weights (the usual BERT recipe)."""
    import torch

    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    return torch.optim.AdamW([
        {"params": [p for n, p in named if not n.endswith(_NO_DECAY)], "weight_decay": weight_decay},
        {"params": [p for n, p in named if n.endswith(_NO_DECAY)], "weight_decay": 0.0},
    ], lr=learning_rate)


def checkpoint_step(path: Path) -> int:
    """The optimizer steps a checkpoint folder had completed."""
    return int(json.loads((Path(path) / STATE_FILE).read_text())["completed_steps"])


def find_checkpoint(output_dir: str | Path, value: str) -> Path:
    """The checkpoint folder ``value`` names, or with ``"latest"`` the one in ``output_dir`` with the most steps."""
    if value != "latest":
        path = Path(value)
        if not (path / STATE_FILE).exists():
            raise FileNotFoundError(f"{path} is not a crop-hf training checkpoint (no {STATE_FILE})")
        return path
    candidates = [p for p in Path(output_dir).glob("*_*") if (p / STATE_FILE).exists()]
    if not candidates:
        raise FileNotFoundError(f"resume_from_checkpoint='latest' but {output_dir} holds no checkpoint")
    return max(candidates, key=checkpoint_step)
