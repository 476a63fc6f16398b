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


# --------------------------------------------------------------------------- what every builder shares (builder.py)


def test_find_split_files_tries_names_in_order_here_then_one_folder_below(tmp_path):
    from crop_hf.data.builder import DATA_DIR_HINT, find_split_files
    from crop_hf.errors import MissingFilesError

    (tmp_path / "b_sub").mkdir()
    (tmp_path / "a_sub").mkdir()
    (tmp_path / "a_sub" / "dev.tsv").write_text("x")
    (tmp_path / "b_sub" / "dev.tsv").write_text("x")
    (tmp_path / "b_sub" / "eval.tsv").write_text("x")
    (tmp_path / "train.tsv").write_text("x")
    (tmp_path / "a_sub" / "train.tsv").write_text("x")
    (tmp_path / "test.tsv").mkdir()  # a folder named like a file is not a file
    found = find_split_files(tmp_path, {"train": ("train.tsv",), "validation": ("eval.tsv", "dev.tsv")}, "corpus")
    # the first name wins wherever it is; a name here wins over the same name below
    assert found == {"train": str(tmp_path / "train.tsv"), "validation": str(tmp_path / "b_sub" / "eval.tsv")}
    found = find_split_files(tmp_path, {"validation": ("dev.tsv",)}, "corpus")
    assert found == {"validation": str(tmp_path / "a_sub" / "dev.tsv")}  # subfolders in name order
    with pytest.raises(MissingFilesError) as info:
        find_split_files(tmp_path, {"train": ("train.tsv",), "test": ("test.tsv", "t.tsv"), "x": ("x",)}, "corpus")
    assert str(info.value) == (f"corpus: files not found in {str(tmp_path)!r} (nor in its subfolders); "
                               "looked for test: test.tsv or t.tsv; x: x")
    with pytest.raises(MissingFilesError) as info:
        find_split_files(tmp_path / "nope", {"train": ("train.tsv",)}, "corpus")
    assert str(info.value) == f"corpus: no folder {str(tmp_path / 'nope')!r}; looked for train: train.tsv. {DATA_DIR_HINT}"
    assert DATA_DIR_HINT == "Pass data_dir=<the folder of the extracted release>"


def test_files_hash_follows_paths_sizes_and_times_of_every_file(tmp_path):
    import os

    from crop_hf.data.builder import _files_hash

    assert _files_hash(None) == "" and _files_hash("https://example.org/data") == ""
    assert _files_hash(tmp_path / "missing") == "" and _files_hash(tmp_path / "nope.txt") == ""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.txt").write_text("abc")
    first = _files_hash(tmp_path)
    assert len(first) == 16 and int(first, 16) >= 0 and _files_hash(str(tmp_path)) == first
    assert _files_hash(tmp_path) == first  # stat only: the same state, the same digest
    (tmp_path / "sub" / "a.txt").write_text("abd")  # same size
    stat = (tmp_path / "sub" / "a.txt").stat()
    os.utime(tmp_path / "sub" / "a.txt", ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    second = _files_hash(tmp_path)
    assert second != first
    os.rename(tmp_path / "sub" / "a.txt", tmp_path / "sub" / "b.txt")  # a new name, same size and times
    assert _files_hash(tmp_path) != second
    os.rename(tmp_path / "sub" / "b.txt", tmp_path / "sub" / "a.txt")
    (tmp_path / "empty").mkdir()  # folders are not files
    assert _files_hash(tmp_path) == _files_hash(tmp_path)


def test_files_hash_sees_a_change_only_the_status_change_time_records(tmp_path, monkeypatch):
    """``cp -p``: same size, the old modification time restored; only st_ctime_ns tells."""
    import os
    from pathlib import Path as RealPath

    from crop_hf.data import builder as builder_module

    (tmp_path / "a.txt").write_text("abc")
    before = builder_module._files_hash(tmp_path)
    real_stat = RealPath.stat

    class LaterCtime:
        def __init__(self, result):
            self.result = result
            self.st_ctime_ns = result.st_ctime_ns + 5_000_000_000

        def __getattr__(self, name):
            return getattr(self.result, name)

    def later_ctime(self, *args, **kwargs):
        result = real_stat(self, *args, **kwargs)
        return LaterCtime(result) if self.name == "a.txt" else result

    monkeypatch.setattr(RealPath, "stat", later_ctime)
    assert builder_module._files_hash(tmp_path) != before
    assert os.path.exists(tmp_path / "a.txt")


def test_source_hash_follows_the_builder_its_readers_and_the_label_code(monkeypatch):
    from crop_hf.data import builder as builder_module
    from crop_hf.data.cstop import Cstop

    real = builder_module.inspect.getsource
    before = builder_module._source_hash(Cstop)
    assert len(before) == 16 and before == builder_module._source_hash(Cstop)
    for edited in ("crop_hf.data.cstop", "crop_hf.data.builder", "crop_hf.data.readers.parses", "crop_hf.labels",
                   "crop_hf.seqlogical", "crop_hf.data.readers"):
        monkeypatch.setattr(builder_module.inspect, "getsource",
                            lambda module, edited=edited: real(module) + ("#" if module.__name__ == edited else ""))
        assert builder_module._source_hash(Cstop) != before, edited
    # a module outside crop_hf in the class's ancestry (datasets') does not count
    monkeypatch.setattr(builder_module.inspect, "getsource",
                        lambda module: "datasets" if module.__name__.startswith("datasets") else real(module))
    assert builder_module._source_hash(Cstop) == before


def test_builder_cache_key_joins_source_and_file_digests_unless_given(tmp_path):
    from crop_hf.data.builder import _files_hash, _source_hash
    from crop_hf.data.cstop import Cstop

    folder = FIXTURES / "cstop"
    built = Cstop(data_dir=str(folder), cache_dir=str(tmp_path))
    assert built.hash == f"{_source_hash(Cstop)}-{_files_hash(folder)}"
    assert Cstop(cache_dir=str(tmp_path)).hash == _source_hash(Cstop)  # no folder: no file digest, no dash
    assert Cstop(data_dir=str(folder), cache_dir=str(tmp_path), hash="fixed").hash == "fixed"
    assert built.skipped_records == {} and built._errors == "strict"
    assert Cstop(data_dir=str(folder), cache_dir=str(tmp_path), skip_bad_records=True)._errors == "skip"
    info = built._info()
    assert info.description == "CSTOP: Spanglish (Spanish + English code-switched) task-oriented semantic parsing."
    assert info.citation.startswith("@inproceedings{einolghozati") and info.homepage == ""
    assert list(info.features) == ["id", "utterance", "tokens", "intent", "slot_tags", "parse", "domain"]


def test_only_the_asked_splits_in_release_order(tmp_path):
    from crop_hf.data.cstop import Cstop

    per_split = {"train": 1, "validation": 2, "test": 3}
    assert Cstop(cache_dir=str(tmp_path))._only(per_split) == per_split
    assert Cstop(cache_dir=str(tmp_path), splits=("test", "train"))._only(per_split) == {"train": 1, "test": 3}
    with pytest.raises(ValueError, match=r"^cstop/default has no split 'dev', 'x'; its splits are train, validation, "
                                         r"test$"):
        Cstop(cache_dir=str(tmp_path), splits=("train", "dev", "x"))._only(per_split)


def test_report_skipped_logs_counts_and_refuses_an_empty_split(tmp_path, caplog):
    import logging

    from crop_hf.data.cstop import Cstop
    from crop_hf.data.readers import FormatError

    builder = Cstop(cache_dir=str(tmp_path))
    builder._produced["train"] = 2
    with caplog.at_level(logging.WARNING, logger="crop_hf.data.builder"):
        builder._report_skipped("train")  # nothing skipped: silent
        assert not caplog.records
        builder._skipped_for("train").add(FormatError("a.tsv", 3, "x", "y", "columns"))
        assert builder._skipped_for("train") is builder.skipped_records["train"]
        builder._report_skipped("train")
    assert [r.getMessage() for r in caplog.records] == [f"cstop/default train: {builder.skipped_records['train']}"]
    with pytest.raises(ValueError, match=r"^cstop/default validation split: the release files hold no records$"):
        builder._report_skipped("validation")
    builder._skipped_for("test").add(FormatError("b.tsv", 1, "x", "y", "parse"))
    builder._skipped_for("test").add(FormatError("a.tsv", 1, "x", "y", "parse"))
    with pytest.raises(ValueError, match=r"^cstop/default test split: every record was skipped as malformed, nothing "
                                         r"is left to load \(files: a\.tsv, b\.tsv; "):
        builder._report_skipped("test")


def test_generated_examples_are_counted_per_split_once(tmp_path):
    from crop_hf.data.builder import CropBuilder
    from crop_hf.data.cstop import Cstop

    builder = Cstop(data_dir=str(FIXTURES / "cstop"), cache_dir=str(tmp_path))
    files = [str(FIXTURES / "cstop" / "CSTOP" / "test.tsv")]
    keys = [key for key, _ in builder._generate_examples(files=files, split="test")]
    assert keys == [0, 1, 2] and builder._produced == {"test": 3}

    assert Cstop._generate_examples._counts_examples is True
    assert not hasattr(CropBuilder.__dict__.get("_generate_examples"), "_counts_examples")


def test_a_builder_defined_now_counts_its_examples_once(tmp_path):
    """``__init_subclass__`` wraps each new ``_generate_examples`` once (classes defined here, after import)."""
    from crop_hf.data.cstop import Cstop

    class Fresh(Cstop):
        def _generate_examples(self, files, split):
            yield from ((i, {"n": i}) for i in range(4))

    class Inherits(Fresh):  # nothing of its own to wrap
        pass

    class Reuses(Fresh):  # the already counting generator again: not wrapped a second time
        _generate_examples = Fresh._generate_examples

    assert Fresh._generate_examples._counts_examples is True and Fresh._generate_examples.__name__ == "_generate_examples"
    assert "_generate_examples" not in Inherits.__dict__
    for cls in (Fresh, Inherits, Reuses):
        builder = cls(cache_dir=str(tmp_path))
        assert [k for k, _ in builder._generate_examples(files=[], split="train")] == [0, 1, 2, 3]
        assert builder._produced == {"train": 4}, cls.__name__


def test_builder_arguments_are_passed_on_and_data_files_refused_by_name(tmp_path):
    from crop_hf.data.cstop import Cstop

    positional = Cstop(str(tmp_path / "positional"))  # cache_dir is datasets' first parameter
    assert positional.cache_dir.startswith(str(tmp_path / "positional"))
    with pytest.raises(ValueError, match=r"^Cstop reads a release from `data_dir`; `data_files` is not supported$"):
        Cstop(cache_dir=str(tmp_path), data_files="x.tsv")


def test_a_data_dir_that_reads_as_a_url_is_never_hashed(tmp_path):
    from crop_hf.data.builder import _files_hash

    (tmp_path / "s3:" / "bucket").mkdir(parents=True)  # the local path "<tmp>/s3://bucket" exists...
    (tmp_path / "s3:" / "bucket" / "a.txt").write_text("x")
    assert Path(f"{tmp_path}/s3://bucket").is_dir()
    assert _files_hash(f"{tmp_path}/s3://bucket") == ""  # ...but "://" marks a URL: not stat-ed
    assert _files_hash(tmp_path / "s3:" / "bucket") != ""


def test_description_of_a_builder_module_without_docstring_is_empty(tmp_path, monkeypatch):
    import sys

    from crop_hf.data.cstop import Cstop

    monkeypatch.setattr(sys.modules[Cstop.__module__], "__doc__", None)
    assert Cstop(cache_dir=str(tmp_path))._info().description == ""


def test_ner_rows_number_from_start_and_fall_back_to_the_config_language(tmp_path, build):  # noqa: F811
    from crop_hf.data.conll5 import Conll5
    from crop_hf.data.readers import TaggedSentence

    ds = build("conll5", "no", FIXTURES / "nodalida")
    row = ds["test"][0]
    assert row == {"id": "0", "tokens": row["tokens"], "ner_tags": row["ner_tags"], "lang": "no"}
    assert len(row["tokens"]) == 5 and list(ds["test"].features) == ["id", "tokens", "ner_tags", "lang"]
    builder = Conll5(config_name="no", cache_dir=str(tmp_path))
    sentences = [TaggedSentence(["Oslo"], ["B-LOC"], 1), TaggedSentence(["Bergen", "er"], ["B-LOC", "O"], 3, "nn")]
    assert list(builder._examples(sentences, "no", start=5)) == [
        (5, {"id": "5", "tokens": ["Oslo"], "ner_tags": [5], "lang": "no"}),
        (6, {"id": "6", "tokens": ["Bergen", "er"], "ner_tags": [5, 0], "lang": "nn"})]
    assert [key for key, _ in builder._examples(sentences, "no")] == [0, 1]


def test_semantic_parse_rows_in_full_and_skipped_rows_counted(tmp_path, build):  # noqa: F811
    from crop_hf.data.cstop import Cstop

    row = build("cstop", None, FIXTURES / "cstop")["train"][1]
    assert row == {"id": "1", "utterance": "Cierra maps", "tokens": ["Cierra", "maps"], "intent": "CLOSE_RESOURCE",
                   "slot_tags": ["O", "B-RESOURCE"], "parse": "[IN:CLOSE_RESOURCE Cierra [SL:RESOURCE maps ] ]",
                   "domain": "device"}
    folder = tmp_path / "data"
    shutil.copytree(FIXTURES / "cstop", folder)
    train = folder / "CSTOP" / "train.tsv"
    lines = train.read_text(encoding="utf-8-sig").splitlines()
    train.write_text("\n".join([*lines[:2], lines[2].replace(" ] ]", " ]"), *lines[3:]]) + "\n", encoding="utf-8")
    with pytest.raises(Exception) as info:  # datasets wraps it: the cause is checked
        Cstop(data_dir=str(folder), cache_dir=str(tmp_path / "strict")).download_and_prepare()
    assert "train.tsv:3" in str(info.value.__cause__ or info.value)
    builder = Cstop(data_dir=str(folder), cache_dir=str(tmp_path / "skip"), skip_bad_records=True)
    builder.download_and_prepare()
    assert builder.as_dataset(split="train").num_rows == 4
    assert builder.skipped_records["train"].total == 1 and set(builder.skipped_records) == {"train", "validation", "test"}
