"""The long commands catch every mistake before the first model loads for work (issue 62).

generate-filter, mark-parallel, train-parser, train-translation, self-train and the evaluate-*
commands read every input (a file that is not there, or holds no record after blank lines, is
named), check every model (``errors.check_model``) and the output folder, before any work: the
first mistake is one line ``crop-hf <command>: error: ...`` naming the option as the command line
spells it, and nothing is written (self-train's discarded sentences alone may be none: synthesis
may keep them all). A failure after training has begun says where the trained model is, and keeps
it. Models are the tiny offline fixtures; each run stops in seconds.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from test_fail_fast import files_under, one_line, run
from training_fixtures import as_dataset, synthetic_rows


def refused(argv: list[str], option: str, expected: str, capsys) -> str:
    """Run ``argv``: exit status 1 and one error line naming ``option`` and holding ``expected``; the line."""
    code, err = run(argv, capsys)
    assert code == 1, err
    line = one_line(err, argv[0])
    assert option in line and expected in line, line
    return line


def failing_after_training(argv: list[str], module, name: str, caplog, monkeypatch) -> str:
    """Run ``argv`` with ``module.name`` (a step after training) broken: the error propagates; what was logged."""
    from crop_hf.cli import main

    def broken(*args, **kwargs):
        raise RuntimeError(f"{name} broke")

    monkeypatch.setattr(module, name, broken)
    with caplog.at_level(logging.ERROR), pytest.raises(RuntimeError, match=f"{name} broke"):
        main(argv)
    return " ".join(record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR)


def a_file(path: Path) -> Path:
    """A file where a command's output folder should go."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("not a folder\n", encoding="utf-8")
    return path


# --- inputs ---------------------------------------------------------------------------------------


@pytest.fixture
def ner_corpora(tmp_path) -> dict[str, str]:
    """``disk:`` NER corpora: a small one (train, validation), one empty, and one whose validation split is empty."""
    import datasets

    from crop_hf.engine.shards import save_dataset_dict

    rows = as_dataset(synthetic_rows(8, seed=0))
    empty = rows.select([])
    datasets.DatasetDict({"train": rows, "validation": rows}).save_to_disk(str(tmp_path / "ner-small"))
    save_dataset_dict(datasets.DatasetDict({"train": empty, "validation": empty}), tmp_path / "ner-empty")
    save_dataset_dict(datasets.DatasetDict({"train": rows, "validation": empty}), tmp_path / "ner-no-validation")
    return {name: f"disk:{tmp_path / name}" for name in ("ner-small", "ner-empty", "ner-no-validation")}


@pytest.fixture
def parse_corpora(tmp_path) -> dict[str, str]:
    """``disk:`` corpora of flat parses: a toy one (train, validation), one empty train split, one empty validation."""
    import datasets

    from crop_hf.engine.shards import save_dataset_dict

    toy = datasets.Dataset.from_dict({
        "tokens": [["weather", "in", "Paris"], ["timer", "for", "Monday"], ["weather", "Oslo"], ["timer", "now"]] * 2,
        "intent": ["GET_WEATHER", "SET_TIMER", "GET_WEATHER", "SET_TIMER"] * 2,
        "slot_tags": [["O", "O", "B-LOCATION"], ["O", "O", "B-DATE_TIME"], ["O", "B-LOCATION"], ["O", "O"]] * 2})
    datasets.DatasetDict({"train": toy, "validation": toy}).save_to_disk(str(tmp_path / "parses"))
    save_dataset_dict(datasets.DatasetDict({"train": toy.select([]), "validation": toy}), tmp_path / "no-train")
    save_dataset_dict(datasets.DatasetDict({"train": toy, "validation": toy.select([])}), tmp_path / "no-validation")
    return {name: f"disk:{tmp_path / name}" for name in ("parses", "no-train", "no-validation")}


def marked_pairs(path: Path, n: int) -> str:
    """``n`` marked pairs (as crop-hf mark-parallel writes them) saved to ``path``."""
    import datasets

    datasets.Dataset.from_dict({
        "source": ["the __SLOT1__ cat __SLOT1__ sleeps"] * n, "target": ["die __SLOT1__ Katze __SLOT1__ schläft"] * n,
        "src_lang": ["en"] * n, "tgt_lang": ["de"] * n}).save_to_disk(str(path), num_shards=1)
    return str(path)


# --- generate-filter --------------------------------------------------------------------------------


@pytest.mark.parametrize(("mistake", "option", "expected"), [
    ("missing_input", "--few_shot", "--few_shot: no file few-typo.tsv"),
    ("empty_input", "--english", "no parses in its 'train' split (blank lines and a header are skipped)"),
    ("missing_model", "--model", "no model folder at ./no-such-generator (generator (--model))"),
    ("output_is_a_file", "--output_dir", "a file is there, not a folder"),
])
def test_generate_filter_refuses_before_fine_tuning(mistake, option, expected, tmp_path, tiny_bart, capsys,
                                                    monkeypatch):
    import crop_hf.augment.generate_filter as recipe

    monkeypatch.chdir(tmp_path)
    (tmp_path / "few.tsv").write_text("parse\n[IN:CALL [SL:NAME mom ] ko call karo ]\n", encoding="utf-8")
    (tmp_path / "en.tsv").write_text("parse\n[IN:CALL call [SL:NAME dad ] ]\n", encoding="utf-8")
    (tmp_path / "empty.tsv").write_text("parse\n\n   \n", encoding="utf-8")
    trained = []
    monkeypatch.setattr(recipe, "train", lambda *args, **kwargs: trained.append(args))  # never reached
    output = tmp_path / "out"
    options = {"--few_shot": "few.tsv", "--english": "en.tsv", "--model": str(tiny_bart), "--output_dir": str(output)}
    options.update({"missing_input": {"--few_shot": "few-typo.tsv"}, "empty_input": {"--english": "empty.tsv"},
                    "missing_model": {"--model": "./no-such-generator"},
                    "output_is_a_file": {"--output_dir": str(output / "taken")}}[mistake])
    argv = ["generate-filter", *[part for item in options.items() for part in item], "--few_shot_size", "0",
            "--epochs", "1", "--no_show_progress"]
    if mistake == "output_is_a_file":
        a_file(output / "taken")
    refused(argv, option, expected, capsys)
    assert trained == [] and files_under(output) == (["taken"] if mistake == "output_is_a_file" else [])


def test_generate_filter_keeps_the_generator_and_says_where_when_generating_fails(tmp_path, tiny_bart, caplog,
                                                                                 monkeypatch):
    import crop_hf.augment.generate_filter as recipe

    (tmp_path / "few.tsv").write_text("parse\n[IN:CALL [SL:NAME mom ] ko call karo ]\n", encoding="utf-8")
    (tmp_path / "en.tsv").write_text("parse\n[IN:CALL call [SL:NAME dad ] ]\n", encoding="utf-8")
    output = tmp_path / "out"
    said = failing_after_training(
        ["generate-filter", "--few_shot", str(tmp_path / "few.tsv"), "--english", str(tmp_path / "en.tsv"),
         "--model", str(tiny_bart), "--output_dir", str(output), "--few_shot_size", "0", "--epochs", "1",
         "--batch_size", "2", "--save_model", "--no_show_progress"], recipe, "generate", caplog, monkeypatch)
    assert f"the model is saved in {output / 'generator'}; generating failed" in said
    assert f"finished shards are kept in {output / 'shards'}" in said
    assert (output / "generator" / "config.json").is_file()


# --- mark-parallel --------------------------------------------------------------------------------


@pytest.mark.parametrize(("mistake", "option", "expected"), [
    ("missing_file", "--target_files", "--target_files: no file no-such.de"),
    ("blank_file", "--source_files", "blank.en: no sentences (blank lines are skipped)"),
    ("empty_dataset", "--dataset", "no sentence pairs (split 'train')"),
    ("output_is_a_file", "--output_dir", "a file is there, not a folder"),
    ("language_pair", "--language_pairs", "language pairs are SRC-TGT (e.g. en-de), got 'ende'"),
])
def test_mark_parallel_refuses_before_aligning(mistake, option, expected, tmp_path, capsys, monkeypatch):
    import datasets

    from crop_hf.alignment import EflomalAligner

    aligned = []
    monkeypatch.setattr(EflomalAligner, "align", lambda self, *args, **kwargs: aligned.append(args))
    monkeypatch.chdir(tmp_path)
    Path("s.en").write_text("the cat sleeps\na dog\n", encoding="utf-8")
    Path("t.de").write_text("die Katze schläft\nein Hund\n", encoding="utf-8")
    Path("blank.en").write_text("\n  \n", encoding="utf-8")
    datasets.Dataset.from_dict({"translation": []}, features=datasets.Features(
        {"translation": {"en": datasets.Value("string"), "de": datasets.Value("string")}})).save_to_disk(
        "empty-pairs", num_shards=1)
    output = tmp_path / "marked"
    inputs = {"missing_file": ["--source_files", "s.en", "--target_files", "no-such.de"],
              # the folder is checked first: files can take minutes to read
              "blank_file": ["--source_files", "blank.en", "--target_files", "t.de"],
              "output_is_a_file": ["--source_files", "blank.en", "--target_files", "t.de"],
              "empty_dataset": ["--dataset", "empty-pairs"]}.get(mistake, ["--source_files", "s.en", "--target_files",
                                                                           "t.de"])
    where = str(output / "taken") if mistake == "output_is_a_file" else str(output)
    pairs = "ende" if mistake == "language_pair" else "en-de"
    if mistake == "output_is_a_file":
        a_file(output / "taken")
    refused(["mark-parallel", *inputs, "--language_pairs", pairs, "--output_dir", where, "--no_show_progress"],
            option, expected, capsys)
    assert aligned == [] and files_under(output) == (["taken"] if mistake == "output_is_a_file" else [])


# --- train-parser ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("mistake", "option", "expected"), [
    ("empty_train", "--train_sources", "no-train: no utterances in its 'train' split"),
    ("empty_eval", "--eval_sources", "no-validation: no utterances in its 'validation' split"),
    ("missing_test_split", "--eval_sources", "parses: no 'test' split (has train, validation)"),
    ("missing_model", "--model_name_or_path", "no model folder at ./no-such-encoder (encoder (--model_name_or_path))"),
    ("missing_parser", "--init_from", "no model folder at ./no-such-parser (parser (--init_from))"),
    ("no_checkpoint", "--resume_from_checkpoint", "--resume_from_checkpoint latest: {out} holds no checkpoint"),
    ("output_is_a_file", "--output_dir", "a file is there, not a folder"),
])
def test_train_parser_refuses_before_the_model_loads(mistake, option, expected, parse_corpora, tiny_bert, tmp_path,
                                                     capsys, monkeypatch):
    import crop_hf.parsing.train as parser_train

    monkeypatch.chdir(tmp_path)
    loaded = []
    real = parser_train._load_model
    monkeypatch.setattr(parser_train, "_load_model", lambda *args: loaded.append(1) or real(*args))
    output = tmp_path / "parser"
    argv = {"--model_name_or_path": str(tiny_bert), "--train_sources": parse_corpora["parses"],
            "--output_dir": str(output)}
    extra = {"empty_train": {"--train_sources": parse_corpora["no-train"]},
             "empty_eval": {"--eval_sources": parse_corpora["no-validation"]},
             "missing_test_split": {"--eval_sources": parse_corpora["parses"], "--test_split": "test"},
             "missing_model": {"--model_name_or_path": "./no-such-encoder"},
             "missing_parser": {"--init_from": "./no-such-parser"},
             "no_checkpoint": {"--resume_from_checkpoint": "latest"},
             "output_is_a_file": {"--output_dir": str(output / "taken")}}[mistake]
    argv.update(extra)
    if mistake == "output_is_a_file":
        a_file(output / "taken")
    refused(["train-parser", *[part for item in argv.items() for part in item], "--max_train_steps", "1",
             "--per_device_train_batch_size", "4", "--no_show_progress"], option, expected.format(out=output),
            capsys)
    model_checks = mistake in ("missing_model", "missing_parser")  # read in _load_model, before loading
    assert loaded == ([1] if model_checks else [])
    assert files_under(output) == (["taken"] if mistake == "output_is_a_file" else [])


def test_train_parser_says_where_the_parser_is_when_its_evaluation_fails(parse_corpora, tiny_bert, tmp_path, caplog,
                                                                        monkeypatch):
    import crop_hf.parsing.train as parser_train

    output = tmp_path / "parser"
    said = failing_after_training(
        ["train-parser", "--model_name_or_path", str(tiny_bert), "--train_sources", parse_corpora["parses"],
         "--output_dir", str(output), "--max_train_steps", "1", "--per_device_train_batch_size", "4",
         "--no_show_progress"], parser_train, "evaluate_parser", caplog, monkeypatch)
    assert f"training finished and the model is saved in {output}; its evaluation failed" in said
    assert f"crop-hf evaluate-parser --model {output}" in said
    assert (output / "config.json").is_file() and (output / "model.safetensors").is_file()


# --- train-translation ----------------------------------------------------------------------------


@pytest.mark.parametrize(("mistake", "option", "expected"), [
    ("missing_train_file", "--train_file", "--train_file no-such-marked: no marked dataset"),
    ("empty_validation_file", "--validation_file", "empty-marked: no marked pairs"),
    ("missing_model", "--model_name_or_path", "no model folder at ./no-such-mt (model (--model_name_or_path))"),
    ("unknown_decoding", "--eval_decodings", "decoding must be 'free' or 'constrained', got 'greedy'"),
    ("output_is_a_file", "--output_dir", "a file is there, not a folder"),
])
def test_train_translation_refuses_before_the_model_loads(mistake, option, expected, tiny_m2m100, tmp_path, capsys,
                                                          monkeypatch):
    from transformers import AutoTokenizer

    monkeypatch.chdir(tmp_path)
    marked_pairs(tmp_path / "marked", 4)
    marked_pairs(tmp_path / "empty-marked", 0)
    loaded = []
    monkeypatch.setattr(AutoTokenizer, "from_pretrained", lambda *args, **kwargs: loaded.append(args))
    output = tmp_path / "mt"
    argv = {"--model_name_or_path": str(tiny_m2m100), "--train_file": "marked", "--output_dir": str(output)}
    argv.update({"missing_train_file": {"--train_file": "no-such-marked"},
                 "empty_validation_file": {"--validation_file": "empty-marked"},
                 "missing_model": {"--model_name_or_path": "./no-such-mt"},
                 "unknown_decoding": {"--eval_decodings": "greedy"},
                 "output_is_a_file": {"--output_dir": str(output / "taken")}}[mistake])
    if mistake == "output_is_a_file":
        a_file(output / "taken")
    refused(["train-translation", *[part for item in argv.items() for part in item], "--max_train_steps", "1",
             "--no_show_progress"], option, expected, capsys)
    assert loaded == [] and files_under(output) == (["taken"] if mistake == "output_is_a_file" else [])


def test_train_translation_says_where_the_model_is_when_its_evaluation_fails(tiny_m2m100, tmp_path, caplog,
                                                                            monkeypatch):
    import crop_hf.translation.train as mt_train

    output = tmp_path / "mt"
    data = marked_pairs(tmp_path / "marked", 4)
    said = failing_after_training(
        ["train-translation", "--model_name_or_path", str(tiny_m2m100), "--train_file", data, "--validation_file",
         data, "--evaluate_before_training", "false", "--output_dir", str(output), "--max_train_steps", "1",
         "--per_device_train_batch_size", "2", "--no_show_progress"], mt_train, "evaluate_translation", caplog,
        monkeypatch)
    assert f"training finished and the model is saved in {output}; its evaluation failed" in said
    assert f"crop-hf evaluate-translation --model {output} --data {data}" in said
    assert (output / "config.json").is_file()


# --- self-train -----------------------------------------------------------------------------------


@pytest.fixture
def self_training_inputs(tmp_path) -> dict[str, str]:
    """Folders as synthesis writes them: a kept corpus, discarded sentences, an empty one of each, and
    discarded sentences without their ``tokens`` column."""
    import datasets

    from crop_hf.engine.shards import save_dataset_dict

    kept = as_dataset(synthetic_rows(8, seed=0, lang="xx"))
    discarded = datasets.Dataset.from_dict({"tokens": [row["tokens"] for row in synthetic_rows(4, seed=1, lang="xx")],
                                            "lang": ["xx"] * 4})
    datasets.DatasetDict({"xx": kept}).save_to_disk(str(tmp_path / "kept"))
    datasets.DatasetDict({"xx": discarded}).save_to_disk(str(tmp_path / "discarded"))
    save_dataset_dict(datasets.DatasetDict({"xx": kept.select([])}), tmp_path / "kept-empty")
    save_dataset_dict(datasets.DatasetDict({"xx": discarded.select([])}), tmp_path / "discarded-empty")
    discarded.rename_column("tokens", "words").save_to_disk(str(tmp_path / "discarded-without-tokens"))
    return {name: str(tmp_path / name)
            for name in ("kept", "discarded", "kept-empty", "discarded-empty", "discarded-without-tokens")}


@pytest.mark.parametrize(("mistake", "option", "expected"), [
    ("empty_kept", "--kept", "kept-empty: no sentences (kept corpus)"),
    ("discarded_without_tokens", "--discarded", "--discarded: discarded sentences need a 'tokens' column"),
    ("empty_source_corpus", "--source_corpus", "ner-empty: no sentences in its 'train' split"),
    ("missing_source_model", "--source_model", "no model folder at ./no-such-ner (source model (--source_model))"),
    ("missing_multilingual_model", "--multilingual_model",
     "no model folder at ./no-such-ner (multilingual model (--multilingual_model))"),
    ("missing_base_model", "--model_name_or_path", "no model folder at ./no-such-ner (model (--model_name_or_path))"),
    ("output_is_a_file", "--output_dir", "a file is there, not a folder"),
])
def test_self_train_refuses_before_training(mistake, option, expected, self_training_inputs, ner_corpora,
                                            tiny_xlmr_ner, tmp_path, capsys, monkeypatch):
    import crop_hf.self_training as self_training

    monkeypatch.chdir(tmp_path)
    trained = []
    if mistake != "missing_base_model":  # that check is train_ner's own, before its model loads
        monkeypatch.setattr(self_training, "train_ner", lambda *args, **kwargs: trained.append(args))
    output = tmp_path / "self-trained"
    argv = {"--kept": self_training_inputs["kept"], "--discarded": self_training_inputs["discarded"],
            "--model_name_or_path": str(tiny_xlmr_ner), "--output_dir": str(output)}
    argv.update({"empty_kept": {"--kept": self_training_inputs["kept-empty"]},
                 "discarded_without_tokens": {"--discarded": self_training_inputs["discarded-without-tokens"]},
                 "empty_source_corpus": {"--source_corpus": ner_corpora["ner-empty"]},
                 "missing_source_model": {"--source_model": "./no-such-ner"},
                 # the models are checked first, before any input is read
                 "missing_multilingual_model": {"--multilingual_model": "./no-such-ner",
                                                "--discarded": self_training_inputs["discarded-without-tokens"]},
                 "missing_base_model": {"--model_name_or_path": "./no-such-ner"},
                 "output_is_a_file": {"--output_dir": str(output / "taken")}}[mistake])
    if mistake == "output_is_a_file":
        a_file(output / "taken")
    refused(["self-train", *[part for item in argv.items() for part in item], "--max_train_steps", "1",
             "--no_show_progress"], option, expected, capsys)
    assert trained == [] and files_under(output) == (["taken"] if mistake == "output_is_a_file" else [])


def test_self_train_without_discarded_sentences_warns_and_keeps_the_kept_corpus(self_training_inputs, tiny_xlmr_ner,
                                                                              tmp_path, caplog, capsys):
    """A synthesis run may keep every sentence: that is no mistake, only nothing to re-label."""
    import datasets

    with caplog.at_level(logging.WARNING):
        code, err = run(["self-train", "--kept", self_training_inputs["kept"], "--discarded",
                         self_training_inputs["discarded-empty"], "--multilingual_model", str(tiny_xlmr_ner),
                         "--output_dir", str(tmp_path / "out"), "--no_show_progress"], capsys)
    assert code == 0, err
    assert "--discarded holds no sentence: nothing to re-label" in caplog.text
    assert datasets.load_from_disk(str(tmp_path / "out" / "corpus"))["train"].num_rows == 8


def test_self_train_says_where_the_multilingual_model_is_when_re_labeling_fails(self_training_inputs, tiny_xlmr_ner,
                                                                               tmp_path, caplog, monkeypatch):
    import crop_hf.self_training as self_training

    output = tmp_path / "self-trained"
    said = failing_after_training(
        ["self-train", "--kept", self_training_inputs["kept"], "--discarded", self_training_inputs["discarded"],
         "--model_name_or_path", str(tiny_xlmr_ner), "--output_dir", str(output), "--max_train_steps", "1",
         "--per_device_train_batch_size", "4", "--no_show_progress"], self_training, "relabel", caplog, monkeypatch)
    assert f"the model is saved in {output}; re-labeling the discarded sentences failed" in said
    assert f"rerun with --multilingual_model {output} to skip training" in said
    assert (output / "config.json").is_file() and not (output / "corpus").exists()


# --- evaluate-* -----------------------------------------------------------------------------------


def test_evaluate_ner_reads_every_source_and_checks_its_output_before_the_model_loads(ner_corpora, tiny_xlmr_ner,
                                                                                     tmp_path, capsys, monkeypatch):
    from transformers import AutoModelForTokenClassification

    loaded = []
    monkeypatch.setattr(AutoModelForTokenClassification, "from_pretrained", lambda *a, **k: loaded.append(a))
    scores = tmp_path / "scores"
    scores.mkdir()
    common = ["evaluate-ner", "--model", str(tiny_xlmr_ner), "--split", "validation", "--no_show_progress"]
    refused([*common, "--sources", ner_corpora["ner-small"], ner_corpora["ner-no-validation"], "--output",
             str(scores / "ner.json")], "--sources", "ner-no-validation: no sentences in its 'validation' split", capsys)
    refused([*common, "--sources", ner_corpora["ner-small"], "--output", str(scores / "not-there" / "ner.json")],
            "--output", f"no folder {scores / 'not-there'} to write it in", capsys)
    refused([*common[:2], str(tmp_path / "no-such-ner"), *common[3:], "--sources", "conll5:es?data_dir=/no/such/folder"],
            "--model", f"no model folder at {tmp_path / 'no-such-ner'} (model (--model))", capsys)  # checked first
    assert loaded == [] and files_under(scores) == []


@pytest.fixture
def tiny_parser(tmp_path, tiny_bert) -> str:
    from transformers import AutoTokenizer

    from crop_hf.modeling import JointIntentSlotModel

    JointIntentSlotModel.from_encoder(str(tiny_bert), ["GET_WEATHER", "SET_TIMER"],
                                      ["O", "B-LOCATION", "I-LOCATION", "B-DATE_TIME", "I-DATE_TIME"]
                                      ).save_pretrained(tmp_path / "parser")
    AutoTokenizer.from_pretrained(tiny_bert).save_pretrained(tmp_path / "parser")
    return str(tmp_path / "parser")


@pytest.mark.parametrize(("mistake", "option", "expected"), [
    ("empty_second_source", "--sources", "no-validation: no utterances in its 'validation' split"),
    ("missing_model", "--model", "no model folder at ./no-such-parser (parser (--model))"),
    ("output_without_folder", "--output", "to write it in"),
    ("no_sources", "--sources", "--sources: name the corpora to score"),
])
def test_evaluate_parser_refuses_before_scoring(mistake, option, expected, parse_corpora, tiny_parser, tmp_path,
                                                capsys, monkeypatch):
    from crop_hf.modeling import JointIntentSlotModel

    monkeypatch.chdir(tmp_path)
    loaded = []
    monkeypatch.setattr(JointIntentSlotModel, "from_pretrained", lambda *a, **k: loaded.append(a))
    scores = tmp_path / "scores"
    scores.mkdir()
    argv = {"--model": tiny_parser, "--sources": [parse_corpora["parses"]], "--output": str(scores / "parser.json")}
    argv.update({"empty_second_source": {"--sources": [parse_corpora["parses"], parse_corpora["no-validation"]]},
                 "missing_model": {"--model": "./no-such-parser"},
                 "output_without_folder": {"--output": str(scores / "not-there" / "parser.json")},
                 "no_sources": {"--sources": []}}[mistake])
    flat = [part for option_name, value in argv.items() if value
            for part in (option_name, *(value if isinstance(value, list) else [value]))]
    refused(["evaluate-parser", *flat], option, expected, capsys)
    assert loaded == [] and files_under(scores) == []


@pytest.mark.parametrize(("mistake", "option", "expected"), [
    ("empty_data", "--data", "empty-marked: no marked pairs"),
    ("missing_model_after_a_baseline", "--model", "no model folder at ./no-such-mt (model (--model))"),
    ("output_without_folder", "--output", "to write it in"),
    ("unknown_decoding", "--decodings", "decoding must be 'free' or 'constrained', got 'greedy'"),
    ("missing_device", "cuda:99", "device 'cuda:99' is not available"),
])
def test_evaluate_translation_refuses_before_the_first_model_loads(mistake, option, expected, tiny_m2m100, tmp_path,
                                                                   capsys, monkeypatch):
    from transformers import AutoTokenizer

    monkeypatch.chdir(tmp_path)
    loaded = []
    monkeypatch.setattr(AutoTokenizer, "from_pretrained", lambda *args, **kwargs: loaded.append(args))
    marked_pairs(tmp_path / "marked", 2)
    marked_pairs(tmp_path / "empty-marked", 0)
    scores = tmp_path / "scores"
    scores.mkdir()
    argv = {"--model": str(tiny_m2m100), "--baseline": str(tiny_m2m100), "--data": "marked",
            "--output": str(scores / "mt.json"), "--device": "cpu"}
    argv.update({"empty_data": {"--data": "empty-marked"}, "missing_model_after_a_baseline": {"--model": "./no-such-mt"},
                 "output_without_folder": {"--output": str(scores / "not-there" / "mt.json")},
                 "unknown_decoding": {"--decodings": "greedy"}, "missing_device": {"--device": "cuda:99"}}[mistake])
    refused(["evaluate-translation", *[part for item in argv.items() for part in item]], option, expected, capsys)
    assert loaded == [] and files_under(scores) == []


@pytest.mark.parametrize(("mistake", "option", "expected"), [
    ("empty_source", "--source", "empty: no sentences"),
    ("missing_scorer", "--scorer_models", "no model folder at ./no-such-mt (scorer model 'no-such-mt' (--scorer_models))"),
    ("missing_encoder", "--encoder", "--encoder: no model folder at ./no-such-encoder"),
    ("missing_extra_file", "--extra_parallel", "--extra_parallel: no file more.de.txt"),
    ("blank_extra_file", "--extra_parallel", "blank.txt: no sentences (blank lines are skipped)"),
    ("output_is_a_file", "--output_dir", "a file is there, not a folder"),
])
def test_evaluate_projection_refuses_before_aligning(mistake, option, expected, tiny_bert, tmp_path, capsys,
                                                     monkeypatch):
    import datasets

    from crop_hf.alignment import EflomalAligner, EmbeddingAligner

    monkeypatch.chdir(tmp_path)
    work = []
    monkeypatch.setattr(EflomalAligner, "align", lambda self, *args, **kwargs: work.append("aligned"))
    real = EmbeddingAligner.from_pretrained.__func__
    monkeypatch.setattr(EmbeddingAligner, "from_pretrained",
                        classmethod(lambda cls, *a, **k: work.append("encoder") or real(cls, *a, **k)))
    pairs = datasets.Dataset.from_dict({"tokens": [["Paris", "x"], ["Oslo", "y"]], "ner_tags": [["B-LOC", "O"]] * 2})
    pairs.save_to_disk("pairs")
    pairs.select([]).save_to_disk("empty", num_shards=1)
    Path("more.en.txt").write_text("a b\n", encoding="utf-8")
    Path("blank.txt").write_text("\n \n", encoding="utf-8")
    output = tmp_path / "projection"
    argv = ["evaluate-projection", "--source", "disk:pairs", "--target", "disk:pairs", "--no_show_progress",
            "--output_dir", str(output)]
    argv += {"empty_source": ["--source", "disk:empty"],
             "missing_scorer": ["--aligners", "embedding", "--encoder", str(tiny_bert), "--layer", "2", "--methods",
                                "rerank", "--scorer_models", "./no-such-mt", "--src_lang", "en", "--tgt_lang", "de"],
             "missing_encoder": ["--aligners", "embedding", "--encoder", "./no-such-encoder"],
             "missing_extra_file": ["--extra_parallel", "more.en.txt", "more.de.txt"],
             "blank_extra_file": ["--extra_parallel", "more.en.txt", "blank.txt"],
             "output_is_a_file": ["--output_dir", str(output / "taken")]}[mistake]
    if mistake == "output_is_a_file":
        a_file(output / "taken")
    refused(argv, option, expected, capsys)
    assert work == (["encoder"] if mistake == "missing_encoder" else [])  # the encoder is the first model loaded
    assert files_under(output) == (["taken"] if mistake == "output_is_a_file" else [])
