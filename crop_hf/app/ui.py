"""The Gradio page: three tabs wired to :mod:`crop_hf.app.tabs`, their results drawn by :mod:`crop_hf.app.render`.

Gradio is imported only inside :func:`build_app`. Each tab's handler turns an
:class:`~crop_hf.app.tabs.InputError` into a notice in the page, and any other error into a
one-line notice too (logged with its traceback on the server): a visitor never sees a traceback.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

from crop_hf.app import render
from crop_hf.app.models import AppModels
from crop_hf.app.tabs import (
    MAX_WORDS,
    InputError,
    parse_utterance,
    project_labels,
    translate_labeled,
)

__all__ = ["PROJECTION_EXAMPLE", "SAMPLES", "build_app", "launch", "safely"]

logger = logging.getLogger(__name__)

#: The samples of the labeled-translation tab: (sentence with ``[text|LABEL]`` entities, source, target).
SAMPLES: tuple[tuple[str, str, str], ...] = (
    ("[Angela Merkel|PER] visited [Paris|LOC] on Monday .", "en", "de"),
    ("I live in [Gothenburg|LOC] and work for [Volvo|ORG] .", "en", "es"),
    ("[Ajax|ORG] played against [PSV|ORG] in [Amsterdam|LOC] on Sunday .", "en", "nl"),
    ("I live in [Gothenburg|LOC] .", "en", "zh"),
    ("Angela Merkel visited Paris on Monday .", "en", "de"),  # no entities written: the NER model tags them
)

#: The projection tab's starting values: source tokens, their tags, a raw target sentence.
PROJECTION_EXAMPLE = ("Angela Merkel visited Paris on Monday .", "B-PER I-PER O B-LOC O O O",
                      "Angela Merkel besuchte am Montag Paris .")

PARSE_EXAMPLE = "What is the weather in Delhi tomorrow"


def _sample_label(sample: tuple[str, str, str]) -> str:
    return f"{sample[1]}→{sample[2]}: {sample[0]}"


def safely(function: Callable, empty: int) -> Callable:
    """``function`` returning ``("", *outputs)``; on an error, ``(notice, "" * empty)`` instead of raising."""

    def handler(*args):
        try:
            return ("", *function(*args))
        except InputError as error:
            return (render.message(str(error)), *[""] * empty)
        except Exception as error:  # a visitor sees one line; the server log keeps the traceback
            logger.exception("the demo app failed on %r", args)
            first = (str(error).strip().splitlines() or [""])[0]
            return (render.message(f"Something went wrong: {type(error).__name__}: {first}"), *[""] * empty)

    return handler


def build_app(models: AppModels | None = None, *, max_words: int = MAX_WORDS, title: str = "crop-hf demo"):
    """The demo as a ``gradio.Blocks`` (not launched): labeled translation, projection, semantic parsing.

    ``models`` defaults to tiny offline models (built on first use; a banner says their output is
    meaningless). Nothing is loaded until a tab is used, or :meth:`AppModels.load_all` is called.
    """
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    import gradio as gr

    models = models or AppModels()

    def translate(text, src, tgt, hypotheses):
        view = translate_labeled(models, text, src, tgt, int(hypotheses), max_words)
        return (*render.translation_html(view), render.hypotheses_table(view.hypotheses))

    def project(tokens, tags, target, method, lang, aligner, alignment):
        view = project_labels(models, tokens, tags, target, method, lang, aligner, alignment, max_words)
        return render.projection_html(view), render.links_svg(view)

    def parse(text):
        return (render.tree_html(parse_utterance(models, text, max_words)),)

    def pick(label):
        for sample in SAMPLES:
            if _sample_label(sample) == label:
                return sample
        return gr.update(), gr.update(), gr.update()

    with gr.Blocks(title=title, analytics_enabled=False) as demo:
        gr.Markdown(f"# {title}\nCross-lingual data generation with crop-hf: labeled sequence translation and "
                    f"label projection (CroP), semantic parsing (CSTOP). Inputs up to {max_words} words.")
        gr.HTML(render.banner(models.tiny), elem_id="crop-banner")
        with gr.Tabs():
            with gr.Tab("Labeled translation", id="labeled-translation"):
                gr.Markdown("Translate a sentence with its entities wrapped in markers (`__SLOT0__ Paris __SLOT0__`) "
                            "and read the translated entities back. Write entities as `[Paris|LOC]`; without any, "
                            "the NER model tags the sentence. Each beam hypothesis is read in turn until one keeps "
                            "all its markers.")
                sample = gr.Dropdown([_sample_label(s) for s in SAMPLES], label="Samples", value=None,
                                     elem_id="lt-sample")
                text = gr.Textbox(SAMPLES[0][0], label="Sentence", lines=2, elem_id="lt-text")
                with gr.Row():
                    src = gr.Textbox(SAMPLES[0][1], label="Source language", elem_id="lt-src")
                    tgt = gr.Textbox(SAMPLES[0][2], label="Target language", elem_id="lt-tgt")
                    hypotheses = gr.Slider(1, 8, value=4, step=1, label="Hypotheses (beams)",
                                           elem_id="lt-hypotheses")
                button = gr.Button("Translate", variant="primary", elem_id="lt-submit")
                lt_message = gr.HTML(elem_id="lt-message")
                with gr.Row():
                    source = gr.HTML(label="Source", elem_id="lt-source")
                    translation = gr.HTML(label="Translation", elem_id="lt-translation")
                table = gr.HTML(elem_id="lt-hypotheses-table")
                sample.change(pick, sample, [text, src, tgt])
                button.click(safely(translate, 3), [text, src, tgt, hypotheses], [lt_message, source, translation, table])

            with gr.Tab("Projection", id="projection"):
                gr.Markdown("Put the labels of a tagged source sentence on a raw target sentence. `lexical` and "
                            "`fuzzy` look for each source entity's words in the target (names often stay the same); "
                            "`alignment` and `hybrid` copy the spans over a word alignment: type one (`0-0 1-1 ...`) "
                            "or let the aligner compute it.")
                tokens = gr.Textbox(PROJECTION_EXAMPLE[0], label="Source tokens (space-separated)", elem_id="pj-tokens")
                tags = gr.Textbox(PROJECTION_EXAMPLE[1], label="Source tags (IOB2, one per token)", elem_id="pj-tags")
                target = gr.Textbox(PROJECTION_EXAMPLE[2], label="Target sentence (raw text)", elem_id="pj-target")
                with gr.Row():
                    method = gr.Radio(["lexical", "fuzzy", "alignment", "hybrid"], value="lexical", label="Method",
                                      elem_id="pj-method")
                    aligner = gr.Radio(["embedding", "eflomal"], value="embedding", label="Aligner",
                                       elem_id="pj-aligner")
                with gr.Row():
                    lang = gr.Textbox("de", label="Target language (optional: zh, ja, th are split into characters)",
                                      elem_id="pj-lang")
                    alignment = gr.Textbox("", label="Alignment (optional, Pharaoh: 0-0 1-1 ...)",
                                           elem_id="pj-alignment")
                button = gr.Button("Project", variant="primary", elem_id="pj-submit")
                pj_message = gr.HTML(elem_id="pj-message")
                spans = gr.HTML(elem_id="pj-spans")
                links = gr.HTML(elem_id="pj-links")
                button.click(safely(project, 2), [tokens, tags, target, method, lang, aligner, alignment],
                             [pj_message, spans, links])

            with gr.Tab("Semantic parsing", id="semantic-parsing"):
                gr.Markdown("Parse an utterance into intents and slots, drawn as a tree (intents blue, slots "
                            "green). A bracket parse typed in (`[IN:GET_WEATHER weather in [SL:LOCATION Delhi ] ]`) "
                            "is drawn as it is.")
                utterance = gr.Textbox(PARSE_EXAMPLE, label="Utterance", elem_id="sp-text")
                button = gr.Button("Parse", variant="primary", elem_id="sp-submit")
                sp_message = gr.HTML(elem_id="sp-message")
                tree = gr.HTML(elem_id="sp-tree")
                button.click(safely(parse, 1), [utterance], [sp_message, tree])
    return demo


def launch(demo, host: str = "127.0.0.1", port: int | None = None, share: bool = False, **options):
    """``demo.launch`` with the app's defaults: loopback only, no share link, no error details to visitors."""
    return demo.launch(server_name=host, server_port=port, share=share, show_error=False, **options)
