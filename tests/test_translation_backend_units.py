"""The CTranslate2 backend's own logic with stand-in engines (no conversion, fast): how ``generate`` options
become CTranslate2 options, sub-batching, the output layout, the engine race and its log, the CPU's matrix
library. tests/test_translation_backends.py checks the real engines against each other."""

from __future__ import annotations

import logging
import platform
from types import SimpleNamespace

import pytest
import torch
from transformers import GenerationConfig

from crop_hf.translation import backends
from crop_hf.translation.backends import CTranslate2Backend, _engine_label, cpu_gemm_library


def bare_backend(generation_config: GenerationConfig | None = None, **attributes) -> CTranslate2Backend:
    """A CTranslate2Backend without a converted model: only what the tested method reads."""
    backend = object.__new__(CTranslate2Backend)
    backend.generation_config = generation_config or GenerationConfig()
    backend._warned = set()
    backend.__dict__.update(attributes)
    return backend


def test_generate_options_become_ctranslate2_options():
    backend = bare_backend(GenerationConfig(num_beams=4, early_stopping=True, max_length=50, length_penalty=0.5))
    assert backend._options({}) == {
        "beam_size": 4, "num_hypotheses": 1, "max_decoding_length": 49, "min_decoding_length": 0,
        "length_penalty": 0.5, "repetition_penalty": 1.0, "no_repeat_ngram_size": 0, "max_input_length": 0,
        "return_end_token": True, "_forced_bos": None}
    # the call's options win over the model's; a generation_config passed in the call wins over the model's too
    call = {"num_return_sequences": 2, "max_new_tokens": 7, "min_new_tokens": 2, "repetition_penalty": 1.3,
            "no_repeat_ngram_size": 3, "forced_bos_token_id": 11,
            "generation_config": GenerationConfig(num_beams=3, length_penalty=2.0, early_stopping=True)}
    assert backend._options(call) == {
        "beam_size": 3, "num_hypotheses": 2, "max_decoding_length": 7, "min_decoding_length": 2,
        "length_penalty": 2.0, "repetition_penalty": 1.3, "no_repeat_ngram_size": 3, "max_input_length": 0,
        "return_end_token": True, "_forced_bos": 11}
    assert backend._options({"generation_config": None, "max_new_tokens": 3})["max_decoding_length"] == 3
    # no length given anywhere: generate's default max_length of 20, less the decoder start token
    assert bare_backend()._options({})["max_decoding_length"] == 19


def test_sampling_options_and_what_cannot_run():
    backend = bare_backend()
    sampled = backend._options({"do_sample": True, "top_k": 5, "top_p": 0.9, "temperature": 0.7})
    assert (sampled["sampling_topk"], sampled["sampling_topp"], sampled["sampling_temperature"]) == (5, 0.9, 0.7)
    default = backend._options({"do_sample": True, "top_k": None})
    # GenerationConfig's own defaults (top_k 50, top_p 1.0, temperature 1.0) unless the call sets them
    assert (default["sampling_topk"], default["sampling_topp"], default["sampling_temperature"]) == (0, 1.0, 1.0)
    assert "sampling_topk" not in backend._options({"do_sample": False})
    with pytest.raises(ValueError, match=r"cannot run the generate option\(s\) \['bad_words_ids'\]"):
        backend._options({"bad_words_ids": [[1]]})


def test_beam_search_without_early_stopping_warns_once_with_the_setting(caplog):
    backend = bare_backend(GenerationConfig(num_beams=2))
    message = ("CTranslate2's beam search stops once num_beams hypotheses are finished (generate's "
               "early_stopping=True); this model's setting is early_stopping=%s, so the beams may differ from the "
               "transformers backend")
    with caplog.at_level(logging.WARNING, logger="crop_hf.translation.backends"):
        backend._options({"early_stopping": True})  # no warning
        backend._options({"num_beams": 1})  # greedy: no warning
        assert caplog.messages == []
        backend._options({"early_stopping": "never"})
        backend._options({})
    assert caplog.messages == [message % "'never'"]
    assert backend._warned == {"early_stopping"}
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="crop_hf.translation.backends"):
        bare_backend(GenerationConfig(num_beams=2))._options({"early_stopping": False})
    assert caplog.messages == [message % "False"]


class FakeTranslator:
    """Stands in for ``ctranslate2.Translator``: hypotheses named after the source, options recorded."""

    def __init__(self, hypotheses_per_sentence: int = 1) -> None:
        self.calls = []
        self.n = hypotheses_per_sentence

    def translate_batch(self, source, target_prefix=None, **options):
        self.calls.append({"source": source, "target_prefix": target_prefix, **options})
        return [SimpleNamespace(hypotheses=[[*tokens[: k + 1], "</s>"] for k in range(self.n)]) for tokens in source]


def translating_backend(**attributes):
    vocabulary = ["<pad>", "</s>", "<s>", "a", "b", "c", "__de__"]
    defaults = {"translator": FakeTranslator(), "vocabulary": vocabulary,
                "index": {token: i for i, token in enumerate(vocabulary)}, "decoder_start_token_id": 2,
                "pad_token_id": 0, "max_batch_size": None, "max_batch_rows": 0, "race_engines": False, "winners": {},
                "compute_type": "float32"}
    return bare_backend(GenerationConfig(early_stopping=True), **{**defaults, **attributes})


def test_translate_lays_hypotheses_out_as_generate_does_with_sub_batches():
    backend = translating_backend(translator=FakeTranslator(2))
    inputs = {"input_ids": torch.tensor([[3, 4, 1], [5, 1, 0]]), "attention_mask": torch.tensor([[1, 1, 1], [1, 1, 0]])}
    out = backend.generate(inputs, {"num_beams": 2, "num_return_sequences": 2, "forced_bos_token_id": 6,
                                    "max_new_tokens": 5})
    assert out.dtype == torch.long and out.tolist() == [[2, 3, 1, 0], [2, 3, 4, 1], [2, 5, 1, 0], [2, 5, 1, 1]]
    call = backend.translator.calls[-1]
    assert call["source"] == [["a", "b", "</s>"], ["c", "</s>"]]  # padding left out
    assert call["target_prefix"] == [["__de__"], ["__de__"]] and "max_batch_size" not in call
    backend.generate({"input_ids": torch.tensor([[3, 1]])}, {"max_new_tokens": 5})  # no mask: every token
    assert backend.translator.calls[-1]["source"] == [["a", "</s>"]]
    assert backend.translator.calls[-1]["target_prefix"] is None
    rows = translating_backend(max_batch_rows=8)
    rows.generate(inputs, {"num_beams": 8, "max_new_tokens": 5, "early_stopping": True})
    assert rows.translator.calls[-1]["max_batch_size"] == 1  # 8 rows of 8 beams: one sentence at a time
    rows.generate(inputs, {"num_beams": 2, "max_new_tokens": 5})
    assert rows.translator.calls[-1]["max_batch_size"] == 4
    rows.generate(inputs, {"num_beams": 16, "max_new_tokens": 5, "early_stopping": True})
    assert rows.translator.calls[-1]["max_batch_size"] == 1  # never below one sentence
    sized = translating_backend(max_batch_size=3, max_batch_rows=8)  # a sentence count wins over rows
    sized.generate(inputs, {"max_new_tokens": 5})
    assert sized.translator.calls[-1]["max_batch_size"] == 3


def _racing(monkeypatch, durations, **attributes):
    """A racing backend whose engines take ``durations[name]`` seconds on a fake clock."""
    clock = [0.0]
    monkeypatch.setattr("time.perf_counter", lambda: clock[0])
    backend = translating_backend(race_engines=True, **attributes)
    translate = backend.translator.translate_batch

    def timed_translate(source, **options):
        clock[0] += durations[options.get("max_batch_size", 0) and 8]
        return translate(source, **options)

    def generate(**kwargs):
        clock[0] += durations["generate"]
        backend.generate_calls.append(kwargs)
        return torch.tensor([[2, 5, 5, 1]] * len(kwargs["input_ids"]))

    backend.generate_calls = []

    backend.translator.translate_batch = timed_translate
    backend.model = SimpleNamespace(generate=generate)
    return backend


def test_the_race_tries_whole_batches_sub_batches_below_the_rows_and_generate(monkeypatch, caplog):
    backend = _racing(monkeypatch, {0: 3.0, 8: 1.0, "generate": 2.0})
    eight = {"input_ids": torch.tensor([[3, 1]] * 8)}
    with caplog.at_level(logging.INFO, logger="crop_hf.translation.backends"):
        out = backend.generate(eight, {"max_new_tokens": 4})
    # 8 sentences x 1 beam = 8 rows: sub-batches of 8 rows would be the whole batch, so they are not tried
    assert [c.get("max_batch_size") for c in backend.translator.calls] == [None]
    assert backend.winners == {(1, 1, 3): "generate"} and out.tolist() == [[2, 5, 5, 1]] * 8
    assert caplog.messages == ["float32 CTranslate2 raced generate on 8 sentence(s) × 1 beam(s): CTranslate2 (whole "
                               "batches) 3.00 s, transformers' generate 2.00 s; batches like it run with "
                               "transformers' generate"]
    nine = {"input_ids": torch.tensor([[3, 1]] * 9)}
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="crop_hf.translation.backends"):
        out = backend.generate(nine, {"max_new_tokens": 4})
    assert [c.get("max_batch_size") for c in backend.translator.calls[1:]] == [None, 8]
    assert backend.winners[(1, 1, 4)] == 8 and out.tolist() == [[2, 3, 1]] * 9
    assert caplog.messages[0].endswith("CTranslate2 (whole batches) 3.00 s, CTranslate2 in sub-batches of 8 rows "
                                       "1.00 s, transformers' generate 2.00 s; batches like it run with CTranslate2 in "
                                       "sub-batches of 8 rows")
    backend.generate(nine, {"max_new_tokens": 4, "forced_bos_token_id": 6})  # decided: no race, the winner runs
    assert [c.get("max_batch_size") for c in backend.translator.calls[3:]] == [8]
    assert backend.translator.calls[-1]["target_prefix"] == [["__de__"]] * 9
    assert backend.generate(eight, {"max_new_tokens": 4}).tolist() == [[2, 5, 5, 1]] * 8  # decided: generate
    assert len(backend.translator.calls) == 4 and backend.generate_calls[-1]["max_new_tokens"] == 4


def test_the_race_tries_only_the_given_sub_batching(monkeypatch):
    nine = {"input_ids": torch.tensor([[3, 1]] * 9)}
    sized = _racing(monkeypatch, {0: 1.0, 8: 1.0, "generate": 2.0}, max_batch_size=2)
    sized.generate(nine, {"max_new_tokens": 4})
    assert [c.get("max_batch_size") for c in sized.translator.calls] == [2]  # max_batch_rows 0, max_batch_size 2
    rows = _racing(monkeypatch, {0: 1.0, 8: 1.0, "generate": 2.0}, max_batch_rows=3)
    rows.generate(nine, {"max_new_tokens": 4})
    assert [c.get("max_batch_size") for c in rows.translator.calls] == [3]


def test_engine_labels():
    assert _engine_label("generate") == "transformers' generate"
    assert _engine_label(0) == "CTranslate2 (whole batches)"
    assert _engine_label(8) == "CTranslate2 in sub-batches of 8 rows"


@pytest.mark.parametrize("machine", ["i686", "x86", "X86_64"])
def test_cpu_gemm_library_on_every_x86_name(tmp_path, monkeypatch, machine):
    monkeypatch.setattr(platform, "machine", lambda: machine)
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("vendor_id\t: AuthenticAMD\n", encoding="utf-8")
    assert cpu_gemm_library({}, cpuinfo) == "onednn"


@pytest.mark.parametrize(("value", "expected"), [("yes", "mkl"), ("ON", "mkl"), ("True", "mkl"), ("no", "onednn"),
                                                  ("2", "onednn")])
def test_cpu_gemm_library_reads_ct2_use_mkl_as_a_boolean(tmp_path, monkeypatch, value, expected):
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    assert cpu_gemm_library({"CT2_USE_MKL": value}, tmp_path / "missing") == expected


def test_cpu_gemm_library_parses_cpuinfo_lines(tmp_path, monkeypatch):
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(platform, "processor", lambda: "GenuineIntel")  # used only when cpuinfo cannot be read
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_bytes(b"model name\t: caf\xe9\nvendor_id:GenuineIntel\n")  # not UTF-8; no space around the colon
    assert cpu_gemm_library({}, cpuinfo) == "mkl"
    cpuinfo.write_text("vendor_id\t: GenuineIntel: AuthenticAMD\n", encoding="utf-8")  # a colon in the value
    assert cpu_gemm_library({}, cpuinfo) == "mkl"
    cpuinfo.write_text("processor\t: 0\n", encoding="utf-8")  # no vendor line: not Intel
    assert cpu_gemm_library({}, cpuinfo) == "onednn"


def test_cpu_defaults_and_race_candidates():
    assert backends.CPU_DEFAULTS == {"inter_threads": 1} and backends.RACE_BATCH_ROWS == (0, 8)


def test_compute_types_default_per_device_and_unknown_ones_are_refused():
    from crop_hf.translation.backends import resolve_compute_type

    for default in (None, "default", "auto"):
        assert resolve_compute_type(default, "cpu") == "float32"
        assert resolve_compute_type(default, "cuda:1") == "float16"
    assert resolve_compute_type("int8", "cpu") == "int8" and resolve_compute_type("bfloat16", "cuda") == "bfloat16"
    with pytest.raises(ValueError, match=r"^compute_type 'float16' is not available on cpu; use one of float32, int8, "
                                         r"int8_float32$"):
        resolve_compute_type("float16", "cpu")
    with pytest.raises(ValueError, match=r"^compute_type 'int16' is not available on cuda; use one of float16, "
                                         r"int8_float16, float32, int8, bfloat16, int8_bfloat16$"):
        resolve_compute_type("int16", "cuda")


class _Vocab:
    def __init__(self, vocab):
        self.vocab = vocab

    def get_vocab(self):
        return dict(self.vocab)


def _with_rows(rows):
    weight = SimpleNamespace(shape=(rows, 4))
    return SimpleNamespace(get_input_embeddings=lambda: SimpleNamespace(weight=weight))


def test_tokens_beyond_the_embedding_rows_are_named():
    from crop_hf.translation.backends import check_embeddings_cover_vocabulary

    vocab = {"a": 0, "b": 1, "__SLOT3__": 7, "__SLOT0__": 4, "__SLOT1__": 5, "__SLOT2__": 6}
    check_embeddings_cover_vocabulary(_with_rows(8), _Vocab(vocab))  # every id has a row
    with pytest.raises(ValueError) as info:
        check_embeddings_cover_vocabulary(_with_rows(4), _Vocab(vocab))
    assert str(info.value) == (
        "the tokenizer has 4 token(s) with ids beyond the model's 4 embedding rows ('__SLOT0__', '__SLOT1__', "
        "'__SLOT2__' ...): they were added to the tokenizer without resizing the model. Call "
        "model.resize_token_embeddings(len(tokenizer)) and fine-tune on marked text before translating.")
    with pytest.raises(ValueError, match=r"^the tokenizer has 1 token\(s\) with ids beyond the model's 7 embedding rows "
                                         r"\('__SLOT3__' \.\.\.\)"):
        check_embeddings_cover_vocabulary(_with_rows(7), _Vocab(vocab))


def test_vocabulary_by_id_fills_unused_rows_with_unique_placeholders():
    from crop_hf.translation.backends import _vocabulary_by_id

    vocab = {"<s>": 0, "madeupword0": 2, "x": 3, "madeupword2": 6}
    assert _vocabulary_by_id(_Vocab(vocab), 8) == ["<s>", "madeupword1", "madeupword0", "x", "madeupword3",
                                                   "madeupword4", "madeupword2", "madeupword5"]
    assert _vocabulary_by_id(_Vocab(vocab), 2) == ["<s>", "madeupword1"]
    assert _vocabulary_by_id(_Vocab({"<s>": 0}), 3) == ["<s>", "madeupword0", "madeupword1"]


def test_converted_vocabulary_files_and_a_folder_without_them(tmp_path):
    import json

    from crop_hf.translation.backends import _vocabulary

    (tmp_path / "target_vocabulary.json").write_text(json.dumps(["a", "é"]), encoding="utf-8")
    assert _vocabulary(tmp_path) == ["a", "é"]
    (tmp_path / "shared_vocabulary.json").write_text(json.dumps(["s"]), encoding="utf-8")
    assert _vocabulary(tmp_path) == ["s"]  # the shared one first
    with pytest.raises(ValueError, match=r"^.*empty is not a converted CTranslate2 translation model \(no "
                                         r"shared_vocabulary\.json\); pass the Hugging Face checkpoint to convert "
                                         r"instead$"):
        _vocabulary(tmp_path / "empty")


def test_a_converted_vocabulary_must_match_the_tokenizer_id_for_id(tmp_path):
    backend = bare_backend(vocabulary=["<s>", "a", "b"], path=tmp_path)
    backend._check_vocabulary(_Vocab({"<s>": 0, "a": 1, "b": 2}))
    backend._check_vocabulary(_Vocab({"<s>": 0, "a": 1}))  # unused rows are fine
    with pytest.raises(ValueError) as info:
        backend._check_vocabulary(_Vocab({"<s>": 0, "b": 1, "a": 2, "c": 3}))
    assert str(info.value) == (
        f"the CTranslate2 model at {tmp_path} does not match the tokenizer: 3 token(s) differ, e.g. id 1 is 'b' for "
        "the tokenizer but 'a' there. Convert the checkpoint with the same tokenizer (markers included) or leave "
        "converted_model unset to convert it here.")
    with pytest.raises(ValueError, match=r"e\.g\. id 3 is 'c' for the tokenizer but 'nothing \(vocabulary too small\)' "
                                         r"there"):
        backend._check_vocabulary(_Vocab({"<s>": 0, "a": 1, "b": 2, "c": 3}))


def test_make_backend_names_and_options():
    from crop_hf.translation.backends import TransformersBackend, make_backend

    model = SimpleNamespace(generate=lambda **kwargs: kwargs)
    backend = make_backend(None, model, None, compute_type=None)  # None options are left out
    assert isinstance(backend, TransformersBackend) and backend.name == "transformers" and backend.model is model
    assert backend.generate({"input_ids": 1}, {"num_beams": 2}) == {"input_ids": 1, "num_beams": 2}
    assert isinstance(make_backend("transformers", model, None), TransformersBackend)
    with pytest.raises(TypeError, match=r"^the transformers backend takes no options, got \['a', 'b'\]$"):
        make_backend("transformers", model, None, b=1, a=2)
    with pytest.raises(ValueError, match=r"^unknown backend 'onnx': expected one of transformers, ctranslate2$"):
        make_backend("onnx", model, None)


def test_default_cache_dir_follows_crop_hf_cache_then_hf_home(monkeypatch, tmp_path):
    from pathlib import Path

    from huggingface_hub import constants

    from crop_hf.translation.backends import default_cache_dir

    monkeypatch.setenv("CROP_HF_CACHE", str(tmp_path / "mine"))
    assert default_cache_dir() == tmp_path / "mine" / "ctranslate2"
    monkeypatch.setenv("CROP_HF_CACHE", "")
    monkeypatch.setattr(constants, "HF_HOME", str(tmp_path / "hf"))
    assert default_cache_dir() == Path(tmp_path / "hf") / "crop_hf" / "ctranslate2"


def test_conversion_key_names_the_model_and_follows_weights_vocabulary_and_compute_type():
    pytest.importorskip("ctranslate2")
    from crop_hf.translation.backends import conversion_key

    class Model(torch.nn.Module):
        def __init__(self, name="org/tiny-mt"):
            super().__init__()
            self.layer = torch.nn.Linear(3, 2)
            self.config = SimpleNamespace(to_dict=lambda: {"d_model": 3})
            self.name_or_path = name

    torch.manual_seed(0)
    model, tokenizer = Model(), _Vocab({"a": 0, "b": 1})
    key = conversion_key(model, tokenizer, "float32")
    name, compute_type, digest = key.rsplit("-", 2)
    assert (name, compute_type, len(digest)) == ("tiny-mt", "float32", 16) and int(digest, 16) >= 0
    assert conversion_key(model, tokenizer, "float32") == key
    assert conversion_key(model, tokenizer, "int8").startswith("tiny-mt-int8-")
    assert conversion_key(model, _Vocab({"a": 0, "b": 1, "__SLOT0__": 2}), "float32") != key
    with torch.no_grad():
        model.layer.weight[1, 2] += 0.5  # one weight: fine-tuned in memory
    assert conversion_key(model, tokenizer, "float32") != key
    assert conversion_key(Model(""), tokenizer, "float32").startswith("model-float32-")



def test_conversion_key_is_stable_under_config_order_and_follows_config_and_first_values():
    pytest.importorskip("ctranslate2")
    from crop_hf.translation.backends import conversion_key

    class Model(torch.nn.Module):
        def __init__(self, config):
            super().__init__()
            self.layer = torch.nn.Linear(5, 2)  # 10 weights
            self.config = SimpleNamespace(to_dict=lambda: dict(config))

    torch.manual_seed(0)
    tokenizer = _Vocab({"a": 0})
    model = Model({"d_model": 3, "torch_dtype": torch.float32})  # a value json cannot write: written as str
    key = conversion_key(model, tokenizer, "float32")
    assert key.startswith("model-float32-")  # no name_or_path: "model"
    reordered = Model({"torch_dtype": torch.float32, "d_model": 3})
    reordered.load_state_dict(model.state_dict())
    assert conversion_key(reordered, tokenizer, "float32") == key
    other_config = Model({"d_model": 4, "torch_dtype": torch.float32})
    other_config.load_state_dict(model.state_dict())
    assert conversion_key(other_config, tokenizer, "float32") != key
    with torch.no_grad():  # two of the first eight values swapped: the same sum, other first values
        weight = model.layer.weight.view(-1)
        weight[[0, 1]] = weight[[1, 0]].clone()
    swapped = conversion_key(model, tokenizer, "float32")
    assert swapped != key
    with torch.no_grad():  # values 9 and 10 swapped: the same sum and first eight values, so the same key
        weight[[8, 9]] = weight[[9, 8]].clone()
    assert conversion_key(model, tokenizer, "float32") == swapped
    for name, expected in (("/", "model"), ("models/opus-mt", "opus-mt")):
        model.name_or_path = name
        assert conversion_key(model, tokenizer, "float32").startswith(f"{expected}-float32-")


@pytest.fixture(scope="module")
def tiny_pair(tiny_m2m100):
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    return AutoModelForSeq2SeqLM.from_pretrained(tiny_m2m100), AutoTokenizer.from_pretrained(tiny_m2m100)


def test_conversion_writes_its_record_beside_the_model_atomically(tiny_pair, tmp_path, monkeypatch):
    import json
    import tempfile

    pytest.importorskip("ctranslate2")
    import ctranslate2

    from crop_hf.translation.backends import convert_checkpoint

    model, tokenizer = tiny_pair
    made = []
    real = tempfile.TemporaryDirectory

    def recording(*args, **kwargs):
        made.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(tempfile, "TemporaryDirectory", recording)
    out = convert_checkpoint(model, tokenizer, str(tmp_path / "deep" / "float"))
    assert out == tmp_path / "deep" / "float" and (out / "model.bin").is_file()
    assert made == [{"dir": tmp_path / "deep", "prefix": ".convert-"}]  # beside the target: one rename, same disk
    assert sorted(p.name for p in (tmp_path / "deep").iterdir()) == ["float"]  # no temporary folder left
    record = (out / "crop_hf_conversion.json").read_text(encoding="utf-8")
    assert record == json.dumps({"source": str(model.name_or_path), "compute_type": "float32",
                                 "ctranslate2": ctranslate2.__version__, "vocabulary_size": len(tokenizer)}, indent=2)
    small = convert_checkpoint(model, tokenizer, tmp_path / "deep" / "int8", compute_type="int8")
    assert json.loads((small / "crop_hf_conversion.json").read_text())["compute_type"] == "int8"
    assert (small / "model.bin").stat().st_size < 0.6 * (out / "model.bin").stat().st_size  # quantized


def test_a_conversion_another_process_finished_first_is_kept(tiny_pair, tmp_path):
    pytest.importorskip("ctranslate2")
    from crop_hf.translation.backends import convert_checkpoint

    model, tokenizer = tiny_pair
    done = tmp_path / "done"
    done.mkdir()
    (done / "model.bin").write_bytes(b"theirs")
    (done / "config.json").write_text("{}")
    assert convert_checkpoint(model, tokenizer, done) == done
    assert (done / "model.bin").read_bytes() == b"theirs"  # not replaced
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "other.txt").write_text("not a conversion")
    with pytest.raises(OSError):  # a folder in the way that holds no model: an error, not a silent success
        convert_checkpoint(model, tokenizer, busy)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["busy", "done"]  # no temporary folder left either way


def test_backend_device_cache_log_and_compute_type(tiny_m2m100, tmp_path, caplog):
    import json

    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    pytest.importorskip("ctranslate2")
    def load():
        return AutoModelForSeq2SeqLM.from_pretrained(tiny_m2m100), AutoTokenizer.from_pretrained(tiny_m2m100)

    model, tokenizer = load()
    with pytest.raises(ValueError, match=r"^CTranslate2 runs on cpu or cuda, not 'tpu'$"):
        CTranslate2Backend(model, tokenizer, device="tpu", cache_dir=tmp_path, release_model=False)
    with caplog.at_level(logging.INFO, logger="crop_hf.translation.backends"):
        first = CTranslate2Backend(model, tokenizer, device="cpu:0", compute_type="int8", cache_dir=tmp_path,
                                   release_model=False)
    assert caplog.messages == [f"converting {model.name_or_path} to CTranslate2 (int8) at {first.path}"]
    assert json.loads((first.path / "crop_hf_conversion.json").read_text())["compute_type"] == "int8"
    assert first.translator.device == "cpu" and first.translator.compute_type.startswith("int8")
    caplog.clear()
    # the same checkpoint loaded again (CTranslate2's converter adds settings to the converted model's config)
    model, tokenizer = load()
    with caplog.at_level(logging.INFO, logger="crop_hf.translation.backends"):
        again = CTranslate2Backend(model, tokenizer, compute_type="int8", cache_dir=tmp_path, release_model=False)
    assert caplog.messages == [f"using the CTranslate2 conversion cached at {first.path}"] and again.path == first.path
    assert model.device.type == "cpu"  # release_model=False keeps the weights


def test_the_translator_gets_the_device_index_compute_type_and_threads_asked_for(tiny_pair, tmp_path, monkeypatch):
    ctranslate2 = pytest.importorskip("ctranslate2")
    made = []

    class Recording:
        def __init__(self, path, **options):
            made.append((path, options))

    monkeypatch.setattr(ctranslate2, "Translator", Recording)
    model, tokenizer = tiny_pair
    model.config.pad_token_id = None  # the tokenizer's pad id stands in
    backend = CTranslate2Backend(model, tokenizer, device="cpu", compute_type="int8", cache_dir=tmp_path,
                                 intra_threads=3, inter_threads=2, release_model=False)
    assert made[-1] == (str(backend.path), {"device": "cpu", "device_index": 0, "compute_type": "int8",
                                            "intra_threads": 3, "inter_threads": 2})
    assert backend.pad_token_id == tokenizer.pad_token_id and backend.eos_token_id == model.config.eos_token_id
    assert backend.race_engines is False and model.device.type == "cpu"
    with pytest.raises(ValueError, match=r"^race_engines times the Hugging Face model's generate too: it needs the "
                                         r"model's weights \(pass a loaded model and leave release_model unset\)$"):
        CTranslate2Backend(model, tokenizer, compute_type="int8", cache_dir=tmp_path, race_engines=True,
                           release_model=True)
    model.config.pad_token_id = 7  # the model's own pad id wins over the tokenizer's
    assert CTranslate2Backend(model, tokenizer, device="cpu", compute_type="int8", cache_dir=tmp_path,
                              release_model=False).pad_token_id == 7
    # a GPU is named by its index; the engine is only built, so no GPU is needed to check what it is given
    gpu = CTranslate2Backend(model, tokenizer, device="cuda:1", compute_type="int8", cache_dir=tmp_path,
                             intra_threads=0)
    assert made[-1][1] | {"intra_threads": None} == {"device": "cuda", "device_index": 1, "compute_type": "int8",
                                                     "intra_threads": None, "inter_threads": 1}
    assert gpu.race_engines is False and model.device.type == "meta"  # released: no race on a GPU
    # weights on the meta device cannot race generate: off by default even where it would be on
    monkeypatch.setattr(backends, "cpu_gemm_library", lambda: "onednn")
    meta = CTranslate2Backend(model, tokenizer, device="cpu", compute_type="float32", converted_model=gpu.path)
    assert meta.race_engines is False
    with pytest.raises(ValueError, match="race_engines times"):
        CTranslate2Backend(model, tokenizer, device="cpu", compute_type="float32", converted_model=gpu.path,
                           race_engines=True)
