"""The datasets builders and ``crop_hf.data.load_dataset`` on the real corpora and our fixtures.

Each real config is built once per session (``build`` in data_fixtures.py); the expected rows come
from a deliberately naive reading of the same file here (split on blank lines), not from the readers.
"""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

import datasets
import pytest
from data_fixtures import FIXTURES, build, data_cache  # noqa: F401  (pytest fixtures)

from crop_hf.data import load_dataset
from crop_hf.data.readers import FormatError
from crop_hf.labels import iob1_to_iob2

#: The label names of Hugging Face's conll2002 / conll2003 and xtreme PAN-X builders, in id order.
HF_CONLL_NAMES = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]
HF_PANX_NAMES = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC"]

CONLL = {
    # config: (folder, {split: file}, counts, file encoding, file is IOB1)
    "es": ("conll2002", {"train": "esp.train", "validation": "esp.testa", "test": "esp.testb"},
           {"train": 8323, "validation": 1915, "test": 1517}, "iso-8859-1", False),
    "nl": ("conll2002", {"train": "ned.train", "validation": "ned.testa", "test": "ned.testb"},
           {"train": 15806, "validation": 2895, "test": 5195}, "iso-8859-1", False),
    "en": ("conll2003", {"train": "eng.train", "validation": "eng.testa", "test": "eng.testb"},
           {"train": 14041, "validation": 3250, "test": 3453}, "ascii", True),
}


def naive_sentences(path: Path, encoding: str, tag_at: int = -1, token_at: int = 0):
    """(tokens, tags) per sentence, read the simplest way: blank lines split, -DOCSTART- dropped."""
    sentences, current = [], []
    for line in [*path.read_text(encoding=encoding).split("\n"), ""]:
        fields = line.split()
        if not fields or fields[0] == "-DOCSTART-":
            if current:
                sentences.append(([f[token_at] for f in current], [f[tag_at] for f in current]))
            current = []
        else:
            current.append(fields)
    return sentences


@pytest.mark.parametrize("config", list(CONLL))
def test_conll5_matches_files_with_hf_label_ids(shared_data, build, config):  # noqa: F811
    folder, files, counts, encoding, iob1 = CONLL[config]
    ds = build("conll5", config, shared_data / folder)
    assert isinstance(ds, datasets.DatasetDict)
    assert {split: ds[split].num_rows for split in ds} == counts
    assert ds["train"].features["ner_tags"].feature.names == HF_CONLL_NAMES
    for split, name in files.items():
        expected = naive_sentences(shared_data / folder / name, encoding)
        assert len(expected) == counts[split]
        rows = ds[split]
        for index in (0, len(expected) - 1):  # first and last sentence, token by token
            tokens, tags = expected[index]
            assert rows[index]["tokens"] == tokens
            assert rows[index]["lang"] == config and rows[index]["id"] == str(index)
        # Every tag's id is its index in Hugging Face's label list.
        tag_ids = rows["ner_tags"]
        for (_tokens, tags), ids in zip(expected, tag_ids, strict=True):
            iob2 = iob1_to_iob2(tags) if iob1 else tags
            assert ids == [HF_CONLL_NAMES.index(tag) for tag in iob2]


def test_conll5_en_converts_iob1(shared_data, build):  # noqa: F811
    first = build("conll5", "en", shared_data / "conll2003")["train"][0]
    assert first["tokens"][:3] == ["EU", "rejects", "German"]
    # The file has I-ORG and I-MISC opening entities; IOB2 opens them with B-.
    assert [HF_CONLL_NAMES[i] for i in first["ner_tags"]][:3] == ["B-ORG", "O", "B-MISC"]
    test_ids = build("conll5", "en", shared_data / "conll2003")["test"]["ner_tags"]
    starts_with_inside = [ids for ids in test_ids if ids and HF_CONLL_NAMES[ids[0]].startswith("I-")]
    assert starts_with_inside == []


def test_conll5_latin1_tokens(shared_data, build):  # noqa: F811
    spanish = build("conll5", "es", shared_data / "conll2002")["train"]
    tokens = {t for row in spanish["tokens"] for t in row}
    assert {"España", "Sebastián"} <= tokens and not any("Ã" in t for t in tokens)


def test_cache_folder_follows_the_code(tmp_path, shared_data, monkeypatch):
    """Editing a reader must not reuse Arrow files written by the old code."""
    from crop_hf.data import builder as builder_module
    from crop_hf.data.conll5 import Conll5

    kwargs = {"cache_dir": str(tmp_path), "config_name": "es", "data_dir": str(shared_data / "conll2002")}
    before = Conll5(**kwargs).cache_dir
    monkeypatch.setattr(builder_module.inspect, "getsource", lambda module: f"edited {module.__name__}")
    assert Conll5(**kwargs).cache_dir != before


def _copy_conll2002_es(shared_data: Path, target: Path) -> Path:
    target.mkdir()
    for name in ("esp.train", "esp.testa", "esp.testb"):
        shutil.copy(shared_data / "conll2002" / name, target / name)
    return target


def _arrow_files(cache: Path) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for p in cache.rglob("*.arrow")}


def test_edited_release_file_is_read_again_and_unchanged_files_are_not(tmp_path, shared_data):
    """Regression: appending a sentence to esp.train and reloading returned the old rows."""
    data = _copy_conll2002_es(shared_data, tmp_path / "conll2002")
    cache = tmp_path / "cache"
    first = load_dataset("conll5", "es", data_dir=str(data), cache_dir=str(cache))["train"]
    written = _arrow_files(cache)
    again = load_dataset("conll5", "es", data_dir=str(data), cache_dir=str(cache))["train"]
    assert again.num_rows == first.num_rows == 8323
    assert _arrow_files(cache) == written  # same files, same options: nothing rebuilt
    with (data / "esp.train").open("a", encoding="iso-8859-1") as handle:
        handle.write("\nAdiós O\nGotemburgo B-LOC\n")
    edited = load_dataset("conll5", "es", data_dir=str(data), cache_dir=str(cache))["train"]
    assert edited.num_rows == 8324
    assert edited[-1]["tokens"] == ["Adiós", "Gotemburgo"]


def test_options_that_change_rows_change_the_cache_key(tmp_path, shared_data):
    from crop_hf.data.conll5 import Conll5

    kwargs = {"cache_dir": str(tmp_path), "config_name": "es", "data_dir": str(shared_data / "conll2002")}
    assert Conll5(**kwargs).cache_dir != Conll5(**kwargs, skip_bad_records=True).cache_dir


def test_a_split_whose_every_record_is_bad_names_files_and_counts(tmp_path, shared_data):
    """Regression: skip_bad_records on an all-bad split ended in 'Instruction "train" corresponds to no data'."""
    data = _copy_conll2002_es(shared_data, tmp_path / "conll2002")
    (data / "esp.train").write_text("Hola\nMundo B-LOC extra x y z\n\nfoo\n", encoding="utf-8")
    cache = tmp_path / "cache"
    for _ in range(2):  # the failed load left nothing behind that changes the second one
        with pytest.raises(ValueError, match=r"train split: every record was skipped") as info:
            load_dataset("conll5", "es", data_dir=str(data), cache_dir=str(cache), skip_bad_records=True)
        assert str(data / "esp.train") in str(info.value) and "2 skipped (2 columns)" in str(info.value)
    assert not list(cache.rglob("dataset_info.json"))
    (data / "esp.train").write_text("Hola O\nMundo B-LOC\n", encoding="utf-8")
    fixed = load_dataset("conll5", "es", data_dir=str(data), cache_dir=str(cache), skip_bad_records=True)
    assert fixed["train"]["tokens"] == [["Hola", "Mundo"]]


def test_conll5_de_without_data_dir_says_which_files(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"deu\.train, deu\.testa and deu\.testb"):
        load_dataset("conll5", "de", cache_dir=str(tmp_path))


def test_conll5_missing_file_is_named(tmp_path, shared_data):
    (tmp_path / "esp.train").symlink_to(shared_data / "conll2002/esp.train")
    with pytest.raises(FileNotFoundError, match=r"files not found in .*; looked for validation: esp\.testa; test: esp\.testb$"):
        load_dataset("conll5", "es", data_dir=str(tmp_path), cache_dir=str(tmp_path / "cache"))


def test_conll5_accepts_public_copy_layout(tmp_path, shared_data):
    """train.txt / valid.txt / test.txt (the deepai copy) work like eng.train / eng.testa / eng.testb."""
    for name, source in (("train.txt", "eng.testb"), ("valid.txt", "eng.testa"), ("test.txt", "eng.testb")):
        (tmp_path / name).symlink_to(shared_data / "conll2003" / source)
    ds = load_dataset("conll5", "en", data_dir=str(tmp_path), cache_dir=str(tmp_path / "cache"))
    assert ds.num_rows == {"train": 3453, "validation": 3250, "test": 3453}


def test_conll5_norne_counts(tmp_path, shared_data, build):  # noqa: F811
    # The train file is not in shared/data; stand the test file in for it.
    for split in ("dev", "test"):
        (tmp_path / f"no_bokmaal-ud-{split}.conllu").symlink_to(shared_data / f"norne/no_bokmaal-ud-{split}.conllu")
    (tmp_path / "no_bokmaal-ud-train.conllu").symlink_to(shared_data / "norne/no_bokmaal-ud-test.conllu")
    ds = build("conll5", "no", tmp_path, source="norne")
    assert ds.num_rows == {"train": 1939, "validation": 2410, "test": 1939}
    first = ds["validation"][0]
    assert first["tokens"][:3] == ["Dommer", "Finn", "Eilertsen"]
    assert [HF_CONLL_NAMES[i] for i in first["ner_tags"][:3]] == ["O", "B-PER", "I-PER"]


def test_conll5_nodalida_default_for_no(build):  # noqa: F811
    ds = build("conll5", "no", FIXTURES / "nodalida")
    assert ds.num_rows == {"train": 3, "validation": 2, "test": 1}
    assert [HF_CONLL_NAMES[i] for i in ds["test"][0]["ner_tags"]] == ["B-PER", "O", "O", "B-LOC", "I-LOC"]


def test_conll5_streaming_equals_built(shared_data, build, data_cache):  # noqa: F811
    built = build("conll5", "es", shared_data / "conll2002")["test"]
    streamed = load_dataset("conll5", "es", data_dir=str(shared_data / "conll2002"), cache_dir=str(data_cache),
                            streaming=True, split="test")
    assert isinstance(streamed, datasets.IterableDataset)
    assert list(streamed) == built.to_list()


def test_bad_records_raise_or_are_counted(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for split in ("train", "dev", "test"):
        shutil.copy(FIXTURES / "nodalida/no_bokmaal-ud-dev.bioes", data / f"no_bokmaal-ud-{split}.bioes")
    shutil.copy(FIXTURES / "malformed/bad.bioes", data / "no_bokmaal-ud-test.bioes")
    with pytest.raises(FormatError) as info:  # not datasets' generic DatasetGenerationError
        load_dataset("conll5", "no", data_dir=str(data), cache_dir=str(tmp_path / "a"))
    assert "no_bokmaal-ud-test.bioes:4: expected 5 non-empty columns" in str(info.value)
    from crop_hf.data.conll5 import Conll5

    builder = Conll5(config_name="no", data_dir=str(data), cache_dir=str(tmp_path / "b"), skip_bad_records=True)
    builder.download_and_prepare()
    assert builder.as_dataset(split="test").num_rows == 2
    assert dict(builder.skipped_records["test"].counts) == {"columns": 1, "label": 1}


# --------------------------------------------------------------------------- xtreme40


def test_xtreme40_de_counts_and_labels(shared_data, build):  # noqa: F811
    ds = build("xtreme40", "de", shared_data / "wikiann")
    assert ds.num_rows == {"train": 20000, "validation": 10000, "test": 10000}
    assert ds["train"].features["ner_tags"].feature.names == HF_PANX_NAMES
    for split, name in (("train", "train"), ("validation", "dev"), ("test", "test")):
        expected = naive_sentences(shared_data / "wikiann/de" / name, "utf-8")
        for index in (0, len(expected) - 1):
            tokens, tags = expected[index]
            row = ds[split][index]
            assert row["tokens"] == [t.split(":", 1)[1] for t in tokens]
            assert row["ner_tags"] == [HF_PANX_NAMES.index(tag) for tag in tags]
            assert row["lang"] == "de"


def _panx_archives(shared_data: Path, folder: Path, langs=("de", "en")) -> None:
    """{lang}.tar.gz holding the first sentences of each split, as in the PAN-X zip."""
    for lang in langs:
        with tarfile.open(folder / f"{lang}.tar.gz", "w:gz") as archive:
            for split in ("train", "dev", "test"):
                text = (shared_data / "wikiann" / lang / split).read_text(encoding="utf-8")
                small = folder / f"{lang}-{split}"
                small.write_text("\n\n".join(text.split("\n\n")[:7]) + "\n", encoding="utf-8")
                archive.add(small, arcname=split)


def test_xtreme40_all_from_archives(tmp_path, shared_data):
    _panx_archives(shared_data, tmp_path)
    ds = load_dataset("xtreme40", "all", languages=("de", "en"), data_dir=str(tmp_path),
                      cache_dir=str(tmp_path / "cache"))
    assert ds.num_rows == {"train": 14, "validation": 14, "test": 14}
    assert ds["train"]["lang"] == ["de"] * 7 + ["en"] * 7
    missing = tmp_path / "only-de"
    missing.mkdir()
    shutil.copy(tmp_path / "de.tar.gz", missing)
    with pytest.raises(FileNotFoundError, match=r"xtreme40/all: files not found in .*; looked for train: en/train or en\.tar\.gz or panx_dataset\.zip"):
        load_dataset("xtreme40", "all", languages=("de", "en"), data_dir=str(missing), cache_dir=str(tmp_path / "c2"))


def test_download_path_reads_a_url(tmp_path, shared_data, monkeypatch):
    """Without data_dir the builder downloads: here from a file:// copy of the PAN-X zip."""
    import zipfile

    from crop_hf.data import xtreme40

    _panx_archives(shared_data, tmp_path, langs=("nl",))
    bundle = tmp_path / "panx_dataset.zip"
    with zipfile.ZipFile(bundle, "w") as archive:
        archive.write(tmp_path / "nl.tar.gz", arcname="nl.tar.gz")
    monkeypatch.setattr(xtreme40, "PANX_URL", bundle.as_uri())
    ds = load_dataset("xtreme40", "nl", cache_dir=str(tmp_path / "cache"))
    assert ds.num_rows == {"train": 7, "validation": 7, "test": 7}


def test_conll5_downloads_en_zip_and_no_files(tmp_path, monkeypatch):
    """Without data_dir: CoNLL-2003's zip (train.txt/valid.txt/test.txt) and NoDaLiDa's three files, from file:// URLs."""
    import zipfile

    from crop_hf.data import conll5

    bundle = tmp_path / "conll2003.zip"
    with zipfile.ZipFile(bundle, "w") as archive:
        for name in ("train.txt", "valid.txt", "test.txt"):
            archive.writestr(name, "-DOCSTART- -X- -X- O\n\nEU NNP B-NP I-ORG\nrejects VBZ B-VP O\n")
    monkeypatch.setattr(conll5, "CONLL2003_EN_URL", bundle.as_uri())
    en = load_dataset("conll5", "en", cache_dir=str(tmp_path / "c1"))
    assert en["validation"][0]["ner_tags"] == [HF_CONLL_NAMES.index("B-ORG"), 0]
    monkeypatch.setattr(conll5, "NODALIDA_URL", (FIXTURES / "nodalida").as_uri() + "/no_bokmaal-ud-{split}.bioes")
    no = load_dataset("conll5", "no", cache_dir=str(tmp_path / "c2"))
    assert no.num_rows == {"train": 3, "validation": 2, "test": 1}


# --------------------------------------------------------------------------- cstop, top


def test_cstop_fixture_splits_and_features(build):  # noqa: F811
    ds = build("cstop", None, FIXTURES / "cstop")
    assert ds.num_rows == {"train": 5, "validation": 2, "test": 3}
    row = ds["train"][0]
    assert row["utterance"] == "Dime el clima para next Friday"
    assert row["slot_tags"] == ["O", "O", "O", "B-DATE_TIME", "I-DATE_TIME", "I-DATE_TIME"]
    assert (row["intent"], row["domain"]) == ("GET_WEATHER", "weather")


def test_top_domains_and_concatenation_with_cstop(build):  # noqa: F811
    weather = build("top", "v2", FIXTURES / "topv2", domains=("weather",))
    assert weather.num_rows == {"train": 3, "validation": 1, "test": 2}
    assert set(weather["test"]["domain"]) == {"weather"}
    both = datasets.concatenate_datasets([build("cstop", None, FIXTURES / "cstop")["train"], weather["train"]])
    assert both.num_rows == 8 and both[-1]["intent"] == "GET_WEATHER"


def test_top_v1_nested_and_domain_filter(build):  # noqa: F811
    v1 = build("top", "v1", FIXTURES / "top")
    assert v1.num_rows == {"train": 4, "validation": 3, "test": 2}
    events = build("top", "v1", FIXTURES / "top", domains=("event",))
    assert events["train"]["intent"] == ["GET_EVENT"]
    assert events["test"]["intent"] == ["GET_EVENT_ATTENDEE"]
    skipped = build("top", "v1", FIXTURES / "top", nested="skip")
    assert skipped.num_rows["train"] == 3


def test_top_v1_domain_absent_from_a_split_is_explained(tmp_path):
    with pytest.raises(ValueError) as info:
        load_dataset("top", "v1", data_dir=str(FIXTURES / "top"), domains=("weather",), cache_dir=str(tmp_path))
    assert "no utterance of domains ['weather'] in the train split; its domains are ['event', 'navigation']" in str(
        info.value)


def test_top_v2_missing_domain_is_named(tmp_path):
    with pytest.raises(FileNotFoundError,
                       match=r"top/v2: files not found in .*; looked for train: music_train\.tsv\. Found domains: navigation, weather$"):
        load_dataset("top", "v2", data_dir=str(FIXTURES / "topv2"), domains=("music",), cache_dir=str(tmp_path))


# --------------------------------------------------------------------------- load_dataset


def test_other_names_pass_through_to_datasets(tmp_path):
    (tmp_path / "rows.csv").write_text("a,b\n1,x\n2,y\n")
    ds = load_dataset("csv", data_files=str(tmp_path / "rows.csv"), split="train", cache_dir=str(tmp_path / "c"))
    assert isinstance(ds, datasets.Dataset) and ds["b"] == ["x", "y"]


def test_load_dataset_split_returns_dataset_and_rejects_data_files(build, data_cache):  # noqa: F811
    build("cstop", None, FIXTURES / "cstop")
    test = load_dataset("cstop", data_dir=str(FIXTURES / "cstop"), split="test", cache_dir=str(data_cache))
    assert isinstance(test, datasets.Dataset) and test.num_rows == 3
    with pytest.raises(ValueError, match="`data_files` is not supported"):
        load_dataset("cstop", data_files="x.tsv", cache_dir=str(data_cache))
