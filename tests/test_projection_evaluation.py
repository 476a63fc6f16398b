"""Projection scored against gold translations: the Europarl-NER builder, the scoring, the command.

(The Europarl-NER reader's own tests are in test_data_readers.py, with the other readers.)
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crop_hf.labels import spans_to_tags
from crop_hf.metrics.projection import evaluate_projection, format_projection_table, projection_errors
from crop_hf.projection.methods import PROJECTION_METHODS


class Identity:
    """Word i of the source is linked to word i of the target."""

    def align(self, source, target):
        return [[(i, i) for i in range(min(len(s), len(t)))] for s, t in zip(source, target, strict=True)]


# --- Europarl-NER as released -------------------------------------------------------------------


def test_the_builder_loads_both_languages_sentence_aligned(shared_data, tmp_path):
    from crop_hf import load_dataset

    data_dir = str(shared_data / "europarl-ner")
    en = load_dataset("europarl_ner", "en", data_dir=data_dir, split="test", cache_dir=str(tmp_path))
    de = load_dataset("europarl_ner", "de", data_dir=data_dir, split="test", cache_dir=str(tmp_path))
    assert en.num_rows == de.num_rows == 799
    assert set(en["lang"]) == {"en"} and set(de["lang"]) == {"de"}
    names = de.features["ner_tags"].feature.names
    assert names[:3] == ["O", "B-PER", "I-PER"]
    assert de[0]["tokens"][0] == "Wiederaufnahme"


# --- the scores -----------------------------------------------------------------------------------


def test_projection_errors_counts_each_kind_exactly():
    gold = [["B-PER", "I-PER", "O", "B-LOC", "O", "B-ORG", "O", "O"],
            ["B-MISC", "O", "O"]]
    projected = [["B-PER", "I-PER", "O", "B-ORG", "I-ORG", "O", "O", "B-LOC"],   # correct, boundary, missed, spurious
                 ["B-LOC", "O", "B-PER"]]                                      # type, spurious
    assert projection_errors(projected, gold) == {"correct": 1, "type": 1, "boundary": 1, "missed": 1, "spurious": 2}


def test_evaluate_projection_scores_hand_made_pairs_exactly():
    source = [(["Anna", "Berg", "visits", "Paris", "today"], ["B-PER", "I-PER", "O", "B-LOC", "O"]),
              (["the", "Bundestag", "votes"], ["O", "B-ORG", "O"]),
              (["nothing", "here"], ["O", "O"])]
    target = [(["Heute", "besucht", "Anna", "Berg", "Paris"], ["O", "O", "B-PER", "I-PER", "B-LOC"]),
              (["der", "Bundestag", "stimmt", "ab"], ["O", "B-ORG", "O", "O"]),
              (["nichts", "hier"], ["O", "O"])]
    # sentence 1: Anna Berg correct, Paris linked one word too wide; sentence 2: Bundestag linked to "stimmt ab"
    links = [[(0, 2), (1, 3), (2, 1), (3, 3), (3, 4), (4, 0)], [(0, 0), (1, 2), (1, 3), (2, 2)], [(0, 0), (1, 1)]]
    evaluation = evaluate_projection(source, target, methods=["lexical", "alignment", "hybrid"],
                                     alignments={"hand": links})
    assert (evaluation.sentences, evaluation.source_entities, evaluation.gold_entities) == (3, 3, 3)

    # alignment: Anna Berg (PER, 2-4) wins word 3 over Paris (more links); Paris keeps word 4 → correct;
    # Bundestag → "stimmt ab" (wrong boundary: no overlap with gold "Bundestag" → missed + spurious)
    alignment = evaluation.row("alignment")
    assert (alignment.precision, alignment.recall) == (2 / 3, 2 / 3)
    assert alignment.errors == {"correct": 2, "type": 0, "boundary": 0, "missed": 1, "spurious": 1}
    assert alignment.kept_rate == 1.0 and alignment.entities_projected == 1.0 and alignment.aligner == "hand"

    # lexical (the source entity's own words): all three found; nothing dropped
    lexical = evaluation.row("lexical")
    assert lexical.aligner is None
    assert (lexical.precision, lexical.recall, lexical.f1) == (1.0, 1.0, 1.0)

    # hybrid: lexical first, so the stray links never matter here
    assert evaluation.row("hybrid").f1 == 1.0
    assert evaluation.row("hybrid").per_type == {
        "LOC": {"precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 1},
        "ORG": {"precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 1},
        "PER": {"precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 1}}


def test_a_dropped_sentence_counts_as_missed_over_all_sentences_and_not_over_kept_ones():
    source = [(["Anna", "met", "Bob"], ["B-PER", "O", "B-PER"]), (["Oslo", "is", "cold"], ["B-LOC", "O", "O"])]
    target = [(["Anna", "traf", "Robert"], ["B-PER", "O", "B-PER"]), (["Oslo", "ist", "kalt"], ["B-LOC", "O", "O"])]
    row = evaluate_projection(source, target, methods=["lexical"]).rows[0]
    # "Bob" is not in the German sentence: the first sentence is dropped (CroP's rule), Anna with it
    assert row.kept_rate == 0.5 and row.entities_projected == 2 / 3
    assert (row.precision, row.recall) == (1.0, 1 / 3)
    assert (row.kept_precision, row.kept_recall, row.kept_f1) == (1.0, 1.0, 1.0)
    assert row.errors == {"correct": 1, "type": 0, "boundary": 0, "missed": 2, "spurious": 0}


def test_named_settings_become_rows_and_bad_options_or_lengths_are_errors():
    source = [(["Anna", "sleeps"], ["B-PER", "O"])]
    target = [(["Anna", "schläft"], ["B-PER", "O"])]
    evaluation = evaluate_projection(source, target, methods={"split": ("alignment", {"fill_gaps": 0}),
                                                              "gap 2": ("alignment", {"fill_gaps": 2})},
                                     aligners={"identity": Identity()})
    assert [(row.name, row.options) for row in evaluation.rows] == [("split", {"fill_gaps": 0}),
                                                                     ("gap 2", {"fill_gaps": 2})]
    written = evaluate_projection(source, target, methods=["alignment?fill_gaps=2&pieces=split&trim_edges=true"],
                                  aligners={"identity": Identity()})
    assert written.rows[0].options == {"fill_gaps": 2, "pieces": "split", "trim_edges": True}
    assert written.rows[0].name == "alignment?fill_gaps=2&pieces=split&trim_edges=true"
    with pytest.raises(ValueError, match="expected key=value"):
        evaluate_projection(source, target, methods=["hybrid?fuzzy"], aligners={})
    with pytest.raises(TypeError, match="threshold"):
        evaluate_projection(source, target, methods={"x": ("alignment", {"threshold": 90})}, aligners={})
    with pytest.raises(ValueError, match="1 source sentences but 2 target"):
        evaluate_projection(source, target * 2, aligners={"identity": Identity()})
    with pytest.raises(ValueError, match="2 tokens but 1 tags"):
        evaluate_projection([(["Anna", "sleeps"], ["B-PER"])], target, aligners={"identity": Identity()})
    table = format_projection_table(evaluation)
    assert table.splitlines()[0].split()[:5] == ["method", "aligner", "P", "R", "F1"]
    assert "PER F1" in table and "100.0" in table


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["O", "PER", "LOC", "ORG"]), min_size=1, max_size=6), min_size=1, max_size=4),
       st.data())
def test_gold_projected_onto_itself_through_an_identity_alignment_scores_f1_one_with_every_method(sentences, data):
    """Unique words, the same sentence on both sides, word i linked to word i: nothing can go wrong."""
    pairs = []
    for k, kinds in enumerate(sentences):
        tokens = [f"w{k}x{i}" for i in range(len(kinds) * 2)]
        spans, position = [], 0
        for kind in kinds:  # each entity 1 or 2 words, separated by an O word
            width = data.draw(st.integers(1, 2))
            if kind != "O" and position + width <= len(tokens):
                spans.append((position, position + width, kind))
            position += width + 1
            if position >= len(tokens):
                break
        tags = spans_to_tags(spans, len(tokens))
        pairs.append((tokens, tags))
    evaluation = evaluate_projection(pairs, pairs, aligners={"identity": Identity()})
    assert {row.method for row in evaluation.rows} == {name for name, method in PROJECTION_METHODS.items()
                                                       if not method.uses_scorer}
    for row in evaluation.rows:
        if evaluation.gold_entities:
            assert (row.name, row.f1, row.kept_f1) == (row.name, 1.0, 1.0)
        assert row.kept_rate == 1.0 and row.entities_projected == 1.0
        assert row.errors["correct"] == evaluation.gold_entities
        assert row.errors["spurious"] == row.errors["missed"] == row.errors["boundary"] == 0


# --- the command ------------------------------------------------------------------------------------

EN = ("Mr\tO\nBerlusconi\tB-PER\nvisited\tO\nthe\tO\nEuropean\tB-ORG\nParliament\tI-ORG\n.\tO\n\n"
      "The\tO\nGerman\tB-MISC\nvote\tO\nin\tO\nStrasbourg\tB-LOC\n.\tO\n\n")
DE = ("Herr\tO\nBerlusconi\tB-PER\nbesuchte\tO\ndas\tO\nEuropäische\tB-ORG\nParlament\tI-ORG\n.\tO\n\n"
      "Die\tO\ndeutsche\tB-MISC\nAbstimmung\tO\nin\tO\nStraßburg\tB-LOC\n.\tO\n\n")


def _europarl_folder(tmp_path, monkeypatch, english_copies: int, german_copies: int):
    """A Europarl-NER folder of EN and DE repeated (datasets' cache in tmp_path); its source specs."""
    import datasets

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "cache"))
    data = tmp_path / "europarl-ner"
    data.mkdir()
    (data / "en-europarl.test.conll02").write_text(EN * english_copies, encoding="utf-8")
    (data / "de-europarl.test.conll02").write_text(DE * german_copies, encoding="utf-8")
    return ["--source", f"europarl_ner:en?data_dir={data}", "--target", f"europarl_ner:de?data_dir={data}"]


def test_the_command_writes_its_table_json_and_plot(tmp_path, monkeypatch, capsys):
    from crop_hf.cli import main

    spec = _europarl_folder(tmp_path, monkeypatch, 20, 20)
    out = tmp_path / "out"
    code = main(["evaluate-projection", *spec, "--max_samples", "30", "--output_dir", str(out),
                 "--no_show_progress"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "30 sentence pairs, 60 source and 60 gold target entities (eflomal: 30 pairs" in printed
    payload = json.loads((out / "projection.json").read_text())
    assert [(row["method"], row["aligner"]) for row in payload["rows"]] == [
        ("lexical", None), ("fuzzy", None), ("alignment", "eflomal"), ("hybrid", "eflomal")]
    lexical = payload["rows"][0]
    # Berlusconi is spelled alike in both, no other entity is: 15 of 60 found, no sentence complete
    assert lexical["entities_projected"] == 0.25
    assert lexical["kept_rate"] == 0.0 and lexical["recall"] == 0.0
    assert (out / "projection.txt").read_text().splitlines()[0].startswith("method")
    assert (out / "projection.md").read_text().startswith("| method |")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "no plot:" in printed
    else:
        assert (out / "projection.png").read_bytes()[:4] == b"\x89PNG"


def test_the_command_needs_equally_long_corpora(tmp_path, monkeypatch, capsys):
    from crop_hf.cli import main

    code = main(["evaluate-projection", *_europarl_folder(tmp_path, monkeypatch, 2, 1), "--no_show_progress"])
    assert code == 1
    assert "has 4 rows but" in capsys.readouterr().err


def test_each_symmetrization_is_an_eflomal_row_and_a_wrong_one_is_an_error(tmp_path, monkeypatch, capsys):
    from crop_hf.cli import main

    spec = [*_europarl_folder(tmp_path, monkeypatch, 10, 10), "--no_show_progress", "--methods", "hybrid"]
    out = tmp_path / "out"
    assert main(["evaluate-projection", *spec, "--symmetrization", "grow-diag-final", "intersection",
                 "--output_dir", str(out)]) == 0
    payload = json.loads((out / "projection.json").read_text())
    assert [(row["method"], row["aligner"]) for row in payload["rows"]] == [
        ("hybrid", "eflomal (grow-diag-final)"), ("hybrid", "eflomal (intersection)")]
    assert set(payload["aligners"]) == {"eflomal (grow-diag-final)", "eflomal (intersection)"}
    capsys.readouterr()
    assert main(["evaluate-projection", *spec, "--symmetrization", "grow-diag"]) == 0
    assert "eflomal (grow-diag)" in capsys.readouterr().out
    assert main(["evaluate-projection", *spec, "--symmetrization", "diagonal"]) == 1
    assert "unknown symmetrization 'diagonal'" in capsys.readouterr().err
