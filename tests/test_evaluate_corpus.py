"""A corpus scored against gold labels (``crop_hf.metrics.corpus``, ``crop-hf evaluate-corpus``).

Small hand-made corpora whose every error is known (each error kind counted, per-type P/R/F1 by
hand, and the same as seqeval's own report), discarded rows per drop reason, a self-training
corpus per label rule, the two bad inputs (no shared sentence, other entity types), a real
synthesized folder through the command line, and CoNLL-2002 Spanish with known perturbations.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import datasets
import pytest
from synthesis_fakes import fake_config, fake_models

from crop_hf.cli import main
from crop_hf.data.features import ner_features, tag_strings
from crop_hf.data.sources import load_source
from crop_hf.labels import CONLL_LABELS, Span, spans_to_tags, tags_to_spans
from crop_hf.metrics.corpus import (
    entity_scores,
    evaluate_corpus,
    format_corpus_report,
    read_corpus,
    retokenize_tags,
    sentence_key,
)
from crop_hf.metrics.projection import projection_errors
from crop_hf.ner.evaluate import score_tags
from crop_hf.synthesis import synthesize

GOLD = [
    ("Anna Berg lives in New York .", ["B-PER", "I-PER", "O", "O", "B-LOC", "I-LOC", "O"]),
    ("Siemens AG sits in Munich .", ["B-ORG", "I-ORG", "O", "O", "B-LOC", "O"]),
    ("Peter met Maria in Paris .", ["B-PER", "O", "B-PER", "O", "B-LOC", "O"]),
    ("Nothing here .", ["O", "O", "O"]),
    ("The Elbe flows .", ["O", "B-LOC", "O", "O"]),
]
KEPT = [
    # Anna Berg right; New York cut to New: a wrong boundary
    ("Anna Berg lives in New York .", ["B-PER", "I-PER", "O", "O", "B-LOC", "O", "O"]),
    # Siemens AG as PER: a wrong type; Munich right; "sits" a spurious ORG
    ("Siemens AG sits in Munich .", ["B-PER", "I-PER", "B-ORG", "O", "B-LOC", "O"]),
    # Peter and Paris right; Maria missed
    ("Peter met Maria in Paris .", ["B-PER", "O", "O", "O", "B-LOC", "O"]),
    # in no gold split
    ("Nobody knows this one .", ["B-PER", "O", "O", "O", "O"]),
]
DISCARDED = [
    ("The Elbe flows .", ["O", "O", "O", "O"], "projection_incomplete"),  # the Elbe missed
    ("Peter met Maria in Paris .", ["B-PER", "O", "B-PER", "O", "B-LOC", "O"], "projection_incomplete"),  # right
    ("Nothing here .", None, "markers_incomplete"),  # matched, but projection never ran: no labels
    ("Not in the gold either .", None, "all_o"),
]


def rows(pairs, features=None) -> datasets.Dataset:
    return datasets.Dataset.from_dict({"tokens": [text.split() for text, *_ in pairs],
                                       "ner_tags": [tags for _, tags, *_ in pairs]}, features=features)


def same_per_type(mine: dict, theirs: dict) -> bool:
    return mine.keys() == theirs.keys() and all(mine[t] == pytest.approx(theirs[t]) for t in mine)


def gold_set(pairs=GOLD) -> datasets.Dataset:
    return rows(pairs)


def discarded_set(items=DISCARDED) -> datasets.Dataset:
    return datasets.Dataset.from_dict({"tokens": [text.split() for text, _, _ in items],
                                       "projected_tags": [tags for _, tags, _ in items],
                                       "reason": [reason for _, _, reason in items]})


def test_each_error_kind_is_counted_and_every_score_is_the_hand_count():
    evaluation = evaluate_corpus(rows(KEPT), gold_set(), discarded=discarded_set())
    kept = evaluation.kept
    assert (kept.sentences, kept.matched, kept.scored) == (4, 3, 3)
    assert kept.errors == {"correct": 4, "type": 1, "boundary": 1, "missed": 1, "spurious": 1}
    assert (kept.entities, kept.gold_entities) == (7, 7)
    assert kept.precision == pytest.approx(4 / 7) and kept.recall == pytest.approx(4 / 7)
    # PER: Anna Berg, Siemens AG (wrong), Peter predicted; Anna Berg, Peter, Maria gold
    assert kept.per_type["PER"] == pytest.approx({"precision": 2 / 3, "recall": 2 / 3, "f1": 2 / 3, "support": 3})
    assert kept.per_type["LOC"] == pytest.approx({"precision": 2 / 3, "recall": 2 / 3, "f1": 2 / 3, "support": 3})
    assert kept.per_type["ORG"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1}
    # the numbers are seqeval's own report of the same sentences
    matched = [tags for _, tags in KEPT[:3]], [tags for _, tags in GOLD[:3]]
    reference = score_tags(matched[1], matched[0])
    assert (kept.precision, kept.recall, kept.f1) == pytest.approx((reference.precision, reference.recall,
                                                                     reference.f1))
    assert same_per_type(kept.per_type, reference.per_type)
    assert kept.errors == projection_errors(*matched)
    # the gold split's 8 entities: the kept sentences' gold sentences hold 7, and 4 are labeled right
    assert evaluation.gold_entities == 8 and evaluation.gold_sentences == 5
    assert evaluation.coverage == {"gold_sentences": 3, "gold_entities": 7, "share": 7 / 8, "found": 4,
                                   "found_share": 0.5}
    assert evaluation.types == ["LOC", "ORG", "PER"] and evaluation.unscored_types == []


def test_examples_show_the_spans_of_each_kind_most_frequent_first():
    kept = [*KEPT, KEPT[1]]  # the Siemens sentence twice: its errors are the most frequent
    examples = evaluate_corpus(rows(kept), gold_set()).kept.examples
    assert examples["type"] == [{"gold": [["Siemens AG", "ORG"]], "predicted": [["Siemens AG", "PER"]], "count": 2,
                                 "sentence": "Siemens AG sits in Munich ."}]
    assert examples["boundary"] == [{"gold": [["New York", "LOC"]], "predicted": [["New", "LOC"]], "count": 1,
                                     "sentence": "Anna Berg lives in New York ."}]
    assert examples["missed"] == [{"gold": [["Maria", "PER"]], "predicted": [], "count": 1,
                                   "sentence": "Peter met Maria in Paris ."}]
    assert examples["spurious"] == [{"gold": [], "predicted": [["sits", "ORG"]], "count": 2,
                                     "sentence": "Siemens AG sits in Munich ."}]
    boundary = [("Consejo Político Municipal de IU dijo", ["B-ORG", "I-ORG", "I-ORG", "I-ORG", "I-ORG", "O"]),
                ("El Mundial empieza", ["O", "B-MISC", "O"])]  # the gold has MISC too
    split_up = [("Consejo Político Municipal de IU dijo", ["B-ORG", "B-MISC", "B-ORG", "O", "O", "O"])]
    pieces = evaluate_corpus(rows(split_up), gold_set(boundary)).kept
    assert pieces.examples["boundary"][0]["predicted"] == [["Consejo", "ORG"], ["Político", "MISC"],
                                                           ["Municipal", "ORG"]]
    assert pieces.errors["boundary"] == 1 and pieces.errors["spurious"] == 0
    assert evaluate_corpus(rows(kept), gold_set(), examples=0).kept.examples["type"] == []


def test_discarded_sentences_are_scored_per_drop_reason_where_they_carry_labels():
    discarded = evaluate_corpus(rows(KEPT), gold_set(), discarded=discarded_set()).discarded
    assert list(discarded) == ["projection_incomplete", "markers_incomplete", "all_o"]
    incomplete = discarded["projection_incomplete"]
    assert (incomplete.sentences, incomplete.matched, incomplete.scored) == (2, 2, 2)
    assert incomplete.errors == {"correct": 3, "type": 0, "boundary": 0, "missed": 1, "spurious": 0}
    assert (incomplete.precision, incomplete.recall) == (1.0, 0.75)
    markers = discarded["markers_incomplete"]
    assert (markers.sentences, markers.matched, markers.scored, markers.f1) == (1, 1, 0, 0.0)
    assert (discarded["all_o"].sentences, discarded["all_o"].matched) == (1, 0)


def test_a_perfect_corpus_scores_100_and_the_report_says_so():
    evaluation = evaluate_corpus(rows(GOLD[:3]), gold_set())
    assert (evaluation.kept.precision, evaluation.kept.recall, evaluation.kept.f1) == (1.0, 1.0, 1.0)
    assert evaluation.kept.errors == {"correct": 7, "type": 0, "boundary": 0, "missed": 0, "spurious": 0}
    report = format_corpus_report(evaluation)
    assert "types scored: LOC ORG PER" in report
    assert "0 corpus sentences have no gold sentence of the same text" in report
    assert "cover 7 of the 8 gold entities (87.5%, in 3 gold sentences) and label 7 of them right (87.5%)" in report
    kept_row = next(line for line in report.splitlines() if line.startswith("kept "))
    assert kept_row.split()[1:] == ["3", "3", "3", "7", "7", "100.0", "100.0", "100.0", "100.0", "100.0", "100.0"]


def test_a_text_held_twice_by_the_gold_is_matched_to_each_copy_in_turn():
    twice = [("Madrid , 25 may .", ["B-LOC", "O", "O", "O", "O"]), ("Madrid , 25 may .", ["O"] * 5)]
    evaluation = evaluate_corpus(rows(twice), gold_set(twice))  # the corpus copies the gold
    assert evaluation.kept.f1 == 1.0 and evaluation.kept.errors["spurious"] == 0
    assert evaluation.coverage["gold_sentences"] == 2


def test_a_sentence_tokenized_otherwise_is_matched_on_its_characters():
    gold = gold_set([("Vive en Nueva York (EEUU).", ["O", "O", "B-LOC", "I-LOC", "B-LOC"])])
    corpus = rows([("Vive en Nueva York ( EEUU ) .", ["O", "O", "B-LOC", "I-LOC", "O", "B-LOC", "O", "O"])])
    evaluation = evaluate_corpus(corpus, gold)
    assert evaluation.retokenized == 1 and evaluation.kept.matched == 1
    # the gold's "(EEUU)." covers three corpus tokens: the corpus's EEUU alone is a wrong boundary
    assert evaluation.kept.errors == {"correct": 1, "type": 0, "boundary": 1, "missed": 0, "spurious": 0}
    assert "1 matched on their text, tokenized otherwise" in format_corpus_report(evaluation)
    assert retokenize_tags(["東京", "に"], ["B-LOC", "O"], list("東京に")) == ["B-LOC", "I-LOC", "O"]
    assert sentence_key(["  Caf\u0065\u0301", "bar "]) == "Café bar"


def test_a_gold_set_sharing_no_sentence_is_an_error_saying_how_many_were_tried():
    corpus = rows([("Nobody knows this one .", ["B-PER", "O", "O", "O", "O"]),
                   ("Nor this .", ["O", "O", "O"])])
    discarded = discarded_set([("Not in the gold either .", None, "all_o")])
    with pytest.raises(ValueError, match=r"tried 3 corpus sentences \(2 kept, 1 discarded\) against the 5 "
                                         r"sentences of gold") as error:
        evaluate_corpus(corpus, gold_set(), discarded=discarded)
    assert "'Nobody knows this one .'" in str(error.value) and "'Anna Berg lives in New York .'" in str(error.value)


def test_types_only_one_side_has_are_named_and_the_common_ones_scored(caplog):
    gold = gold_set([("Anna visited the Expo in Oslo .", ["B-PER", "O", "O", "B-EVT", "O", "B-LOC", "O"])])
    names = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]  # the labeler's set: no EVT
    tags = ["B-PER", "O", "B-MISC", "I-MISC", "O", "B-LOC", "O"]
    corpus = datasets.Dataset.from_dict({"tokens": [["Anna", "visited", "the", "Expo", "in", "Oslo", "."]],
                                         "ner_tags": [[names.index(tag) for tag in tags]]},
                                        features=ner_features(names, lang=False))
    with caplog.at_level(logging.WARNING, logger="crop_hf.metrics.corpus"):
        evaluation = evaluate_corpus(corpus, gold)
    (warning,) = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    assert "cannot score entity type(s) EVT, MISC" in warning
    assert "MISC only in the corpus" in warning and "EVT only in the gold" in warning
    assert evaluation.corpus_only_types == ["MISC"] and evaluation.gold_only_types == ["EVT"]
    assert evaluation.types == ["LOC", "PER"]
    assert evaluation.kept.errors == {"correct": 2, "type": 0, "boundary": 0, "missed": 0, "spurious": 0}
    assert "types not scored, read as O: MISC (only in the corpus); EVT (only in the gold)" in \
        format_corpus_report(evaluation)
    # renamed to one type, both are scored: the corpus's span is one token too long
    renamed = evaluate_corpus(corpus, gold, label_map={"EVT": "MISC"})
    assert renamed.unscored_types == [] and renamed.kept.errors["boundary"] == 1


def test_a_corpus_of_tag_strings_is_scored_on_every_gold_type_even_one_it_never_predicts(caplog):
    """Tag strings declare no label set: a gold type the corpus never uses is missed, not excused."""
    gold = gold_set([("Anna visited Oslo .", ["B-PER", "O", "B-LOC", "O"])])
    with caplog.at_level(logging.WARNING, logger="crop_hf.metrics.corpus"):
        evaluation = evaluate_corpus(rows([("Anna visited Oslo .", ["O", "O", "B-LOC", "O"])]), gold)
    assert not caplog.records and evaluation.types == ["LOC", "PER"]
    assert evaluation.kept.errors["missed"] == 1 and evaluation.kept.recall == 0.5


def test_a_corpus_and_a_gold_without_a_common_type_are_refused():
    gold = gold_set([("Anna lives here .", ["B-PERSON", "O", "O", "O"])])
    with pytest.raises(ValueError, match="share no entity type: the corpus has PER, the gold PERSON"):
        evaluate_corpus(rows([("Anna lives here .", ["B-PER", "O", "O", "O"])]), gold)


def test_a_self_training_corpus_is_scored_per_label_rule(tmp_path):
    names = list(CONLL_LABELS.names)
    features = ner_features(names, extra={"label_rule": datasets.ClassLabel(names=["synthesis", "agree", "union"])})
    corpus = datasets.Dataset.from_dict({
        "tokens": [text.split() for text, _ in KEPT[:3]],
        "ner_tags": [[names.index(tag) for tag in tags] for _, tags in KEPT[:3]],
        "lang": ["en"] * 3, "label_rule": [0, 2, 0]}, features=features)
    datasets.DatasetDict({"train": corpus}).save_to_disk(str(tmp_path / "self-train" / "corpus"))
    evaluation = evaluate_corpus(str(tmp_path / "self-train"), gold_set())
    assert list(evaluation.rules) == ["synthesis", "union"]
    assert evaluation.rules["union"].errors == {"correct": 1, "type": 1, "boundary": 0, "missed": 0, "spurious": 1}
    assert evaluation.rules["synthesis"].errors == {"correct": 3, "type": 0, "boundary": 1, "missed": 1,
                                                    "spurious": 0}
    assert evaluation.kept.errors["correct"] == 4
    assert evaluation.corpus_only_types == ["MISC"]  # the label set declares it, the gold never has it
    assert "kept, label_rule union" in format_corpus_report(evaluation)


def test_a_corpus_of_several_languages_is_read_in_the_gold_language_and_a_missing_one_is_named(tmp_path):
    corpus = datasets.DatasetDict({"de": rows(KEPT[:1]).add_column("lang", ["de"]),
                                   "es": rows(KEPT[1:2]).add_column("lang", ["es"])})
    parts = read_corpus(corpus)
    assert len(parts.kept) == 2 and parts.discarded is None
    only = evaluate_corpus(corpus, gold_set(), lang="es")
    assert (only.lang, only.kept.sentences, only.kept.errors["type"]) == ("es", 1, 1)
    assert evaluate_corpus(corpus, gold_set(), corpus_split="de").kept.sentences == 1
    with pytest.raises(KeyError, match="no sentence of language 'fr' \\(has de, es\\)"):
        evaluate_corpus(corpus, gold_set(), lang="fr")
    with pytest.raises(FileNotFoundError, match="no corpus at"):
        read_corpus(str(tmp_path / "absent"))


def test_entity_scores_agree_with_seqevals_report():
    references = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "O", "I-ORG", "O"], ["O", "O"]]
    predictions = [["B-PER", "O", "O", "B-LOC"], ["B-ORG", "O", "B-ORG", "B-MISC"], ["B-LOC", "I-PER"]]
    mine, theirs = entity_scores(references, predictions), score_tags(references, predictions)
    assert (mine["precision"], mine["recall"], mine["f1"]) == pytest.approx((theirs.precision, theirs.recall,
                                                                             theirs.f1))
    assert same_per_type(mine["per_type"], theirs.per_type)
    assert (mine["predicted"], mine["support"]) == (7, 4)


# --------------------------------------------------------------------------- the command, on a real run

RAW_DE = [
    "Ich wohne in Hamburg .",  # kept: Hamburg LOC, right
    "Siemens AG sitzt in München .",  # kept: AG ORG (gold Siemens AG: boundary), München PER (gold LOC: type)
    "das ist alles klein .",  # all_o
    "Das broken Beispiel mit Maria und Hamburg .",  # markers_incomplete
    "Anna trifft Peter in Hamburg .",  # kept: Anna missed (the fake tagger skips the first word)
    "Der Hafen von Hamburg liegt an der Elbe .",  # kept: Hafen a spurious PER, Elbe PER (gold LOC: type)
]
GOLD_DE = [
    ["O", "O", "O", "B-LOC", "O"],
    ["B-ORG", "I-ORG", "O", "O", "B-LOC", "O"],
    ["O"] * 5,
    ["O", "O", "O", "O", "B-PER", "O", "B-LOC", "O"],
    ["B-PER", "O", "B-PER", "O", "B-LOC", "O"],
    ["O", "O", "O", "B-LOC", "O", "O", "O", "B-LOC", "O"],
]


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory) -> Path:
    """A real ``crop-hf synthesize`` output folder of RAW_DE, made with the stand-in models (read only)."""
    folder = tmp_path_factory.mktemp("synthesized")
    (folder / "de.txt").write_text("\n".join(RAW_DE) + "\n", encoding="utf-8")
    result = synthesize(fake_config(str(folder / "{lang}.txt"), str(folder / "crop"), tgt_langs=["de"]),
                        models=fake_models())
    return Path(result.dataset_path).parent


def test_the_command_scores_a_synthesized_folder_and_writes_its_json(synthesized, tmp_path, capsys):
    gold = tmp_path / "gold"
    datasets.DatasetDict({"train": rows(list(zip(RAW_DE, GOLD_DE, strict=True)))}).save_to_disk(str(gold))
    out = tmp_path / "check"
    assert main(["evaluate-corpus", str(synthesized), "--gold", str(gold), "--output_dir", str(out),
                 "--no_show_progress"]) == 0
    printed = capsys.readouterr().out
    assert f"corpus {synthesized}: 4 kept, 2 discarded sentences" in printed
    assert "types not scored, read as O: MISC (only in the corpus)" in printed  # the tagger's label set has MISC
    kept_row = next(line for line in printed.splitlines() if line.startswith("kept "))
    # 8 predicted, 8 gold, 4 right; LOC 3/3 of 5, ORG 0/1 of 1, PER 1/4 of 2
    assert kept_row.split()[1:] == ["4", "4", "4", "8", "8", "50.0", "50.0", "50.0", "75.0", "0.0", "33.3"]
    assert any(line.split()[:3] == ["discarded,", "all_o", "1"] and line.split()[3:5] == ["1", "0"]
               for line in printed.splitlines())
    assert "cover 8 of the 10 gold entities (80.0%, in 4 gold sentences) and label 4 of them right (40.0%)" in printed
    assert 'type         1x  gold LOC "München" -> PER "München"' in printed
    assert f"written to {out}" in printed

    written = json.loads((out / "corpus_eval.json").read_text(encoding="utf-8"))
    assert written["kept"]["errors"] == {"correct": 4, "type": 2, "boundary": 1, "missed": 1, "spurious": 1}
    assert written["kept"]["examples"]["boundary"] == [{"gold": [["Siemens AG", "ORG"]], "predicted": [["AG", "ORG"]],
                                                        "count": 1, "sentence": "Siemens AG sitzt in München ."}]
    assert {reason: (scores["sentences"], scores["matched"], scores["scored"])
            for reason, scores in written["discarded"].items()} == {"all_o": (1, 1, 0),
                                                                    "markers_incomplete": (1, 1, 0)}
    assert written["corpus_only_types"] == ["MISC"] and written["gold_sentences"] == 6
    assert (out / "corpus_eval.txt").read_text(encoding="utf-8").startswith(f"corpus {synthesized}")
    assert not list(out.glob(".*"))  # no temporary file left behind


def test_the_command_says_in_one_line_that_no_sentence_is_shared(synthesized, tmp_path, capsys):
    gold = tmp_path / "gold"
    datasets.DatasetDict({"train": gold_set()}).save_to_disk(str(gold))
    capsys.readouterr()  # the bar of save_to_disk
    assert main(["evaluate-corpus", str(synthesized), "--gold", str(gold), "--no_show_progress"]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("crop-hf evaluate-corpus: error: no sentence of corpus")
    assert "tried 6 corpus sentences (4 kept, 2 discarded) against the 5 sentences of gold" in line


# --------------------------------------------------------------------------- real data

OTHER_TYPE = {"PER": "ORG", "ORG": "LOC", "LOC": "MISC", "MISC": "PER"}


def test_conll2002_spanish_train_with_known_perturbations(shared_data):
    """Every 4th sentence (from the 2nd) with entities gets its first entity's type changed, every 4th (from the
    3rd) loses its first entity: exactly that many wrong types and misses, nothing else; the corpus as it is
    scores 100."""
    spec = f"conll5:es?data_dir={shared_data / 'conll2002'}"
    train = load_source(spec, splits=("train",)).split("train")
    assert len(train) == 8323
    tokens, tags = train["tokens"][:], tag_strings(train)
    changed, removed, perturbed = 0, 0, []
    for index, sentence in enumerate(tags):
        spans = tags_to_spans(sentence)
        if spans and index % 4 == 1:
            spans[0] = Span(spans[0].start, spans[0].end, OTHER_TYPE[spans[0].label])
            changed += 1
        elif spans and index % 4 == 2:
            spans = spans[1:]
            removed += 1
        perturbed.append(spans_to_tags(spans, len(sentence)))
    corpus = datasets.Dataset.from_dict({"tokens": tokens, "ner_tags": perturbed})

    evaluation = evaluate_corpus(corpus, spec)
    assert evaluation.gold_sentences == 8323 and evaluation.kept.matched == 8323
    assert evaluation.kept.errors == {"correct": evaluation.gold_entities - changed - removed, "type": changed,
                                      "boundary": 0, "missed": removed, "spurious": 0}
    assert evaluation.gold_entities == 18798 and evaluation.types == ["LOC", "MISC", "ORG", "PER"]
    perfect = evaluate_corpus(datasets.Dataset.from_dict({"tokens": tokens, "ner_tags": tags}), spec)
    assert perfect.kept.f1 == 1.0 and perfect.coverage["found_share"] == 1.0
