"""The models behind the demo app: any local folder or Hub id, or tiny offline ones by default.

:class:`AppModels` names the four models the app may use (translation, NER, parser, alignment
encoder) and loads each as a pipeline on first use, once, under a lock (Gradio runs requests in
threads). A model left unset is a tiny random-weight one from :mod:`crop_hf.demo_models`, built
offline into ``cache_dir`` the first time and reused after; the app then shows a banner that its
output is meaningless.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crop_hf import demo_models
from crop_hf.alignment import EflomalAligner, EmbeddingAligner
from crop_hf.demo_models import PARALLEL_SAMPLE, SAMPLE_CORPUS
from crop_hf.errors import reaching
from crop_hf.hub import crop_hf_cache_dir

__all__ = ["PARSER_INTENTS", "PARSER_SLOTS", "TINY_MODELS_VERSION", "AppModels"]

logger = logging.getLogger(__name__)

#: Bumped when the tiny models change, so an old cache is not reused.
TINY_MODELS_VERSION = "1"

#: Intents and slot tags of the tiny default parser (its predictions among them are random).
PARSER_INTENTS = ("GET_WEATHER", "SET_REMINDER", "PLAY_MUSIC", "GET_DIRECTIONS")
PARSER_SLOTS = ("O", "B-LOCATION", "I-LOCATION", "B-DATE_TIME", "I-DATE_TIME", "B-TODO", "I-TODO",
                "B-ARTIST", "I-ARTIST")

_CORPUS = (*SAMPLE_CORPUS, *(side for pair in PARALLEL_SAMPLE for side in pair),
           "What is the weather in Delhi tomorrow", "Remind me to call mom at 5 pm",
           "Play songs by Arijit Singh", "Delhi ka weather batao")


def _tiny(kind: str, folder: Path) -> None:
    if kind == "mt":
        demo_models.build_tiny_m2m100(folder, corpus=_CORPUS)
    elif kind == "ner":
        demo_models.build_tiny_xlmr_ner(folder, corpus=_CORPUS)
    elif kind == "parser":
        demo_models.build_tiny_parser(folder, PARSER_INTENTS, PARSER_SLOTS, corpus=_CORPUS)
    else:
        demo_models.build_tiny_bert(folder, corpus=_CORPUS)


@dataclass
class AppModels:
    """Which models the app runs, loaded lazily; ``None`` means the tiny offline model of that kind."""

    mt_model: str | None = None
    ner_model: str | None = None
    parser_model: str | None = None
    align_model: str | None = None
    align_layer: int = 8
    device: str | None = None
    cache_dir: str | None = None
    _loaded: dict[str, Any] = field(default_factory=dict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @property
    def tiny(self) -> list[str]:
        """The options left unset (their models are tiny and random), e.g. ``["--mt_model", "--ner_model"]``."""
        return [f"--{name}" for name in ("mt_model", "ner_model", "parser_model", "align_model")
                if getattr(self, name) is None]

    def path(self, kind: str) -> str:
        """The folder or Hub id of ``kind`` (``mt``, ``ner``, ``parser``, ``align``), building a tiny one if unset."""
        given = getattr(self, f"{kind}_model")
        if given is not None:
            return given

        folder = Path(self.cache_dir or crop_hf_cache_dir()) / f"app-tiny-models-v{TINY_MODELS_VERSION}" / kind
        if not (folder / "config.json").is_file():
            partial = folder.with_name(f"{kind}.{os.getpid()}.{threading.get_ident()}.partial")
            logger.info("building the tiny %s model in %s", kind, folder)
            _tiny(kind, partial)
            try:
                partial.rename(folder)  # atomic: another process sees no folder or a whole one
            except OSError:  # another process was first
                import shutil

                shutil.rmtree(partial, ignore_errors=True)
        return str(folder)

    def _get(self, kind: str, load) -> Any:
        with self._lock:
            if kind not in self._loaded:
                self._loaded[kind] = load(self.path(kind))
            return self._loaded[kind]

    def _pipeline(self, kind: str, what: str, task: str, **options: Any) -> Any:
        """The ``task`` pipeline over ``kind``'s model, loaded once; ``what`` names the model in a load error."""
        from transformers import pipeline

        def load(path: str):
            with reaching(path, what):
                return pipeline(task, model=path, device=self.device, **options)

        return self._get(kind, load)

    @property
    def translator(self):
        """The ``labeled-translation`` pipeline over ``mt_model``."""
        return self._pipeline("mt", "translation model (--mt_model)", "labeled-translation")

    @property
    def tagger(self):
        """A ``token-classification`` pipeline over ``ner_model`` (first-subword aggregation, as synthesis tags)."""
        return self._pipeline("ner", "NER model (--ner_model)", "token-classification", aggregation_strategy="first")

    @property
    def parser(self):
        """The ``semantic-parsing`` pipeline over ``parser_model``."""
        return self._pipeline("parser", "parser (--parser_model)", "semantic-parsing")

    def aligner(self, kind: str):
        """``"embedding"``: SimAlign over ``align_model`` (layer ``align_layer``, at most its depth); ``"eflomal"``."""
        if kind == "eflomal":
            return EflomalAligner()
        if kind != "embedding":
            raise ValueError(f"unknown aligner {kind!r}: choose embedding or eflomal")

        def load(path: str):
            from transformers import AutoConfig, AutoModel, AutoTokenizer

            with reaching(path, "alignment encoder (--align_model)"):
                config = AutoConfig.from_pretrained(path)
                tokenizer = AutoTokenizer.from_pretrained(path)
                model = AutoModel.from_pretrained(path)
            layer = min(self.align_layer, getattr(config, "num_hidden_layers", self.align_layer))
            return EmbeddingAligner(model, tokenizer, layer=layer, device=self.device)

        return self._get("align", load)

    def load_all(self) -> None:
        """Load (and build where unset) every model now, so the first request is not the slow one."""
        _ = (self.translator, self.tagger, self.parser, self.aligner("embedding"))
