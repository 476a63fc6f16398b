"""Parser training: it learns real data, resumes exactly, stages with new labels, samples few-shot sets."""

from __future__ import annotations

import json
from collections import Counter

import pytest
import torch

from crop_hf.parsing.arguments import ParserDataArguments, ParserModelArguments, ParserTrainingArguments
from crop_hf.parsing.data import load_parse_rows
from crop_hf.parsing.evaluate import evaluate_parser
from crop_hf.parsing.train import train_parser


def _toy():
    import datasets

    rows = {
        "tokens": [["weather", "in", "Paris"], ["timer", "for", "Monday"], ["weather", "Gothenburg"],
                   ["timer", "now"]] * 4,
        "intent": ["GET_WEATHER", "SET_TIMER", "GET_WEATHER", "SET_TIMER"] * 4,
        "slot_tags": [["O", "O", "B-LOCATION"], ["O", "O", "B-DATE_TIME"], ["O", "B-LOCATION"], ["O", "O"]] * 4,
    }
    data = datasets.Dataset.from_dict(rows)
    return datasets.DatasetDict({"train": data, "validation": data})


def _args(tiny_bert, out, **training):
    return (ParserModelArguments(model_name_or_path=str(tiny_bert)),
            ParserDataArguments(train_sources=["toy"], eval_split=None),
            ParserTrainingArguments(output_dir=str(out), learning_rate=5e-3, per_device_train_batch_size=4,
                                    show_progress=False, **training))


@pytest.mark.parametrize("options", [{}, {"ema_decay": 0.7}, {"group_by_length": True}],
                         ids=["weights", "moving_average", "grouped_by_length"])
def test_resume_from_a_checkpoint_ends_exactly_where_an_uninterrupted_run_ends(tiny_bert, tmp_path, options):
    from safetensors.torch import load_file

    toy = _toy()
    full = train_parser(*_args(tiny_bert, tmp_path / "full", max_train_steps=6, checkpointing_steps="3",
                               **options), datasets={"toy": toy})
    assert (tmp_path / "full" / "step_3").is_dir() and full.completed_steps == 6
    import shutil

    shutil.copytree(tmp_path / "full" / "step_3", tmp_path / "resumed" / "step_3")
    resumed = train_parser(*_args(tiny_bert, tmp_path / "resumed", max_train_steps=6, checkpointing_steps="3",
                                  resume_from_checkpoint="latest", **options), datasets={"toy": toy})
    assert resumed.step_losses == pytest.approx(full.step_losses[3:], abs=1e-6)
    a = load_file(tmp_path / "full" / "model.safetensors")
    b = load_file(tmp_path / "resumed" / "model.safetensors")
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)


def test_group_by_length_batches_utterances_of_similar_length(tiny_bert, tmp_path, monkeypatch):
    import datasets

    import crop_hf.parsing.predict as predict

    widths: list[tuple[int, int]] = []  # (longest, shortest) utterance in words of each training batch
    collate = predict.collate

    def spying(rows, pad_token_id):
        if "span_targets" not in rows[0] and "slot_labels" in rows[0]:
            lengths = [len(row["slot_labels"]) for row in rows]
            widths.append((max(lengths), min(lengths)))
        return collate(rows, pad_token_id)

    monkeypatch.setattr(predict, "collate", spying)
    # utterances of 2 and 3 words, 100 each: a length group of transformers' grouping is 12 batches of 4
    # here (48 rows sorted by length), so at most one batch of a group mixes the two lengths
    toy = datasets.concatenate_datasets([_toy()["train"]] * 12 + [_toy()["train"].select(range(8))])
    for grouped in (False, True):
        widths.clear()
        train_parser(*_args(tiny_bert, tmp_path / str(grouped), max_train_steps=8, group_by_length=grouped),
                     datasets={"toy": toy})
        mixed = sum(longest != shortest for longest, shortest in widths[:8])  # Accelerate reads one batch ahead
        assert (mixed <= 1) if grouped else (mixed >= 4), widths


def test_staged_recipe_extends_labels_and_keeps_what_stage_one_learned(tiny_bert, tmp_path, monkeypatch):
    import datasets

    from crop_hf.modeling import JointIntentSlotModel
    from crop_hf.parsing.train import _extend_labels

    toy = _toy()
    first = toy["train"].filter(lambda r: r["intent"] == "GET_WEATHER")
    train_parser(*_args(tiny_bert, tmp_path / "stage1", max_train_steps=3),
                 datasets={"toy": datasets.DatasetDict({"train": first})})
    stage1 = JointIntentSlotModel.from_pretrained(tmp_path / "stage1").eval()
    assert stage1.config.intent_labels == ["GET_WEATHER"] and "B-DATE_TIME" not in stage1.config.slot_labels
    grown = _extend_labels(stage1, ["GET_WEATHER", "SET_TIMER"],
                           [*stage1.config.slot_labels, "B-DATE_TIME", "I-DATE_TIME"]).eval()
    from transformers import AutoTokenizer

    from crop_hf.parsing.predict import collate, encode_words

    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "stage1")
    encoded = encode_words(tokenizer, [["weather", "in", "Paris"]], 32)
    batch = collate([{k: encoded[k][0] for k in encoded}], tokenizer.pad_token_id)
    with torch.no_grad():
        old, new = stage1(**batch), grown(**batch)
    assert torch.allclose(old.intent_logits, new.intent_logits[:, :1], atol=1e-6)
    assert torch.allclose(old.slot_emissions, new.slot_emissions[..., : len(stage1.config.slot_labels)], atol=1e-6)

    pushed = []
    import crop_hf.hub

    monkeypatch.setattr(crop_hf.hub, "push_folder", lambda folder, repo, **kw: pushed.append(
        (repo, sorted(p.name for p in folder.iterdir()))))
    model_args, data_args, training_args = _args(tiny_bert, tmp_path / "stage2", max_train_steps=2,
                                                 push_to_hub=True, hub_model_id="me/parser")
    model_args.init_from = str(tmp_path / "stage1")
    data_args.eval_split = "validation"
    train_parser(model_args, data_args, training_args, datasets={"toy": toy})
    stage2 = JointIntentSlotModel.from_pretrained(tmp_path / "stage2")
    assert stage2.config.intent_labels == ["GET_WEATHER", "SET_TIMER"]
    card = (tmp_path / "stage2" / "README.md").read_text()
    assert "Stage 2 of the staged recipe" in card and str(tmp_path / "stage1") in card
    assert "| all | 16 |" in card and "`toy`" in card  # the metric table and the data
    assert pushed and pushed[0][0] == "me/parser" and "README.md" in pushed[0][1] and "crf.py" in pushed[0][1]


def test_example_script_reads_yaml_and_mixes_disk_sources(tiny_bert, tmp_path):
    import runpy

    toy = _toy()
    toy.save_to_disk(tmp_path / "a")
    toy["train"].select(range(4)).save_to_disk(tmp_path / "b")
    config = tmp_path / "parser.yaml"
    config.write_text(f"model_name_or_path: {tiny_bert}\ntrain_sources: [disk:{tmp_path / 'a'}, disk:{tmp_path / 'b'}]\n"
                      f"train_weights: [1.0, 0.5]\noutput_dir: {tmp_path / 'out'}\n"
                      "max_train_steps: 2\nshow_progress: false\n")
    script = runpy.run_path("examples/train_parser.py")
    assert script["main"]([str(config), "--learning_rate", "1e-3"]) == 0
    results = json.loads((tmp_path / "out" / "all_results.json").read_text())
    assert results["train_utterances_per_epoch"] == 16 + 2 and results["train_steps"] == 2


@pytest.mark.slow
def test_parser_learns_a_small_real_subset(shared_data, tmp_path):
    """A from-scratch tiny encoder fits 160 real Hinglish-TOP utterances of two domains (majority intent: ~40%)."""
    import datasets

    import crop_hf
    from crop_hf.demo_models import build_tiny_bert

    ds = crop_hf.load_dataset("hinglish_top", data_dir=str(shared_data / "hinglish-top"), cache_dir=str(tmp_path))
    flat = ds["train"].filter(lambda r: not r["nested"])
    subset = datasets.concatenate_datasets([flat.filter(lambda r, d=d: r["domain"] == d).select(range(80))
                                            for d in ("timer", "weather")])
    encoder = build_tiny_bert(tmp_path / "encoder", corpus=[" ".join(t) for t in subset["tokens"]],
                              vocab_size=600, hidden_size=64, layers=1)

    train_parser(ParserModelArguments(model_name_or_path=str(encoder)),
                 ParserDataArguments(train_sources=["sub"], eval_split=None),
                 ParserTrainingArguments(output_dir=str(tmp_path / "out"), learning_rate=5e-3, max_train_steps=300,
                                         per_device_train_batch_size=16, show_progress=False),
                 datasets={"sub": datasets.DatasetDict({"train": subset})})
    from transformers import AutoTokenizer

    from crop_hf.modeling import JointIntentSlotModel

    model = JointIntentSlotModel.from_pretrained(tmp_path / "out")
    scores, _ = evaluate_parser(model, AutoTokenizer.from_pretrained(tmp_path / "out"), subset)
    majority = Counter(subset["intent"]).most_common(1)[0][1] / len(subset)
    # Measured over PYTHONHASHSEED 1-3 (the WordPiece vocabulary varies with it): intent 0.81-0.89,
    # exact match 0.80-0.89, slot F1 0.996-1.0; an untrained model sits near the majority intent.
    assert majority < 0.5 and scores["intent_accuracy"] > majority + 0.25, scores
    assert scores["exact_match"] > 0.7 and scores["slot_f1"] > 0.9, scores
    results = json.loads((tmp_path / "out" / "all_results.json").read_text())
    assert results["train_steps"] == 300


def test_english_side_and_few_shot_sampler_on_real_data(shared_data, tmp_path):
    import crop_hf
    from crop_hf.parsing.fewshot import CSTOP_SEEDS, few_shot_indices

    ds = crop_hf.load_dataset("hinglish_top", data_dir=str(shared_data / "hinglish-top"), cache_dir=str(tmp_path))
    english = load_parse_rows("hinglish_top#en", "train", dataset=ds)
    assert english[0]["tokens"] == ds["train"][0]["en_tokens"] and english[0]["parse"] == ds["train"][0]["en_parse"]
    with pytest.raises(KeyError, match="test"):
        load_parse_rows("hinglish_top", "test", dataset=ds)
    train = ds["train"]
    labels = {f"IN:{i}" for i in train["intent"]} | {f"SL:{t[2:]}" for ts in train["slot_tags"] for t in ts if t != "O"}
    draws = []
    for seed in CSTOP_SEEDS:
        picked = few_shot_indices(train["intent"], train["slot_tags"], 100, seed)
        covered = {f"IN:{train[i]['intent']}" for i in picked} | {
            f"SL:{t[2:]}" for i in picked for t in train[i]["slot_tags"] if t != "O"}
        assert covered == labels and len(picked) == 100 and len(set(picked)) == 100
        draws.append(set(picked))
    assert draws[0] != draws[1] != draws[2]
    assert few_shot_indices(train["intent"], train["slot_tags"], 100, 0) == sorted(draws[0])


def test_label_sets_keep_model_ids_first_and_reject_non_iob2_tags():
    import datasets

    from crop_hf.modeling import JointParserConfig
    from crop_hf.parsing.data import label_sets as _label_sets

    data = datasets.Dataset.from_dict({"intent": ["B", "A"], "slot_tags": [["B-Y", "I-Y"], ["I-X"]]})
    assert _label_sets([data]) == (["A", "B"], ["O", "B-X", "I-X", "B-Y", "I-Y"])
    old = JointParserConfig(intent_labels=["B"], slot_labels=["O", "B-Y", "I-Y"])
    assert _label_sets([data], old) == (["B", "A"], ["O", "B-Y", "I-Y", "B-X", "I-X"])
    bioes = datasets.Dataset.from_dict({"intent": ["A"], "slot_tags": [["S-X"]]})
    with pytest.raises(ValueError, match="must be IOB2"):
        _label_sets([bioes])


def test_learning_curve_and_time_budget_reach_the_parser(tiny_bert, tmp_path):
    """The training engine's periodic evaluation and time budget, through train_parser's options."""
    model_args, data_args, training_args = _args(tiny_bert, tmp_path / "curve", max_train_steps=4, eval_steps=3)
    data_args.eval_split = "validation"
    result = train_parser(model_args, data_args, training_args, datasets={"toy": _toy()})
    assert [point["step"] for point in result.history] == [3, 4]
    assert set(result.history[-1]["scores"]) == {"toy"} and "exact_match" in str(result.history[-1]["scores"]["toy"])
    results = json.loads((tmp_path / "curve" / "all_results.json").read_text())
    assert [point["step"] for point in results["history"]] == [3, 4]
    stopped = train_parser(*_args(tiny_bert, tmp_path / "budget", max_train_steps=50, max_train_minutes=1e-9),
                           datasets={"toy": _toy()})
    assert stopped.completed_steps == 1 and [point["step"] for point in stopped.history] == [1]


def test_the_moving_average_of_the_weights_is_what_is_scored_selected_and_saved(tiny_bert, tmp_path):
    from safetensors.torch import load_file

    from crop_hf.parsing.train import weight_average

    layer = torch.nn.Linear(2, 1, bias=False)
    average = weight_average(layer, 0.75)
    for value in (4.0, 8.0):
        layer.weight.data.fill_(value)
        average.update_parameters(layer)
    assert torch.allclose(average.module.weight, torch.full((1, 2), 0.75 * 4.0 + 0.25 * 8.0))  # the first copies
    assert weight_average(layer, None) is None
    for decay in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="ema_decay must be above 0 and below 1"):
            weight_average(layer, decay)

    def saved(name, **training):
        model_args, data_args, training_args = _args(tiny_bert, tmp_path / name, max_train_steps=6, **training)
        data_args.dev_size = 0.25 if training.get("eval_steps") else None
        result = train_parser(model_args, data_args, training_args, datasets={"toy": _toy()})
        weights = load_file(tmp_path / name / "model.safetensors")
        return weights, json.loads((tmp_path / name / "all_results.json").read_text()), result

    def same(a, b):
        return all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)

    for curve in ({}, {"eval_steps": 2}):  # the last step's weights, or the dev split's best point
        plain, plain_results, _ = saved(f"plain{len(curve)}", **curve)
        # a decay near 0 averages nothing: the same run, the same selected step, the same weights
        instant, instant_results, _ = saved(f"instant{len(curve)}", ema_decay=1e-9, **curve)
        assert same(plain, instant) and instant_results.get("dev") == plain_results.get("dev")
        averaged, _, result = saved(f"averaged{len(curve)}", ema_decay=0.9, **curve)
        assert not same(plain, averaged)
        if curve:  # the curve scored the averaged weights: its points differ from the plain run's
            assert [p["scores"] for p in result.history] != [p["scores"] for p in plain_results["history"]]
