"""The model-scored projection methods wherever projection runs (issue 47, point 3).

``pipeline("projection")`` with a scorer gives what :func:`project_examples` gives; ``evaluate_projection``
and ``crop-hf evaluate-projection`` give a row per (method, model) with its speed; synthesis with
``method="insertion"`` places the labels in the raw sentence with the translation model itself and never
back-translates; translate-and-align takes the scored methods; and a model that cannot do what a method
asks (no marker tokens, no reverse direction) is refused when it is loaded, naming it.
The models are the tiny random-weight ones of ``conftest.py`` (``tiny_m2m100`` has ``__SLOT{i}__`` tokens).
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import datasets
import pytest
from synthesis_fakes import RecordingTranslator, as_rows, fake_config, fake_models

from crop_hf.augment.inputs import ParseInput
from crop_hf.augment.translate_align import (
    TranslateAlignConfig,
    TranslateAlignModels,
    align_batch,
    translate_align,
)
from crop_hf.cli import main
from crop_hf.labels import CONLL_LABELS, Span
from crop_hf.metrics.projection import ScoredProjectionRow, evaluate_projection, format_projection_table
from crop_hf.projection import ProjectionPipeline, TranslationScorer, tokenize_target
from crop_hf.projection.alignment import source_spans
from crop_hf.projection.methods import ProjectionExample, placement, project_examples
from crop_hf.synthesis import SynthesisConfig, SynthesisModels, synthesize
from crop_hf.synthesis.stages import synthesize_shard

INPUTS = [
    {"source_tokens": ["Angela", "Merkel", "visited", "Paris", "."], "source_tags": ["B-PER", "I-PER", "O", "B-LOC", "O"],
     "target": "Angela Merkel besuchte Paris ."},
    {"source_tokens": ["I", "live", "in", "Gothenburg"], "source_tags": ["O", "O", "O", "B-LOC"],
     "target": "Ich wohne in Göteborg ."},
    {"source_tokens": ["Volvo"], "source_tags": ["B-ORG"], "target": "我住在哥德堡。", "lang": "zh"},
]


def _marker_error(model) -> str:
    """The start of the error for a model without crop markers asked to insert, as a pattern."""
    return "^" + re.escape(f"insertion projection needs a model trained with markers of the 'crop' marker style, "
                           f"but {model} has no token for '__SLOT0__'")


@pytest.fixture(scope="module")
def scorer(tiny_m2m100):
    return TranslationScorer.from_pretrained(tiny_m2m100, "en", "de", batch_size=8)


@pytest.fixture(scope="module")
def bare_m2m100(tmp_path_factory):
    """A tiny M2M100 without marker tokens (a public checkpoint never fine-tuned on marked text)."""
    from tiny_models import session_model

    from crop_hf.demo_models import build_tiny_m2m100

    return session_model(tmp_path_factory, "m2m100-bare", lambda folder: build_tiny_m2m100(folder, marker_pieces=False))


def _examples(inputs):
    return [ProjectionExample(tokenize_target(i["target"], i.get("lang")), source_tokens=i["source_tokens"],
                              source_spans=source_spans(i["source_tags"])) for i in inputs]


# --------------------------------------------------------------------------- the projection pipeline


@pytest.mark.parametrize("method", ["insertion", "insertion?source_markers=all&max_span_words=2", "insertion?nbest=3&reverse_weight=2",
                                    "rerank"])
def test_the_pipeline_with_a_scorer_gives_the_spans_project_examples_gives(tiny_m2m100, scorer, method):
    from transformers import pipeline

    projector = pipeline("projection", method=method, scorer_model=str(tiny_m2m100), src_lang="en", tgt_lang="de")
    assert isinstance(projector, ProjectionPipeline) and projector.scorer.languages.tgt_lang == "de"
    direct = [result.to_dict() for result in project_examples(method, _examples(INPUTS), scorer=scorer)]
    assert projector(INPUTS, batch_size=3) == direct
    assert projector(INPUTS) == direct  # one sentence at a time: the same spans
    assert direct[0]["method"] == method.partition("?")[0] and direct[2]["tokenization"] == "characters"
    # per-call options reach the scored method
    assert projector(INPUTS[1], min_score=1e9)["entity_status"][0]["status"] == "below_threshold"


def test_a_built_scorer_serves_per_call_methods_and_datasets_with_label_ids(scorer):
    projector = ProjectionPipeline(scorer=scorer)  # lexical by default; the scorer waits for a scored method
    assert "scorer=" in repr(projector)
    rows = datasets.Dataset.from_dict({
        "target": [i["target"] for i in INPUTS[:2]], "source_tokens": [i["source_tokens"] for i in INPUTS[:2]],
        "source_tags": [CONLL_LABELS.encode(i["source_tags"]) for i in INPUTS[:2]],
    }, features=datasets.Features({"target": datasets.Value("string"),
                                   "source_tokens": datasets.List(datasets.Value("string")),
                                   "source_tags": datasets.List(datasets.ClassLabel(names=list(CONLL_LABELS.names)))}))
    expected = [r.to_dict() for r in project_examples("insertion", _examples(INPUTS[:2]), scorer=scorer)]
    assert list(projector(rows, method="insertion", batch_size=2)) == expected


def test_the_pipeline_reads_a_method_spec_once_per_batch(scorer, monkeypatch):
    from crop_hf.projection import methods

    calls = []
    real = methods.parse_method
    monkeypatch.setattr(methods, "parse_method", lambda text: calls.append(text) or real(text))
    projector = ProjectionPipeline(method="fuzzy?threshold=70")
    calls.clear()
    projector([{"target": "Vivo en Gotemburg .", "entities": [("Gotemburgo", "LOC")]}] * 4, batch_size=4)
    assert calls == ["fuzzy?threshold=70"]  # one batch: one reading (postprocess read it twice per example)


def test_the_pipeline_says_what_a_scored_method_lacks_before_any_input(tiny_m2m100, tiny_bart, bare_m2m100, scorer):
    from transformers import pipeline

    with pytest.raises(ValueError, match=r"^insertion projection scores spans with a translation model: pass scorer="):
        pipeline("projection", method="insertion")
    with pytest.raises(ValueError, match=r"^rerank projection scores spans .* scorer_model=NAME with src_lang/tgt_lang"):
        ProjectionPipeline()(INPUTS[0], method="rerank")
    with pytest.raises(ValueError, match=_marker_error(bare_m2m100)):
        pipeline("projection", method="insertion", scorer_model=str(bare_m2m100), src_lang="en", tgt_lang="de")
    with pytest.raises(ValueError, match=rf"^reranking needs the reverse direction .*{tiny_bart} \(other family\) "
                                         "translates one fixed direction"):
        ProjectionPipeline(method="hybrid_rerank", scorer=TranslationScorer.from_pretrained(tiny_bart))
    with pytest.raises(ValueError, match="scorer= or scorer_model=, not both"):
        ProjectionPipeline(scorer=scorer, scorer_model=str(tiny_m2m100))
    with pytest.raises(ValueError, match=r"^insertion projection needs 'source_tokens' and 'source_tags'"):
        ProjectionPipeline(method="insertion", scorer=scorer)({"target": "a", "entities": [("a", "X")]})


# --------------------------------------------------------------------------- evaluate-projection

SOURCE = [(["Anna", "visits", "Zürich"], ["B-PER", "O", "B-LOC"]), (["the", "Bundestag", "votes"], ["O", "B-ORG", "O"])]
TARGET = [(["Anna", "besucht", "Zürich"], ["B-PER", "O", "B-LOC"]), (["der", "Bundestag", "stimmt"], ["O", "B-ORG", "O"])]


def test_evaluation_gives_a_row_per_method_and_model_each_with_its_speed(scorer, tiny_m2m100):
    second = TranslationScorer.from_pretrained(tiny_m2m100, "en", "de", batch_size=2)
    evaluation = evaluate_projection(SOURCE, TARGET, methods=["lexical", "insertion", "rerank"],
                                     scorers={"tiny": scorer, "tiny-b2": second})
    assert [(row.name, getattr(row, "model", None)) for row in evaluation.rows] == [
        ("lexical", None), ("insertion", "tiny"), ("insertion", "tiny-b2"), ("rerank", "tiny"), ("rerank", "tiny-b2")]
    assert all(row.sentences_per_second > 0 and row.seconds >= 0 for row in evaluation.rows)
    insertion = evaluation.row("insertion", model="tiny")
    assert isinstance(insertion, ScoredProjectionRow)
    expected = project_examples("insertion", [ProjectionExample(tokenize_target(list(t), None), source_tokens=s,
                                                                source_spans=source_spans(tags))
                                              for (s, tags), (t, _) in zip(SOURCE, TARGET, strict=True)], scorer=scorer)
    statuses = [status for result in expected for status in result.statuses]
    assert insertion.entities_projected == sum(status.reached for status in statuses) / len(statuses) < 1
    # the same model with another batch size scores the same spans
    assert insertion.f1 == evaluation.row("insertion", model="tiny-b2").f1
    header, *body = format_projection_table(evaluation).splitlines()
    assert header.split()[:3] == ["method", "aligner", "model"] and header.split()[-1] == "sent/s"
    assert [line.split()[:3] for line in body[1:]] == [
        ["lexical", "-", "-"], ["insertion", "-", "tiny"], ["insertion", "-", "tiny-b2"], ["rerank", "-", "tiny"],
        ["rerank", "-", "tiny-b2"]]
    payload = evaluation.to_dict()
    assert payload["models"] == {"tiny": str(tiny_m2m100), "tiny-b2": str(tiny_m2m100)}
    assert "model" not in payload["rows"][0] and payload["rows"][1]["model"] == "tiny"


def test_without_named_methods_each_model_gets_the_scored_methods_it_suits(scorer, tiny_bart, caplog):
    bart = TranslationScorer.from_pretrained(tiny_bart)
    caplog.set_level(logging.WARNING, logger="crop_hf.metrics.projection")
    aligned = {"identity": [[(i, i) for i in range(3)]] * 2}
    evaluation = evaluate_projection(SOURCE, TARGET, scorers={"m2m": scorer, "bart": bart}, alignments=aligned)
    rows = [(row.name, row.aligner, getattr(row, "model", None)) for row in evaluation.rows]
    # (other tests may have registered methods of their own: they are rows too)
    assert [row for row in rows if row[2]] == [("insertion", None, "m2m"), ("rerank", None, "m2m"),
                                               ("hybrid_rerank", "identity", "m2m")]
    assert rows[:4] == [("lexical", None, None), ("fuzzy", None, None), ("alignment", "identity", None),
                        ("hybrid", "identity", None)]
    assert evaluation.models == {"m2m": scorer.name}
    skipped = [message for _, _, message in caplog.record_tuples]
    assert [m.split(":")[0] for m in skipped] == ["no insertion row for bart", "no rerank row for bart",
                                                  "no hybrid_rerank row for bart"]
    # named: scored with the models that suit it, the others skipped and said why; suiting none is an error
    caplog.clear()
    named = evaluate_projection(SOURCE, TARGET, methods=["rerank"], scorers={"m2m": scorer, "bart": bart})
    assert [(row.name, row.model) for row in named.rows] == [("rerank", "m2m")]
    assert [(method, model) for method, model, _ in named.skipped] == [("rerank", "bart")]
    assert named.skipped[0][2].startswith("reranking needs the reverse direction")
    assert named.to_dict()["skipped"][0]["model"] == "bart"
    with pytest.raises(ValueError, match=r"^reranking needs the reverse direction"):
        evaluate_projection(SOURCE, TARGET, methods=["rerank"], scorers={"bart": bart})
    with pytest.raises(ValueError, match=r"^projection method 'insertion' scores spans with a translation model"):
        evaluate_projection(SOURCE, TARGET, methods=["insertion"])


def _pairs_on_disk(tmp_path: Path) -> Path:
    """SOURCE and TARGET as one saved dataset: the English side in ``en_*`` columns (``disk:FOLDER#en``)."""
    folder = tmp_path / "pairs"
    datasets.Dataset.from_dict({"en_tokens": [s for s, _ in SOURCE], "en_ner_tags": [t for _, t in SOURCE],
                                "tokens": [s for s, _ in TARGET], "ner_tags": [t for _, t in TARGET]}
                               ).save_to_disk(str(folder))
    return folder


def test_the_command_scores_each_scorer_model_and_says_what_is_missing(tmp_path, tiny_m2m100, capsys):
    from crop_hf.commands.evaluate_projection import EvaluateProjectionConfig

    folder = _pairs_on_disk(tmp_path)
    out = tmp_path / "out"
    capsys.readouterr()
    code = main(["evaluate-projection", "--source", f"disk:{folder}#en", "--target", f"disk:{folder}",
                 "--methods", "lexical", "insertion", "--scorer_models", f"tiny={tiny_m2m100}", str(tiny_m2m100),
                 "--src_lang", "en", "--tgt_lang", "de", "--device", "cpu", "--output_dir", str(out),
                 "--no_show_progress"])
    assert code == 0
    table = (out / "projection.txt").read_text(encoding="utf-8").splitlines()
    assert table[0].split()[:3] == ["method", "aligner", "model"]
    assert [line.split()[:3] for line in table[2:]] == [["lexical", "-", "-"], ["insertion", "-", "tiny"],
                                                        ["insertion", "-", Path(tiny_m2m100).name]]
    rows = json.loads((out / "projection.json").read_text(encoding="utf-8"))["rows"]
    assert all(row["sentences_per_second"] > 0 for row in rows)
    with pytest.raises(ValueError, match=r"^--methods insertion score spans with a translation model: give "
                                         r"--scorer_models NAME=PATH"):
        EvaluateProjectionConfig(source="s", target="t", methods=["hybrid", "insertion"])
    capsys.readouterr()
    assert main(["evaluate-projection", "--source", f"disk:{folder}#en", "--target", f"disk:{folder}",
                 "--scorer_models", "m=a", "m=b", "--src_lang", "en", "--tgt_lang", "de", "--no_show_progress"]) == 1
    assert "error: --scorer_models: two models are named 'm'; name them NAME=PATH" in capsys.readouterr().err


def test_the_documented_model_scored_command_runs_and_says_which_pairs_it_skipped(tmp_path, tiny_m2m100,
                                                                                   bare_m2m100, capsys):
    """evaluate-projection's --help and docs/how-to/project-labels.md: insertion with a marker-trained model,
    reranking with both; a plain model cannot insert markers, so that one pair is skipped, not the run."""
    folder = _pairs_on_disk(tmp_path)
    out = tmp_path / "out"
    capsys.readouterr()
    code = main(["evaluate-projection", "--source", f"disk:{folder}#en", "--target", f"disk:{folder}",
                 "--methods", "hybrid", "insertion", "rerank", "hybrid_rerank",
                 "--scorer_models", f"markers={tiny_m2m100}", f"m2m={bare_m2m100}", "--src_lang", "en",
                 "--tgt_lang", "de", "--device", "cpu", "--output_dir", str(out), "--no_show_progress"])
    printed = capsys.readouterr().out
    assert code == 0
    rows = [(row["name"], row.get("model")) for row in json.loads((out / "projection.json").read_text())["rows"]]
    assert rows == [("hybrid", None), ("insertion", "markers"), ("rerank", "markers"), ("rerank", "m2m"),
                    ("hybrid_rerank", "markers"), ("hybrid_rerank", "m2m")]
    skipped = [line for line in printed.splitlines() if line.startswith("skipped: ")]
    assert len(skipped) == 1 and skipped[0].startswith("skipped: insertion with m2m: ")
    assert str(bare_m2m100) in skipped[0]  # the reason names the model that lacks the markers
    assert "crop-hf evaluate-projection" in (Path(__file__).parents[1] / "docs/how-to/project-labels.md").read_text()


# --------------------------------------------------------------------------- synthesis --method insertion


def _insertion_models(scorer, translator=None):
    models = fake_models()
    # "Hinz" is translated "Anna Hinz Kunz": two entities for the fake tagger, one word to place them in
    models.translator = translator or RecordingTranslator({("de", "en"): {"wohnt": "lives", "Hinz": "Anna Hinz Kunz"}})
    models.scorer = scorer
    return models


def test_insertion_synthesis_places_the_source_spans_in_the_raw_sentence_and_never_translates_back(scorer):
    models = _insertion_models(scorer)
    config = fake_config("unused", "unused", tgt_langs=["de"], method="insertion", num_beams=4, max_new_tokens=17)
    stages = []
    sentences = ["Anna wohnt in Hamburg .",
                 "Hinz",  # two entities of its translation ("Hinz", "Kunz"); one word cannot hold both
                 "Siehe __SLOT2__ Fußnote ."]  # insertion's own marker in the raw sentence
    kept, discarded, reasons = as_rows(synthesize_shard(sentences, "de", config, models, None, on_stage=stages.append))

    assert stages == ["translate", "tag", "project"]
    assert models.translator.requests == [(sentences[:2], {"src_lang": "de", "tgt_lang": "en",
                                                           "num_return_sequences": 1, "num_beams": 4,
                                                           "max_new_tokens": 17})]  # no back-translation call
    source = tokenize_target("Anna lives in Hamburg .", "en")
    (expected,) = project_examples("insertion", [ProjectionExample(
        tokenize_target(sentences[0], "de"), source_tokens=source.tokens, source_spans=[Span(3, 4, "LOC")])],
        scorer=scorer, drop_incomplete=True)
    assert expected.kept  # one span, five free words: a random model too places it somewhere, and the kept
    assert kept == [{"tokens": expected.tokens, "ner_tags": CONLL_LABELS.encode(expected.tags), "lang": "de",
                     "source_translation": "Anna lives in Hamburg .", "labeled_translation": "",
                     "back_translation": "", "source_labels": ["LOC"], "projection_status": ["projected"],
                     "tokenization": "words"}]  # row holds exactly where it put Hamburg's markers
    by_text = {row["text"]: row for row in discarded}
    assert by_text["Siehe __SLOT2__ Fußnote ."]["reason"] == "contains_marker"
    both = by_text["Hinz"]
    assert both["reason"] == "projection_incomplete" and sorted(both["projection_status"]) == ["conflict", "projected"]
    assert reasons["markers_incomplete"] == reasons["wrong_language_target"] == 0


def test_insertion_synthesis_run_card_report_and_printout_say_how_the_labels_were_placed(tmp_path, scorer):
    from crop_hf.report.data import read_report_data

    (tmp_path / "de.txt").write_text("Anna wohnt in Hamburg .\nHinz\n", encoding="utf-8")
    config = fake_config(str(tmp_path / "{lang}.txt"), str(tmp_path / "out"), tgt_langs=["de"], method="insertion")
    result = synthesize(config, models=_insertion_models(scorer))
    statistics = result.statistics["de"]
    assert statistics["input"] == 2 and statistics["projection_incomplete"] == 1
    assert statistics["markers_incomplete"] == statistics["wrong_language_target"] == 0
    said = placement("insertion")
    assert said.startswith("placed by insertion into the raw sentence") and said.endswith("no labeled back-translation)")
    card = (tmp_path / "out" / "README.md").read_text(encoding="utf-8")
    assert f"the labels were {said}, then filtered" in " ".join(card.split())
    assert "without its labeled back-translation" in card and "translated back with" not in card
    assert "| translation and label placement | `fake-mt` |" in card
    assert f"\nlabels: {said}\n" in result.report()
    assert any(note.startswith(f"The labels were {said}.") for note in read_report_data(tmp_path / "out").notes)
    # CroP's route says nothing of the kind
    lexical = synthesize(fake_config(str(tmp_path / "{lang}.txt"), str(tmp_path / "lexical"), tgt_langs=["de"]),
                         models=fake_models())
    assert lexical.notes == [] and "labels:" not in lexical.report()
    assert read_report_data(tmp_path / "lexical").notes == []


def test_insertion_synthesis_with_the_tiny_models_loads_the_translation_model_once_as_its_scorer(
        tmp_path, tiny_m2m100, tiny_xlmr_ner):
    (tmp_path / "de.txt").write_text("Ich wohne in Hamburg .\nAnna trifft Peter in Berlin .\n", encoding="utf-8")
    config = SynthesisConfig(tgt_langs=["de"], input=str(tmp_path / "{lang}.txt"), output_dir=str(tmp_path / "out"),
                             mt_model=str(tiny_m2m100), ner_model=str(tiny_xlmr_ner), method="insertion", num_beams=1,
                             num_return_sequences=1, max_new_tokens=10, language_filter=False, show_progress=False)
    models = SynthesisModels.load(config)
    assert isinstance(models.scorer, TranslationScorer) and models.translator.model is models.scorer.model
    assert len(models.translator.tokenizer) == len(models.scorer.tokenizer)  # no marker token was added
    result = synthesize(config, models=models)
    assert result.statistics["de"]["input"] == 2
    discarded = datasets.load_from_disk(str(tmp_path / "out" / "discarded"))["de"]
    kept = datasets.load_from_disk(str(tmp_path / "out" / "dataset"))["de"]
    assert all(row["labeled_translation"] == "" and row["back_translation"] == "" for row in [*kept, *discarded])
    assert all(row["source_translation"] for row in discarded)  # the raw sentence was translated and tagged


def test_a_model_without_marker_tokens_fails_insertion_synthesis_at_load_before_any_shard(tmp_path, bare_m2m100):
    (tmp_path / "de.txt").write_text("Ich wohne in Hamburg .\n", encoding="utf-8")
    (tmp_path / "no-ner-here").mkdir()  # a folder, but no model: loading it would fail
    config = SynthesisConfig(tgt_langs=["de"], input=str(tmp_path / "{lang}.txt"), output_dir=str(tmp_path / "out"),
                             mt_model=str(bare_m2m100), ner_model=str(tmp_path / "no-ner-here"), method="insertion",
                             language_filter=False, show_progress=False)
    with pytest.raises(ValueError, match=_marker_error(bare_m2m100)):  # before the NER model loads
        synthesize(config)
    assert not list((tmp_path / "out").glob("shards/*/de/*.parquet"))
    with pytest.raises(ValueError, match=r"method='insertion' scores the raw sentence with mt_model itself .* "
                                         r"backend='ctranslate2' cannot"):
        SynthesisConfig(tgt_langs=["de"], method="insertion", backend="ctranslate2")


def test_models_given_without_a_scorer_fail_before_any_shard(tmp_path, tiny_bart):
    (tmp_path / "de.txt").write_text("Anna wohnt in Hamburg .\n", encoding="utf-8")
    config = fake_config(str(tmp_path / "{lang}.txt"), str(tmp_path / "out"), tgt_langs=["de"], method="insertion")
    models = _insertion_models(None)
    with pytest.raises(ValueError, match=r"^insertion projection scores spans with a translation model"):
        synthesize(config, models=models)
    models.scorer = TranslationScorer.from_pretrained(tiny_bart)  # one fixed direction: not de→en→de
    with pytest.raises(ValueError, match=r"translates one fixed direction and cannot score en→de"):
        synthesize(config, models=models)
    assert models.translator.requests == []


# --------------------------------------------------------------------------- translate-and-align


WORDS = {"call": "ruf", "mom": "mama", "at": "um", "set": "stell", "an": "einen", "alarm": "wecker", "for": "für"}


class _Words:
    """Translates English word by word into "German" (names unchanged)."""

    def __call__(self, texts, src_lang, tgt_lang, **kwargs):
        return [{"translation": " ".join(WORDS.get(w, w) for w in text.split())} for text in texts]


ITEMS = [ParseInput("[IN:CREATE_CALL call [SL:CONTACT mom ] ]", None, "x.tsv:1"),
         ParseInput("[IN:CREATE_ALARM set an alarm for [SL:DATE_TIME 7 am ] ]", None, "x.tsv:2")]


@pytest.mark.parametrize("method", ["insertion", "rerank"])
def test_translate_align_projects_the_parse_slots_with_a_scored_method(tmp_path, scorer, method):
    config = TranslateAlignConfig(input="unused", output_dir=str(tmp_path / "out"), tgt_lang="de", method=method,
                                  language_filter=False, keep_incomplete=True, show_progress=False)
    kept, discarded, _ = as_rows(align_batch(ITEMS, config, TranslateAlignModels(_Words(), None, scorer)))
    assert discarded == [] and [row["method"] for row in kept] == [method, method]
    expected = project_examples(method, [
        ProjectionExample(tokenize_target("ruf mama", "de", "words"), source_tokens=["call", "mom"],
                          source_spans=[Span(1, 2, "CONTACT")]),
        ProjectionExample(tokenize_target("stell einen wecker für 7 am", "de", "words"),
                          source_tokens=["set", "an", "alarm", "for", "7", "am"], source_spans=[Span(4, 6, "DATE_TIME")])],
        scorer=scorer, drop_incomplete=False)
    assert [row["slot_tags"] for row in kept] == [result.tags for result in expected]
    assert [row["projection_status"] for row in kept] == [[s.status for s in r.statuses] for r in expected]


def test_translate_align_loads_the_translators_model_as_its_scorer_and_keeps_parses(tmp_path, tiny_m2m100):
    config = TranslateAlignConfig(input="unused", output_dir=str(tmp_path / "out"), tgt_lang="de",
                                  method="insertion", mt_model=str(tiny_m2m100), language_filter=False,
                                  keep_incomplete=True, num_beams=1, max_new_tokens=8, show_progress=False)
    models = TranslateAlignModels.load(config)
    assert models.aligner is None and models.translator.model is models.scorer.model
    result = translate_align(config, models, inputs=ITEMS)
    assert result.statistics["train"]["input"] == 2
    card = (tmp_path / "out" / "README.md").read_text(encoding="utf-8")
    assert "insertion projection, scored by the translation model" in card and "eflomal" not in card
    for row in datasets.load_from_disk(str(tmp_path / "out" / "dataset"))["train"]:
        assert row["method"] == "insertion" and row["parse"].startswith("[IN:")


def test_translate_align_refuses_a_model_that_cannot_do_the_method_when_it_loads(tmp_path, bare_m2m100):
    config = TranslateAlignConfig(input="unused", output_dir=str(tmp_path / "out"), tgt_lang="de",
                                  method="insertion", mt_model=str(bare_m2m100), show_progress=False)
    with pytest.raises(ValueError, match=_marker_error(bare_m2m100)):
        TranslateAlignModels.load(config)
    with pytest.raises(ValueError, match=r"^insertion projection scores spans with a translation model"):
        as_rows(align_batch(ITEMS, config, TranslateAlignModels(_Words(), None)))  # models given without one
