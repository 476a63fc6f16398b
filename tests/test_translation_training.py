"""Fine-tuning a translation model to keep markers: learning, marker tokens, resume, LoRA, card, commands."""

from __future__ import annotations

import itertools
import json
import logging
import random
import re

import datasets
import pytest
import torch
from invented_languages import InventedLanguages
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, pipeline

import crop_hf  # noqa: F401
from crop_hf.cli import main as cli
from crop_hf.translation.arguments import parse_translation_arguments
from crop_hf.translation.data import collate_pairs, tokenize_pairs
from crop_hf.translation.evaluate import score_direction
from crop_hf.translation.mark_parallel import mark_parallel
from crop_hf.translation.marker_tokens import add_marker_tokens
from crop_hf.translation.parallel import MarkingConfig, ParallelPair
from crop_hf.translation.train import _LabelledPositions, marker_weighted_loss, train_translation


class DiagonalAligner:
    def align(self, source, target):
        return [[(i, i) for i in range(min(len(s), len(t)))] for s, t in zip(source, target, strict=True)]


def invented_corpus(n: int, seed: int):
    """Sentence pairs of two invented languages (word-for-word), marked along a diagonal alignment."""
    language = InventedLanguages()
    rng = random.Random(seed)
    pairs = []
    for k in range(n):
        record = language.sentence(rng)
        pairs.append(ParallelPair(" ".join(record["tokens"]), " ".join(language.target_tokens(record)), "en", "de",
                                  "invented", k))
    config = MarkingConfig(max_slots=2, max_phrase_length=1, slot_prob=1.0, seed=seed)
    return language, mark_parallel(pairs, config, aligner=DiagonalAligner()).dataset


def arguments(model, out, *extra):
    return parse_translation_arguments(["--model_name_or_path", str(model), "--output_dir", str(out),
                                        "--no_show_progress", "--eval_num_beams", "1", "--eval_max_new_tokens", "20",
                                        *extra])


@pytest.mark.slow
def test_training_teaches_a_tiny_model_to_keep_markers(tmp_path):
    """A small learnable subset: 64 marked pairs of an invented language, learned by a tiny model from scratch.

    Generalising to unseen sentences takes minutes (benchmarks/bench_marker_mt.py measures it on
    Multi30k); here the untrained model keeps no marker and the trained one keeps them all.
    """
    from transformers import M2M100Config

    from crop_hf import demo_models as tiny

    _, train = invented_corpus(64, seed=0)
    corpus = [text for row in train for text in (row["source"], row["target"])]
    model = tiny.build_tiny_m2m100(tmp_path / "mt", corpus=corpus, d_model=128)
    config = M2M100Config.from_pretrained(model)
    config.encoder_layerdrop = config.decoder_layerdrop = 0.0  # one layer: dropping it would skip the model
    config.save_pretrained(model)
    result = train_translation(*arguments(model, tmp_path / "out", "--max_train_steps", "300",
                                          "--learning_rate", "2e-3", "--warmup_steps", "20", "--label_smoothing", "0",
                                          "--per_device_train_batch_size", "32", "--marker_loss_weight", "3",
                                          "--eval_decodings", "free"),
                               train_dataset=train, eval_dataset=train)
    scores = result.evaluation.scores
    before, after = scores[("untrained", "free", "en-de")], scores[("trained", "free", "en-de")]
    assert before["completeness"] < 0.1 and before["kept"] == 0.0
    assert after["completeness"] >= 0.9, after
    assert after["slot_accuracy"] >= 0.8, after
    assert after["bleu"] > before["bleu"] + 50
    assert sum(result.step_losses[-10:]) / 10 < sum(result.step_losses[:10]) / 10 / 10
    results = json.loads((tmp_path / "out" / "all_results.json").read_text())
    assert results["trained_free_en-de_slot_accuracy"] == after["slot_accuracy"]
    card = (tmp_path / "out" / "README.md").read_text()
    assert "en-de" in card and "`crop`" in card and "slot_accuracy" in card and "untrained free" in card


def test_marker_tokens_added_as_special_tokens_and_loaded_without_warning(tiny_bart, tmp_path, caplog):
    tokenizer = AutoTokenizer.from_pretrained(tiny_bart)
    model = AutoModelForSeq2SeqLM.from_pretrained(tiny_bart)
    old = model.get_input_embeddings().weight.detach().clone()
    added = add_marker_tokens(tokenizer, model, "crop", 16, seed=0)
    assert len(added) == 16 and tokenizer.tokenize("a __SLOT3__ b").count("__SLOT3__") == 1
    weight = model.get_input_embeddings().weight.detach()
    rows = weight[added]
    assert torch.allclose(rows.mean(0), old.mean(0), atol=3 * old.std(0).max().item() / 4)
    assert (rows[0] - rows[1]).abs().sum() > 0  # slots start apart from each other
    assert add_marker_tokens(tokenizer, model, "crop", 16) == []  # idempotent

    _, train = invented_corpus(40, seed=0)
    train_translation(*arguments(tiny_bart, tmp_path / "out", "--max_train_steps", "2",
                                 "--evaluate_before_training", "false"), train_dataset=train)
    caplog.clear()  # only what loading the trained model logs counts (training itself logs the added markers)
    with caplog.at_level(logging.WARNING, logger="crop_hf"):
        translator = pipeline("labeled-translation", model=str(tmp_path / "out"), device=-1)
    assert not [r for r in caplog.records if "marker" in r.getMessage() and r.levelno >= logging.WARNING], caplog.text
    result = translator({"tokens": ["Paris", "is", "big"], "ner_tags": ["B-LOC", "O", "O"]}, max_new_tokens=8)
    assert set(result) >= {"translation", "entities", "complete"}


@pytest.mark.parametrize("grouping", [(), ("--group_by_length",)], ids=["shuffled", "grouped_by_length"])
def test_resume_from_a_checkpoint_gives_the_uninterrupted_weights(tiny_m2m100, tmp_path, grouping):
    _, train = invented_corpus(120, seed=0)
    common = ("--max_train_steps", "6", "--per_device_train_batch_size", "8", "--learning_rate", "1e-3",
              "--evaluate_before_training", "false", "--checkpointing_steps", "3", *grouping)
    full = train_translation(*arguments(tiny_m2m100, tmp_path / "full", *common), train_dataset=train)
    # the same run killed after step 3 and restarted from its checkpoint
    resumed = train_translation(*arguments(tiny_m2m100, tmp_path / "cut", *common, "--resume_from_checkpoint",
                                           str(tmp_path / "full" / "step_3")), train_dataset=train)
    assert resumed.completed_steps == 6
    assert resumed.step_losses == pytest.approx(full.step_losses[3:], rel=1e-5)
    a = AutoModelForSeq2SeqLM.from_pretrained(tmp_path / "full").state_dict()
    b = AutoModelForSeq2SeqLM.from_pretrained(tmp_path / "cut").state_dict()
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)


def test_learning_curve_ends_at_the_last_step(tiny_m2m100, tmp_path):
    _, train = invented_corpus(40, seed=0)
    result = train_translation(*arguments(tiny_m2m100, tmp_path / "curve", "--max_train_steps", "5",
                                          "--per_device_train_batch_size", "8", "--eval_steps", "2",
                                          "--eval_decodings", "free", "--evaluate_before_training", "false"),
                               train_dataset=train, eval_dataset=train.select(range(6)))
    assert [entry["step"] for entry in result.history] == [2, 4, 5]
    last = {item["decoding"]: item for item in result.history[-1]["scores"]}
    assert result.evaluation.scores[("trained", "free", "en-de")]["bleu"] == last["free"]["bleu"]


def test_length_grouping_pads_less_and_stays_a_seeded_permutation():
    from crop_hf.translation.data import EpochSampler

    lengths = [random.Random(i).randint(3, 60) for i in range(2000)]
    shuffled, grouped = EpochSampler(2000, seed=3, batch_size=16), EpochSampler(2000, 3, 16, lengths=lengths)

    def longest(order):  # each batch's longest pair, the length the batch is padded to
        return [max(lengths[i] for i in order[k:k + 16]) for k in range(0, len(order), 16)]

    first = list(grouped)
    assert sorted(first) == list(range(2000))
    assert sum(longest(first)) < 0.8 * sum(longest(list(shuffled)))  # padded tokens, over 16
    falls = sum(b < a for a, b in itertools.pairwise(longest(first)))
    assert falls < 0.7 * (len(longest(first)) - 1)  # batches come in random order, not in falling length runs
    assert list(EpochSampler(2000, 3, 16, lengths=lengths)) == first  # seed and epoch fix the order
    grouped.set_epoch(1)
    assert list(grouped) != first
    with pytest.raises(ValueError, match="1999 lengths for 2000"):
        list(EpochSampler(2000, 3, 16, lengths=lengths[1:]))


def test_lora_trains_adapters_and_saves_a_plain_model(tiny_m2m100, tmp_path):
    _, train = invented_corpus(40, seed=0)
    result = train_translation(*arguments(tiny_m2m100, tmp_path / "lora", "--max_train_steps", "3", "--lora_r", "4",
                                          "--lora_target_modules", "q_proj", "v_proj",
                                          "--evaluate_before_training", "false"), train_dataset=train)
    assert result.completed_steps == 3 and (tmp_path / "lora" / "adapter" / "adapter_config.json").exists()
    base = AutoModelForSeq2SeqLM.from_pretrained(tiny_m2m100).state_dict()
    merged = AutoModelForSeq2SeqLM.from_pretrained(tmp_path / "lora").state_dict()
    assert set(base) == set(merged)  # merged back into the architecture the pipeline loads
    changed = [k for k in base if not torch.equal(base[k], merged[k])]
    assert changed and all("q_proj" in k or "v_proj" in k for k in changed), changed


def _padded_batch(tokenizer, pairs):
    """One training batch of ``(source, target)`` pairs, tokenized and padded as training does it."""
    rows = datasets.Dataset.from_dict({"source": [s for s, _ in pairs], "target": [t for _, t in pairs],
                                       "src_lang": ["en"] * len(pairs), "tgt_lang": ["de"] * len(pairs)})
    return collate_pairs(list(tokenize_pairs(rows, tokenizer, {}, 128, 128)), tokenizer.pad_token_id, 2)


def test_output_layer_scores_labelled_positions_only_with_the_same_loss_and_gradients(tiny_m2m100):
    tokenizer = AutoTokenizer.from_pretrained(tiny_m2m100)
    model = AutoModelForSeq2SeqLM.from_pretrained(tiny_m2m100).train()
    torch.manual_seed(0)
    batch = _padded_batch(tokenizer, [("I live in Gothenburg .", "Ich wohne in Göteborg ."),
                                      ("Paris", "Paris"), ("Where is the train station ?", "Wo ist der Bahnhof ?")])
    inputs = {k: batch[k] for k in ("input_ids", "attention_mask", "decoder_input_ids")}
    assert (batch["labels"] == -100).any()  # the short pairs are padded
    markers = torch.tensor([5])

    def loss_and_grads(selected: bool):
        model.zero_grad()
        with torch.random.fork_rng():  # the same dropout masks in both runs
            torch.manual_seed(1)
            if selected:
                with labelled.only(batch["labels"]) as labels:
                    logits = model(**inputs).logits
            else:
                logits, labels = model(**inputs).logits, batch["labels"]
        loss = marker_weighted_loss(logits, labels, markers, label_smoothing=0.1, marker_weight=3.0)
        loss.backward()
        return logits, loss, {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    labelled = _LabelledPositions(model)
    full_logits, full_loss, full_grads = loss_and_grads(selected=False)
    logits, loss, grads = loss_and_grads(selected=True)
    labelled_count = int((batch["labels"] != -100).sum())
    assert full_logits.shape[:2] == batch["labels"].shape and logits.shape == (labelled_count, full_logits.shape[-1])
    assert torch.allclose(logits, full_logits[batch["labels"] != -100], atol=1e-5)
    assert loss.item() == pytest.approx(full_loss.item(), rel=1e-5)
    assert set(grads) == set(full_grads)
    assert all(torch.allclose(grads[n], full_grads[n], atol=1e-6) for n in grads)
    # outside the block (evaluation, generation) the model is untouched, and remove() takes the hook off
    assert model(**inputs).logits.shape == full_logits.shape
    labelled.remove()
    with labelled.only(batch["labels"]) as labels:
        assert model(**inputs).logits.shape == full_logits.shape and torch.equal(labels, batch["labels"])


def test_a_model_without_an_output_layer_keeps_full_logits():
    class NoHead(torch.nn.Module):
        def get_output_embeddings(self):
            return None

    labelled = _LabelledPositions(NoHead())
    labels = torch.tensor([[3, -100]])
    with labelled.only(labels) as kept:
        assert torch.equal(kept, labels)
    assert not labelled.active


def test_attention_kernel_and_compiled_loss_reach_training(tiny_m2m100, tmp_path, monkeypatch):
    """``attn_implementation`` is what the model is loaded with; ``compile_loss`` fuses the same loss."""
    loaded = []
    original = AutoModelForSeq2SeqLM.from_pretrained.__func__

    def recording(cls, *args, **kwargs):
        model = original(cls, *args, **kwargs)
        loaded.append(model.config._attn_implementation)
        return model

    monkeypatch.setattr(AutoModelForSeq2SeqLM, "from_pretrained", classmethod(recording))
    _, train = invented_corpus(40, seed=0)
    common = ("--max_train_steps", "3", "--per_device_train_batch_size", "8", "--learning_rate", "1e-3",
              "--evaluate_before_training", "false", "--marker_loss_weight", "3")
    plain = train_translation(*arguments(tiny_m2m100, tmp_path / "plain", *common, "--attn_implementation", "eager"),
                              train_dataset=train)
    fused = train_translation(*arguments(tiny_m2m100, tmp_path / "fused", *common, "--attn_implementation", "eager",
                                         "--compile_loss"), train_dataset=train)
    assert loaded == ["eager", "eager"]
    assert fused.step_losses == pytest.approx(plain.step_losses, rel=1e-4)
    assert plain.step_losses[0] != plain.step_losses[-1]  # it trained: the losses are not a constant


def test_marker_loss_weight_weights_marker_positions_only():
    logits = torch.randn(1, 3, 5)
    labels = torch.tensor([[1, 4, -100]])
    markers = torch.tensor([4])
    plain = marker_weighted_loss(logits, labels, markers)
    weighted = marker_weighted_loss(logits, labels, markers, marker_weight=3.0)
    per_token = torch.nn.functional.cross_entropy(logits[0, :2], labels[0, :2], reduction="none")
    assert plain == pytest.approx(per_token.mean().item(), rel=1e-5)
    assert weighted == pytest.approx(((per_token[0] + 3 * per_token[1]) / 2).item(), rel=1e-5)


def test_scores_separate_complete_markers_from_right_slots():
    row = {"source": "a __SLOT0__ b __SLOT0__ c __SLOT1__ d __SLOT1__", "target": "A __SLOT0__ B __SLOT0__ C __SLOT1__ D __SLOT1__",
           "src_lang": "en", "tgt_lang": "de"}
    perfect = score_direction([row], [row["target"]])
    assert perfect["completeness"] == perfect["slot_accuracy"] == perfect["kept"] == 1.0
    swapped = score_direction([row], ["A __SLOT1__ B __SLOT1__ C __SLOT0__ D __SLOT0__"])
    assert swapped["completeness"] == 1.0 and swapped["slot_accuracy"] == 0.0 and swapped["kept"] == 0.0
    assert swapped["bleu"] == pytest.approx(perfect["bleu"])  # same words once markers are removed
    broken = score_direction([row], ["A __SLOT0__ B C __SLOT1__ D __SLOT1__"])
    assert broken["completeness"] == 0.0 and broken["slot_accuracy"] == 0.5


def test_commands_mark_train_and_evaluate(tiny_m2m100, tmp_path, capsys):
    language = InventedLanguages()
    rng = random.Random(0)
    records = [language.sentence(rng) for _ in range(30)]
    (tmp_path / "s.txt").write_text("\n".join(" ".join(r["tokens"]) for r in records) + "\n\n")
    (tmp_path / "t.txt").write_text("\n".join(" ".join(language.target_tokens(r)) for r in records) + "\n\n")
    pytest.importorskip("eflomal")
    assert cli(["mark-parallel", "--source_files", str(tmp_path / "s.txt"), "--target_files", str(tmp_path / "t.txt"),
                "--language_pairs", "en-de", "--output_dir", str(tmp_path / "marked"), "--no_show_progress"]) == 0
    statistics = json.loads((tmp_path / "marked" / "statistics.json").read_text())
    assert statistics["counts"]["dropped_empty"] == 1 and statistics["counts"]["marked_pairs"] == 30
    assert "align" in capsys.readouterr().out
    assert cli(["train-translation", "--model_name_or_path", str(tiny_m2m100), "--train_file", str(tmp_path / "marked"),
                "--validation_file", str(tmp_path / "marked"), "--max_eval_samples", "4", "--max_train_steps", "2",
                "--output_dir", str(tmp_path / "model"), "--eval_num_beams", "1", "--eval_max_new_tokens", "8",
                "--no_show_progress"]) == 0
    assert "untrained free" in capsys.readouterr().out
    assert cli(["evaluate-translation", "--model", str(tmp_path / "model"), "--baseline", str(tiny_m2m100),
                "--data", str(tmp_path / "marked"), "--max_samples", "4", "--num_beams", "1", "--max_new_tokens", "8",
                "--output", str(tmp_path / "scores.json")]) == 0
    table = capsys.readouterr().out
    assert "baseline free" in table and "model constrained" in table and "slot_accuracy" in table
    assert len(json.loads((tmp_path / "scores.json").read_text())) == 4
    (tmp_path / "short.txt").write_text("one line\n")
    assert cli(["mark-parallel", "--source_files", str(tmp_path / "s.txt"), "--target_files",
                str(tmp_path / "short.txt"), "--language_pairs", "en-de", "--output_dir", str(tmp_path / "bad")]) == 1
    assert re.search(r"crop-hf mark-parallel: error: --source_files, --target_files: .*s\.txt has 31 lines but "
                     r".*short\.txt has 1", capsys.readouterr().err)
