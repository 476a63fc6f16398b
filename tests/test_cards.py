"""Model cards from data: model-index metadata per language and metric, rendered offline; Hub push."""

from __future__ import annotations

from crop_hf.hub import ner_model_card, push_folder
from crop_hf.ner.evaluate import NerEvaluation, average_scores, score_tags


def _evaluation(split="test"):
    es = score_tags([["B-PER", "O", "B-LOC"]], [["B-PER", "O", "O"]])
    nl = score_tags([["B-ORG"]], [["B-ORG"]])
    for scores, lang in ((es, "es"), (nl, "nl")):
        scores.source, scores.dataset, scores.config = f"conll5:{lang}", "conll5", lang
    return NerEvaluation(split, {"es": es, "nl": nl}, average_scores([es, nl]))


def _card(**overrides):
    arguments = {
        "model_name": "xlmr-base-conll5-en", "base_model": "FacebookAI/xlm-roberta-base",
        "train_sources": [("conll5:en", 1.0, 14041), ("disk:/data/synth-de", 0.5, 9000)],
        "evaluations": [_evaluation("validation"), _evaluation("test")],
        "label_names": ["O", "B-PER", "I-PER"], "hyperparameters": {"learning_rate": 2e-5, "num_train_epochs": 15},
    }
    return ner_model_card(**{**arguments, **overrides})


def test_model_index_has_an_entry_per_language_split_and_metric():
    from huggingface_hub import ModelCard

    card = ModelCard(str(_card()))  # parse the rendered text back, as the Hub would
    results = card.data.eval_results
    assert len(results) == 2 * 2 * 3  # splits x languages x (precision, recall, f1)
    f1 = {(r.dataset_config, r.dataset_split): r.metric_value for r in results if r.metric_type == "f1"}
    assert f1 == {("es", "validation"): 0.6667, ("nl", "validation"): 1.0, ("es", "test"): 0.6667,
                  ("nl", "test"): 1.0}
    assert {r.dataset_type for r in results} == {"conll5"}
    assert {r.task_type for r in results} == {"token-classification"}
    assert card.data.base_model == "FacebookAI/xlm-roberta-base"
    assert card.data.language == ["es", "nl"] and card.data.pipeline_tag == "token-classification"


def test_card_text_has_results_training_data_and_hyperparameters():
    text = str(_card())
    assert "| metric | es | nl | avg |" in text
    assert "| f1 | 66.7 | 100.0 | 83.3 |" in text
    assert "| `disk:/data/synth-de` | 0.5 | 9000 |" in text
    assert "| learning_rate | `2e-05` |" in text
    assert 'model="xlmr-base-conll5-en"' in text


def test_local_base_model_is_not_declared_as_a_hub_id(tmp_path):
    card = _card(base_model=str(tmp_path), evaluations=[])
    assert card.data.base_model is None and "No evaluation was run." in str(card)


class RecordingApi:
    """Stands in for HfApi (the Hub is unreachable here): records what would be sent."""

    def __init__(self):
        self.calls = []

    def create_repo(self, repo_id, **kwargs):
        self.calls.append(("create_repo", repo_id, kwargs))
        return f"https://huggingface.co/{repo_id}"

    def upload_folder(self, **kwargs):
        self.calls.append(("upload_folder", kwargs["repo_id"], kwargs))


def test_push_uploads_the_folder_without_checkpoints(tmp_path):
    import fnmatch

    (tmp_path / "README.md").write_text(str(_card()))
    api = RecordingApi()
    url = push_folder(tmp_path, "me/xlmr-conll5", private=True, api=api)
    assert url == "https://huggingface.co/me/xlmr-conll5"
    (name, repo, create), (name2, _, upload) = api.calls
    assert (name, repo, create["private"], create["exist_ok"]) == ("create_repo", "me/xlmr-conll5", True, True)
    assert name2 == "upload_folder" and upload["folder_path"] == str(tmp_path)
    ignored = upload["ignore_patterns"]
    assert any(fnmatch.fnmatch("step_500/optimizer.bin", p) for p in ignored)
    assert not any(fnmatch.fnmatch(f, p) for p in ignored for f in ("README.md", "model.safetensors",
                                                                    "all_results.json"))
