"""Every mistake caught before the first expensive step (issue 62): wrong or empty inputs, missing
models, bad method options; each is one line naming the option as the command line spells it, and
nothing is written. A failure after training still says where the trained model is."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from training_fixtures import as_dataset, synthetic_rows

from crop_hf.cli import main
from crop_hf.engine.shards import save_dataset_dict


def run(argv: list[str], capsys) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exit_info:
        code = exit_info.code
    return code, capsys.readouterr().err


def one_line(err: str, command: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith(f"crop-hf {command}: error: ")]
    assert len(lines) == 1, err
    return lines[0]


def files_under(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*")) if folder.exists() else []


@pytest.fixture
def corpora(tmp_path) -> dict[str, str]:
    """``disk:`` corpora: a small English train set, an empty one, and one whose splits are all empty."""
    import datasets

    train = as_dataset(synthetic_rows(16, seed=0))
    datasets.DatasetDict({"train": train, "validation": train}).save_to_disk(str(tmp_path / "small"))
    empty = train.select([])  # as a synthesis run that kept nothing writes it (one explicit empty shard)
    save_dataset_dict(datasets.DatasetDict({"train": empty, "validation": empty}), tmp_path / "empty")
    return {"small": f"disk:{tmp_path / 'small'}", "empty": f"disk:{tmp_path / 'empty'}"}


def train_ner_argv(model, output: Path, *extra: str) -> list[str]:
    return ["train-ner", "--model_name_or_path", str(model), "--output_dir", str(output), "--max_train_steps", "2",
            "--per_device_train_batch_size", "4", "--no_show_progress", *extra]


@pytest.mark.parametrize(("eval_source", "expected"), [
    ("conll5:es?data_dir={tmp}/no-such-folder", "no folder"),
    ("{empty}", "--eval_sources disk:{tmp}/empty: no sentences in its 'validation' split"),
])
def test_train_ner_reads_its_eval_sources_before_training(eval_source, expected, corpora, tiny_xlmr_ner, tmp_path,
                                                           capsys):
    output = tmp_path / "model"
    eval_source = eval_source.format(tmp=tmp_path, empty=corpora["empty"])
    code, err = run(train_ner_argv(tiny_xlmr_ner, output, "--train_sources", corpora["small"],
                                   "--eval_sources", eval_source, "--eval_split", "validation", "--test_split", ""),
                    capsys)
    assert code == 1
    assert expected.format(tmp=tmp_path) in one_line(err, "train-ner")
    assert files_under(output) == []  # no training began, nothing was written


def test_train_ner_refuses_an_empty_training_corpus_naming_it(corpora, tiny_xlmr_ner, tmp_path, capsys):
    output = tmp_path / "model"
    code, err = run(train_ner_argv(tiny_xlmr_ner, output, "--train_sources", corpora["small"], corpora["empty"],
                                   "--test_split", ""), capsys)
    assert code == 1
    assert one_line(err, "train-ner").endswith(f"--train_sources {corpora['empty']}: no sentences in its 'train' split "
                                               "(--debug shows the traceback)")
    assert files_under(output) == []


@pytest.mark.parametrize("written", ["./no/such/model", "../no-such-model", "~/no-such-crop-hf-model", "/no/such/model"])
def test_a_missing_local_model_says_no_model_folder(written, corpora, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, err = run(train_ner_argv(written, tmp_path / "model", "--train_sources", corpora["small"],
                                   "--test_split", ""), capsys)
    assert code == 1
    line = one_line(err, "train-ner")
    assert f"no model folder at {written} (model (--model_name_or_path))" in line
    assert "Repo id" not in line
    code, err = run(["evaluate-ner", "--model", written, "--sources", corpora["small"], "--split", "validation"],
                    capsys)
    assert code == 1 and f"no model folder at {written}" in one_line(err, "evaluate-ner")


def test_a_hub_id_not_in_the_cache_says_so_offline(corpora, tmp_path, capsys, monkeypatch):
    from crop_hf.errors import UnreachableError, check_model

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    with pytest.raises(UnreachableError, match=r"cannot load the NER model \(--ner_model\) 'someone/no-such-model': "
                                               r"it is neither a folder here nor in the local Hugging Face cache "
                                               r"\(offline mode is on \(HF_HUB_OFFLINE=1"):
        check_model("someone/no-such-model", "NER model (--ner_model)")
    for switch in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):  # CI sets both
        monkeypatch.setenv(switch, "0")
    check_model("someone/no-such-model")  # online, the download will say what it finds


def test_a_failure_after_training_says_where_the_model_is(corpora, tiny_xlmr_ner, tmp_path, capsys, caplog,
                                                          monkeypatch):
    import crop_hf.ner.train as ner_train

    def broken(*args, **kwargs):
        raise RuntimeError("the evaluation broke")

    monkeypatch.setattr(ner_train, "evaluate_ner", broken)
    output = tmp_path / "model"
    with caplog.at_level(logging.ERROR), pytest.raises(RuntimeError, match="the evaluation broke"):
        main(train_ner_argv(tiny_xlmr_ner, output, "--train_sources", corpora["small"], "--eval_sources",
                            corpora["small"], "--eval_split", "validation", "--test_split", ""))
    said = [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]
    assert f"training finished and the model is saved in {output}" in " ".join(said)
    assert (output / "config.json").is_file() and (output / "model.safetensors").is_file()


# --- synthesize and translate-align -------------------------------------------------------------


def raw_files(folder: Path, **lines: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    for lang, text in lines.items():
        (folder / f"{lang}.txt").write_text(text, encoding="utf-8")
    return str(folder / "{lang}.txt")


def synthesize_argv(template: str, output: Path, mt_model, ner_model, *extra: str) -> list[str]:
    return ["synthesize", "--tgt_langs", "de", "es", "--input", template, "--output_dir", str(output),
            "--mt_model", str(mt_model), "--ner_model", str(ner_model), "--language_filter", "false",
            "--no_show_progress", *extra]


@pytest.mark.parametrize(("es", "expected"), [
    (None, "--input: no raw sentences for 'es': {raw}/es.txt does not exist"),
    ("\n   \n\n", "--input: no sentences for 'es' in {raw}/es.txt (blank lines are skipped)"),
])
def test_synthesize_checks_every_languages_input_before_the_first_language_runs(es, expected, tmp_path, capsys,
                                                                                 monkeypatch):
    from crop_hf.synthesis import SynthesisModels

    loads = []
    monkeypatch.setattr(SynthesisModels, "load", classmethod(lambda cls, *a, **k: loads.append(1)))
    raw = tmp_path / "raw"
    template = raw_files(raw, de="Ich wohne in Hamburg .\n", **({"es": es} if es is not None else {}))
    output = tmp_path / "out"
    code, err = run(synthesize_argv(template, output, "fake-mt", "fake-ner"), capsys)
    assert code == 1
    assert one_line(err, "synthesize").startswith(f"crop-hf synthesize: error: {expected.format(raw=raw)}")
    assert loads == [] and files_under(output) == []  # no model loaded for German first, nothing written


def test_synthesize_names_a_missing_local_model_before_loading_any(tmp_path, capsys, tiny_m2m100):
    template = raw_files(tmp_path / "raw", de="Ich wohne in Hamburg .\n", es="Vivo en Madrid .\n")
    output = tmp_path / "out"
    code, err = run(synthesize_argv(template, output, tiny_m2m100, "./no-such-ner"), capsys)
    assert code == 1
    assert "no model folder at ./no-such-ner (NER model (--ner_model))" in one_line(err, "synthesize")
    assert files_under(output) == []


def test_an_empty_result_is_named_in_the_summary_and_never_published(tmp_path, monkeypatch):
    from synthesis_fakes import fake_config, fake_models

    import crop_hf.synthesis.runner as runner
    from crop_hf.errors import EmptyInputError
    from crop_hf.synthesis import SynthesisJob

    template = raw_files(tmp_path / "raw", de="das ist alles klein .\n", nl="Ik woon in Hamburg .\n")
    result = SynthesisJob(fake_config(template, str(tmp_path / "out")), models=fake_models()).run()
    assert result.statistics["de"]["kept"] == 0 and result.statistics["nl"]["kept"] == 1
    assert "nothing kept for de: see " in result.report() and result.empty() == ["de"]
    pushed = []
    monkeypatch.setattr(runner, "push_output", lambda *args, **kwargs: pushed.append(args) or "url")
    assert runner.push_to_hub(result, "me/corpus") == "url"  # one language kept something: published
    result.statistics["nl"]["kept"] = 0
    with pytest.raises(EmptyInputError, match=r"--push_to_hub me/corpus: the corpus is empty \(no sentence kept "
                                              r"for de, nl\): nothing is published"):
        runner.push_to_hub(result, "me/corpus")
    assert len(pushed) == 1


def test_translate_align_refuses_an_input_without_parses_and_names_a_missing_model(tmp_path, capsys):
    parses = tmp_path / "en.tsv"
    parses.write_text("parse\n", encoding="utf-8")
    output = tmp_path / "out"
    code, err = run(["translate-align", "--input", str(parses), "--output_dir", str(output), "--tgt_lang", "es",
                     "--mt_model", "./no-such-mt", "--no_show_progress"], capsys)
    assert code == 1 and f"--input: no English parses in {parses} (split 'train')" in one_line(err, "translate-align")
    parses.write_text("parse\n[IN:GET_WEATHER weather in [SL:LOCATION Paris ] ]\n", encoding="utf-8")
    code, err = run(["translate-align", "--input", str(parses), "--output_dir", str(output), "--tgt_lang", "es",
                     "--mt_model", "./no-such-mt", "--no_show_progress"], capsys)
    assert code == 1
    assert "no model folder at ./no-such-mt (translation model (--mt_model))" in one_line(err, "translate-align")
    assert files_under(output) == []
