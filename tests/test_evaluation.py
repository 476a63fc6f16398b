"""Per-language NER evaluation: seqeval scores, the table, all_results.json and `crop-hf evaluate-ner`."""

from __future__ import annotations

import json
import logging

import pytest
from training_fixtures import (  # noqa: F401  (pytest fixtures)
    as_dataset,
    fresh_accelerate_state,
    learned,
    task_corpora,
    task_model_dir,
)

from crop_hf.engine.training import write_all_results
from crop_hf.ner.evaluate import (
    NerEvaluation,
    average_scores,
    evaluate_ner,
    format_ner_table,
    ner_results,
    predict_tags,
    score_tags,
)


def test_scores_are_seqeval_entity_micro_scores():
    # 3 reference entities, 4 predicted, 2 right: precision and recall differ, so a swap shows.
    refs = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "O"]]
    preds = [["B-PER", "I-PER", "O", "B-ORG"], ["B-ORG", "B-MISC"]]
    scores = score_tags(refs, preds)
    assert (scores.precision, scores.recall) == (2 / 4, 2 / 3)
    assert scores.f1 == pytest.approx(2 * (1 / 2) * (2 / 3) / (1 / 2 + 2 / 3))
    assert scores.per_type["PER"]["f1"] == 1.0 and scores.per_type["LOC"]["f1"] == 0.0
    assert scores.per_type["ORG"] == {"precision": 0.5, "recall": 1.0, "f1": pytest.approx(2 / 3), "support": 1}
    assert scores.per_type["LOC"]["support"] == 1 and scores.sentences == 2
    assert list(scores.per_type) == ["LOC", "MISC", "ORG", "PER"]  # entity types only, sorted; no averages
    with pytest.raises(ValueError, match="2 reference sentences but 1 predicted"):
        score_tags(refs, preds[:1])
    with pytest.raises(ValueError, match="sentence 0: 2 reference tags but 1"):
        score_tags([["O", "O"]], [["O"]])


def test_average_is_the_unweighted_mean_over_languages():
    a = score_tags([["B-PER"]] * 3, [["B-PER"]] * 3)  # 3 sentences, F1 1
    b = score_tags([["B-LOC"]], [["O"]])  # 1 sentence, F1 0
    mean = average_scores([a, b])
    assert mean.f1 == 0.5 and mean.sentences == 4  # not 0.75: languages weigh alike, as in the paper
    assert mean.per_type["PER"]["f1"] == 1.0 and mean.per_type["LOC"]["f1"] == 0.0
    assert mean.per_type["PER"]["support"] == 3 and mean.per_type["LOC"]["support"] == 1  # summed, not averaged
    assert mean.per_type["PER"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 3}
    assert average_scores([]) is None


def test_table_and_all_results(tmp_path):
    evaluation = NerEvaluation("test", {"es": score_tags([["B-PER", "O"]], [["B-PER", "O"]]),
                                        "nl": score_tags([["B-LOC", "O"]], [["O", "O"]])}, None)
    evaluation.average = average_scores(list(evaluation.languages.values()))
    table = format_ner_table(evaluation)
    lines = table.splitlines()
    assert lines[0].split() == ["test", "es", "nl", "avg"]
    assert next(line for line in lines if line.startswith("f1")).split() == ["f1", "100.0", "0.0", "50.0"]
    assert next(line for line in lines if line.startswith("LOC f1")).split()[2:] == ["-", "0.0", "0.0"]
    results = write_all_results(tmp_path / "all_results.json", ner_results([evaluation], {"train_loss": 0.5}))
    assert json.loads((tmp_path / "all_results.json").read_text()) == results
    assert results["test_avg_f1"] == 0.5 and results["test_es_PER_f1"] == 1.0 and results["train_loss"] == 0.5


def test_words_past_max_length_are_predicted_o_with_a_warning(learned, caplog):  # noqa: F811
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(learned.output_dir)
    model = AutoModelForTokenClassification.from_pretrained(learned.output_dir)
    sentence = ["anna", "lives", "in", "paris", ".", "boris", "lives", "in", "oslo", "."]
    full = predict_tags(model, tokenizer, [sentence])[0]
    assert full[:4] == ["B-PER", "O", "O", "B-LOC"] and full[5] == "B-PER"
    with caplog.at_level(logging.WARNING, logger="crop_hf.ner.evaluate"):
        cut = predict_tags(model, tokenizer, [sentence], max_length=6)[0]
    kept = len({w for w in tokenizer(sentence, is_split_into_words=True, truncation=True, max_length=6).word_ids()
                if w is not None})
    assert 0 < kept < len(sentence)
    assert len(cut) == len(sentence) and cut[:kept] == full[:kept] and set(cut[kept:]) == {"O"}
    assert f"{len(sentence) - kept} words had no subword within max_length=6" in caplog.text


def test_unknown_reference_types_are_an_error_unless_dropped(learned):  # noqa: F811
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    from crop_hf.labels import LabelConflictError

    tokenizer = AutoTokenizer.from_pretrained(learned.output_dir)
    model = AutoModelForTokenClassification.from_pretrained(learned.output_dir)
    rows = [{"tokens": ["anna", "likes", "zorbl"], "tags": ["B-PER", "O", "B-FOOD"], "lang": "en"}]
    dataset = as_dataset(rows, class_label=False)
    with pytest.raises(LabelConflictError, match=r"\['FOOD'\] are not among the model's labels"):
        evaluate_ner(model, tokenizer, {"en": dataset})
    scores = evaluate_ner(model, tokenizer, {"en": dataset}, drop_unknown_types=True).languages["en"]
    assert scores.f1 == 1.0 and "FOOD" not in scores.per_type


def test_evaluate_ner_command_prints_the_per_language_table(learned, task_corpora, tmp_path, capsys):  # noqa: F811
    from crop_hf.cli import main

    output = tmp_path / "scores.json"
    code = main(["evaluate-ner", "--model", str(learned.output_dir), "--sources", f"disk:{task_corpora['en']}",
                 f"disk:{task_corpora['xx']}", "--split", "validation", "--average_exclude", "en",
                 "--output", str(output)])
    assert code == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["validation", "en", "xx", "avg"]
    expected = learned.evaluations[0]  # train_ner evaluated the same split of the same corpora
    f1 = next(line for line in lines if line.startswith("f1")).split()[1:]
    assert f1 == [f"{100 * expected.languages['en'].f1:.1f}", f"{100 * expected.languages['xx'].f1:.1f}",
                  f"{100 * expected.languages['xx'].f1:.1f}"]  # avg leaves en out
    saved = json.loads(output.read_text())
    assert saved["flat"]["validation_xx_f1"] == pytest.approx(expected.languages["xx"].f1)


def test_evaluate_ner_command_on_the_real_conll5_builder(shared_data, learned, capsys):  # noqa: F811
    """``--sources conll5:es?data_dir=...`` reaches the builder with ``data_dir`` (real CoNLL-2002 files)."""
    pytest.importorskip("crop_hf.data.conll5")
    from crop_hf.cli import main

    data_dir = shared_data / "conll2002"
    code = main(["evaluate-ner", "--model", str(learned.output_dir), "--sources", f"conll5:es?data_dir={data_dir}",
                 f"conll5:nl?data_dir={data_dir}", "--split", "test", "--max_samples", "40", "--no_per_type"])
    assert code == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["test", "es", "nl", "avg"]
    assert next(line for line in lines if line.startswith("sentences")).split() == ["sentences", "40", "40", "80"]
