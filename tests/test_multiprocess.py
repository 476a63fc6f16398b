"""A real two-process run (``torch.distributed.run``, gloo on the CPU) of ``crop-hf synthesize`` and a
capped ``crop-hf translate-align`` gives the datasets one process gives, row for row, and prints
each log line once.

The commands run with stand-in models (``tests/multiprocess_run.py``); what is under test is
the sharing: shard ``k`` to process ``k % 2``, the barriers, the main process's merge, and that
only the main process logs and prints.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import datasets
import pytest

SCRIPT = Path(__file__).with_name("multiprocess_run.py")
REPO_ROOT = Path(__file__).resolve().parents[1]

RAW = {
    "de": ["Ich wohne in Hamburg .", "Siemens AG sitzt in München .", "das ist alles klein .",
           "Das broken Beispiel mit Maria und Hamburg .", "Anna trifft Peter in Hamburg .",
           "Der Hafen von Hamburg liegt an der Elbe ."],
    "nl": ["Ik woon in Hamburg .", "niets hier .", "Jan werkt bij Philips AG ."],
}
PARSES = [
    "set an alarm\t[IN:CREATE_ALARM set an alarm [SL:DATE_TIME for 7 am ] ]",  # slot not in the utterance: lost
    "call mom\t[IN:CREATE_CALL call [SL:CONTACT mom ]",  # unbalanced: dropped
    "play music\t[IN:PLAY_MUSIC play [SL:MUSIC_TYPE music ] ]",
    "call mom at home\t[IN:CREATE_CALL call [SL:CONTACT mom ] at [SL:LOCATION home ] ]",
    "just text, no parse",  # dropped
    "play music by adele\t[IN:PLAY_MUSIC play music by [SL:MUSIC_ARTIST_NAME adele ] ]",
    "set an alarm for 7 am\t[IN:CREATE_ALARM set an alarm [SL:DATE_TIME for 7 am ] ]",
    "call dad\t[IN:CREATE_CALL call [SL:CONTACT dad ] ]",  # beyond max_examples=7: never read
    "play adele\t[IN:PLAY_MUSIC play [SL:MUSIC_ARTIST_NAME adele ] ]",
]
LOG_LINE = re.compile(r"^(DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w.]+: ")
SHARD_LINE = re.compile(r"^INFO [\w.]+: (?:(\w+) )?shard (\d+): \d+ of \d+ kept$")


def _launcher_missing() -> str | None:
    try:
        import torch.distributed as dist
    except ImportError:
        return "torch.distributed cannot be imported: no launcher for a two-process run"
    if not dist.is_available() or not dist.is_gloo_available():
        return "this torch build has no torch.distributed gloo backend: two CPU processes cannot be launched"
    return None


def _run(command: list[str], output: Path, inputs: tuple[Path, Path]) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "ACCELERATE_USE_CPU": "1"}
    done = subprocess.run([*command, str(SCRIPT), str(inputs[0]), str(inputs[1]), str(output)], env=environment,
                          capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def _log_lines(done: subprocess.CompletedProcess, output: Path) -> list[str]:
    text = (done.stdout + done.stderr).replace(str(output), "OUT")
    return [line for line in text.splitlines() if LOG_LINE.match(line)]


def _rows(folder: Path) -> dict[str, list[dict]]:
    loaded = datasets.load_from_disk(str(folder))
    return {split: loaded[split].to_list() for split in loaded}


def _shard_owners(run: Path) -> set[int]:
    return {json.loads(path.read_text())["process_index"] for path in run.glob("shards/*/*/*.json")}


def test_two_processes_give_the_datasets_of_one_and_log_each_line_once(tmp_path):
    missing = _launcher_missing()
    if missing:
        pytest.skip(missing)
    raw = tmp_path / "raw"
    raw.mkdir()
    for lang, lines in RAW.items():
        (raw / f"{lang}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    parses = tmp_path / "en.tsv"
    parses.write_text("\n".join(PARSES) + "\n", encoding="utf-8")
    inputs = (raw / "{lang}.txt", parses)

    one = _run([sys.executable], tmp_path / "one", inputs)
    two = _run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"],
               tmp_path / "two", inputs)

    for run in ("synthesis", "translate_align"):
        for folder in ("dataset", "discarded"):
            assert _rows(tmp_path / "two" / run / folder) == _rows(tmp_path / "one" / run / folder), (run, folder)
        statistics = json.loads((tmp_path / "two" / run / "statistics.json").read_text())
        assert statistics == json.loads((tmp_path / "one" / run / "statistics.json").read_text())
        assert _shard_owners(tmp_path / "two" / run) == {0, 1}  # both processes did shards
        assert _shard_owners(tmp_path / "one" / run) == {0}
    synthesis = json.loads((tmp_path / "one" / "synthesis" / "statistics.json").read_text())
    assert {lang: (counts["input"], counts["kept"]) for lang, counts in synthesis.items()} == {"de": (6, 4),
                                                                                                 "nl": (3, 2)}
    aligned = json.loads((tmp_path / "one" / "translate_align" / "statistics.json").read_text())
    assert (aligned["input"], aligned["kept"], aligned["invalid_source"], aligned["slots_lost"]) == (7, 4, 2, 1)

    single = _log_lines(one, tmp_path / "one")
    double = _log_lines(two, tmp_path / "two")
    assert single and max(Counter(single).values()) == 1
    repeated = {line: count for line, count in Counter(double).items() if count > 1}
    assert not repeated, f"log lines printed more than once: {repeated}"
    # Each command says how many processes run it and which shards each takes, once.
    spread = {f"INFO crop_hf.engine.jobs: {job}: 2 processes; shard k{per} goes to process k mod 2 (process 0: "
              "shards 0, 2, 4, ...; process 1: shards 1, 3, 5, ...)"
              for job, per in (("synthesize", " of each language"), ("translate-align", ""))}
    alone = {f"INFO crop_hf.engine.jobs: {job}: 1 process, taking every shard"
             for job in ("synthesize", "translate-align")}
    assert spread <= set(double) and alone <= set(single)
    assert set(double) - spread <= set(single) - alone
    # Only the main process logs: its shards' lines (even shards) are there, the other's are not.
    shards = {(match[1], int(match[2])) for line in double if (match := SHARD_LINE.match(line))}
    assert shards == {("de", 0), ("de", 2), ("nl", 0), ("es", 0), ("es", 2)}  # the driver names every key
    assert len([line for line in single if SHARD_LINE.match(line)]) == 3 + 2 + 4
    # Each command's report is printed once, by the main process.
    for done in (one, two):
        assert done.stdout.count("\ndataset: ") == 2 and done.stdout.count(" lang  input") == 1
