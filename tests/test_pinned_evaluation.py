"""Behaviours of evaluation and parsing that no test pinned (issue 48, point 6).

How the joint parser ranks its candidate intents (intent probability times tag-path probability),
that projection's per-type scores count dropped sentences as its overall scores do, which rows
``evaluate-projection --flat_only`` leaves out, and that ``--extra_parallel`` text only reaches the
aligner, never the scored pairs.
"""

from __future__ import annotations

import json
import math

import pytest
import torch
from test_parser_nested import _decode_one, _hand_model, _set_shared_tagger
from test_projection_evaluation import _europarl_folder

from crop_hf.metrics.projection import evaluate_projection

# --------------------------------------------------------------------------- the joint parser's ranking


def _one_word_tag_probability(score: float) -> float:
    """The best tag path's probability for one word whose B-L scores ``score`` and O 0 (I-L cannot start).

    ``_set_shared_tagger``'s emissions are the scores times gelu(1): the intent embedding is 1.
    """
    gelu_one = torch.nn.functional.gelu(torch.tensor(1.0)).item()
    return 1 / (1 + math.exp(-score * gelu_one))


@pytest.mark.parametrize(("tag_scores", "intent_bias", "expected"), [
    # A near-certain (0.99) with its one word undecided (0.5) beats B (0.007) whose word is surely an L
    ({1: [0.0, 8.0, 0.0]}, [5.0, 0.0, -1.0, -1.0], 0),
    # A likeliest but undecided, C's tags surest but C unlikely: B, second on both, has the best product
    ({1: [0.0, 3.0, 0.0], 2: [0.0, 8.0, 0.0]}, [1.0, 0.8, 0.3, -3.0], 1),
], ids=["sure-tags-lose-to-a-sure-intent", "neither-alone-picks-the-best-product"])
def test_the_parser_ranks_intents_by_intent_probability_times_tag_path_probability(tag_scores, intent_bias,
                                                                                    expected):
    model = _hand_model()
    _set_shared_tagger(model, tag_scores, intent_bias)
    parsed = _decode_one(model, 1)
    intent_probabilities = torch.tensor(intent_bias).softmax(-1).tolist()
    paths = {i: _one_word_tag_probability(tag_scores.get(i, [0.0, 0.0])[1]) for i in range(3)}
    products = {i: intent_probabilities[i] * paths[i] for i in range(3)}
    assert max(products, key=products.get) == expected  # the case is what its comment says
    assert parsed.intent_id == expected
    assert parsed.intent_probability == pytest.approx(intent_probabilities[expected], rel=1e-5)
    assert parsed.slot_probability == pytest.approx(paths[expected], rel=1e-4)


# --------------------------------------------------------------------------- per-type projection scores


def test_per_type_scores_count_a_dropped_sentences_entities_as_missed_like_the_overall_scores():
    source = [(["Anna", "met", "Bob"], ["B-PER", "O", "B-PER"]),
              (["Eva", "left", "Oslo"], ["B-PER", "O", "B-LOC"])]
    target = [(["Anna", "traf", "Robert"], ["B-PER", "O", "B-PER"]),
              (["Eva", "verließ", "Oslo"], ["B-PER", "O", "B-LOC"])]
    row = evaluate_projection(source, target, methods=["lexical"]).rows[0]
    # "Bob" is not in the German sentence: sentence 1 is dropped, its two PER entities missed;
    # Eva and Oslo are found, so PER is 1 of 3 found (1 projected), LOC 1 of 1
    assert row.kept_rate == 0.5 and (row.precision, row.recall) == (1.0, 0.5)
    assert row.per_type == {"LOC": {"precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 1},
                            "PER": {"precision": 1.0, "recall": pytest.approx(1 / 3), "f1": 0.5, "support": 3}}
    assert row.kept_recall == 1.0  # over kept sentences only every entity was found: per-type is not that


# --------------------------------------------------------------------------- evaluate-projection's rows


def _record_scored_targets(monkeypatch) -> list[list[str]]:
    """Every target sentence projection runs on (the real projection runs), in order."""
    from crop_hf.projection import methods

    scored: list[list[str]] = []
    real = methods.project_examples

    def recording(method, examples, **options):
        scored.extend(list(example.target.tokens) for example in examples)
        return real(method, examples, **options)

    monkeypatch.setattr(methods, "project_examples", recording)
    return scored


def test_flat_only_leaves_out_rows_nested_on_either_side_and_keeps_flat_ones(tmp_path, monkeypatch, capsys):
    import datasets

    from crop_hf.cli import main

    # (English nested, Hinglish nested) per row; each row's words name it
    nesting = {"flat": (False, False), "source": (True, False), "target": (False, True),
               "both": (True, True), "alsoflat": (False, False)}
    corpus = tmp_path / "parallel"
    datasets.Dataset.from_dict({
        "en_tokens": [[name, "en"] for name in nesting], "en_slot_tags": [["B-X", "O"]] * len(nesting),
        "en_nested": [en for en, _ in nesting.values()],
        "tokens": [[name, "hi"] for name in nesting], "slot_tags": [["B-X", "O"]] * len(nesting),
        "nested": [hi for _, hi in nesting.values()],
    }).save_to_disk(str(corpus))
    scored = _record_scored_targets(monkeypatch)
    spec = ["--source", f"disk:{corpus}#en", "--target", f"disk:{corpus}", "--methods", "lexical",
            "--no_show_progress"]
    assert main(["evaluate-projection", *spec]) == 0
    assert scored == [[name, "hi"] for name in nesting]  # without the option every row is scored
    scored.clear()
    assert main(["evaluate-projection", *spec, "--flat_only"]) == 0
    assert scored == [["flat", "hi"], ["alsoflat", "hi"]]
    assert "2 sentence pairs, 2 source and 2 gold target entities" in capsys.readouterr().out


def test_extra_parallel_text_reaches_the_aligner_after_the_pairs_and_changes_no_scored_row(tmp_path, monkeypatch):
    from crop_hf.alignment import EflomalAligner
    from crop_hf.cli import main

    aligned: list[tuple[list, list]] = []

    def identity(self, source, target):
        """Word i to word i, pair by pair: what eflomal would learn from the rest cannot change a pair here."""
        aligned.append((list(source), list(target)))
        return [[(i, i) for i in range(min(len(s), len(t)))] for s, t in zip(source, target, strict=True)]

    monkeypatch.setattr(EflomalAligner, "align", identity)
    scored = _record_scored_targets(monkeypatch)
    spec = [*_europarl_folder(tmp_path, monkeypatch, 1, 1), "--methods", "alignment", "lexical",
            "--no_show_progress"]
    # one word a line: links sliced from the extra end of the corpus would miss every multi-word entity
    (tmp_path / "extra.en").write_text("Good\nmorning\nfriends\n", encoding="utf-8")
    (tmp_path / "extra.de").write_text("Guten\nMorgen\nFreunde\n", encoding="utf-8")
    payloads = []
    for extra in ([], ["--extra_parallel", str(tmp_path / "extra.en"), str(tmp_path / "extra.de")]):
        out = tmp_path / f"out{len(extra)}"
        assert main(["evaluate-projection", *spec, *extra, "--output_dir", str(out)]) == 0
        payloads.append(json.loads((out / "projection.json").read_text()))

    (plain_source, plain_target), (source, target) = aligned
    assert (source, target) == ([*plain_source, ["Good"], ["morning"], ["friends"]],
                                [*plain_target, ["Guten"], ["Morgen"], ["Freunde"]])
    assert [payload["aligners"]["eflomal"]["pairs"] for payload in payloads] == [2, 5]
    assert scored == plain_target * 4  # two rows a run, each over the two evaluated pairs only
    timing = {"seconds", "sentences_per_second"}
    without, with_extra = ([{k: v for k, v in row.items() if k not in timing} for row in payload["rows"]]
                           for payload in payloads)
    assert with_extra == without
    assert [row["f1"] for row in with_extra] == [1.0, 0.0]  # identity links are right for these pairs
    assert {k: payloads[1][k] for k in ("sentences", "source_entities", "gold_entities")} == {
        "sentences": 2, "source_entities": 4, "gold_entities": 4}
