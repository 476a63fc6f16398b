"""Generation backends of ``pipeline("labeled-translation")``: Hugging Face ``generate`` or CTranslate2.

A backend turns a batch of encoded source sentences into generated token ids, in the layout
``model.generate`` returns (``batch × num_return_sequences`` rows, decoder start token first,
padded with the pad id), so everything after generation (decoding, marker extraction, the n-best
fallback) is the same for every backend. One row per backend in :data:`BACKENDS`:

==============  =========================================================================
backend         what runs
==============  =========================================================================
transformers    ``model.generate`` (any ``generate`` option, logits processors included)
ctranslate2     a ``ctranslate2.Translator`` converted from the same checkpoint, with its
                marker tokens (``pip install 'crop-hf[fast]'``); ``compute_type`` float32
                or int8 on CPU, float16 or int8_float16 on GPU
==============  =========================================================================

CTranslate2 returns exactly Hugging Face's tokens (``tests/test_translation_backends.py``) for

* greedy search, and
* beam search with Hugging Face's ``early_stopping=True`` (the search ends once ``num_beams``
  hypotheses have finished; CTranslate2 with ``patience=1``), the same ``length_penalty``
  (score = sum of log-probabilities / generated length ** length_penalty), and
* ``max_new_tokens`` counting the forced target-language token, as ``generate`` does
  (CTranslate2's ``max_decoding_length`` counts its target prefix the same way).

Beam search with ``early_stopping=False`` or ``"never"`` continues after that point in
``generate``; CTranslate2 has no such rule, so it logs a warning and stops early (the results may
differ). Options CTranslate2 cannot run (a ``logits_processor``, ``bad_words_ids``,
``prefix_allowed_tokens_fn``, constraints...) raise a ``ValueError`` naming them: use
``backend="transformers"`` for those.

The conversion (:func:`convert_checkpoint`) happens once per checkpoint content and compute type:
the converted model is kept under :func:`default_cache_dir` in a folder named by
:func:`conversion_key`; ``converted_model=PATH`` uses an already converted folder instead.

>>> sorted(BACKENDS)
['ctranslate2', 'transformers']
>>> resolve_compute_type(None, "cpu"), resolve_compute_type(None, "cuda")
('float32', 'float16')
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from crop_hf.hub import crop_hf_cache_dir
from crop_hf.registry import Registry

if TYPE_CHECKING:
    import torch

__all__ = [
    "BACKENDS",
    "CTranslate2Backend",
    "GenerationBackend",
    "TransformersBackend",
    "check_embeddings_cover_vocabulary",
    "conversion_key",
    "convert_checkpoint",
    "cpu_gemm_library",
    "default_cache_dir",
    "make_backend",
    "resolve_compute_type",
]

logger = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'crop-hf[fast]'  (or: pip install ctranslate2)"

#: Compute types offered per device; CTranslate2 may support more, these are the tested ones.
COMPUTE_TYPES: dict[str, tuple[str, ...]] = {
    "cpu": ("float32", "int8", "int8_float32"),
    "cuda": ("float16", "int8_float16", "float32", "int8", "bfloat16", "int8_bfloat16"),
}

#: Default CTranslate2 settings, chosen with benchmarks/bench_backends.py: all threads on one batch
#: (inter_threads=1) and intra_threads = torch's thread count, so both engines get the same cores.
CPU_DEFAULTS: dict[str, Any] = {"inter_threads": 1}

#: Sub-batch sizes (most decoding rows, sentences × beams, per CTranslate2 call; 0: whole batches)
#: that race against ``generate`` when a backend races its engines (:class:`CTranslate2Backend`'s
#: ``race_engines``, on by default for float32 on oneDNN CPUs): on oneDNN the faster engine depends
#: on the machine and the batch, so the backend measures instead of guessing. ``CT2_USE_MKL`` is never
#: set here (MKL on an AMD CPU slowed int8 down). Figures: docs/benchmarks/bench-backends.md.
RACE_BATCH_ROWS: tuple[int, ...] = (0, 8)


def cpu_gemm_library(environ: Mapping[str, str] | None = None, cpuinfo: str | Path = "/proc/cpuinfo") -> str:
    """The matrix-product library CTranslate2 uses on this CPU: ``"mkl"``, ``"onednn"`` or ``"other"``.

    CTranslate2's own rule, which it does not expose to Python: the environment variable
    ``CT2_USE_MKL`` decides when it is set; otherwise Intel MKL on Intel CPUs and oneDNN on other
    x86-64 CPUs (AMD). Non-x86 machines (ARM: Apple Accelerate, OpenBLAS or Ruy) give ``"other"``.

    >>> cpu_gemm_library({"CT2_USE_MKL": "1"}), cpu_gemm_library({"CT2_USE_MKL": "0"})
    ('mkl', 'onednn')
    """
    import platform

    environ = os.environ if environ is None else environ
    if platform.machine().lower() not in ("x86_64", "amd64", "i686", "x86"):
        return "other"
    forced = environ.get("CT2_USE_MKL", "").strip().lower()
    if forced:
        return "mkl" if forced in ("1", "true", "yes", "on") else "onednn"
    vendor = ""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as handle:
            vendor = next((line.split(":", 1)[1].strip() for line in handle if line.startswith("vendor_id")), "")
    except OSError:
        vendor = platform.processor()
    return "mkl" if "intel" in vendor.lower() else "onednn"

# generate() options that mean nothing to CTranslate2 because the converted model already carries
# them (special ids) or they only steer transformers' implementation.
_IGNORED = {
    "pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id", "use_cache", "transformers_version",
    "return_dict_in_generate", "output_scores", "output_attentions", "output_hidden_states", "cache_implementation",
    "output_logits", "max_length", "min_length", "forced_eos_token_id", "num_beam_groups", "diversity_penalty",
    "renormalize_logits", "remove_invalid_values", "is_assistant", "_from_model_config",
}
_SUPPORTED = {
    "num_beams", "num_return_sequences", "max_new_tokens", "min_new_tokens", "forced_bos_token_id",
    "length_penalty", "repetition_penalty", "no_repeat_ngram_size", "early_stopping", "do_sample", "top_k", "top_p",
    "temperature", "generation_config",
}


class GenerationBackend(Protocol):
    """What the pipeline needs from an engine: ``generate`` in ``model.generate``'s output layout."""

    name: str

    def generate(self, model_inputs: Mapping[str, torch.Tensor], generate_kwargs: Mapping[str, Any]) -> torch.Tensor:
        """Token ids ``(batch * num_return_sequences, length)``, decoder start token first, pad-filled."""
        ...


class TransformersBackend:
    """``model.generate``: the reference, and the only backend that runs logits processors."""

    name = "transformers"

    def __init__(self, model: Any, tokenizer: Any = None, **options: Any) -> None:
        if options:
            raise TypeError(f"the transformers backend takes no options, got {sorted(options)}")
        self.model = model

    def generate(self, model_inputs: Mapping[str, torch.Tensor], generate_kwargs: Mapping[str, Any]) -> torch.Tensor:
        return self.model.generate(**model_inputs, **generate_kwargs)


def _import_ctranslate2():
    try:
        import ctranslate2
    except ImportError as err:
        raise ImportError(f"backend='ctranslate2' needs the ctranslate2 package: {INSTALL_HINT}") from err
    return ctranslate2


def resolve_compute_type(compute_type: str | None, device: str) -> str:
    """The compute type to convert to: float32 on CPU and float16 on GPU unless one is given.

    float32 gives exactly the Hugging Face outputs; int8 is several times faster on CPU (see
    ``benchmarks/bench_backends.py``) at a small cost in quality.
    """
    kind = "cuda" if device.startswith("cuda") else "cpu"
    if compute_type in (None, "default", "auto"):
        return "float16" if kind == "cuda" else "float32"
    if compute_type not in COMPUTE_TYPES[kind]:
        raise ValueError(f"compute_type {compute_type!r} is not available on {kind}; use one of "
                         f"{', '.join(COMPUTE_TYPES[kind])}")
    return compute_type


def check_embeddings_cover_vocabulary(model: Any, tokenizer: Any) -> None:
    """Raise if the tokenizer has ids the model has no embedding rows for.

    That happens when tokens (boundary markers, typically) were added to a tokenizer and saved
    without ``model.resize_token_embeddings``: ``generate`` would fail with an index error and a
    CTranslate2 conversion would silently cut the vocabulary to the embedding size.
    """
    rows = model.get_input_embeddings().weight.shape[0]
    vocab = tokenizer.get_vocab()
    beyond = sorted((i, token) for token, i in vocab.items() if i >= rows)
    if beyond:
        examples = ", ".join(repr(token) for _, token in beyond[:3])
        raise ValueError(
            f"the tokenizer has {len(beyond)} token(s) with ids beyond the model's {rows} embedding rows "
            f"({examples} ...): they were added to the tokenizer without resizing the model. Call "
            f"model.resize_token_embeddings(len(tokenizer)) and fine-tune on marked text before translating."
        )


def default_cache_dir() -> Path:
    """``$CROP_HF_CACHE/ctranslate2``, or ``$HF_HOME/crop_hf/ctranslate2`` (:func:`crop_hf.hub.crop_hf_cache_dir`)."""
    return crop_hf_cache_dir() / "ctranslate2"


def conversion_key(model: Any, tokenizer: Any, compute_type: str) -> str:
    """A name for the converted model: changes with the weights, the vocabulary or the compute type.

    The checkpoint's content is summarized without reading files again: its configuration, every
    weight tensor's name, shape, sum and first values (so fine-tuning in memory or resizing the
    embeddings gives a new key), the tokenizer's vocabulary (markers added or not), the compute
    type and the ctranslate2 version. Hashing every byte of a 418M model would cost seconds on
    each start; the sums change whenever a weight does in practice.
    """
    import torch

    ctranslate2 = _import_ctranslate2()
    digest = hashlib.sha256()
    config = model.config.to_dict()
    digest.update(json.dumps(config, sort_keys=True, default=str).encode())
    with torch.no_grad():
        for name, tensor in model.state_dict().items():
            flat = tensor.detach().reshape(-1)
            head = flat[:8].double().tolist()
            digest.update(f"{name}:{tuple(tensor.shape)}:{flat.double().sum().item():.10e}:{head}".encode())
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda item: item[1])
    digest.update(json.dumps(vocab, ensure_ascii=False).encode())
    digest.update(f"{compute_type}:{ctranslate2.__version__}".encode())
    name = Path(str(getattr(model, "name_or_path", "") or "model")).name or "model"
    return f"{name}-{compute_type}-{digest.hexdigest()[:16]}"


def convert_checkpoint(model: Any, tokenizer: Any, output_dir: str | Path, compute_type: str = "float32") -> Path:
    """Convert an in-memory Hugging Face seq2seq model and its tokenizer to a CTranslate2 folder.

    The model and tokenizer are converted as they are in memory (markers added by the pipeline
    included), not reloaded from their checkpoint; the folder is written atomically.
    """
    ctranslate2 = _import_ctranslate2()
    from ctranslate2.converters import TransformersConverter

    check_embeddings_cover_vocabulary(model, tokenizer)
    output_dir = Path(output_dir)

    class _InMemoryConverter(TransformersConverter):
        # The converter reads the configuration from a folder, then asks for the model and the
        # tokenizer: hand it the objects in memory instead of loading the checkpoint again.
        def load_model(self, model_class, model_name_or_path, **kwargs):
            return model

        def load_tokenizer(self, tokenizer_class, model_name_or_path, **kwargs):
            return tokenizer

        def _load(self):
            spec = super()._load()
            # The converter rebuilds the vocabulary per family (M2M100 appends "madeupword"s after
            # every added token, giving more tokens than embedding rows once a marker was added
            # without resizing). The pipeline maps ids, so the vocabulary must be the tokenizer's
            # id order exactly: id i -> its token, unused rows -> placeholders.
            vocabularies = getattr(spec, "_vocabularies", None)
            if isinstance(vocabularies, dict) and {"source", "target"} <= vocabularies.keys():
                tokens = _vocabulary_by_id(tokenizer, model.get_input_embeddings().weight.shape[0])
                vocabularies["source"] = [tokens]
                vocabularies["target"] = [tokens]
            return spec

    output_dir.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=output_dir.parent, prefix=".convert-") as work:
        model.config.save_pretrained(Path(work) / "config")
        partial = Path(work) / "model"
        # The converter writes attributes of its own (normalize_before, ...) into model.config; put
        # the user's configuration back, or the next conversion_key of this model would differ.
        # (in place: the model's submodules hold the same configuration object). Quantizing (int8,
        # float16, ...) also rewrites the weights in place: keep a copy and put them back, so the
        # model still gives generate's outputs (and the same conversion key) afterwards.
        before = copy.deepcopy(vars(model.config))
        weights = None if compute_type == "float32" else {name: tensor.detach().clone()
                                                          for name, tensor in model.state_dict().items()}
        try:
            _InMemoryConverter(str(Path(work) / "config")).convert(str(partial), quantization=compute_type,
                                                                   force=True)
        finally:
            for name in set(vars(model.config)) - set(before):
                delattr(model.config, name)
            vars(model.config).update(before)
            if weights is not None:
                model.load_state_dict(weights)
        (partial / "crop_hf_conversion.json").write_text(json.dumps({
            "source": str(getattr(model, "name_or_path", "")), "compute_type": compute_type,
            "ctranslate2": ctranslate2.__version__, "vocabulary_size": len(tokenizer),
        }, indent=2), encoding="utf-8")
        try:
            os.replace(partial, output_dir)
        except OSError:
            if not (output_dir / "model.bin").is_file():  # not another process that finished first
                raise
    return output_dir


def _vocabulary_by_id(tokenizer: Any, rows: int) -> list[str]:
    """Token of every id below ``rows``; ids the tokenizer does not use get unique placeholders."""
    by_id: dict[int, str] = {i: token for token, i in tokenizer.get_vocab().items()}
    taken = set(by_id.values())
    tokens, filler = [], 0
    for i in range(rows):
        if i in by_id:
            tokens.append(by_id[i])
            continue
        while f"madeupword{filler}" in taken:
            filler += 1
        tokens.append(f"madeupword{filler}")
        filler += 1
    return tokens


def _vocabulary(folder: Path) -> list[str]:
    for name in ("shared_vocabulary.json", "target_vocabulary.json"):
        if (folder / name).is_file():
            return json.loads((folder / name).read_text(encoding="utf-8"))
    raise ValueError(f"{folder} is not a converted CTranslate2 translation model (no shared_vocabulary.json); "
                     f"pass the Hugging Face checkpoint to convert instead")


class CTranslate2Backend:
    """Generation with a ``ctranslate2.Translator`` converted from the pipeline's model.

    Args:
        model, tokenizer: the pipeline's Hugging Face model and tokenizer (markers added).
        compute_type: ``float32``/``int8`` on CPU, ``float16``/``int8_float16`` on GPU; default
            float32 on CPU (exactly Hugging Face's outputs), float16 on GPU.
        device: ``"cpu"``, ``"cuda"`` or ``"cuda:1"``; default: the model's device.
        converted_model: an already converted folder; its vocabulary must be the tokenizer's.
        cache_dir: where conversions are kept (default :func:`default_cache_dir`).
        intra_threads: threads per translation (0: CTranslate2's default of up to 4); default the
            number torch uses, so both engines get the same cores.
        inter_threads: batches translated in parallel (default 1).
        max_batch_size: split each batch into sub-batches of this many sentences (0: never);
            overrides ``max_batch_rows``.
        max_batch_rows: split each batch into sub-batches of at most this many decoding rows
            (sentences × ``num_beams``; 0, the default: never).
        race_engines: on the first batch of each decoding setting (beams, hypotheses, batch size
            up to the next power of two), time CTranslate2 (whole batches and sub-batches of
            :data:`RACE_BATCH_ROWS`, or the sub-batching given) against the Hugging Face model's
            ``generate``, keep the fastest for that setting and log which it is (:attr:`winners`).
            Every candidate gives a valid output, and float32 CTranslate2 gives ``generate``'s
            tokens. Default: on for float32 on a CPU whose matrix library is oneDNN
            (:func:`cpu_gemm_library`: AMD CPUs), where float32 CTranslate2 can be slower than
            ``generate`` and which setting wins differs by machine; off elsewhere. It keeps the
            Hugging Face weights in memory (about twice the memory of one engine).
        release_model: move the Hugging Face weights to the meta device after conversion (they
            are not used any more and a 418M model holds 1.7 GB); ``model.config`` and
            ``model.generation_config`` stay usable. Default: release unless ``race_engines``.
    """

    name = "ctranslate2"

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        compute_type: str | None = None,
        device: str | None = None,
        converted_model: str | Path | None = None,
        cache_dir: str | Path | None = None,
        intra_threads: int | None = None,
        inter_threads: int = CPU_DEFAULTS["inter_threads"],
        max_batch_size: int | None = None,
        max_batch_rows: int | None = None,
        race_engines: bool | None = None,
        release_model: bool | None = None,
    ) -> None:
        ctranslate2 = _import_ctranslate2()
        import torch

        self.model = model
        device = str(device if device is not None else model.device)
        ct2_device, _, index = device.partition(":")
        if ct2_device not in ("cpu", "cuda"):
            raise ValueError(f"CTranslate2 runs on cpu or cuda, not {device!r}")
        self.compute_type = resolve_compute_type(compute_type, ct2_device)
        check_embeddings_cover_vocabulary(model, tokenizer)
        if converted_model is not None:
            self.path = Path(converted_model)
            if not (self.path / "model.bin").is_file():
                raise ValueError(f"{self.path} has no model.bin: not a converted CTranslate2 model")
        else:
            self.path = Path(cache_dir or default_cache_dir()) / conversion_key(model, tokenizer, self.compute_type)
            if (self.path / "model.bin").is_file():
                logger.info("using the CTranslate2 conversion cached at %s", self.path)
            else:
                logger.info("converting %s to CTranslate2 (%s) at %s", getattr(model, "name_or_path", "the model"),
                            self.compute_type, self.path)
                convert_checkpoint(model, tokenizer, self.path, self.compute_type)
        self.vocabulary = _vocabulary(self.path)
        self._check_vocabulary(tokenizer)
        self.index = {token: i for i, token in enumerate(self.vocabulary)}
        self.translator = ctranslate2.Translator(
            str(self.path), device=ct2_device, device_index=int(index or 0), compute_type=self.compute_type,
            intra_threads=torch.get_num_threads() if intra_threads is None else intra_threads,
            inter_threads=inter_threads,
        )
        self.max_batch_size = max_batch_size
        self.max_batch_rows = max_batch_rows or 0
        has_weights = next(iter(model.parameters()), None) is not None and model.device.type != "meta"
        if race_engines is None:
            race_engines = (ct2_device == "cpu" and self.compute_type == "float32" and has_weights
                            and release_model is not True and cpu_gemm_library() == "onednn")
        if race_engines and (release_model or not has_weights):
            raise ValueError("race_engines times the Hugging Face model's generate too: it needs the model's "
                             "weights (pass a loaded model and leave release_model unset)")
        self.race_engines = race_engines
        #: per decoding setting raced so far, the engine that won: ``"generate"`` or the CTranslate2
        #: sub-batch rows (0: whole batches)
        self.winners: dict[tuple[int, int, int], str | int] = {}
        self.generation_config = model.generation_config
        self.decoder_start_token_id = model.config.decoder_start_token_id
        self.pad_token_id = model.config.pad_token_id if model.config.pad_token_id is not None else tokenizer.pad_token_id
        self.eos_token_id = model.config.eos_token_id
        self._warned: set[str] = set()
        if release_model if release_model is not None else not race_engines:
            model.to("meta")

    def _check_vocabulary(self, tokenizer: Any) -> None:
        """The converted vocabulary must give every tokenizer id the same token (markers included)."""
        wrong = [(token, i) for token, i in tokenizer.get_vocab().items()
                 if i >= len(self.vocabulary) or self.vocabulary[i] != token]
        if wrong:
            token, i = sorted(wrong, key=lambda item: item[1])[0]
            found = self.vocabulary[i] if i < len(self.vocabulary) else "nothing (vocabulary too small)"
            raise ValueError(
                f"the CTranslate2 model at {self.path} does not match the tokenizer: {len(wrong)} token(s) differ, "
                f"e.g. id {i} is {token!r} for the tokenizer but {found!r} there. Convert the checkpoint "
                f"with the same tokenizer (markers included) or leave converted_model unset to convert it here."
            )

    def _options(self, generate_kwargs: Mapping[str, Any]) -> dict[str, Any]:
        settings = self.generation_config.to_diff_dict()
        if generate_kwargs.get("generation_config") is not None:
            settings.update(generate_kwargs["generation_config"].to_diff_dict())
        settings.update({k: v for k, v in generate_kwargs.items() if k != "generation_config"})
        unknown = sorted(k for k, v in settings.items() if k not in _SUPPORTED | _IGNORED and v is not None)
        if unknown:
            raise ValueError(
                f"backend='ctranslate2' cannot run the generate option(s) {unknown} (CTranslate2 cannot apply "
                f"transformers logits processors or constraints); use backend='transformers' for them"
            )
        beams = int(settings.get("num_beams") or 1)
        max_new = settings.get("max_new_tokens")
        if max_new is None:  # generate's max_length counts the decoder start token
            max_new = int(settings.get("max_length") or 20) - 1
        options: dict[str, Any] = {
            "beam_size": beams,
            "num_hypotheses": int(settings.get("num_return_sequences") or 1),
            "max_decoding_length": int(max_new),
            "min_decoding_length": int(settings.get("min_new_tokens") or 0),
            "length_penalty": float(settings.get("length_penalty", 1.0)),
            "repetition_penalty": float(settings.get("repetition_penalty") or 1.0),
            "no_repeat_ngram_size": int(settings.get("no_repeat_ngram_size") or 0),
            "max_input_length": 0,  # generate does not cut inputs either
            "return_end_token": True,
        }
        if settings.get("do_sample"):
            options.update(sampling_topk=int(settings.get("top_k") or 0), sampling_topp=float(settings.get("top_p", 1.0)),
                           sampling_temperature=float(settings.get("temperature", 1.0)))
        elif beams > 1 and settings.get("early_stopping") is not True:
            self._warn_once("early_stopping", "CTranslate2's beam search stops once num_beams hypotheses are finished "
                            "(generate's early_stopping=True); this model's setting is early_stopping=%r, so the "
                            "beams may differ from the transformers backend", settings.get("early_stopping"))
        forced = settings.get("forced_bos_token_id")
        return options | {"_forced_bos": forced}

    def _warn_once(self, key: str, message: str, *args: Any) -> None:
        if key not in self._warned:
            self._warned.add(key)
            logger.warning(message, *args)

    def generate(self, model_inputs: Mapping[str, torch.Tensor], generate_kwargs: Mapping[str, Any]) -> torch.Tensor:
        options = self._options(generate_kwargs)
        forced = options.pop("_forced_bos")
        input_ids = model_inputs["input_ids"].tolist()
        mask = model_inputs.get("attention_mask")
        mask = mask.tolist() if mask is not None else [[1] * len(row) for row in input_ids]
        vocabulary = self.vocabulary
        source = [[vocabulary[i] for i, keep in zip(row, keep_row, strict=True) if keep]
                  for row, keep_row in zip(input_ids, mask, strict=True)]
        prefix = None if forced is None else [[vocabulary[int(forced)]]] * len(source)
        if self.race_engines:
            key = (options["beam_size"], options["num_hypotheses"], (len(source) - 1).bit_length())
            if key not in self.winners:
                return self._race(key, source, prefix, options, model_inputs, generate_kwargs)
            if self.winners[key] == "generate":
                return self.model.generate(**model_inputs, **generate_kwargs)
            return self._translate(source, prefix, options, int(self.winners[key]))
        return self._translate(source, prefix, options, self.max_batch_rows)

    def _translate(self, source: list[list[str]], prefix: Any, options: dict[str, Any], rows: int) -> torch.Tensor:
        import torch

        if self.max_batch_size is not None:
            options = {**options, "max_batch_size": self.max_batch_size}
        elif rows:
            options = {**options, "max_batch_size": max(1, rows // options["beam_size"])}
        results = self.translator.translate_batch(source, target_prefix=prefix, **options)
        rows_out = [[self.decoder_start_token_id, *(self.index[token] for token in hypothesis)]
                    for result in results for hypothesis in result.hypotheses]
        width = max(len(row) for row in rows_out)
        padded = [row + [self.pad_token_id] * (width - len(row)) for row in rows_out]
        return torch.tensor(padded, dtype=torch.long)

    def _race(self, key: tuple[int, int, int], source: list[list[str]], prefix: Any, options: dict[str, Any],
              model_inputs: Mapping[str, torch.Tensor], generate_kwargs: Mapping[str, Any]) -> torch.Tensor:
        import time

        rows = len(source) * options["beam_size"]
        splits = ([self.max_batch_rows] if self.max_batch_rows or self.max_batch_size is not None else
                  [limit for limit in RACE_BATCH_ROWS if limit == 0 or limit < rows])
        candidates: dict[str | int, Callable[[], torch.Tensor]] = {
            **{limit: functools.partial(self._translate, source, prefix, options, limit) for limit in splits},
            "generate": lambda: self.model.generate(**model_inputs, **generate_kwargs),
        }
        seconds, outputs = {}, {}
        for name, run in candidates.items():
            start = time.perf_counter()
            outputs[name] = run()
            seconds[name] = time.perf_counter() - start
        winner = min(seconds, key=seconds.__getitem__)
        self.winners[key] = winner
        timings = ", ".join(f"{_engine_label(name)} {took:.2f} s" for name, took in seconds.items())
        logger.info("%s CTranslate2 raced generate on %d sentence(s) × %d beam(s): %s; batches like it run with %s",
                    self.compute_type, len(source), options["beam_size"], timings, _engine_label(winner))
        return outputs[winner]


def _engine_label(name: str | int) -> str:
    if name == "generate":
        return "transformers' generate"
    return f"CTranslate2 in sub-batches of {name} rows" if name else "CTranslate2 (whole batches)"


#: One row per backend: name -> class built as ``cls(model, tokenizer, **options)``; installed
#: packages add backends through the ``crop_hf_backends`` entry-point group (``name = module:Class``).
BACKENDS: Registry[type] = Registry("backend", {
    "transformers": TransformersBackend,
    "ctranslate2": CTranslate2Backend,
}, group="crop_hf_backends")


def make_backend(name: str | None, model: Any, tokenizer: Any, **options: Any) -> GenerationBackend:
    """Build the backend called ``name`` (default ``"transformers"``) for ``model``.

    >>> make_backend("onnx", None, None)
    Traceback (most recent call last):
    ...
    ValueError: unknown backend 'onnx': expected one of transformers, ctranslate2
    """
    backend = BACKENDS.get(name or "transformers")
    options = {key: value for key, value in options.items() if value is not None}
    return backend(model, tokenizer, **options)

