"""Behaviours of the engine and the demo app that no test pinned (issue 48, point 6).

How many optimizer steps an epoch is when gradient accumulation does not divide it, that a shard
killed between its rows and its statistics is redone, that a failed atomic write re-raises and
leaves nothing behind, and that the app's alignment picture boxes every word of every entity.
"""

from __future__ import annotations

import errno
import os
import xml.etree.ElementTree as ET

import datasets
import pytest
from synthesis_fakes import FakeState, ListConfig, ListJob, numbered
from test_engine import run_toy, toy_args
from training_fixtures import fresh_accelerate_state  # noqa: F401  (pytest fixture)

from crop_hf.app import project_labels, render
from crop_hf.engine import processes, shards
from crop_hf.engine import training as engine
from crop_hf.engine.jobs import run_job
from crop_hf.engine.shards import atomic_write_bytes, merge_shards

# --------------------------------------------------------------------------- steps per epoch


@pytest.mark.parametrize("epochs", [1, 2])
def test_an_epoch_that_accumulation_does_not_divide_ends_with_a_short_step(tmp_path, monkeypatch, epochs):
    # toy_rows: 24 rows, 4 a batch = 6 batches; accumulating 4 makes steps of 4 and 2 batches
    updates = []
    real_adamw = engine.adamw

    def counted(model, *args):  # the loop's optimizer, counting the updates it really makes
        optimizer = real_adamw(model, *args)
        optimizer.register_step_post_hook(lambda *_: updates.append("step"))
        return optimizer

    monkeypatch.setattr(engine, "adamw", counted)
    run = run_toy(toy_args(tmp_path, max_train_steps=None, num_train_epochs=epochs, gradient_accumulation_steps=4))
    assert len(updates) == run.max_steps == run.completed_steps == len(run.step_losses) == 2 * epochs


# --------------------------------------------------------------------------- shards


class Killed(Exception):
    """The process died (simulated) before the next file of a shard landed."""


def test_a_shard_killed_between_its_rows_and_its_statistics_is_not_done_and_is_redone(tmp_path, monkeypatch):
    monkeypatch.setattr(processes, "process_state", lambda: FakeState(0, 1))
    store = ListJob(ListConfig(output_dir=str(tmp_path)), {}).store
    folder = store.root / "xx"
    real_write = shards.atomic_write_bytes
    landed = []

    def dies_after_three_files(path, data):
        # shard 0's two files land, then shard 1's first; the run dies before its second
        if path.parent == folder:
            if len(landed) == 3:
                raise Killed(path.name)
            landed.append(path.name)
        real_write(path, data)

    monkeypatch.setattr(shards, "atomic_write_bytes", dies_after_three_files)
    with pytest.raises(Killed):
        run_job(ListJob(ListConfig(output_dir=str(tmp_path)), {"xx": numbered(6, 2)}))
    assert store.is_done("xx", 0) and not store.is_done("xx", 1)
    assert [index for index, _, _ in store.finished("xx")] == [0]
    assert landed == ["00000.parquet", "00000.json", "00001.parquet"]  # rows first, the done mark last

    monkeypatch.setattr(shards, "atomic_write_bytes", real_write)
    again = ListJob(ListConfig(output_dir=str(tmp_path)), {"xx": numbered(6, 2)})
    assert run_job(again).skipped_shards == {"xx": 1}
    assert again.processed == [("xx", 1), ("xx", 2)]  # the half-written shard is redone, the finished one skipped
    finished = list(store.finished("xx"))
    text = datasets.Features({"text": datasets.Value("string")})
    assert merge_shards(finished, True, text)["text"] == ["s0", "s2", "s4"]
    assert merge_shards(finished, False, text)["text"] == ["s1", "s3", "s5"]
    assert sorted(path.name for path in folder.iterdir()) == [f"0000{k}.{suffix}" for k in range(3)
                                                              for suffix in ("json", "parquet")]


# --------------------------------------------------------------------------- atomic writes


@pytest.mark.parametrize("old", [b"old content", None], ids=["replacing_a_file", "new_file"])
@pytest.mark.parametrize("failing", ["fsync", "replace"])
def test_a_failed_atomic_write_re_raises_keeps_the_target_and_leaves_no_temporary_file(
        tmp_path, monkeypatch, failing, old):
    target = tmp_path / "stats.json"
    if old is not None:
        target.write_bytes(old)
    error = OSError(errno.ENOSPC, "No space left on device")

    def fails(*args):
        raise error

    # after the temporary file is created and written: the step that needs cleaning up after
    monkeypatch.setattr(os, failing, fails)
    with pytest.raises(OSError) as raised:
        atomic_write_bytes(target, b"new content")
    monkeypatch.undo()
    assert raised.value is error
    assert [path.name for path in tmp_path.iterdir()] == ([target.name] if old is not None else [])
    if old is not None:
        assert target.read_bytes() == old


# --------------------------------------------------------------------------- the app's alignment picture

SVG = "{http://www.w3.org/2000/svg}"


def boxed_words(svg_html: str) -> dict[tuple[str, int], str]:
    """``{(row, word index): box colour}`` of every word a rect lies under, rows ``source`` (top) and ``target``."""
    svg = ET.fromstring(svg_html[svg_html.index("<svg"):svg_html.index("</svg>") + len("</svg>")])
    texts = svg.findall(f"{SVG}text")
    rows = sorted({float(text.get("y")) for text in texts})
    assert len(rows) == 2
    rects = [(float(r.get("x")), float(r.get("y")), float(r.get("width")), float(r.get("height")), r.get("fill"))
             for r in svg.findall(f"{SVG}rect")]
    boxes: dict[tuple[str, int], str] = {}
    covered = set()
    for row, y in zip(("source", "target"), rows, strict=True):
        words = [text for text in texts if float(text.get("y")) == y]
        for index, word in enumerate(words):
            x = float(word.get("x"))
            half = len(word.text) * 8.0 / 2  # the word's width at 8 px a character, centred on x
            under = [rect for rect in rects if rect[0] <= x - half and x + half <= rect[0] + rect[2]
                     and rect[1] <= y <= rect[1] + rect[3]]
            assert len(under) <= 1, (row, word.text)
            if under:
                boxes[row, index] = under[0][4]
                covered.add(under[0])
    assert covered == set(rects)  # no box around nothing
    return boxes


def test_the_alignment_picture_boxes_every_word_of_every_entity_on_both_sides():
    view = project_labels(None, "Angela Merkel visited New York on Monday .", "B-PER I-PER O B-LOC I-LOC O O O",
                          "Am Montag besuchte Angela Merkel New York .", "alignment", "de",
                          alignment="0-3 1-4 2-2 3-5 4-6 5-0 6-1 7-7")
    assert view.result["tags"] == ["O", "O", "O", "B-PER", "I-PER", "B-LOC", "I-LOC", "O"]
    per, loc = render.color("PER"), render.color("LOC")
    assert per != loc
    assert boxed_words(render.links_svg(view)) == {
        ("source", 0): per, ("source", 1): per, ("source", 3): loc, ("source", 4): loc,
        ("target", 3): per, ("target", 4): per, ("target", 5): loc, ("target", 6): loc}


@pytest.mark.parametrize(("environ", "warned"), [
    ({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}, True),  # accelerate launch --cpu --num_processes 2
    ({}, False),
])
def test_training_launched_for_several_processes_that_runs_alone_says_so(tmp_path, monkeypatch, caplog, environ,
                                                                         warned):
    for name in ("WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    with caplog.at_level("WARNING", logger="crop_hf.engine.training"):
        run_toy(toy_args(tmp_path, max_train_steps=1))
    lines = [r.getMessage() for r in caplog.records if r.name == "crop_hf.engine.training" and r.levelname == "WARNING"]
    assert lines == ([processes.running_alone("training", 1, environ)] if warned else [])
    if warned:
        assert lines[0].startswith("training: launched for several processes but running alone (1 process)")
