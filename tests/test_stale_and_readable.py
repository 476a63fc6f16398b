"""Nothing stale, nothing unreadable (issue 68 points 1-3).

A rerun resumes only what the same inputs would produce: the content of every local input file and
model folder is in the run's fingerprint. Every file a run writes honours the umask. The output
folder is the dataset its card describes: ``load_dataset(output_dir)`` opens it as the Hub would.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import datasets
import pytest
from huggingface_hub import DatasetCard
from synthesis_fakes import fake_config, fake_models

from crop_hf.augment.generate_filter import GenerateFilterConfig, GenerateFilterJob
from crop_hf.augment.translate_align import TranslateAlignConfig, TranslateAlignJob
from crop_hf.engine import contents
from crop_hf.engine.contents import DATA, MODEL, content_digest, content_digests, local_paths
from crop_hf.engine.shards import atomic_write_bytes
from crop_hf.errors import OutputExistsError
from crop_hf.synthesis import synthesize
from crop_hf.synthesis.runner import SynthesisJob

RAW = {"de": ["Anna wohnt in Hamburg .", "Der Hafen von Hamburg liegt an der Elbe .", "niemand hier ."],
       "nl": ["Jan werkt bij Philips AG .", "De Maas stroomt door Rotterdam ."]}


@pytest.fixture(autouse=True)
def private_digest_cache(tmp_path, monkeypatch):
    """Each test its own digest cache (on disk and in memory)."""
    monkeypatch.setenv("CROP_HF_CACHE", str(tmp_path / "crop-hf-cache"))
    monkeypatch.setattr(contents, "_memory", {})


@pytest.fixture
def raw(tmp_path) -> Path:
    folder = tmp_path / "raw"
    folder.mkdir()
    for lang, lines in RAW.items():
        (folder / f"{lang}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def model_folder(path: Path, weights: bytes = b"weights-1") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text('{"model_type": "fake"}')
    (path / "model.safetensors").write_bytes(weights)
    (path / "tokenizer.json").write_text("{}")
    return path


def counting_reads(monkeypatch) -> list[Path]:
    """Every file ``content_digest`` opens from now on to digest it (its cache file aside)."""
    opened: list[Path] = []
    real_open = Path.open

    def open_and_count(self, *args, **kwargs):
        if self.name != "digests.json":
            opened.append(self)
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", open_and_count)
    return opened


# --------------------------------------------------------------------------- digests


def test_one_changed_byte_changes_the_digest_and_an_unchanged_file_is_not_read_again(tmp_path, monkeypatch):
    path = tmp_path / "es.txt"
    path.write_bytes(b"Hola Madrid .\n" * 1000)
    first = content_digest(path)
    opened = counting_reads(monkeypatch)
    assert content_digest(path) == first and opened == []  # the cache, not the file
    monkeypatch.setattr(contents, "_memory", {})  # a new process: the cache on disk still answers
    assert content_digest(path) == first and opened == []
    data = bytearray(path.read_bytes())
    data[5] ^= 1
    path.write_bytes(bytes(data))
    assert content_digest(path) != first and opened[-1] == path


def test_a_same_size_copy_that_keeps_the_modification_time_is_read_again(tmp_path):
    """``cp -p`` and ``rsync -a`` keep size and mtime: the status-change time tells."""
    path = tmp_path / "es.txt"
    path.write_text("Hola Madrid .\n")
    first, before = content_digest(path), path.stat()
    path.write_text("Hola Madrix .\n")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert content_digest(path) != first


def test_a_model_folder_digest_covers_its_own_files_not_its_card_checkpoints_or_hidden_files(tmp_path):
    folder = model_folder(tmp_path / "ner-en")
    first = content_digest(folder, MODEL)
    (folder / "README.md").write_text("# retitled")
    (folder / ".lock").write_text("x")
    (folder / "checkpoint-500").mkdir()
    (folder / "checkpoint-500" / "model.safetensors").write_bytes(b"older")
    assert content_digest(folder, MODEL) == first
    (folder / "tokenizer.json").write_text('{"added": 1}')
    assert content_digest(folder, MODEL) != first
    # a data folder is read whole, at any depth
    data = tmp_path / "conll"
    (data / "es").mkdir(parents=True)
    (data / "es" / "train.txt").write_text("a O\n")
    before = content_digest(data)
    (data / "es" / "train.txt").write_text("a B-PER\n")
    assert content_digest(data) != before


def test_local_paths_finds_templates_folders_and_local_spec_options_but_no_hub_id(tmp_path, raw):
    assert local_paths(str(raw / "{lang}.txt"), ["de", "nl", "xx"]) == [raw / "de.txt", raw / "nl.txt"]
    assert local_paths(str(raw)) == [raw]
    assert local_paths(f"conll5:es?data_dir={raw}") == [raw]
    assert local_paths(f"disk:{raw}") == [raw]
    assert local_paths(f"{raw / 'de.txt'}#en") == [raw / "de.txt"] == local_paths(f"disk:{raw / 'de.txt'}#en")
    assert local_paths("hub:unimelb-nlp/wikiann:{lang}", ["de"]) == []
    assert local_paths("facebook/m2m100_418M") == local_paths("xtreme40") == local_paths(None) == []
    assert content_digests({"input": "xtreme40", "ner_model": "FacebookAI/xlm-roberta-base"},
                           {"input": DATA, "ner_model": MODEL}) == {}


# --------------------------------------------------------------------------- a rerun after changed content


def test_a_rerun_after_one_changed_byte_of_the_input_is_refused_naming_it(raw, tmp_path):
    output = str(tmp_path / "out")
    synthesize(fake_config(str(raw / "{lang}.txt"), output), models=fake_models())
    data = bytearray((raw / "nl.txt").read_bytes())
    data[0] ^= 0x20  # "Jan" -> "jan": same size
    (raw / "nl.txt").write_bytes(bytes(data))
    with pytest.raises(OutputExistsError) as refused:
        synthesize(fake_config(str(raw / "{lang}.txt"), output), models=fake_models())
    message = str(refused.value)
    assert "the content of --input:" in message and "\n" not in message
    assert "--overwrite_output_dir" in message
    # with --overwrite_output_dir the new content is read: no shard of the old run is resumed
    result = synthesize(fake_config(str(raw / "{lang}.txt"), output, overwrite_output_dir=True), models=fake_models())
    assert result.skipped_shards == {"de": 0, "nl": 0}
    rows = [*datasets.load_from_disk(str(Path(output) / "dataset"))["nl"]["tokens"],
            *datasets.load_from_disk(str(Path(output) / "discarded"))["nl"]["tokens"]]
    assert "jan" in {token for row in rows for token in row} and "Jan" not in {token for row in rows for token in row}


def test_a_rerun_after_the_ner_model_folder_was_swapped_is_refused_naming_it(raw, tmp_path):
    output = str(tmp_path / "out")
    ner = model_folder(tmp_path / "ner-en")
    synthesize(fake_config(str(raw / "{lang}.txt"), output, ner_model=str(ner)), models=fake_models())
    # the same settings and content resume
    again = synthesize(fake_config(str(raw / "{lang}.txt"), output, ner_model=str(ner)), models=fake_models())
    assert sum(again.skipped_shards.values()) == 2
    retrained = model_folder(tmp_path / "retrained", weights=b"weights-2")
    shutil.rmtree(ner)
    retrained.rename(ner)  # trained again into the same folder
    with pytest.raises(OutputExistsError, match="the content of --ner_model: "):
        synthesize(fake_config(str(raw / "{lang}.txt"), output, ner_model=str(ner)), models=fake_models())


def test_every_job_puts_the_content_of_its_local_inputs_in_its_fingerprint(tmp_path):
    tsv, model = tmp_path / "en.tsv", model_folder(tmp_path / "mt")
    tsv.write_text("[IN:GET_WEATHER weather ]\n")

    def fingerprints():
        return (TranslateAlignJob(TranslateAlignConfig(input=str(tsv), tgt_lang="es", output_dir="o",
                                                       mt_model=str(model))).store.fingerprint,
                GenerateFilterJob(GenerateFilterConfig(few_shot=str(tsv), english=str(tsv), output_dir="o",
                                                       model=str(model))).store.fingerprint,
                SynthesisJob(synthesis_config(input=str(tsv), mt_model=str(model))).store.fingerprint)

    first = fingerprints()
    tsv.write_text("[IN:GET_WEATHER weather today ]\n")
    second = fingerprints()
    assert all(a != b for a, b in zip(first, second, strict=True))
    (model / "model.safetensors").write_bytes(b"other weights")
    third = fingerprints()
    assert all(a != b for a, b in zip(second, third, strict=True))
    assert fingerprints() == third  # nothing changed: the same runs


def synthesis_config(**overrides):
    from crop_hf.synthesis import SynthesisConfig

    return SynthesisConfig(tgt_langs=["es"], output_dir="o", **overrides)


def test_mark_parallel_names_its_files_by_content(tmp_path):
    from crop_hf.commands.mark_parallel import MarkParallelArguments, inputs_id

    en, de = tmp_path / "a.en", tmp_path / "a.de"
    en.write_text("a house\n")
    de.write_text("ein Haus\n")
    args = MarkParallelArguments(source_files=[str(en)], target_files=[str(de)], language_pairs=["en-de"])
    first = inputs_id(args)
    stamp = de.stat()
    de.write_text("ein Hau5\n")
    os.utime(de, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert inputs_id(args) != first


# --------------------------------------------------------------------------- modes


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_every_file_a_run_writes_honours_the_umask(raw, tmp_path, umask):
    before = os.umask(umask)
    try:
        output = tmp_path / "out"
        synthesize(fake_config(str(raw / "{lang}.txt"), str(output)), models=fake_models())
        atomic_write_bytes(tmp_path / "alone.json", b"{}")
    finally:
        os.umask(before)
    files = [path for path in output.rglob("*") if path.is_file()] + [tmp_path / "alone.json"]
    assert {"README.md", "statistics.json", "run.json", "result.json", "00000.parquet"} <= {p.name for p in files}
    modes = {path.relative_to(tmp_path).as_posix(): oct(stat.S_IMODE(path.stat().st_mode)) for path in files}
    assert set(modes.values()) == {oct(0o666 & ~umask)}, modes


# --------------------------------------------------------------------------- the folder is the dataset


def test_load_dataset_opens_the_output_folder_as_load_from_disk_does(raw, tmp_path):
    output = tmp_path / "out"
    synthesize(fake_config(str(raw / "{lang}.txt"), str(output), max_examples=10), models=fake_models())
    saved = datasets.load_from_disk(str(output / "dataset"))
    loaded = datasets.load_dataset(str(output))
    assert set(loaded) == set(saved) == {"de", "nl"}
    for split in saved:
        assert loaded[split].features == saved[split].features
        assert loaded[split].to_list() == saved[split].to_list()


def test_a_language_that_kept_nothing_is_left_out_of_the_card_and_the_rest_still_loads(tmp_path):
    folder = tmp_path / "raw"
    folder.mkdir()
    (folder / "de.txt").write_text("Anna wohnt in Hamburg .\n")
    (folder / "nl.txt").write_text("niets hier .\n")  # no entity: all_o
    output = tmp_path / "out"
    synthesize(fake_config(str(folder / "{lang}.txt"), str(output)), models=fake_models())
    card = DatasetCard.load(output / "README.md")
    assert [split["split"] for split in card.data.configs[0]["data_files"]] == ["de"]
    assert set(datasets.load_dataset(str(output))) == {"de"}
    assert [path.name for path in (output / "data").iterdir()] == ["de-00000-of-00001.parquet"]  # no empty file


def test_the_card_holds_hub_metadata_only_the_clis_spellings_and_plain_english(raw, tmp_path):
    output = tmp_path / "out"
    synthesize(fake_config(str(raw / "{lang}.txt"), str(output), max_examples=10), models=fake_models())
    text = (output / "README.md").read_text()
    card = DatasetCard(text, ignore_metadata_errors=False)  # the YAML parses into the Hub's card data
    metadata = card.data.to_dict()
    assert str(tmp_path) not in str(metadata)  # no local path in the metadata
    assert metadata.get("source_datasets") is None
    assert "| max_examples | `10` |" in text and "max_sentences" not in text
    assert "a `en`" not in text and "an NER\nmodel for `en`" in text
    for config in metadata["configs"]:
        for files in config["data_files"]:
            assert list(output.glob(files["path"])), files  # every pattern names files that are there


def test_a_hub_source_is_named_in_the_card_by_its_id():
    from crop_hf.hub import source_dataset_ids

    assert source_dataset_ids("hub:unimelb-nlp/wikiann:{lang}?split=train") == ["unimelb-nlp/wikiann"]
    assert source_dataset_ids("conll5:es?data_dir=/data/conll") is None
    assert source_dataset_ids("/home/me/raw/{lang}.txt") is None
