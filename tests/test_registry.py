"""The one registry type, the typed options of the projection methods, and registering your own method or style."""

from __future__ import annotations

import dataclasses
import logging
import re
from dataclasses import dataclass, field

import pytest

from crop_hf.markers import MARKER_STYLES, BracketMarkers, extract, get_marker_style, mark_tokens
from crop_hf.projection import ProjectionPipeline, project_lexical, read_entities, tokenize_target
from crop_hf.projection.methods import (
    PROJECTION_METHODS,
    ProjectionExample,
    get_method,
    method_options,
    parse_method,
    project_examples,
    register_method,
)
from crop_hf.projection.options import (
    AlignmentOptions,
    FuzzyOptions,
    HybridOptions,
    LexicalOptions,
    ProjectionOptions,
)
from crop_hf.registry import Registry

# -- the registry type -----------------------------------------------------------------------------


def test_register_get_names_and_mapping_use():
    shapes = Registry("shape", {"circle": 1})
    assert shapes.register("square", 4) == 4
    assert shapes.names() == ("circle", "square") and list(shapes) == ["circle", "square"]
    assert shapes.get("square") == 4 and shapes["circle"] == 1
    assert "square" in shapes and "triangle" not in shapes and len(shapes) == 2
    assert dict(shapes.items()) == {"circle": 1, "square": 4}
    assert shapes.get("triangle", None) is None  # a default makes get a mapping's get
    shapes["circle"] = 2  # item assignment replaces, as a dict's does
    del shapes["square"]
    assert dict(shapes) == {"circle": 2}


def test_register_is_also_a_decorator_and_keeps_the_registration_order():
    kinds = Registry("kind")

    @kinds.register("b")
    def b():
        return "b"

    @kinds.register("a")
    class A:
        pass

    assert kinds.names() == ("b", "a") and kinds.get("b") is b and kinds.get("a") is A and b() == "b"


def test_a_taken_name_is_an_error_unless_replaced():
    shapes = Registry("shape", {"circle": 1})
    with pytest.raises(ValueError, match=r"^shape 'circle' is registered already; pass replace=True to replace it$"):
        shapes.register("circle", 2)
    assert shapes["circle"] == 1
    assert shapes.register("circle", 3, replace=True) == 3 and shapes.get("circle") == 3
    assert shapes.names() == ("circle",)


def test_an_unknown_name_names_the_kind_the_closest_names_and_every_known_name_in_order():
    shapes = Registry("shape", {"square": 4, "circle": 1, "squares": 5, "squared": 6, "squire": 7})
    # the three closest, closest first
    with pytest.raises(ValueError, match=r"^unknown shape 'sqaure' \(did you mean squire or square or squares\?\): "
                                         r"expected one of square, circle, squares, squared, squire$"):
        shapes.get("sqaure")
    with pytest.raises(ValueError, match=r"^unknown shape 'triangle': expected one of square, circle, squares, squared, "
                                         r"squire$"):
        shapes.get("triangle")  # nothing close: no guess
    with pytest.raises(KeyError):  # indexing stays a mapping's
        shapes["sqaure"]


def _six_registries():
    from crop_hf._registration import PIPELINE_TASKS
    from crop_hf.cli import COMMANDS
    from crop_hf.data.loading import BUILDERS
    from crop_hf.translation.backends import BACKENDS

    return {"command": COMMANDS, "pipeline task": PIPELINE_TASKS, "crop-hf dataset": BUILDERS,
            "projection method": PROJECTION_METHODS, "marker style": MARKER_STYLES, "backend": BACKENDS}


def test_the_six_registries_are_registries_with_one_error_wording():
    for kind, registry in _six_registries().items():
        assert isinstance(registry, Registry) and registry.kind == kind
        message = f"unknown {kind} 'nope': expected one of {', '.join(registry)}"
        with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
            registry.get("nope")


def test_the_getters_of_the_registries_raise_the_registry_error():
    from crop_hf.data.loading import builder_class
    from crop_hf.translation.backends import make_backend

    with pytest.raises(ValueError, match=r"^unknown projection method 'lexcial' \(did you mean lexical\?\): expected "
                                         "one of lexical, fuzzy, alignment, hybrid"):
        get_method("lexcial?ignore_case=true")
    with pytest.raises(ValueError, match=r"^unknown marker style 'xml': expected one of crop, easyproject"):
        get_marker_style("xml")
    with pytest.raises(ValueError, match=r"^unknown crop-hf dataset 'conll6' \(did you mean conll5\?\): expected one "
                                         "of conll5, xtreme40"):
        builder_class("conll6")
    with pytest.raises(ValueError, match=r"^unknown backend 'onnx': expected one of transformers, ctranslate2$"):
        make_backend("onnx", None, None)


# -- typed options -----------------------------------------------------------------------------------


def test_each_method_has_its_options_class_and_its_option_names_come_from_it():
    classes = {"lexical": LexicalOptions, "fuzzy": FuzzyOptions, "alignment": AlignmentOptions, "hybrid": HybridOptions}
    for name, options_class in classes.items():
        method = PROJECTION_METHODS[name]
        assert method.options_class is options_class
        assert method.options == tuple(f.name for f in dataclasses.fields(options_class))
        assert all(f.metadata.get("help") for f in dataclasses.fields(options_class)), name


def test_values_are_converted_by_the_declared_type():
    lexical = LexicalOptions.parse("ignore_case=TRUE&nfkc=false&repeated=once&drop_incomplete=False", "lexical")
    assert (lexical.ignore_case, lexical.nfkc, lexical.repeated, lexical.drop_incomplete) == (True, False, "once", False)
    assert lexical.strip_punctuation is True  # not written: the default
    fuzzy = FuzzyOptions.parse("threshold=75", "fuzzy")
    assert fuzzy.threshold == 75.0 and isinstance(fuzzy.threshold, float)
    alignment = AlignmentOptions.parse({"fill_gaps": "2", "function_words": "de", "postpositions": "none",
                                        "prepositions": "en", "pieces": "largest"}, "alignment")
    assert alignment.fill_gaps == 2 and isinstance(alignment.fill_gaps, int)
    assert (alignment.function_words, alignment.postpositions, alignment.pieces) == ("de", None, "largest")
    from crop_hf.projection.options import InsertionOptions

    # a plain str option takes the word as written ("none" is not None), then the option checks it
    assert InsertionOptions.parse({"marker_style": "none"}, "insertion").marker_style == "none"
    with pytest.raises(ValueError, match="prepositions='none': crop-hf has no adposition list for 'none'"):
        AlignmentOptions.parse({"prepositions": "none"}, "alignment")
    assert HybridOptions.parse("threshold=none", "hybrid").threshold is None
    assert parse_method("lexical?drop_incomplete=None") == ("lexical", {"drop_incomplete": None})
    assert HybridOptions.parse("threshold=80.5", "hybrid").threshold == 80.5
    assert parse_method("hybrid?threshold=80&one_word=true&fill_gaps=0") == (
        "hybrid", {"threshold": 80.0, "one_word": True, "fill_gaps": 0})
    assert type(parse_method("hybrid?fill_gaps=3")[1]["fill_gaps"]) is int
    assert type(parse_method("hybrid?one_word=false")[1]["one_word"]) is bool


@pytest.mark.parametrize("spec, message", [
    ("hybrid?threshold=abc", "projection method 'hybrid': threshold='abc' is not a number or none"),
    ("hybrid?one_word=yes", "projection method 'hybrid': one_word='yes' is not true or false"),
    ("lexical?ignore_case=1", "projection method 'lexical': ignore_case='1' is not true or false"),
    ("alignment?fill_gaps=1.5", "projection method 'alignment': fill_gaps='1.5' is not an integer"),
    ("alignment?pieces=big", "projection method 'alignment': pieces='big' is not one of 'split', 'largest'"),
    ("fuzzy?threshold=high", "projection method 'fuzzy': threshold='high' is not a number"),
    ("lexical?drop_incomplete=maybe", "projection method 'lexical': drop_incomplete='maybe' is not true or false or none"),
])
def test_a_value_of_the_wrong_type_names_the_method_the_option_and_what_it_accepts(spec, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        get_method(spec)


def test_an_unknown_option_names_the_method_and_the_options_it_takes():
    with pytest.raises(ValueError, match=r"^projection method 'alignment': unknown option 'fuzzy'; valid options: "
                                         r"capitalized_nouns, drop_incomplete, fill_gaps, function_words, one_word"):
        parse_method("alignment?fuzzy=80")
    with pytest.raises(ValueError, match=r"unknown option 'treshold' \(did you mean threshold\?\)"):
        FuzzyOptions.parse("treshold=80", "fuzzy")
    with pytest.raises(TypeError, match="takes no option"):  # a keyword argument, as for any function
        project_examples("lexical", [], threshold=80)


def test_hybrid_takes_every_alignment_option_with_its_own_defaults():
    alignment = {f.name: f for f in dataclasses.fields(AlignmentOptions)}
    hybrid = {f.name: f for f in dataclasses.fields(HybridOptions)}
    assert set(alignment) < set(hybrid)
    assert set(hybrid) - set(alignment) == {"nfkc", "strip_punctuation", "threshold"}
    assert {name for name in alignment if hybrid[name].default != alignment[name].default} == {"fill_gaps", "pieces"}
    assert (HybridOptions().fill_gaps, HybridOptions().pieces) == (1, "largest")
    assert all(hybrid[name].metadata == alignment[name].metadata for name in alignment)  # one help per option
    written = {"fill_gaps": "2", "pieces": "split", "trim_edges": "true", "one_word": "true",
               "capitalized_nouns": "true", "function_words": "de", "postpositions": "hi", "prepositions": "en",
               "drop_incomplete": "true"}
    assert set(written) == set(alignment)
    assert dataclasses.asdict(HybridOptions.parse(written, "hybrid")) == {
        **dataclasses.asdict(AlignmentOptions.parse(written, "alignment")),
        "nfkc": True, "strip_punctuation": True, "threshold": None}


def test_options_given_by_keyword_win_and_drop_incomplete_defaults_to_the_method():
    method, options = method_options("hybrid?one_word=true&threshold=80", threshold=None)
    assert method.name == "hybrid" and isinstance(options, HybridOptions)
    assert (options.one_word, options.threshold, options.drop_incomplete) == (True, None, False)
    assert method_options("lexical")[1].drop_incomplete is True
    assert method_options("lexical?drop_incomplete=false")[1].drop_incomplete is False
    normalizer = method_options("lexical?ignore_case=true&nfkc=false")[1].arguments()["normalizer"]
    assert (normalizer.ignore_case, normalizer.nfkc, normalizer.strip_punctuation) == (True, False, True)


# -- your own method and marker style ---------------------------------------------------------------


@dataclass
class OnlyOptions(ProjectionOptions):
    labels: str = field(default="PER,LOC,ORG", metadata={"help": "The entity types to project."})
    limit: int | None = field(default=None, metadata={"help": "At most this many entities."})


def _only(example, options):
    entities = [(e.text, e.label) for e in read_entities(example.entities)[0] if e.label in options.labels.split(",")]
    return project_lexical(example.target, entities[:options.limit], drop_incomplete=options.drop_incomplete)


@pytest.fixture
def only_method():
    # replace=True: the docs example (tests/test_readme.py runs it) registers a method of this name too
    before = PROJECTION_METHODS.get("only", None)
    register_method("only", _only, OnlyOptions, replace=True)
    yield
    restore(PROJECTION_METHODS, "only", before)


ENTITIES = [("Anna", "PER"), ("Göteborg", "LOC")]


def _example():
    return ProjectionExample(tokenize_target("Anna wohnt in Göteborg ."), entities=ENTITIES)


def test_a_registered_method_is_used_by_name_with_its_typed_options(only_method):
    assert get_method("only?limit=1").options == ("drop_incomplete", "labels", "limit")
    assert project_examples("only?labels=LOC", [_example()])[0].tags == ["O", "O", "O", "B-LOC", "O"]
    assert project_examples("only?limit=1", [_example()])[0].tags == ["B-PER", "O", "O", "O", "O"]
    assert project_examples("only?limit=none", [_example()], labels="LOC,PER")[0].tags == [
        "B-PER", "O", "O", "B-LOC", "O"]
    with pytest.raises(ValueError, match=r"^projection method 'only': limit='one' is not an integer or none$"):
        project_examples("only?limit=one", [_example()])
    projector = ProjectionPipeline(method="only", labels="PER")
    assert projector({"target": "Anna wohnt in Göteborg .", "entities": ENTITIES})["tags"] == [
        "B-PER", "O", "O", "O", "O"]
    out = projector({"target": "Anna wohnt in Göteborg .", "entities": ENTITIES}, labels="LOC")
    assert out["tags"] == ["O", "O", "O", "B-LOC", "O"]
    out = ProjectionPipeline(method="only?limit=1")({"target": "Anna wohnt in Göteborg .", "entities": ENTITIES})
    assert out["tags"] == ["B-PER", "O", "O", "O", "O"]


def test_pipeline_from_the_factory_takes_a_registered_method(only_method):
    from transformers import pipeline

    import crop_hf  # noqa: F401  (registers the projection task)

    projector = pipeline("projection", method="only", limit=1)
    assert projector({"target": "Anna wohnt in Göteborg .", "entities": ENTITIES})["tags"] == [
        "B-PER", "O", "O", "O", "O"]


def test_register_method_as_a_decorator_with_alignment_and_its_refusals():
    calls = []

    @register_method("first-link", uses_alignment=True, drop_incomplete=False)
    def first_link(example, options):
        calls.append(options)
        return project_lexical(example.target, [], drop_incomplete=options.drop_incomplete)

    try:
        assert first_link.__name__ == "first_link"  # the decorator returns the function
        aligner = type("Aligner", (), {"align": lambda self, src, tgt: [[(0, 0)] for _ in src]})()
        example = ProjectionExample(tokenize_target("a b"), source_tokens=["x", "y"])
        project_examples("first-link", [example], aligner=aligner)
        assert example.alignment == [(0, 0)]  # uses_alignment: aligned before the function ran
        assert calls == [ProjectionOptions(drop_incomplete=False)]
        with pytest.raises(ValueError, match="projection method 'first-link' is registered already"):
            register_method("first-link", first_link)
        register_method("first-link", first_link, drop_incomplete=True, replace=True)
        assert get_method("first-link").drop_incomplete is True
        with pytest.raises(TypeError, match="must subclass ProjectionOptions"):
            register_method("loose", first_link, dict)
        assert "loose" not in PROJECTION_METHODS
    finally:
        del PROJECTION_METHODS["first-link"]


class StrictBrackets(BracketMarkers):
    name = "strict-brackets"

    def __init__(self):
        super().__init__(threshold=90.0)


@pytest.fixture
def strict_brackets():
    before = MARKER_STYLES.get("strict-brackets", None)
    MARKER_STYLES.register("strict-brackets", StrictBrackets, replace=True)
    yield
    restore(MARKER_STYLES, "strict-brackets", before)


def restore(registry, name, before) -> None:
    """Put back what ``name`` was before a test registered its own (or nothing)."""
    if before is None:
        del registry[name]
    else:
        registry[name] = before


def test_a_registered_marker_style_is_used_by_name(strict_brackets):
    style = get_marker_style("strict-brackets")
    assert isinstance(style, StrictBrackets) and style.threshold == 90.0
    marked = mark_tokens(["Anna", "lives", "in", "Gothenburg"], [(0, 1, "PER"), (3, 4, "LOC")], style="strict-brackets")
    assert (marked.text, marked.style) == ("[ Anna ] lives in [ Gothenburg ]", "strict-brackets")
    found = extract(marked, "[ Anna ] wohnt in [ Göteborg ]", {0: "Anna", 1: "Göteborg"})  # by marked.style
    assert [(e.text, e.label) for e in found.entities] == [("Anna", "PER"), ("Göteborg", "LOC")]
    # "Göteborgska" is 84 similar to "Göteborg": enough for the built-in style's 70, not for this one's 90
    loose = extract(marked, "[ Anna ] wohnt in [ Göteborgska ]", {0: "Anna", 1: "Göteborg"}, style="easyproject")
    strict = extract(marked, "[ Anna ] wohnt in [ Göteborgska ]", {0: "Anna", 1: "Göteborg"})
    assert loose.complete and not strict.complete


def test_hybrids_former_fuzzy_option_reads_as_threshold_with_a_deprecation_message(caplog):
    caplog.set_level(logging.WARNING, logger="crop-hf")
    assert HybridOptions.parse("fuzzy=80.5", "hybrid").threshold == 80.5
    assert parse_method("hybrid?fuzzy=70&one_word=true") == ("hybrid", {"threshold": 70.0, "one_word": True})
    with pytest.raises(ValueError, match="threshold='abc' is not a number or none"):
        parse_method("hybrid?fuzzy=abc")
    said = [record.getMessage() for record in caplog.records if record.name == "crop-hf"]
    assert said == ["projection method 'hybrid': fuzzy= is renamed threshold=; the former spelling will stop "
                    "working in a later release"] * 3


@pytest.mark.parametrize(("spec", "message"), [
    ("hybrid?function_words=xx", "projection method 'hybrid': function_words='xx': crop-hf has no function-word list "
                                 "for 'xx' (it has de, en)"),
    ("alignment?postpositions=fr", "projection method 'alignment': postpositions='fr': crop-hf has no adposition list "
                                   "for 'fr' (it has en, hi)"),
    ("hybrid_rerank?prepositions=zz", "projection method 'hybrid_rerank': prepositions='zz': "),
])
def test_a_list_code_crop_hf_does_not_ship_fails_where_the_spec_is_read(spec, message):
    """Before any model is loaded: synthesis and translate-and-align configs read the spec (issue 62)."""
    from crop_hf.augment.translate_align import TranslateAlignConfig
    from crop_hf.synthesis import SynthesisConfig

    with pytest.raises(ValueError, match=re.escape(message)):
        parse_method(spec)
    with pytest.raises(ValueError, match=re.escape(message)):
        SynthesisConfig(tgt_langs=["de"], method=spec, alignment_model="eflomal", mt_model="m", ner_model="n")
    with pytest.raises(ValueError, match=re.escape(message)):
        TranslateAlignConfig(input="in.tsv", output_dir="out", tgt_lang="hi", method=spec)
    assert parse_method(spec.split("=")[0] + "=" + ("de" if "function" in spec else "hi"))[0] == spec.split("?")[0]
