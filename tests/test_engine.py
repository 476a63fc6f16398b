"""The training engine on a toy task (a tiny torch model learning a linear map): resume, time budget, curve, results."""

from __future__ import annotations

import itertools
import json

import pytest
import torch
from training_fixtures import fresh_accelerate_state, reset_accelerate  # noqa: F401  (pytest fixture)

from crop_hf.engine import training as engine
from crop_hf.engine.arguments import TrainingLoopArguments, hyperparameters
from crop_hf.engine.checkpoints import STATE_FILE
from crop_hf.engine.training import TrainingTask, start, train, write_all_results


class Toy(torch.nn.Module):
    """A regression network with a norm (no weight decay) and dropout (resume must redraw the same masks)."""

    def __init__(self) -> None:
        super().__init__()
        self.hidden = torch.nn.Linear(4, 16)
        self.norm = torch.nn.LayerNorm(16)
        self.dropout = torch.nn.Dropout(0.2)
        self.out = torch.nn.Linear(16, 1)

    def forward(self, x):
        return self.out(self.dropout(torch.relu(self.norm(self.hidden(x))))).squeeze(-1)


class EpochOrder(torch.utils.data.Sampler):
    """A permutation from seed and epoch alone, as the families' samplers are."""

    def __init__(self, size: int, seed: int) -> None:
        self.size, self.seed, self.epoch = size, seed, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return self.size

    def __iter__(self):
        generator = torch.Generator().manual_seed(self.seed * 1000 + self.epoch)
        return iter(torch.randperm(self.size, generator=generator).tolist())


def toy_rows(n: int = 24) -> list[dict]:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(n, 4, generator=generator)
    y = x @ torch.tensor([1.0, -2.0, 0.5, 3.0])
    return [{"x": x[i], "y": y[i]} for i in range(n)]


def toy_args(tmp_path, name: str = "out", **overrides) -> TrainingLoopArguments:
    options = {"per_device_train_batch_size": 4, "learning_rate": 0.03, "max_train_steps": 8,
               "gradient_accumulation_steps": 2, "show_progress": False, "seed": 7, **overrides}
    return TrainingLoopArguments(output_dir=str(tmp_path / name), **options)


def run_toy(args: TrainingLoopArguments, **task) -> engine.TrainingRun:
    reset_accelerate()
    accelerator = start(args, cpu=True)
    model = Toy()  # after start(): the seed fixes its initial weights
    rows = toy_rows()
    loader = torch.utils.data.DataLoader(rows, batch_size=args.per_device_train_batch_size,
                                         sampler=EpochOrder(len(rows), args.seed),
                                         generator=torch.Generator().manual_seed(args.seed))
    options = {"loss": lambda model, batch: torch.nn.functional.mse_loss(model(batch["x"]), batch["y"]),
               "tokens": lambda batch: len(batch["y"]), **task}
    return train(TrainingTask(model, loader, **options), args, accelerator)


def test_the_toy_task_learns_and_checkpoints_follow_the_contract(tmp_path):
    run = run_toy(toy_args(tmp_path, max_train_steps=30, checkpointing_steps="5", learning_rate=0.1))
    assert run.completed_steps == 30 == len(run.step_losses)
    assert sum(run.step_losses[-6:]) < 0.4 * sum(run.step_losses[:6])
    # 24 rows / 4 per batch = 6 batches, 3 optimizer steps an epoch: step 5 is batch 4 of epoch 1
    state = json.loads((tmp_path / "out" / "step_5" / STATE_FILE).read_text())
    assert state == {"completed_steps": 5, "epoch": 1, "batches_in_epoch": 4}
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [f"step_{n}" for n in (10, 15, 20, 25, 30, 5)]
    assert run.history == []  # no curve asked


@pytest.mark.parametrize("cut", ["step_3", "step_4"], ids=["at_an_epoch_end", "inside_an_epoch"])
def test_resume_gives_the_step_losses_and_weights_of_an_uninterrupted_run(tmp_path, cut):
    full = run_toy(toy_args(tmp_path, "full", checkpointing_steps="1"))
    resumed = run_toy(toy_args(tmp_path, "full", checkpointing_steps=None,
                               resume_from_checkpoint=str(tmp_path / "full" / cut)))
    steps = int(cut.split("_")[1])
    assert resumed.completed_steps == 8
    assert resumed.step_losses == pytest.approx(full.step_losses[steps:], abs=1e-6)
    a, b = full.unwrapped().state_dict(), resumed.unwrapped().state_dict()
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)


def test_resume_latest_picks_the_checkpoint_with_the_most_steps(tmp_path):
    full = run_toy(toy_args(tmp_path, "run", checkpointing_steps="3"))
    resumed = run_toy(toy_args(tmp_path, "run", resume_from_checkpoint="latest"))
    assert resumed.step_losses == pytest.approx(full.step_losses[6:], abs=1e-6)


class FakeClock:
    """``time.perf_counter`` that moves only when the task says: 6 s per batch, 60 s per evaluation."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_time_budget_stops_training_without_counting_evaluation_and_the_curve_ends_at_the_last_step(
        tmp_path, monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(engine.time, "perf_counter", clock)

    def loss(model, batch):
        clock.now += 6.0  # a tenth of a minute per batch
        return torch.nn.functional.mse_loss(model(batch["x"]), batch["y"])

    def evaluate(model):
        clock.now += 60.0  # a whole minute of evaluation, which the budget must not count
        return {"calls": 1}

    run = run_toy(toy_args(tmp_path, max_train_steps=100, gradient_accumulation_steps=1, max_train_minutes=1.0,
                           eval_steps=3), loss=loss, evaluate=evaluate)
    assert run.out_of_time and run.completed_steps == 10 == len(run.step_losses)
    assert [point["step"] for point in run.history] == [3, 6, 9, 10]  # ends where the budget ran out
    assert run.history[-1]["train_minutes"] == pytest.approx(1.0)
    assert run.history[-1]["tokens_per_second"] == pytest.approx(10 * 4 / 60)
    assert run.history[1] == {"step": 6, "train_minutes": pytest.approx(0.6), "tokens_per_second": pytest.approx(4 / 6),
                              "loss": run.step_losses[5], "scores": {"calls": 1}}
    assert run.train_minutes == pytest.approx(1.0)


def test_a_curve_by_steps_ends_at_the_last_step_too(tmp_path):
    run = run_toy(toy_args(tmp_path, max_train_steps=5, gradient_accumulation_steps=1, eval_steps=2))
    assert [point["step"] for point in run.history] == [2, 4, 5]
    assert not run.out_of_time and "scores" not in run.history[0]


def test_a_passed_accelerator_must_accumulate_as_the_arguments_say(tmp_path):
    from accelerate import Accelerator

    with pytest.raises(ValueError, match=r"gradient_accumulation_steps \(1\) differs from the arguments' \(2\)"):
        start(toy_args(tmp_path, gradient_accumulation_steps=2), Accelerator(cpu=True))


def test_all_results_are_written_atomically_with_sorted_keys(tmp_path):
    path = tmp_path / "deep" / "all_results.json"
    assert write_all_results(path, {"train_loss": 0.5, "b": [1], "a": {"z": 1, "y": 2}})["train_loss"] == 0.5
    assert path.read_text() == json.dumps({"a": {"y": 2, "z": 1}, "b": [1], "train_loss": 0.5}, indent=2) + "\n"
    with pytest.raises(TypeError):
        write_all_results(path, {"bad": object()})
    assert json.loads(path.read_text())["train_loss"] == 0.5  # a failed write leaves the old file whole
    assert [p.name for p in path.parent.iterdir() if p.name != "all_results.json"] in ([], ["all_results.json.tmp"])


def test_arguments_warmup_checkpoints_and_hyperparameters():
    args = TrainingLoopArguments(output_dir="o", checkpointing_steps="epoch", warmup_ratio=0.1, hub_token="secret")
    assert args.checkpoint_every() == "epoch" and args.warmup(95) == 10
    assert TrainingLoopArguments(output_dir="o", warmup_steps=3).warmup(95) == 3
    with pytest.raises(ValueError, match="positive integer or 'epoch'"):
        TrainingLoopArguments(output_dir="o", checkpointing_steps="0").checkpoint_every()
    flat = hyperparameters(args, total_train_batch_size=48)
    assert "hub_token" not in flat and flat["total_train_batch_size"] == 48 and flat["learning_rate"] == 2e-5


def test_every_family_keeps_its_defaults_and_parses_the_shared_options():
    from crop_hf.arguments import parse_config
    from crop_hf.ner.arguments import ARGUMENT_CLASSES as NER
    from crop_hf.parsing.arguments import ARGUMENT_CLASSES as PARSER
    from crop_hf.translation.arguments import ARGUMENT_CLASSES as TRANSLATION

    shared = ["--output_dir", "o", "--max_train_minutes", "5", "--eval_steps", "10", "--eval_minutes", "2",
              "--lr_scheduler_type", "cosine", "--warmup_steps", "7"]
    expected = {"ner": (24, 2e-5, 0.01, 0.1, 3.0), "parser": (32, 3e-5, 0.01, 0.1, 10.0),
                "translation": (16, 5e-5, 0.0, 0.05, 3.0)}
    for name, classes, extra in (("ner", NER, ["--model_name_or_path", "m"]), ("parser", PARSER, []),
                                 ("translation", TRANSLATION, [])):
        *_, args = parse_config(classes, [*extra, *shared])
        assert (args.per_device_train_batch_size, args.learning_rate, args.weight_decay, args.warmup_ratio,
                args.num_train_epochs) == expected[name], name
        assert (args.max_train_minutes, args.eval_steps, args.eval_minutes, args.lr_scheduler_type,
                args.warmup_steps) == (5.0, 10, 2.0, "cosine", 7), name


def test_after_step_sees_the_unwrapped_model_once_per_optimizer_step_after_the_update(tmp_path):
    seen = []
    run = run_toy(toy_args(tmp_path, max_train_steps=5),  # 2 micro-batches per optimizer step
                  after_step=lambda model: seen.append((type(model), model.out.weight.detach().clone())))
    assert len(seen) == 5 and all(kind is Toy for kind, _ in seen)
    weights = [w for _, w in seen]
    assert all(not torch.equal(a, b) for a, b in itertools.pairwise(weights))  # after each update
    assert torch.equal(weights[-1], run.unwrapped().out.weight)


def test_the_former_name_of_the_loop_arguments_still_imports_with_a_deprecation_message():
    with pytest.warns(FutureWarning, match="renamed TrainingLoopArguments"):
        from crop_hf.engine.arguments import TrainingArguments
    assert TrainingArguments is TrainingLoopArguments
