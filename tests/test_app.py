"""The demo app's tabs as plain functions (no browser): results, bad input, HTML, the command and the Space."""

from __future__ import annotations

import os
import re
import runpy
import zlib
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace
from xml.etree import ElementTree

import pytest

from crop_hf import seqlogical
from crop_hf.app import AppModels, InputError, parse_utterance, project_labels, render, translate_labeled
from crop_hf.app.models import PARSER_INTENTS
from crop_hf.app.tabs import check_language, check_markers, check_text, read_annotations
from crop_hf.app.ui import safely
from crop_hf.labels import Span

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
REPO_ROOT = Path(__file__).resolve().parents[1]
MERKEL = "[Angela Merkel|PER] visited [Paris|LOC] on Monday ."
MERKEL_MARKED = "__SLOT0__ Angela Merkel __SLOT0__ visited __SLOT1__ Paris __SLOT1__ on Monday ."
SOURCE = "Angela Merkel visited Paris on Monday ."
SOURCE_TAGS = "B-PER I-PER O B-LOC O O O"
TARGET = "Angela Merkel besuchte am Montag Paris ."


@pytest.fixture(scope="session")
def models(tmp_path_factory) -> AppModels:
    """Tiny models, built once per session in a folder the browser test shares (same base temp)."""
    return AppModels(cache_dir=str(tmp_path_factory.getbasetemp() / "app-models"))


def marks(html: str) -> list[tuple[str, str]]:
    """(text, label) of every highlighted entity in ``html``."""
    pattern = r'<mark class="crop-entity" data-label="([^"]*)"[^>]*><span class="crop-entity-text">([^<]*)</span>'
    return [(text, label) for label, text in re.findall(pattern, html)]


# --- input checks ------------------------------------------------------------------------------


def test_empty_and_over_long_text_are_refused_with_the_limit_named():
    with pytest.raises(InputError, match="The box for the sentence is empty"):
        check_text("   \n ", "the sentence")
    assert check_text(" ".join(["w"] * 200), "the sentence") == " ".join(["w"] * 200)
    with pytest.raises(InputError, match=r"The sentence is too long \(201 words\): this demo takes at most 200 words"):
        check_text(" ".join(["w"] * 201), "the sentence")
    with pytest.raises(InputError, match=r"too long \(2401 characters\)"):
        check_text("我" * 2401, "the sentence")  # no spaces: the length in characters counts
    with pytest.raises(InputError, match=r"\(3 words\): this demo takes at most 2 words"):
        check_text("a b c", "the sentence", max_words=2)


def test_markers_typed_in_are_refused_whole_or_broken():
    with pytest.raises(InputError, match="contains the boundary marker '__SLOT0__'"):
        check_markers("I live in __SLOT0__ Paris __SLOT0__", "the sentence")
    with pytest.raises(InputError, match="'__SLOT3'"):
        check_markers("I live in __SLOT3 Paris", "the sentence")
    check_markers("I live in Paris (SLOT 3)", "the sentence")


def test_language_codes_are_checked_with_a_suggestion():
    assert check_language(" zh ", "target") == "zh"
    assert check_language("", "target") is None
    with pytest.raises(InputError, match="Unknown target language code 'xx'"):
        check_language("xx", "target")
    with pytest.raises(InputError, match="Did you mean de"):
        check_language("dee", "target")


def test_inline_annotations_become_character_spans():
    text, entities = read_annotations("[ Angela Merkel |PER] visited [Paris| LOC ] .")
    assert text == "Angela Merkel visited Paris ."
    assert entities == [{"start": 0, "end": 13, "label": "PER"}, {"start": 22, "end": 27, "label": "LOC"}]
    assert [text[e["start"]:e["end"]] for e in entities] == ["Angela Merkel", "Paris"]
    assert read_annotations("a [b] c [d|] e") == ("a [b] c [d|] e", None)


# --- labeled translation -----------------------------------------------------------------------


def test_labeled_translation_reads_every_hypothesis_and_agrees_with_the_pipeline(models):
    view = translate_labeled(models, MERKEL, "en", "de", 3)
    assert view.source == SOURCE and view.marked_source == MERKEL_MARKED and view.entities_from == "written"
    assert [(e["text"], e["label"], e["start"], e["end"]) for e in view.source_entities] == [
        ("Angela Merkel", "PER", 0, 13), ("Paris", "LOC", 22, 27)]
    assert len(view.hypotheses) == 3
    assert [h.tried for h in view.hypotheses] == [i < view.result["hypotheses_tried"] for i in range(3)]
    (chosen,) = [h for h in view.hypotheses if h.chosen]
    assert chosen.marked == view.result["marked_translation"] and chosen.failures == view.result["failures"]
    # the same call through the pipeline itself gives the same result
    from crop_hf.translation.languages import resolve_languages

    translator = models.translator
    record = {"text": SOURCE, "entities": [{"start": 0, "end": 13, "label": "PER"}, {"start": 22, "end": 27, "label": "LOC"}]}
    length = translator.preprocess(record, languages=resolve_languages(translator.tokenizer, "en", "de"))["input_ids"]
    direct = translator(record, src_lang="en", tgt_lang="de", num_beams=3, num_return_sequences=3,
                        max_new_tokens=2 * length.shape[-1] + 16)
    assert direct["marked_translation"] == view.result["marked_translation"]


def test_the_first_hypothesis_keeping_every_marker_is_chosen_and_highlighted(models, monkeypatch):
    hypotheses = ["Angela Merkel besuchte Paris .",
                  "__SLOT0__ Angela Merkel __SLOT0__ besuchte __SLOT1__ Paris __SLOT1__ am Montag .",
                  "__SLOT0__ Merkel __SLOT0__ besuchte __SLOT1__ Paris __SLOT1__ .",
                  "__SLOT1__ Paris"]
    vocabulary = models.translator.marker_vocabulary
    monkeypatch.setattr(vocabulary, "decode", lambda tokenizer, rows: hypotheses[:len(rows)])
    view = translate_labeled(models, MERKEL, "en", "de", 4)
    assert [(h.tried, h.chosen, h.complete) for h in view.hypotheses] == [
        (True, False, False), (True, True, True), (False, False, True), (False, False, False)]
    assert [f["reason"] for f in view.hypotheses[0].failures] == ["missing", "missing"]
    assert [(f["slot"], f["reason"]) for f in view.hypotheses[3].failures] == [(0, "missing"), (1, "unpaired")]
    assert view.result["translation"] == "Angela Merkel besuchte Paris am Montag ."
    source_html, translation_html = render.translation_html(view)
    assert marks(source_html) == [("Angela Merkel", "PER"), ("Paris", "LOC")]
    assert marks(translation_html) == [("Angela Merkel", "PER"), ("Paris", "LOC")]
    assert '<span class="crop-tried">2</span> hypotheses tried' in translation_html
    table = render.hypotheses_table(view.hypotheses)
    rows = table.split("<tr>")[2:]
    assert [re.search(r"<td[^>]*>(chosen|tried|not needed)</td></tr>", row).group(1) for row in rows] == [
        "tried", "chosen", "not needed", "not needed"]
    assert "slot 0 (PER): <b>missing</b>" in rows[0] and "slot 1 (LOC): <b>unpaired</b>" in rows[3]


def test_without_written_entities_the_ner_model_tags_the_sentence(models):
    tagged = [{"entity_group": "PER", "start": 0, "end": 14},  # a trailing space is trimmed
              {"entity_group": "LOC", "start": 8, "end": 13},  # overlaps the first: skipped
              {"entity_group": "LOC", "start": 22, "end": 27}]
    fake = SimpleNamespace(translator=models.translator, tagger=lambda text: tagged)
    view = translate_labeled(fake, SOURCE, "en", "de", 1)
    assert view.entities_from == "ner model" and view.marked_source == MERKEL_MARKED
    assert [(e["text"], e["label"]) for e in view.source_entities] == [("Angela Merkel", "PER"), ("Paris", "LOC")]
    assert len(view.hypotheses) == 1 and view.hypotheses[0].chosen
    view = translate_labeled(models, SOURCE, "en", "de", 1)  # the tiny tagger runs (its tags are noise)
    assert view.entities_from == "ner model" and view.source == SOURCE


@pytest.mark.parametrize(("text", "src", "tgt", "message"), [
    ("", "en", "de", "The box for the sentence is empty"),
    (" ".join(["word"] * 5000), "en", "de", "too long (5000 words)"),
    ("I live in __SLOT0__ Paris __SLOT0__ .", "en", "de", "contains the boundary marker '__SLOT0__'"),
    (MERKEL, "en", "xx", "Unknown target language 'xx' for the m2m100 tokenizer"),
    (MERKEL, "klingon", "de", "Unknown source language 'klingon'"),
    (MERKEL, "en", " ", "Type both a source and a target language code"),
    ("[Paris|LOC]", "en", "de", None),  # only an entity: fine
])
def test_labeled_translation_bad_input_is_a_message(models, text, src, tgt, message):
    if message is None:
        assert translate_labeled(models, text, src, tgt, 1).source == "Paris"
        return
    with pytest.raises(InputError) as error:
        translate_labeled(models, text, src, tgt, 1)
    assert message in str(error.value)


# --- projection --------------------------------------------------------------------------------


def test_lexical_projection_finds_the_source_entities_words_and_uses_no_alignment(models):
    view = project_labels(models, SOURCE, SOURCE_TAGS, TARGET, "lexical", "de")
    assert view.result["tags"] == ["B-PER", "I-PER", "O", "O", "O", "B-LOC", "O"]
    assert [s["status"] for s in view.result["entity_status"]] == ["found", "found"]
    assert view.alignment is None and view.aligned_by is None
    html = render.projection_html(view)
    assert marks(html) == [("Angela Merkel", "PER"), ("Paris", "LOC")]
    assert "the sentence would be kept" in html and "crop-no-links" in render.links_svg(view)
    missing = project_labels(models, SOURCE, SOURCE_TAGS, "Angela Merkel besuchte am Montag Parijs .", "lexical")
    assert [s["status"] for s in missing.result["entity_status"]] == ["found", "missing"]
    assert "incomplete (entity_not_projected)" in render.projection_html(missing)
    fuzzy = project_labels(models, SOURCE, SOURCE_TAGS, "Angela Merkel besuchte am Montag Pariis .", "fuzzy")
    assert [s["status"] for s in fuzzy.result["entity_status"]] == ["found", "fuzzy"]


def test_alignment_projection_over_a_typed_alignment_draws_its_links(models):
    view = project_labels(models, SOURCE, SOURCE_TAGS, TARGET, "alignment", "de", alignment="3-5 0-0 1-1 2-2")
    assert view.result["tags"] == ["B-PER", "I-PER", "O", "O", "O", "B-LOC", "O"]
    assert view.alignment == [(0, 0), (1, 1), (2, 2), (3, 5)] and view.aligned_by == "given"
    svg = render.links_svg(view)
    assert re.findall(r'data-link="([^"]+)"', svg) == ["0-0", "1-1", "2-2", "3-5"]
    assert '<code class="crop-pharaoh">0-0 1-1 2-2 3-5</code>' in svg and "typed in" in svg


@pytest.mark.parametrize("aligner", ["embedding", "eflomal"])
def test_alignment_methods_compute_an_alignment_when_none_is_typed(models, aligner):
    view = project_labels(models, SOURCE, SOURCE_TAGS, TARGET, "hybrid", "de", aligner)
    assert view.aligned_by == aligner and view.alignment is not None
    assert all(0 <= i < 7 and 0 <= j < 7 for i, j in view.alignment)
    assert view.result["tags"] == ["B-PER", "I-PER", "O", "O", "O", "B-LOC", "O"]  # hybrid matches words first


def test_characters_are_the_tokens_of_chinese_targets(models):
    view = project_labels(models, "I live in Gothenburg .", "O O O B-LOC O", "我住在Gothenburg。", "lexical", "zh")
    assert view.result["tokenization"] == "characters"
    assert marks(render.projection_html(view)) == [("Gothenburg", "LOC")]


@pytest.mark.parametrize(("tokens", "tags", "target", "lang", "alignment", "message"), [
    (SOURCE, "B-PER I-PER O", TARGET, "de", "", "7 source tokens but 3 tags: give exactly one tag per token."),
    (SOURCE, "", TARGET, "de", "", "The box for the source tags is empty"),
    (SOURCE, "B-PER I-PER O X-LOC O O O", TARGET, "de", "", "Tag 'X-LOC' (token 4, 'Paris') is not an IOB2 tag"),
    ("", "", TARGET, "de", "", "The box for the source tokens is empty"),
    (SOURCE, SOURCE_TAGS, "  ", "de", "", "The box for the target sentence is empty"),
    (SOURCE, SOURCE_TAGS, " ".join(["Wort"] * 5000), "de", "", "The target sentence is too long (5000 words)"),
    (SOURCE, SOURCE_TAGS, "__SLOT0__ Angela __SLOT0__", "de", "", "The target sentence contains the boundary marker"),
    (SOURCE, SOURCE_TAGS, TARGET, "xx", "", "Unknown target language code 'xx'"),
    (SOURCE, SOURCE_TAGS, TARGET, "de", "0-0 9-1", "The alignment link 9-1 points outside the sentences (7 source"),
    (SOURCE, SOURCE_TAGS, TARGET, "de", "0:0", "The alignment is not Pharaoh text"),
])
def test_projection_bad_input_is_a_message(models, tokens, tags, target, lang, alignment, message):
    with pytest.raises(InputError) as error:
        project_labels(models, tokens, tags, target, "alignment", lang, "embedding", alignment)
    assert message in str(error.value)


def test_an_unknown_method_is_a_message(models):
    with pytest.raises(InputError, match="Unknown projection method 'magic': choose one of lexical, fuzzy"):
        project_labels(models, SOURCE, SOURCE_TAGS, TARGET, "magic")


# --- semantic parsing --------------------------------------------------------------------------


def test_a_typed_bracket_parse_is_drawn_as_nested_boxes(models):
    view = parse_utterance(models, "[IN:CREATE_REMINDER remind me [SL:TODO [IN:GET_TODO my [SL:TODO shopping ] ] ] ]")
    assert not view.from_model and view.score is None and view.text == "remind me my shopping"
    html = render.tree_html(view)
    assert re.findall(r'class="crop-node" data-label="([^"]+)"', html) == [
        "IN:CREATE_REMINDER", "SL:TODO", "IN:GET_TODO", "SL:TODO"]
    assert re.findall(r'class="crop-word"[^>]*>([^<]+)<', html) == ["remind", "me", "my", "shopping"]
    # "shopping" sits inside the innermost slot box: four boxes open before it, none closed
    before = html[:html.index(">shopping<")]
    assert before.count('class="crop-node"') - before.count("</div></div>") == 4
    assert "read from the bracket parse typed in" in html


def test_the_parser_parses_an_utterance_into_a_tree_over_its_words(models):
    view = parse_utterance(models, "What is the weather in Delhi tomorrow")
    assert view.from_model and view.tree.kind == "IN" and view.tree.name in PARSER_INTENTS
    assert view.tree.tokens == ["What", "is", "the", "weather", "in", "Delhi", "tomorrow"]
    assert view.parse == view.tree.to_string() and 0 <= view.score <= 1
    assert f"predicted by the parser (score {view.score:.2f})" in render.tree_html(view)


@pytest.mark.parametrize(("text", "message"), [
    ("", "The box for the utterance is empty"),
    (" ".join(["word"] * 201), "The utterance is too long (201 words)"),
    ("[IN:GET_WEATHER weather in [SL:LOCATION Delhi ]", "That bracket parse is not a valid tree: '[IN:GET_WEATHER' is never closed"),
    ("[XX:GET_WEATHER weather ]", "label 'XX:GET_WEATHER' must start with 'IN:' or 'SL:'"),
    ("weather __SLOT0__ Delhi", "contains the boundary marker"),
])
def test_parsing_bad_input_is_a_message(models, text, message):
    with pytest.raises(InputError) as error:
        parse_utterance(models, text)
    assert message in str(error.value)


# --- HTML and handlers -------------------------------------------------------------------------


def test_user_text_is_escaped_everywhere():
    html = render.highlight("<b>x</b> & <script>", [{"start": 0, "end": 8, "label": "<LOC>"}])
    assert "<script>" not in html and "<b>" not in html and "&lt;script&gt;" in html and 'data-label="&lt;LOC&gt;"' in html
    assert render.message("<img src=x>").count("<img") == 0
    assert render.message("") == ""


def test_the_banner_names_the_missing_options_and_disappears_with_real_models():
    assert AppModels().tiny == ["--mt_model", "--ner_model", "--parser_model", "--align_model"]
    text = render.banner(AppModels(mt_model="m", parser_model="p").tiny)
    assert "output is meaningless" in text and "No --ner_model, --align_model was given" in text
    assert render.banner(AppModels(mt_model="m", ner_model="n", parser_model="p", align_model="a").tiny) == ""


def test_handlers_turn_every_error_into_a_notice_never_a_traceback():
    def bad_input(text):
        raise InputError("Type something.")

    def broken(text):
        raise RuntimeError("boom\nsecond line")

    assert safely(lambda text: ("<p>ok</p>", "x"), 2)("hi") == ("", "<p>ok</p>", "x")
    notice, *rest = safely(bad_input, 2)("hi")
    assert "Type something." in notice and 'role="alert"' in notice and rest == ["", ""]
    notice, *rest = safely(broken, 1)("hi")
    assert "Something went wrong: RuntimeError: boom" in notice and "second line" not in notice and rest == [""]


def test_a_model_that_cannot_be_reached_is_a_notice_naming_it(tmp_path):
    from crop_hf.app.ui import safely as wrap

    models = AppModels(parser_model=str(tmp_path / "no-such-parser"))
    notice, tree = wrap(lambda text: (render.tree_html(parse_utterance(models, text)),), 1)("hello")
    assert "Something went wrong" in notice and "no-such-parser" in notice and tree == ""


def test_tiny_models_are_built_once_into_the_cache(tmp_path):
    models = AppModels(cache_dir=str(tmp_path))
    path = Path(models.path("align"))
    assert path == tmp_path / "app-tiny-models-v1" / "align" and (path / "config.json").is_file()
    stamp = (path / "config.json").stat().st_mtime_ns
    assert Path(AppModels(cache_dir=str(tmp_path)).path("align")) == path
    assert (path / "config.json").stat().st_mtime_ns == stamp and not list(path.parent.glob("*.partial"))
    assert AppModels(align_model="given/id").path("align") == "given/id"


# --- the Gradio page, the command and the Space ------------------------------------------------


def test_build_app_makes_three_tabs_without_loading_any_model():
    gr = pytest.importorskip("gradio")
    from crop_hf.app import build_app

    models = AppModels(mt_model="never/loaded")
    demo = build_app(models)
    assert isinstance(demo, gr.Blocks) and models._loaded == {}
    config = demo.get_config_file()
    tabs = [c["props"]["label"] for c in config["components"] if c.get("type") == "tabitem"]
    assert tabs == ["Labeled translation", "Projection", "Semantic parsing"]
    ids = {c["props"].get("elem_id") for c in config["components"]}
    assert {"lt-text", "lt-submit", "pj-method", "pj-submit", "sp-text", "sp-submit", "crop-banner"} <= ids


def test_the_command_launches_on_loopback_with_its_options(monkeypatch, tmp_path):
    pytest.importorskip("gradio")
    import crop_hf.app
    from crop_hf.cli import main

    launched = {}
    monkeypatch.setattr(crop_hf.app, "launch", lambda demo, **options: launched.update(options, demo=demo))
    assert main(["app", "--parser_model", "p", "--port", "8123", "--no_preload", "--cache_dir", str(tmp_path)]) == 0
    assert launched["host"] == "127.0.0.1" and launched["port"] == 8123 and launched["share"] is False
    assert not list(tmp_path.iterdir())  # --no_preload: nothing built before the first request


def test_bad_command_options_are_one_line(capsys):
    from crop_hf.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["app", "--port", "70000"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip() == "crop-hf app: error: --port must be between 0 and 65535, got 70000"


def test_the_space_has_its_metadata_and_builds_the_app(monkeypatch):
    gr = pytest.importorskip("gradio")
    import yaml

    readme = (REPO_ROOT / "space" / "README.md").read_text(encoding="utf-8")
    front = yaml.safe_load(readme.split("---\n")[1])
    assert front["sdk"] == "gradio" and front["app_file"] == "app.py" and front["license"] == "apache-2.0"
    assert int(front["sdk_version"].split(".")[0]) >= 5 and len(front["short_description"]) <= 60
    assert {"title", "emoji", "colorFrom", "colorTo"} <= set(front)
    assert "crop-hf[app" in (REPO_ROOT / "space" / "requirements.txt").read_text(encoding="utf-8")
    monkeypatch.setenv("CROP_HF_MT_MODEL", "facebook/m2m100_418M")
    namespace = runpy.run_path(str(REPO_ROOT / "space" / "app.py"))  # not __main__: built, not launched
    assert isinstance(namespace["demo"], gr.Blocks)
    assert namespace["models"].mt_model == "facebook/m2m100_418M"
    assert namespace["models"].tiny == ["--ner_model", "--parser_model", "--align_model"]


# --- what each renderer shows, and that its markup holds together ---------------------------------

#: Inline CSS the renderers may write: property -> what its value may be made of.
_CSS_VALUE = re.compile(r"(?:-?\d+(?:\.\d+)?(?:px|em|%)?|#[0-9a-f]{6}|[a-z]+(?:-[a-z]+)*)")
_CSS_PROPERTIES = {
    "align-items", "background", "border", "border-collapse", "border-radius", "color", "display", "flex-direction",
    "flex-wrap", "font-family", "font-size", "font-weight", "line-height", "margin", "opacity", "overflow-x",
    "padding", "text-align", "vertical-align", "white-space"}
#: Elements that never hold anything (no closing tag).
_VOID = {"br"}


class _Page(HTMLParser):
    """Reads rendered HTML: its visible text (blocks on their own lines, cells split by " | ") and every fault."""

    _BLOCKS = frozenset({"div", "p", "h4", "li", "tr", "ul", "table"})

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.open: list[str] = []
        self.faults: list[str] = []
        self.text = ""
        self.faults += [f"tag spelled {tag!r}" for tag in re.findall(r"</?[a-z0-9]*[A-Z][A-Za-z0-9]*", html)]
        self.feed(html)
        self.close()
        if self.open:
            self.faults.append(f"never closed: {self.open}")
        if self.rawdata.strip():
            self.faults.append(f"text after the markup: {self.rawdata[:40]!r}")
        self.lines = [" ".join(line.split()) for line in self.text.split("\n") if line.strip()]

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name == "style":
                self._check_style(value or "")
            if name == "class" and not re.fullmatch(r"crop(?:-[a-z]+)+", value or ""):
                self.faults.append(f"class {value!r}")
        self.text += "\n" if tag in self._BLOCKS else " | " if tag in {"td", "th"} else " "  # a tree's words: boxes
        if tag not in _VOID:
            self.open.append(tag)

    def handle_endtag(self, tag):
        if not self.open or self.open[-1] != tag:
            self.faults.append(f"</{tag}> closes {self.open[-1:] or 'nothing'}")
        else:
            self.open.pop()
        if tag in self._BLOCKS:
            self.text += "\n"

    def handle_data(self, data):
        if not self.open and data.strip():
            self.faults.append(f"text outside every element: {data[:40]!r}")
        self.text += data

    def _check_style(self, style: str) -> None:
        for declaration in filter(None, (part.strip() for part in style.split(";"))):
            name, _, value = declaration.partition(":")
            words = value.replace(",", " ").split()
            if name not in _CSS_PROPERTIES or not words or not all(_CSS_VALUE.fullmatch(w) for w in words):
                self.faults.append(f"style {declaration!r}")


def _shown(html: str) -> list[str]:
    """The lines a reader sees in ``html``, after checking that its markup holds together."""
    page = _Page(html)
    assert page.faults == [], page.faults
    return page.lines


def test_the_markup_check_catches_what_it_is_for():
    assert _Page('<div class="crop-x" style="color:#6b7280;margin:0 1px">a</div>').faults == []
    for broken in ('XX<div class="crop-x">a</div>XX', '<div class="crop-x">a</div', '<p>a</div>', '<P>a</P>',
                   '<div style="XXcolor:#6b7280">a</div>', '<div style="color:#6b7280XX">a</div>',
                   '<div style="PADDING:1PX">a</div>', '<div class="CROP-X">a</div>', '<p>a</P>', '<div class="XXcrop-xXX">a</div>'):
        assert _Page(broken).faults, broken


def _translation_view(complete: bool, count: int, entities_from: str, tried: int):
    entities = [{"start": 0, "end": 4, "label": "PER", "text": "Anna"},
                {"start": 14, "end": 20, "label": "LOC", "text": "Berlin"}][:count]
    failures = [] if complete else [{"slot": 1, "label": "LOC", "text": "Berlin", "reason": "missing"},
                                    {"slot": None, "label": None, "text": None, "reason": "unpaired"}]
    result = {"complete": complete, "failures": failures, "translation": "Anna wohnt in Berlin",
              "entities": entities[:1], "hypotheses_tried": tried, "marked_translation": "__SLOT0__ Anna __SLOT0__ wohnt"}
    return SimpleNamespace(source="Anna lives in Berlin", source_entities=entities, entities_from=entities_from,
                           marked_source="__SLOT0__ Anna __SLOT0__ lives", result=result)


@pytest.mark.parametrize(("complete", "count", "entities_from", "tried", "said"), [
    (True, 1, "written", 1, ("1 entity written in the input.", "(all markers came back; 1 hypothesis tried)")),
    (False, 2, "ner model", 3, ("2 entities tagged by the NER model.", "(2 slot(s) failed; 3 hypotheses tried)")),
])
def test_the_translation_panels_say_where_entities_came_from_and_what_failed(complete, count, entities_from, tried,
                                                                              said):
    source, translation = render.translation_html(_translation_view(complete, count, entities_from, tried))
    entities, status = said
    highlighted = "Anna PER lives in Berlin" + (" LOC" if count == 2 else "")
    assert _shown(source) == ["Source", highlighted, f"{entities} Sent to the model with markers:",
                              "__SLOT0__ Anna __SLOT0__ lives"]
    failures = ["slot 1 (LOC Berlin): missing", "untyped span: unpaired"] if not complete else []
    assert _shown(translation) == ["Translation", "Anna PER wohnt in Berlin", f"Marked translation {status}:",
                                   "__SLOT0__ Anna __SLOT0__ wohnt", *failures]
    assert ("crop-failures" in translation) == (not complete)


def test_the_hypotheses_and_statuses_tables_have_their_headers_and_one_row_each():
    failure = {"slot": 0, "label": "PER", "text": "Anna", "reason": "missing"}
    hypotheses = [SimpleNamespace(marked="a", entities=[], failures=[failure, dict(failure, slot=1, reason="unpaired")],
                                  chosen=False, tried=True),
                  SimpleNamespace(marked="__SLOT0__ b __SLOT0__", entities=[{}], failures=[], chosen=True, tried=True),
                  SimpleNamespace(marked="c", entities=[{}, {}], failures=[], chosen=False, tried=False)]
    table = render.hypotheses_table(hypotheses)
    assert _shown(table) == ["| # | hypothesis (with markers) | entities read | why markers failed | used",
                             "| 1 | a | 0 | slot 0 (PER Anna): missing slot 1 (PER Anna): unpaired | tried",
                             "| 2 | __SLOT0__ b __SLOT0__ | 1 | none: complete | chosen",
                             "| 3 | c | 2 | none: complete | not needed"]
    assert 'class="crop-hypotheses"' in table and table.count("<br>") == 1
    statuses = render.statuses_table([{"text": "Anna", "label": "PER", "status": "found"}])
    assert _shown(statuses) == ["| source entity | label | status", "| Anna | PER | found"]
    assert 'class="crop-statuses"' in statuses


def _projection_view(alignment, aligned_by, *, complete=True, kept=True):
    result = {"tokens": ["In", "Berlin", "wohnt", "Anna", "Meier", "."], "tokenization": "words", "method": "hybrid",
              "entities": [{"token_start": 1, "token_end": 2, "label": "LOC"},
                           {"token_start": 3, "token_end": 5, "label": "PER"}],
              "complete": complete, "reason": None if complete else "entity_not_projected", "kept": kept,
              "entity_status": [{"text": "Anna Meier", "label": "PER", "status": "found"}]}
    return SimpleNamespace(source_tokens=["Anna", "Meier", "lives", "in", "Berlin"], alignment=alignment,
                           source_spans=[Span(0, 2, "PER"), Span(4, 5, "LOC")], result=result, aligned_by=aligned_by)


def test_the_projection_panel_marks_the_spans_and_says_what_became_of_the_sentence():
    shown = _shown(render.projection_html(_projection_view(None, None)))
    assert shown == ["In Berlin LOC wohnt Anna Meier PER .", "hybrid projection: complete, the sentence would be kept.",
                     "| source entity | label | status", "| Anna Meier | PER | found"]
    dropped = _shown(render.projection_html(_projection_view(None, None, complete=False, kept=False)))
    assert dropped[1] == "hybrid projection: incomplete (entity_not_projected), the sentence would be dropped."


@pytest.mark.parametrize(("aligned_by", "how"), [
    ("given", "typed in"), ("embedding", "SimAlign over the alignment encoder"), ("eflomal", "eflomal"),
    ("fast_align", "fast_align"), (None, "")])
def test_the_alignment_picture_says_how_it_was_aligned(aligned_by, how):
    shown = _shown(render.links_svg(_projection_view([(0, 3), (4, 1)], aligned_by)))
    assert shown == ["Anna Meier lives in Berlin In Berlin wohnt Anna Meier .", f"Alignment ({how}): 0-3 4-1"]
    assert _shown(render.links_svg(_projection_view([], aligned_by)))[-1] == f"Alignment ({how}): (no links)"
    assert _shown(render.links_svg(_projection_view(None, aligned_by))) == [
        "This method matches the entities' words in the target; it uses no word alignment."]


def test_the_alignment_picture_lays_words_out_by_their_length():
    # each word is 8 px a character (1 at least) wide, 16 px apart, from x = 10; a box is 3 px wider on each side
    assert render._token_x(["a", "", "bcd"]) == ([14.0, 38.0, 70.0], 98.0)
    view = _projection_view([(0, 3)], "given")
    view.result["tokens"][1] = "B"  # a one-letter entity: its box is as wide as any one-letter word's
    svg = ElementTree.fromstring(render.links_svg(view)).find("{http://www.w3.org/2000/svg}svg")
    drawn = {kind: list(svg.iter(f"{{http://www.w3.org/2000/svg}}{kind}")) for kind in ("text", "line", "rect")}
    rows = [(view.source_tokens, 20, [0, 1, 4]), (view.result["tokens"], 104, [1, 3, 4])]  # words, baseline, boxed
    layout = [render._token_x(words) for words, _, _ in rows]
    assert [(float(t.get("x")), int(t.get("y")), t.text) for t in drawn["text"]] == [
        (round(x, 1), y, word) for (words, y, _), (xs, _) in zip(rows, layout, strict=True)
        for x, word in zip(xs, words, strict=True)]
    assert float(svg.get("width")) == round(max(width for _, width in layout) + 10)
    (line,) = drawn["line"]  # source word 0 to target word 3, from under one row to above the other
    assert [float(line.get(k)) for k in ("x1", "y1", "x2", "y2")] == [
        round(layout[0][0][0], 1), 30, round(layout[1][0][3], 1), 88]
    assert [tuple(float(r.get(k)) for k in ("x", "y", "width", "height")) for r in drawn["rect"]] == [
        (round(xs[k] - (8 * len(words[k]) + 6) / 2, 1), y - 14, 8 * len(words[k]) + 6, 19)
        for (words, y, boxed), (xs, _) in zip(rows, layout, strict=True) for k in boxed]


def test_tree_boxes_are_blue_for_intents_and_green_for_slots():
    view = SimpleNamespace(tree=seqlogical.parse("[IN:GET_WEATHER weather in [SL:LOCATION Delhi ] ]"),
                           from_model=False, score=None, parse="[IN:GET_WEATHER weather in [SL:LOCATION Delhi ] ]")
    html = render.tree_html(view)
    assert _shown(html) == ["IN:GET_WEATHER", "weather in", "SL:LOCATION", "Delhi",
                            "Tree read from the bracket parse typed in:", view.parse]
    styles = dict(re.findall(r'class="crop-node" data-label="([^"]+)" style="([^"]+)"', html))
    assert "border:2px solid #2563eb;background:#eff6ff" in styles["IN:GET_WEATHER"]
    assert "border:2px solid #16a34a;background:#f0fdf4" in styles["SL:LOCATION"]


def test_highlight_skips_overlaps_and_empty_spans_but_keeps_going():
    text = "Anna Meier lives in Berlin"
    html = render.highlight(text, [{"start": 0, "end": 10, "label": "PER"}, {"start": 5, "end": 10, "label": "LOC"},
                                   {"start": 11, "end": 11, "label": "ORG"}, {"start": 20, "end": 26, "label": "LOC"}])
    assert _shown(html) == ["Anna Meier PER lives in Berlin LOC"]
    assert marks(html) == [("Anna Meier", "PER"), ("Berlin", "LOC")]


def test_label_colours_are_fixed_for_conll_and_stable_for_others():
    assert [render.color(label) for label in ("PER", "LOC", "ORG", "MISC")] == [
        "#fde68a", "#bbf7d0", "#bfdbfe", "#ddd6fe"]
    assert render.color("DATE") == render._PALETTE[zlib.crc32(b"DATE") % len(render._PALETTE)]
    assert render.color("Äpfel") == render._PALETTE[zlib.crc32("Äpfel".encode()) % len(render._PALETTE)]
    assert _shown(render.message("Type <a> sentence.")) == ["⚠ Type <a> sentence."]


def test_the_banner_says_the_models_are_random_and_how_to_start_with_real_ones():
    assert _shown(render.banner(["--mt_model", "--ner_model"])) == [
        "Tiny random-weight models: their output is meaningless. No --mt_model, --ner_model was given, so this app "
        "runs tiny models built offline with random weights; translations, tags, alignments and parses only show how "
        "the app works. For real output start it with models, e.g. crop-hf app --mt_model facebook/m2m100_418M "
        "--ner_model <NER model> --parser_model <parser>."]
    assert 'id="crop-tiny-banner"' in render.banner(["--mt_model"])
