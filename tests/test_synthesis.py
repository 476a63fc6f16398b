import dataclasses
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import datasets
import pytest
from huggingface_hub import DatasetCard
from synthesis_fakes import (
    FakeAligner,
    FakeTagger,
    LimitedTagger,
    RecordingAligner,
    RecordingTagger,
    RecordingTranslator,
    ScriptedLanguageFilter,
    WordByWordTranslator,
    as_rows,
    fake_config,
    fake_models,
    record_bars,
)

from crop_hf.cli import main
from crop_hf.commands.self_train import RULE_MEANINGS
from crop_hf.engine.shards import ShardStore, shards_of
from crop_hf.errors import OutputExistsError
from crop_hf.labels import CONLL_LABELS
from crop_hf.synthesis import (
    SYNTHESIS_REASONS,
    LanguageIdFilter,
    SynthesisConfig,
    SynthesisJob,
    SynthesisModels,
    synthesize,
)
from crop_hf.synthesis.inputs import UndecodableLine, iter_raw_sentences
from crop_hf.synthesis.stages import synthesize_shard

FAKES = Path(__file__).with_name("synthesis_fakes.py")
REPO_ROOT = Path(__file__).resolve().parents[1]

RAW = {
    "de": [
        "Ich wohne in Hamburg .",  # kept: Hamburg LOC
        "Siemens AG sitzt in München .",  # kept: AG ORG, München PER
        "das ist alles klein .",  # all_o: the tagger finds nothing
        "Das broken Beispiel mit Maria und Hamburg .",  # markers_incomplete: a marker goes missing
        "eins zwei drei vier fünf sechs sieben acht neun zehn elf zwölf dreizehn",  # too_long (> 12 words)
        "Anna trifft Peter in Hamburg .",  # kept
        "Der Hafen von Hamburg liegt an der Elbe .",  # kept
        "Siehe __SLOT2__ Fußnote .",  # contains_marker: would confuse the markers, dropped before translation
    ],
    "nl": [
        "Ik woon in Hamburg .",
        "niets hier .",
        "Jan werkt bij Philips AG .",
        "De Maas stroomt door Rotterdam .",
    ],
}


@pytest.fixture
def raw_dir(tmp_path):
    folder = tmp_path / "raw"
    folder.mkdir()
    for lang, lines in RAW.items():
        # A BOM, blank lines and messy spacing must not matter.
        (folder / f"{lang}.txt").write_text("\ufeff" + "\n\n".join(f"  {line}  " for line in lines) + "\n",
                                            encoding="utf-8")
    return folder


def load(output: Path) -> tuple[list[dict], list[dict]]:
    kept = datasets.load_from_disk(str(output / "dataset"))
    discarded = datasets.load_from_disk(str(output / "discarded"))
    return ({lang: kept[lang].to_list() for lang in kept}, {lang: discarded[lang].to_list() for lang in discarded})


def test_kept_rows_carry_projected_labels_and_every_drop_has_a_reason(raw_dir, tmp_path):
    result = synthesize(fake_config(str(raw_dir / "{lang}.txt"), str(tmp_path / "out")), models=fake_models())
    assert result.statistics["de"] == {
        "input": 8, "kept": 4, "all_o": 1, "markers_incomplete": 1, "too_long": 1, "contains_marker": 1,
        "pipeline_error": 0, "wrong_language_source": 0, "wrong_language_target": 0, "projection_incomplete": 0,
        "undecodable": 0,
    }
    assert result.statistics["nl"]["kept"] == 3 and result.statistics["nl"]["all_o"] == 1

    dataset = datasets.load_from_disk(str(result.dataset_path))
    assert set(dataset) == {"de", "nl"}
    names = dataset["de"].features["ner_tags"].feature.names
    assert names == ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]
    rows = {" ".join(row["tokens"]): row for row in dataset["de"]}
    assert list(rows) == [RAW["de"][i] for i in (0, 1, 5, 6)]  # input order is kept
    tags = [names[i] for i in rows["Siemens AG sitzt in München ."]["ner_tags"]]
    assert tags == ["O", "B-ORG", "O", "O", "B-PER", "O"]
    assert [names[i] for i in rows["Ich wohne in Hamburg ."]["ner_tags"]] == ["O", "O", "O", "B-LOC", "O"]
    assert rows["Ich wohne in Hamburg ."]["labeled_translation"] == "Ich wohne in __SLOT0__ Hamburg __SLOT0__ ."
    assert rows["Ich wohne in Hamburg ."]["projection_status"] == ["found"]
    assert {row["lang"] for row in dataset["de"]} == {"de"}

    discarded = datasets.load_from_disk(str(result.discarded_path))["de"]
    assert sorted(discarded["reason"]) == ["all_o", "contains_marker", "markers_incomplete", "too_long"]
    broken = next(row for row in discarded if row["reason"] == "markers_incomplete")
    assert broken["source_translation"] == RAW["de"][3]
    assert "__SLOT0__" in broken["labeled_translation"]


# German <-> English, one word at a time; "lives" has no way back, so its back-translation stays English.
WORDS = {("de", "en"): {"und": "and", "wohnen": "live", "arbeitet": "works", "jetzt": "now", "wohnt": "lives"},
         ("en", "de"): {"and": "und", "live": "wohnen", "works": "arbeitet", "now": "jetzt"}}
FILTERED = [
    "Anna und Peter wohnen in Hamburg .",  # exactly max_words (7) words: kept
    "Peter arbeitet jetzt in Hamburg .",  # kept
    "Anna und Peter wohnen jetzt in Hamburg .",  # 8 words: too_long, never translated
    "Die Elbe fließt durch Hamburg .",  # no word translates: still German -> wrong_language_source
    "Maria wohnt in Berlin .",  # back-translation stays "Maria lives in Berlin ." -> wrong_language_target
]


def test_language_filter_and_word_limit_drop_exactly_the_sentences_they_should(tmp_path):
    """The language filter on both translations and the max_words boundary, in a whole run."""
    checker = LanguageIdFilter(["en", "de"])  # what the run builds; the premises of the cases below
    assert [checker.identify(t) for t in ("Anna and Peter live in Hamburg .", "Peter works now in Hamburg .",
                                          "Die Elbe fließt durch Hamburg .", "Maria lives in Berlin .",
                                          "Anna und Peter wohnen in Hamburg .", "Peter arbeitet jetzt in Hamburg .")
            ] == ["en", "en", "de", "en", "de", "de"]
    folder = tmp_path / "raw"
    folder.mkdir()
    (folder / "de.txt").write_text("\n".join(FILTERED) + "\n", encoding="utf-8")
    translator = WordByWordTranslator(WORDS)
    models = fake_models()
    models.translator, models.tagger, models.aligner = translator, FakeTagger(), FakeAligner()
    config = fake_config(str(folder / "{lang}.txt"), str(tmp_path / "out"), tgt_langs=["de"],
                         language_filter=True, max_words=7)
    result = synthesize(config, models=models)

    assert result.statistics["de"] == {
        "input": 5, "kept": 2, "too_long": 1, "wrong_language_source": 1, "wrong_language_target": 1,
        "undecodable": 0, "contains_marker": 0, "pipeline_error": 0, "markers_incomplete": 0,
        "projection_incomplete": 0, "all_o": 0,
    }
    assert FILTERED[2] not in translator.seen  # too long: dropped before any model ran
    kept, discarded = load(tmp_path / "out")
    names = datasets.load_from_disk(str(tmp_path / "out" / "dataset"))["de"].features["ner_tags"].feature.names
    # Projection ran and its labels landed, token by token (the tagger: Peter PER, Hamburg LOC).
    assert [(row["tokens"], [names[i] for i in row["ner_tags"]]) for row in kept["de"]] == [
        (FILTERED[0].split(), ["O", "O", "B-PER", "O", "O", "B-LOC", "O"]),
        (FILTERED[1].split(), ["O", "O", "O", "O", "B-LOC", "O"]),
    ]
    assert [row["labeled_translation"] for row in kept["de"]] == [
        "Anna und __SLOT0__ Peter __SLOT0__ wohnen in __SLOT1__ Hamburg __SLOT1__ .",
        "Peter arbeitet jetzt in __SLOT0__ Hamburg __SLOT0__ .",
    ]
    assert [row["projection_status"] for row in kept["de"]] == [["found", "found"], ["found"]]
    dropped = {row["reason"]: row for row in discarded["de"]}
    assert dropped["too_long"]["text"] == FILTERED[2] and dropped["too_long"]["source_translation"] == ""
    assert dropped["wrong_language_source"]["source_translation"] == FILTERED[3]
    assert dropped["wrong_language_source"]["back_translation"] == ""  # never translated back
    assert dropped["wrong_language_target"]["source_translation"] == "Maria lives in Berlin ."
    assert dropped["wrong_language_target"]["back_translation"] == "Maria lives in Berlin ."
    assert dropped["wrong_language_target"]["projected_tags"] is None  # projection never ran for it


def test_an_undecodable_line_is_dropped_and_counted_or_stops_a_strict_run(tmp_path, caplog):
    """Regression: one line that is not UTF-8 stopped the whole run with a raw UnicodeDecodeError."""
    folder = tmp_path / "raw"
    folder.mkdir()
    lines = [b"Ich wohne in Hamburg .", "Caf\xe9 in M\xfcnchen .".encode("latin-1"), b"Anna trifft Peter ."]
    (folder / "de.txt").write_bytes(b"\n".join(lines) + b"\n")
    with caplog.at_level("WARNING", logger="crop_hf.synthesis.inputs"):
        result = synthesize(fake_config(str(folder / "{lang}.txt"), str(tmp_path / "out"), tgt_langs=["de"]),
                            models=fake_models())
    assert result.statistics["de"]["input"] == 3
    assert result.statistics["de"]["undecodable"] == 1
    assert result.statistics["de"]["kept"] == 2
    # said once, for the file (the peek at its first sentence before any model loads says nothing)
    assert [r.getMessage() for r in caplog.records if r.name == "crop_hf.synthesis.inputs"] == [
        f"{folder / 'de.txt'}: 1 line is not valid utf-8 (line 2): dropped as 'undecodable'; "
        "pass --encoding latin-1 if the file is ISO-8859-1"]
    with pytest.raises(ValueError, match=r"de\.txt:2: not valid utf-8"):
        synthesize(fake_config(str(folder / "{lang}.txt"), str(tmp_path / "strict"), tgt_langs=["de"],
                               strict_input=True), models=fake_models())


LATIN_1 = ["Caf\xe9 in M\xfcnchen .", "Ich wohne in Hamburg .", "Se\xf1or Garc\xeda wohnt in Hamburg .",
           "\xc4rger in K\xf6ln .", "Anna trifft Peter .", "Stra\xdfe in Hamburg .", "\xe9t\xe9 in Br\xfcssel .",
           "Ma\xf1ana in Hamburg ."]


def latin_1_file(folder: Path, lines=LATIN_1) -> Path:
    """``lines`` written in ISO-8859-1 to ``folder/de.txt`` (lines 1, 3, 4, 6, 7 and 8 are not valid UTF-8)."""
    folder.mkdir(exist_ok=True)
    path = folder / "de.txt"
    path.write_bytes("\n".join(lines).encode("latin-1") + b"\n")
    return path


def test_a_latin_1_file_read_with_its_encoding_gives_its_sentences_and_as_utf_8_one_summary(tmp_path, caplog):
    path = latin_1_file(tmp_path / "raw")
    with caplog.at_level(logging.WARNING, logger="crop_hf.synthesis.inputs"):
        assert list(iter_raw_sentences(str(path), "de", encoding="latin-1")) == LATIN_1
    assert caplog.records == []  # nothing was undecodable
    with caplog.at_level(logging.WARNING, logger="crop_hf.synthesis.inputs"):
        read = list(iter_raw_sentences(str(path), "de"))
    assert [line for line in read if not isinstance(line, UndecodableLine)] == [LATIN_1[1], LATIN_1[4]]
    assert [line.where for line in read if isinstance(line, UndecodableLine)] == [
        f"{path}:{number}" for number in (1, 3, 4, 6, 7, 8)]
    # six broken lines, one line of log: the count, the first five line numbers, what to do
    assert [r.getMessage() for r in caplog.records] == [
        f"{path}: 6 lines are not valid utf-8 (lines 1, 3, 4, 6, 7, ...): dropped as 'undecodable'; "
        "pass --encoding latin-1 if the file is ISO-8859-1"]
    caplog.clear()  # a reading that stops early (max_examples) still says what it dropped, and only that
    with caplog.at_level(logging.WARNING, logger="crop_hf.synthesis.inputs"):
        assert len(list(iter_raw_sentences(str(path), "de", limit=4))) == 4
    assert [r.getMessage() for r in caplog.records] == [
        f"{path}: 3 lines are not valid utf-8 (lines 1, 3, 4): dropped as 'undecodable'; "
        "pass --encoding latin-1 if the file is ISO-8859-1"]
    caplog.clear()  # another encoding gets no latin-1 hint; report=False says nothing
    path.write_bytes(b"\x81 in Hamburg .\nAnna .\n")  # 0x81 is not a cp1252 character
    with caplog.at_level(logging.WARNING, logger="crop_hf.synthesis.inputs"):
        assert list(iter_raw_sentences(str(path), "de", encoding="cp1252")) == ["", "Anna ."]
        assert list(iter_raw_sentences(str(path), "de", encoding="cp1252", report=False)) == ["", "Anna ."]
    assert [r.getMessage() for r in caplog.records] == [
        f"{path}: 1 line is not valid cp1252 (line 1): dropped as 'undecodable'; is --encoding right for this file?"]


def test_a_utf_8_byte_order_mark_is_dropped_only_when_the_file_is_read_as_utf_8(tmp_path):
    path = tmp_path / "de.txt"
    path.write_bytes(b"\xef\xbb\xbfAnna .\n")
    assert list(iter_raw_sentences(str(path), "de", encoding="UTF8")) == ["Anna ."]
    assert list(iter_raw_sentences(str(path), "de", encoding="latin-1")) == ["\xef\xbb\xbfAnna ."]


def test_synthesis_reads_a_latin_1_file_with_encoding_and_the_encoding_joins_the_fingerprint_only_when_set(
        tmp_path, caplog):
    path = latin_1_file(tmp_path / "raw")
    template = str(path.parent / "{lang}.txt")
    with caplog.at_level(logging.WARNING, logger="crop_hf.synthesis.inputs"):
        result = synthesize(fake_config(template, str(tmp_path / "out"), tgt_langs=["de"], encoding="latin-1"),
                            models=fake_models())
    assert result.statistics["de"]["undecodable"] == 0 and caplog.records == []
    kept, discarded = load(result.output_dir)
    texts = [" ".join(row["tokens"]) for row in kept["de"]] + [row["text"] for row in discarded["de"]]
    assert sorted(texts) == sorted(LATIN_1)  # every sentence read as written, none dropped for its bytes
    assert any(row["tokens"] == ["Señor", "García", "wohnt", "in", "Hamburg", "."] for row in kept["de"])
    # runs written before the option keep their fingerprint; another encoding is another run
    default = fake_config(template, str(tmp_path / "a"), tgt_langs=["de"])
    assert "encoding" not in default.result_arguments()
    assert fake_config(template, str(tmp_path / "a"), tgt_langs=["de"], encoding="UTF-8").result_arguments() \
        == default.result_arguments()  # the resolved codec, not its spelling
    assert fake_config(template, str(tmp_path / "a"), tgt_langs=["de"], encoding="latin-1"
                       ).result_arguments()["encoding"] == "iso8859-1"
    with pytest.raises(OutputExistsError, match="--encoding"):  # a rerun in utf-8 is not a resume of it
        synthesize(fake_config(template, str(tmp_path / "out"), tgt_langs=["de"]), models=fake_models())


def test_the_conll_2002_spanish_text_reads_as_latin_1_and_as_utf_8_gives_one_line_for_all_its_bad_lines(
        shared_data, tmp_path, caplog):
    # the words of the first 300 sentences of CoNLL-2002 Spanish testa, one sentence a line, in its own encoding
    blocks = (shared_data / "conll2002" / "esp.testa").read_bytes().split(b"\n\n")[:300]
    sentences = [b" ".join(line.split()[0] for line in block.splitlines() if line.strip()) for block in blocks]
    path = tmp_path / "es.txt"
    path.write_bytes(b"\n".join(sentences) + b"\n")
    assert list(iter_raw_sentences(str(path), "es", encoding="latin-1")) == [s.decode("latin-1") for s in sentences]
    assert "Madrid" in path.read_text(encoding="latin-1") and "ó" in path.read_text(encoding="latin-1")

    def valid(line: bytes) -> bool:
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return True

    bad = [number for number, line in enumerate(sentences, start=1) if not valid(line)]
    assert len(bad) > 20  # accents in most sentences: a flood of lines before
    with caplog.at_level(logging.WARNING, logger="crop_hf.synthesis.inputs"):
        read = list(iter_raw_sentences(str(path), "es"))
    assert sum(isinstance(line, UndecodableLine) for line in read) == len(bad)
    assert [r.getMessage() for r in caplog.records] == [
        f"{path}: {len(bad)} lines are not valid utf-8 (lines {', '.join(map(str, bad[:5]))}, ...): dropped as "
        "'undecodable'; pass --encoding latin-1 if the file is ISO-8859-1"]


@pytest.mark.parametrize(("encoding", "says"), [
    ("latin-9x", "--encoding 'latin-9x': Python knows no such text encoding (e.g. utf-8, latin-1, cp1252)"),
    ("rot13", "--encoding 'rot13': Python knows no such text encoding"),
    ("utf-16", "--encoding utf-16: text files are read line by line"),
])
def test_an_encoding_python_cannot_read_line_by_line_is_refused_in_one_line_before_any_work(
        encoding, says, tmp_path, capsys):
    folder = tmp_path / "raw"
    folder.mkdir()
    (folder / "es.txt").write_text("Hola .\n", encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(says)):
        fake_config(str(folder / "{lang}.txt"), str(tmp_path / "out"), tgt_langs=["es"], encoding=encoding)
    with pytest.raises(SystemExit) as exit_info:
        main(["synthesize", "--tgt_langs", "es", "--input", str(folder / "{lang}.txt"), "--encoding", encoding,
              "--output_dir", str(tmp_path / "out")])
    assert exit_info.value.code != 0
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert says in line
    assert not (tmp_path / "out").exists()  # refused when the options were read: nothing written, nothing loaded


def test_a_language_with_every_sentence_dropped_still_loads(tmp_path):
    # Regression: datasets 5 saved an empty DatasetDict split with zero shards, unloadable.
    folder = tmp_path / "raw"
    folder.mkdir()
    (folder / "de.txt").write_text("nur kleine wörter hier .\n", encoding="utf-8")
    config = fake_config(str(folder / "{lang}.txt"), str(tmp_path / "out"), tgt_langs=["de"])
    result = synthesize(config, models=fake_models())
    assert result.statistics["de"]["kept"] == 0 and result.statistics["de"]["all_o"] == 1
    assert datasets.load_from_disk(str(result.dataset_path))["de"].num_rows == 0
    assert datasets.load_from_disk(str(result.discarded_path))["de"]["reason"] == ["all_o"]


@pytest.mark.parametrize("projection", ["fuzzy", "alignment"])
def test_other_projection_methods_label_the_same_sentences(raw_dir, tmp_path, projection):
    template = str(raw_dir / "{lang}.txt")
    lexical = synthesize(fake_config(template, str(tmp_path / "lexical")), models=fake_models())
    models = fake_models()
    other = synthesize(fake_config(template, str(tmp_path / projection), method=projection,
                                   alignment_model="fake-aligner"), models=models)
    # The identity translation makes every method right, so all must agree with exact matching;
    # alignment projection skips the back-translation, so its broken-marker sentence is kept too.
    kept, _ = load(lexical.output_dir)
    kept_other, _ = load(other.output_dir)
    if projection == "fuzzy":
        assert kept_other == kept
    else:
        rows = {" ".join(r["tokens"]): r["ner_tags"] for r in kept_other["de"]}
        assert all(rows[" ".join(r["tokens"])] == r["ner_tags"] for r in kept["de"])
        assert other.statistics["de"]["kept"] == lexical.statistics["de"]["kept"] + 1
        assert other.statistics["de"]["markers_incomplete"] == 0
        assert models.translator.calls == 5  # one translation per shard: no back-translation


def test_a_record_the_pipeline_refuses_is_dropped_and_its_batch_goes_on(tmp_path, caplog):
    folder = tmp_path / "raw"
    folder.mkdir()
    lines = ["Ich wohne in Hamburg .", "Das explode Beispiel .", "Anna trifft Peter ."]
    (folder / "de.txt").write_text("\n".join(lines), encoding="utf-8")
    config = fake_config(str(folder / "{lang}.txt"), str(tmp_path / "out"), tgt_langs=["de"])
    result = synthesize(config, models=fake_models())
    assert result.statistics["de"]["pipeline_error"] == 1 and result.statistics["de"]["kept"] == 2
    assert "explode" in caplog.text  # the error is logged, not swallowed
    discarded = datasets.load_from_disk(str(result.discarded_path))["de"]
    assert discarded["text"] == ["Das explode Beispiel ."] and discarded["reason"] == ["pipeline_error"]


def test_card_and_statistics_are_written_from_the_run(raw_dir, tmp_path):
    result = synthesize(fake_config(str(raw_dir / "{lang}.txt"), str(tmp_path / "out")), models=fake_models())
    statistics = json.loads((result.output_dir / "statistics.json").read_text())
    assert statistics == result.statistics
    card = DatasetCard.load(result.output_dir / "README.md")
    assert card.data.language == ["de", "nl"]
    assert [f["split"] for f in card.data.configs[0]["data_files"]] == ["de", "nl"]
    assert "| de | 8 | 4 | 0 | 0 | 0 | 1 | 1 | 0 | 1 | 0 | 1 |" in card.text
    assert "`fake-mt`" in card.text and "`fake-ner`" in card.text
    assert "| num_beams | `5` |" in card.text
    table = result.table().splitlines()
    assert table[0].split() == ["lang", "input", "kept", "undecodable", "wrong_language_source", "wrong_language_target",
                                "too_long", "contains_marker", "pipeline_error", "markers_incomplete",
                                "projection_incomplete", "all_o"]
    assert table[-1].split()[:3] == ["total", "12", "7"]


def test_rerun_skips_finished_shards_and_changed_arguments_start_afresh(raw_dir, tmp_path, caplog):
    template, output = str(raw_dir / "{lang}.txt"), str(tmp_path / "out")
    first_models = fake_models()
    first = synthesize(fake_config(template, output), models=first_models)
    assert first_models.translator.calls == 2 * 5  # two translation calls per shard: 3 de + 2 nl shards
    before = load(Path(output))

    assert "resumed" not in first.report()

    again = fake_models()
    with caplog.at_level(logging.INFO, logger="crop_hf.engine.jobs"):
        second = synthesize(fake_config(template, output), models=again)
    assert again.translator.calls == 0
    assert load(Path(output)) == before
    assert second.skipped_shards == {"de": 3, "nl": 2}
    assert "resumed: skipped 5 shard(s) an earlier run had finished (de 3, nl 2)" in second.report()
    assert "de: resumed: skipped 3 of 3 shard(s)" in caplog.text

    changed = fake_models()
    with pytest.raises(OutputExistsError, match="--num_beams: 5 there, 2 here; --num_return_sequences: 3 there, 2 here"):
        SynthesisJob(fake_config(template, output, num_beams=2, num_return_sequences=2), models=changed).run()
    assert changed.translator.calls == 0 and load(Path(output)) == before
    runner = SynthesisJob(fake_config(template, output, num_beams=2, num_return_sequences=2,
                                         overwrite_output_dir=True), models=changed)
    runner.run()
    assert changed.translator.calls == 10
    runs = [path for path in (Path(output) / "shards").iterdir() if path.is_dir()]
    assert len(runs) == 2  # old shards kept apart, never mixed
    assert ShardStore(output, fake_config(template, output).result_arguments()).root != runner.store.root


def test_a_partly_written_shard_is_redone(raw_dir, tmp_path):
    template, output = str(raw_dir / "{lang}.txt"), str(tmp_path / "out")
    runner = SynthesisJob(fake_config(template, output), models=fake_models())
    runner.run()
    expected = load(Path(output))
    # A run killed between the rows and the done mark leaves rows without statistics.
    (runner.store.root / "de" / "00001.json").unlink()
    (runner.store.root / "de" / ".00001.parquet.123.tmp").write_bytes(b"half")
    models = fake_models()
    SynthesisJob(fake_config(template, output), models=models).run()
    assert models.translator.calls == 2
    assert load(Path(output)) == expected


def run_fakes(*args, env=None, **kwargs):
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT), **(env or {})}
    return subprocess.Popen([sys.executable, str(FAKES), *map(str, args)], env=environment,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def test_sigkill_mid_run_then_rerun_gives_the_uninterrupted_result(raw_dir, tmp_path):
    template = raw_dir / "{lang}.txt"
    reference = run_fakes(template, tmp_path / "reference")
    assert reference.wait(timeout=120) == 0, reference.stderr.read()

    killed_dir = tmp_path / "killed"
    victim = run_fakes(template, killed_dir, 0.4)  # 0.4 s per translation call: ~1 s per shard
    deadline = time.time() + 120
    while not list(killed_dir.glob("shards/*/de/00000.json")):
        assert victim.poll() is None, victim.stderr.read()
        assert time.time() < deadline
        time.sleep(0.05)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    done = list(killed_dir.glob("shards/*/*/*.json"))
    assert 1 <= len(done) < 5, "the kill must land mid-run"
    assert not (killed_dir / "dataset").exists()

    rerun = run_fakes(template, killed_dir)
    assert rerun.wait(timeout=120) == 0, rerun.stderr.read()
    assert load(killed_dir) == load(tmp_path / "reference")


def test_two_torchrun_processes_give_the_same_dataset_as_one(raw_dir, tmp_path):
    if shutil.which("torchrun") is None:
        pytest.skip("torchrun is not on PATH")
    template = raw_dir / "{lang}.txt"
    single = run_fakes(template, tmp_path / "one")
    assert single.wait(timeout=120) == 0, single.stderr.read()
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "ACCELERATE_USE_CPU": "1"}
    two = subprocess.run(
        ["torchrun", "--standalone", "--nproc_per_node", "2", str(FAKES), str(template), str(tmp_path / "two")],
        env=environment, capture_output=True, text=True, timeout=300, check=False,
    )
    assert two.returncode == 0, two.stderr
    assert load(tmp_path / "two") == load(tmp_path / "one")
    # Both processes did work (shard k belongs to rank k % 2), and only the main one printed the table.
    made_by = {json.loads(p.read_text())["process_index"] for p in (tmp_path / "two").glob("shards/*/*/*.json")}
    assert made_by == {0, 1}
    assert two.stdout.count(" lang  input") == 1


def test_real_pipelines_run_every_stage_with_tiny_models(raw_dir, tmp_path, tiny_m2m100, tiny_xlmr_ner, capsys):
    output = tmp_path / "out"
    code = main([
        "synthesize", "--tgt_langs", "de", "--input", str(raw_dir / "{lang}.txt"),
        "--output_dir", str(output), "--mt_model", str(tiny_m2m100), "--ner_model", str(tiny_xlmr_ner),
        "--num_beams", "2", "--num_return_sequences", "2", "--max_new_tokens", "12", "--shard_size", "4", "--max_words", "12",
        "--show_progress", "false",
    ])
    assert code == 0
    printed = capsys.readouterr().out
    assert printed.splitlines()[0].split()[:3] == ["lang", "input", "kept"]
    statistics = json.loads((output / "statistics.json").read_text())["de"]
    reasons = {k: v for k, v in statistics.items() if k not in {"input", "kept"}}
    assert statistics["input"] == 8 and statistics["kept"] + sum(reasons.values()) == 8
    assert reasons["too_long"] == 1 and reasons["contains_marker"] == 1
    discarded = datasets.load_from_disk(str(output / "discarded"))["de"]
    translated = [row for row in discarded if row["reason"] not in {"too_long", "contains_marker"}]
    assert translated and all(row["source_translation"] for row in translated)  # stage 1 ran on each


def test_a_run_builds_each_language_filter_once_per_process_and_a_resumed_run_none(raw_dir, tmp_path, monkeypatch):
    from crop_hf.engine import language as filters  # the language filter's home: every job builds it there

    built = []

    class Counting(filters.LanguageIdFilter):
        def __init__(self, languages):
            built.append(tuple(languages))
            super().__init__(languages)

    monkeypatch.setattr(filters, "LanguageIdFilter", Counting)
    template, output = str(raw_dir / "{lang}.txt"), str(tmp_path / "out")
    filters.language_filter.cache_clear()
    try:
        synthesize(fake_config(template, output, language_filter=True), models=fake_models())
        assert built == [("en", "de"), ("en", "nl")]  # 3 de and 2 nl shards, one filter per language
        assert filters.language_filter("en", "de") is filters.language_filter("en", "de")
        filters.language_filter.cache_clear()
        synthesize(fake_config(template, output, language_filter=True), models=fake_models())  # all shards done
        assert built == [("en", "de"), ("en", "nl")]
    finally:
        filters.language_filter.cache_clear()  # the counting filters must not outlive this test


def test_language_filter_is_restricted_to_the_languages_of_the_run(caplog):
    language_filter = LanguageIdFilter(["en", "de", "yo"])
    assert language_filter.languages == ["de", "en"]
    assert "yo" in caplog.text  # said once, not silently
    assert language_filter.accepts("Ich wohne seit zehn Jahren in Hamburg und arbeite dort.", "de")
    assert not language_filter.accepts("I have lived in Hamburg for ten years and work there.", "de")
    assert language_filter.accepts("anything at all", "yo")  # cannot be checked: passes
    assert language_filter.unsupported == ["yo"]
    assert language_filter.identify("Ich wohne seit zehn Jahren in Hamburg und arbeite dort.") == "de"
    # Restricted to de/en, an English sentence is never identified as, say, Dutch or Frisian.
    assert language_filter.identify("Ik woon al tien jaar in Hamburg en werk daar.") in ("de", "en")
    # One known language leaves nothing to tell apart: every text passes.
    alone = LanguageIdFilter(["de", "yo"])
    assert alone.languages == ["de"] and alone.accepts("I have lived in Hamburg for ten years.", "de")


def test_inputs_stream_from_templates_folders_and_datasets(raw_dir, tmp_path):
    assert list(iter_raw_sentences(str(raw_dir / "{lang}.txt"), "nl")) == RAW["nl"]
    assert list(iter_raw_sentences(str(raw_dir), "nl", limit=2)) == RAW["nl"][:2]
    rows = datasets.Dataset.from_dict({"tokens": [["a", "b"], ["c"]]})
    assert list(iter_raw_sentences({"xx": rows}, "xx")) == ["a b", "c"]
    with pytest.raises(FileNotFoundError, match="no raw sentences for 'fr'"):
        list(iter_raw_sentences(str(raw_dir / "{lang}.txt"), "fr"))
    with pytest.raises(ValueError, match="no 'text' or 'tokens' column"):
        list(iter_raw_sentences([{"sentence": "x"}], "xx"))
    assert [(i, len(s)) for i, s in shards_of(iter(range(7)), 3)] == [(0, 3), (1, 3), (2, 1)]


def test_a_builder_spec_streams_the_sentences_of_its_train_split(shared_data):
    sentences = list(iter_raw_sentences(f"xtreme40?data_dir={shared_data / 'wikiann'}", "de", limit=2))
    lines = (shared_data / "wikiann" / "de" / "train").read_text(encoding="utf-8").split("\n\n")[:2]
    assert sentences == [" ".join(line.split("\t")[0].split(":", 1)[1] for line in block.splitlines())
                         for block in lines]


def test_push_to_hub_sends_the_data_then_the_card(raw_dir, tmp_path, monkeypatch):
    from huggingface_hub import DatasetCard

    from crop_hf.synthesis.runner import push_to_hub

    result = synthesize(fake_config(str(raw_dir / "{lang}.txt"), str(tmp_path / "out")), models=fake_models())
    calls = []
    monkeypatch.setattr(datasets.DatasetDict, "push_to_hub",
                        lambda self, repo_id, **kw: calls.append(("data", repo_id, sorted(self), kw["private"])))
    monkeypatch.setattr(DatasetCard, "push_to_hub",
                        lambda self, repo_id, **kw: calls.append(("card", repo_id, self.data.language, kw["repo_type"])))
    url = push_to_hub(result, "org/crop-de-nl", private=True)
    assert calls == [("data", "org/crop-de-nl", ["de", "nl"], True), ("card", "org/crop-de-nl", ["de", "nl"], "dataset")]
    assert url == "https://huggingface.co/datasets/org/crop-de-nl"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"tgt_langs": []}, "at least one target language"),
        ({"tgt_langs": ["en"]}, "cannot also be a target"),
        ({"method": "alignment"}, "needs alignment_model"),
        ({"shard_size": 0}, "shard_size must be at least 1"),
        ({"num_beams": 2, "num_return_sequences": 3}, "cannot exceed num_beams"),
    ],
)
def test_config_rejects_bad_settings(overrides, message):
    with pytest.raises(ValueError, match=message):
        SynthesisConfig(**{"tgt_langs": ["de"], **overrides})


def test_target_languages_accept_a_comma_separated_string():
    assert SynthesisConfig(tgt_langs="de,es nl").tgt_langs == ["de", "es", "nl"]


@pytest.mark.parametrize("name", ["batch_size", "num_beams", "num_return_sequences", "max_words", "shard_size"])
def test_config_counts_must_be_at_least_one_and_one_is_enough(name):
    ones = dict.fromkeys(("batch_size", "num_beams", "num_return_sequences", "max_words", "shard_size"), 1)
    assert getattr(SynthesisConfig(tgt_langs=["de"], **ones), name) == 1
    with pytest.raises(ValueError, match=rf"^{name} must be at least 1, got 0$"):
        SynthesisConfig(tgt_langs=["de"], **{**ones, name: 0})


def test_config_checks_device_compute_type_beams_and_report_up_front(monkeypatch):
    from crop_hf.errors import DeviceError

    assert SynthesisConfig(tgt_langs=["de"], device="cpu").device == "cpu"
    with pytest.raises(DeviceError, match="'gpu!' is not a torch device"):
        SynthesisConfig(tgt_langs=["de"], device="gpu!")
    assert SynthesisConfig(tgt_langs=["de"], backend="ctranslate2", compute_type="int8").compute_type == "int8"
    with pytest.raises(ValueError, match=r"^compute_type applies to backend='ctranslate2' only$"):
        SynthesisConfig(tgt_langs=["de"], compute_type="int8")
    assert SynthesisConfig(tgt_langs=["de"], num_beams=3, num_return_sequences=3).num_return_sequences == 3
    assert SynthesisConfig(tgt_langs=["de"], method="alignment", alignment_model="mbert").alignment_model == "mbert"
    assert SynthesisConfig(tgt_langs=["de", "es"], src_lang="fr").tgt_langs == ["de", "es"]
    assert SynthesisConfig(tgt_langs=["de"], report=True).report  # matplotlib is installed for the tests
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    with pytest.raises(ImportError, match=r"^report=True draws plots with matplotlib, which is not installed: pip "
                                          r"install 'crop-hf\[report\]'$"):
        SynthesisConfig(tgt_langs=["de"], report=True)
    assert not SynthesisConfig(tgt_langs=["de"]).report  # without report, matplotlib is not needed
    with pytest.raises(ValueError, match=r"^give at least one target language$"):
        SynthesisConfig(tgt_langs=" , ")
    with pytest.raises(ValueError, match=r"^num_return_sequences cannot exceed num_beams$"):
        SynthesisConfig(tgt_langs=["de"], num_beams=2, num_return_sequences=3)


def test_demo_runs_every_stage_offline_and_says_it_is_a_smoke_run(tmp_path, capsys):
    assert main(["demo", "--output_dir", str(tmp_path), "--tgt_langs", "de", "--no_show_progress"]) == 0
    captured = capsys.readouterr()
    printed = captured.out
    # no bar of any library: not "Loading weights" (transformers), not "Saving the dataset" (datasets), not ours
    assert not re.search(r"\d+%\||it/s\]|Loading weights|Saving the dataset", captured.err), captured.err
    assert "SMOKE RUN" in printed and "meaningless" in printed
    statistics = json.loads((tmp_path / "synthesis" / "statistics.json").read_text())["de"]
    assert statistics["input"] == 10  # the bundled German sample sentences
    assert statistics["kept"] + sum(statistics[r] for r in SYNTHESIS_REASONS) == 10
    assert "| de | 10 |" in (tmp_path / "synthesis" / "README.md").read_text()
    discarded = datasets.load_from_disk(str(tmp_path / "synthesis" / "discarded"))["de"]
    assert all(row["source_translation"] for row in discarded)  # the models really ran


def test_synthesize_help_lists_the_options_a_user_needs(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["synthesize", "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for option in ("--tgt_langs", "--mt_model", "--ner_model", "--input", "--output_dir", "--batch_size",
                   "--num_beams", "--max_examples", "--device", "--push_to_hub", "--src_lang"):
        assert option in text


def test_self_training_reads_what_synthesis_writes(raw_dir, tmp_path, tiny_xlmr_ner, capsys):
    result = synthesize(fake_config(str(raw_dir / "{lang}.txt"), str(tmp_path / "out")), models=fake_models())
    capsys.readouterr()  # what the library call showed: only the command's bars are under test
    code = main(["self-train", "--kept", str(result.dataset_path), "--discarded", str(result.discarded_path),
                 "--source_model", str(tiny_xlmr_ner), "--model_name_or_path", str(tiny_xlmr_ner),
                 "--output_dir", str(tmp_path / "self-trained"), "--max_train_steps", "2", "--no_show_progress"])
    assert code == 0
    corpus = datasets.load_from_disk(str(tmp_path / "self-trained" / "corpus"))["train"]
    rules = corpus.features["label_rule"].int2str(corpus["label_rule"])
    kept = sum(stats["kept"] for stats in result.statistics.values())
    assert rules.count("synthesis") == kept  # every kept sentence, labels unchanged
    assert sorted(corpus["lang"][:kept]) == sorted(["de"] * 4 + ["nl"] * 3)
    # Every discarded sentence was re-labeled or dropped with a printed count: none is lost silently.
    captured = capsys.readouterr()
    printed = captured.out
    assert not re.search(r"\d+%\||it/s\]|Loading weights", captured.err), captured.err  # --no_show_progress
    # the summary says what each label_rule category means, beside its count
    for rule in set(rules):
        line = next(line for line in printed.splitlines() if line.split()[:1] == [rule])
        assert line.split()[1] == str(rules.count(rule)) and RULE_MEANINGS[rule] in line
    dropped = sum(int(line.rsplit(":", 1)[1]) for line in printed.splitlines() if line.strip().startswith("dropped ("))
    assert len(corpus) - kept + dropped == sum(s["input"] - s["kept"] for s in result.statistics.values())


def test_tagger_entities_become_trimmed_non_overlapping_character_spans():
    from crop_hf.engine.records import entity_spans

    text = "Anna  met Peter Smith in Hamburg"
    entities = [{"start": 0, "end": 6, "entity_group": "PER"},  # "Anna  ": trailing spaces trimmed
                {"start": 9, "end": 21, "entity_group": "PER"},  # " Peter Smith": leading space trimmed
                {"start": 16, "end": 21, "entity_group": "ORG"},  # overlaps the previous span: dropped
                {"start": 21, "end": 22, "entity_group": "LOC"},  # only a space: dropped
                {"start": 25, "end": 32, "entity_group": "LOC"}]
    assert entity_spans(text, entities) == [{"start": 0, "end": 4, "label": "PER"},
                                             {"start": 10, "end": 21, "label": "PER"},
                                             {"start": 25, "end": 32, "label": "LOC"}]
    # Without aggregation a pipeline names the label "entity" instead of "entity_group".
    assert entity_spans("Anna", [{"start": 0, "end": 4, "entity": "B-PER"}]) == [{"start": 0, "end": 4, "label": "B-PER"}]
    # A span may start exactly where the previous one ends.
    assert entity_spans("ab", [{"start": 0, "end": 1, "entity_group": "A"}, {"start": 1, "end": 2, "entity_group": "B"}]
                         ) == [{"start": 0, "end": 1, "label": "A"}, {"start": 1, "end": 2, "label": "B"}]


def test_a_refused_batch_is_halved_until_the_refused_record_is_found_and_other_errors_propagate(caplog):
    from crop_hf.engine.records import each_or_none

    calls = []

    def call(items):
        calls.append(list(items))
        if "bad" in items:
            raise ValueError("cannot mark 'bad'")
        return [item.upper() for item in items]

    assert each_or_none(call, ["a", "bad", "c"]) == ["A", None, "C"]
    assert calls == [["a", "bad", "c"], ["a"], ["bad", "c"], ["bad"], ["c"]]
    calls.clear()  # one refused record among 64: its halves are called in batches, 2 log2(64) + 1 calls
    words = [f"w{k}" for k in range(64)]
    words[41] = "bad"
    assert each_or_none(call, words) == [w.upper() if w != "bad" else None for w in words]
    assert len(calls) == 13 and max(len(c) for c in calls[1:]) == 32 and ["bad"] in calls
    # without a caller to count them, a call's refusals are one warning: how many, the first and its error
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("WARNING", "a pipeline refused 1 of 3 records, dropped (first: record 1: cannot mark 'bad')"),
        ("WARNING", "a pipeline refused 1 of 64 records, dropped (first: record 41: cannot mark 'bad')")]
    calls.clear()
    assert each_or_none(call, ["a", "c"]) == ["A", "C"] and calls == [["a", "c"]]  # one call when all is well
    assert each_or_none(call, []) == [] and calls == [["a", "c"]]  # no call for nothing
    caplog.clear()  # a refused batch of one is that record: dropped with one line naming the error, not called again
    assert each_or_none(call, ["bad"]) == [None] and calls[1:] == [["bad"]]
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("WARNING", "a pipeline refused 1 of 1 records, dropped (first: record 0: cannot mark 'bad')")]

    def out_of_memory(items):
        raise RuntimeError("CUDA out of memory")

    with pytest.raises(RuntimeError, match="out of memory"):
        each_or_none(out_of_memory, ["a"])


def test_each_or_none_tells_the_caller_every_refused_record_by_its_index_and_logs_nothing_itself(caplog):
    from crop_hf.engine.records import each_or_none

    def call(items):
        if any(item.startswith("bad") for item in items):
            raise TypeError(f"cannot mark {next(item for item in items if item.startswith('bad'))!r}")
        return [item.upper() for item in items]

    words = [f"w{k}" for k in range(20)]
    for k in (0, 7, 8, 19):
        words[k] = f"bad{k}"
    refused = []
    with caplog.at_level(logging.DEBUG, logger="crop_hf.engine.records"):
        results = each_or_none(call, words, lambda index, error: refused.append((index, str(error))))
    assert results == [None if w.startswith("bad") else w.upper() for w in words]
    assert refused == [(0, "cannot mark 'bad0'"), (7, "cannot mark 'bad7'"), (8, "cannot mark 'bad8'"),
                       (19, "cannot mark 'bad19'")]
    assert [r.levelname for r in caplog.records] == ["DEBUG"]  # where the halving started, for a debugging eye
    refused.clear()
    assert each_or_none(call, ["bad"], lambda index, error: refused.append(index)) == [None] and refused == [0]


def test_a_drop_tally_counts_each_reason_and_says_each_once_with_its_first_record(caplog):
    from crop_hf.engine.records import DropTally

    tally = DropTally("es shard 3", offset=300, noun="sentence", keep=2)
    assert tally.lines() == [] and tally.total == 0
    tally.add("pipeline_error", 17, "sentence 0: cannot\n  mark 'x'")  # an error on several lines: one
    tally.add("all_o", 18)
    for index in (40, 41, 42):
        tally.add("pipeline_error", index, f"error {index}")
    tally.add("no_translation", "en.tsv:9", "en.tsv:9: the translator returned nothing")  # its name once
    tally.add("no_translation", "en.tsv:12", "en.tsv:12")
    assert tally.total == 7 and tally.counts == {"pipeline_error": 4, "all_o": 1, "no_translation": 2}
    assert tally.records("pipeline_error") == ["sentence 317", "sentence 340"]  # the first two: keep=2
    assert tally.records("no_translation") == ["en.tsv:9", "en.tsv:12"] and tally.records("too_long") == []
    with caplog.at_level(logging.INFO, logger="crop_hf.tests"):
        tally.log(logging.getLogger("crop_hf.tests"), logging.INFO)
    assert [(r.name, r.levelname, r.getMessage()) for r in caplog.records] == [
        ("crop_hf.tests", "INFO", "es shard 3: 4 sentences dropped as pipeline_error (first: sentence 317: "
                                  "sentence 0: cannot mark 'x'); see discarded/"),
        ("crop_hf.tests", "INFO", "es shard 3: 1 sentence dropped as all_o (first: sentence 318); see discarded/"),
        ("crop_hf.tests", "INFO", "es shard 3: 2 sentences dropped as no_translation (first: en.tsv:9: the "
                                  "translator returned nothing); see discarded/"),
    ]
    quiet = DropTally("--english en.tsv", see=None)
    quiet.add("invalid_source", "en.tsv:2", "en.tsv:2: not a bracket parse")
    assert quiet.lines() == ["--english en.tsv: 1 record dropped as invalid_source (first: en.tsv:2: not a bracket "
                             "parse)"]


def test_a_run_dropping_many_records_says_each_reason_once_per_shard(tmp_path, caplog):
    """Regression: one warning per refused record (28 lines for 200 sentences), and one per halving."""
    folder = tmp_path / "raw"
    folder.mkdir()
    # the translator refuses every third sentence ("explode"), the tagger two others ("unreadable")
    lines = [f"Anna explode Hamburg {k} ." if k % 3 == 1 else f"Anna wohnt in Hamburg {k} ." for k in range(20)]
    lines[5] = lines[15] = "Anna unreadable Hamburg ."
    (folder / "de.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    config = fake_config(str(folder / "{lang}.txt"), str(tmp_path / "out"), tgt_langs=["de"], shard_size=10)
    models = fake_models()
    models.tagger = RecordingTagger()
    with caplog.at_level(logging.DEBUG, logger="crop_hf.engine.records"):
        result = synthesize(config, models=models)
    assert result.statistics["de"]["pipeline_error"] == 9 and result.statistics["de"]["kept"] == 11
    discarded = datasets.load_from_disk(str(result.discarded_path))["de"]
    assert sorted(discarded["text"]) == sorted(line for line in lines if "Anna wohnt" not in line)  # every one kept
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    # one line per shard: its count, its first refused sentence by its index in the input and the error
    assert warnings == [
        "de shard 0: 4 sentences dropped as pipeline_error (first: sentence 1: sentence 0: cannot translate "
        "'Anna explode Hamburg 1 .'); see discarded/",
        "de shard 1: 5 sentences dropped as pipeline_error (first: sentence 10: sentence 0: cannot translate "
        "'Anna explode Hamburg 10 .'); see discarded/",
    ]


def shard_settings(**overrides) -> SynthesisConfig:
    """A German shard's settings, each generation option a different number so that none can stand in for another."""
    return fake_config("unused", "unused", **{"tgt_langs": ["de"], "num_beams": 4, "num_return_sequences": 3,
                                              "max_new_tokens": 17, "batch_size": 5, "max_words": 6, **overrides})


def test_process_shard_names_each_stage_and_calls_the_models_with_the_configured_options():
    translator = RecordingTranslator({("de", "en"): {"wohnt": "lives"}, ("en", "de"): {"lives": "wohnt"}})
    tagger = RecordingTagger()
    language_filter = ScriptedLanguageFilter({"Peter ist in Bremen": "de", "Maria lebt in Berlin": "en"})
    models = fake_models()
    models.translator, models.tagger = translator, tagger
    stages = []
    sentences = [
        "Anna wohnt in Hamburg .",  # kept
        "eins zwei drei vier fünf sechs sieben",  # too_long: reaches no model
        "Peter ist in Bremen",  # its translation is still German: wrong_language_source, never tagged
        "das ist klein .",  # no entity: all_o, never translated back
        "Maria lebt in Berlin",  # its back-translation is taken for English: wrong_language_target
    ]
    kept, discarded, reasons = as_rows(synthesize_shard(sentences, "de", shard_settings(), models, language_filter,
                                             on_stage=stages.append))

    assert stages == ["translate", "tag", "back-translate", "project"]
    generation = {"num_beams": 4, "max_new_tokens": 17}
    assert translator.requests == [
        (["Anna wohnt in Hamburg .", "Peter ist in Bremen", "das ist klein .", "Maria lebt in Berlin"],
         {"src_lang": "de", "tgt_lang": "en", "num_return_sequences": 1, **generation}),
        ([{"text": "Anna lives in Hamburg .", "entities": [{"start": 14, "end": 21, "label": "LOC"}]},
          {"text": "Maria lebt in Berlin", "entities": [{"start": 14, "end": 20, "label": "PER"}]}],
         {"src_lang": "en", "tgt_lang": "de", "num_return_sequences": 3, **generation}),
    ]
    assert tagger.requests == [(["Anna lives in Hamburg .", "das ist klein .", "Maria lebt in Berlin"],
                                {"batch_size": 5})]
    assert language_filter.asked == [
        ("Anna lives in Hamburg .", "en"), ("Peter ist in Bremen", "en"), ("das ist klein .", "en"),
        ("Maria lebt in Berlin", "en"), ("Anna wohnt in Hamburg .", "de"), ("Maria lebt in Berlin", "de"),
    ]
    assert kept == [{
        "tokens": ["Anna", "wohnt", "in", "Hamburg", "."], "ner_tags": [0, 0, 0, 5, 0], "lang": "de",
        "source_translation": "Anna lives in Hamburg .",
        "labeled_translation": "Anna wohnt in __SLOT0__ Hamburg __SLOT0__ .",
        "back_translation": "Anna wohnt in Hamburg .", "source_labels": ["LOC"], "projection_status": ["found"],
        "tokenization": "words",
    }]
    assert [row["text"] for row in discarded] == sentences[1:]
    assert reasons == Counter(too_long=1, wrong_language_source=1, all_o=1, wrong_language_target=1)


def dropped(text: str, reason: str, **produced) -> dict:
    """A German discarded row as synthesize_shard writes it; what no stage produced is empty."""
    return {"text": text, "tokens": text.split(), "projected_tags": None, "lang": "de", "reason": reason,
            "source_translation": "", "labeled_translation": "", "back_translation": "", "source_labels": [],
            "projection_status": [], **produced}


def test_process_shard_drops_each_sentence_with_its_first_reason_and_keeps_what_the_stages_produced(caplog):
    words = {("de", "en"): {"wohnt": "lives", "nichts": "", "unlesbar": "unreadable", "sprengt": "explode",
                            "Köln": "Cologne", "vergisst": "forgets"},
             ("en", "de"): {"lives": "wohnt", "Bonn": "", "Cologne": "Koeln"}}
    models = fake_models()
    models.translator, models.tagger = RecordingTranslator(words), RecordingTagger()
    language_filter = ScriptedLanguageFilter({"Peter ist in Bremen": "de", "Maria lebt in Berlin": "en"})
    sentences = [
        "Anna wohnt in Hamburg .",
        UndecodableLine("de.txt:2"),
        "eins zwei drei vier fünf sechs sieben",
        "Siehe __SLOT2__ Fußnote .",
        "Anna explode Berlin",  # the translator refuses it
        "nichts",  # translates to nothing
        "Peter ist in Bremen",  # the translation is taken for German
        "das ist klein .",  # the tagger finds nothing
        "Anna ist unlesbar mit Peter",  # the tagger refuses "unreadable"
        "Anna sprengt Peter",  # the translator refuses to translate "explode" back
        "Anna fährt nach Bonn",  # Bonn translates back to nothing: its markers enclose no entity
        "Maria lebt in Berlin",  # the back-translation is taken for English
        "Peter wohnt in Köln",  # translated back as "Koeln", which the raw sentence does not contain
        "Anna vergisst Peter",  # translated back complete but with no entity left
        "Siemens AG sitzt in Hamburg",
    ]
    with caplog.at_level(logging.WARNING, logger="crop_hf.synthesis.stages"):
        kept, discarded, reasons = as_rows(synthesize_shard(sentences, "de", shard_settings(), models, language_filter))

    assert kept == [
        {"tokens": ["Anna", "wohnt", "in", "Hamburg", "."], "ner_tags": [0, 0, 0, 5, 0], "lang": "de",
         "source_translation": "Anna lives in Hamburg .",
         "labeled_translation": "Anna wohnt in __SLOT0__ Hamburg __SLOT0__ .",
         "back_translation": "Anna wohnt in Hamburg .", "source_labels": ["LOC"], "projection_status": ["found"],
         "tokenization": "words"},
        {"tokens": ["Siemens", "AG", "sitzt", "in", "Hamburg"], "ner_tags": [0, 3, 0, 0, 5], "lang": "de",
         "source_translation": "Siemens AG sitzt in Hamburg",
         "labeled_translation": "Siemens __SLOT0__ AG __SLOT0__ sitzt in __SLOT1__ Hamburg __SLOT1__",
         "back_translation": "Siemens AG sitzt in Hamburg", "source_labels": ["ORG", "LOC"],
         "projection_status": ["found", "found"], "tokenization": "words"},
    ]
    assert discarded == [
        dropped("", "undecodable"),
        dropped("eins zwei drei vier fünf sechs sieben", "too_long"),
        dropped("Siehe __SLOT2__ Fußnote .", "contains_marker",
                tokens=["Siehe", "_", "_", "SLOT2", "_", "_", "Fußnote", "."]),
        dropped("Anna explode Berlin", "pipeline_error"),
        dropped("nichts", "wrong_language_source"),
        dropped("Peter ist in Bremen", "wrong_language_source", source_translation="Peter ist in Bremen"),
        dropped("das ist klein .", "all_o", source_translation="das ist klein ."),
        dropped("Anna ist unlesbar mit Peter", "pipeline_error", source_translation="Anna ist unreadable mit Peter"),
        dropped("Anna sprengt Peter", "pipeline_error", source_translation="Anna explode Peter",
                source_labels=["PER"]),
        dropped("Anna fährt nach Bonn", "markers_incomplete", source_translation="Anna fährt nach Bonn",
                labeled_translation="Anna fährt nach __SLOT0__  __SLOT0__", back_translation="Anna fährt nach",
                source_labels=["PER"]),
        dropped("Maria lebt in Berlin", "wrong_language_target", source_translation="Maria lebt in Berlin",
                labeled_translation="Maria lebt in __SLOT0__ Berlin __SLOT0__",
                back_translation="Maria lebt in Berlin", source_labels=["PER"]),
        # Projection ran on these two: their rows carry its partial labels and statuses.
        dropped("Peter wohnt in Köln", "projection_incomplete", source_translation="Peter lives in Cologne",
                labeled_translation="Peter wohnt in __SLOT0__ Koeln __SLOT0__", back_translation="Peter wohnt in Koeln",
                source_labels=["PER"], projected_tags=["O", "O", "O", "O"], projection_status=["missing"]),
        dropped("Anna vergisst Peter", "all_o", source_translation="Anna forgets Peter",
                labeled_translation="Anna forgets __SLOT0__ Peter __SLOT0__", back_translation="Anna forgets Peter",
                source_labels=["PER"], projected_tags=["O", "O", "O"]),
    ]
    assert reasons == Counter(pipeline_error=3, wrong_language_source=2, all_o=2, undecodable=1, too_long=1,
                              contains_marker=1, markers_incomplete=1, wrong_language_target=1,
                              projection_incomplete=1)
    # The refusals of every stage are one warning at the end of the shard: their count and the first, by its
    # index in the shard, in the pipeline's own words.
    assert [record.getMessage() for record in caplog.records] == [
        "de: 3 sentences dropped as pipeline_error (first: sentence 4: sentence 0: cannot translate "
        "'Anna explode Berlin'); see discarded/"]


def test_alignment_synthesis_projects_source_spans_through_word_links_and_never_translates_back():
    translator = RecordingTranslator({("de", "en"): {"wohnt": "lives", "arbeitet": "is working"}})
    aligner = RecordingAligner()
    models = fake_models()
    models.translator, models.aligner = translator, aligner
    config = shard_settings(method="alignment", alignment_model="fake-encoder")
    stages = []
    sentences = ["Anna wohnt in Hamburg .",
                 "Peter arbeitet in Bremen",  # "is working": Bremen is source word 4, and word i links to word i
                 "eins zwei drei vier fünf sechs sieben"]
    kept, discarded, reasons = as_rows(synthesize_shard(sentences, "de", config, models, None, on_stage=stages.append))

    assert stages == ["translate", "tag", "align", "project"]
    assert translator.requests == [(sentences[:2], {"src_lang": "de", "tgt_lang": "en", "num_return_sequences": 1,
                                                    "num_beams": 4, "max_new_tokens": 17})]
    assert aligner.requests == [([["Anna", "lives", "in", "Hamburg", "."], ["Peter", "is", "working", "in", "Bremen"]],
                                 [["Anna", "wohnt", "in", "Hamburg", "."], ["Peter", "arbeitet", "in", "Bremen"]])]
    assert kept == [{
        "tokens": ["Anna", "wohnt", "in", "Hamburg", "."], "ner_tags": [0, 0, 0, 5, 0], "lang": "de",
        "source_translation": "Anna lives in Hamburg .", "labeled_translation": "", "back_translation": "",
        "source_labels": ["LOC"], "projection_status": ["projected"], "tokenization": "words",
    }]
    assert discarded == [
        dropped("Peter arbeitet in Bremen", "projection_incomplete", source_translation="Peter is working in Bremen",
                source_labels=["PER"], projected_tags=["O", "O", "O", "O"], projection_status=["unaligned"]),
        dropped("eins zwei drei vier fünf sechs sieben", "too_long"),
    ]
    assert reasons == Counter(projection_incomplete=1, too_long=1)


def test_each_side_is_tokenized_as_its_language_says_not_as_its_script_suggests():
    """Chinese is split into characters even where Latin letters dominate; English into words even where
    Chinese characters do (the untranslated source translations below)."""
    mostly_chinese, mostly_latin = "安娜住在汉堡市 Hamburg", "安娜 lives in Hamburg"
    marked = "安娜 __SLOT2__ Hamburg"  # dropped before any model: its row is tokenized all the same
    config = fake_config("unused", "unused", tgt_langs=["zh"])
    kept, discarded, _ = as_rows(synthesize_shard([mostly_chinese, mostly_latin, marked], "zh", config, fake_models(), None))
    assert [(row["tokens"], row["tokenization"]) for row in kept] == [
        (list("安娜住在汉堡市Hamburg"), "characters"), (list("安娜livesinHamburg"), "characters")]
    assert [row["tokens"] for row in discarded] == [list("安娜__SLOT2__Hamburg")]

    models = fake_models()
    models.aligner = RecordingAligner()
    config = fake_config("unused", "unused", tgt_langs=["zh"], method="alignment", alignment_model="fake-encoder")
    as_rows(synthesize_shard([mostly_chinese, mostly_latin], "zh", config, models, None))
    assert models.aligner.requests == [([["安娜住在汉堡市", "Hamburg"], ["安娜", "lives", "in", "Hamburg"]],
                                        [list("安娜住在汉堡市Hamburg"), list("安娜livesinHamburg")])]


def test_a_translator_without_a_marker_style_is_given_every_sentence_and_may_refuse_marked_ones():
    recorder = RecordingTranslator()

    def translate(records, **kwargs):  # a bare callable: no marker_style attribute to check sentences with
        return recorder(records, **kwargs)

    models = fake_models()
    models.translator = translate
    sentences = ["Anna wohnt in Hamburg .", "Siehe __SLOT2__ Fußnote ."]
    kept, _, reasons = as_rows(synthesize_shard(sentences, "de", shard_settings(), models, None))
    assert recorder.requests[0][0] == sentences  # not dropped as contains_marker beforehand
    assert [row["tokens"] for row in kept] == [["Anna", "wohnt", "in", "Hamburg", "."]]
    assert reasons == Counter(pipeline_error=1)  # the translator refused it itself


def test_a_pipeline_returning_fewer_outputs_than_inputs_stops_the_shard_instead_of_losing_sentences():
    models = fake_models()
    models.translator = lambda records, **kwargs: []
    with pytest.raises(ValueError, match=r"zip\(\) argument 2 is shorter than argument 1"):
        as_rows(synthesize_shard(["Anna wohnt in Hamburg .", "Peter wohnt in Bremen ."], "de", shard_settings(), models, None))


def test_entity_spans_trim_exactly_the_spaces_and_compare_with_the_last_span_kept():
    from crop_hf.engine.records import entity_spans

    def entity(start, end, label="PER"):
        return {"start": start, "end": end, "entity_group": label}

    text = "Anna und Ben und Cem"
    # One space on either side is trimmed, and only that one.
    assert entity_spans(text, [entity(4, 8), entity(8, 13, "LOC")]) == [
        {"start": 5, "end": 8, "label": "PER"}, {"start": 9, "end": 12, "label": "LOC"}]
    # With three spans kept, a fourth overlapping only the last one is dropped.
    assert entity_spans(text, [entity(0, 4), entity(9, 12), entity(17, 20), entity(18, 20, "LOC")]) == [
        {"start": 0, "end": 4, "label": "PER"}, {"start": 9, "end": 12, "label": "PER"},
        {"start": 17, "end": 20, "label": "PER"}]
    # Nothing but spaces at the very end of the text, or nothing at all: no span, and no error.
    assert entity_spans("Anna ", [entity(4, 5)]) == []
    assert entity_spans("", [entity(0, 0)]) == []


def test_language_filter_names_every_language_it_cannot_check_in_one_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="crop_hf.engine.language"):
        language_filter = LanguageIdFilter(["en", "yo", "de", "my"])
    assert [record.getMessage() for record in caplog.records] == [
        "langid does not know my, yo: translations into them are not language-checked"]
    assert language_filter.unsupported == ["my", "yo"] and language_filter.languages == ["de", "en"]


def test_a_translation_longer_than_the_tagger_takes_is_refused_alone(tiny_xlmr_ner):
    from transformers import pipeline

    from crop_hf.engine.records import each_or_none
    from crop_hf.synthesis.stages import _tag, tagger_token_limit

    tagger = pipeline("token-classification", model=str(tiny_xlmr_ner), aggregation_strategy="first", device=-1)
    limit = tagger_token_limit(tagger)
    assert limit == tagger.model.config.max_position_embeddings - tagger.model.config.pad_token_id - 1
    long = " ".join(["Gothenburg"] * limit)  # more than limit tokens with <s> and </s>
    with pytest.raises(ValueError, match=rf"^a translation of \d+ tokens is longer than the tagger takes \({limit}\)$"):
        _tag(tagger, [long], batch_size=2)
    outputs = each_or_none(lambda texts: _tag(tagger, texts, batch_size=2), ["I live in Gothenburg .", long])
    assert outputs[1] is None and isinstance(outputs[0], list)
    assert tagger_token_limit(object()) is None  # a stand-in without a model is not checked


def test_process_shard_drops_a_translation_longer_than_the_tagger_takes_and_tags_the_others():
    # "lang" becomes five words: 4 words of source, 8 of translation, 10 tokens against a limit of 8.
    words = {("de", "en"): {"wohnt": "lives", "lang": "a very very long time"}, ("en", "de"): {"lives": "wohnt"}}
    models = fake_models()
    models.translator, models.tagger = RecordingTranslator(words), LimitedTagger(limit=8)
    kept, discarded, reasons = as_rows(synthesize_shard(["Anna wohnt lang hier", "Anna wohnt in Hamburg"], "de",
                                             shard_settings(), models, ScriptedLanguageFilter({})))
    assert reasons == Counter(pipeline_error=1)
    assert discarded[0]["text"] == "Anna wohnt lang hier" and discarded[0]["source_translation"] == \
        "Anna lives a very very long time hier"
    assert [row["tokens"] for row in kept] == [["Anna", "wohnt", "in", "Hamburg"]]
    assert kept[0]["ner_tags"] == [0, 0, 0, 5]


def test_push_to_hub_passes_the_card_report_folder_and_credentials(tmp_path, monkeypatch):
    import crop_hf.hub as hub
    from crop_hf.synthesis.runner import SynthesisResult, push_to_hub

    out = tmp_path / "out"
    dataset = datasets.DatasetDict({"de": datasets.Dataset.from_dict({"tokens": [["a"]]})})
    dataset.save_to_disk(str(out / "dataset"))
    (out / "README.md").write_text("# Karte – ünïcode\n", encoding="utf-8")
    calls = []
    monkeypatch.setattr(hub, "push_dataset", lambda data, repo_id, card, **kw: calls.append((sorted(data), repo_id,
                                                                                           card, kw)) or "url")
    assert push_to_hub(SynthesisResult(out), "org/x") == "url"
    assert calls[-1] == (["de"], "org/x", "# Karte – ünïcode\n", {"private": False, "token": None, "folders": None})
    (out / "report").mkdir()
    push_to_hub(SynthesisResult(out), "org/x", private=True, token="t0k")
    assert calls[-1][3] == {"private": True, "token": "t0k", "folders": {"report": out / "report"}}


def test_result_table_and_report_in_full():
    from crop_hf.synthesis.rows import STATISTICS_COLUMNS
    from crop_hf.synthesis.runner import SynthesisResult

    def counts(**given):
        return {column: given.get(column, 0) for column in STATISTICS_COLUMNS}

    result = SynthesisResult(Path("out"), {"de": counts(input=5, kept=3), "nl": counts(input=2, kept=2)},
                             key_name="lang")
    rows = [line.split() for line in result.table().splitlines()]
    assert rows[0] == ["lang", *STATISTICS_COLUMNS]
    zeros = ["0"] * (len(STATISTICS_COLUMNS) - 2)
    assert rows[-3:] == [["de", "5", "3", *zeros], ["nl", "2", "2", *zeros], ["total", "7", "5", *zeros]]
    assert result.report() == (f"{result.table()}\n\ndataset: {Path('out/dataset')}\ndiscarded: "
                               f"{Path('out/discarded')}\ncard: {Path('out/README.md')}")
    result.skipped_shards = {"de": 2, "nl": 0}
    assert result.report().endswith(f"card: {Path('out/README.md')}\nresumed: skipped 2 shard(s) an earlier run had "
                                    "finished (de 2)")


def test_in_memory_inputs_their_limit_and_their_own_shard_folder(tmp_path):
    from crop_hf.synthesis.runner import SynthesisJob

    sentences = {"de": datasets.Dataset.from_dict({"text": ["Ich wohne in Hamburg .", "Das ist gut .",
                                                            "Ich mag Hamburg ."]})}
    config = fake_config(str(tmp_path / "absent" / "{lang}.txt"), str(tmp_path / "out"), tgt_langs=["de"],
                         max_examples=2)
    runner = SynthesisJob(config, models=fake_models(), inputs=sentences)
    assert runner.skipped_shards == {}
    result = runner.run()
    assert result.statistics["de"]["input"] == 2  # max_examples of the in-memory rows; the file is never read
    kept, _ = load(tmp_path / "out")
    assert [row["tokens"] for row in kept["de"]] == [["Ich", "wohne", "in", "Hamburg", "."]]
    other = {"de": datasets.Dataset.from_dict({"text": ["Wir fahren nach Hamburg ."]})}
    assert SynthesisJob(config, models=fake_models(), inputs=other).store.root != runner.store.root
    with pytest.raises(OutputExistsError, match="inputs: "):  # other rows are other settings
        synthesize(config, models=fake_models(), inputs=other)
    again = dataclasses.replace(config, overwrite_output_dir=True)
    assert synthesize(again, models=fake_models(), inputs=other).statistics["de"]["input"] == 1


def test_process_reports_stages_and_logs_its_shard(raw_dir, tmp_path, caplog):
    from crop_hf.engine.jobs import _step
    from crop_hf.synthesis.runner import SynthesisJob

    runner = SynthesisJob(fake_config(str(raw_dir / "{lang}.txt"), str(tmp_path / "out")), models=fake_models())
    stages = []
    with caplog.at_level(logging.INFO, logger="crop_hf.engine.jobs"):
        kept, discarded, reasons = _step(runner, "de", 4, RAW["de"][:2], stages.append)
    assert len(kept) == 2 and discarded == [] and reasons == {}
    assert stages and all(isinstance(stage, str) for stage in stages)
    assert caplog.messages[-1] == "de shard 4: 2 of 2 kept"


def test_run_shows_its_own_bar_and_silences_only_the_pipelines_subword_warning(raw_dir, tmp_path, monkeypatch):
    import warnings

    seen = record_bars(monkeypatch)  # the driver's bars
    models = fake_models()
    tag = models.tagger.__call__
    heuristic = "Tokenizer does not support real words, using fallback heuristic"

    def noisy(texts, **kwargs):  # as transformers' token-classification pipeline says it, on every call
        warnings.warn_explicit(heuristic, UserWarning, "token_classification.py", 445,
                               module="transformers.pipelines.token_classification")
        warnings.warn_explicit(heuristic, UserWarning, "elsewhere.py", 1, module="elsewhere")
        warnings.warn("another warning", UserWarning, stacklevel=1)
        return tag(texts, **kwargs)

    models.tagger = noisy
    config = fake_config(str(raw_dir / "{lang}.txt"), str(tmp_path / "out"), tgt_langs=["de"], shard_size=2,
                         show_progress=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        synthesize(config, models=models)
    said = [(str(w.message), w.filename) for w in caught]
    assert (heuristic, "token_classification.py") not in said  # the pipeline's own: never shown
    assert said.count((heuristic, "elsewhere.py")) > 1  # the same words from another module pass
    assert [message for message, _ in said].count("another warning") > 1  # every other warning passes
    assert seen == [{"desc": "synthesize de", "unit": "sent", "disable": False}]


def test_merge_writes_statistics_card_and_report_and_other_processes_get_an_empty_result(raw_dir, tmp_path,
                                                                                         monkeypatch):
    from synthesis_fakes import FakeState

    import crop_hf.report
    from crop_hf.engine import processes
    from crop_hf.synthesis.runner import SynthesisJob

    monkeypatch.setattr(sys, "argv", ["/usr/bin/crop-hf", "synthesize", "--output_dir", "my out"])
    reports = []
    monkeypatch.setattr(crop_hf.report, "write_report", reports.append)
    out = tmp_path / "out"
    runner = SynthesisJob(fake_config(str(raw_dir / "{lang}.txt"), str(out), report=True), models=fake_models())
    result = runner.run()
    assert (out / "statistics.json").read_text(encoding="utf-8") == json.dumps(result.statistics, indent=2)
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "crop-hf synthesize --output_dir 'my out'\n" in card and runner.store.fingerprint in card
    assert reports == [out]
    monkeypatch.setattr(processes, "process_state", lambda: FakeState(1, 2))  # not the main process: no merge
    other = SynthesisJob(fake_config(str(raw_dir / "{lang}.txt"), str(tmp_path / "o2")), models=fake_models()).run()
    assert other.output_dir == tmp_path / "o2" and other.statistics == {}
    assert not (tmp_path / "o2" / "statistics.json").exists()


def test_a_finished_run_reads_the_label_names_from_the_ner_models_config(raw_dir, tmp_path, tiny_xlmr_ner):
    from crop_hf.errors import MissingModelError, UnreachableError
    from crop_hf.synthesis.runner import SynthesisJob

    config = fake_config(str(raw_dir / "{lang}.txt"), str(tmp_path / "out"), ner_model=str(tiny_xlmr_ner))
    synthesize(config, models=fake_models())
    again = SynthesisJob(config)  # every shard is done: the models are never loaded
    assert again._label_names() == list(fake_models().labels.names)
    assert again.run().statistics["de"]["kept"] == 4
    missing = dataclasses.replace(config, ner_model=str(tmp_path / "no-such-model"))
    with pytest.raises(MissingModelError, match=r"no model folder at .*no-such-model \(NER model \(--ner_model\)\)"):
        SynthesisJob(missing)._label_names()
    unreachable = dataclasses.replace(config, ner_model="crop-hf-tests/no-such-model")
    with pytest.raises(UnreachableError, match=r"NER model \(--ner_model\)"):
        SynthesisJob(unreachable)._label_names()


def test_a_resumed_run_reads_the_label_names_from_the_ner_models_config_at_its_revision(monkeypatch, tmp_path):
    import transformers

    from crop_hf.errors import UnreachableError

    asked = []

    def from_pretrained(name, **options):
        asked.append((name, options))
        if name == "nowhere/ner":
            raise OSError("We couldn't connect to 'https://huggingface.co'")
        return SimpleNamespace(id2label={0: "O", 1: "B-PER", 2: "I-PER"})

    monkeypatch.setattr(transformers.AutoConfig, "from_pretrained", from_pretrained)
    runner = SynthesisJob(SynthesisConfig(tgt_langs=["de"], output_dir=str(tmp_path), ner_model="some/ner",
                                             ner_revision="v2"))
    assert runner._label_names() == ["O", "B-PER", "I-PER"] and asked == [("some/ner", {"revision": "v2"})]
    unreachable = SynthesisJob(SynthesisConfig(tgt_langs=["de"], output_dir=str(tmp_path),
                                                  ner_model="nowhere/ner"))
    with pytest.raises(UnreachableError, match=r"^cannot load the NER model \(--ner_model\) 'nowhere/ner'"):
        unreachable._label_names()


def test_eflomal_needs_no_pretrained_model_and_aligns_each_shard_as_one_corpus(tmp_path, tiny_m2m100, tiny_xlmr_ner):
    from crop_hf.alignment import EflomalAligner

    config = fake_config("unused", str(tmp_path / "out"), tgt_langs=["de"], method="hybrid",
                         alignment_model="eflomal", mt_model=str(tiny_m2m100), ner_model=str(tiny_xlmr_ner))
    assert isinstance(SynthesisModels.load(config).aligner, EflomalAligner)

    # "Munich" is not in the raw sentence, so only a word link can carry the label to "München": eflomal
    # learns it from the shard's 60 pairs ("in" goes with every city, "Munich" only with "München").
    names = ["Anna", "Peter", "Maria", "Jonas", "Lena", "Paul", "Emma", "Felix", "Mia", "Noah", "Lea", "Ben"]
    cities = ["München", "Berlin", "Hamburg"]
    raw = [f"{names[k % 12]} wohnt in {cities[k % 3]} ." for k in range(60)]
    (tmp_path / "de.txt").write_text("\n".join(raw) + "\n", encoding="utf-8")
    models = fake_models()
    models.translator = WordByWordTranslator({("de", "en"): {"wohnt": "lives", "München": "Munich"}})
    recorded: list[int] = []

    class CountingEflomal(EflomalAligner):
        def align(self, source, target):
            recorded.append(len(source))
            return super().align(source, target)

    models.aligner = CountingEflomal()
    result = synthesize(dataclasses.replace(config, input=str(tmp_path / "{lang}.txt"), shard_size=60,
                                            mt_model="fake-mt", ner_model="fake-ner"), models=models)
    kept, _ = load(result.output_dir)
    assert recorded == [60]  # one call for the whole shard
    assert result.statistics["de"]["kept"] == 60
    labels = list(CONLL_LABELS)
    for row in kept["de"]:
        city = "B-LOC" if row["tokens"][3] == "Hamburg" else "B-PER"  # the fake tagger's types
        assert [labels[i] for i in row["ner_tags"]] == ["O", "O", "O", city, "O"], row["tokens"]


def test_eflomal_as_aligner_is_checked_before_any_translation(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "eflomal" else real(name, *a))
    with pytest.raises(ImportError, match=r"pip install 'crop-hf\[align\]'"):
        SynthesisConfig(tgt_langs=["de"], method="hybrid", alignment_model="eflomal")
    with pytest.raises(ValueError, match="or 'eflomal' \\(no pretrained model\\)"):
        SynthesisConfig(tgt_langs=["de"], method="hybrid")


def test_the_former_spellings_of_synthesis_options_still_read_with_a_deprecation_message_and_keep_the_fingerprint(
        caplog):
    from crop_hf.arguments import parse_config

    with caplog.at_level(logging.WARNING, logger="crop-hf"):
        (old,) = parse_config([SynthesisConfig], ["--target_langs", "de", "nl", "--source_lang", "fr",
                                                  "--max_sentences", "3"])
    said = [record.getMessage() for record in caplog.records if record.name == "crop-hf"]
    assert sorted(message.split(";")[0] for message in said) == [
        "crop-hf: --max_sentences is renamed --max_examples", "crop-hf: --source_lang is renamed --src_lang",
        "crop-hf: --target_langs is renamed --tgt_langs"]
    (new,) = parse_config([SynthesisConfig], ["--tgt_langs", "de", "nl", "--src_lang", "fr", "--max_examples", "3"])
    assert old == new and (new.tgt_langs, new.src_lang, new.max_examples) == (["de", "nl"], "fr", 3)
    arguments = new.result_arguments()  # the names runs written before the rename have in run.json
    assert (arguments["source_lang"], arguments["max_sentences"]) == ("fr", 3) and "src_lang" not in arguments
