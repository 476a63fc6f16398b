"""Apertium as a translator (``--mt_model apertium``): markers through its format handling, one process per
batch, the pair chosen from the run's languages, one-line errors, and the run's fingerprint and card.

Tests that run the real engine need Debian's ``apertium`` and ``apertium-eng-spa``: they skip where
those are missing, except under ``CROP_HF_REQUIRE_APERTIUM=1`` (``.ci/run`` installs both and sets
it), where a missing engine fails them.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
from pathlib import Path
from typing import ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crop_hf.markers import extract, get_marker_style, mark_text, mark_tokens
from crop_hf.translation.apertium import (
    Apertium,
    ApertiumNotInstalledError,
    apertium_html,
    check_apertium,
    debian_package,
    describe_translator,
    is_apertium,
    not_applicable,
    pair_candidates,
    read_html,
)

REQUIRED = os.environ.get("CROP_HF_REQUIRE_APERTIUM") == "1"

#: Real sentences (CoNLL-2003 English train, Europarl), their entities as (text, label).
SENTENCES = [
    ("EU rejects German call to boycott British lamb .", [("EU", "ORG"), ("German", "MISC"), ("British", "MISC")]),
    ("Peter Blackburn", [("Peter Blackburn", "PER")]),
    ("The European Commission said on Thursday it disagreed with German advice .",
     [("European Commission", "ORG"), ("German", "MISC")]),
    ("Germany 's representative to the European Union 's veterinary committee Werner Zwingmann said on Wednesday .",
     [("Germany", "LOC"), ("European Union", "ORG"), ("Werner Zwingmann", "PER")]),
    ("Fischler proposed EU-wide measures after reports from Britain and France .",
     [("Fischler", "PER"), ("Britain", "LOC"), ("France", "LOC")]),
]


@pytest.fixture(scope="module")
def apertium() -> Apertium:
    """The real engine with English-Spanish installed; a skip (or, in CI, a failure) where it is not."""
    engine = Apertium()
    try:
        check_apertium([("en", "es"), ("es", "en")], engine)
    except ApertiumNotInstalledError as error:
        if REQUIRED:
            pytest.fail(f"CROP_HF_REQUIRE_APERTIUM=1 but {error}")
        pytest.skip(str(error))
    return engine


def marked(text: str, entities, style: str = "crop"):
    spans = []
    for entity, label in entities:
        start = text.index(entity)
        spans.append({"start": start, "end": start + len(entity), "label": label})
    return mark_text(text, spans, style)


# --- without the engine: names, packages, the HTML both ways ---------------------------------------


def test_pairs_are_tried_as_apertium_names_them_and_debian_packages_are_found_either_way():
    assert pair_candidates("en", "es") == ["en-es", "en-spa", "eng-es", "eng-spa"]
    assert pair_candidates("eng_Latn", "spa_Latn") == ["eng-spa"]  # NLLB's spelling reads as ISO 639-3
    assert debian_package("en", "es") == debian_package("es", "en") == "apertium-eng-spa"
    assert debian_package("eu", "en") == "apertium-eu-en"
    assert debian_package("gl", "es") == "apertium-es-gl"
    assert debian_package("en", "de") is None  # Debian has no English-German pair
    assert is_apertium("apertium") and is_apertium(" Apertium ") and is_apertium(Apertium())
    assert not is_apertium("facebook/m2m100_418M") and not is_apertium(None)


def test_what_apertium_cannot_do_is_split_into_ignored_and_refused_in_cli_spelling():
    assert not_applicable() == ([], [])
    assert not_applicable(num_beams=4, num_return_sequences=1) == (["--num_beams 4"], [])
    ignored, refused = not_applicable(backend="ctranslate2", compute_type="int8", constrain_markers=True,
                                      scoring_method="rerank")
    assert ignored == []
    assert refused == ["--constrain_markers", "--backend ctranslate2", "--compute_type int8",
                       "--method rerank (it scores with the translation model)"]


def test_markers_become_inline_tags_with_the_rest_escaped():
    sentence = marked("Smith & Wesson <Ltd> met Anna .", [("Smith & Wesson", "ORG"), ("Anna", "PER")])
    assert apertium_html(sentence) == '<b id="0">Smith &amp; Wesson</b> &lt;Ltd&gt; met <b id="1">Anna</b> .'
    brackets = marked("Smith & Wesson met Anna .", [("Smith & Wesson", "ORG"), ("Anna", "PER")], "easyproject")
    assert apertium_html(brackets) == '<b id="0">Smith &amp; Wesson</b> met <b id="1">Anna</b> .'


def test_tags_read_back_become_the_styles_markers_and_extract_complete():
    sentence = marked("I met Anna in New York .", [("Anna", "PER"), ("New York", "LOC")])
    output = 'Conocí a <b id="0">Ana</b> en <b id="1">Nueva York</b>.'
    translation = read_html(sentence, output)
    assert translation == "Conocí a __SLOT0__ Ana __SLOT0__ en __SLOT1__ Nueva York __SLOT1__ ."
    result = extract(sentence, translation)
    assert result.complete
    assert [(e.text, e.label) for e in result.entities] == [("Ana", "PER"), ("Nueva York", "LOC")]


def test_the_pieces_of_one_tag_are_one_entity_again_with_the_words_apertium_put_between():
    # "Microsoft Corporation" -> "Empresa de Microsoft": Apertium tags each word, "de" comes between
    sentence = marked("The red car of Microsoft Corporation .", [("red", "MISC"), ("Microsoft Corporation", "ORG")])
    output = 'El coche <b id="0">rojo</b> de <b id="1">Empresa</b> de <b id="1">Microsoft</b>.'
    result = extract(sentence, read_html(sentence, output))
    assert result.complete
    assert [(e.text, e.label) for e in result.entities] == [("rojo", "MISC"), ("Empresa de Microsoft", "ORG")]


def test_reordered_entities_keep_their_own_labels():
    sentence = marked("He visited Spain and France .", [("Spain", "LOC"), ("France", "ORG")])
    result = extract(sentence, read_html(sentence, 'Visitó <b id="1">Francia</b> y <b id="0">España</b>.'))
    assert result.complete
    assert [(e.text, e.label) for e in result.entities] == [("Francia", "ORG"), ("España", "LOC")]


@pytest.mark.parametrize(("output", "reason"), [
    ('Conocí a Ana en <b id="1">Nueva York</b>.', "missing"),  # a tag dropped
    ('Conocí a <b id="0">Ana</b> <b id="1">en</b> <b id="0">Nueva</b> <b id="1">York</b>.', "duplicated"),  # split
    ('Conocí a <b id="0"></b> en <b id="1">Nueva York</b>.', "empty"),  # emptied
    ('Conocí a <b id="0">Ana en <b id="1">Nueva York</b>.', "unpaired"),  # opened, never closed
])
def test_a_tag_apertium_drops_splits_empties_or_leaves_open_makes_the_record_incomplete(output, reason):
    sentence = marked("I met Anna in New York .", [("Anna", "PER"), ("New York", "LOC")])
    result = extract(sentence, read_html(sentence, output))
    assert not result.complete
    assert reason in {failure.reason for failure in result.failures}


def test_an_invented_tag_and_foreign_markup_leave_only_their_words():
    sentence = marked("I met Anna .", [("Anna", "PER")])
    output = 'Conocí a <b id="0">Ana</b> <i>hoy</i> <b id="7">ayer</b> &amp; m&aacute;s.'
    result = extract(sentence, read_html(sentence, output))
    assert result.complete
    assert result.translation == "Conocí a Ana hoy ayer & más."


def test_untyped_brackets_come_back_as_brackets():
    sentence = marked("I met Anna in Rome .", [("Anna", "PER"), ("Rome", "PER")], "easyproject")
    translation = read_html(sentence, 'Conocí a <b id="0">Ana</b> en <b id="1">Roma</b>.')
    assert translation == "Conocí a [ Ana ] en [ Roma ] ."
    result = extract(sentence, translation)
    assert result.complete and [e.text for e in result.entities] == ["Ana", "Roma"]


WORDS = st.lists(st.sampled_from(["Anna", "lives", "in", "New", "York", "&", "<b>", "a", "très", "."]), min_size=1,
                 max_size=10)


@given(WORDS, st.data(), st.sampled_from(["crop", "easyproject"]))
def test_an_identity_translation_through_the_tags_gives_every_entity_back(tokens, data, style_name):
    if style_name == "easyproject" and any(token in ("[", "]") for token in tokens):
        return
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(tokens)), max_size=6))))
    spans = [(start, end, "PER") for start, end in zip(cuts[::2], cuts[1::2], strict=False) if start < end]
    sentence = mark_tokens(tokens, spans, style_name)
    style = get_marker_style(style_name)
    # Apertium's "identity": the HTML given back as it came (the spaces outside the tags may go)
    result = extract(sentence, read_html(sentence, apertium_html(sentence, style).replace(" <b", "<b")))
    assert result.complete
    assert [e.text for e in result.entities] == [" ".join(tokens[s:e]) for s, e, _ in spans]


# --- the real engine -----------------------------------------------------------------------------


def test_markers_survive_a_real_round_trip_through_apertium(apertium):
    sentences = [marked(text, entities) for text, entities in SENTENCES]
    spanish, _ = apertium.translate_marked(sentences, "en", "es")
    results = [extract(sentence, translation) for sentence, translation in zip(sentences, spanish, strict=True)]
    # Apertium moves "Werner Zwingmann" around "Unión europea" ("<b id=2>Werner</b> de la <b id=1>Unión
    # europea</b> <b id=2>Zwingmann</b>"): that slot is broken, and only that record is incomplete
    assert [result.complete for result in results] == [True, True, True, False, True]
    assert [(f.slot, f.reason) for f in results[3].failures] == [(2, "duplicated")]
    complete = [r for r in results if r.complete]
    assert [[e.label for e in r.entities] for r in complete] == [[label for _, label in ents] for k, (_, ents)
                                                                 in enumerate(SENTENCES) if k != 3]
    # translated, not copied (and lower-cased: the case changes lexical matching has to forgive)
    assert results[2].entities[0].text == "Comisión europea"
    # and back into English: the same names, in the same marker style
    back_sentences = [mark_text(r.translation, [e.as_dict() for e in r.entities]) for r in complete]
    english, _ = apertium.translate_marked(back_sentences, "es", "en")
    back = [extract(sentence, text) for sentence, text in zip(back_sentences, english, strict=True)]
    assert all(result.complete for result in back)
    assert back[1].entities[0].text == "Peter Blackburn"


def test_conll2002_sentences_keep_their_markers_both_ways(apertium, shared_data):
    from crop_hf.data.readers.conll import read_conll
    from crop_hf.labels import tags_to_spans

    sentences = []
    for sentence in read_conll(shared_data / "conll2002" / "esp.testa"):
        spans = tags_to_spans(list(sentence.tags))
        if spans and len(sentence.tokens) <= 40:
            sentences.append(mark_tokens(list(sentence.tokens), spans))
        if len(sentences) == 60:
            break
    english, _ = apertium.translate_marked(sentences, "es", "en")
    results = [extract(s, t) for s, t in zip(sentences, english, strict=True)]
    kept = sum(result.complete for result in results)
    assert kept >= 0.9 * len(sentences)  # the sample: every tag survived both directions


def test_one_apertium_process_per_batch_with_the_entity_translations_in_it(apertium, monkeypatch):
    calls = []
    real = subprocess.run

    def counting(arguments, *args, **kwargs):
        calls.append(list(arguments))
        return real(arguments, *args, **kwargs)

    engine = Apertium(batch_size=2)
    assert "eng-spa" in engine.installed_pairs  # listed before counting: listing is not a translation
    monkeypatch.setattr(subprocess, "run", counting)
    sentences = [marked(text, entities, "easyproject") for text, entities in SENTENCES]
    translations, entity_translations = engine.translate_marked(sentences, "en", "es")
    translating = [call for call in calls if "html" in call]
    # 5 sentences + the entities of the sentences whose brackets need them = 5 + 7 paragraphs, 2 a process
    needing = sum(len(s.entities) for s in sentences if get_marker_style("easyproject").needs_entity_translations(s))
    assert len(translating) == -(-(len(sentences) + needing) // 2)
    assert all(call[-1] == "eng-spa" for call in translating)
    assert entity_translations[0] == {0: "UE", 1: "Alemán", 2: "Británico"}
    assert extract(sentences[0], translations[0], entity_translations[0]).complete
    # an empty sentence is not sent, and keeps its place
    assert engine.translate(["Good morning", "", " ", "Thank you & goodbye"], "en", "es") == [
        "Buenos días", "", "", "Gracias & adiós"]


def test_the_pipeline_factory_builds_the_engine_pipeline_with_the_model_pipelines_outputs(apertium, caplog):
    import datasets
    from transformers import pipeline

    import crop_hf  # noqa: F401 - registers labeled-translation
    from crop_hf.translation.text_engine import TextEngineTranslationPipeline

    translate = pipeline("labeled-translation", model=apertium, src_lang="en", tgt_lang="es")
    assert isinstance(translate, TextEngineTranslationPipeline)
    record = {"tokens": ["I", "live", "in", "New", "York", "."], "ner_tags": ["O", "O", "O", "B-LOC", "I-LOC", "O"]}
    with caplog.at_level(logging.WARNING):
        one = translate(record, num_beams=4, num_return_sequences=2)
        translate(record, num_beams=4)
    assert one["complete"] and one["entities"][0]["text"] == "Nueva York" and one["entities"][0]["label"] == "LOC"
    assert one["hypotheses_tried"] == 1 and one["marked_source"] == "I live in __SLOT0__ New York __SLOT0__ ."
    said = [r.getMessage() for r in caplog.records if "one translation per sentence" in r.getMessage()]
    assert said == ["apertium gives one translation per sentence: num_beams=4, num_return_sequences=2 do not apply"]
    # a dataset of ClassLabel ids, streamed
    features = datasets.Features({"tokens": datasets.Sequence(datasets.Value("string")),
                                  "ner_tags": datasets.Sequence(datasets.ClassLabel(names=["O", "B-PER", "I-PER"]))})
    rows = datasets.Dataset.from_dict({"tokens": [["Anna", "sleeps"], ["Hello"]], "ner_tags": [[1, 0], [0]]},
                                      features=features)
    out = list(translate(rows))
    assert [o["entities"][0]["label"] for o in out[:1]] == ["PER"] and out[1]["entities"] == []
    with pytest.raises(ValueError, match="constrained decoding"):
        translate(record, constrain_markers=True)
    with pytest.raises(ValueError, match="backend='ctranslate2' does not apply"):
        pipeline("labeled-translation", model=apertium, backend="ctranslate2")
    with pytest.raises(ValueError, match="sentence 1: 2 tokens but 1 tags"):
        translate([record, {"tokens": ["a", "b"], "ner_tags": ["O"]}])
    with pytest.raises(ValueError, match="needs src_lang and tgt_lang"):
        pipeline("labeled-translation", model=apertium)("Hello")


def test_a_missing_binary_or_pair_is_one_line_naming_the_debian_packages(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no apertium anywhere
    with pytest.raises(ApertiumNotInstalledError) as missing:
        check_apertium([("es", "en"), ("en", "es")])
    assert str(missing.value) == ("Apertium is not installed (no 'apertium' command): install it with "
                                  "'apt-get install apertium apertium-eng-spa'")
    fake = tmp_path / "apertium"  # an engine with one pair installed
    fake.write_text("#!/bin/sh\nif [ \"$1\" = -l ]; then echo '  eng-spa'; echo '  spa-eng'; else echo 'Apertium 9.9.9'; fi\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    with pytest.raises(ApertiumNotInstalledError) as pair:
        check_apertium([("es", "en"), ("gl", "en")])
    assert str(pair.value) == ("Apertium has no gl->en pair installed (installed: eng-spa, spa-eng): install it "
                               "with 'apt-get install apertium-en-gl'")
    assert "\n" not in str(pair.value) and "\n" not in str(missing.value)
    assert Apertium().version == "9.9.9"


def test_the_fingerprint_names_the_engine_its_version_and_each_pairs_data(apertium, monkeypatch):
    both = describe_translator("apertium", [("es", "en"), ("en", "es")])["translator"]
    assert both["engine"] == "apertium" and both["version"] == apertium.version
    assert sorted(both["pairs"]) == ["eng-spa", "spa-eng"]
    assert both["pairs"]["eng-spa"] != both["pairs"]["spa-eng"]  # each pair's own data
    one_way = describe_translator("apertium", [("es", "en")])["translator"]
    assert list(one_way["pairs"]) == ["spa-eng"]
    assert describe_translator("facebook/m2m100_418M", [("es", "en")]) == {}  # a model's runs keep their fingerprint
    monkeypatch.setattr(Apertium, "version", "0.0.1")
    assert describe_translator("apertium", [("es", "en")])["translator"]["version"] == "0.0.1"


# --- in the jobs ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("options", "refused"), [
    ({"method": "insertion"}, "--method insertion (it scores with the translation model)"),
    ({"backend": "ctranslate2"}, "--backend ctranslate2"),
    ({"constrain_markers": True}, "--constrain_markers"),
    ({"mt_revision": "v2"}, "--mt_revision v2"),
])
def test_synthesis_refuses_what_apertium_cannot_do_before_any_work(apertium, options, refused):
    from crop_hf.synthesis import SynthesisConfig

    with pytest.raises(ValueError, match="--mt_model apertium: ") as error:
        SynthesisConfig(tgt_langs=["es"], mt_model="apertium", **options)
    assert refused in str(error.value) and "\n" not in str(error.value)


def test_synthesis_checks_every_pair_it_needs_before_any_work(apertium):
    from crop_hf.synthesis import SynthesisConfig

    with pytest.raises(ApertiumNotInstalledError, match="no de->en pair"):
        SynthesisConfig(tgt_langs=["es", "de"], mt_model="apertium")
    config = SynthesisConfig(tgt_langs=["es"], mt_model="apertium", method="hybrid", alignment_model="eflomal")
    assert config.translation_directions() == [("es", "en")]  # no back-translation: one direction
    assert SynthesisConfig(tgt_langs=["es"], mt_model="apertium").translation_directions() == [("es", "en"),
                                                                                               ("en", "es")]


class KeywordTagger:
    """Tags the English words it knows, as the token-classification pipeline would (first-subword groups)."""

    LABELS: ClassVar[dict[str, str]] = {"Madrid": "LOC", "Spain": "LOC", "France": "LOC", "Maria": "PER", "John": "PER"}

    def __init__(self):
        from types import SimpleNamespace

        from crop_hf.labels import CONLL_LABELS

        self.model = SimpleNamespace(config=SimpleNamespace(id2label=dict(enumerate(CONLL_LABELS.names)),
                                                            max_position_embeddings=None))

    def __call__(self, texts, batch_size=None):
        out = []
        for text in texts:
            found, position = [], 0
            for word in text.split():
                start = text.index(word, position)
                position = start + len(word)
                if word in self.LABELS:
                    found.append({"entity_group": self.LABELS[word], "score": 0.9, "word": word, "start": start,
                                  "end": position})
            out.append(found)
        return out


def test_a_synthesis_run_with_apertium_keeps_spanish_sentences_and_says_so_in_its_card(apertium, tmp_path, caplog):
    from crop_hf.labels import CONLL_LABELS
    from crop_hf.synthesis import SynthesisConfig, SynthesisJob, SynthesisModels
    from crop_hf.translation.loading import load_translator

    raw = tmp_path / "es.txt"
    raw.write_text("Juan vive en Madrid .\nMaría visitó Francia .\nno hay nada aquí .\n", encoding="utf-8")
    config = SynthesisConfig(tgt_langs=["es"], input=str(tmp_path / "{lang}.txt"), mt_model="apertium",
                             output_dir=str(tmp_path / "out"), ner_model="unused", language_filter=False,
                             show_progress=False)
    models = SynthesisModels(load_translator("apertium"), KeywordTagger(), CONLL_LABELS)
    with caplog.at_level(logging.WARNING):
        result = SynthesisJob(config, models=models).run()
    stats = result.statistics["es"]
    assert stats["input"] == 3 and stats["kept"] == 2 and stats["all_o"] == 1
    import datasets

    kept = datasets.load_from_disk(str(result.dataset_path))["es"]
    tags = {" ".join(tokens): [CONLL_LABELS.names[t] for t in ids] for tokens, ids in zip(kept["tokens"],
                                                                                          kept["ner_tags"],
                                                                                          strict=True)}
    assert tags["Juan vive en Madrid ."] == ["O", "O", "O", "B-LOC", "O"]
    assert tags["María visitó Francia ."] == ["O", "O", "B-LOC", "O"]
    warned = [r.getMessage() for r in caplog.records if "one translation per sentence" in r.getMessage()]
    assert warned == ["--mt_model apertium gives one translation per sentence: --num_beams 5 and "
                      "--num_return_sequences 3 do not apply"]
    card = (tmp_path / "out" / "README.md").read_text(encoding="utf-8")
    assert f"Apertium {apertium.version}, pairs `eng-spa`" in card and "`spa-eng`" in card
    run_json = json.loads(next((tmp_path / "out" / "shards").glob("*/run.json")).read_text())
    assert run_json["translator"]["version"] == apertium.version


def test_another_apertium_version_does_not_reuse_the_finished_shards(apertium, tmp_path, monkeypatch):
    from crop_hf.errors import OutputExistsError
    from crop_hf.labels import CONLL_LABELS
    from crop_hf.synthesis import SynthesisConfig, SynthesisJob, SynthesisModels
    from crop_hf.translation.loading import load_translator

    (tmp_path / "es.txt").write_text("Juan vive en Madrid .\n", encoding="utf-8")

    def run():
        config = SynthesisConfig(tgt_langs=["es"], input=str(tmp_path / "{lang}.txt"), mt_model="apertium",
                                 output_dir=str(tmp_path / "out"), ner_model="unused", language_filter=False,
                                 show_progress=False)
        return SynthesisJob(config, models=SynthesisModels(load_translator("apertium"), KeywordTagger(),
                                                              CONLL_LABELS)).run()

    run()
    assert run().skipped_shards == {"es": 1}  # the same engine resumes
    monkeypatch.setattr(Apertium, "version", "99.0")
    with pytest.raises(OutputExistsError):  # another version: refused, not silently reused
        run()


def test_translate_align_with_apertium(apertium, tmp_path):
    pytest.importorskip("eflomal")
    from crop_hf.augment.translate_align import TranslateAlignConfig, translate_align

    parses = tmp_path / "en.tsv"
    parses.write_text("parse\n" + "\n".join([
        "[IN:GET_WEATHER what is the weather in [SL:LOCATION Madrid ] ]",
        "[IN:GET_WEATHER weather for [SL:LOCATION Paris ] tomorrow ]",
        "[IN:CREATE_ALARM set an alarm for [SL:DATE_TIME six ] ]",
    ] * 4) + "\n", encoding="utf-8")
    config = TranslateAlignConfig(input=str(parses), output_dir=str(tmp_path / "out"), tgt_lang="es",
                                  mt_model="apertium", method="hybrid", language_filter=False, show_progress=False)
    result = translate_align(config)
    assert result.statistics["train"]["input"] == 12
    import datasets

    kept = datasets.load_from_disk(str(result.output_dir / "dataset"))
    parses_out = list(kept[next(iter(kept))]["parse"])
    assert any("[SL:LOCATION Madrid ]" in parse for parse in parses_out)
    card = (tmp_path / "out" / "README.md").read_text(encoding="utf-8")
    assert f"Apertium {apertium.version} (eng-spa" in card
    with pytest.raises(ValueError, match="--method insertion"):
        TranslateAlignConfig(input=str(parses), output_dir="x", tgt_lang="es", mt_model="apertium",
                             method="insertion")


def test_env_lists_apertium_and_its_pairs(apertium, capsys):
    from crop_hf.cli import main

    assert main(["env", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["apertium"] == apertium.version
    assert "eng-spa" in info["apertium pairs"].split()


def test_env_says_how_to_install_apertium_where_it_is_missing(monkeypatch, tmp_path, capsys):
    from crop_hf.cli import main

    monkeypatch.setenv("PATH", str(tmp_path))
    assert shutil.which("apertium") is None
    assert main(["env", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["apertium"].startswith("not installed (apt-get install apertium")
    assert Path(tmp_path).is_dir()
