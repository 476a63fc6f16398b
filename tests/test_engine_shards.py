"""The shard engine (crop_hf.engine.shards): runs written before it resume unchanged, processes split
shards k % n, shards are written whole, and rows declare their own columns.

``tests/fixtures/shards_v1`` was written by the code before the engine existed (synthesis with the
fakes of ``synthesis_fakes.py`` on ``raw/{lang}.txt``; translate-and-align of ``en.tsv``), with the
merged datasets and statistics that code produced in ``expected.json``. Those runs recorded their
inputs by name only: since the content of local inputs joined the fingerprint (issue 68) none of
their shards is resumed, and redone they give the same rows.
"""

from __future__ import annotations

import json
import logging
import shutil
import typing
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest
from synthesis_fakes import (
    FakeState,
    ListConfig,
    ListJob,
    TextRow,
    fake_config,
    fake_models,
    numbered,
    run_as,
)

from crop_hf.augment.translate_align import TranslateAlignConfig, TranslateAlignModels, translate_align
from crop_hf.engine import processes, shards
from crop_hf.engine.jobs import ShardResult
from crop_hf.engine.records import row_descriptions, row_features
from crop_hf.engine.shards import (
    ShardStore,
    fingerprint,
    merge_shards,
    save_dataset_dict,
    shard_statistics,
)
from crop_hf.errors import OutputExistsError
from crop_hf.synthesis import synthesize

FIXTURE = Path(__file__).with_name("fixtures") / "shards_v1"
EXPECTED = json.loads((FIXTURE / "expected.json").read_text(encoding="utf-8"))
# What the code before the engine named these runs' shard folders: pinned, so a change to the
# fingerprint (its arguments, their serialisation, the hash) cannot pass unnoticed.
SYNTHESIS_FINGERPRINT = "0485917317b699e9"
TRANSLATE_ALIGN_FINGERPRINT = "5bbcd5ae390481d5"


def synthesis_config():
    return fake_config("raw/{lang}.txt", "synthesis")


def translate_align_config():
    return TranslateAlignConfig(input="en.tsv", output_dir="translate_align", tgt_lang="es", language_filter=False,
                                show_progress=False, shard_size=2)


@pytest.fixture
def old_run(tmp_path, monkeypatch):
    """A copy of the fixture's run folders; the runs' paths are relative to it, as when it was written."""
    shutil.copytree(FIXTURE, tmp_path, dirs_exist_ok=True)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def loaded(folder: Path) -> dict:
    return {split: data.to_list() for split, data in datasets.load_from_disk(str(folder)).items()}


def features(folder: Path) -> dict:
    """Per split, the ``(column, feature)`` pairs in column order (a dict would not compare the order)."""
    return {split: list(data.features.to_dict().items()) for split, data in datasets.load_from_disk(str(folder)).items()}


def ordered(expected_features: dict) -> dict:
    return {split: list(columns.items()) for split, columns in expected_features.items()}


class Refuses:
    """A translator for a run that must not translate anything (every shard is finished)."""

    calls = 0

    def __call__(self, *args, **kwargs):
        raise AssertionError("a finished shard was processed again")


def test_fingerprints_are_those_the_earlier_code_gave():
    assert fingerprint(synthesis_config().result_arguments() | {"inputs": None}) == SYNTHESIS_FINGERPRINT
    assert EXPECTED["synthesis"]["fingerprint"] == SYNTHESIS_FINGERPRINT
    assert EXPECTED["translate_align"]["fingerprint"] == TRANSLATE_ALIGN_FINGERPRINT
    assert fingerprint({"b": [1, "x"], "a": None}) == fingerprint({"a": None, "b": [1, "x"]})
    assert fingerprint({"a": 1}) != fingerprint({"a": 2})


def test_a_synthesis_run_written_before_is_not_resumed_for_its_unrecorded_input_content_and_redone_the_same(old_run):
    """Runs written before content digests cannot show that their raw files are the ones read now (issue 68):
    none of their shards is resumed, and redone they give the earlier rows."""
    expected = EXPECTED["synthesis"]
    models = fake_models()
    result = synthesize(synthesis_config(), models=models)
    assert models.translator.calls == 10 and result.skipped_shards == {"de": 0, "nl": 0}  # nothing stale resumed
    assert result.statistics == expected["statistics"]
    shards = old_run / "synthesis" / "shards"  # the earlier run's folder is kept beside the new one
    assert SYNTHESIS_FINGERPRINT in {p.name for p in shards.iterdir()} and len(list(shards.iterdir())) == 3
    assert loaded(result.dataset_path) == expected["dataset"]
    assert loaded(result.discarded_path) == expected["discarded"]
    assert features(result.dataset_path) == ordered(expected["features"])  # same columns, order and types
    assert features(result.discarded_path) == ordered(expected["discarded_features"])
    # finished now, with the content recorded: a rerun of the same inputs resumes every shard
    again = synthesize(synthesis_config(), models=fake_models())
    assert again.skipped_shards == {"de": 3, "nl": 2}


def test_a_shard_redone_now_is_the_shard_the_earlier_code_wrote(old_run):
    old = old_run / "synthesis" / "shards" / SYNTHESIS_FINGERPRINT / "de"
    result = synthesize(synthesis_config(), models=fake_models())
    (run,) = (path.parent for path in (old_run / "synthesis" / "shards").glob("*/run.json")
              if path.parent.name != SYNTHESIS_FINGERPRINT)
    new = run / "de"
    for name in ("00000", "00001", "00002"):
        old_rows, new_rows = (pq.read_table(folder / f"{name}.parquet").to_pylist() for folder in (old, new))
        assert [row["kept"] for row in new_rows] == [row["kept"] for row in old_rows]
        assert [json.loads(row["row"]) for row in new_rows] == [json.loads(row["row"]) for row in old_rows]
        assert json.loads((new / f"{name}.json").read_text()) == json.loads((old / f"{name}.json").read_text())
    assert loaded(result.dataset_path) == EXPECTED["synthesis"]["dataset"]


def test_a_translate_align_run_written_before_is_not_resumed_and_redone_the_same(old_run):
    from test_translate_align import DictTranslator, TableAligner

    expected = EXPECTED["translate_align"]
    with pytest.raises(AssertionError, match="a finished shard was processed again"):  # no shard of it resumed
        translate_align(translate_align_config(), TranslateAlignModels(Refuses(), aligner=None))
    result = translate_align(translate_align_config(), TranslateAlignModels(DictTranslator(), TableAligner()))
    assert result.skipped_shards == {"train": 0} and result.statistics == {"train": expected["statistics"]}
    out = old_run / "translate_align"
    assert json.loads((out / "statistics.json").read_text()) == expected["statistics"]  # flat, as ever
    assert TRANSLATE_ALIGN_FINGERPRINT in {p.name for p in (out / "shards").iterdir()}
    assert loaded(out / "dataset") == expected["dataset"]
    assert loaded(out / "discarded") == expected["discarded"]
    assert features(out / "dataset") == ordered(expected["features"])
    assert features(out / "discarded") == ordered(expected["discarded_features"])


def test_shard_k_goes_to_process_k_mod_n_and_each_is_written_whole(tmp_path, monkeypatch):
    jobs = {}
    for index in (1, 2, 0):  # the main process last: it merges what all wrote
        jobs[index] = ListJob(ListConfig(output_dir=str(tmp_path)), {"xx": numbered(14, 2)})
        result = run_as(monkeypatch, index, 3, jobs[index])
        assert result.skipped_shards == {"xx": 0}
    assert {index: [k for _, k in job.processed] for index, job in jobs.items()} == {0: [0, 3, 6], 1: [1, 4], 2: [2, 5]}
    store = jobs[0].store
    assert [index for index, _, _ in store.finished("xx")] == list(range(7))
    _, path, stats = next(store.finished("xx"))
    assert stats == {"input": 2, "kept": 1, "odd": 1, "process_index": 0}
    assert pq.read_table(path).to_pylist() == [{"kept": True, "row": '{"text": "s0"}'},
                                               {"kept": False, "row": '{"text": "s1", "reason": "odd"}'}]
    assert json.loads((store.root / "xx" / "00004.json").read_text())["process_index"] == 1
    assert json.loads((store.root / "run.json").read_text()) == {"inputs": None, "shard_size": 1000}
    assert result.statistics == {"xx": {"input": 14, "kept": 7, "odd": 7}}
    assert datasets.load_from_disk(str(tmp_path / "dataset"))["xx"]["text"] == [f"s{i}" for i in range(0, 14, 2)]

    def never(key, k, items):
        raise AssertionError(f"shard {k} was finished")

    again = ListJob(ListConfig(output_dir=str(tmp_path)), {"xx": numbered(14, 2)}, never)
    assert run_as(monkeypatch, 1, 3, again).skipped_shards == {"xx": 2} and again.processed == []
    finished = list(store.finished("xx"))
    assert shard_statistics(finished, ["input", "kept", "odd", "absent"]) == {"input": 14, "kept": 7, "odd": 7,
                                                                              "absent": 0}
    discarded = merge_shards(finished, False, datasets.Features({"text": datasets.Value("string"),
                                                                 "reason": datasets.Value("string")}))
    assert discarded["text"] == [f"s{i}" for i in range(1, 14, 2)]  # shard order, not process order


def test_fewer_keys_are_refused_unless_asked_and_then_resume(tmp_path, monkeypatch):
    shards_of_keys = {"aa": numbered(5, 2), "bb": numbered(5, 2)}
    run_as(monkeypatch, 0, 1, ListJob(ListConfig(output_dir=str(tmp_path), keys=["aa", "bb"]), shards_of_keys))
    with pytest.raises(OutputExistsError, match=r'--keys: \["aa", "bb"\] there, \["aa"\] here'):
        run_as(monkeypatch, 0, 1, ListJob(ListConfig(output_dir=str(tmp_path), keys=["aa"]), shards_of_keys))
    alone = ListJob(ListConfig(output_dir=str(tmp_path), keys=["aa"], overwrite_output_dir=True), shards_of_keys)
    assert run_as(monkeypatch, 0, 1, alone).skipped_shards == {"aa": 3} and alone.processed == []


def test_save_dataset_dict_keeps_an_empty_split_loadable_and_replaces_the_old_folder(tmp_path):
    target = tmp_path / "dataset"
    features = datasets.Features({"text": datasets.Value("string")})
    save_dataset_dict(datasets.DatasetDict({"de": datasets.Dataset.from_dict({"text": ["a"]}, features=features)}),
                      target)
    empty = datasets.Dataset.from_dict({"text": []}, features=features)
    save_dataset_dict(datasets.DatasetDict({"es": empty, "nl": datasets.Dataset.from_dict({"text": ["b"]})}), target)
    back = datasets.load_from_disk(str(target))
    assert set(back) == {"es", "nl"} and len(back["es"]) == 0 and back["nl"]["text"] == ["b"]
    assert not (tmp_path / ".dataset.tmp").exists()


def test_row_features_follow_the_dataclass_fields():
    from dataclasses import dataclass, field

    @dataclass
    class Row:
        text: str = field(metadata={"help": "the text"})
        tags: list[str] | None = field(metadata={"help": "its tags"})
        count: int = field(metadata={"help": "how many"})

    built = row_features(Row, {"count": datasets.Value("int32")})
    assert built == datasets.Features({"text": datasets.Value("string"),
                                       "tags": datasets.List(datasets.Value("string")),
                                       "count": datasets.Value("int32")})
    assert list(built) == ["text", "tags", "count"]
    assert row_descriptions(Row) == {"text": "the text", "tags": "its tags", "count": "how many"}
    with pytest.raises(KeyError, match="no field"):
        row_features(Row, {"missing": datasets.Value("string")})


def test_synthesis_rows_have_the_columns_of_their_datasets():
    from crop_hf.data.features import ner_features
    from crop_hf.synthesis.rows import discarded_features, kept_features

    labels = ["O", "B-PER", "I-PER"]
    assert kept_features(labels) == ner_features(labels, extra={
        "source_translation": "string", "labeled_translation": "string", "back_translation": "string",
        "source_labels": ["string"], "projection_status": ["string"], "tokenization": "string"})
    assert list(discarded_features()) == ["text", "tokens", "projected_tags", "lang", "reason", "source_translation",
                                          "labeled_translation", "back_translation", "source_labels",
                                          "projection_status"]


def test_row_features_read_typing_optional_and_refuse_a_field_of_two_types():
    from dataclasses import dataclass

    @dataclass
    class Row:
        score: typing.Optional[float]  # noqa: UP045 - the spelling older rows use
        kept: bool

    assert row_features(Row) == datasets.Features({"score": datasets.Value("float64"), "kept": datasets.Value("bool")})

    @dataclass
    class Mixed:
        value: typing.Union[int, str]  # noqa: UP007

    with pytest.raises(TypeError, match=r"a row field may be one type or None, not typing.Union\[int, str\]"):
        row_features(Mixed)


def test_run_json_and_shard_statistics_are_sorted_readable_utf8(tmp_path):
    arguments = {"target": "Zürich", "batch": 2, "alpha": [1, 2]}
    store = ShardStore(tmp_path, arguments)
    store.write("de", 0, [{"kept": True, "row": "{}"}], {"kept": 1, "input": 3, "all_o": 2})
    run_json = (store.root / "run.json").read_text(encoding="utf-8")
    assert run_json == json.dumps(arguments, indent=2, sort_keys=True, ensure_ascii=False)
    assert '"target": "Zürich"' in run_json  # as typed, not \u00fc
    stats = (store.root / "de" / "00000.json").read_text(encoding="utf-8")
    assert stats == '{"all_o": 2, "input": 3, "kept": 1}'


@pytest.mark.parametrize(("value", "shown"), [
    ("München", '"München"'),
    (Path("raw") / "de.txt", '"raw/de.txt"'),
    ("x" * 38, '"' + "x" * 38 + '"'),  # 40 characters with the quotes: shown whole
    ("x" * 39, '"' + "x" * 36 + "..."),  # 41: cut to 37 and an ellipsis
])
def test_a_differing_setting_is_shown_as_json_cut_at_forty_characters(value, shown):
    assert shards._shown(value) == shown


def test_the_refusal_names_each_differing_setting_as_it_was_and_is(tmp_path):
    first = ShardStore(tmp_path, {"lang": "Zürich", "model": "a/" + "m" * 50, "same": 1})
    first.prepare()
    first.record_result(["de"])
    second = ShardStore(tmp_path, {"lang": "Köln", "model": "a/" + "n" * 50, "same": 1, "new": None})
    with pytest.raises(OutputExistsError) as refused:
        shards.check_output_dir(second, ["de"])
    message = str(refused.value)
    assert message.startswith(f"{tmp_path} holds a finished result of other settings (lang: \"Zürich\" there, "
                              "\"Köln\" here; model: \"a/mmmmm")
    assert "new: null there, null here" not in message and "same" not in message and "fingerprint" not in message
    assert message.endswith("pass --overwrite_output_dir to replace it (finished shards of either run are kept "
                            "and reused), or choose another --output_dir")
    shards.check_output_dir(second, ["de"], overwrite=True)  # asked for: no error


def test_six_differences_show_five_and_say_how_many_more(tmp_path):
    old = ShardStore(tmp_path, {f"o{k}": k for k in range(6)})
    old.prepare()
    old.record_result(["de"])
    with pytest.raises(OutputExistsError, match=r"o4: 4 there, null here and 1 more\)"):
        shards.check_output_dir(ShardStore(tmp_path, {}), ["de"])


def test_a_run_whose_run_json_is_gone_is_named_by_its_fingerprint(tmp_path):
    old = ShardStore(tmp_path, {"a": 1})
    old.prepare()
    old.record_result(["de"])
    (old.root / "run.json").unlink()
    new = ShardStore(tmp_path, {"a": 2})
    with pytest.raises(OutputExistsError, match=r"\(a: null there, 2 here\)"):
        shards.check_output_dir(new, ["de"])
    same_settings = ShardStore(tmp_path, {"a": 1})
    shards.check_output_dir(same_settings, ["de"])  # the fingerprint is in result.json: the same run resumes
    (old.root.parent / shards.RESULT_RECORD).write_text(json.dumps({"fingerprint": "0123abcd", "keys": ["de"]}))
    with pytest.raises(OutputExistsError, match=r"\(run 0123abcd there, [0-9a-f]+ here\)"):
        shards.check_output_dir(ShardStore(tmp_path, {}), ["de"])


def test_a_folder_from_before_result_json_is_judged_by_its_newest_run(tmp_path):
    import os

    for age, value in ((200, "old"), (100, "newest")):
        store = ShardStore(tmp_path, {"model": value})
        store.prepare()
        os.utime(store.root / "run.json", (1_700_000_000 - age, 1_700_000_000 - age))
    assert ShardStore(tmp_path, {}).finished_result() is None  # no statistics.json: nothing was merged
    (tmp_path / "statistics.json").write_text("{}")
    arguments, keys = ShardStore(tmp_path, {}).finished_result()
    assert arguments == {"model": "newest", "fingerprint": store.fingerprint} and keys is None
    shards.check_output_dir(ShardStore(tmp_path, {"model": "newest"}), ["de", "nl"])  # its keys are unknown
    with pytest.raises(OutputExistsError, match='model: "newest" there, "old" here'):
        shards.check_output_dir(ShardStore(tmp_path, {"model": "old"}), ["de"])


@pytest.mark.parametrize(("environ", "meant"), [
    ({}, None), ({"WORLD_SIZE": "1"}, None), ({"WORLD_SIZE": "4"}, "4"), ({"WORLD_SIZE": "2", "MASTER_ADDR": "h"}, "2"),
    ({"MASTER_ADDR": "127.0.0.1"}, None), ({"MASTER_PORT": "29500"}, None),
    ({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}, "several"),
])
def test_a_process_alone_is_warned_only_when_launched_for_several(environ, meant):
    level, line = processes.describe_processes(FakeState(0, 1), "synthesize", environ=environ)
    if meant is None:
        assert (level, line) == (logging.INFO, "synthesize: 1 process, taking every shard")
    else:
        assert (level, line) == (logging.WARNING, (
            f"synthesize: launched for {meant} processes but running alone (1 process): `accelerate launch` starts a "
            "single process on the CPU, and on GPUs without `accelerate config`; for N CPU processes use "
            "`ACCELERATE_USE_CPU=1 torchrun --standalone --nproc_per_node N -m crop_hf.cli ...`, for N GPUs "
            "`accelerate launch --multi_gpu --num_processes N -m crop_hf.cli ...`"))
    # as many processes as launched for: the shard line, no warning
    assert processes.describe_processes(FakeState(0, 2), "synthesize", environ=environ)[0] == logging.INFO


def test_many_processes_are_described_by_the_first_four():
    _, line = processes.describe_processes(FakeState(0, 6), "translate-align", environ={})
    assert line == ("translate-align: 6 processes; shard k goes to process k mod 6 (process 0: shards 0, 6, 12, ...; "
                    "process 1: shards 1, 7, 13, ...; process 2: shards 2, 8, 14, ...; process 3: shards 3, 9, 15, ...; "
                    "... process 5)")


@pytest.mark.parametrize(("flag", "cpu"), [("1", True), ("true", True), ("0", False), (None, False)])
def test_process_state_runs_on_the_cpu_when_accelerate_use_cpu_says_so(monkeypatch, flag, cpu):
    import accelerate

    made = []
    monkeypatch.setattr(accelerate, "PartialState", lambda **options: made.append(options) or "state")
    if flag is None:
        monkeypatch.delenv("ACCELERATE_USE_CPU", raising=False)
    else:
        monkeypatch.setenv("ACCELERATE_USE_CPU", flag)
    assert processes.process_state() == "state" and made == [{"cpu": cpu}]


def test_in_memory_inputs_are_described_by_their_datasets_fingerprint_or_their_type():
    rows = datasets.Dataset.from_dict({"text": ["a"]})
    assert shards.describe_inputs(rows) == rows._fingerprint
    assert shards.describe_inputs(iter([])) == "<class 'list_iterator'>"
    assert shards.describe_inputs({"nl": None, "de": [1]}) == {"de": "<class 'list'>", "nl": None}
    assert list(shards.describe_inputs({"nl": None, "de": [1]})) == ["de", "nl"]  # sorted: one fingerprint
    assert shards.describe_inputs(None) is None


def test_the_finished_result_is_read_as_utf8_whatever_the_locale(tmp_path):
    import locale

    old = ShardStore(tmp_path, {"city": "Zürich"})
    old.prepare()
    old.record_result(["de"])
    before = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")  # a user whose locale is plain ASCII
    try:
        arguments, keys = ShardStore(tmp_path, {}).finished_result()
        (tmp_path / "shards" / shards.RESULT_RECORD).unlink()
        (tmp_path / "statistics.json").write_text("{}")
        from_before, _ = ShardStore(tmp_path, {}).finished_result()  # the newest run.json, no result.json
    finally:
        locale.setlocale(locale.LC_CTYPE, before)
    assert arguments == {"city": "Zürich", "fingerprint": old.fingerprint} and keys == ["de"]
    assert from_before == {"city": "Zürich", "fingerprint": old.fingerprint}


def test_other_keys_come_first_and_five_differences_need_no_more(tmp_path):
    old = ShardStore(tmp_path, {"a": 1, "b": 2, "c": 3, "d": 4})
    old.prepare()
    old.record_result(["de", "nl"])
    with pytest.raises(OutputExistsError) as refused:
        shards.check_output_dir(ShardStore(tmp_path, {"a": 2}), ["de"])
    assert '(["de", "nl"] there, ["de"] here; a: 1 there, 2 here; b: 2 there, null here; c: 3 there, null here; ' \
           "d: 4 there, null here): " in str(refused.value)
    assert "more" not in str(refused.value)


def test_each_keys_bar_is_shown_on_the_main_process_only_and_the_start_says_who_takes_what(
        tmp_path, monkeypatch, caplog):
    import tqdm.auto

    bars = []
    real = tqdm.auto.tqdm
    monkeypatch.setattr(tqdm.auto, "tqdm", lambda **options: bars.append(options) or real(**options))
    for index, show in ((1, True), (0, True), (0, False)):
        job = ListJob(ListConfig(output_dir=str(tmp_path / f"{index}{show}"), keys=["de", "nl"], show_progress=show),
                      {"de": [], "nl": []})
        job.per_key, job.unit = " of each language", "sent"
        with caplog.at_level(logging.INFO, logger="crop_hf.engine.jobs"):
            run_as(monkeypatch, index, 2, job)
        assert (job.output_dir / "statistics.json").exists() == (index == 0)  # only the main process merges
    assert bars == [{"desc": f"list {key}", "unit": "sent", "disable": not shown}
                    for shown in (False, True, False) for key in ("de", "nl")]
    assert caplog.messages.count("list: 2 processes; shard k of each language goes to process k mod 2 "
                                 "(process 0: shards 0, 2, 4, ...; process 1: shards 1, 3, 5, ...)") == 2
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="crop_hf.engine.jobs"):
        run_as(monkeypatch, 0, 1, ListJob(ListConfig(output_dir=str(tmp_path / "plain")), {"xx": []}))
    assert "list: 1 process, taking every shard" in caplog.messages
    with caplog.at_level(logging.INFO, logger="crop_hf.engine.jobs"):
        run_as(monkeypatch, 0, 3, ListJob(ListConfig(output_dir=str(tmp_path / "three")), {"xx": []}))
    assert caplog.messages[-1].startswith("list: 3 processes; shard k goes to process k mod 3 (")


def test_merging_no_rows_gives_an_empty_dataset_of_the_row_features():
    features = datasets.Features({"tokens": datasets.List(datasets.Value("string")), "lang": datasets.Value("string")})
    empty = merge_shards([], kept=True, features=features)
    assert len(empty) == 0 and empty.features == features


def test_a_setting_with_non_ascii_text_keeps_the_fingerprint_earlier_runs_have():
    # A run written before with this input path resumes only while its folder keeps this name.
    assert fingerprint({"input": "raw/Zürich/{lang}.txt", "max_words": 12}) == "d2f4a4ed522b7f04"


def test_row_features_map_each_python_type_and_name_an_unknown_one():
    from dataclasses import dataclass

    @dataclass
    class Row:
        count: int
        share: float
        text: str
        flag: bool

    assert row_features(Row) == datasets.Features({"count": datasets.Value("int64"), "share": datasets.Value("float64"),
                                                   "text": datasets.Value("string"), "flag": datasets.Value("bool")})

    @dataclass
    class Odd:
        extra: dict

    with pytest.raises(TypeError, match="no datasets feature for a row field of type <class 'dict'>"):
        row_features(Odd)


def test_a_shard_stores_its_rows_as_readable_json_and_shows_each_stage_on_its_bar(tmp_path, monkeypatch):
    import tqdm.auto

    postfixes = []

    class Bar:
        def __init__(self, **options):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def set_postfix_str(self, text):
            postfixes.append(text)

        def update(self, count):
            pass

    monkeypatch.setattr(tqdm.auto, "tqdm", Bar)

    class Staged(ListJob):
        def process(self, key, index, items, status):
            status("translate")
            return ShardResult([TextRow("Zürich")], [])

    job = Staged(ListConfig(output_dir=str(tmp_path), keys=["de"]), {"de": [(0, ["x"]), (1, ["y"])]})
    run_as(monkeypatch, 0, 1, job)
    store = job.store
    assert postfixes == ["shard 0: translate", "shard 1: translate"]
    table = pq.read_table(store.root / "de" / "00000.parquet")
    assert table.column("row").to_pylist() == ['{"text": "Zürich"}']  # as written, not \u00fc


def test_the_temporary_file_of_an_atomic_write_is_hidden_beside_its_target(tmp_path, monkeypatch):
    import os

    moves = []
    real = os.replace
    monkeypatch.setattr(os, "replace", lambda source, target: moves.append(Path(source)) or real(source, target))
    target = tmp_path / "folder" / "00003.json"
    shards.atomic_write_bytes(target, b"{}")
    (moved,) = moves
    assert moved.parent == target.parent  # one file system: the rename is atomic
    assert moved.name.startswith(".00003.json.") and moved.name.endswith(".tmp")  # never read as a shard
    assert target.read_bytes() == b"{}" and list(target.parent.iterdir()) == [target]


def test_save_dataset_dict_clears_a_leftover_temporary_and_writes_an_empty_split_as_one_file(tmp_path):
    leftover = tmp_path / ".dataset.tmp"
    leftover.mkdir()
    (leftover / "stale.arrow").write_text("from a crashed save")
    splits = datasets.DatasetDict({"de": datasets.Dataset.from_dict({"x": [1, 2]}),
                                   "nl": datasets.Dataset.from_dict({"x": []}, features=datasets.Features(
                                       {"x": datasets.Value("int64")}))})
    save_dataset_dict(splits, tmp_path / "dataset")
    assert not leftover.exists() and not (tmp_path / "dataset" / "stale.arrow").exists()
    assert sorted(p.name for p in (tmp_path / "dataset" / "nl").glob("*.arrow")) == ["data-00000-of-00001.arrow"]
    assert datasets.load_from_disk(str(tmp_path / "dataset"))["nl"].num_rows == 0
