"""The CTranslate2 backend of ``pipeline("labeled-translation")`` against Hugging Face ``generate``.

Parity needs hypotheses that end at different lengths, or the stopping rules are never exercised:
a random-weight model never emits end-of-sentence. So the model here is the tiny M2M100 trained
for a few seconds to copy marked sentences: it has learned to stop (roughly where the source
stops) and to emit markers, without having learned to copy well, so beams disagree.
"""

from __future__ import annotations

import logging
import random
import sys
from types import SimpleNamespace

import pytest

pytest.importorskip("ctranslate2")

WORDS = ["I", "live", "in", "Gothenburg", "and", "work", "for", "Volvo", "Angela", "Merkel", "visited", "Paris", "on", "Monday", "the", "old", "harbour"]
LABELS = ["LOC", "ORG", "PER"]


def make_records(count: int, seed: int = 0) -> list[dict]:
    """Sentences of 1 to 6 words, most with one or two labeled entities."""
    rng = random.Random(seed)
    records = []
    for _ in range(count):
        tokens = [rng.choice(WORDS) for _ in range(rng.randint(1, 6))]
        tags = ["O"] * len(tokens)
        for _ in range(rng.randint(0, 2)):
            start = rng.randrange(len(tokens))
            end = min(len(tokens), start + rng.randint(1, 2))
            if all(tag == "O" for tag in tags[max(0, start - 1):end + 1]):
                label = rng.choice(LABELS)
                tags[start:end] = [f"B-{label}"] + [f"I-{label}"] * (end - start - 1)
        records.append({"tokens": tokens, "ner_tags": tags})
    return records


@pytest.fixture(scope="module")
def copy_model(tiny_m2m100, tmp_path_factory):
    """The tiny M2M100 after 200 steps of copying sentences, some marked (5-15 s on one CPU thread)."""
    import torch
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    from crop_hf.labels import tags_to_spans
    from crop_hf.markers import get_marker_style

    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(tiny_m2m100)
    model = AutoModelForSeq2SeqLM.from_pretrained(tiny_m2m100)
    tokenizer.src_lang, tokenizer.tgt_lang = "en", "de"
    style = get_marker_style("crop")
    # One sentence in four marked: trained on marked text only, the model collapses to repeating a marker.
    texts = [style.mark_tokens(r["tokens"], tags_to_spans(r["ner_tags"], "IOB2")).text if i % 4 == 0
             else " ".join(r["tokens"]) for i, r in enumerate(make_records(6400, 1))]
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.train()
    for step in range(200):
        batch = texts[step * 32:(step + 1) * 32]
        encoded = tokenizer(batch, text_target=batch, return_tensors="pt", padding=True)
        encoded["labels"][encoded["labels"] == tokenizer.pad_token_id] = -100
        model(**encoded).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model.eval()
    folder = tmp_path_factory.mktemp("copy-m2m100")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CROP_HF_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "ctranslate2"


def _translator(model, **kwargs):
    from transformers import pipeline

    import crop_hf  # noqa: F401

    return pipeline("labeled-translation", model=model if hasattr(model, "generate") else str(model), **kwargs)


GENERATION = {"src_lang": "en", "tgt_lang": "de", "max_new_tokens": 32, "batch_size": 16}


@pytest.mark.slow
@pytest.mark.parametrize("beams", [1, 4], ids=["greedy", "beam4"])
def test_ctranslate2_returns_exactly_the_transformers_outputs(copy_model, cache, beams):
    records = make_records(300)
    settings = {**GENERATION, "num_beams": beams, "num_return_sequences": beams}
    # M2M100's published generation config stops beam search early; the tiny one does not say.
    reference = _translator(copy_model, early_stopping=True)(records, **settings)
    fast = _translator(copy_model, early_stopping=True, backend="ctranslate2")
    outputs = fast(records, **settings)
    assert fast.backend.name == "ctranslate2"
    assert outputs == reference
    assert [o["source"] for o in outputs] == [" ".join(r["tokens"]) for r in records]
    # The stopping rules were exercised: some outputs ended before the length limit, some did not,
    # greedy search emitted markers, and beam search tried further hypotheses (the n-best fallback).
    lengths = [len(fast.tokenizer.tokenize(o["marked_translation"])) for o in outputs]
    assert min(lengths) < GENERATION["max_new_tokens"] - 2 and len({o["marked_translation"] for o in outputs}) > 5
    if beams == 1:
        assert any("__SLOT" in o["marked_translation"] for o in outputs)
    else:
        assert any(o["hypotheses_tried"] > 1 for o in outputs)


@pytest.mark.slow
def test_int8_gives_the_same_output_dict(copy_model, cache):
    records = make_records(40)
    outputs = _translator(copy_model, backend="ctranslate2", compute_type="int8")(records, **GENERATION, num_beams=2,
                                                                                   num_return_sequences=2)
    reference = _translator(copy_model)(records, **GENERATION, num_beams=2, num_return_sequences=2)
    assert [set(o) for o in outputs] == [set(r) for r in reference]
    assert [o["source"] for o in outputs] == [r["source"] for r in reference]


def test_conversion_is_cached_per_content_and_compute_type(tiny_m2m100, cache, monkeypatch):
    import torch

    from crop_hf.translation import backends

    # on oneDNN (AMD) float32 keeps the weights to race generate (test_float32_races_...): Intel's rule here
    monkeypatch.setattr(backends, "cpu_gemm_library", lambda: "mkl")
    first = _translator(tiny_m2m100, backend="ctranslate2")
    assert first.backend.path.parent == cache and (first.backend.path / "model.bin").is_file()
    assert first.model.device.type == "meta"  # the torch weights were released

    def no_conversion(*args, **kwargs):
        raise AssertionError("converted again although the cache holds this checkpoint")

    monkeypatch.setattr(backends, "convert_checkpoint", no_conversion)
    again = _translator(tiny_m2m100, backend="ctranslate2")
    assert again.backend.path == first.backend.path
    monkeypatch.undo()
    monkeypatch.setenv("CROP_HF_CACHE", str(cache.parent))

    quantized = _translator(tiny_m2m100, backend="ctranslate2", compute_type="int8")
    assert quantized.backend.path != first.backend.path
    changed = _translator(tiny_m2m100, backend="ctranslate2", backend_options={"release_model": False})
    with torch.no_grad():
        changed.model.get_input_embeddings().weight[5, 0] += 1.0
    key = backends.conversion_key(changed.model, changed.tokenizer, "float32")
    assert key != first.backend.path.name


def test_an_already_converted_folder_is_used_and_checked(tiny_m2m100, cache, tmp_path):
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    converted = _translator(tiny_m2m100, backend="ctranslate2").backend.path
    reused = _translator(tiny_m2m100, backend="ctranslate2", converted_model=str(converted))
    assert reused.backend.path == converted
    assert reused("Paris", src_lang="en", tgt_lang="de", max_new_tokens=4)["translation"]

    # The same checkpoint with one more token: the old conversion lacks it.
    tokenizer = AutoTokenizer.from_pretrained(tiny_m2m100)
    model = AutoModelForSeq2SeqLM.from_pretrained(tiny_m2m100)
    tokenizer.add_tokens(["__NEW__"])
    model.resize_token_embeddings(len(tokenizer) + tokenizer.num_madeup_words)
    with pytest.raises(ValueError, match=r"does not match the tokenizer.*__NEW__"):
        _translator(model, tokenizer=tokenizer, backend="ctranslate2", converted_model=str(converted))
    with pytest.raises(ValueError, match="not a converted CTranslate2 model"):
        _translator(tiny_m2m100, backend="ctranslate2", converted_model=str(tmp_path))


def test_markers_added_without_resizing_the_embeddings_are_refused(tiny_m2m100, cache, tmp_path):
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_m2m100)
    model = AutoModelForSeq2SeqLM.from_pretrained(tiny_m2m100)
    rows = model.get_input_embeddings().weight.shape[0]
    tokenizer.add_tokens([f"__MARK{i}__" for i in range(rows - len(tokenizer) + 3)])  # 3 beyond the last row
    tokenizer.save_pretrained(tmp_path)
    model.save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="without resizing the model"):
        _translator(tmp_path, backend="ctranslate2")


def test_a_token_added_within_the_spare_rows_converts_id_for_id(tiny_m2m100, cache):
    # M2M100 keeps spare embedding rows ("madeupword"s); a token added into them needs no resize,
    # and CTranslate2's own converter would then write one token more than there are rows.
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_m2m100)
    model = AutoModelForSeq2SeqLM.from_pretrained(tiny_m2m100)
    tokenizer.add_tokens(["__NEW__"])
    translator = _translator(model, tokenizer=tokenizer, backend="ctranslate2")
    assert translator.backend.vocabulary[tokenizer.convert_tokens_to_ids("__NEW__")] == "__NEW__"
    assert len(translator.backend.vocabulary) == model.config.vocab_size


def test_unsupported_generate_options_name_the_other_backend(tiny_m2m100, cache):
    from transformers import LogitsProcessorList

    translator = _translator(tiny_m2m100, backend="ctranslate2")
    with pytest.raises(ValueError, match=r"\['logits_processor'\].*backend='transformers'"):
        translator("Paris", src_lang="en", tgt_lang="de", max_new_tokens=4,
                   generate_kwargs={"logits_processor": LogitsProcessorList()})


def test_beam_search_without_early_stopping_warns(tiny_m2m100, cache, caplog):
    translator = _translator(tiny_m2m100, backend="ctranslate2")
    with caplog.at_level(logging.WARNING, logger="crop_hf.translation.backends"):
        translator(["Paris", "Volvo"], src_lang="en", tgt_lang="de", max_new_tokens=4, num_beams=2)
    assert "early_stopping" in caplog.text


def test_bad_backend_settings_are_clear_errors(tiny_m2m100, cache):
    with pytest.raises(ValueError, match="unknown backend 'onnx'"):
        _translator(tiny_m2m100, backend="onnx")
    with pytest.raises(ValueError, match="compute_type 'float16' is not available on cpu"):
        _translator(tiny_m2m100, backend="ctranslate2", compute_type="float16")
    with pytest.raises(TypeError, match="transformers backend takes no options"):
        _translator(tiny_m2m100, compute_type="int8")


def test_without_ctranslate2_the_error_says_how_to_install(tiny_m2m100, cache, monkeypatch):
    monkeypatch.setitem(sys.modules, "ctranslate2", None)
    with pytest.raises(ImportError, match=r"pip install 'crop-hf\[fast\]'"):
        _translator(tiny_m2m100, backend="ctranslate2")


def test_synthesis_builds_its_translator_with_the_backend(tiny_m2m100, tiny_xlmr_ner, cache, tmp_path):
    from crop_hf.synthesis import SynthesisConfig
    from crop_hf.synthesis.stages import SynthesisModels

    config = SynthesisConfig(tgt_langs=["de"], output_dir=str(tmp_path), mt_model=str(tiny_m2m100),
                             ner_model=str(tiny_xlmr_ner), backend="ctranslate2", compute_type="int8")
    models = SynthesisModels.load(config, device="cpu")
    assert models.translator.backend.name == "ctranslate2"
    assert models.translator.backend.compute_type == "int8"
    assert "backend" in config.result_arguments() and "compute_type" in config.result_arguments()


@pytest.mark.parametrize("library", ["onednn", "mkl", "other"])
def test_float32_races_generate_only_on_onednn_and_keeps_the_weights_only_then(tiny_m2m100, cache, monkeypatch,
                                                                               library):
    from crop_hf.translation import backends

    monkeypatch.setattr(backends, "cpu_gemm_library", lambda: library)
    full = _translator(tiny_m2m100, backend="ctranslate2")
    assert full.backend.race_engines is (library == "onednn")
    assert (full.backend.model.device.type == "meta") is (library != "onednn")  # released unless racing
    assert full.backend.max_batch_rows == 0
    int8 = _translator(tiny_m2m100, backend="ctranslate2", compute_type="int8")
    assert int8.backend.race_engines is False and int8.backend.model.device.type == "meta"
    released = _translator(tiny_m2m100, backend="ctranslate2", backend_options={"release_model": True})
    assert released.backend.race_engines is False
    given = _translator(tiny_m2m100, backend="ctranslate2", backend_options={"max_batch_rows": 3})
    assert given.backend.max_batch_rows == 3


def _slowed(function, seconds, when=lambda options: True):
    import time

    def slow(*args, **options):
        if when(options):
            time.sleep(seconds)
        return function(*args, **options)
    return slow


@pytest.mark.slow
def test_a_racing_backend_keeps_the_faster_engine_per_setting_and_says_so(tiny_m2m100, cache, monkeypatch, caplog):
    sentences = ["Paris is big", "Anna lives in Berlin", "Peter works at Siemens", "Rome", "Oslo and Bergen",
                 "Madrid", "the Elbe", "Hamburg is a port"]
    settings = {"src_lang": "en", "tgt_lang": "de", "max_new_tokens": 6}
    reference = _translator(tiny_m2m100, early_stopping=True)
    racing = _translator(tiny_m2m100, early_stopping=True, backend="ctranslate2",
                         backend_options={"race_engines": True})
    backend = racing.backend
    calls = []
    translate = backend.translator.translate_batch
    slow_ct2 = _slowed(translate, 0.5)
    monkeypatch.setattr(backend, "translator", SimpleNamespace(
        translate_batch=lambda source, **options: calls.append(options.get("max_batch_size")) or slow_ct2(source,
                                                                                                         **options)))
    with caplog.at_level(logging.INFO, logger="crop_hf.translation.backends"):
        greedy = racing(sentences[:2], batch_size=2, **settings)
    assert greedy == reference(sentences[:2], batch_size=2, **settings)
    assert backend.winners == {(1, 1, 1): "generate"} and calls == [None]  # 2 rows: no sub-batch to try
    assert "2 sentence(s) × 1 beam(s)" in caplog.text and "run with transformers' generate" in caplog.text
    racing(sentences[2:4], batch_size=2, **settings)
    assert calls == [None]  # decided: the same setting runs generate without racing again

    # A new setting races again; now generate is the slow one, and sub-batches of 8 rows are slower
    # than whole batches: 8 sentences × 2 beams = 16 rows, so both CTranslate2 splits run.
    monkeypatch.setattr(backend.model, "generate", _slowed(backend.model.generate, 1.0))
    slow_ct2_split = _slowed(translate, 0.5, when=lambda options: options.get("max_batch_size") is not None)
    monkeypatch.setattr(backend, "translator", SimpleNamespace(
        translate_batch=lambda source, **options: calls.append(options.get("max_batch_size"))
        or slow_ct2_split(source, **options)))
    beams = {**settings, "num_beams": 2, "num_return_sequences": 2}
    two = racing(sentences, batch_size=8, **beams)
    assert two == reference(sentences, batch_size=8, **beams)
    assert backend.winners[(2, 2, 3)] == 0 and calls == [None, None, 4]  # whole, then 8 rows = 4 sentences × 2
    racing(sentences, batch_size=8, **beams)
    assert calls == [None, None, 4, None]


def test_racing_needs_the_hugging_face_weights(tiny_m2m100, cache):
    with pytest.raises(ValueError, match="race_engines times the Hugging Face model's generate too"):
        _translator(tiny_m2m100, backend="ctranslate2", backend_options={"race_engines": True, "release_model": True})


@pytest.mark.parametrize(("vendor", "environ", "expected"), [
    ("GenuineIntel", {}, "mkl"),
    ("AuthenticAMD", {}, "onednn"),
    ("AuthenticAMD", {"CT2_USE_MKL": "1"}, "mkl"),
    ("AuthenticAMD", {"CT2_USE_MKL": "true"}, "mkl"),
    ("GenuineIntel", {"CT2_USE_MKL": "0"}, "onednn"),
    ("GenuineIntel", {"CT2_USE_MKL": "  "}, "mkl"),
])
def test_cpu_gemm_library_follows_ctranslate2s_rule(tmp_path, monkeypatch, vendor, environ, expected):
    import platform

    from crop_hf.translation.backends import cpu_gemm_library

    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nvendor_id\t: {vendor}\nmodel name\t: some CPU\n", encoding="utf-8")
    assert cpu_gemm_library(environ, cpuinfo) == expected


def test_cpu_gemm_library_off_x86_and_without_cpuinfo(tmp_path, monkeypatch):
    import platform

    from crop_hf.translation.backends import cpu_gemm_library

    monkeypatch.setattr(platform, "machine", lambda: "arm64")
    assert cpu_gemm_library({"CT2_USE_MKL": "1"}, tmp_path / "none") == "other"
    monkeypatch.setattr(platform, "machine", lambda: "AMD64")
    monkeypatch.setattr(platform, "processor", lambda: "Intel64 Family 6 Model 143 Stepping 8, GenuineIntel")
    assert cpu_gemm_library({}, tmp_path / "none") == "mkl"
    monkeypatch.setattr(platform, "processor", lambda: "AMD64 Family 25 Model 1 Stepping 1, AuthenticAMD")
    assert cpu_gemm_library({}, tmp_path / "none") == "onednn"


def test_converting_leaves_the_model_configuration_as_it_was_so_the_cache_is_found(tiny_m2m100, cache):
    import torch
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    from crop_hf.translation.backends import conversion_key, convert_checkpoint

    model, tokenizer = AutoModelForSeq2SeqLM.from_pretrained(tiny_m2m100), AutoTokenizer.from_pretrained(tiny_m2m100)
    before, key = model.config.to_dict(), conversion_key(model, tokenizer, "int8")
    weights = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    convert_checkpoint(model, tokenizer, cache / key, "int8")  # quantizing rewrote the weights in place
    assert model.config.to_dict() == before and model.model.config is model.config
    assert all(torch.equal(tensor, weights[name]) for name, tensor in model.state_dict().items())
    assert conversion_key(model, tokenizer, "int8") == key
