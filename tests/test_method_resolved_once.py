"""A run reads its projection method spec once (issue 63, point 5).

* The synthesis and translate-and-align configs resolve ``method`` in ``__post_init__`` into a
  :class:`~crop_hf.projection.methods.ResolvedMethod` (``config.projection``) and every step of the
  run asks it: ``parse_method`` is called exactly once per run, where it was called 7 to 14 times
  (once per shard in two places, once per check, card, summary and warning).
* Each options class refuses a bad value when it is built, naming the method and the option.
* Synthesis and translate-and-align load their translator (and a model-scored method's scorer) with
  the one loader, :func:`crop_hf.projection.loading.load_method_models`.
"""

from __future__ import annotations

import dataclasses

import pytest
from synthesis_fakes import fake_config, fake_models
from test_translate_align import DictTranslator, TableAligner, item

import crop_hf.augment.translate_align as translate_align_module
import crop_hf.projection.loading as loading
import crop_hf.projection.methods as methods
import crop_hf.synthesis.stages as stages
from crop_hf.augment.translate_align import TranslateAlignConfig, TranslateAlignModels, translate_align
from crop_hf.projection.methods import ResolvedMethod, resolve_method
from crop_hf.projection.options import (
    AlignmentOptions,
    FuzzyOptions,
    HybridOptions,
    HybridRerankOptions,
    InsertionOptions,
    LexicalOptions,
    RerankOptions,
)
from crop_hf.synthesis import SynthesisConfig, SynthesisModels, synthesize


@pytest.fixture
def parses(monkeypatch):
    """Every spec ``parse_method`` reads while the test runs (every parse of a spec goes through it)."""
    read: list[str] = []
    real = methods.parse_method

    def counting(text):
        read.append(text)
        return real(text)

    monkeypatch.setattr(methods, "parse_method", counting)
    return read


SENTENCES = "Anna wohnt in Hamburg .\nPeter trifft Maria in Berlin .\nOtto lebt in Bremen .\nEva mag Paris .\n"

PARSES = [item("[IN:CREATE_ALARM set an alarm [SL:DATE_TIME for 7 am ] ]", where="a:1"),
          item("[IN:CREATE_CALL call [SL:CONTACT mom ] ]", where="a:2"),
          item("[IN:PLAY_MUSIC play [SL:MUSIC_TYPE music ] by [SL:MUSIC_ARTIST_NAME adele ] ]", where="a:3")]


# --------------------------------------------------------------------------- one parse per run


@pytest.mark.parametrize("method", ["lexical?ignore_case=true", "hybrid?capitalized_nouns=true"])
def test_a_synthesis_run_reads_its_method_spec_once(tmp_path, parses, method):
    """Before: 14 parses in this run (2 languages x 2 shards x 2 per shard, and 6 per run)."""
    for lang in ("de", "nl"):
        (tmp_path / f"{lang}.txt").write_text(SENTENCES, encoding="utf-8")
    config = fake_config(str(tmp_path / "{lang}.txt"), str(tmp_path / "out"), method=method,
                         alignment_model="fake-aligner" if method.startswith("hybrid") else None)
    result = synthesize(config, models=fake_models())
    assert result.statistics["de"]["input"] == result.statistics["nl"]["input"] == 4
    assert len(list((tmp_path / "out").glob("shards/*/*/*.parquet"))) >= 4  # two shards per language
    assert parses == [method]


def test_a_synthesis_run_that_loads_a_scoring_model_reads_its_method_spec_once(tmp_path, parses, tiny_m2m100,
                                                                                tiny_xlmr_ner):
    """Before: 13 (the load, each language's scorer check, each shard twice, the summary and the card)."""
    (tmp_path / "de.txt").write_text(SENTENCES, encoding="utf-8")
    config = SynthesisConfig(tgt_langs=["de"], input=str(tmp_path / "{lang}.txt"), output_dir=str(tmp_path / "out"),
                             mt_model=str(tiny_m2m100), ner_model=str(tiny_xlmr_ner), method="insertion?max_span_words=2",
                             num_beams=1, num_return_sequences=1, max_new_tokens=10, language_filter=False,
                             show_progress=False, shard_size=2)
    assert synthesize(config).statistics["de"]["input"] == 4
    assert parses == ["insertion?max_span_words=2"]


@pytest.mark.parametrize("method", ["alignment", "hybrid?postpositions=hi"])
def test_a_translate_align_run_reads_its_method_spec_once(tmp_path, parses, method):
    """Before: 7 (each of 2 shards twice, the config, the foreign-rule warning and the card)."""
    config = TranslateAlignConfig(input="unused", output_dir=str(tmp_path / "out"), tgt_lang="es", method=method,
                                  language_filter=False, show_progress=False, shard_size=2)
    result = translate_align(config, TranslateAlignModels(DictTranslator(), TableAligner()), inputs=PARSES)
    assert result.statistics["train"]["input"] == 3
    assert parses == [method]


def test_a_translate_align_run_that_loads_a_scoring_model_reads_its_method_spec_once(tmp_path, parses, tiny_m2m100):
    """Before: 11 (the load twice, each of 2 shards three times, the config, the warning and the card)."""
    config = TranslateAlignConfig(input="unused", output_dir=str(tmp_path / "out"), tgt_lang="de", method="insertion",
                                  mt_model=str(tiny_m2m100), language_filter=False, keep_incomplete=True, num_beams=1,
                                  max_new_tokens=8, show_progress=False, shard_size=2)
    assert translate_align(config, inputs=PARSES).statistics["train"]["input"] == 3
    assert parses == ["insertion"]


def test_the_resolved_method_is_an_attribute_not_a_field(tmp_path):
    config = fake_config("unused", str(tmp_path), method="hybrid?threshold=80", alignment_model="fake-aligner")
    assert isinstance(config.projection, ResolvedMethod) and config.projection.spec == "hybrid?threshold=80"
    assert "projection" not in {field.name for field in dataclasses.fields(config)}
    assert "projection" not in dataclasses.asdict(config) and "projection" not in config.result_arguments()
    other = TranslateAlignConfig(input="unused", output_dir=str(tmp_path), tgt_lang="es", method="hybrid")
    assert other.projection.name == "hybrid" and "projection" not in dataclasses.asdict(other)


# --------------------------------------------------------------------------- the resolved method


def test_a_resolved_method_keeps_the_spec_and_the_options_given_over_it(parses):
    resolved = resolve_method("hybrid?threshold=80&one_word=true", one_word=False, fill_gaps=2)
    assert (resolved.spec, resolved.name, resolved.uses_alignment, resolved.uses_scorer) == (
        "hybrid?threshold=80&one_word=true", "hybrid", True, False)
    options = resolved.options
    assert isinstance(options, HybridOptions)
    assert (options.threshold, options.one_word, options.fill_gaps, options.drop_incomplete) == (80.0, False, 2, False)
    # a later override is not a second read of the spec, and keeps what the spec and the first overrides said
    kept = resolved.with_options(drop_incomplete=True)
    assert (kept.options.threshold, kept.options.one_word, kept.options.fill_gaps, kept.drop_incomplete) == (
        80.0, False, 2, True)
    assert kept.with_options(drop_incomplete=None).drop_incomplete is False  # back to the method's rule
    assert parses == ["hybrid?threshold=80&one_word=true"]
    with pytest.raises(TypeError, match=r"projection method 'hybrid' takes no option\(s\) \['nbest'\]"):
        resolved.with_options(nbest=2)
    with pytest.raises(ValueError, match=r"^projection method 'hybrid': fill_gaps must be >= 0, got -1$"):
        resolved.with_options(fill_gaps=-1)


def test_the_resolved_method_says_what_the_string_functions_say():
    for spec in ("insertion", "insertion?marker_style=easyproject", "rerank", "lexical", "hybrid?postpositions=hi"):
        resolved = resolve_method(spec)
        assert resolved.placement() == methods.placement(spec)
        assert resolved.foreign_rules(["hi", "de", "es"]) == methods.foreign_rules(spec, ["hi", "de", "es"])
    assert resolve_method("insertion?marker_style=easyproject").marker_style == "easyproject"
    assert resolve_method("rerank").marker_style is None
    with pytest.raises(ValueError, match=r"^insertion projection scores spans with a translation model"):
        resolve_method("insertion").check_scorer(None)
    resolve_method("lexical").check_scorer(None)  # a method without a scorer checks nothing


# --------------------------------------------------------------------------- options check themselves


@pytest.mark.parametrize("options, message", [
    (lambda: LexicalOptions(repeated="twice"), "'lexical': repeated='twice' is not one of 'all', 'once'"),
    (lambda: FuzzyOptions(threshold=0), "'fuzzy': threshold is a similarity in (0, 100], got 0"),
    (lambda: AlignmentOptions(fill_gaps=-1), "'alignment': fill_gaps must be >= 0, got -1"),
    (lambda: AlignmentOptions(function_words="xx"), "'alignment': function_words='xx': crop-hf has no function-word"),
    (lambda: HybridOptions(pieces="big"), "'hybrid': pieces='big' is not one of 'split', 'largest'"),
    (lambda: HybridOptions(postpositions="xx"), "'hybrid': postpositions='xx': crop-hf has no adposition list"),
    (lambda: InsertionOptions(nbest=0), "'insertion': max_span_words, width and nbest must be at least 1, got 4, 1, 0"),
    (lambda: InsertionOptions(width=0), "'insertion': max_span_words, width and nbest must be at least 1, got 4, 0, 1"),
    (lambda: InsertionOptions(tail_tokens=-1), "'insertion': tail_tokens must be none or at least 0, got -1"),
    (lambda: InsertionOptions(source_markers="some"), "'insertion': source_markers='some' is not one of 'one', 'all'"),
    (lambda: RerankOptions(shortlist=0), "'rerank': max_span_words and shortlist must be at least 1, got 4 and 0"),
    (lambda: RerankOptions(candidates="few"), "'rerank': candidates='few' is not one of 'all', 'ngrams'"),
    (lambda: HybridRerankOptions(max_span_words=0),
     "'hybrid_rerank': max_span_words and shortlist must be at least 1, got 0 and 4"),
    (lambda: HybridRerankOptions(fill_gaps=-1), "'hybrid_rerank': fill_gaps must be >= 0, got -1"),
])
def test_each_options_class_refuses_a_bad_value_when_built_naming_the_method_and_the_option(options, message):
    with pytest.raises(ValueError) as raised:
        options()
    assert str(raised.value).startswith(f"projection method {message}")
    assert "\n" not in str(raised.value)


def test_a_bad_value_fails_where_the_spec_is_read_before_any_model_loads(tmp_path):
    with pytest.raises(ValueError, match=r"^projection method 'insertion': max_span_words, width and nbest must be "
                                         r"at least 1, got 4, 1, 0$"):
        SynthesisConfig(tgt_langs=["de"], method="insertion?nbest=0", mt_model=str(tmp_path / "never-loaded"))
    with pytest.raises(ValueError, match=r"^projection method 'rerank': max_span_words and shortlist must be at "
                                         r"least 1, got 4 and 0$"):
        TranslateAlignConfig(input="unused", output_dir=str(tmp_path), tgt_lang="de", method="rerank?shortlist=0")
    with pytest.raises(ValueError, match=r"^projection method 'fuzzy': threshold is a similarity in \(0, 100\], "
                                         r"got 0\.0$"):
        SynthesisConfig(tgt_langs=["de"], method="fuzzy?threshold=0")
    # options given by keyword are checked as the spec's are, and named by the method's registered name
    with pytest.raises(ValueError, match=r"^projection method 'hybrid': fill_gaps must be >= 0, got -1$"):
        resolve_method("hybrid", fill_gaps=-1)


# --------------------------------------------------------------------------- one loader for both runs


@pytest.fixture
def loads(monkeypatch):
    """The calls of the shared loader, which returns stand-ins instead of loading a translation model."""
    calls = []

    def recording(method, mt_model, **kwargs):
        calls.append((method, mt_model, kwargs))
        return DictTranslator(), None

    for module in (loading, stages, translate_align_module):  # raising=True: a caller without it fails here
        monkeypatch.setattr(module, "load_method_models", recording)
    return calls


def test_synthesis_loads_its_translator_with_the_shared_loader(tmp_path, loads, tiny_m2m100, tiny_xlmr_ner):
    config = SynthesisConfig(tgt_langs=["de", "nl"], output_dir=str(tmp_path), mt_model=str(tiny_m2m100),
                             mt_revision="abc", ner_model=str(tiny_xlmr_ner), batch_size=3, constrain_markers=True)
    models = SynthesisModels.load(config, device="cpu")
    ((method, mt_model, kwargs),) = loads
    assert method is config.projection and mt_model == str(tiny_m2m100)
    assert kwargs == {"src_lang": "en", "tgt_langs": ["de", "nl"], "revision": "abc", "device": "cpu",
                      "batch_size": 3, "backend": "transformers", "compute_type": None, "constrain_markers": True}
    assert isinstance(models.translator, DictTranslator) and models.scorer is None


def test_translate_align_loads_its_translator_with_the_shared_loader(tmp_path, loads, tiny_m2m100):
    config = TranslateAlignConfig(input="unused", output_dir=str(tmp_path), tgt_lang="es", mt_model=str(tiny_m2m100),
                                  mt_revision="abc", batch_size=3)
    models = TranslateAlignModels.load(config, device="cpu")
    ((method, mt_model, kwargs),) = loads
    assert method is config.projection and mt_model == str(tiny_m2m100)
    assert kwargs == {"src_lang": "en", "tgt_langs": ["es"], "revision": "abc", "device": "cpu", "batch_size": 3}
    assert isinstance(models.translator, DictTranslator) and models.scorer is None
    assert models.aligner.symmetrization == config.symmetrization


def test_the_shared_loader_builds_the_translator_on_the_scorers_weights_checked_for_every_language(
        monkeypatch, tiny_m2m100, tiny_bart):
    checked = []
    real = ResolvedMethod.check_scorer

    def recording(self, scorer):
        checked.append((scorer.languages.src_lang, scorer.languages.tgt_lang))
        real(self, scorer)

    with monkeypatch.context() as patched:
        patched.setattr(ResolvedMethod, "check_scorer", recording)
        translator, scorer = loading.load_method_models(resolve_method("insertion"), str(tiny_m2m100), src_lang="en",
                                                        tgt_langs=["de", "fr"], batch_size=2)
    assert checked == [("en", "de"), ("en", "fr")]  # each target language's direction, before the translator
    assert translator.model is scorer.model and (scorer.languages.src_lang, scorer.languages.tgt_lang) == ("en", "de")
    assert len(translator.tokenizer) == len(scorer.tokenizer)  # no marker token added
    assert translator._batch_size == scorer.batch_size == 2
    with pytest.raises(ValueError, match="reranking needs the reverse direction"):  # one fixed direction
        loading.load_method_models(resolve_method("rerank"), str(tiny_bart), src_lang=None, tgt_langs=[None])
