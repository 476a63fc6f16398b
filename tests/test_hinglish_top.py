"""Hinglish-TOP builder: exact counts on the real files, nested parses kept and flagged, bad rows named."""

from __future__ import annotations

import re

import pytest

from crop_hf.data.hinglish_top import HinglishParse, read_hinglish_top
from crop_hf.data.readers import FormatError, SkippedRecords
from crop_hf.seqlogical import parse

HEADER = "en_query\tcs_query\ten_parse\tcs_parse\tdomain\n"
ROW = ("weather in Delhi\tDelhi ka weather\t[IN:GET_WEATHER weather in [SL:LOCATION Delhi ] ]\t"
       "[IN:GET_WEATHER [SL:LOCATION Delhi ] ka weather ]\tweather\n")


def test_real_files_exact_counts_and_nested_flags(shared_data, tmp_path):
    import crop_hf

    ds = crop_hf.load_dataset("hinglish_top", data_dir=str(shared_data / "hinglish-top"), cache_dir=str(tmp_path))
    assert {split: ds[split].num_rows for split in ds} == {"train": 2993, "validation": 1390}
    assert sum(ds["train"]["nested"]) == 380 and sum(ds["validation"]["nested"]) == 189
    row = ds["train"][0]
    assert row["intent"] == "CREATE_ALARM" and row["domain"] == "alarm"
    assert len(row["tokens"]) == len(row["slot_tags"]) and len(row["en_tokens"]) == len(row["en_slot_tags"])
    assert row["en_intent"] == row["intent"]
    nested = ds["validation"].filter(lambda r: r["nested"])[0]
    tree = parse(nested["parse"])
    assert tree.depth > 2 and tree.tokens == nested["tokens"]  # the whole tree is kept
    assert len(set(ds["train"]["domain"])) == 8


def test_nested_skip_is_counted_not_silent(tmp_path):
    nested_row = ("remind me about the party\tparty ke baare mein remind karo\t"
                  "[IN:CREATE_REMINDER remind [SL:PERSON_REMINDED me ] about [SL:TODO [IN:GET_EVENT the party ] ] ]\t"
                  "[IN:CREATE_REMINDER [SL:TODO [IN:GET_EVENT party ] ] ke baare mein remind karo ]\treminder\n")
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "train.tsv").write_text(HEADER + ROW + nested_row, encoding="utf-8")
    (folder / "validation.tsv").write_text(HEADER + ROW, encoding="utf-8")
    from crop_hf.data.hinglish_top import HinglishTop

    builder = HinglishTop(data_dir=str(folder), cache_dir=str(tmp_path / "c1"))
    builder.download_and_prepare()
    train = builder.as_dataset(split="train")
    assert train["nested"] == [False, True]
    assert train[1]["slot_tags"] == ["B-TODO", "O", "O", "O", "O", "O"]
    builder = HinglishTop(data_dir=str(folder), cache_dir=str(tmp_path / "c2"), nested="skip")
    builder.download_and_prepare()
    assert builder.as_dataset(split="train").num_rows == 1
    assert builder.skipped_records["train"].counts["nested"] == 1


def test_bad_rows_name_file_and_line_or_are_counted(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_text(HEADER + ROW + "only\ttwo\n" + ROW.replace("[SL:LOCATION Delhi ] ka", "[SL:LOCATION Delhi ka"),
                    encoding="utf-8")
    with pytest.raises(FormatError, match=r"train.tsv:3: expected 5 tab-separated columns"):
        list(read_hinglish_top(path))
    skipped = SkippedRecords()
    rows = list(read_hinglish_top(path, errors="skip", skipped=skipped))
    assert [line for line, *_ in rows] == [2]
    assert dict(skipped.counts) == {"columns": 1, "parse": 1}
    (tmp_path / "noheader.tsv").write_text(ROW, encoding="utf-8")
    with pytest.raises(FormatError, match=r"noheader\.tsv:1: expected a header"):
        list(read_hinglish_top(tmp_path / "noheader.tsv"))


def test_each_bad_parse_is_named_with_its_column_and_reason(tmp_path):
    cases = {
        "[IN:GET_WEATHER [SL:LOCATION Delhi ka weather ]": ("expected a well-formed bracket parse in cs_parse", "parse"),
        "[SL:LOCATION Delhi ] ka weather": ("expected a well-formed bracket parse in cs_parse, found \"slot "
                                            "'SL:LOCATION' must be directly inside an intent", "parse"),
        "[IN:GET_WEATHER [SL:LOCATION ] ka weather ]": ("expected slots holding words in cs_parse, found \"slot "
                                                        "'SL:LOCATION' is empty in [IN:GET_WEATHER [SL:LOCATION ] "
                                                        "ka weather ]\"", "parse"),
    }
    for bad, (message, reason) in cases.items():
        path = tmp_path / "train.tsv"
        path.write_text(HEADER + ROW.replace("[IN:GET_WEATHER [SL:LOCATION Delhi ] ka weather ]", bad), encoding="utf-8")
        with pytest.raises(FormatError, match=rf"train\.tsv:2: {re.escape(message)}") as info:
            list(read_hinglish_top(path))
        assert info.value.reason == reason and info.value.line == 2
    path.write_text(HEADER + ROW.replace("[IN:GET_WEATHER weather in [SL:LOCATION Delhi ] ]", "[IN:X [SL:Y ] ]"),
                    encoding="utf-8")
    with pytest.raises(FormatError, match=r"train\.tsv:2: expected slots holding words in en_parse"):
        list(read_hinglish_top(path))


def test_rows_read_both_sides_whatever_the_column_order_and_spacing(tmp_path):
    header = " Domain \tcs_parse\ten_parse\tEN_QUERY\tcs_query\n"
    row = (" Weather \t [IN:GET_WEATHER [SL:LOCATION Delhi ] ka weather ] \t[IN:GET_WEATHER weather in "
           "[SL:LOCATION Delhi ] ]\t weather in Delhi \t Delhi ka weather \n")
    path = tmp_path / "validation.tsv"
    path.write_text("\n" + header + "\n" + row + "   \n" + row, encoding="utf-8")
    rows = list(read_hinglish_top(path))
    assert [line for line, *_ in rows] == [4, 6]
    _, cs, en, domain = rows[0]
    assert domain == "weather"
    assert cs == HinglishParse("Delhi ka weather", ["Delhi", "ka", "weather"], "GET_WEATHER",
                               ["B-LOCATION", "O", "O"], "[IN:GET_WEATHER [SL:LOCATION Delhi ] ka weather ]", False)
    assert en == HinglishParse("weather in Delhi", ["weather", "in", "Delhi"], "GET_WEATHER",
                               ["O", "O", "B-LOCATION"], "[IN:GET_WEATHER weather in [SL:LOCATION Delhi ] ]", False)


def test_reader_options_and_empty_files(tmp_path, caplog):
    import logging

    path = tmp_path / "train.tsv"
    path.write_text(HEADER + ROW, encoding="utf-8")
    with pytest.raises(ValueError, match=r"^errors must be 'strict' or 'skip', got 'ignore'$"):
        list(read_hinglish_top(path, errors="ignore"))
    (tmp_path / "empty.tsv").write_text("\n\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"empty\.tsv:1: expected a header naming the columns en_query cs_query "
                                          r"en_parse cs_parse domain, found ''$") as info:
        list(read_hinglish_top(tmp_path / "empty.tsv"))
    assert info.value.reason == "header"
    (tmp_path / "partial.tsv").write_text("en_query\tcs_query\ten_parse\tcs_parse\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"partial\.tsv:1: expected a header naming the columns en_query cs_query "
                                          r"en_parse cs_parse domain, found 'en_query\\tcs_query\\ten_parse\\tcs_parse'$"
                       ) as info:
        list(read_hinglish_top(tmp_path / "partial.tsv", errors="skip"))  # a bad header is never skipped
    assert info.value.reason == "header"
    path.write_text(HEADER + "a\tb\n" + ROW + "c\n", encoding="utf-8")
    skipped = SkippedRecords()
    skipped.add(FormatError("other.tsv", 1, "x", None, "columns"))  # counted before: not this file's
    with caplog.at_level(logging.WARNING, logger="crop_hf.data.hinglish_top"):
        assert [line for line, *_ in read_hinglish_top(path, errors="skip", skipped=skipped)] == [3]
    assert skipped.total == 3
    assert caplog.records[-1].getMessage().startswith(f"{path}: skipped 2 malformed rows; so far 3 skipped")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="crop_hf.data.hinglish_top"):
        list(read_hinglish_top(tmp_path / "train.tsv", errors="skip", skipped=SkippedRecords()))
        path.write_text(HEADER + ROW, encoding="utf-8")
        list(read_hinglish_top(path, errors="skip"))
    assert len(caplog.records) == 1  # only the file with bad rows warns


def _folder(tmp_path, train, validation=ROW, test=None):
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "train.tsv").write_text(HEADER + train, encoding="utf-8")
    (folder / "dev.tsv").write_text(HEADER + validation, encoding="utf-8")
    if test is not None:
        (folder / "test.tsv").write_text(HEADER + test, encoding="utf-8")
    return folder


NESTED = ("remind me about the party\tparty ke baare mein remind karo\t"
          "[IN:CREATE_REMINDER remind [SL:PERSON_REMINDED me ] about [SL:TODO [IN:GET_EVENT the party ] ] ]\t"
          "[IN:CREATE_REMINDER [SL:TODO [IN:GET_EVENT party ] ] ke baare mein remind karo ]\tReminder\n")


def test_builder_rows_hold_both_sides_with_their_source_line(tmp_path):
    from crop_hf.data.hinglish_top import HinglishTop

    folder = _folder(tmp_path, ROW + NESTED, test=NESTED)
    builder = HinglishTop(data_dir=str(folder), cache_dir=str(tmp_path / "c"))
    builder.download_and_prepare()
    assert set(builder.info.splits) == {"train", "validation", "test"}
    train = builder.as_dataset(split="train")
    assert train[1] == {
        "id": "1", "utterance": "party ke baare mein remind karo", "tokens": ["party", "ke", "baare", "mein", "remind",
                                                                              "karo"],
        "intent": "CREATE_REMINDER", "slot_tags": ["B-TODO", "O", "O", "O", "O", "O"],
        "parse": "[IN:CREATE_REMINDER [SL:TODO [IN:GET_EVENT party ] ] ke baare mein remind karo ]",
        "domain": "reminder", "nested": True, "en_utterance": "remind me about the party",
        "en_tokens": ["remind", "me", "about", "the", "party"], "en_intent": "CREATE_REMINDER",
        "en_slot_tags": ["O", "B-PERSON_REMINDED", "O", "B-TODO", "I-TODO"],
        "en_parse": "[IN:CREATE_REMINDER remind [SL:PERSON_REMINDED me ] about [SL:TODO [IN:GET_EVENT the party ] ] ]",
        "en_nested": True, "source": "train.tsv:3"}
    assert train.features["en_tokens"] == train.features["tokens"] and train.features["en_nested"].dtype == "bool"
    assert builder.as_dataset(split="validation")["source"] == ["dev.tsv:2"]
    assert builder.info.citation.startswith("@inproceedings{agarwal-etal-2022-cst5")
    assert builder.info.homepage == "https://github.com/google-research-datasets/Hinglish-TOP-Dataset"


def test_builder_domains_nested_error_and_empty_split(tmp_path):
    from crop_hf.data.hinglish_top import HinglishTop

    folder = _folder(tmp_path, ROW + NESTED)
    weather = HinglishTop(data_dir=str(folder), cache_dir=str(tmp_path / "c1"), domains=("WEATHER",))
    weather.download_and_prepare()
    assert weather.as_dataset(split="train")["domain"] == ["weather"]
    assert "test" not in weather.info.splits
    for options, message in (
            ({"nested": "error"}, r"train\.tsv:3: expected a parse without intents nested in slots"),
            ({"nested": "keep"}, r"nested must be 'flatten', 'skip' or 'error', got 'keep'"),
            ({"domains": ("music",)}, r"hinglish_top: no row left in the train split \(domains present: "
                                      r"\['reminder', 'weather'\]\)")):
        with pytest.raises(Exception) as info:  # datasets wraps it: the cause is checked
            HinglishTop(data_dir=str(folder), cache_dir=str(tmp_path / str(options)), **options).download_and_prepare()
        assert re.search(message, str(info.value.__cause__ or info.value)), info.value
    with pytest.raises(FileNotFoundError, match=r"^hinglish_top: pass data_dir=<folder holding train\.tsv and "
                                                r"validation\.tsv> \(the release's 'Dataset/Human Annotated Data' "
                                                r"folder\)$"):
        HinglishTop(cache_dir=str(tmp_path / "c5")).download_and_prepare()


def test_a_row_with_too_few_columns_or_bytes_that_are_not_utf8_is_named(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_text(HEADER + "only\ttwo\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"train\.tsv:2: expected 5 tab-separated columns, found 'only\\ttwo'$"):
        list(read_hinglish_top(path))
    path.write_bytes((HEADER + ROW).encode("utf-8") + ROW.replace("Delhi ka", "D\xe9lhi ka").encode("latin-1") + ROW.encode())
    with pytest.raises(FormatError, match=r"train\.tsv:3: expected text in UTF-8$") as info:
        list(read_hinglish_top(path))
    assert info.value.reason == "encoding"
    skipped = SkippedRecords()
    assert [line for line, *_ in read_hinglish_top(path, errors="skip", skipped=skipped)] == [2, 4]
    assert dict(skipped.counts) == {"encoding": 1}
    path.write_bytes(b"en_query\tcs_query\xff\n" + ROW.encode())
    with pytest.raises(FormatError, match=r"train\.tsv:1: expected text in UTF-8$"):  # never skipped: the header
        list(read_hinglish_top(path, errors="skip"))


def test_builder_counts_skipped_rows_and_names_missing_files(tmp_path):
    from crop_hf.data.hinglish_top import HinglishTop

    folder = _folder(tmp_path, ROW + "a\tb\n" + ROW + ROW.replace("Delhi ]", "Delhi"))
    builder = HinglishTop(data_dir=str(folder), cache_dir=str(tmp_path / "c"), skip_bad_records=True)
    builder.download_and_prepare()
    assert builder.as_dataset(split="train")["id"] == ["0", "1"]
    assert dict(builder.skipped_records["train"].counts) == {"columns": 1, "parse": 1}
    (folder / "dev.tsv").unlink()
    with pytest.raises(FileNotFoundError, match=r"^hinglish_top: files not found in .*; looked for validation: "
                                                r"validation\.tsv or valid\.tsv or dev\.tsv or eval\.tsv$"):
        HinglishTop(data_dir=str(folder), cache_dir=str(tmp_path / "d")).download_and_prepare()


def test_builder_keeps_rows_after_a_filtered_or_skipped_one_numbered_in_order(tmp_path):
    from crop_hf.data.hinglish_top import HinglishTop

    music = ROW.replace("\tweather\n", "\tmusic\n")
    folder = _folder(tmp_path, music + ROW + NESTED + ROW + music + ROW)
    weather = HinglishTop(data_dir=str(folder), cache_dir=str(tmp_path / "a"), domains=("weather",), nested="skip")
    weather.download_and_prepare()
    train = weather.as_dataset(split="train")
    assert train["id"] == ["0", "1", "2"] and train["source"] == ["train.tsv:3", "train.tsv:5", "train.tsv:7"]
    nested = HinglishTop(data_dir=str(folder), cache_dir=str(tmp_path / "b"), nested="skip")
    nested.download_and_prepare()
    assert nested.as_dataset(split="train")["source"] == [f"train.tsv:{n}" for n in (2, 3, 5, 6, 7)]
    assert str(nested.skipped_records["train"]).startswith(
        "1 skipped (1 nested); first: " + str(tmp_path / "data" / "train.tsv") + ":4: expected a parse without intents "
        "nested in slots, found '[IN:CREATE_REMINDER [SL:TODO [IN:GET_EVENT party ] ] ke baare mein remind karo ]'")
