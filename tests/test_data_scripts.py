"""dataset_scripts/: parquet + card written from our builders load back as the same rows."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import datasets
import pytest
from data_fixtures import FIXTURES, build, data_cache  # noqa: F401  (pytest fixtures)

from crop_hf.cli import main

SCRIPTS = Path(__file__).resolve().parents[1] / "dataset_scripts"


def test_cstop_script_writes_parquet_that_loads_as_the_builder(tmp_path, build, data_cache):  # noqa: F811
    out = tmp_path / "cstop"
    env = {**os.environ, "HF_DATASETS_CACHE": str(tmp_path / "hf")}
    result = subprocess.run(
        [sys.executable, str(SCRIPTS / "build_cstop.py"), "--data-dir", str(FIXTURES / "cstop"),
         "--output-dir", str(out), "--cache-dir", str(data_cache)],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in (out / "default").iterdir()) == [
        "test-00000-of-00001.parquet", "train-00000-of-00001.parquet", "validation-00000-of-00001.parquet"]
    card = (out / "README.md").read_text()
    assert "config_name: default" in card and "| default | 5 | 2 | 3 |" in card
    loaded = datasets.load_dataset(str(out), "default", cache_dir=str(tmp_path / "hf"))
    expected = build("cstop", None, FIXTURES / "cstop")
    for split in expected:
        assert loaded[split].to_list() == expected[split].to_list()


def test_conll5_parquet_keeps_rows_and_class_labels(tmp_path, shared_data, build, data_cache):  # noqa: F811
    out = tmp_path / "conll5"
    assert main(["build-dataset", "--name", "conll5", "--configs", "es", "--data-dir", str(shared_data / "conll2002"),
                 "--output-dir", str(out), "--cache-dir", str(data_cache)]) == 0
    loaded = datasets.load_dataset(str(out), "es", cache_dir=str(tmp_path / "hf"))
    expected = build("conll5", "es", shared_data / "conll2002")
    assert loaded["train"].features == expected["train"].features
    for split in expected:
        assert loaded[split].num_rows == expected[split].num_rows
        assert loaded[split]["ner_tags"] == expected[split]["ner_tags"]
        assert loaded[split]["tokens"] == expected[split]["tokens"]
    card = (out / "README.md").read_text()
    assert "O B-PER I-PER B-ORG I-ORG B-LOC I-LOC B-MISC I-MISC" in card and "| es | 8323 | 1915 | 1517 |" in card


def test_push_to_hub_uploads_each_config_and_the_card(monkeypatch, build):  # noqa: F811
    calls = []
    monkeypatch.setattr(datasets.DatasetDict, "push_to_hub",
                        lambda self, repo_id, config_name, **kw: calls.append(("data", repo_id, config_name)))
    from huggingface_hub import DatasetCard

    monkeypatch.setattr(DatasetCard, "push_to_hub", lambda self, repo_id, **kw: calls.append(("card", repo_id, self.content)))
    built = {"v2": build("top", "v2", FIXTURES / "topv2", domains=("weather",))}
    from crop_hf.hub import push_corpus

    push_corpus(built, "org/top", "top")
    assert calls[0] == ("data", "org/top", "v2")
    assert calls[1][:2] == ("card", "org/top") and "path: v2/train-*" in calls[1][2]


def test_script_needs_a_target(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["build-dataset", "--name", "cstop", "--data-dir", str(FIXTURES / "cstop")])
    assert exit_info.value.code == 2
    assert "give exactly one of output_dir (write parquet) and push_to_hub (upload)" in capsys.readouterr().err
