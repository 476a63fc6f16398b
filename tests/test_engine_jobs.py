"""The job contract (crop_hf.engine.jobs): a toy job runs, resumes, merges, and keeps its declared reasons."""

from __future__ import annotations

import dataclasses
import json
import logging
import warnings
from dataclasses import dataclass, field
from typing import ClassVar

import datasets
import pytest
from transformers import HfArgumentParser

from crop_hf.arguments import build_parser, changes_results, parse_config, renamed_from
from crop_hf.engine.jobs import CorpusJob, ShardResult, _step, result_arguments, result_fields, run_job
from crop_hf.engine.shards import shards_of


@dataclass
class CountConfig:
    output_dir: str = field(metadata={"help": "where"})
    numbers: int = field(default=7, metadata=changes_results({"help": "how many numbers"}))
    shard_size: int = field(default=3, metadata=changes_results({"help": "numbers per shard"}))
    divisor: int = field(default=2, metadata=changes_results({"help": "kept when divisible"}, unless_default=True))
    show_progress: bool = field(default=False, metadata={"help": "bars"})
    overwrite_output_dir: bool = field(default=False, metadata={"help": "replace"})


@dataclass
class Kept:
    number: int = field(metadata={"help": "a kept number"})


@dataclass
class Dropped:
    number: int = field(metadata={"help": "a dropped number"})
    reason: str = field(metadata={"help": "why"})


class CountJob(CorpusJob[Kept, Dropped, dict]):
    """Keeps the numbers ``divisor`` divides; drops the others as ``indivisible`` and 13 as ``unlucky``."""

    name = "count"
    reasons: ClassVar[dict[str, str]] = {"unlucky": "13", "indivisible": "not a multiple"}
    kept_type, dropped_type = Kept, Dropped
    extra_counts = ("sum",)

    def __init__(self, config, inputs=None, *, bad=None):
        super().__init__(config, inputs)
        self.bad = bad  # what a broken step returns instead
        self.processed: list[int] = []

    def shard_keys(self):
        return ["a", "b"]

    def shards(self, key):
        offset = 0 if key == "a" else 10
        return shards_of(range(offset, offset + self.config.numbers), self.config.shard_size)

    def process(self, key, index, items, status):
        self.processed.append((key, index))
        if self.bad is not None:
            return self.bad
        kept = [Kept(n) for n in items if n % self.config.divisor == 0 and n != 13]
        dropped = [Dropped(n, "unlucky" if n == 13 else "indivisible") for n in items
                   if n % self.config.divisor or n == 13]
        return ShardResult(kept, dropped, {"sum": sum(items)})

    def card(self, statistics, *, command_line):
        return f"# count\n\n{json.dumps(statistics, sort_keys=True)}\n"

    def result(self, statistics, skipped):
        return {"statistics": statistics, "skipped": skipped}


def test_a_job_merges_its_shards_into_splits_statistics_and_a_card(tmp_path):
    job = CountJob(CountConfig(str(tmp_path)))
    result = run_job(job)
    assert result["statistics"]["a"] == {"input": 7, "kept": 4, "unlucky": 0, "indivisible": 3, "sum": 21}
    assert result["statistics"]["b"] == {"input": 7, "kept": 4, "unlucky": 1, "indivisible": 2, "sum": 91}
    kept = datasets.load_from_disk(str(tmp_path / "dataset"))
    assert kept["a"]["number"] == [0, 2, 4, 6] and kept["b"]["number"] == [10, 12, 14, 16]
    dropped = datasets.load_from_disk(str(tmp_path / "discarded"))["b"]
    assert list(zip(dropped["number"], dropped["reason"], strict=True)) == [
        (11, "indivisible"), (13, "unlucky"), (15, "indivisible")]
    assert json.loads((tmp_path / "statistics.json").read_text()) == result["statistics"]
    assert (tmp_path / "README.md").read_text().startswith("# count")
    assert result["skipped"] == {"a": 0, "b": 0}


def test_a_rerun_skips_finished_shards_and_other_settings_are_refused(tmp_path):
    from crop_hf.errors import OutputExistsError

    first = CountJob(CountConfig(str(tmp_path)))
    run_job(first)
    assert len(first.processed) == 6  # 3 shards of each key
    (first.store.root / "b" / "00002.json").unlink()  # as if killed before the last shard of b was done
    again = CountJob(CountConfig(str(tmp_path)))
    result = run_job(again)
    assert again.processed == [("b", 2)] and result["skipped"] == {"a": 3, "b": 2}
    assert result["statistics"] == json.loads((tmp_path / "statistics.json").read_text())
    with pytest.raises(OutputExistsError, match="--numbers: 7 there, 8 here"):
        run_job(CountJob(CountConfig(str(tmp_path), numbers=8)))
    other = CountJob(CountConfig(str(tmp_path), numbers=8, overwrite_output_dir=True))
    assert run_job(other)["statistics"]["a"]["input"] == 8 and len(other.processed) == 6


def test_a_dropped_record_needs_a_declared_reason_and_records_their_declared_types(tmp_path):
    with pytest.raises(ValueError, match=r"undeclared reason\(s\) \['odd'\]"):
        run_job(CountJob(CountConfig(str(tmp_path / "1")), bad=ShardResult([], [Dropped(1, "odd")])))
    with pytest.raises(TypeError, match="kept record must be a Kept, got dict"):
        run_job(CountJob(CountConfig(str(tmp_path / "2")), bad=ShardResult([{"number": 1}], [])))
    with pytest.raises(ValueError, match=r"counts \['total'\] are not among its extra_counts"):
        run_job(CountJob(CountConfig(str(tmp_path / "3")), bad=ShardResult([], [], {"total": 1})))
    assert not (tmp_path / "1" / "shards").exists()  # nothing was written for the refused shard


def test_result_fields_are_read_from_metadata_and_a_late_field_counts_only_off_its_default(tmp_path):
    config = CountConfig(str(tmp_path))
    assert result_fields(CountConfig) == ("numbers", "shard_size", "divisor")
    assert result_arguments(config) == {"numbers": 7, "shard_size": 3}
    assert result_arguments(dataclasses.replace(config, divisor=3)) == {"numbers": 7, "shard_size": 3, "divisor": 3}
    # output_dir, show_progress and overwrite_output_dir are not results: same fingerprint
    assert CountJob(config).store.fingerprint == CountJob(
        dataclasses.replace(config, output_dir=str(tmp_path), show_progress=True)).store.fingerprint
    assert CountJob(config).store.fingerprint != CountJob(dataclasses.replace(config, divisor=3)).store.fingerprint


@pytest.mark.parametrize("make_parser", [lambda: HfArgumentParser([CountConfig]), lambda: build_parser([CountConfig])],
                         ids=["HfArgumentParser", "build_parser"])
def test_the_result_mark_stays_out_of_argparse(make_parser):
    (config,) = make_parser().parse_args_into_dataclasses(["--output_dir", "out", "--divisor", "5"])
    assert (config.output_dir, config.divisor) == ("out", 5)
    marks = {f.name: f.metadata.get("result") for f in dataclasses.fields(CountConfig)}
    assert marks["numbers"] is True and marks["divisor"] == "unless_default" and marks["output_dir"] is None


@dataclass
class RenamedConfig:
    output_dir: str = field(metadata={"help": "where"})
    tgt_lang: str = field(default="de", metadata=renamed_from("target_lang", changes_results({"help": "language"})))
    max_examples: int | None = field(default=None, metadata=renamed_from("max_sentences", {"help": "at most"}))


def test_a_renamed_option_keeps_its_old_name_in_the_fingerprint_and_its_old_spelling_on_the_command_line(
        tmp_path, caplog):
    def said() -> list[str]:
        lines = [record.getMessage().split(";")[0] for record in caplog.records if record.name == "crop-hf"]
        caplog.clear()
        return lines

    assert result_arguments(RenamedConfig("out", tgt_lang="es")) == {"target_lang": "es"}
    caplog.set_level(logging.WARNING, logger="crop-hf")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a logged line, not a Python warning with a module path and source line
        (config,) = parse_config([RenamedConfig], ["--output_dir", "o", "--target_lang=nl", "--max-sentences", "3"])
    assert said() == ["crop-hf: --target_lang is renamed --tgt_lang", "crop-hf: --max_sentences is renamed --max_examples"]
    assert (config.tgt_lang, config.max_examples) == ("nl", 3)
    file = tmp_path / "run.json"
    file.write_text(json.dumps({"output_dir": "o", "max_sentences": 4}))
    (config,) = parse_config([RenamedConfig], [str(file), "--tgt_lang", "es"])
    assert said() == ["crop-hf: --max_sentences is renamed --max_examples"]
    assert (config.tgt_lang, config.max_examples) == ("es", 4)
    assert parse_config([RenamedConfig], ["--output_dir", "o", "--tgt_lang", "fr"])[0].tgt_lang == "fr"
    assert said() == []  # the new spelling says nothing


def test_the_merge_reads_rewritten_shards_afresh_and_counts_dropped_rows_from_the_files(tmp_path):
    from crop_hf.engine.shards import ShardStore, merge_shards, row_features

    store = ShardStore(tmp_path, {"run": 1})
    # one input item, two kept rows (mark-parallel's two directions) and a dropped one: input - kept < 0
    store.write("a", 0, [{"kept": True, "row": '{"number": 1}'}, {"kept": True, "row": '{"number": 2}'},
                         {"kept": False, "row": '{"number": 3, "reason": "odd"}'}], {"input": 1, "kept": 2})
    assert merge_shards(list(store.finished("a")), False, row_features(Dropped))["number"] == [3]
    assert merge_shards(list(store.finished("a")), True, row_features(Kept))["number"] == [1, 2]
    store.write("a", 0, [{"kept": True, "row": '{"number": 7}'}], {"input": 1, "kept": 1})  # same path, other rows
    assert merge_shards(list(store.finished("a")), True, row_features(Kept))["number"] == [7]


def test_an_empty_shard_keeps_its_columns_and_merges_with_the_others(tmp_path):
    import pyarrow.parquet as pq

    from crop_hf.engine.shards import ShardStore, merge_shards, row_features

    store = ShardStore(tmp_path, {"run": 2})
    store.write("a", 0, [], {"input": 0, "kept": 0})
    store.write("a", 1, [{"kept": True, "row": '{"number": 4}'}], {"input": 1, "kept": 1})
    assert pq.read_schema(store.root / "a" / "00000.parquet").names == ["kept", "row"]
    assert merge_shards(list(store.finished("a")), True, row_features(Kept))["number"] == [4]


def test_a_wrongly_typed_dropped_record_is_named_as_dropped_with_the_job():
    job = CountJob(CountConfig("unused"), bad=ShardResult([], [{"number": 1, "reason": "odd"}]))
    with pytest.raises(TypeError, match=r"^count: a dropped record must be a Dropped, got dict$"):
        _step(job, "a", 0, [1], None)


def test_a_dropped_record_without_a_reason_counts_under_none():
    assert ShardResult([], [Kept(1), Dropped(2, "odd")]).reasons() == {None: 1, "odd": 1}


def test_the_merged_statistics_reach_the_outputs_and_after_merge(tmp_path):
    seen = {}

    class Watched(CountJob):
        per_key = " of each key"

        def write_outputs(self, statistics):
            seen["outputs"] = dict(statistics)
            super().write_outputs(statistics)

        def after_merge(self, statistics):
            seen["after"] = dict(statistics)

    result = run_job(Watched(CountConfig(str(tmp_path))))
    assert seen["outputs"] == seen["after"] == result["statistics"]
    assert seen["after"]["a"]["kept"] == 4


def test_the_driver_hands_the_jobs_per_key_wording_to_the_shard_runner(tmp_path, monkeypatch):
    import crop_hf.engine.jobs as jobs

    calls = []
    monkeypatch.setattr(jobs, "run_sharded", lambda *args, **kwargs: calls.append(kwargs) or
                        type("Run", (), {"merged": {}, "skipped": {}})())
    job = CountJob(CountConfig(str(tmp_path)))
    job.per_key = " of each key"
    run_job(job)
    assert calls[0]["per_key"] == " of each key" and calls[0]["description"] == "count"


def test_push_output_uploads_the_kept_splits_with_the_card_public_unless_asked(tmp_path, monkeypatch):
    from crop_hf import hub
    from crop_hf.engine.jobs import push_output

    run_job(CountJob(CountConfig(str(tmp_path))))
    calls = []
    monkeypatch.setattr(hub, "push_dataset", lambda dataset, repo_id, card, **kwargs: calls.append(
        (dataset, repo_id, card, kwargs)) or f"https://hub/{repo_id}")
    assert push_output(tmp_path, "me/count") == "https://hub/me/count"
    dataset, _, card, kwargs = calls[0]
    assert dataset["b"]["number"] == [10, 12, 14, 16] and card.startswith("# count")
    assert kwargs == {"private": False, "token": None, "folders": None}
    (tmp_path / "report").mkdir()
    push_output(tmp_path, "me/count", private=True, token="t")
    assert calls[1][3] == {"private": True, "token": "t", "folders": {"report": tmp_path / "report"}}
