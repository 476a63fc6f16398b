"""Hinglish-TOP builder: exact counts on the real files, nested parses kept and flagged, bad rows named."""

from __future__ import annotations

import pytest

from crop_hf.data.hinglish_top import read_hinglish_top
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
