"""``crop-hf evaluate-projection``, pinned through what a user gives it and gets back.

Its inputs (which split of a source spec is read, ``#side`` columns, the first tag column found,
``--extra_parallel`` specs and text files), its errors and their messages, the aligners it builds
from ``--aligners``/``--symmetrization``/``--samplers``/``--encoder``, and its outputs: the summary
line, the printed table, and ``projection.txt``/``.md``/``.json`` (UTF-8 whatever the locale) in a
folder it creates, with the "no plot" warning when matplotlib is missing. Corpora are a few rows
saved to ``tmp_path``; eflomal and the embedding aligner are stood in for, so nothing is downloaded
and no real alignment runs.
"""

from __future__ import annotations

import contextlib
import json
import locale
import logging

import pytest

from crop_hf.commands.evaluate_projection import (
    EvaluateProjectionConfig,
    build_aligners,
    load_tagged,
    read_parallel,
)

LOGGER = "crop_hf.commands.evaluate_projection"


class Identity:
    """Word i of the source is linked to word i of the target; remembers what it was asked to align."""

    def __init__(self) -> None:
        self.calls: list[tuple[list, list]] = []

    def align(self, source, target):
        self.calls.append((list(source), list(target)))
        return [[(i, i) for i in range(min(len(s), len(t)))] for s, t in zip(source, target, strict=True)]


def _save(path, splits: dict[str, dict] | None = None, **columns) -> str:
    """Save a ``DatasetDict`` (``splits``: {split: columns}) or one ``Dataset`` (``columns``) to ``path``; its spec."""
    import datasets

    if splits is None:
        datasets.Dataset.from_dict(columns).save_to_disk(str(path))
    else:
        datasets.DatasetDict({name: datasets.Dataset.from_dict(data)
                              for name, data in splits.items()}).save_to_disk(str(path))
    return f"disk:{path}"


def _rows(words: list[str]) -> dict:
    """One row per word: ``[word, "x"]`` tagged ``B-LOC O`` (each row names itself)."""
    return {"tokens": [[word, "x"] for word in words], "ner_tags": [["B-LOC", "O"]] * len(words)}


def _identity_eflomal(monkeypatch) -> list[tuple[list, list]]:
    """eflomal stood in for by word-i-to-word-i links; the (source, target) sentences of each call."""
    from crop_hf.alignment import EflomalAligner

    calls: list[tuple[list, list]] = []

    def identity(self, source, target):
        calls.append((list(source), list(target)))
        return [[(i, i) for i in range(min(len(s), len(t)))] for s, t in zip(source, target, strict=True)]

    monkeypatch.setattr(EflomalAligner, "align", identity)
    return calls


def _no_matplotlib(monkeypatch, message: str = "no matplotlib here") -> None:
    from crop_hf.report import plots

    def missing():
        raise ImportError(message)

    monkeypatch.setattr(plots, "require_matplotlib", missing)


@contextlib.contextmanager
def _ascii_locale():
    """A user whose locale is plain ASCII (C): text written without an explicit encoding fails."""
    before = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")
    try:
        yield
    finally:
        locale.setlocale(locale.LC_CTYPE, before)


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    from crop_hf.cli import main

    capsys.readouterr()  # what came before (datasets' saving bars) is not the command's
    code = main(["evaluate-projection", *argv, "--no_show_progress"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --------------------------------------------------------------------------- load_tagged: which split


def test_a_spec_with_one_split_is_read_whatever_the_split_is_called(tmp_path):
    spec = _save(tmp_path / "one", {"validation": _rows(["Oslo", "Rom"])})
    rows, nested = load_tagged(spec)
    assert rows == [(["Oslo", "x"], ["B-LOC", "O"]), (["Rom", "x"], ["B-LOC", "O"])]
    assert nested is None
    single = _save(tmp_path / "plain", **_rows(["Bern"]))  # a Dataset, not a DatasetDict
    assert load_tagged(single) == ([(["Bern", "x"], ["B-LOC", "O"])], None)


def test_several_splits_read_test_and_without_test_the_user_must_choose(tmp_path):
    spec = _save(tmp_path / "both", {"train": _rows(["Oslo", "Rom"]), "test": _rows(["Bern"])})
    assert load_tagged(spec)[0] == [(["Bern", "x"], ["B-LOC", "O"])]
    assert load_tagged(spec, "train")[0][1] == (["Rom", "x"], ["B-LOC", "O"])

    no_test = _save(tmp_path / "no-test", {"train": _rows(["Oslo"]), "validation": _rows(["Rom"])})
    with pytest.raises(KeyError) as error:
        load_tagged(no_test)
    assert error.value.args == (f"{no_test}: several splits (train, validation); choose one with --split",)


def test_an_asked_split_that_is_missing_names_the_splits_there_are(tmp_path):
    spec = _save(tmp_path / "two", {"train": _rows(["Oslo"]), "validation": _rows(["Rom"])})
    with pytest.raises(KeyError) as error:
        load_tagged(spec, "test")
    assert error.value.args == (f"{spec}: no 'test' split (has train, validation)",)


def test_an_asked_split_is_the_only_one_a_builder_loads(tmp_path, monkeypatch):
    """conll5:es with only its test file: asking for test must not look for train and validation."""
    import datasets

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "cache"))
    data = tmp_path / "conll2002"
    data.mkdir()
    (data / "esp.testb").write_text("Zürich B-LOC\nes O\nbonita O\n\n", encoding="utf-8")
    rows, nested = load_tagged(f"conll5:es?data_dir={data}", "test")
    assert rows == [(["Zürich", "es", "bonita"], ["B-LOC", "O", "O"])]
    assert nested is None


# --------------------------------------------------------------------------- load_tagged: which columns


def test_a_side_reads_its_prefixed_columns_and_the_first_tag_column_in_order_wins(tmp_path):
    spec = _save(tmp_path / "parallel",
                 en_tokens=[["play", "jazz"]], en_tags=[["O", "B-X"]], en_slot_tags=[["O", "B-GENRE"]],
                 en_nested=[True],
                 tokens=[["bajao", "jazz"]], slot_tags=[["O", "B-GENRE"]], ner_tags=[["O", "B-MISC"]],
                 nested=[False])
    assert load_tagged(f"{spec}#en") == ([(["play", "jazz"], ["O", "B-GENRE"])], [True])
    assert load_tagged(spec) == ([(["bajao", "jazz"], ["O", "B-MISC"])], [False])


@pytest.mark.parametrize(("columns", "side", "missing"), [
    ({"words": [["Oslo"]], "ner_tags": [["B-LOC"]]}, "", "tokens only"),
    ({"tokens": [["Oslo"]], "labels": [["B-LOC"]]}, "", "tags only"),
    ({"en_tokens": [["Oslo"]], "tokens": [["Oslo"]], "ner_tags": [["B-LOC"]]}, "en", "the side's tags"),
], ids=["no-tokens", "no-tags", "side-without-tags"])
def test_a_missing_tokens_or_tag_column_alone_is_an_error_naming_the_needed_columns(tmp_path, columns, side,
                                                                                  missing):
    spec = _save(tmp_path / "corpus", **columns) + (f"#{side}" if side else "")
    prefix = f"{side}_" if side else ""
    with pytest.raises(KeyError) as error:
        load_tagged(spec)
    needed = [prefix + c for c in ("ner_tags", "slot_tags", "tags")]
    assert error.value.args == (f"{spec}: needs {prefix + 'tokens'!r} and one of {needed} "
                                f"(columns: {list(columns)})",), missing


def test_rows_are_read_as_stored_and_a_row_whose_tags_do_not_match_its_tokens_fails_the_command(tmp_path, capsys):
    spec = _save(tmp_path / "short", tokens=[["Anna", "sleeps"]], ner_tags=[["B-PER"]])
    assert load_tagged(spec)[0] == [(["Anna", "sleeps"], ["B-PER"])]
    good = _save(tmp_path / "good", tokens=[["Anna", "schläft"]], ner_tags=[["B-PER", "O"]])
    code, _, err = _run(["--source", spec, "--target", good, "--methods", "lexical"], capsys)
    assert code == 1
    assert "source sentence 0: 2 tokens but 1 tags" in err


# --------------------------------------------------------------------------- read_parallel


def test_extra_parallel_takes_exactly_two_items():
    for items in (["one"], ["one", "two", "three"]):
        with pytest.raises(ValueError) as error:
            read_parallel(items, "train")
        assert str(error.value) == f"--extra_parallel takes two items (source side, target side), got {len(items)}"


def test_extra_parallel_text_files_are_whitespace_tokens_and_undecodable_lines_are_skipped(tmp_path):
    source, target = tmp_path / "extra.en", tmp_path / "extra.de"
    source.write_bytes("good  morning\tZürich\n".encode() + b"caf\xe9 latin-1\n" + b"see you\n")
    target.write_text("guten Morgen Zürich\nbis bald\n", encoding="utf-8")
    assert read_parallel([str(source), str(target)], "train") == (
        [["good", "morning", "Zürich"], ["see", "you"]], [["guten", "Morgen", "Zürich"], ["bis", "bald"]])


def test_extra_parallel_specs_read_the_asked_split_of_each_side(tmp_path):
    both = {"en_tokens": [["good", "morning"], ["hello"]], "en_ner_tags": [["O", "O"], ["O"]],
            "tokens": [["guten", "Morgen"], ["hallo"]], "ner_tags": [["O", "O"], ["O"]]}
    spec = _save(tmp_path / "bitext", {"train": both, "test": {k: v[:1] for k, v in both.items()}})
    assert read_parallel([f"{spec}#en", spec], "train") == ([["good", "morning"], ["hello"]],
                                                           [["guten", "Morgen"], ["hallo"]])
    text = tmp_path / "one.en"
    text.write_text("good morning\n", encoding="utf-8")
    assert read_parallel([str(text), spec], "test") == ([["good", "morning"]], [["guten", "Morgen"]])


def test_extra_parallel_sides_of_different_lengths_are_an_error_with_both_counts(tmp_path):
    (tmp_path / "a").write_text("one\ntwo\nthree\n", encoding="utf-8")
    (tmp_path / "b").write_text("eins\nzwei\n", encoding="utf-8")
    with pytest.raises(ValueError) as error:
        read_parallel([str(tmp_path / "a"), str(tmp_path / "b")], "train")
    assert str(error.value) == "--extra_parallel: 3 source but 2 target sentences"


# --------------------------------------------------------------------------- build_aligners


def test_eflomal_is_one_aligner_per_symmetrization_with_the_asked_samplers():
    from crop_hf.alignment import EflomalAligner

    config = EvaluateProjectionConfig(source="s", target="t", samplers=5,
                                      symmetrization=["grow-diag-final", "grow-diag-final-and", "intersection"])
    aligners = build_aligners(config)
    assert list(aligners) == ["eflomal (grow-diag-final)", "eflomal", "eflomal (intersection)"]
    assert all(isinstance(aligner, EflomalAligner) for aligner in aligners.values())
    assert [a.symmetrization for a in aligners.values()] == ["grow-diag-final", "grow-diag-final-and", "intersection"]
    assert {a.options["n_samplers"] for a in aligners.values()} == {5}


def _record_from_pretrained(monkeypatch) -> list[tuple[tuple, dict, Identity]]:
    """``EmbeddingAligner.from_pretrained`` stood in for: (args, kwargs, the aligner returned) per call."""
    from crop_hf.alignment import EmbeddingAligner

    calls: list[tuple[tuple, dict, Identity]] = []

    def from_pretrained(cls, *args, **kwargs):
        aligner = Identity()
        calls.append((args, kwargs, aligner))
        return aligner

    monkeypatch.setattr(EmbeddingAligner, "from_pretrained", classmethod(from_pretrained))
    return calls


@pytest.mark.parametrize(("encoder", "device", "name"), [
    ("/models/encoders/tiny-bert", None, "embedding (tiny-bert)"),
    ("org/xlm-r", "cpu", "embedding (xlm-r)"),
    ("labse", "cuda:1", "embedding (labse)"),
], ids=["folder", "hub-id-with-device", "bare-name"])
def test_the_embedding_aligner_loads_the_encoder_with_layer_and_device_only_when_given(monkeypatch, encoder,
                                                                                      device, name):
    calls = _record_from_pretrained(monkeypatch)
    config = EvaluateProjectionConfig(source="s", target="t", aligners=["embedding"], encoder=encoder, layer=4,
                                      device=device)
    aligners = build_aligners(config)
    [(args, kwargs, loaded)] = calls
    assert args == (encoder,)
    assert kwargs == ({"layer": 4} if device is None else {"layer": 4, "device": device})
    assert aligners == {name: loaded}


def test_an_unknown_aligner_is_an_error_naming_it_and_the_known_ones(monkeypatch):
    calls = _record_from_pretrained(monkeypatch)
    with pytest.raises(ValueError) as error:
        build_aligners(EvaluateProjectionConfig(source="s", target="t", aligners=["fast_align"]))
    assert str(error.value) == "unknown aligner 'fast_align'; expected eflomal or embedding"
    assert calls == []


# --------------------------------------------------------------------------- run: outputs


def _pair_corpus(tmp_path) -> tuple[str, str]:
    """Two sentence pairs (English side ``#en``, German the plain columns), three entities each side.

    The type ``BEHÖRDE`` puts a non-ASCII column (``BEHÖRDE F1``) in the tables.
    """
    spec = _save(tmp_path / "pairs",
                 en_tokens=[["Anna", "visits", "Zürich"], ["the", "Bundestag", "votes"]],
                 en_ner_tags=[["B-PER", "O", "B-LOC"], ["O", "B-BEHÖRDE", "O"]],
                 tokens=[["Anna", "besucht", "Zürich"], ["der", "Bundestag", "stimmt"]],
                 ner_tags=[["B-PER", "O", "B-LOC"], ["O", "B-BEHÖRDE", "O"]])
    return f"{spec}#en", spec


def test_the_command_prints_its_summary_and_table_and_writes_them_in_utf8_into_a_new_folder(
        tmp_path, monkeypatch, capsys, caplog):
    source, target = _pair_corpus(tmp_path)
    _identity_eflomal(monkeypatch)
    _no_matplotlib(monkeypatch, "matplotlib is missing: pip install 'crop-hf[report]'")
    out = tmp_path / "not" / "yet" / "there"
    caplog.set_level(logging.WARNING, logger=LOGGER)
    with _ascii_locale():
        code, printed, _ = _run(["--source", source, "--target", target, "--methods", "lexical", "alignment",
                                 "--output_dir", str(out)], capsys)
    assert code == 0
    table = (out / "projection.txt").read_text(encoding="utf-8")
    assert table.endswith("\n") and not table.endswith("\n\n")
    assert table.splitlines()[0].split()[:5] == ["method", "aligner", "P", "R", "F1"]
    assert "BEHÖRDE F1" in table.splitlines()[0]
    assert printed == ("2 sentence pairs, 3 source and 3 gold target entities (eflomal: 2 pairs in 0.0 s)\n"
                       + table
                       + "no plot: matplotlib is missing: pip install 'crop-hf[report]'\n"
                       + f"written to {out}\n")
    assert caplog.record_tuples == [(LOGGER, logging.WARNING,
                                     "no plot: matplotlib is missing: pip install 'crop-hf[report]'")]

    markdown = (out / "projection.md").read_text(encoding="utf-8")
    assert markdown.endswith(" |\n") and "| BEHÖRDE F1 |" in markdown
    assert [line[:5] for line in markdown.splitlines()] == ["| met", "| ---", "| lex", "| ali"]
    assert [line.split("|")[1:3] for line in markdown.splitlines()[2:]] == [
        [" lexical ", " - "], [" alignment ", " eflomal "]]

    text = (out / "projection.json").read_text(encoding="utf-8")
    payload = json.loads(text)
    assert text == json.dumps(payload, indent=2) + "\n"
    assert (payload["source"], payload["target"], payload["split"]) == (source, target, None)
    assert (payload["sentences"], payload["source_entities"], payload["gold_entities"]) == (2, 3, 3)
    assert list(payload["aligners"]) == ["eflomal"]
    assert [(row["method"], row["aligner"], row["f1"]) for row in payload["rows"]] == [
        ("lexical", None, 1.0), ("alignment", "eflomal", 1.0)]
    assert set(payload["rows"][0]["per_type"]) == {"BEHÖRDE", "LOC", "PER"}
    assert not (out / "projection.png").exists()


def test_lexical_methods_align_nothing_and_the_summary_has_no_aligner_part(tmp_path, monkeypatch, capsys):
    source, target = _pair_corpus(tmp_path)
    calls = _identity_eflomal(monkeypatch)
    code, printed, _ = _run(["--source", source, "--target", target, "--methods", "lexical", "fuzzy"], capsys)
    assert code == 0 and calls == []
    summary, *table = printed.splitlines()
    assert summary == "2 sentence pairs, 3 source and 3 gold target entities"
    assert [line.split()[0] for line in table[-2:]] == ["lexical", "fuzzy"]


def test_several_aligners_are_timed_in_the_summary_one_after_the_other(tmp_path, monkeypatch, capsys):
    source, target = _pair_corpus(tmp_path)
    calls = _identity_eflomal(monkeypatch)
    code, printed, _ = _run(["--source", source, "--target", target, "--methods", "alignment",
                             "--symmetrization", "grow-diag-final", "grow-diag-final-and"], capsys)
    assert code == 0 and len(calls) == 2
    assert printed.splitlines()[0] == ("2 sentence pairs, 3 source and 3 gold target entities "
                                       "(eflomal (grow-diag-final): 2 pairs in 0.0 s; eflomal: 2 pairs in 0.0 s)")


def test_the_embedding_aligner_is_a_row_of_the_command(tmp_path, monkeypatch, capsys):
    source, target = _pair_corpus(tmp_path)
    calls = _record_from_pretrained(monkeypatch)
    code, printed, _ = _run(["--source", source, "--target", target, "--methods", "alignment",
                             "--aligners", "embedding", "--encoder", "some/where/tiny-bert", "--layer", "2",
                             "--device", "cpu"], capsys)
    assert code == 0
    [(args, kwargs, aligner)] = calls
    assert (args, kwargs) == (("some/where/tiny-bert",), {"layer": 2, "device": "cpu"})
    assert aligner.calls == [([["Anna", "visits", "Zürich"], ["the", "Bundestag", "votes"]],
                              [["Anna", "besucht", "Zürich"], ["der", "Bundestag", "stimmt"]])]
    assert printed.splitlines()[0].endswith("(embedding (tiny-bert): 2 pairs in 0.0 s)")


def test_rerunning_into_the_same_folder_replaces_its_files(tmp_path, monkeypatch, capsys):
    source, target = _pair_corpus(tmp_path)
    _no_matplotlib(monkeypatch)
    out = tmp_path / "out"
    spec = ["--source", source, "--target", target, "--output_dir", str(out)]
    assert _run([*spec, "--methods", "lexical"], capsys)[0] == 0
    code, printed, err = _run([*spec, "--methods", "fuzzy", "--max_samples", "1"], capsys)
    assert (code, err) == (0, "")
    payload = json.loads((out / "projection.json").read_text(encoding="utf-8"))
    assert [row["method"] for row in payload["rows"]] == ["fuzzy"]
    assert payload["sentences"] == 1
    assert printed.splitlines()[0] == "1 sentence pairs, 2 source and 2 gold target entities"


# --------------------------------------------------------------------------- run: inputs and errors


def test_corpora_of_different_lengths_are_an_error_naming_both(tmp_path, capsys):
    source = _save(tmp_path / "three", **_rows(["Oslo", "Rom", "Bern"]))
    target = _save(tmp_path / "two", **_rows(["Oslo", "Rom"]))
    code, printed, err = _run(["--source", source, "--target", target, "--methods", "lexical"], capsys)
    assert (code, printed) == (1, "")
    assert err == (f"crop-hf evaluate-projection: error: {source} has 3 rows but {target} has 2: row k of the "
                   "target must be the translation of row k of the source (--debug shows the traceback)\n")


def test_split_reaches_both_sides(tmp_path, capsys):
    """Validation (2 rows) asked for; test (3 rows) is what either side would read without it."""
    def side(words):
        return {"en_tokens": [[w, "en"] for w in words], "en_ner_tags": [["B-LOC", "O"]] * len(words),
                **_rows(words)}
    spec = _save(tmp_path / "splits", {"train": side(["Oslo"]), "validation": side(["Rom", "Bern"]),
                                       "test": side(["Wien", "Genf", "Riga"])})
    code, printed, err = _run(["--source", f"{spec}#en", "--target", spec, "--split", "validation",
                               "--methods", "lexical"], capsys)
    assert (code, err) == (0, "")
    assert printed.splitlines()[0] == "2 sentence pairs, 2 source and 2 gold target entities"


def test_extra_split_chooses_the_split_of_extra_parallel_specs(tmp_path, monkeypatch, capsys):
    source, target = _pair_corpus(tmp_path)
    calls = _identity_eflomal(monkeypatch)

    def bitext(n):
        return {"en_tokens": [["hello"]] * n, "en_ner_tags": [["O"]] * n, "tokens": [["hallo"]] * n,
                "ner_tags": [["O"]] * n}
    extra = _save(tmp_path / "bitext", {"train": bitext(3), "validation": bitext(4), "test": bitext(1)})
    spec = ["--source", source, "--target", target, "--methods", "alignment",
            "--extra_parallel", f"{extra}#en", extra]
    for options, pairs in (([], 5), (["--extra_split", "validation"], 6)):
        code, printed, _ = _run([*spec, *options], capsys)
        assert code == 0
        assert printed.splitlines()[0].endswith(f"(eflomal: {pairs} pairs in 0.0 s)")
    assert [len(source_sentences) for source_sentences, _ in calls] == [5, 6]
    assert calls[0][0][2:] == [["hello"]] * 3 and calls[0][1][2:] == [["hallo"]] * 3
