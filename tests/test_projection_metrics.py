"""``crop_hf.metrics.projection`` pinned exactly on tiny hand-made corpora (no eflomal, no encoder).

What it pins: :func:`projection_errors`'s count of each kind (correct, type, boundary, missed,
spurious) and its errors; :meth:`ProjectionEvaluation.row`'s choice of row and its ``KeyError``
message, and ``to_dict``; every header and cell of :func:`format_projection_table` and its
``max_types`` boundary; and :func:`evaluate_projection`'s counts, method specs (list, mapping,
``None``), aligner timings and pair counts (extra parallel text included), scores over all and
over kept sentences, per-row options, timings (a fake clock) and error messages; and the
docstring's ``_Identity`` aligner.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from types import SimpleNamespace

import pytest

from crop_hf.metrics import projection
from crop_hf.metrics.projection import (
    ERROR_KINDS,
    ProjectionEvaluation,
    ProjectionRow,
    _Identity,
    evaluate_projection,
    format_projection_table,
    projection_errors,
)
from crop_hf.projection.methods import PROJECTION_METHODS

# Three pairs: "Bob" is not in the German sentence, so lexical projection drops sentence 0
# (Anna with it); sentence 2 has no entity. Word i of the source is the translation of word i.
SOURCE = [(["Anna", "met", "Bob"], ["B-PER", "O", "B-PER"]),
          (["Eva", "left", "Oslo"], ["B-PER", "O", "B-LOC"]),
          (["nothing", "here"], ["O", "O"])]
TARGET = [(["Anna", "traf", "Robert"], ["B-PER", "O", "B-PER"]),
          (["Eva", "verließ", "Oslo"], ["B-PER", "O", "B-LOC"]),
          (["nichts", "hier"], ["O", "O"])]


class _MustNotAlign:
    """An aligner a test expects never to be asked."""

    def align(self, source, target):
        raise AssertionError("this aligner must not be called")


def _fake_clock(monkeypatch, *times: float) -> list[float]:
    """Make the module's ``time.perf_counter`` return ``times`` in order (one value: that one forever); returns
    the values not read yet."""
    left = list(times)

    def perf_counter() -> float:
        return left.pop(0) if len(times) > 1 else times[0]

    monkeypatch.setattr(projection, "time", SimpleNamespace(perf_counter=perf_counter))
    return left


# --- projection_errors --------------------------------------------------------------------------


def test_projection_errors_counts_every_kind_over_multi_word_and_overlapping_spans():
    gold = [["B-PER", "I-PER", "O", "B-LOC", "B-ORG", "O"],
            ["O", "B-PER", "I-PER", "O", "O"],
            [],
            ["B-MISC", "I-MISC", "I-MISC", "O", "B-LOC"]]
    projected = [
        # PER's exact words as LOC: type; one MISC over LOC and ORG: both boundary, and not spurious
        ["B-LOC", "I-LOC", "O", "B-MISC", "I-MISC", "O"],
        # PER's exact words as ORG: type; LOC ending where PER starts and LOC just after it: both spurious
        ["B-LOC", "B-ORG", "I-ORG", "B-LOC", "O"],
        [],
        # three-word MISC exactly: correct; LOC not projected: missed
        ["B-MISC", "I-MISC", "I-MISC", "O", "O"],
    ]
    counts = projection_errors(projected, gold)
    assert counts == {"correct": 1, "type": 2, "boundary": 2, "missed": 1, "spurious": 2}
    assert tuple(counts) == ERROR_KINDS


def test_projection_errors_on_empty_and_entity_free_sentences_counts_nothing():
    assert projection_errors([], []) == dict.fromkeys(ERROR_KINDS, 0)
    assert projection_errors([[], ["O", "O"]], [[], ["O", "O"]]) == dict.fromkeys(ERROR_KINDS, 0)


def test_projection_errors_rejects_unequal_corpora_and_sentences_by_name():
    with pytest.raises(ValueError, match=r"^1 predictions but 2 references$"):
        projection_errors([["O"]], [["O"], ["O"]])
    with pytest.raises(ValueError, match=r"^sentence 1: 2 projected tags but 1 gold tags$"):
        projection_errors([[], ["O", "O"]], [[], ["O"]])


# --- ProjectionEvaluation -----------------------------------------------------------------------


def _row(name: str, aligner: str | None, per_type: dict[str, float] | None = None, **scores) -> ProjectionRow:
    """A row with every score given (defaults to 0), ``per_type`` as ``{type: f1}``."""
    values = dict(precision=0.0, recall=0.0, f1=0.0, kept_precision=0.0, kept_recall=0.0, kept_f1=0.0,
                  kept_rate=0.0, entities_projected=0.0, seconds=0.0, sentences_per_second=0.0,
                  errors={"correct": 0, "type": 0, "boundary": 0, "missed": 0, "spurious": 0})
    values.update(scores)
    per_type = {t: {"precision": f1, "recall": f1, "f1": f1, "support": 1} for t, f1 in (per_type or {}).items()}
    return ProjectionRow(name=name, method=name.split("?")[0], aligner=aligner, options={}, per_type=per_type,
                         **values)


def _evaluation(*rows: ProjectionRow) -> ProjectionEvaluation:
    return ProjectionEvaluation(list(rows), sentences=3, source_entities=4, gold_entities=5,
                                aligners={"eflomal": {"seconds": 1.5, "pairs": 3}})


def test_row_finds_a_row_by_name_and_aligner_and_a_lexical_row_over_any_aligner():
    lexical, eflomal, identity = _row("lexical", None), _row("alignment", "eflomal"), _row("alignment", "identity")
    evaluation = _evaluation(lexical, eflomal, identity)
    assert evaluation.row("lexical") is lexical
    assert evaluation.row("alignment") is eflomal  # the first one when no aligner is asked
    assert evaluation.row("alignment", "eflomal") is eflomal
    assert evaluation.row("alignment", "identity") is identity
    assert evaluation.row("lexical", "identity") is lexical  # a lexical row has no aligner to tell apart


def test_row_names_the_row_the_aligner_asked_and_the_rows_there_are_when_none_fits():
    evaluation = _evaluation(_row("lexical", None), _row("alignment", "eflomal"), _row("alignment", "identity"))
    with pytest.raises(KeyError) as caught:
        evaluation.row("hybrid")
    assert caught.value.args == ("no row 'hybrid'; rows: alignment, lexical",)
    with pytest.raises(KeyError) as caught:
        evaluation.row("alignment", "awesome")
    assert caught.value.args == ("no row 'alignment' over 'awesome'; rows: alignment, lexical",)


def test_to_dict_holds_the_counts_the_aligners_and_each_row_as_a_dict():
    rows = _row("lexical", None, {"PER": 0.5}, f1=0.5), _row("alignment", "eflomal", f1=0.25)
    assert _evaluation(*rows).to_dict() == {
        "sentences": 3, "source_entities": 4, "gold_entities": 5,
        "aligners": {"eflomal": {"seconds": 1.5, "pairs": 3}}, "rows": [asdict(row) for row in rows]}


# --- format_projection_table --------------------------------------------------------------------

HEADER = ["method", "aligner", "P", "R", "F1", "kept P", "kept R", "kept F1", "kept", "entities"]
ERROR_HEADER = ["boundary", "missed", "type", "spurious", "sent/s"]


def _two_rows() -> ProjectionEvaluation:
    lexical = _row("lexical", None, {"LOC": 0.4}, precision=0.5, recall=2 / 3, f1=4 / 7, kept_precision=1.0,
                   kept_recall=0.75, kept_f1=6 / 7, kept_rate=0.5, entities_projected=0.25,
                   errors={"correct": 0, "type": 3, "boundary": 1, "missed": 2, "spurious": 4},
                   sentences_per_second=1234.56)
    hybrid = _row("hybrid", "eflomal", {"PER": 1.0, "LOC": 0.0}, precision=1.0, recall=1.0, f1=1.0,
                  kept_precision=1.0, kept_recall=1.0, kept_f1=1.0, kept_rate=1.0, entities_projected=1.0,
                  sentences_per_second=math.inf)
    return _evaluation(lexical, hybrid)


def test_the_markdown_table_has_every_header_and_cell_formatted():
    assert format_projection_table(_two_rows(), style="markdown").splitlines() == [
        "| " + " | ".join([*HEADER, "LOC F1", "PER F1", *ERROR_HEADER]) + " |",
        "| --- |" + " ---: |" * 16,
        "| lexical | - | 50.0 | 66.7 | 57.1 | 100.0 | 75.0 | 85.7 | 50.0 | 25.0 | 40.0 | - | 1 | 2 | 3 | 4 | 1235 |",
        "| hybrid | eflomal | 100.0 | 100.0 | 100.0 | 100.0 | 100.0 | 100.0 | 100.0 | 100.0 | 0.0 | 100.0 "
        "| 0 | 0 | 0 | 0 | inf |",
    ]


def test_the_text_table_has_the_same_cells_aligned_under_a_rule():
    lines = format_projection_table(_two_rows()).splitlines()
    cells = [re.split(r"\s{2,}", line.strip()) for line in lines]
    assert cells[0] == [*HEADER, "LOC F1", "PER F1", *ERROR_HEADER]
    assert set(lines[1]) == {"-", " "}
    assert cells[2] == ["lexical", "-", "50.0", "66.7", "57.1", "100.0", "75.0", "85.7", "50.0", "25.0", "40.0",
                        "-", "1", "2", "3", "4", "1235"]
    assert cells[3][:2] == ["hybrid", "eflomal"] and cells[3][-1] == "inf"
    assert lines[2].startswith("lexical ") and lines[3].startswith("hybrid  ")  # method names left-aligned
    assert len({len(line) for line in lines}) == 1


@pytest.mark.parametrize(("types", "max_types", "columns"), [(3, 3, True), (4, 3, False), (8, None, True),
                                                             (9, None, False)])
def test_per_type_columns_only_up_to_max_types_types(types, max_types, columns):
    names = [f"T{k}" for k in range(types)]
    evaluation = _evaluation(_row("lexical", None, dict.fromkeys(reversed(names), 1.0)))
    options = {} if max_types is None else {"max_types": max_types}
    table = format_projection_table(evaluation, style="markdown", **options).splitlines()
    type_columns = [f"{name} F1" for name in names] if columns else []
    assert table[0] == "| " + " | ".join([*HEADER, *type_columns, *ERROR_HEADER]) + " |"
    assert table[2].count("| 100.0 ") == (types if columns else 0)


# --- evaluate_projection ------------------------------------------------------------------------


def test_scores_over_all_and_kept_sentences_counts_and_errors_with_dropped_sentences_all_o():
    evaluation = evaluate_projection(SOURCE, TARGET, methods=["lexical", "alignment"],
                                     aligners={"identity": _Identity()})
    assert (evaluation.sentences, evaluation.source_entities, evaluation.gold_entities) == (3, 4, 4)
    assert evaluation.aligners == {"identity": {"seconds": evaluation.aligners["identity"]["seconds"], "pairs": 3}}
    assert [(row.name, row.method, row.aligner, row.options) for row in evaluation.rows] == [
        ("lexical", "lexical", None, {}), ("alignment", "alignment", "identity", {})]

    lexical = evaluation.row("lexical")
    assert lexical.kept_rate == pytest.approx(2 / 3) and lexical.entities_projected == 0.75  # Bob not found
    assert (lexical.precision, lexical.recall, lexical.f1) == (1.0, 0.5, pytest.approx(2 / 3))
    assert (lexical.kept_precision, lexical.kept_recall, lexical.kept_f1) == (1.0, 1.0, 1.0)
    assert lexical.per_type["PER"]["recall"] == pytest.approx(1 / 3) and lexical.per_type["LOC"]["f1"] == 1.0
    # sentence 0's projection found Anna, but the sentence was dropped: both its entities are missed
    assert lexical.errors == {"correct": 2, "type": 0, "boundary": 0, "missed": 2, "spurious": 0}

    alignment = evaluation.row("alignment", "identity")
    assert (alignment.f1, alignment.kept_rate, alignment.entities_projected) == (1.0, 1.0, 1.0)
    assert alignment.errors == {"correct": 4, "type": 0, "boundary": 0, "missed": 0, "spurious": 0}


def test_without_source_entities_every_entity_counts_as_projected():
    pairs = [(["nothing", "here"], ["O", "O"])]
    row = evaluate_projection(pairs, pairs, methods=["lexical"]).rows[0]
    assert (row.entities_projected, row.kept_rate) == (1.0, 1.0)
    assert row.errors == dict.fromkeys(ERROR_KINDS, 0)


def test_records_with_tokens_and_tags_attributes_read_as_pairs():
    @dataclass
    class Record:
        tokens: list[str]
        tags: list[str]

    records = evaluate_projection([Record(*pair) for pair in SOURCE], [Record(*pair) for pair in TARGET],
                                  methods=["lexical"])
    pairs = evaluate_projection(SOURCE, TARGET, methods=["lexical"])
    assert (records.sentences, records.source_entities, records.gold_entities) == (3, 4, 4)
    assert records.rows[0].errors == pairs.rows[0].errors and records.rows[0].f1 == pairs.rows[0].f1


def test_methods_as_a_mapping_of_names_to_specs_pass_their_options_to_the_projection():
    source, target = [(["ANNA", "sleeps"], ["B-PER", "O"])], [(["Anna", "schläft"], ["B-PER", "O"])]
    evaluation = evaluate_projection(source, target, methods={"exact": "lexical",
                                                              "any case": ("lexical", {"ignore_case": True})})
    assert [(row.name, row.method, row.options) for row in evaluation.rows] == [
        ("exact", "lexical", {}), ("any case", "lexical", {"ignore_case": True})]
    exact, any_case = evaluation.rows
    assert (exact.f1, exact.kept_rate, exact.entities_projected) == (0.0, 0.0, 0.0)
    assert (any_case.f1, any_case.kept_rate, any_case.entities_projected) == (1.0, 1.0, 1.0)


def test_no_methods_means_every_registered_method_without_a_model_over_every_aligner():
    evaluation = evaluate_projection(SOURCE, TARGET, aligners={"identity": _Identity()})
    expected = [(name, None if not method.uses_alignment else "identity")
                for name, method in PROJECTION_METHODS.items() if not method.uses_scorer]
    assert [(row.method, row.aligner) for row in evaluation.rows] == expected
    assert {row.method for row in evaluation.rows} == {"lexical", "fuzzy", "alignment", "hybrid"}


def test_aligners_are_not_run_when_no_method_uses_links():
    evaluation = evaluate_projection(SOURCE, TARGET, methods=["lexical"], aligners={"never": _MustNotAlign()})
    assert evaluation.aligners == {}
    assert [row.aligner for row in evaluation.rows] == [None]


def test_given_alignments_replace_their_aligner_and_the_other_aligners_still_run():
    links = [[(0, 0), (1, 1), (2, 2)], [(0, 0), (1, 1), (2, 2)], [(0, 0), (1, 1)]]
    evaluation = evaluate_projection(SOURCE, TARGET, methods=["alignment"],
                                     aligners={"hand": _MustNotAlign(), "identity": _Identity()},
                                     alignments={"hand": links})
    assert [row.aligner for row in evaluation.rows] == ["hand", "identity"]
    assert set(evaluation.aligners) == {"hand", "identity"}
    assert evaluation.aligners["hand"] == {"seconds": 0.0, "pairs": 3}
    assert evaluation.aligners["identity"]["pairs"] == 3
    assert [row.f1 for row in evaluation.rows] == [1.0, 1.0]


def test_given_alignments_alone_need_no_aligner_and_start_no_eflomal(monkeypatch):
    from crop_hf.alignment import EflomalAligner

    monkeypatch.setattr(EflomalAligner, "align", _MustNotAlign.align)
    links = [[(0, 0), (1, 1), (2, 2)], [(0, 0), (1, 1), (2, 2)], [(0, 0), (1, 1)]]
    evaluation = evaluate_projection(SOURCE, TARGET, methods=["alignment"], alignments={"hand": links})
    assert evaluation.aligners == {"hand": {"seconds": 0.0, "pairs": 3}}
    assert [row.aligner for row in evaluation.rows] == ["hand"]


def test_the_default_aligner_is_eflomal_and_extra_parallel_text_reaches_only_it(monkeypatch):
    from crop_hf.alignment import EflomalAligner

    asked: list[tuple[str, int]] = []

    class Counting(_Identity):
        def align(self, source, target):
            asked.append(("identity", len(source)))
            return super().align(source, target)

    def eflomal(self, source, target):
        asked.append(("eflomal", len(source)))
        return _Identity().align(source, target)

    monkeypatch.setattr(EflomalAligner, "align", eflomal)
    extra = ([["Good", "morning"], ["Hello"]], [["Guten", "Morgen"], ["Hallo"]])
    default = evaluate_projection(SOURCE, TARGET, methods=["alignment"], extra_parallel=extra)
    assert asked == [("eflomal", 5)]
    assert set(default.aligners) == {"eflomal"} and default.aligners["eflomal"]["pairs"] == 5
    assert [(row.aligner, row.f1) for row in default.rows] == [("eflomal", 1.0)]  # links of the 3 pairs only

    asked.clear()
    other = evaluate_projection(SOURCE, TARGET, methods=["alignment"], extra_parallel=extra,
                                aligners={"identity": Counting()})
    assert asked == [("identity", 3)] and other.aligners["identity"]["pairs"] == 3


def test_timings_come_from_the_clock_around_the_aligner_and_each_projection(monkeypatch):
    # aligner: 10.0 -> 11.23456; row: 20.0 -> 20.123456
    left = _fake_clock(monkeypatch, 10.0, 11.23456, 20.0, 20.123456, 99.0)
    evaluation = evaluate_projection(SOURCE, TARGET, methods=["alignment"], aligners={"identity": _Identity()})
    assert left == [99.0]  # the clock was read four times
    assert evaluation.aligners == {"identity": {"seconds": 1.235, "pairs": 3}}
    row = evaluation.rows[0]
    assert row.seconds == 0.1235
    assert row.sentences_per_second == pytest.approx(3 / 0.123456)


def test_a_projection_that_takes_no_measurable_time_runs_infinitely_many_sentences_per_second(monkeypatch):
    _fake_clock(monkeypatch, 5.0)
    evaluation = evaluate_projection(SOURCE, TARGET, methods=["lexical", "alignment"],
                                     aligners={"identity": _Identity()})
    assert evaluation.aligners == {"identity": {"seconds": 0.0, "pairs": 3}}
    assert [(row.seconds, row.sentences_per_second) for row in evaluation.rows] == [(0.0, math.inf)] * 2


def test_mismatched_corpora_and_alignments_are_errors_that_say_which():
    def raises(message: str, *args, **kwargs):
        with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
            evaluate_projection(*args, **kwargs)

    identity = {"identity": _Identity()}
    raises("2 source sentences but 3 target sentences: sentence k of the target must be the translation of "
           "sentence k of the source", SOURCE[:2], TARGET, aligners=identity)
    raises("source sentence 1: 2 tokens but 1 tags", [SOURCE[0], (["Eva", "left"], ["B-PER"])], TARGET[:2],
           aligners=identity)
    raises("target sentence 1: 3 tokens but 2 tags", SOURCE[:2], [TARGET[0], (["Eva", "verließ", "Oslo"], ["B-PER", "O"])],
           aligners=identity)
    raises("extra parallel text: 2 source but 1 target sentences", SOURCE, TARGET, methods=["alignment"],
           aligners=identity, extra_parallel=([["a"], ["b"]], [["c"]]))
    raises("alignments 'hand': 2 sentences for 3 pairs", SOURCE, TARGET, methods=["alignment"],
           alignments={"hand": [[(0, 0)], [(0, 0)]]})


# --- _Identity ----------------------------------------------------------------------------------


def test_identity_links_word_i_to_word_i_up_to_the_shorter_sentence_pair_by_pair():
    source = [["a", "b", "c"], ["x"], [], ["p", "q", "r"]]
    target = [["A", "B"], ["X", "Y", "Z"], ["E"], ["P", "Q", "R"]]
    assert _Identity().align(source, target) == [[(0, 0), (1, 1)], [(0, 0)], [], [(0, 0), (1, 1), (2, 2)]]
    assert _Identity().align([], []) == []
    with pytest.raises(ValueError):
        _Identity().align([["a"], ["b"]], [["A"]])
