"""The job contract (crop_hf.engine.jobs, crop_hf.engine.options): a toy job runs, resumes, merges, keeps its
declared reasons, and its config's fingerprint follows the one rule of RunOptions."""

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

from crop_hf.arguments import build_parser, parse_config
from crop_hf.engine.jobs import CorpusJob, JobResult, ShardResult, _step, run_job
from crop_hf.engine.options import RunOptions
from crop_hf.engine.shards import shards_of


@dataclass
class CountConfig(RunOptions):
    run_only = ("keys", "batch")
    added_later = ("divisor",)

    numbers: int = field(default=7, metadata={"help": "how many numbers"})
    divisor: int = field(default=2, metadata={"help": "kept when divisible"})
    keys: list[str] = field(default_factory=lambda: ["a", "b"], metadata={"help": "the run's keys"})
    batch: int = field(default=4, metadata={"help": "numbers per call (changes nothing)"})
    shard_size: int = field(default=3, kw_only=True, metadata={"help": "numbers per shard"})
    show_progress: bool = field(default=False, kw_only=True, metadata={"help": "bars"})


@dataclass
class Kept:
    number: int = field(metadata={"help": "a kept number"})


@dataclass
class Dropped:
    number: int = field(metadata={"help": "a dropped number"})
    reason: str = field(metadata={"help": "why"})


class CountJob(CorpusJob[Kept, Dropped]):
    """Keeps the numbers ``divisor`` divides; drops the others as ``indivisible`` and 13 as ``unlucky``."""

    name = "count"
    reasons: ClassVar[dict[str, str]] = {"unlucky": "13", "indivisible": "not a multiple"}
    kept_type, dropped_type = Kept, Dropped
    keys_field = "keys"
    extra_counts = ("sum",)

    def __init__(self, config, inputs=None, *, bad=None):
        super().__init__(config, inputs)
        self.bad = bad  # what a broken step returns instead
        self.processed: list[int] = []

    def before_run(self):
        self.processed.append("before_run")

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

    def shards_processed(self):
        return [shard for shard in self.processed if shard != "before_run"]


def test_a_job_merges_its_shards_into_splits_statistics_and_a_card(tmp_path):
    job = CountJob(CountConfig(output_dir=str(tmp_path)))
    result = run_job(job)
    assert isinstance(result, JobResult) and result.output_dir == tmp_path
    assert result.statistics["a"] == {"input": 7, "kept": 4, "unlucky": 0, "indivisible": 3, "sum": 21}
    assert result.statistics["b"] == {"input": 7, "kept": 4, "unlucky": 1, "indivisible": 2, "sum": 91}
    kept = datasets.load_from_disk(str(tmp_path / "dataset"))
    assert kept["a"]["number"] == [0, 2, 4, 6] and kept["b"]["number"] == [10, 12, 14, 16]
    dropped = datasets.load_from_disk(str(tmp_path / "discarded"))["b"]
    assert list(zip(dropped["number"], dropped["reason"], strict=True)) == [
        (11, "indivisible"), (13, "unlucky"), (15, "indivisible")]
    assert json.loads((tmp_path / "statistics.json").read_text()) == result.statistics
    assert (tmp_path / "README.md").read_text().startswith("# count")
    assert result.skipped_shards == {"a": 0, "b": 0} and result.dataset["b"]["number"] == [10, 12, 14, 16]
    assert result.table().splitlines()[-1].split() == ["total", "14", "8", "1", "5", "112"]


class OneSplitJob(CountJob):
    split_name = "train"


def test_a_job_whose_keys_share_one_split_writes_that_splits_flat_counts(tmp_path):
    result = run_job(OneSplitJob(CountConfig(output_dir=str(tmp_path), keys=["b"])))
    assert result.statistics == {"train": {"input": 7, "kept": 4, "unlucky": 1, "indivisible": 2, "sum": 91}}
    assert json.loads((tmp_path / "statistics.json").read_text()) == result.statistics["train"]
    assert list(datasets.load_from_disk(str(tmp_path / "dataset"))) == ["train"] == list(result.dataset)


def test_a_rerun_skips_finished_shards_and_other_settings_are_refused(tmp_path):
    from crop_hf.errors import OutputExistsError

    first = CountJob(CountConfig(output_dir=str(tmp_path)))
    run_job(first)
    assert len(first.shards_processed()) == 6  # 3 shards of each key
    (first.store.root / "b" / "00002.json").unlink()  # as if killed before the last shard of b was done
    again = CountJob(CountConfig(output_dir=str(tmp_path)))
    result = run_job(again)
    assert again.shards_processed() == [("b", 2)] and result.skipped_shards == {"a": 3, "b": 2}
    assert result.statistics == json.loads((tmp_path / "statistics.json").read_text())
    assert "resumed: skipped 5 shard(s) an earlier run had finished (a 3, b 2)" in result.report()
    refused = CountJob(CountConfig(output_dir=str(tmp_path), numbers=8))
    with pytest.raises(OutputExistsError, match="--numbers: 7 there, 8 here"):
        run_job(refused)
    assert refused.processed == []  # refused before any hook of the job ran
    with pytest.raises(OutputExistsError, match=r"--keys: \["):
        run_job(CountJob(CountConfig(output_dir=str(tmp_path), keys=["a"])))
    other = CountJob(CountConfig(output_dir=str(tmp_path), numbers=8, overwrite_output_dir=True))
    assert run_job(other).statistics["a"]["input"] == 8 and len(other.shards_processed()) == 6


def test_a_dropped_record_needs_a_declared_reason_and_records_their_declared_types(tmp_path):
    with pytest.raises(ValueError, match=r"undeclared reason\(s\) \['odd'\]"):
        run_job(CountJob(CountConfig(output_dir=str(tmp_path / "1")), bad=ShardResult([], [Dropped(1, "odd")])))
    with pytest.raises(TypeError, match="kept record must be a Kept, got dict"):
        run_job(CountJob(CountConfig(output_dir=str(tmp_path / "2")), bad=ShardResult([{"number": 1}], [])))
    with pytest.raises(ValueError, match=r"counts \['total'\] are not among its extra_counts"):
        run_job(CountJob(CountConfig(output_dir=str(tmp_path / "3")), bad=ShardResult([], [], {"total": 1})))
    assert not (tmp_path / "1" / "shards").exists()  # nothing was written for the refused shard


def test_every_field_but_the_run_options_and_run_only_makes_the_fingerprint_and_a_late_one_only_off_its_default(
        tmp_path):
    config = CountConfig(output_dir=str(tmp_path))
    assert config.result_arguments() == {"numbers": 7, "shard_size": 3}
    assert dataclasses.replace(config, divisor=3).result_arguments() == {"numbers": 7, "shard_size": 3, "divisor": 3}
    # output_dir, show_progress, overwrite_output_dir and the run-only batch are not results: same fingerprint
    assert CountJob(config).store.fingerprint == CountJob(dataclasses.replace(
        config, output_dir=str(tmp_path / "x"), show_progress=True, overwrite_output_dir=True, batch=9)).store.fingerprint
    assert CountJob(config).store.fingerprint != CountJob(dataclasses.replace(config, divisor=3)).store.fingerprint
    assert CountJob(config).store.fingerprint != CountJob(dataclasses.replace(config, shard_size=4)).store.fingerprint


def test_a_config_reads_with_a_plain_hfargumentparser_and_with_build_parser():
    for parser in (HfArgumentParser([CountConfig]), build_parser([CountConfig])):
        (config,) = parser.parse_args_into_dataclasses(["--output_dir", "out", "--divisor", "5"])
        assert (config.output_dir, config.divisor, config.shard_size) == ("out", 5, 3)
    with pytest.raises(ValueError, match="shard_size must be at least 1, got 0"):
        CountConfig(output_dir="out", shard_size=0)


@dataclass
class RenamedConfig(RunOptions):
    renamed: ClassVar[dict[str, str]] = {"target_lang": "tgt_lang", "max_sentences": "max_examples"}
    run_only = ("max_examples",)

    tgt_lang: str = field(default="de", metadata={"help": "language"})
    max_examples: int | None = field(default=None, metadata={"help": "at most"})


def test_a_renamed_option_keeps_its_old_name_in_the_fingerprint_and_its_old_spelling_on_the_command_line(
        tmp_path, caplog):
    def said() -> list[str]:
        lines = [record.getMessage().split(";")[0] for record in caplog.records if record.name == "crop-hf"]
        caplog.clear()
        return lines

    assert RenamedConfig(output_dir="out", tgt_lang="es").result_arguments() == {"target_lang": "es", "shard_size": 1000}
    assert RenamedConfig(output_dir="out").option_spellings()["target_lang"] == "--tgt_lang"  # as --help spells it
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
    from crop_hf.engine.records import row_features
    from crop_hf.engine.shards import ShardStore, merge_shards

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

    from crop_hf.engine.records import row_features
    from crop_hf.engine.shards import ShardStore, merge_shards

    store = ShardStore(tmp_path, {"run": 2})
    store.write("a", 0, [], {"input": 0, "kept": 0})
    store.write("a", 1, [{"kept": True, "row": '{"number": 4}'}], {"input": 1, "kept": 1})
    assert pq.read_schema(store.root / "a" / "00000.parquet").names == ["kept", "row"]
    assert merge_shards(list(store.finished("a")), True, row_features(Kept))["number"] == [4]


def test_a_wrongly_typed_dropped_record_is_named_as_dropped_with_the_job():
    job = CountJob(CountConfig(output_dir="unused"), bad=ShardResult([], [{"number": 1, "reason": "odd"}]))
    with pytest.raises(TypeError, match=r"^count: a dropped record must be a Dropped, got dict$"):
        _step(job, "a", 0, [1], None)


def test_a_dropped_record_without_a_reason_counts_under_none():
    assert ShardResult([], [Kept(1), Dropped(2, "odd")]).reasons() == {None: 1, "odd": 1}


def test_the_merge_writes_outputs_then_statistics_and_card_then_calls_after_merge(tmp_path):
    seen = []

    class Watched(CountJob):
        def write_outputs(self):
            seen.append(("outputs", (self.output_dir / "statistics.json").exists()))
            super().write_outputs()

        def after_merge(self):
            seen.append(("after", (self.output_dir / "README.md").exists()))

        def notes(self):
            return ["a note"]

    result = run_job(Watched(CountConfig(output_dir=str(tmp_path))))
    assert seen == [("outputs", False), ("after", True)]
    assert "\na note\n" in result.report() and f"card: {tmp_path / 'README.md'}" in result.report()


def test_each_process_takes_shard_k_mod_n_and_only_the_main_one_merges(tmp_path, monkeypatch):
    from synthesis_fakes import FakeState

    from crop_hf.engine import processes

    jobs, results = [], []
    for index in (1, 0):  # the other process first: it leaves its shards for the main one's merge
        monkeypatch.setattr(processes, "process_state", lambda index=index: FakeState(index, 2))
        jobs.append(CountJob(CountConfig(output_dir=str(tmp_path))))
        results.append(run_job(jobs[-1]))
    other, result = results
    assert other.statistics == {} and other.skipped_shards == {"a": 0, "b": 0}  # it does not merge
    assert jobs[0].shards_processed() == [("a", 1), ("b", 1)]
    assert jobs[1].shards_processed() == [("a", 0), ("a", 2), ("b", 0), ("b", 2)]
    assert result.statistics["a"]["kept"] == 4 and json.loads((tmp_path / "statistics.json").read_text())["b"]["sum"] == 91


def test_a_job_whose_inputs_cannot_be_recognised_starts_afresh(tmp_path):
    run_job(CountJob(CountConfig(output_dir=str(tmp_path))))
    fresh = CountJob(CountConfig(output_dir=str(tmp_path)))
    fresh.resumable = False
    assert run_job(fresh).skipped_shards == {"a": 0, "b": 0} and len(fresh.shards_processed()) == 6


def test_an_empty_split_is_named_in_the_report(tmp_path):
    result = run_job(CountJob(CountConfig(output_dir=str(tmp_path), divisor=100, numbers=1, keys=["b"])))
    assert result.empty() == ["b"] and f"nothing kept for b: see {tmp_path / 'discarded'}" in result.report()


def test_push_output_uploads_the_kept_splits_with_the_card_public_unless_asked(tmp_path, monkeypatch):
    from crop_hf import hub
    from crop_hf.engine.jobs import push_output

    run_job(CountJob(CountConfig(output_dir=str(tmp_path))))
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


def test_the_result_table_and_report_of_any_counts(tmp_path):
    """JobResult built by hand (its older names are aliases users construct): missing counts read 0, no
    counts is a header alone, every empty split is named, and mark-parallel's data files are where the
    dataset is."""
    empty = JobResult(tmp_path)
    assert empty.table().splitlines()[0].split() == ["split"] and empty.empty() == []
    result = JobResult(tmp_path, {"a": {"input": 2, "kept": 1}, "b": {"input": 3}, "c": {"input": 1, "kept": 0}},
                       key_name="lang")
    rows = [line.split() for line in result.table().splitlines() if not line.startswith("-")]
    assert rows == [["lang", "input", "kept"], ["a", "2", "1"], ["b", "3", "0"], ["c", "1", "0"], ["total", "6", "1"]]
    assert result.empty() == ["b", "c"]
    report = result.report().splitlines()
    assert f"nothing kept for b, c: see {tmp_path / 'discarded'} for why each was dropped" in report
    assert f"dataset: {tmp_path / 'dataset'}" in report
    (tmp_path / "data-00000.parquet").write_bytes(b"")
    assert f"dataset: {tmp_path / 'data-*.parquet'}" in result.report().splitlines()


def test_an_output_folder_that_is_a_file_is_refused_by_its_option_before_any_hook(tmp_path):
    from crop_hf.errors import OutputPathError

    (tmp_path / "out").write_text("a file")
    job = CountJob(CountConfig(output_dir=str(tmp_path / "out")))
    with pytest.raises(OutputPathError, match=r"^--output_dir .*: a file is there, not a folder$"):
        run_job(job)
    assert job.processed == []


def test_the_result_says_what_a_key_is(tmp_path):
    class Languages(CountJob):
        key_name = "lang"

    result = run_job(Languages(CountConfig(output_dir=str(tmp_path), keys=["a"])))
    assert result.key_name == "lang" and result.table().split()[0] == "lang"
