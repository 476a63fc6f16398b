"""translate-align's ``--input`` and ``--split`` (issue 68): ``#en`` after a file, a folder or a spec names the
side of a parallel corpus whose columns are read, and the result's table names the split the run read."""

from __future__ import annotations

import json

import datasets
import pytest
from test_translate_align import DictTranslator, TableAligner, config

from crop_hf.augment.inputs import iter_parse_inputs
from crop_hf.augment.translate_align import TranslateAlignModels, translate_align

# two sides of one parallel corpus, as Hinglish-TOP has them: en_* and, here, hi_* columns
COLUMNS = {
    "en_parse": ["[IN:CREATE_CALL call [SL:CONTACT mom ] ]", "[IN:PLAY_MUSIC play [SL:MUSIC_TYPE music ] ]"],
    "en_query": ["call mom", "play music"],
    "hi_parse": ["[IN:CREATE_CALL [SL:CONTACT mom ] ko call karo ]", "[IN:PLAY_MUSIC [SL:MUSIC_TYPE music ] bajao ]"],
    "hi_query": ["mom ko call karo", "music bajao"],
}


@pytest.fixture
def corpus(tmp_path):
    """The same rows as a TSV file and as a saved ``DatasetDict`` folder (its validation split reversed)."""
    tsv = tmp_path / "parses.tsv"
    names = list(COLUMNS)
    rows = zip(*COLUMNS.values(), strict=True)
    tsv.write_text("\n".join(["\t".join(names), *("\t".join(row) for row in rows)]) + "\n", encoding="utf-8")
    train = datasets.Dataset.from_dict(COLUMNS)
    folder = tmp_path / "corpus"
    datasets.DatasetDict({"train": train, "validation": train.select([1, 0])}).save_to_disk(str(folder))
    return tsv, folder


def read(source: str, split: str = "train") -> list[tuple[str, str | None]]:
    return [(item.parse, item.utterance) for item in iter_parse_inputs(source, split=split, option="--input")]


def test_a_side_suffix_reads_that_side_after_a_file_a_folder_and_a_spec(corpus):
    tsv, folder = corpus
    en = list(zip(COLUMNS["en_parse"], COLUMNS["en_query"], strict=True))
    hi = list(zip(COLUMNS["hi_parse"], COLUMNS["hi_query"], strict=True))
    for source in (str(tsv), str(folder), f"disk:{folder}"):
        assert read(source) == en  # no side: the English columns, as before
        assert read(f"{source}#en") == en, source
        assert read(f"{source}#hi") == hi, source
    assert read(f"{folder}#hi", split="validation") == hi[::-1]
    whole = folder.parent / "corpus#en"  # a folder whose name holds the suffix is read whole
    folder.rename(whole)
    assert read(str(whole)) == en
    with pytest.raises(ValueError, match=r"no parse column \(xx_parse\)"):
        read(f"{whole}#xx")


def test_the_table_names_the_split_the_run_read_and_the_outputs_keep_train(corpus, tmp_path):
    _, folder = corpus
    cfg = config(tmp_path, input=f"disk:{folder}#en", split="validation")
    result = translate_align(cfg, TranslateAlignModels(DictTranslator(), TableAligner()))
    assert list(result.statistics) == ["validation"] and result.statistics["validation"]["input"] == 2
    assert result.table().splitlines()[2].split()[0] == "validation"  # header, rule, then the split's row
    kept = datasets.load_from_disk(str(result.output_dir / "dataset"))
    assert list(kept) == ["train"] and kept["train"]["source"] == ["validation:0", "validation:1"]
    assert kept["train"]["source_utterance"] == ["play music", "call mom"]  # the en_* columns of validation
    assert json.loads((result.output_dir / "statistics.json").read_text())["input"] == 2
    again = translate_align(cfg, TranslateAlignModels(DictTranslator(), TableAligner()))
    assert again.skipped_shards == {"validation": 1} and again.statistics == result.statistics  # resumed, same name
