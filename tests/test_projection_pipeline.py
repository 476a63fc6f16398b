"""ProjectionPipeline: registered as "projection", model-free lexical use, batched alignment, datasets."""

from __future__ import annotations

import pytest

from crop_hf.alignment import EmbeddingAligner
from crop_hf.projection import ProjectionPipeline, project_alignment, project_fuzzy, project_lexical

LEXICAL_INPUTS = [
    {"target": "Ich wohne in Göteborg.", "translation": {
        "translation": "Ich lebe in Göteborg.", "marked_translation": "Ich lebe in __SLOT0__ Göteborg __SLOT0__.",
        "entities": [{"text": "Göteborg", "label": "LOC", "start": 12, "end": 20}], "complete": True}},
    {"target": "我住在哥德堡。", "entities": [{"text": "哥德堡", "label": "LOC"}]},
    {"target": "Vivo en Gotemburg .", "entities": [("Gotemburgo", "LOC")]},
    {"target": list("私はヨーテボリに住む"), "entities": [("ヨーテボリ", "LOC")], "lang": "ja"},
]

ALIGNMENT_INPUTS = [
    {"source_tokens": ["I", "live", "in", "New", "York", "."], "source_tags": ["O", "O", "O", "B-LOC", "I-LOC", "O"],
     "target": "Vivo en Nueva York ."},
    {"source_tokens": ["Angela", "Merkel", "visited", "Paris", "."], "source_tags": ["B-PER", "I-PER", "O", "B-LOC", "O"],
     "target": "Angela Merkel besuchte Paris ."},
    {"source_tokens": ["Volvo"], "source_tags": ["B-ORG"], "target": "Volvo"},
]




def test_registered_with_transformers():
    from transformers.pipelines import PIPELINE_REGISTRY

    import crop_hf  # noqa: F401

    assert "projection" in PIPELINE_REGISTRY.get_supported_tasks()
    assert PIPELINE_REGISTRY.check_task("projection")[1]["impl"] is ProjectionPipeline


def test_lexical_without_a_model_matches_the_functions():
    projector = ProjectionPipeline()
    outputs = projector(LEXICAL_INPUTS)
    assert [o["method"] for o in outputs] == ["lexical"] * 4
    for example, output in zip(LEXICAL_INPUTS, outputs, strict=True):
        entities = example.get("translation", example.get("entities"))
        expected = project_lexical(example["target"], entities, lang=example.get("lang")).to_dict()
        assert output == expected
    assert [o["kept"] for o in outputs] == [True, True, False, True]  # Gotemburgo is not in the sentence
    assert outputs[1]["tokenization"] == "characters" and outputs[3]["tokenization"] == "given"
    fuzzy = projector(LEXICAL_INPUTS[2], method="fuzzy")
    assert fuzzy == project_fuzzy("Vivo en Gotemburg .", [("Gotemburgo", "LOC")]).to_dict()
    assert fuzzy["kept"]


def test_batches_and_datasets_give_the_same_outputs():
    import datasets

    projector = ProjectionPipeline(method="fuzzy", threshold=70)
    one_by_one = projector(LEXICAL_INPUTS[1:3])
    assert projector(LEXICAL_INPUTS[1:3], batch_size=2) == one_by_one
    rows = datasets.Dataset.from_list([
        {"target": "我住在哥德堡。", "entities": [{"text": "哥德堡", "label": "LOC"}]},
        {"target": "Vivo en Gotemburg .", "entities": [{"text": "Gotemburgo", "label": "LOC"}]},
    ])
    streamed = projector(rows, batch_size=2)
    assert not isinstance(streamed, list)  # datasets stream lazily, as in transformers
    assert list(streamed) == one_by_one


def test_alignment_through_the_pipeline_factory(tiny_bert):
    from transformers import pipeline

    projector = pipeline("projection", model=str(tiny_bert), method="alignment", layer=2, align_method="argmax",
                         device="cpu")
    assert isinstance(projector, ProjectionPipeline) and isinstance(projector.aligner, EmbeddingAligner)
    outputs = projector(ALIGNMENT_INPUTS, batch_size=2)
    aligner = EmbeddingAligner(tiny_bert, layer=2, method="argmax")
    alignments = aligner.align([e["source_tokens"] for e in ALIGNMENT_INPUTS],
                               [e["target"].split() for e in ALIGNMENT_INPUTS])
    for example, alignment, output in zip(ALIGNMENT_INPUTS, alignments, outputs, strict=True):
        expected = project_alignment(example["source_tokens"], example["source_tags"], example["target"], alignment)
        assert output == expected.to_dict()
    assert outputs[2]["tags"] == ["B-ORG"]  # a one-word pair can only align one way
    assert projector(ALIGNMENT_INPUTS, batch_size=1) == outputs
    # The same pipeline does lexical projection per call.
    assert projector(LEXICAL_INPUTS[1], method="lexical")["tags"][3:6] == ["B-LOC", "I-LOC", "I-LOC"]


def test_precomputed_alignment_needs_no_model_and_ids_map_to_labels():
    projector = ProjectionPipeline(method="alignment", label_names=["O", "B-LOC", "I-LOC"])
    out = projector({"source_tokens": ["in", "New", "York"], "source_tags": [0, 1, 2],
                     "target": "en Nueva York", "alignment": "0-0 1-1 2-2"})
    assert out["tags"] == ["O", "B-LOC", "I-LOC"] and out["kept"]
    unaligned = projector({"source_tokens": ["New"], "source_tags": [1], "target": "Nueva", "alignment": ""})
    assert unaligned["kept"] and not unaligned["complete"]  # alignment keeps incomplete sentences by default
    assert not projector({"source_tokens": ["New"], "source_tags": [1], "target": "Nueva", "alignment": ""},
                         drop_incomplete=True)["kept"]


def test_errors_name_the_problem():
    projector = ProjectionPipeline()
    with pytest.raises(ValueError, match="dict with a 'target'"):
        projector("Ich wohne in Göteborg")
    with pytest.raises(ValueError, match=r"needs 'translation'.*'Ich wohne'"):
        projector({"target": "Ich wohne"})
    with pytest.raises(ValueError, match="an aligner"):
        projector({"source_tokens": ["a"], "source_tags": ["O"], "target": "b"}, method="alignment")
    with pytest.raises(TypeError, match="unknown projection option"):
        ProjectionPipeline(treshold=50)
    with pytest.raises(ValueError, match=r"^unknown projection method 'magic': expected one of lexical, fuzzy, "):
        ProjectionPipeline(method="magic")


@pytest.mark.parametrize("options", [{}, {"method": "lexical"}, {"method": "fuzzy"}])
def test_factory_without_a_model_loads_nothing(options):
    """Regression: pipeline("projection") and pipeline("projection", method="lexical") raised KeyError: 'default'."""
    from transformers import pipeline

    projector = pipeline("projection", **options)
    assert projector.model is None
    out = projector({"target": "Ich wohne in Göteborg .", "entities": [("Göteborg", "LOC")]})
    assert out["tags"] == ["O", "O", "O", "B-LOC", "O"]


def test_factory_alignment_with_given_alignments_and_class_label_ids():
    import datasets
    from transformers import pipeline

    from crop_hf.labels import CONLL_LABELS

    projector = pipeline("projection", method="alignment")
    features = datasets.Features({
        "target": datasets.List(datasets.Value("string")),
        "source_tokens": datasets.List(datasets.Value("string")),
        "source_tags": datasets.List(datasets.ClassLabel(names=list(CONLL_LABELS.names))),
        "alignment": datasets.Value("string"),
    })
    rows = datasets.Dataset.from_dict({
        "target": [["Vivo", "en", "Nueva", "York"], ["Hola", "Ana"]],
        "source_tokens": [["I", "live", "in", "New", "York"], ["Hello", "Ana"]],
        "source_tags": [CONLL_LABELS.encode(["O", "O", "O", "B-LOC", "I-LOC"]), CONLL_LABELS.encode(["O", "B-PER"])],
        "alignment": ["1-0 2-1 3-2 4-3", "0-0 1-1"],
    }, features=features)
    assert [out["tags"] for out in projector(rows)] == [["O", "O", "B-LOC", "I-LOC"], ["O", "B-PER"]]
    with pytest.raises(ValueError, match="needs an 'alignment' in each input or an aligner"):
        projector({"target": ["Hola", "Ana"], "source_tokens": ["Hello", "Ana"], "source_tags": ["O", "B-PER"]})
