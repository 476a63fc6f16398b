"""Configuration of a CroP corpus synthesis run."""

from __future__ import annotations

import codecs
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Literal

from crop_hf.engine.contents import DATA, MODEL
from crop_hf.engine.options import RunOptions
from crop_hf.errors import check_device, check_language_code
from crop_hf.projection.methods import method_help, resolve_method
from crop_hf.translation.apertium import check_apertium, is_apertium, not_applicable

__all__ = ["EFLOMAL", "SynthesisConfig"]

#: ``alignment_model`` value that selects the statistical aligner instead of an encoder.
EFLOMAL = "eflomal"


@dataclass
class SynthesisConfig(RunOptions):
    """Everything a synthesis run needs; the CLI and ``HfArgumentParser`` read the same fields.

    The defaults are the paper's setting on public checkpoints: M2M100 (418M) for both
    translation directions and an English CoNLL-2003 XLM-R tagger as the source NER model.
    Every field changes results (the run's fingerprint) but the run options and ``run_only``:
    each target language has its own shard folder, and its language filter involves only that
    language and the source one.

    ``projection`` is ``method`` read once, when the config is built (a
    :class:`~crop_hf.projection.methods.ResolvedMethod`): every stage of the run asks it. It is an
    attribute, not a field, so the fields (``asdict``, the command line, the fingerprint) are the same.
    """

    run_only = ("tgt_langs", "strict_input", "report")
    added_later = ("encoding",)
    local_inputs: ClassVar[Mapping[str, str]] = {"input": DATA, "mt_model": MODEL, "ner_model": MODEL,
                                                  "alignment_model": MODEL}
    renamed: ClassVar[Mapping[str, str]] = {"target_langs": "tgt_langs", "source_lang": "src_lang",
                                            "max_sentences": "max_examples"}

    tgt_langs: list[str] = field(metadata={"help": "Target languages (M2M100 codes), e.g. de es nl."})
    input: str = field(
        default="xtreme40",
        metadata={"help": "Raw target sentences: a text file per language with '{lang}' in its path "
                  "(one sentence per line), a folder of '<lang>.txt' files, or a source spec such as "
                  "'xtreme40' or 'xtreme40?data_dir=/data/panx' (a crop-hf builder, config = language) or "
                  "'hub:NAME:{lang}', whose train sentences are used without their labels."},
    )
    encoding: str = field(
        default="utf-8",
        metadata={"help": "Encoding of --input's text files, e.g. latin-1 for CoNLL-2002's Spanish and Dutch (a line "
                  "that does not decode is dropped as 'undecodable'; builders and Hub datasets decode their own)."},
    )
    output_dir: str = field(default="crop-hf-synthesis", kw_only=True, metadata={
        "help": "Where shards, the dataset and its card go."})
    src_lang: str = field(default="en", metadata={"help": "Language of the source NER model."})
    mt_model: str = field(default="facebook/m2m100_418M", metadata={
        "help": "Multilingual translation model, or 'apertium' (the rule-based engine, from Debian's apertium and "
                "its pair packages; no beams, backend or model-scored methods)."})
    mt_revision: str | None = field(default=None, metadata={"help": "Hub revision of the translation model."})
    ner_model: str = field(
        default="FacebookAI/xlm-roberta-large-finetuned-conll03-english",
        metadata={"help": "Source-language NER model (token classification)."},
    )
    ner_revision: str | None = field(default=None, metadata={"help": "Hub revision of the NER model."})
    method: str = field(
        default="lexical",
        metadata={"help": method_help(
            "Projection method, one of {methods} (the installed packages' included): how labels reach the raw "
            "sentence (lexical, as CroP; fuzzy; alignment, CSTOP's translate-and-align; hybrid: lexical matching "
            "first, the alignment for the rest; insertion: the marker-trained mt_model itself inserts each "
            "entity's markers into the raw sentence, no labeled back-translation; rerank and hybrid_rerank: "
            "candidate spans ranked by mt_model; options after '?', e.g. 'lexical?ignore_case=true'; see "
            "crop_hf.projection.methods).")},
    )
    alignment_model: str | None = field(
        default=None,
        metadata={"help": "Word aligner of method='alignment' or 'hybrid': an encoder (e.g. "
                          "bert-base-multilingual-cased, SimAlign-style), or 'eflomal' (statistical, no pretrained "
                          "model; pip install 'crop-hf[align]'). eflomal aligns the sentence pairs of each shard "
                          "together, so a shard is its corpus: keep shard_size in the thousands."},
    )
    backend: Literal["transformers", "ctranslate2"] = field(
        default="transformers",
        metadata={"help": "Translation engine: transformers (generate) or ctranslate2 (converted once, cached; "
                  "pip install 'crop-hf[fast]')."},
    )
    compute_type: str | None = field(
        default=None,
        metadata={"help": "CTranslate2 compute type: float32 (default on CPU) or int8; float16 (default on GPU) "
                  "or int8_float16."},
    )
    batch_size: int = field(default=16, metadata={"help": "Sentences per translation/tagging batch."})
    num_beams: int = field(default=5, metadata={"help": "Beam size of both translations."})
    num_return_sequences: int = field(
        default=3, metadata={"help": "Beam hypotheses tried, in order, until one keeps every marker intact."}
    )
    max_new_tokens: int = field(default=256, metadata={"help": "Generation length limit."})
    constrain_markers: bool = field(
        default=False,
        metadata={"help": "Marker-constrained decoding of the labeled translation (markers complete by construction)."})
    max_words: int = field(default=128, metadata={"help": "Drop raw sentences longer than this (CroP: 128)."})
    max_examples: int | None = field(default=None, metadata={"help": "Read at most this many sentences per language."})
    shard_size: int = field(default=1000, kw_only=True, metadata={"help": "Sentences per resumable shard."})
    strict_input: bool = field(
        default=False, metadata={"help": "Stop at an input line that is not valid UTF-8 (naming file and line) "
                                         "instead of dropping it as 'undecodable'."})
    language_filter: bool = field(default=True, metadata={"help": "Drop translations langid identifies as another language than the "
                                             "target or source one (--no_language_filter keeps them)."})
    seed: int = field(default=0, metadata={"help": "Random seed (generation is deterministic with beam search)."})
    device: str | None = field(default=None, metadata={"help": "torch device; default: the Accelerate device."})
    report: bool = field(
        default=False,
        metadata={"help": "At the end, write plots and an HTML page to OUTPUT_DIR/report and link the plots from "
                  "the dataset card (crop-hf report; needs matplotlib: pip install 'crop-hf[report]')."},
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.tgt_langs, str):
            self.tgt_langs = [lang for lang in self.tgt_langs.replace(",", " ").split() if lang]
        if not self.tgt_langs:
            raise ValueError("give at least one target language")
        for lang in self.tgt_langs:  # a forgotten --input: its path would be read as a language
            check_language_code(lang, "tgt_langs", "raw sentences go in --input, e.g. --input 'raw/{lang}.txt'")
        check_language_code(self.src_lang, "src_lang")
        if self.src_lang in self.tgt_langs:
            raise ValueError(f"the source language {self.src_lang!r} cannot also be a target language")
        try:  # a misspelt codec fails now, not at the first line; the resolved name makes the fingerprint
            if not "a\n".encode(self.encoding).endswith(b"a\n"):  # UTF-16 and -32: not read line by line
                raise ValueError(f"--encoding {self.encoding}: text files are read line by line, which this "
                                 "encoding's line ends do not allow: convert the file to utf-8")
            self.encoding = codecs.lookup(self.encoding).name
        except LookupError:
            raise ValueError(f"--encoding {self.encoding!r}: Python knows no such text encoding "
                             "(e.g. utf-8, latin-1, cp1252)") from None
        self.projection = method = resolve_method(self.method)  # the spec is read here, once per run
        if method.uses_alignment and not self.alignment_model:
            raise ValueError(f"method={self.method!r} needs alignment_model: an encoder such as "
                             f"bert-base-multilingual-cased, or {EFLOMAL!r} (no pretrained model)")
        if method.uses_scorer and self.backend != "transformers":
            raise ValueError(f"method={self.method!r} scores the raw sentence with mt_model itself (teacher forcing "
                             f"in transformers), which backend={self.backend!r} cannot do: use "
                             "backend='transformers' with this method")
        if is_apertium(self.mt_model):
            _, refused = not_applicable(constrain_markers=self.constrain_markers, backend=self.backend,
                                        compute_type=self.compute_type,
                                        scoring_method=self.method if method.uses_scorer else None)
            if self.mt_revision is not None:
                refused.append(f"--mt_revision {self.mt_revision}")
            if refused:
                raise ValueError(f"--mt_model apertium: {', '.join(refused)} cannot apply to Apertium, which "
                                 "translates text itself (no beams, scores, backends or revisions)")
            check_apertium(self.translation_directions())  # binary and pairs, before any work
        if self.alignment_model == EFLOMAL:
            from importlib.util import find_spec

            if find_spec("eflomal") is None:  # fail now, not after the first shard's translations
                raise ImportError("alignment_model='eflomal' needs eflomal: pip install 'crop-hf[align]'")
        for name in ("batch_size", "num_beams", "num_return_sequences", "max_words"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.device is not None:  # fail now, with the devices that exist, not deep inside torch
            check_device(self.device)
        if self.compute_type is not None and self.backend != "ctranslate2":
            raise ValueError("compute_type applies to backend='ctranslate2' only")
        if self.num_return_sequences > self.num_beams:
            raise ValueError("num_return_sequences cannot exceed num_beams")
        if self.report:  # fail now, not after hours of synthesis
            from importlib.util import find_spec

            if find_spec("matplotlib") is None:
                raise ImportError("report=True draws plots with matplotlib, which is not installed: "
                                  "pip install 'crop-hf[report]'")

    def translation_directions(self) -> list[tuple[str, str]]:
        """The directions the run translates: each target language into ``src_lang``, and back with markers
        unless the method projects without a back-translation (alignment, hybrid, model-scored)."""
        method = self.projection
        back = not (method.uses_alignment or method.uses_scorer)
        return [direction for lang in self.tgt_langs
                for direction in ((lang, self.src_lang), *(((self.src_lang, lang),) if back else ()))]
