"""Behaviours users rely on that planted bugs once changed with the whole suite green (issue 32).

Each test asserts an exact outcome: what goes into a run's shard fingerprint, when a builder's
cache is stale, what each of several processes counts and says when it resumes, what
translate-and-align's hybrid projection keeps, how generate-and-filter ranks neighbours and
recognises its few-shot parses, that CTranslate2's ``max_batch_size`` wins over
``max_batch_rows``, that the marker loss weight reaches the training loss, what Hinglish-TOP
reads from its English side, and how lexical projection treats occurrences that run into
claimed tokens.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import datasets
import pytest
from synthesis_fakes import (
    FakeState,
    ListConfig,
    ListJob,
    as_rows,
    fake_config,
    fake_models,
    numbered,
    run_as,
)

from crop_hf.augment.inputs import ParseInput
from crop_hf.augment.translate_align import (
    TranslateAlignConfig,
    TranslateAlignModels,
    align_batch,
    translate_align,
)
from crop_hf.engine import processes
from crop_hf.synthesis import SynthesisConfig, SynthesisJob, synthesize


class _Translator:
    """Fixed translations; records every utterance it is given."""

    def __init__(self, translations: dict[str, str]) -> None:
        self.translations = translations
        self.calls: list[str] = []

    def __call__(self, texts, **kwargs):
        self.calls.extend(texts)
        return [{"translation": self.translations[text]} for text in texts]


class _Aligner:
    """Fixed word links per target sentence (its words joined by spaces)."""

    def __init__(self, links: dict[str, list[tuple[int, int]]]) -> None:
        self.links = links

    def align(self, sources, targets):
        return [self.links[" ".join(target)] for target in targets]


def _parse_input(text: str):
    return ParseInput(text, None, "x.tsv:1")


# --------------------------------------------------------------------------- shard fingerprints

#: SynthesisConfig fields deliberately left out of the shard fingerprint, and why. A new field must
#: be left in the fingerprint or added here: until someone decides, the completeness test fails.
SYNTHESIS_NOT_FINGERPRINTED = {
    "tgt_langs": "each language has its own shard folder; its language filter only involves that language and "
                    "the source language",
    "output_dir": "where the shard folder is, not what is in it",
    "overwrite_output_dir": "whether a finished result of other settings may be replaced, not what is computed",
    "strict_input": "only decides whether a run stops at an undecodable line; a run that finishes writes the same "
                    "shards either way",
    "device": "where the models run, not what they compute",
    "show_progress": "display only",
    "report": "writes plots after the merge; the shards are the same",
}

#: The same for TranslateAlignConfig (its result_arguments() takes every field but these).
TRANSLATE_ALIGN_NOT_FINGERPRINTED = {
    "output_dir": "where the shard folder is, not what is in it",
    "overwrite_output_dir": "whether a finished result of other settings may be replaced, not what is computed",
    "device": "where the translation model runs",
    "show_progress": "display only",
    "batch_size": "how many utterances one translation call takes",
}


def _field_names(config_class) -> set[str]:
    return {f.name for f in dataclasses.fields(config_class)}


def result_fields(config_class) -> set[str]:
    """The fields RunOptions' rule puts in the fingerprint: all but the run options and the class's run_only."""
    return _field_names(config_class) - config_class.RUN_FIELDS - set(config_class.run_only)


@pytest.mark.parametrize(("config", "excluded"), [
    (fake_config("raw/{lang}.txt", "out"), SYNTHESIS_NOT_FINGERPRINTED),
    # symmetrization enters the fingerprint unless it is CSTOP's (runs written before it existed keep their
    # name; tests/test_translate_align.py checks both), so the field is checked with another value
    (TranslateAlignConfig(input="en.tsv", output_dir="out", tgt_lang="es", symmetrization="grow-diag-final"),
     TRANSLATE_ALIGN_NOT_FINGERPRINTED),
], ids=["synthesis", "translate_align"])
def test_every_config_field_is_fingerprinted_or_excluded_with_a_reason(config, excluded):
    fingerprinted = set(result_fields(type(config)))  # field names (a renamed field keeps its old name in the run)
    fields = _field_names(type(config))
    assert fingerprinted <= fields
    assert not fingerprinted & set(excluded), "a field cannot be both fingerprinted and excluded"
    undecided = fields - fingerprinted - set(excluded)
    assert not undecided, (f"{type(config).__name__} fields {sorted(undecided)} are neither in the shard fingerprint "
                           "nor excluded with a reason: decide whether they change results")
    assert set(excluded) <= fields, "an excluded field that no longer exists"
    assert all(reason.strip() for reason in excluded.values())


#: For each fingerprinted SynthesisConfig field, another valid value (the base below has backend
#: "ctranslate2" so that compute_type may change alone).
SYNTHESIS_CHANGES = {
    "input": "other/{lang}.txt", "src_lang": "fr", "mt_model": "other-mt", "mt_revision": "v2",
    "ner_model": "other-ner", "ner_revision": "v2", "method": "fuzzy", "alignment_model": "mbert",
    "backend": "transformers", "compute_type": "int8", "batch_size": 8, "num_beams": 4, "num_return_sequences": 2,
    "max_new_tokens": 100, "constrain_markers": True, "max_words": 50, "max_examples": 10, "shard_size": 7,
    "language_filter": True, "seed": 1, "encoding": "latin-1",
}


def test_changing_any_fingerprinted_synthesis_option_names_another_shard_folder(tmp_path):
    base = fake_config("raw/{lang}.txt", str(tmp_path), backend="ctranslate2")
    assert set(SYNTHESIS_CHANGES) == set(result_fields(SynthesisConfig))
    folder = SynthesisJob(base, models=fake_models()).store.root
    for name, value in SYNTHESIS_CHANGES.items():
        assert getattr(base, name) != value
        changed = dataclasses.replace(base, **{name: value})
        assert SynthesisJob(changed, models=fake_models()).store.root != folder, name
    # Options left out share the folder (report is left out here: it needs matplotlib).
    for name, value in {"tgt_langs": ["de"], "strict_input": True, "show_progress": True}.items():
        same = dataclasses.replace(base, **{name: value})
        assert SynthesisJob(same, models=fake_models()).store.root == folder, name


def _raw_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "raw"
    folder.mkdir()
    (folder / "de.txt").write_text("Ich wohne in Hamburg .\n"
                                   "eins zwei drei vier fünf sechs sieben acht neun zehn elf zwölf dreizehn\n"
                                   "Anna trifft Peter in Hamburg .\n", encoding="utf-8")
    return folder


def test_a_changed_fingerprinted_option_is_run_afresh_not_resumed(tmp_path):
    template, output = str(_raw_dir(tmp_path) / "{lang}.txt"), str(tmp_path / "out")
    first = synthesize(fake_config(template, output, tgt_langs=["de"]), models=fake_models())
    assert first.statistics["de"]["too_long"] == 1 and first.statistics["de"]["all_o"] == 0
    models = fake_models()
    second = synthesize(fake_config(template, output, tgt_langs=["de"], max_words=13, overwrite_output_dir=True),
                        models=models)
    assert models.translator.calls == 2  # the one shard translated again, nothing resumed
    assert second.skipped_shards == {"de": 0}
    # The 13-word sentence now passes the length check (and has no entity): the new option took effect.
    assert second.statistics["de"]["too_long"] == 0 and second.statistics["de"]["all_o"] == 1
    assert len(list((Path(output) / "shards").glob("*/run.json"))) == 2


def test_a_changed_translate_align_option_is_run_afresh_not_resumed(tmp_path):
    dataset = datasets.Dataset.from_dict({"parse": ["[IN:PLAY_MUSIC play [SL:MUSIC_ARTIST_NAME adele ] ]"]})
    translator = _Translator({"play adele": "pon de adele"})
    aligner = _Aligner({"pon de adele": [(0, 0)]})  # "adele" left unaligned
    settings = dict(input="unused", output_dir=str(tmp_path / "out"), tgt_lang="es", language_filter=False,
                    show_progress=False)
    first = translate_align(TranslateAlignConfig(**settings), TranslateAlignModels(translator, aligner), inputs=dataset)
    assert (first.statistics["train"]["kept"], first.statistics["train"]["slots_lost"]) == (0, 1)
    second = translate_align(TranslateAlignConfig(**settings, keep_incomplete=True, overwrite_output_dir=True),
                             TranslateAlignModels(translator, aligner), inputs=dataset)
    assert second.skipped_shards == {"train": 0}
    assert (second.statistics["train"]["kept"], second.statistics["train"]["slots_lost"]) == (1, 0)
    assert translator.calls == ["play adele", "play adele"]


# --------------------------------------------------------------------------- builder cache


def _copy_cstop(tmp_path: Path) -> Path:
    from data_fixtures import FIXTURES

    target = tmp_path / "cstop"
    shutil.copytree(FIXTURES / "cstop", target)
    return target


def _load_cstop(data: Path, cache: Path):
    from crop_hf.data import load_dataset

    return load_dataset("cstop", data_dir=str(data), cache_dir=str(cache), split="test")


def _recase(path: Path, old: str, new: str) -> None:
    assert len(old.encode()) == len(new.encode()) and old != new
    data = path.read_bytes()
    assert old.encode() in data
    path.write_bytes(data.replace(old.encode(), new.encode()))


def test_a_same_size_edit_of_a_data_file_is_read_again(tmp_path):
    data = _copy_cstop(tmp_path)
    path = data / "CSTOP" / "test.tsv"
    size = path.stat().st_size
    first = _load_cstop(data, tmp_path / "cache")
    assert "pon la brightness al máximo" in first["utterance"]
    _recase(path, "pon la brightness al máximo", "PON LA BRIGHTNESS AL máximo")
    assert path.stat().st_size == size
    edited = _load_cstop(data, tmp_path / "cache")
    assert "PON LA BRIGHTNESS AL máximo" in edited["utterance"]
    assert "pon la brightness al máximo" not in edited["utterance"]


def test_a_same_size_edit_that_keeps_the_modification_time_is_read_again(tmp_path):
    """A file replaced by ``cp -p``, ``rsync -a`` or an archive keeps the old size and modification time."""
    data = _copy_cstop(tmp_path)
    path = data / "CSTOP" / "test.tsv"
    _load_cstop(data, tmp_path / "cache")
    before = path.stat()
    _recase(path, "qué weather hace en Miami hoy", "QUÉ WEATHER hace en Miami hoy")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    edited = _load_cstop(data, tmp_path / "cache")
    assert "QUÉ WEATHER hace en Miami hoy" in edited["utterance"]


# --------------------------------------------------------------------------- shards of several processes


def test_a_process_counts_only_its_own_shards_when_some_are_finished(tmp_path, monkeypatch):
    # Shards 0..6 of 13 items; an earlier run finished shards 1, 2 and 4.
    earlier = ListJob(ListConfig(output_dir=str(tmp_path)), {"xx": numbered(13, 2)})
    for index, items in numbered(13, 2):
        if index in (1, 2, 4):
            earlier.store.write("xx", index, [], {"input": len(items), "kept": 0})
    jobs = [ListJob(ListConfig(output_dir=str(tmp_path)), {"xx": numbered(13, 2)}) for _ in range(3)]
    skipped = [run_as(monkeypatch, index, 3, job).skipped_shards for index, job in ((1, jobs[1]), (2, jobs[2]),
                                                                                        (0, jobs[0]))]
    assert skipped == [{"xx": 2}, {"xx": 1}, {"xx": 0}]  # 1, 4: both finished; 2 finished, 5 not; 0, 3, 6
    assert [job.processed for job in jobs] == [[("xx", 0), ("xx", 3), ("xx", 6)], [], [("xx", 5)]]


def test_each_process_says_what_it_skipped_of_its_own_shards(tmp_path, monkeypatch, caplog):
    given = {"aa": numbered(9, 2), "bb": numbered(3, 2)}

    def run(index: int) -> ListJob:
        job = ListJob(ListConfig(output_dir=str(tmp_path), keys=["aa", "bb"]), given)
        job.result = run_as(monkeypatch, index, 2, job)
        return job

    with caplog.at_level(logging.INFO, logger="crop_hf.engine.jobs"):
        second, first = run(1), run(0)
    assert second.processed + first.processed == [("aa", 1), ("aa", 3), ("bb", 1), ("aa", 0), ("aa", 2), ("aa", 4),
                                                  ("bb", 0)]
    assert second.result.skipped_shards == first.result.skipped_shards == {"aa": 0, "bb": 0}
    assert first.result.statistics == {"aa": {"input": 9, "kept": 5, "odd": 4}, "bb": {"input": 3, "kept": 2, "odd": 1}}
    assert "resumed" not in caplog.text

    root = first.store.root
    (root / "aa" / "00002.json").unlink()  # process 0's shard 2 was cut short
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="crop_hf.engine.jobs"):
        second, first = run(1), run(0)
    assert second.processed + first.processed == [("aa", 2)]
    assert second.result.skipped_shards == {"aa": 2, "bb": 1} and first.result.skipped_shards == {"aa": 2, "bb": 1}
    assert first.result.statistics["aa"] == {"input": 9, "kept": 5, "odd": 4}
    assert [record.getMessage() for record in caplog.records if "resumed" in record.getMessage()] == [
        f"aa: resumed: skipped 2 of 2 shard(s) already finished in {root / 'aa'}",
        f"bb: resumed: skipped 1 of 1 shard(s) already finished in {root / 'bb'}",
        f"aa: resumed: skipped 2 of 3 shard(s) already finished in {root / 'aa'}",
        f"bb: resumed: skipped 1 of 1 shard(s) already finished in {root / 'bb'}",
    ]


def test_a_resumed_two_process_synthesis_reports_the_main_process_shards(tmp_path, monkeypatch):
    raw = _raw_dir(tmp_path)
    (raw / "nl.txt").write_text("Ik woon in Hamburg .\nniets hier .\nJan werkt bij Philips AG .\n"
                                "De Maas stroomt door Rotterdam .\n", encoding="utf-8")
    config = fake_config(str(raw / "{lang}.txt"), str(tmp_path / "out"), shard_size=1)  # de 3 shards, nl 4

    def both():
        results = []
        for index in (1, 0):
            monkeypatch.setattr(processes, "process_state", lambda index=index: FakeState(index, 2))
            results.append(SynthesisJob(config, models=fake_models()).run())
        return results

    _, first = both()
    assert first.statistics["de"]["input"] == 3 and first.statistics["nl"]["input"] == 4
    (next(Path(tmp_path / "out" / "shards").glob("*/run.json")).parent / "nl" / "00003.json").unlink()  # process 1's
    models = []
    for index in (1, 0):
        monkeypatch.setattr(processes, "process_state", lambda index=index: FakeState(index, 2))
        runner = SynthesisJob(config, models=fake_models())
        result = runner.run()
        models.append(runner.models)
        assert runner.skipped_shards == ({"de": 1, "nl": 1} if index else {"de": 2, "nl": 2})
    assert [m.translator.calls for m in models] == [2, 0]  # only nl shard 3, by process 1
    assert result.skipped_shards == {"de": 2, "nl": 2}
    assert result.statistics == first.statistics
    assert "resumed: skipped 4 shard(s) an earlier run had finished (de 2, nl 2)" in result.report()


# --------------------------------------------------------------------------- translate-and-align, generate-and-filter


def test_hybrid_translate_align_keeps_a_slot_found_lexically_that_alignment_loses(tmp_path):
    items = [_parse_input("[IN:PLAY_MUSIC play [SL:MUSIC_TYPE music ] by [SL:MUSIC_ARTIST_NAME adele ] ]")]
    translator = _Translator({"play music by adele": "pon música de adele"})
    aligner = _Aligner({"pon música de adele": [(0, 0), (1, 1), (2, 2)]})  # "adele" unaligned
    config = TranslateAlignConfig(input="-", output_dir=str(tmp_path), tgt_lang="es", language_filter=False,
                                  method="hybrid")
    kept, discarded, reasons = as_rows(align_batch(items, config, TranslateAlignModels(translator, aligner)))
    assert not discarded and not reasons
    assert [row["parse"] for row in kept] == [
        "[IN:PLAY_MUSIC pon [SL:MUSIC_TYPE música ] de [SL:MUSIC_ARTIST_NAME adele ] ]"]
    assert kept[0]["projection_status"] == ["projected", "found"]
    assert kept[0]["slot_tags"] == ["O", "B-MUSIC_TYPE", "O", "B-MUSIC_ARTIST_NAME"]
    # Alignment alone loses the artist: the same parse is dropped.
    alignment = dataclasses.replace(config, method="alignment")
    kept, discarded, _ = as_rows(align_batch(items, alignment, TranslateAlignModels(translator, aligner)))
    assert not kept and discarded[0]["reason"] == "slots_lost"


def test_neighbours_rank_by_words_changed_not_characters_changed():
    from crop_hf.augment.generate_filter import neighbour_pairs
    from crop_hf.seqlogical import to_flat

    code_switched = [to_flat("[IN:A a [SL:X b ] c ]")]
    english = [to_flat("[IN:A x [SL:X y ] z ]"),  # 3 words changed, 3 characters
               to_flat("[IN:A a [SL:X bbbbbbbbbb ] c ]")]  # 1 word changed, 9 characters
    assert neighbour_pairs(code_switched, english, top_k=2) == [(0, 1), (0, 0)]
    assert neighbour_pairs(code_switched, english, top_k=1) == [(0, 1)]


def test_few_shot_filter_and_duplicates_ignore_how_a_parse_is_spaced():
    from crop_hf.augment.generate_filter import judge_generations

    source = "[IN:CALL call [SL:NAME dad ] ]"
    few_shot = ["[IN:CALL  [SL:NAME   mom ]  ko call karo ]"]  # as a file might hold it
    generations = [["[IN:CALL [SL:NAME mom ] ko call karo ]",  # the few-shot parse, canonical spacing
                    "[IN:CALL [SL:NAME mom ]   ko  call karo  ]",  # the few-shot parse, other spacing
                    "[IN:CALL   [SL:NAME dad ] ko call karo ]",  # new: kept, in canonical spacing
                    "[IN:CALL [SL:NAME  dad ]  ko call karo ]"]]  # the same parse again
    kept, discarded, counts = as_rows(judge_generations([source], generations, few_shot))
    assert [row["parse"] for row in kept] == ["[IN:CALL [SL:NAME dad ] ko call karo ]"]
    assert [row["reason"] for row in discarded] == ["in_few_shot", "in_few_shot", "duplicate"]
    assert dict(counts) == {"in_few_shot": 2, "duplicate": 1}


# --------------------------------------------------------------------------- CTranslate2 sub-batches


def test_ctranslate2_max_batch_size_zero_overrides_max_batch_rows(tiny_m2m100, tmp_path, monkeypatch):
    pytest.importorskip("ctranslate2")
    from transformers import pipeline

    import crop_hf  # noqa: F401

    monkeypatch.setenv("CROP_HF_CACHE", str(tmp_path / "cache"))
    calls = []

    def translator(**options):
        built = pipeline("labeled-translation", model=str(tiny_m2m100), backend="ctranslate2",
                         backend_options=options)
        translate = built.backend.translator.translate_batch
        built.backend.translator = SimpleNamespace(
            translate_batch=lambda source, **kwargs: calls.append(kwargs.get("max_batch_size"))
            or translate(source, **kwargs))
        return built

    rows = dict(src_lang="en", tgt_lang="de", max_new_tokens=4, num_beams=2, batch_size=2)
    translator(max_batch_size=0, max_batch_rows=8)(["Paris", "Berlin"], **rows)
    translator(max_batch_size=1, max_batch_rows=8)(["Paris", "Berlin"], **rows)
    translator(max_batch_rows=8)(["Paris", "Berlin"], **rows)
    assert calls == [0, 1, 4]  # 0: never split, whatever max_batch_rows says; rows: 8 // 2 beams


# --------------------------------------------------------------------------- marker loss weight


def _marked_pairs(with_markers: bool):
    words = ["Anna", "lives", "in", "Paris", "and", "works", "for", "Volvo"]
    rows = []
    for k in range(8):
        tokens = words[k % 3:k % 3 + 5]
        text = " ".join(tokens)
        if with_markers:
            text = text.replace(tokens[1], f"__SLOT0__ {tokens[1]} __SLOT0__")
        rows.append({"source": text, "target": text, "src_lang": "en", "tgt_lang": "de"})
    return datasets.Dataset.from_list(rows)


def _first_step_loss(model, output: Path, weight: float, train) -> float:
    from crop_hf.translation.arguments import parse_translation_arguments
    from crop_hf.translation.train import train_translation

    args = parse_translation_arguments([
        "--model_name_or_path", str(model), "--output_dir", str(output), "--no_show_progress",
        "--max_train_steps", "1", "--per_device_train_batch_size", "8", "--evaluate_before_training", "false",
        "--label_smoothing", "0", "--marker_loss_weight", str(weight)])
    return train_translation(*args, train_dataset=train).step_losses[0]


def test_the_marker_loss_weight_reaches_the_training_loss(tiny_m2m100, tmp_path):
    marked = _marked_pairs(with_markers=True)
    plain = _first_step_loss(tiny_m2m100, tmp_path / "w1", 1.0, marked)
    weighted = _first_step_loss(tiny_m2m100, tmp_path / "w3", 3.0, marked)
    # The same first batch and weights: the loss grows by twice the markers' share of it.
    assert weighted > plain * 1.05
    # Without marker tokens in the targets the weight changes nothing.
    unmarked = _marked_pairs(with_markers=False)
    assert _first_step_loss(tiny_m2m100, tmp_path / "u3", 3.0, unmarked) == pytest.approx(
        _first_step_loss(tiny_m2m100, tmp_path / "u1", 1.0, unmarked), rel=1e-6)


# --------------------------------------------------------------------------- Hinglish-TOP

HINGLISH_HEADER = "en_query\tcs_query\ten_parse\tcs_parse\tdomain\n"
FLAT_ROW = ("weather in Delhi\tDelhi ka weather\t[IN:GET_WEATHER weather in [SL:LOCATION Delhi ] ]\t"
            "[IN:GET_WEATHER [SL:LOCATION Delhi ] ka weather ]\tweather\n")
# The English parse nests an intent in a slot; the code-switched one does not.
EN_NESTED_ROW = ("remind me about the party\tparty ke baare mein remind karo\t"
                 "[IN:CREATE_REMINDER remind [SL:PERSON_REMINDED me ] about [SL:TODO [IN:GET_EVENT the party ] ] ]\t"
                 "[IN:CREATE_REMINDER [SL:TODO party ] ke baare mein remind karo ]\treminder\n")
# The code-switched parse nests; the English one does not.
CS_NESTED_ROW = ("remind me about the party\tparty ke baare mein remind karo\t"
                 "[IN:CREATE_REMINDER remind [SL:PERSON_REMINDED me ] about [SL:TODO the party ] ]\t"
                 "[IN:CREATE_REMINDER [SL:TODO [IN:GET_EVENT party ] ] ke baare mein remind karo ]\treminder\n")


def _hinglish(tmp_path: Path, train_rows: str) -> Path:
    folder = tmp_path / "hinglish"
    folder.mkdir()
    (folder / "train.tsv").write_text(HINGLISH_HEADER + train_rows, encoding="utf-8")
    (folder / "validation.tsv").write_text(HINGLISH_HEADER + FLAT_ROW, encoding="utf-8")
    return folder


def test_hinglish_top_en_nested_is_read_from_the_english_parse(tmp_path):
    from crop_hf.data.hinglish_top import HinglishTop

    builder = HinglishTop(data_dir=str(_hinglish(tmp_path, FLAT_ROW + EN_NESTED_ROW + CS_NESTED_ROW)),
                          cache_dir=str(tmp_path / "cache"))
    builder.download_and_prepare()
    train = builder.as_dataset(split="train")
    assert train["nested"] == [False, False, True]
    assert train["en_nested"] == [False, True, False]
    assert train[1]["en_slot_tags"] == ["O", "B-PERSON_REMINDED", "O", "B-TODO", "I-TODO"]
    assert train[1]["en_parse"].count("[IN:") == 2 and train[1]["parse"].count("[IN:") == 1


def test_hinglish_top_nested_error_names_the_row_and_keeps_no_cache(tmp_path):
    from crop_hf.data import load_dataset
    from crop_hf.data.readers import FormatError

    folder = _hinglish(tmp_path, FLAT_ROW + CS_NESTED_ROW)
    with pytest.raises(FormatError, match=r"train\.tsv:3: expected a parse without intents nested in slots") as caught:
        load_dataset("hinglish_top", data_dir=str(folder), cache_dir=str(tmp_path / "cache"), nested="error")
    assert "[IN:GET_EVENT party ]" in str(caught.value)
    assert not list((tmp_path / "cache").rglob("dataset_info.json"))
    # A row whose English side alone nests is no error: "nested" is about the code-switched parse.
    (tmp_path / "en").mkdir()
    train = load_dataset("hinglish_top", data_dir=str(_hinglish(tmp_path / "en", FLAT_ROW + EN_NESTED_ROW)),
                         cache_dir=str(tmp_path / "cache2"), nested="error", split="train")
    assert train["en_nested"] == [False, True]


# --------------------------------------------------------------------------- lexical projection


def test_an_occurrence_running_from_a_free_token_into_claimed_ones_is_skipped():
    from crop_hf.projection.lexical import project_lexical

    target = "Anna Maria Bergmann und Anna Maria"
    # "Maria Bergmann" is longer: it claims tokens 1-2 first. "Anna Maria" then starts on the free
    # token 0 but runs into claimed token 1, so it must take its second occurrence, tokens 4-5.
    result = project_lexical(target, [("Anna Maria", "LOC"), ("Maria Bergmann", "PER")], repeated="once")
    assert result.tags == ["O", "B-PER", "I-PER", "O", "B-LOC", "I-LOC"]
    assert [(s.text, s.status) for s in result.statuses] == [("Anna Maria", "found"), ("Maria Bergmann", "found")]
    # Its only occurrence overlapping a claimed token: missing, never overlapping.
    result = project_lexical("Anna Maria Bergmann", [("Anna Maria", "LOC"), ("Maria Bergmann", "PER")],
                             drop_incomplete=False)
    assert result.tags == ["O", "B-PER", "I-PER"]
    assert [s.status for s in result.statuses] == ["missing", "found"]

