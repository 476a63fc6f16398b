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
    read_europarl_ner,
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
        # The broken sentence goes on after its bad line: the rest of it is skipped, not what follows.
        content = b"de:Hallo\tO\n\nde:" + bad + b"\tB-LOC\nde:x\tO\n\nde:Berlin\tB-LOC\n"
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


@pytest.mark.parametrize("reader", [read_conll, read_panx])
def test_an_undecodable_line_fails_its_sentence_with_line_and_encoding(caplog, reader):
    bad = "Caf\xe9".encode("latin-1")
    prefix, tab, options = (b"de:", b"\t", {}) if reader is read_panx else (b"", b" ", {"encoding": "utf-8"})
    content = b"\n\n".join(prefix + b"Hallo" + tab + b"O" + b"\n" + prefix + w + tab + b"O" for w in (b"Oslo", bad))
    content += b"\n" + prefix + b"mehr" + tab + b"O\n\n" + prefix + b"Berlin" + tab + b"B-LOC\n"
    with pytest.raises(FormatError) as info:
        list(reader(("a.txt", io.BytesIO(content)), **options))
    expected = "text in UTF-8" if reader is read_panx else "text in utf-8"
    assert (info.value.path, info.value.line, info.value.expected, info.value.reason) == ("a.txt", 5, expected, "encoding")
    skipped = SkippedRecords()
    with caplog.at_level(logging.WARNING, logger="crop_hf.data.readers"):
        sentences = list(reader(("a.txt", io.BytesIO(content)), errors="skip", skipped=skipped, **options))
    assert [s.tokens for s in sentences] == [["Hallo", "Oslo"], ["Berlin"]]
    assert dict(skipped.counts) == {"encoding": 1}
    assert "a.txt: skipped 1 malformed records" in caplog.text


def test_panx_tag_follows_the_last_tab_and_bioes_takes_a_label_set():
    assert list(read_panx(_source("panx.tsv", "de:New\tYork\tB-LOC\n"))) == [(["New\tYork"], ["B-LOC"], 1, "de")]
    text = "1\tKari\tkari\tPROPN\tS-PRS\n"
    assert next(read_bioes(_source("a.bioes", text), label_map={"PRS": "FOO"}, label_set=None)).tags == ["B-FOO"]


# --------------------------------------------------------------------------- exact behaviour on small inputs


def _source(name: str, text: str):
    return (name, io.BytesIO(text.encode("utf-8")))


def _error(reader, name: str, text: str, **options) -> tuple:
    with pytest.raises(FormatError) as info:
        list(reader(_source(name, text), **options))
    error = info.value
    return error.path, error.line, error.expected, error.found, error.reason



NORNE = (
    "# sent_id = 1\n"
    "1\tJeg\tjeg\tPRON\t_\t_\t2\tnsubj\t_\tname=O\n"
    "2-3\tbor i\t_\t_\t_\t_\t_\t_\t_\t_\n"  # a multiword token: not a word of the sentence
    "2\tbor\tbo\tVERB\t_\t_\t0\troot\t_\tname=O\n"
    "3\ti\ti\tADP\t_\t_\t4\tcase\t_\tSpaceAfter=No|name=O\n"
    "3.1\tx\tx\tX\t_\t_\t_\t_\t_\tname=O\n"  # an empty node: not a word either
    "4\tOslo\tOslo\tPROPN\t_\t_\t2\tobl\t_\tname=B-GPE_LOC  \n"
    "\n\n"
    "1\tKari\tKari\tPROPN\t_\t_\t0\troot\t_\tname=B-PER\n"
)


def test_conllu_reads_words_skips_multiword_tokens_and_empty_nodes():
    sentences = list(read_conllu_ner(_source("no.conllu", NORNE)))
    assert sentences == [(["Jeg", "bor", "i", "Oslo"], ["O", "O", "O", "B-LOC"], 2, None),
                         (["Kari"], ["B-PER"], 10, None)]
    assert _error(read_conllu_ner, "no.conllu", "1\tJeg\tjeg\tPRON\t_\t_\t2\tnsubj\t_\n") == (
        "no.conllu", 1, "10 tab-separated CoNLL-U columns", "1\tJeg\tjeg\tPRON\t_\t_\t2\tnsubj\t_", "columns")
    assert _error(read_conllu_ner, "no.conllu", "1\tJeg\tjeg\tPRON\t_\t_\t2\tnsubj\t_\tSpaceAfter=No\n") == (
        "no.conllu", 1, "a 'name=' entry in the MISC column", "SpaceAfter=No", "tag")
    assert _error(read_conllu_ner, "no.conllu", "# c\n1\tX\tx\tX\t_\t_\t0\troot\t_\tname=B-FOO\n",
                  label_map={"FOO": "FOO"}) == (
        "no.conllu", 2, "a tag among O, B-PER, I-PER, B-ORG, I-ORG, B-LOC, I-LOC, B-MISC, I-MISC", "B-FOO", "label")


def test_conllu_skip_mode_counts_and_names_the_file(caplog):
    skipped = SkippedRecords()
    text = "1\tJeg\tjeg\tPRON\t_\t_\t2\tnsubj\t_\tSpaceAfter=No\n\n" + NORNE
    with caplog.at_level(logging.WARNING):
        sentences = list(read_conllu_ner(_source("no.conllu", text), errors="skip", skipped=skipped))
    assert [s.tokens for s in sentences] == [["Jeg", "bor", "i", "Oslo"], ["Kari"]]
    assert dict(skipped.counts) == {"tag": 1}
    assert "no.conllu: skipped 1 malformed records" in caplog.text


def test_panx_reads_language_prefixes_and_reports_what_is_wrong():
    text = "de:Angela\tB-PER\nde:3:57,22\tO\n\n\nen:New York\tB-LOC\n"
    assert list(read_panx(_source("panx.tsv", text))) == [(["Angela", "3:57,22"], ["B-PER", "O"], 1, "de"),
                                                          (["New York"], ["B-LOC"], 5, "en")]
    for line in ("de:Angela B-PER", "Angela\tB-PER", "de:\tO", ":x\tO", "de:x\t "):
        assert _error(read_panx, "panx.tsv", line + "\n") == ("panx.tsv", 1, "'lang:token<TAB>TAG'", line, "columns")
    assert _error(read_panx, "panx.tsv", "de:x\tO\nen:y\tO\n") == (
        "panx.tsv", 2, "the language prefix 'de:' of the sentence", "en:y\tO", "lang")
    assert _error(read_panx, "panx.tsv", "de:x\tB-FOO\n") == (
        "panx.tsv", 1, "a tag among O, B-PER, I-PER, B-ORG, I-ORG, B-LOC, I-LOC", "B-FOO", "label")


def test_conll_columns_separators_and_tag_errors_are_exact():
    text = "Angela NNP B-PER\nMerkel NNP I-PER\n\n\nParis NNP B-LOC\n"
    assert list(read_conll(_source("a.conll", text))) == [(["Angela", "Merkel"], ["B-PER", "I-PER"], 1, None),
                                                           (["Paris"], ["B-LOC"], 5, None)]
    tabbed = list(read_conll(_source("a.tsv", "New York\tB-LOC\n"), separator="\t"))
    assert tabbed == [(["New York"], ["B-LOC"], 1, None)]
    assert _error(read_conll, "a.tsv", "New York\t\tB-LOC\n", separator="\t") == (
        "a.tsv", 1, "2 to 5 non-empty columns with the tag last", "New York\t\tB-LOC", "columns")
    assert _error(read_conll, "a.conll", "x y B-PER\n", min_columns=2, max_columns=2) == (
        "a.conll", 1, "2 non-empty columns with the tag last", "x y B-PER", "columns")
    assert _error(read_conll, "a.conll", "x\n") == ("a.conll", 1, "2 to 5 non-empty columns with the tag last", "x",
                                                   "columns")
    assert _error(read_conll, "a.conll", "x O\ny PER\n") == (
        "a.conll", 2, "a tag such as 'O', 'B-PER' or 'I-PER' in the last column", "PER", "tag")
    for scheme, tag in (("IOB2", "E-PER"), ("IOB1", "S-PER")):
        assert _error(read_conll, "a.conll", f"x O\ny {tag}\n", scheme=scheme) == (
            "a.conll", 2, f"an {scheme} tag (prefix B or I)", tag, "tag")
    assert _error(read_conll, "a.conll", "x B-FOO\n", label_map={"PER": "PER", "LOC": None}) == (
        "a.conll", 1, "an entity type among PER, LOC", "B-FOO", "label")
    assert _error(read_conll, "a.conll", "x O\ny B-FOO\n") == (
        "a.conll", 2, "a tag among O, B-PER, I-PER, B-ORG, I-ORG, B-LOC, I-LOC, B-MISC, I-MISC", "B-FOO", "label")
    with pytest.raises(ValueError, match="unknown tag scheme 'IOB3'; expected IOB1, IOB2 or BIOES"):
        list(read_conll(_source("a.conll", "x I-PER\n"), scheme="IOB3"))
    # Without a label set any IOB2 tag passes; IOB1 is converted even when every tag is known.
    assert next(read_conll(_source("a.conll", "x B-FOO\n"), label_set=None)).tags == ["B-FOO"]
    assert next(read_conll(_source("a.conll", "x I-PER\ny I-PER\n"), scheme="IOB1")).tags == ["B-PER", "I-PER"]
    mapped = next(read_conll(_source("a.conll", "x B-PER\ny B-LOC\n"), label_map={"PER": "ORG", "LOC": None}))
    assert mapped.tags == ["B-ORG", "O"]


def test_bioes_reads_the_tab_separated_nodalida_columns():
    text = "1\tKari\tkari\tPROPN\tS-PRS\n2\tbor\tbo\tVERB\tO\n3\tNew York\tny\tPROPN\tB-GEO\n4\tCity\tc\tX\tE-GEO\n"
    assert list(read_bioes(_source("a.bioes", text))) == [
        (["Kari", "bor", "New York", "City"], ["B-PER", "O", "B-LOC", "I-LOC"], 1, None)]
    assert _error(read_bioes, "a.bioes", "1\tx\tx\tX\tO\tO\n") == (
        "a.bioes", 1, "5 non-empty columns with the tag last", "1\tx\tx\tX\tO\tO", "columns")
    assert _error(read_bioes, "a.bioes", "1\tx\tx\tX\tS-PRS\n", label_map={"PRS": "FOO"}) == (
        "a.bioes", 1, "a tag among O, B-PER, I-PER, B-ORG, I-ORG, B-LOC, I-LOC, B-MISC, I-MISC", "B-FOO", "label")


# --- Europarl-NER ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("lang", "entities", "first"), [("en", 702, ["Resumption", "of", "the", "session"]),
                                                        ("de", 693, ["Wiederaufnahme", "der", "Sitzungsperiode"])])
def test_the_real_europarl_ner_files_hold_799_sentences_and_the_documented_entities(shared_data, lang, entities, first):
    sentences = list(read_europarl_ner(shared_data / f"europarl-ner/{lang}-europarl.test.conll02"))
    assert len(sentences) == 799
    assert sum(tag.startswith("B-") for s in sentences for tag in s.tags) == entities
    assert sentences[0].tokens == first and sentences[0].line == 1
    assert [s.tokens[:2] for s in sentences[1:2]] == [["I", "declare"] if lang == "en" else ["Ich", "erkläre"]]


@pytest.mark.parametrize(("text", "line", "reason"), [
    ("Resumption\tO\n\nI\tO\nmet\tO\tO\n", 4, "columns"),          # three columns
    ("Resumption\tO\n\nI\tO\nParis\tB-CITY\n", 4, "label"),       # a type not among PER ORG LOC MISC
    ("Paris\tS-LOC\n", 1, "tag"),                                  # not IOB2
    ("Paris B-LOC\n", 1, "columns"),                               # space, not tab
])
def test_a_malformed_line_names_the_file_and_the_line(tmp_path, text, line, reason):
    path = tmp_path / "de-europarl.test.conll02"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(FormatError) as error:
        list(read_europarl_ner(path))
    assert f"{path}:{line}" in str(error.value)
    assert error.value.reason == reason


def test_a_file_that_is_not_utf8_is_an_error_at_its_line(tmp_path):
    path = tmp_path / "en-europarl.test.conll02"
    path.write_bytes("Paris\tB-LOC\n\nK\xf6ln\tB-LOC\n".encode("latin-1"))
    with pytest.raises(FormatError, match=f"{path}:3"):
        list(read_europarl_ner(path))
