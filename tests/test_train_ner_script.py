"""examples/train_ner.py as users run it: `accelerate launch --cpu` with a YAML file, and 2 CPU processes via torchrun."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from training_fixtures import (  # noqa: F401  (pytest fixtures)
    fresh_accelerate_state,
    reset_accelerate,
    task_corpora,
    task_model_dir,
)

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "train_ner.py"


def _env():
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", OMP_NUM_THREADS="1",
               TOKENIZERS_PARALLELISM="false", PYTHONPATH=str(ROOT))
    env.pop("ACCELERATE_CONFIG_FILE", None)
    return env


def _run(command, env=None, timeout=180):
    result = subprocess.run(command, capture_output=True, text=True, env=env or _env(), cwd=ROOT, timeout=timeout,
                            check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    return result


def test_accelerate_launch_cpu_with_a_yaml_config(task_model_dir, task_corpora, tmp_path):  # noqa: F811
    import yaml

    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({
        "model_name_or_path": str(task_model_dir),
        "train_sources": [f"disk:{task_corpora['en']}"],
        "eval_sources": [f"disk:{task_corpora['en']}", f"disk:{task_corpora['xx']}"],
        "test_split": None, "per_device_train_batch_size": 16, "learning_rate": "5e-3",
        "num_train_epochs": 3, "output_dir": str(tmp_path / "out"), "show_progress": False,
    }))
    # `accelerate launch` is `python -m accelerate.commands.launch` where the console script is missing.
    launch = [shutil.which("accelerate"), "launch"] if shutil.which("accelerate") else \
        [sys.executable, "-m", "accelerate.commands.launch"]
    result = _run([*launch, "--cpu", "--num_processes", "1", "--num_machines", "1", "--mixed_precision", "no",
                   "--dynamo_backend", "no", str(SCRIPT), str(config), "--max_train_steps", "12"])
    results = json.loads((tmp_path / "out" / "all_results.json").read_text())
    assert results["train_steps"] == 12  # the command line overrode the file's epochs
    assert results["num_processes"] == 1
    assert "test_en_f1" not in results and results["validation_xx_sentences"] == 60
    header = next(line for line in result.stdout.splitlines() if line.startswith("validation"))
    assert header.split() == ["validation", "en", "xx", "avg"]
    assert (tmp_path / "out" / "README.md").read_text().count("type: f1") == 2


def test_two_cpu_processes_with_torchrun(task_model_dir, task_corpora, tmp_path):  # noqa: F811
    """Two ranks share the batches and the evaluation; gathered scores equal a one-process evaluation."""
    from crop_hf.ner.evaluate import evaluate_pretrained

    env = dict(_env(), ACCELERATE_USE_CPU="1")
    out = tmp_path / "out"
    torchrun = [shutil.which("torchrun")] if shutil.which("torchrun") else [sys.executable, "-m", "torch.distributed.run"]
    _run([*torchrun, "--standalone", "--nproc_per_node", "2",
          str(SCRIPT), "--model_name_or_path", str(task_model_dir),
          "--train_sources", f"disk:{task_corpora['en']}", f"disk:{task_corpora['xx']}",
          "--eval_sources", f"disk:{task_corpora['xx']}", "--eval_split", "", "--max_eval_samples", "59",
          "--per_device_train_batch_size", "8", "--learning_rate", "5e-3", "--max_train_steps", "10",
          "--checkpointing_steps", "5", "--output_dir", str(out), "--no_show_progress"], env=env)
    results = json.loads((out / "all_results.json").read_text())
    assert results["num_processes"] == 2
    assert results["test_xx_sentences"] == 59  # odd count: the padding rows of the last batch were dropped
    assert (out / "step_5" / "crop_hf_state.json").exists() and (out / "step_10").is_dir()
    alone = evaluate_pretrained(str(out), [f"disk:{task_corpora['xx']}"], split="test", max_samples=59)
    assert results["test_xx_f1"] == pytest.approx(alone.languages["xx"].f1)
    assert results["test_xx_precision"] == pytest.approx(alone.languages["xx"].precision)


def test_train_and_evaluate_on_the_real_conll5_builder(shared_data, tiny_xlmr_ner, tmp_path):
    """`conll5:es` / `conll5:nl` specs go through crop_hf.load_dataset with the real CoNLL-2002 files."""
    pytest.importorskip("crop_hf.data.conll5")
    from crop_hf.labels import CONLL_LABELS
    from crop_hf.ner import parse_arguments, train_ner

    data_dir = shared_data / "conll2002"
    result = train_ner(*parse_arguments([
        "--model_name_or_path", str(tiny_xlmr_ner), "--train_sources", f"conll5:es?data_dir={data_dir}",
        "--eval_sources", f"conll5:nl?data_dir={data_dir}", "--max_train_samples", "32", "--max_eval_samples", "20",
        "--max_train_steps", "2", "--per_device_train_batch_size", "16", "--output_dir", str(tmp_path),
        "--no_show_progress"]))
    assert result.label_set == CONLL_LABELS
    assert [e.split for e in result.evaluations] == ["validation", "test"]
    assert all(list(e.languages) == ["nl"] and e.languages["nl"].sentences == 20 for e in result.evaluations)
    card = (tmp_path / "README.md").read_text()
    assert "type: conll5" in card and "config: nl" in card


def test_push_to_hub_sends_the_trained_folder_with_its_card(task_model_dir, task_corpora, tmp_path, monkeypatch):  # noqa: F811
    import huggingface_hub
    from test_cards import RecordingApi

    from crop_hf.ner import parse_arguments, train_ner

    api = RecordingApi()
    seen = {}

    def upload_folder(**kwargs):
        seen["files"] = sorted(p.name for p in Path(kwargs["folder_path"]).iterdir())
        seen["card"] = (Path(kwargs["folder_path"]) / "README.md").read_text()
        api.calls.append(("upload_folder", kwargs["repo_id"], kwargs))

    api.upload_folder = upload_folder
    monkeypatch.setattr(huggingface_hub, "HfApi", lambda token=None: api)
    train_ner(*parse_arguments([
        "--model_name_or_path", str(task_model_dir), "--train_sources", f"disk:{task_corpora['en']}",
        "--eval_sources", f"disk:{task_corpora['xx']}", "--eval_split", "", "--max_train_steps", "1",
        "--output_dir", str(tmp_path), "--push_to_hub", "--hub_model_id", "me/tiny-ner", "--no_show_progress"]))
    assert [(c[0], c[1]) for c in api.calls] == [("create_repo", "me/tiny-ner"), ("upload_folder", "me/tiny-ner")]
    assert {"README.md", "all_results.json", "model.safetensors", "config.json"} <= set(seen["files"])
    assert "name: me/tiny-ner" in seen["card"] and "split: test" in seen["card"]
