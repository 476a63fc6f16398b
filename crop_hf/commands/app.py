"""``crop-hf app``: the demo app in the browser, on this machine (needs ``pip install 'crop-hf[app]'``).

    crop-hf app                                   # tiny offline models: the page works, the output is noise
    crop-hf app --mt_model facebook/m2m100_418M --ner_model path/to/ner --parser_model path/to/parser

Three tabs: labeled translation (a sentence with its entities, the marked translation with the
entities highlighted, every hypothesis tried and why its markers failed), projection (source
tokens and tags onto a raw target sentence, by any projection method, with the alignment links)
and semantic parsing (an utterance in, the tree drawn). A model not given is a tiny random one,
built offline once into ``--cache_dir``; the page then says its output is meaningless. The app
listens on ``--host`` (loopback by default) and ``--port`` until Ctrl-C; ``--share`` asks Gradio
for a public link.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import crop_hf.app
from crop_hf.app import AppModels, build_app
from crop_hf.console import setup_logging
from crop_hf.errors import check_device


@dataclass
class AppConfig:
    """Options of ``crop-hf app``."""

    mt_model: str | None = field(default=None, metadata={
        "help": "Translation model for labeled translation, a folder or Hub id (e.g. facebook/m2m100_418M); "
                "by default a tiny random M2M100 built offline (meaningless output)."})
    ner_model: str | None = field(default=None, metadata={
        "help": "Token-classification model that tags sentences written without [text|LABEL] entities; by "
                "default a tiny random XLM-R tagger."})
    parser_model: str | None = field(default=None, metadata={
        "help": "Semantic parser (crop-hf train-parser's output), a folder or Hub id; by default a tiny random "
                "parser."})
    align_model: str | None = field(default=None, metadata={
        "help": "Encoder of the embedding aligner of the projection tab (e.g. "
                "google-bert/bert-base-multilingual-cased); by default a tiny random BERT."})
    align_layer: int = field(default=8, metadata={"help": "Layer of the alignment encoder (at most its depth)."})
    max_words: int = field(default=200, metadata={"help": "Longest input, in words, that a tab accepts."})
    host: str = field(default="127.0.0.1", metadata={"help": "Address to listen on (0.0.0.0 opens the app to "
                                                             "the network)."})
    port: int = field(default=7860, metadata={"help": "Port to listen on."})
    share: bool = field(default=False, metadata={"help": "Ask Gradio for a public *.gradio.live link."})
    device: str | None = field(default=None, metadata={"help": "Device of the models (cpu, cuda:0; by default "
                                                                "what transformers picks)."})
    cache_dir: str | None = field(default=None, metadata={
        "help": "Where the tiny default models are built and kept (by default $CROP_HF_CACHE, else "
                "crop_hf under $HF_HOME: ~/.cache/huggingface/crop_hf)."})
    preload: bool = field(default=True, metadata={"help": "Load every model before the page opens, so the "
                                                          "first request is not the slow one."})

    def __post_init__(self) -> None:
        if self.max_words < 1:
            raise ValueError(f"--max_words must be at least 1, got {self.max_words}")
        if not 0 <= self.port <= 65535:
            raise ValueError(f"--port must be between 0 and 65535, got {self.port}")


CONFIG_CLASSES = (AppConfig,)


def run(config: AppConfig) -> int:
    try:
        import gradio  # noqa: F401
    except ImportError as error:
        raise ImportError("crop-hf app needs gradio: pip install 'crop-hf[app]'") from error

    setup_logging(logging.INFO)
    if config.device is not None:
        check_device(config.device)
    models = AppModels(mt_model=config.mt_model, ner_model=config.ner_model, parser_model=config.parser_model,
                       align_model=config.align_model, align_layer=config.align_layer, device=config.device,
                       cache_dir=config.cache_dir)
    if models.tiny:
        print(f"No {', '.join(models.tiny)}: tiny random-weight models stand in; their output is meaningless.")
    if config.preload:
        models.load_all()
    crop_hf.app.launch(build_app(models, max_words=config.max_words), host=config.host, port=config.port,
                       share=config.share)
    return 0
