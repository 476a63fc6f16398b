"""The AdamW parameter groups and the checkpoints of the training engine (:mod:`crop_hf.engine.training`).

Every trainer (NER, parser, marker MT, the generate-and-filter generator) runs the engine's loop,
which saves ``accelerator.save_state`` folders named ``step_N``/``epoch_N`` with a
:data:`STATE_FILE` written last (``completed_steps``, ``epoch``, ``batches_in_epoch``), so that a
folder holding it is a whole checkpoint; :func:`find_checkpoint` finds one (``"latest"``: the one
with the most steps) and :func:`resume_position` says where the loop continues.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

__all__ = ["STATE_FILE", "adamw", "apply_gradients", "checkpoint_step", "find_checkpoint", "resume_position",
           "save_checkpoint"]

logger = logging.getLogger(__name__)

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
            raise FileNotFoundError(f"--resume_from_checkpoint {path}: not a crop-hf training checkpoint "
                                    f"(no {STATE_FILE})")
        return path
    candidates = [p for p in Path(output_dir).glob("*_*") if (p / STATE_FILE).exists()]
    if not candidates:
        raise FileNotFoundError(f"--resume_from_checkpoint latest: {output_dir} holds no checkpoint")
    return max(candidates, key=checkpoint_step)


def resume_position(accelerator, output_dir: str | Path, value: str | None, batches_per_epoch: int
                    ) -> tuple[int, int, int]:
    """Load the checkpoint ``value`` names into ``accelerator`` (nothing without one).

    Returns ``(completed_steps, start_epoch, batches_to_skip)``: where the loop continues, so that
    a resumed run sees exactly the batches, dropout masks and schedule of an uninterrupted one.
    """
    if not value:
        return 0, 0, 0
    checkpoint = find_checkpoint(output_dir, value)
    accelerator.load_state(str(checkpoint))
    state = json.loads((checkpoint / STATE_FILE).read_text())
    completed_steps, start_epoch, skip = state["completed_steps"], state["epoch"], state["batches_in_epoch"]
    if skip >= batches_per_epoch:
        start_epoch, skip = start_epoch + 1, 0
    logger.info("resuming from %s at step %d (epoch %d, batch %d)", checkpoint, completed_steps, start_epoch, skip)
    return completed_steps, start_epoch, skip


def save_checkpoint(accelerator, path: str | Path, *, completed_steps: int, epoch: int, batches_in_epoch: int) -> None:
    """``accelerator.save_state`` into ``path``, then the :data:`STATE_FILE` (last: it marks a whole checkpoint)."""
    path = Path(path)
    accelerator.save_state(str(path))
    if accelerator.is_main_process:
        state = {"completed_steps": completed_steps, "epoch": epoch, "batches_in_epoch": batches_in_epoch}
        temporary = path / (STATE_FILE + ".tmp")
        temporary.write_text(json.dumps(state) + "\n")
        temporary.replace(path / STATE_FILE)
    accelerator.wait_for_everyone()


def apply_gradients(accelerator, model, loss, optimizer, scheduler, max_grad_norm: float | None) -> None:
    """Inside ``accelerator.accumulate(model)``: backward, clip on synchronising steps, step, schedule, zero."""
    accelerator.backward(loss)
    if accelerator.sync_gradients and max_grad_norm:
        accelerator.clip_grad_norm_(model.parameters(), max_grad_norm)
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad()
