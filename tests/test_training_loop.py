"""NER training (crop_hf.ner on the training engine) on tiny models: learning, exact resume, LoRA, mixed precision."""

from __future__ import annotations

import json

import pytest
from training_fixtures import (  # noqa: F401  (pytest fixtures)
    fresh_accelerate_state,
    learned,
    learning_arguments,
    reset_accelerate,
    task_corpora,
    task_corpus,
    task_model_dir,
)

from crop_hf.ner import DataArguments, ModelArguments, NerTrainingArguments, train_ner

pytestmark = pytest.mark.slow


def test_learning_check_reaches_f1_above_0_9_on_held_out_sentences(learned):  # noqa: F811
    """Point 4: the script's code path (parse_arguments -> train_ner) learns the synthetic task in seconds."""
    validation, test = learned.evaluations
    assert [e.split for e in learned.evaluations] == ["validation", "test"]
    for evaluation in (validation, test):
        assert list(evaluation.languages) == ["en", "xx"]
        for lang, scores in evaluation.languages.items():
            assert scores.f1 > 0.9, (evaluation.split, lang, scores)
            assert scores.sentences == 60
            assert set(scores.per_type) == {"PER", "ORG", "LOC"}
        assert evaluation.average.f1 == pytest.approx(sum(s.f1 for s in evaluation.languages.values()) / 2)
    # The loss went down, and the weighted mix had 150 + 0.5 * 150 sentences per epoch.
    assert learned.step_losses[-1] < learned.step_losses[0] / 5
    results = json.loads((learned.output_dir / "all_results.json").read_text())
    assert results["train_sentences_per_epoch"] == 225
    assert results["test_xx_f1"] == pytest.approx(test.languages["xx"].f1)
    assert results["test_avg_f1"] == pytest.approx(test.average.f1)
    assert "model-index" in (learned.output_dir / "README.md").read_text()


def test_saved_model_scores_the_same_when_evaluated_again(learned, task_corpora):  # noqa: F811
    """What train_ner saved is what it evaluated: evaluate_pretrained on the folder gives the same F1."""
    from crop_hf.ner.evaluate import evaluate_pretrained

    again = evaluate_pretrained(str(learned.output_dir), [f"disk:{task_corpora['xx']}"], split="test")
    assert again.languages["xx"].f1 == pytest.approx(learned.evaluations[1].languages["xx"].f1)


def _weights(output_dir):
    from safetensors.torch import load_file

    return load_file(str(output_dir / "model.safetensors"))


@pytest.mark.parametrize("grouping", [False, True], ids=["shuffled", "grouped_by_length"])
def test_resume_from_checkpoint_continues_exactly(task_model_dir, task_corpora, tmp_path, grouping,  # noqa: F811
                                                  monkeypatch):
    """A run resumed mid-epoch from step 3 of 7 has the losses and final weights of the uninterrupted run.

    Dropout is on, accumulation spans 2 batches and the 0.5 weight re-samples a source every
    epoch, so batches, RNG state, optimizer, scheduler and accelerator step must all be restored
    (batches grouped by length too).
    """
    import torch

    import crop_hf.data.sources as sources

    grouped_epochs = []
    group = sources.length_grouped_order
    monkeypatch.setattr(sources, "length_grouped_order", lambda *a: grouped_epochs.append(1) or group(*a))

    common = {"max_train_steps": 7, "gradient_accumulation_steps": 2, "per_device_train_batch_size": 32,
              "eval_split": "", "test_split": "", "group_by_length": grouping}
    first = train_ner(*learning_arguments(task_model_dir, task_corpora, tmp_path / "full",
                                          checkpointing_steps=3, **common))
    assert (tmp_path / "full" / "step_3").is_dir() and (tmp_path / "full" / "step_6").is_dir()
    reset_accelerate()
    resumed = train_ner(*learning_arguments(task_model_dir, task_corpora, tmp_path / "resumed",
                                            resume_from_checkpoint=str(tmp_path / "full" / "step_3"), **common))
    assert resumed.completed_steps == first.completed_steps == 7
    assert bool(grouped_epochs) == grouping  # the option reaches NER training's sampler
    assert len(resumed.step_losses) == 4
    assert resumed.step_losses == pytest.approx(first.step_losses[3:], rel=1e-6, abs=1e-7)
    full, again = _weights(tmp_path / "full"), _weights(tmp_path / "resumed")
    assert full.keys() == again.keys()
    for name in full:
        torch.testing.assert_close(again[name], full[name], rtol=1e-6, atol=1e-7, msg=name)
    # ... and training after step 3 did change the weights (the comparison above is not vacuous).
    reset_accelerate()
    from safetensors.torch import load_file

    start = load_file(str(tmp_path / "full" / "step_3" / "model.safetensors"))
    assert not torch.equal(start["classifier.weight"], full["classifier.weight"])


def test_resume_latest_picks_the_newest_checkpoint(task_model_dir, task_corpora, tmp_path):  # noqa: F811
    common = {"max_train_steps": 4, "per_device_train_batch_size": 64, "eval_split": "", "test_split": ""}
    train_ner(*learning_arguments(task_model_dir, task_corpora, tmp_path, checkpointing_steps=2, **common))
    reset_accelerate()
    resumed = train_ner(*learning_arguments(task_model_dir, task_corpora, tmp_path,
                                            resume_from_checkpoint="latest", **common))
    assert resumed.completed_steps == 4 and resumed.step_losses == []  # step_4 was the last one


def test_lora_trains_adapters_and_saves_a_merged_model(task_model_dir, task_corpora, tmp_path):  # noqa: F811
    import torch
    from safetensors.torch import load_file

    model_args, data_args, training_args = learning_arguments(
        task_model_dir, task_corpora, tmp_path, max_train_steps=4, lora_r=4, eval_split="", test_split="")
    assert model_args.lora_r == 4
    train_ner(model_args, data_args, training_args)
    assert (tmp_path / "adapter" / "adapter_config.json").exists()
    before = load_file(str(task_model_dir / "model.safetensors"))
    after = _weights(tmp_path)
    query = next(k for k in after if k.endswith("attention.self.query.weight"))
    dense = next(k for k in after if k.endswith("intermediate.dense.weight"))
    assert not torch.equal(before[query], after[query])  # LoRA update merged into the adapted matrix
    torch.testing.assert_close(before[dense], after[dense])  # untouched: not a LoRA target
    assert not torch.equal(before["classifier.weight"], after["classifier.weight"])  # the head is trained in full


def test_a_saved_model_is_readable_by_others_as_the_umask_says(task_model_dir, task_corpora, tmp_path):  # noqa: F811
    """transformers' save_pretrained writes model.safetensors 0600; the saved folder honours the umask (issue 68)."""
    import os
    import stat

    before = os.umask(0o022)
    try:
        train_ner(*learning_arguments(task_model_dir, task_corpora, tmp_path, max_train_steps=1, eval_split="",
                                      test_split=""))
    finally:
        os.umask(before)
    modes = {path.name: stat.S_IMODE(path.stat().st_mode) for path in tmp_path.iterdir() if path.is_file()}
    assert "model.safetensors" in modes and set(modes.values()) == {0o644}, modes


def test_mixed_precision_flag_reaches_the_forward_pass(task_model_dir, task_corpora, tmp_path):  # noqa: F811
    """bf16 autocast on CPU changes the numerics of the very first loss (same weights, same batch)."""
    common = {"max_train_steps": 1, "eval_split": "", "test_split": ""}
    plain = train_ner(*learning_arguments(task_model_dir, task_corpora, tmp_path / "fp32", **common))
    reset_accelerate()
    mixed = train_ner(*learning_arguments(task_model_dir, task_corpora, tmp_path / "bf16", mixed_precision="bf16",
                                          **common))
    assert mixed.step_losses[0] == pytest.approx(plain.step_losses[0], rel=0.05)
    assert mixed.step_losses[0] != plain.step_losses[0]


def test_a_model_head_lacking_training_labels_is_an_error(tmp_path, task_corpora):  # noqa: F811
    """A PAN-X model (no MISC) trained on a corpus with MISC needs ignore_mismatched_sizes."""
    from crop_hf.demo_models import build_tiny_xlmr_ner
    from crop_hf.labels import PANX_LABELS, LabelConflictError

    panx_model = build_tiny_xlmr_ner(tmp_path / "panx", labels=PANX_LABELS, layers=1)
    corpus = task_corpus("en", train=8, held_out=4)
    rows = corpus["train"].to_list()
    rows[0]["ner_tags"][0] = 7  # B-MISC
    import datasets

    corpus["train"] = datasets.Dataset.from_list(rows, features=corpus["train"].features)
    args = (ModelArguments(model_name_or_path=str(panx_model)), DataArguments(train_sources=["c"], eval_sources=[]))
    with pytest.raises(LabelConflictError, match=r"lack \['B-MISC', 'I-MISC'\]"):
        train_ner(*args, NerTrainingArguments(output_dir=str(tmp_path / "out")), datasets={"c": corpus})
    reset_accelerate()
    result = train_ner(ModelArguments(model_name_or_path=str(panx_model), ignore_mismatched_sizes=True), args[1],
                       NerTrainingArguments(output_dir=str(tmp_path / "out"), max_train_steps=1, show_progress=False),
                       datasets={"c": corpus})
    assert result.label_set.names[:7] == PANX_LABELS.names and "B-MISC" in result.label_set.names
    from transformers import AutoConfig

    assert AutoConfig.from_pretrained(tmp_path / "out").id2label[7] == "B-MISC"


def test_a_learning_curve_scores_the_first_evaluation_split_and_ends_at_the_last_step(
        task_model_dir, task_corpora, tmp_path):  # noqa: F811
    """Periodic evaluation came with the training engine: every family has it, NER included."""
    result = train_ner(*learning_arguments(task_model_dir, task_corpora, tmp_path, max_train_steps=3, eval_steps=2,
                                           max_eval_samples=8, test_split=""))
    assert [point["step"] for point in result.history] == [2, 3]
    assert {"validation_en_f1", "validation_xx_f1", "validation_avg_f1"} <= set(result.history[-1]["scores"])
    assert result.history[-1]["loss"] == result.step_losses[-1] and result.history[-1]["tokens_per_second"] > 0
    results = json.loads((tmp_path / "all_results.json").read_text())
    assert results["history"] == json.loads(json.dumps(result.history))
    assert results["validation_avg_f1"] == result.evaluations[0].average.f1
