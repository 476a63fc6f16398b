"""Readers of the original release formats: real files in ../shared/data and small fixtures of our own."""

from __future__ import annotations

import io
import logging

import pytest
from data_fixtures import FIXTURES
from hypothesis import given
from hypothesis import strategies as st

from crop_hf.data.readers import (
    FormatError,
    SkippedRecords,
    infer_domain,
    iter_lines,
    read_bioes,
    read_conll,
    read_conllu_ner,
    read_panx,
    read_semantic_parses,
)
from crop_hf.labels import is_valid

MALFORMED = FIXTURES / "malformed"


# --------------------------------------------------------------------------- lines and encodings


def test_iter_lines_strips_bom_and_crlf_only(tmp_path):
    path = tmp_path / "f.txt"
    path.write_bytes(b"\xef\xbb\xbfone\r\ntwo \xc2\x85x\r\n\r\nthree")
    assert list(iter_lines(path)) == [(1, "one"), (2, "two \x85x"), (3, ""), (4, "three")]


def test_iter_lines_auto_falls_back_to_latin1_per_line():
    data = io.BytesIO("Sebastián\n".encode("iso-8859-1") + "Sebastián\n".encode())
    assert [text for _, text in iter_lines(("mixed", data))] == ["Sebastián", "Sebastián"]


def test_spanish_and_dutch_latin1_tokens_decode(shared_data):
    spanish = {token for sentence in read_conll(shared_data / "conll2002/esp.testa") for token in sentence.tokens}
    assert {"Sebastián", "Río", "Olímpicos"} <= spanish
    assert not any("Ã" in token for token in spanish)  # no UTF-8 mojibake of Latin-1 bytes
    dutch = {token for sentence in read_conll(shared_data / "conll2002/ned.testa") for token in sentence.tokens}
    assert {"Méér", "één"} <= dutch


# --------------------------------------------------------------------------- CoNLL columns


def test_conll2003_iob1_becomes_valid_iob2(shared_data):
    sentences = list(read_conll(shared_data / "conll2003/eng.testb", scheme="IOB1"))
    assert len(sentences) == 3453
    assert all(is_valid(sentence.tags, "IOB2") for sentence in sentences)
    first = next(read_conll(shared_data / "conll2003/eng.train", scheme="IOB1"))
    # The file says I-ORG O I-MISC O O O I-MISC O O.
    assert first.tags == ["B-ORG", "O", "B-MISC", "O", "O", "O", "B-MISC", "O", "O"]
    assert first.line == 1  # this copy of eng.train starts without a -DOCSTART- line


def test_conll_reads_two_three_and_four_columns(tmp_path):
    path = tmp_path / "mixed.conll"
    path.write_text("Madrid B-LOC\nes O\n\nDe Art O\nBelgiëN B-LOC\n\nEU NNP I-NP B-ORG\n")
    sentences = list(read_conll(path))
    assert [s.tokens for s in sentences] == [["Madrid", "es"], ["De", "BelgiëN"], ["EU"]]
    assert [s.line for s in sentences] == [1, 4, 7]


@pytest.mark.parametrize(
    ("reader", "line", "expected"),
    [
        (lambda p, **k: read_conll(p, scheme="IOB1", **k), 4, "a tag such as"),
        (read_bioes, 4, "5 non-empty columns"),
        (read_panx, 3, "'lang:token<TAB>TAG'"),
    ],
)
def test_malformed_line_names_file_line_and_expectation(reader, line, expected):
    name = {read_bioes: "bad.bioes", read_panx: "bad_panx"}.get(reader, "bad.conll")
    with pytest.raises(FormatError) as info:
        list(reader(MALFORMED / name))
    assert info.value.line == line
    assert info.value.path.endswith(name)
    assert f"{name}:{line}: expected" in str(info.value) and expected in str(info.value)


def test_skip_mode_counts_every_dropped_sentence(caplog):
    skipped = SkippedRecords()
    with caplog.at_level(logging.WARNING, logger="crop_hf.data.readers"):
        sentences = list(read_conll(MALFORMED / "bad.conll", scheme="IOB1", errors="skip", skipped=skipped))
    assert [s.tokens for s in sentences] == [["EU", "rejects"], ["BRUSSELS"]]
    assert dict(skipped.counts) == {"tag": 1, "columns": 1}
    assert "bad.conll:6" in str(skipped)
    assert "skipped 2 malformed records" in caplog.text


def test_bioes_maps_nodalida_types_and_tolerates_crlf_and_trailing_whitespace():
    sentences = list(read_bioes(FIXTURES / "nodalida/no_bokmaal-ud-train.bioes"))
    assert sentences[0].tokens == ["Jens", "Stoltenberg", "besøkte", "Oslo", "."]
    assert sentences[0].tags == ["B-PER", "I-PER", "O", "B-LOC", "O"]
    assert sentences[1].tags[-2:] == ["B-MISC", "I-MISC"]  # OTH -> MISC
    assert len(sentences) == 3


def test_bioes_unknown_type_is_reported_with_its_raw_tag():
    skipped = SkippedRecords()
    sentences = list(read_bioes(MALFORMED / "bad.bioes", errors="skip", skipped=skipped))
    assert [s.tokens for s in sentences] == [["Jens", "sover"], ["Bergen"]]
    assert skipped.counts == {"columns": 1, "label": 1}
    assert any("bad.bioes:7" in e and "'S-XYZ'" in e for e in skipped.examples)


def test_label_map_override_can_drop_a_type():
    sentences = list(read_bioes(FIXTURES / "nodalida/no_bokmaal-ud-train.bioes",
                                label_map={"PRS": "PER", "GEO": "LOC", "ORG": "ORG", "OTH": None}))
    assert sentences[1].tags[-2:] == ["O", "O"]


# --------------------------------------------------------------------------- NorNE, PAN-X


def test_norne_conllu_counts_and_misc_with_other_keys(shared_data):
    dev = list(read_conllu_ner(shared_data / "norne/no_bokmaal-ud-dev.conllu"))
    assert len(dev) == 2410
    assert dev[0].tokens[:4] == ["Dommer", "Finn", "Eilertsen", "avstår"]  # avstår has SpaceAfter=No|name=O
    assert dev[0].tags[:4] == ["O", "B-PER", "I-PER", "O"]
    assert sum(1 for _ in read_conllu_ner(shared_data / "norne/no_bokmaal-ud-test.conllu")) == 1939


def test_norne_missing_name_key_is_an_error(tmp_path):
    path = tmp_path / "x.conllu"
    path.write_text("# text = Hei\n1\tHei\thei\tINTJ\t_\t_\t0\troot\t_\tSpaceAfter=No\n\n")
    with pytest.raises(FormatError, match=r"x.conllu:2: expected a 'name=' entry"):
        list(read_conllu_ner(path))


def test_panx_splits_on_first_colon_only(shared_data):
    tokens = {t for s in read_panx(shared_data / "wikiann/de/train") for t in s.tokens}
    assert "3:57,22" in tokens


@pytest.mark.parametrize("lang", ["de", "en", "nl"])
def test_panx_counts(shared_data, lang):
    counts = [sum(1 for _ in read_panx(shared_data / f"wikiann/{lang}/{split}")) for split in ("train", "dev", "test")]
    assert counts == [20000, 10000, 10000]


# --------------------------------------------------------------------------- TOP / CSTOP


def test_cstop_layout_with_header_bom_crlf_and_slot_spans():
    records = list(read_semantic_parses(FIXTURES / "cstop/CSTOP/train.tsv"))
    assert len(records) == 5
    first = records[0]
    assert first.utterance == "Dime el clima para next Friday"
    assert first.intent == "GET_WEATHER" and first.domain == "weather"
    assert first.slot_tags == ["O", "O", "O", "B-DATE_TIME", "I-DATE_TIME", "I-DATE_TIME"]
    assert records[1].domain == "device"
    assert records[2].utterance.endswith("mañana?") and records[2].tokens[-2:] == ["mañana", "?"]


def test_top_v1_nested_trees_flatten_skip_or_raise():
    path = FIXTURES / "top/top-dataset-semantic-parsing/train.tsv"
    flat = list(read_semantic_parses(path))
    nested = flat[2]
    assert nested.tokens == ["directions", "to", "the", "jazz", "festival"]
    assert nested.slot_tags == ["O", "O", "B-DESTINATION", "I-DESTINATION", "I-DESTINATION"]
    assert "[IN:GET_EVENT" in nested.parse  # the full tree is kept
    assert flat[1].parse.endswith("] ]")  # trailing whitespace after the parse is gone
    skipped = SkippedRecords()
    assert len(list(read_semantic_parses(path, nested="skip", skipped=skipped))) == 3
    assert skipped.counts == {"nested": 1}
    with pytest.raises(FormatError, match=r"train\.tsv:3: expected a parse without intents nested"):
        list(read_semantic_parses(path, nested="error"))


def test_empty_file_yields_nothing():
    assert list(read_semantic_parses(MALFORMED / "empty.tsv")) == []
    assert list(read_conll(MALFORMED / "empty.tsv")) == []


def test_unbalanced_parse_names_line_and_position():
    with pytest.raises(FormatError) as info:
        list(read_semantic_parses(MALFORMED / "unbalanced.tsv"))
    assert info.value.line == 2 and info.value.reason == "parse"
    assert "never closed" in str(info.value)
    skipped = SkippedRecords()
    kept = list(read_semantic_parses(MALFORMED / "unbalanced.tsv", errors="skip", skipped=skipped))
    assert [r.line for r in kept] == [1, 3] and skipped.total == 1


def test_slot_spans_and_intent_column_must_agree_with_parse():
    with pytest.raises(FormatError, match=r"spans_disagree.tsv:2: expected slot span 9:14:SL:DATE_TIME"):
        list(read_semantic_parses(MALFORMED / "spans_disagree.tsv"))
    skipped = SkippedRecords()
    kept = list(read_semantic_parses(MALFORMED / "spans_disagree.tsv", errors="skip", skipped=skipped))
    assert [r.line for r in kept] == [1]
    assert skipped.counts == {"slot_spans": 1, "intent": 1}


def test_row_without_parse_column_is_an_error(tmp_path):
    path = tmp_path / "x.tsv"
    path.write_text("just words\tmore words\n")
    with pytest.raises(FormatError, match=r"x.tsv:1: expected a tab-separated column holding a parse"):
        list(read_semantic_parses(path))


def test_header_without_a_parse_name_is_recognised(tmp_path):
    path = tmp_path / "x.tsv"
    path.write_text("id\ttext\tlogical_form\n7\tcierra maps\t[IN:CLOSE_RESOURCE cierra [SL:RESOURCE maps ] ]\n")
    (record,) = read_semantic_parses(path)
    assert (record.utterance, record.intent, record.line) == ("cierra maps", "CLOSE_RESOURCE", 2)


def test_infer_domain():
    assert [infer_domain(i) for i in ("GET_WEATHER", "GET_EVENT", "GET_DIRECTIONS", "OPEN_RESOURCE", "FOO")] == [
        "weather", "event", "navigation", "device", "other"]


_WORD = st.text(alphabet=st.characters(categories=("L", "N")), min_size=1, max_size=6)


@given(
    words=st.lists(_WORD, min_size=1, max_size=8),
    slot=st.tuples(st.integers(0, 7), st.integers(1, 3)),
    crlf=st.booleans(),
)
def test_written_rows_read_back(words, slot, crlf):
    """Any flat parse written as raw / tokenized / parse reads back to the same tokens and tags."""
    from crop_hf.seqlogical import from_flat

    start = min(slot[0], len(words) - 1)
    end = min(start + slot[1], len(words))
    tree = from_flat(words, "PLAY", [(start, end, "X")])
    line = f"{' '.join(words)}\t{' '.join(words).lower()}\t{tree}"
    data = io.BytesIO((line + ("\r\n" if crlf else "\n")).encode())
    (record,) = read_semantic_parses(("row.tsv", data))
    assert record.tokens == words
    assert record.slot_tags == ["O"] * start + ["B-X"] + ["I-X"] * (end - start - 1) + ["O"] * (len(words) - end)


_TOKEN = st.text(alphabet=st.characters(categories=("L", "N", "P", "S")), min_size=1, max_size=5)


@given(
    sentences=st.lists(
        st.lists(st.tuples(_TOKEN, st.sampled_from(["O", "B-PER", "I-PER", "B-LOC", "I-MISC"])), min_size=1, max_size=6),
        min_size=1, max_size=5,
    ),
    columns=st.integers(2, 5),
    newline=st.sampled_from(["\n", "\r\n"]),
    bom=st.booleans(),
    docstart=st.booleans(),
    encoding=st.sampled_from(["utf-8", "iso-8859-1"]),
)
def test_conll_files_read_back(sentences, columns, newline, bom, docstart, encoding):
    """Whatever the column count, line ends, BOM, -DOCSTART- lines and encoding, sentences come back unchanged."""
    lines, starts = [], []
    for sentence in sentences:
        if docstart:
            lines += ["-DOCSTART- " + "-X- " * (columns - 2) + "O", ""]
        starts.append(len(lines) + 1)
        lines += [" ".join([token, *["X"] * (columns - 2), tag]) + "  " for token, tag in sentence]
        lines.append("")
    data = newline.join(lines).encode(encoding, errors="replace")
    if encoding == "iso-8859-1":
        sentences = [[(t.encode(encoding, errors="replace").decode(encoding), g) for t, g in s] for s in sentences]
    if bom and encoding == "utf-8":
        data = b"\xef\xbb\xbf" + data
    # Explicit codec: "auto" would read Latin-1 bytes that happen to be valid UTF-8 ("Â¡") as UTF-8.
    read = list(read_conll(("gen.conll", io.BytesIO(data)), encoding=encoding))
    assert [list(zip(s.tokens, s.tags, strict=True)) for s in read] == sentences
    assert [s.line for s in read] == starts


@pytest.mark.parametrize("reader", ["panx", "conllu", "parses"])
def test_a_line_that_is_not_utf8_names_file_and_line_or_is_skipped(tmp_path, reader):
    """Regression: readers of UTF-8 formats raised a bare UnicodeDecodeError."""
    from crop_hf.data.readers import read_conllu_ner, read_panx, read_semantic_parses

    bad = "Caf\xe9".encode("latin-1")
    if reader == "panx":
        content = b"de:Hallo\tO\n\nde:" + bad + b"\tB-LOC\n\nde:Berlin\tB-LOC\n"
        read = read_panx
    elif reader == "conllu":
        good = "1\tOslo\tOslo\tPROPN\t_\t_\t0\troot\t_\tname=B-GPE_LOC\n"
        content = (good + "\n").encode() + (b"1\t") + bad + (b"\t_\tX\t_\t_\t0\troot\t_\tname=O\n\n") \
            + good.encode()
        read = read_conllu_ner
    else:
        content = b"[IN:GET_WEATHER weather ]\n[IN:GET_WEATHER " + bad + b" ]\n[IN:GET_WEATHER rain ]\n"
        read = read_semantic_parses
    path = tmp_path / "file.txt"
    path.write_bytes(content)
    with pytest.raises(FormatError, match=r"file\.txt:[0-9]+: expected text in UTF-8") as info:
        list(read(path))
    assert info.value.reason == "encoding"
    skipped = SkippedRecords()
    assert len(list(read(path, errors="skip", skipped=skipped))) == 2
    assert dict(skipped.counts) == {"encoding": 1}
