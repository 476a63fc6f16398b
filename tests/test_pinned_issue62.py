"""Behaviours a planted bug changed while the whole suite stayed green (issue 62, point 8): each test here fails on that bug."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from types import SimpleNamespace

import datasets
import pytest
import torch
from synthesis_fakes import FakeTranslator, ListConfig, ListJob, OddRow, TextRow, fake_config, fake_models
from test_crop_end_to_end import bench  # noqa: F401  (the benchmark module, a pytest fixture)
from test_parser_nested import _hand_model
from test_projection_model_scored import FakeMarkerScorer, FakePlainScorer, _example, _marked, _spans

from crop_hf.cli import main
from crop_hf.engine.jobs import ShardResult, run_job
from crop_hf.engine.shards import ShardStore, merge_shards, shard_statistics
from crop_hf.projection.methods import project_examples
from crop_hf.synthesis import synthesize

# --------------------------------------------------------------------------- 1. a private Hub repository


@pytest.mark.parametrize("private", [True, False])
def test_a_model_trained_with_hub_private_repo_is_pushed_as_a_private_repository(tmp_path, monkeypatch, private):
    """Bug caught: the training loop's upload leaving out ``private=args.hub_private_repo`` (a public repository)."""
    import huggingface_hub
    from test_cards import RecordingApi

    from crop_hf.engine.training import TrainingRun
    from crop_hf.ner import parse_arguments

    calls = []

    class Api(RecordingApi):  # a class, as transformers' annotations of HfApi need when it is imported after this
        def __init__(self, token=None):
            super().__init__()
            self.calls = calls

    monkeypatch.setattr(huggingface_hub, "HfApi", Api)
    flags = ["--hub_private_repo"] if private else []
    *_, args = parse_arguments(["--model_name_or_path", "unused", "--train_sources", "conll5:de",
                                "--output_dir", str(tmp_path), "--push_to_hub", "--hub_model_id", "me/ner", *flags])
    accelerator = SimpleNamespace(is_main_process=True, wait_for_everyone=lambda: None, free_memory=lambda: None)
    TrainingRun(accelerator, args, model=None, completed_steps=1, max_steps=1).publish({"f1": 0.5})
    (create, repo, options), (upload, _, _) = calls
    assert (create, repo, upload) == ("create_repo", "me/ner", "upload_folder")
    assert options["private"] is private


@pytest.mark.parametrize(("main", "model_id", "message"), [(True, None, None), (True, "me/ner", "Round 2"),
                                                            (False, "me/ner", "Round 2")])
def test_publish_writes_results_card_and_uploads_the_folder_as_asked_on_the_main_process_only(
        tmp_path, monkeypatch, main, model_id, message):
    """What a finished run writes and pushes: every argument of the upload reaches it, and another process
    writes nothing, but waits and frees Accelerate's references all the same."""
    import json

    from crop_hf import hub
    from crop_hf.engine.training import TrainingRun

    pushed, said = [], []
    monkeypatch.setattr(hub, "push_folder", lambda folder, repo, **options: pushed.append((folder, repo, options)))
    output = tmp_path / "ner-model"
    args = SimpleNamespace(output_dir=str(output), push_to_hub=True, hub_model_id=model_id, hub_token="t0k",
                           hub_private_repo=True)
    accelerator = SimpleNamespace(is_main_process=main, wait_for_everyone=lambda: said.append("wait"),
                                  free_memory=lambda: said.append("free"))
    card = SimpleNamespace(save=lambda path: Path(path).write_text("# card"))
    TrainingRun(accelerator, args, model=None, completed_steps=1, max_steps=1).publish(
        {"f1": 0.5, "eval_loss": 1.0}, card=lambda: card, commit_message=message)
    assert said == ["wait", "free"]
    if not main:
        assert pushed == [] and not output.exists()
        return
    assert json.loads((output / "all_results.json").read_text()) == {"eval_loss": 1.0, "f1": 0.5}
    assert (output / "all_results.json").read_text().startswith('{\n  "eval_loss"')  # indented, keys sorted
    assert (output / "README.md").read_text() == "# card" and not list(output.glob("*.tmp"))
    extra = {"commit_message": message} if message else {}
    assert pushed == [(output, model_id or "ner-model", {"token": "t0k", "private": True, **extra})]


def test_write_all_results_returns_what_it_wrote_and_makes_its_folder(tmp_path):
    import json

    from crop_hf.engine.training import write_all_results

    path = tmp_path / "new" / "run" / "all_results.json"  # two folders to make
    assert write_all_results(path, {"b": 2, "a": [1]}) == {"b": 2, "a": [1]}
    assert path.read_text() == json.dumps({"a": [1], "b": 2}, indent=2, sort_keys=True) + "\n"
    assert sorted(p.name for p in path.parent.iterdir()) == ["all_results.json"]  # the temporary file renamed


# --------------------------------------------------------------------------- 2. the parser's score of a given tree


@pytest.mark.parametrize(("top_tagger", "depth"), [("intent", 1), ("shared", 2)])
def test_a_trees_tags_are_scored_under_its_own_intent_not_the_likeliest_one(top_tagger, depth):
    """Bug caught: ``score`` reading the top-level tags' scores given the most likely intent (the forward pass's
    ``slot_emissions``) instead of each tree's own intent."""
    from crop_hf.modeling import ParsedUtterance

    intents = ("A", "B", "C", "D")
    model = _hand_model(max_intent_depth=depth, intents=intents, top_tagger=top_tagger, slots=("L", "M"))
    generator = torch.Generator().manual_seed(5)
    with torch.no_grad():  # far from the near-uniform start, so that each intent tags differently
        for parameter in model.parameters():
            parameter.add_(0.5 * torch.randn(parameter.shape, generator=generator))
    n = len(intents)
    inputs = dict(input_ids=torch.tensor([[1, 4, 9, 13, 2]] * n), attention_mask=torch.ones(n, 5, dtype=torch.long),
                  word_index=torch.tensor([[-1, 0, 1, 2, -1]] * n))
    tags = [1, 2, 0]  # B-L I-L O: one slot (scored as holding words only, by the hierarchical model)
    outputs = model(**inputs)
    scores = model.score(outputs, [ParsedUtterance(i, 1.0, list(tags), 1.0) for i in range(n)])
    # the tags' log-probability given intent i, read as training reads it (the gold intent conditions the tagger)
    given = model(**inputs, intent_labels=torch.arange(n))
    mask, labels = given.word_mask, torch.tensor([tags] * n)
    tag_scores = model.top_level_tagger.log_probability(given.slot_emissions, mask, labels)
    intent_scores = outputs.intent_logits.log_softmax(-1)[0]
    assert tag_scores.max() - tag_scores.min() > 0.05  # the intent changes the tags' probability
    assert int(outputs.intent_logits[0].argmax()) != int(outputs.intent_logits[0].argmin())
    residual = scores - intent_scores - tag_scores  # what is left: the nested decision, the same for every intent
    assert residual.tolist() == pytest.approx([residual[0].item()] * n, abs=1e-5)
    if depth == 1:
        assert residual.tolist() == pytest.approx([0.0] * n, abs=1e-5)


# --------------------------------------------------------------------------- 3. insertion's reverse score


class _EntityReadingScorer(FakeMarkerScorer):
    """A :class:`FakeMarkerScorer` whose reverse direction reads the entity too: ``back[(span text, entity)]``
    (-5 for a pair not in it); every ``(span text, entity)`` it is asked for is kept in ``asked``."""

    def __init__(self, tables, back):
        super().__init__(tables, back=back)
        self.asked: list[tuple[str, str]] = []

    def reverse(self):
        def mean_log_probs(spans, entities):
            self.asked += zip(spans, entities, strict=True)
            return [self.back.get(pair, -5.0) for pair in zip(spans, entities, strict=True)]

        return SimpleNamespace(mean_log_probs=mean_log_probs)


@pytest.mark.parametrize(("source", "span", "entity"), [("I saw New York today", (2, 4, "LOC"), "New York"),
                                                        ("I live in Gothenburg", (3, 4, "LOC"), "Gothenburg")])
def test_insertions_nbest_reranking_scores_the_whole_entity_one_word_entities_included(source, span, entity):
    """Bug caught: reranking reading P(first entity word | span) for a longer entity, or not reranking one-word
    entities (both leave the most probable placement)."""
    # placements by log-probability: (2, 4) -0.5, then (2, 3) -0.8; the reverse direction reads "c" as the entity
    table = {_marked(source, span): ([-9.0, -3.0, -0.2, -8.0], [-9.0, -9.0, -9.0, -0.6, -0.3])}
    scorer = _EntityReadingScorer(table, {("c", entity): -0.1, ("c d", entity): -3.0})
    example = _example("a b c d", source, [span])
    assert _spans(project_examples("insertion", [example], scorer=scorer)[0]) == [(2, 4, "LOC")]
    (result,) = project_examples("insertion?nbest=2&reverse_weight=1", [example], scorer=scorer)
    assert sorted(scorer.asked) == [("c", entity), ("c d", entity)]
    assert _spans(result) == [(2, 3, "LOC")]  # -0.8 - 0.1 beats -0.5 - 3.0


# --------------------------------------------------------------------------- 4, 5. rerank's candidates


@pytest.mark.parametrize("proposed_by", ["links", "translated entities"])
def test_reranks_default_candidates_find_an_entity_longer_than_max_span_words(proposed_by):
    """Bug caught: ``RerankOptions.candidates`` defaulting to n-grams only, so a two-word entity is out of reach
    with ``max_span_words=1`` whatever hybrid and fuzzy propose."""
    scorer = FakePlainScorer({("New York", "New York"): 0.45})
    extra = {"alignment": [(2, 2), (3, 3)]} if proposed_by == "links" else {"entities": [("New York", "LOC")]}
    example = _example("Jag såg New York idag", "I saw New York", [(2, 4, "LOC")], **extra)
    (result,) = project_examples("rerank?max_span_words=1", [example], scorer=scorer)
    assert _spans(result) == [(2, 4, "LOC")] and result.entities[0].score == pytest.approx(0.9)


def test_hybrid_rerank_proposes_the_span_hybrid_finds_with_the_specs_options_outside_the_shortlist():
    """Bugs caught: hybrid_rerank running hybrid without the spec's options (``one_word=true`` left out), and
    taking its candidates from a hybrid run of its own (default options), so that hybrid's span, outside the
    shortlist, has no score and the run crashes."""
    # Gothenburg is linked to "staden" and "Göteborg": hybrid takes both words, with one_word=true "staden"
    example = _example("Jag såg staden Göteborg idag", "I saw Gothenburg", [(2, 3, "LOC")],
                       alignment=[(0, 0), (1, 1), (2, 2), (2, 3)])
    hybrid = project_examples("hybrid?one_word=true", [example])[0]
    assert _spans(hybrid) == [(2, 3, "LOC")] != _spans(project_examples("hybrid", [example])[0])
    # "idag" is the shortlist's one n-gram (best on P(c | e) / P(c | c)); "staden" is not in it
    scorer = FakePlainScorer({("Gothenburg", "idag"): 0.3})
    (kept,) = project_examples("hybrid_rerank?one_word=true&shortlist=1&margin=1", [example], scorer=scorer)
    assert _spans(kept) == [(2, 3, "LOC")] and kept.entities[0].match == "alignment"
    assert kept.entities[0].score == pytest.approx(0.02)  # scored in full: 2 x P = 2 x 0.01
    (replaced,) = project_examples("hybrid_rerank?one_word=true&shortlist=1&margin=0.1", [example], scorer=scorer)
    assert _spans(replaced) == [(4, 5, "LOC")] and replaced.entities[0].match == "rerank"


# --------------------------------------------------------------------------- 6, 7. the scoring model


def test_mt_revision_reaches_the_scoring_model_not_only_its_tokenizer(tiny_m2m100, tmp_path, monkeypatch):
    """Bug caught: ``TranslationScorer.from_pretrained`` (or ``load_scorer``) loading the model at the main branch
    while the tokenizer is at ``--mt_revision``."""
    import transformers

    from crop_hf.synthesis.stages import load_scorer

    revisions = {}
    for name in ("AutoModelForSeq2SeqLM", "AutoTokenizer"):
        cls = getattr(transformers, name)
        real = cls.from_pretrained.__func__

        def recording(klass, path, *args, _name=name, _real=real, **kwargs):
            revisions[_name] = kwargs.pop("revision", None)  # a local folder has no revisions
            return _real(klass, path, *args, **kwargs)

        monkeypatch.setattr(cls, "from_pretrained", classmethod(recording))
    config = fake_config("raw/{lang}.txt", str(tmp_path), tgt_langs=["de"], mt_model=str(tiny_m2m100),
                         mt_revision="0123abc", method="insertion")
    scorer = load_scorer(config)
    assert revisions == {"AutoModelForSeq2SeqLM": "0123abc", "AutoTokenizer": "0123abc"}
    assert (scorer.languages.src_lang, scorer.languages.tgt_lang) == ("en", "de")


def test_a_bfloat16_scorer_uses_half_precisions_tolerance(tiny_m2m100):
    """Bug caught: the tolerance checking float16 only, so a bfloat16 scorer's exact search prunes by float32's 1e-4
    (bfloat16 keeps 8 bits of mantissa: batching changes its sums by far more)."""
    from crop_hf.projection import TranslationScorer

    tolerances = {dtype: TranslationScorer.from_pretrained(tiny_m2m100, "en", "de", dtype=dtype).tolerance
                  for dtype in (torch.float32, torch.float16, torch.bfloat16)}
    assert tolerances == {torch.float32: 1e-4, torch.float16: 5e-2, torch.bfloat16: 5e-2}


# --------------------------------------------------------------------------- 8, 9. the shard merge


def _text_features():
    return datasets.Features({"text": datasets.Value("string")})


def test_the_merge_reads_a_shard_rewritten_at_the_same_size_afresh(tmp_path):
    """Bug caught: the merge's cache keyed on the shard files' sizes alone (a rerun of a job without an inputs
    fingerprint rewrites the same paths, here with other rows of the same size)."""
    store = ShardStore(tmp_path, {"run": "same size"})
    store.write("a", 0, [{"kept": True, "row": '{"text": "aa"}'}], {"input": 1, "kept": 1})
    path = store.root / "a" / "00000.parquet"
    before = path.stat()
    assert merge_shards(list(store.finished("a")), True, _text_features())["text"] == ["aa"]
    store.write("a", 0, [{"kept": True, "row": '{"text": "bb"}'}], {"input": 1, "kept": 1})
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))  # a later write, whatever the clock
    assert path.stat().st_size == before.st_size
    assert merge_shards(list(store.finished("a")), True, _text_features())["text"] == ["bb"]


def test_an_empty_shard_without_columns_from_an_earlier_release_merges_and_resumes(tmp_path):
    """Bug caught: the merge reading the ``kept`` column of every shard file (counting rows, or reading them),
    which an empty shard written by an earlier release does not have."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    job = ListJob(ListConfig(output_dir=str(tmp_path), keys=["a"]), {"a": [(0, []), (1, ["s0", "s1"])]},
                  lambda key, index, items: ShardResult([TextRow(item) for item in items[:1]],
                                                        [OddRow(item) for item in items[1:]]))
    store = job.store
    (store.root / "a").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([]), store.root / "a" / "00000.parquet")  # as earlier releases wrote it
    (store.root / "a" / "00000.json").write_text(json.dumps({"input": 0, "kept": 0, "process_index": 0}))
    assert pq.read_schema(store.root / "a" / "00000.parquet").names == []
    assert run_job(job).skipped_shards == {"a": 1}
    assert job.processed == [("a", 1)]  # the empty shard is finished: resumed, not redone
    finished = list(store.finished("a"))
    assert merge_shards(finished, True, _text_features())["text"] == ["s0"]
    dropped = datasets.Features({"text": datasets.Value("string"), "reason": datasets.Value("string")})
    assert merge_shards(finished, False, dropped)["text"] == ["s1"]
    assert shard_statistics(finished, ["input", "kept", "odd"]) == {"input": 2, "kept": 1, "odd": 1}


# --------------------------------------------------------------------------- 10. a record a pipeline refuses


class _TypeErrorTranslator(FakeTranslator):
    """A :class:`FakeTranslator` whose batch raises ``TypeError`` when a sentence says "kaputt"."""

    def __call__(self, records, **kwargs):
        if any("kaputt" in (record if isinstance(record, str) else record["text"]) for record in records):
            raise TypeError("unsupported operand type(s) for +: 'NoneType' and 'str'")
        return super().__call__(records, **kwargs)


def test_a_record_that_makes_a_pipeline_raise_type_error_is_dropped_and_the_run_goes_on(tmp_path, caplog):
    """Bug caught: ``each_or_none`` refusing ``ValueError`` only, so a ``TypeError`` stops the whole corpus run."""
    folder = tmp_path / "raw"
    folder.mkdir()
    (folder / "de.txt").write_text("Ich wohne in Hamburg .\nDas ist kaputt .\nAnna trifft Peter .\n", encoding="utf-8")
    models = fake_models()
    models.translator = _TypeErrorTranslator()
    config = fake_config(str(folder / "{lang}.txt"), str(tmp_path / "out"), tgt_langs=["de"])
    with caplog.at_level(logging.WARNING, logger="crop_hf.engine.records"):
        result = synthesize(config, models=models)
    assert result.statistics["de"]["pipeline_error"] == 1 and result.statistics["de"]["kept"] == 2
    discarded = datasets.load_from_disk(str(result.discarded_path))["de"]
    assert discarded["text"] == ["Das ist kaputt ."] and discarded["reason"] == ["pipeline_error"]
    assert "NoneType" in caplog.text  # the reason is logged


# --------------------------------------------------------------------------- 11. a path given as --src_lang


@pytest.mark.parametrize("argv", [
    ["synthesize", "--src_lang", "raw/en.txt", "--tgt_langs", "de"],
    ["translate-align", "--input", "en.tsv", "--output_dir", "x", "--tgt_lang", "es", "--src_lang", "data/en.tsv"],
], ids=["synthesis", "translate_align"])
def test_a_path_given_as_the_source_language_is_one_line_saying_it_is_not_a_language_code(argv, capsys):
    """Bug caught: SynthesisConfig or TranslateAlignConfig not checking ``src_lang`` (the path is read as a
    language until a model refuses it, far from the option)."""
    bad = argv[argv.index("--src_lang") + 1]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert exit_info.value.code == 2
    assert f"src_lang: {bad!r} is not a language code" in line and "it looks like a path" in line


# --------------------------------------------------------------------------- 12. replacing a built-in


def test_register_with_replace_used_as_a_decorator_replaces_a_built_in():
    """Bug caught: the decorator form of ``register`` dropping ``replace=True`` (a taken name is then an error)."""
    from crop_hf.registry import Registry

    shapes = Registry("shape", {"circle": 0})

    @shapes.register("circle", replace=True)
    def circle(radius):
        return 3 * radius * radius

    assert shapes.get("circle") is circle and shapes.names() == ("circle",)
    with pytest.raises(ValueError, match="'circle' is registered already"):
        shapes.register("circle")(circle)


# --------------------------------------------------------------------------- 13. labels shorter than the words


@pytest.mark.parametrize("use_crf", [True, False])
def test_labels_shorter_than_a_rows_words_are_refused_not_trained_as_tag_0(use_crf):
    """Bug caught: labels narrower than the words padded with tag 0 (``O``) instead of -100, so the words past
    them are trained as ``O``."""
    model = _hand_model(intents=("A", "B"), top_tagger="words", max_intent_depth=1, use_crf=use_crf)
    emissions = torch.randn(2, 3, 3)
    labels = torch.tensor([[1, 2], [0, 1]])
    padding = torch.tensor([[True, True, False], [True, True, False]])
    assert torch.isfinite(model.slot_loss(emissions, padding, labels))  # words past the labels that are padding
    with pytest.raises(ValueError, match="label every word"):
        model.slot_loss(emissions, torch.ones(2, 3, dtype=torch.bool), labels)  # a third word without a label
    inputs = dict(input_ids=torch.tensor([[1, 4, 9, 13, 2]]), attention_mask=torch.ones(1, 5, dtype=torch.long),
                  word_index=torch.tensor([[-1, 0, 1, 2, -1]]))
    with pytest.raises(ValueError, match="label every word"):
        model(**inputs, intent_labels=torch.tensor([0]), slot_labels=torch.tensor([[1, 2]]))


# --------------------------------------------------------------------------- 14. language rules on other languages


def test_synthesis_warns_of_a_foreign_rule_for_each_target_language_and_not_for_its_own(tmp_path, caplog):
    """Bug caught: the run checking its first target language only (German here, the rule's own: silence)."""
    folder = tmp_path / "raw"
    folder.mkdir()
    for lang, line in {"de": "Ich wohne in Hamburg .", "es": "Vivo en Hamburg .", "it": "Abito a Hamburg ."}.items():
        (folder / f"{lang}.txt").write_text(line + "\n", encoding="utf-8")
    config = fake_config(str(folder / "{lang}.txt"), str(tmp_path / "out"), tgt_langs=["de", "es", "it"],
                         method="hybrid?capitalized_nouns=true", alignment_model="fake-aligner")
    with caplog.at_level(logging.WARNING, logger="crop_hf.synthesis.runner"):
        synthesize(config, models=fake_models())
    warned = [record.getMessage() for record in caplog.records if "projection option" in record.getMessage()]
    assert warned == [f"projection option capitalized_nouns is written for de, lb, not for target language {lang}: "
                      f"it may cost F1 there; leave it out of the method for {lang}" for lang in ("es", "it")]


# --------------------------------------------------------------------------- 15. the end-to-end benchmark

def _fake_loop(module, monkeypatch) -> dict[str, list]:
    """The benchmark's stages replaced by recorders (no training, synthesis or evaluation); returns what each got."""
    import crop_hf.data.sources
    import crop_hf.self_training

    calls: dict[str, list] = {"train": [], "synthesize": [], "self_train": []}
    gold = [{"tokens": ["Anna", "wohnt", "in", "Berlin", "."], "tags": ["B-PER", "O", "O", "B-LOC", "O"]},
            {"tokens": ["nichts", "hier", "."], "tags": ["O", "O", "O"]}]

    def synthesize_corpus(args, folder, name, *rest):
        calls["synthesize"].append(name)
        path = folder / name / "dataset"
        datasets.DatasetDict({args.lang: datasets.Dataset.from_dict({"tokens": [gold[0]["tokens"]]})}).save_to_disk(
            str(path))
        return SimpleNamespace(statistics={args.lang: {"input": 2, "kept": 1, "all_o": 1}}, dataset_path=path,
                               discarded_path=folder / name / "discarded")

    def train_model(args, encoder, sources, out, seed):
        calls["train"].append(out.name)
        return out

    def scores(args, model, data_dir):
        return {name: {"f1": 50.0, **dict.fromkeys(module.TYPES, 50.0)} for name in module.test_sets(args, data_dir)}

    monkeypatch.setattr(module, "build_encoder", lambda args, work, data_dir: work / "encoder")
    monkeypatch.setattr(module, "labeled_rows", lambda args, data_dir, lang, split, count=None: gold)
    monkeypatch.setattr(module, "synthesize_corpus", synthesize_corpus)
    monkeypatch.setattr(module, "train_model", train_model)
    monkeypatch.setattr(module, "scores", scores)
    monkeypatch.setattr(crop_hf.data.sources, "load_source", lambda spec: SimpleNamespace(split=lambda name: [1]))
    monkeypatch.setattr(crop_hf.self_training, "self_train",
                        lambda *args, **kwargs: calls["self_train"].append(kwargs["multilingual_model"]))
    return calls


@pytest.mark.parametrize(("row", "trained"), [("e", "e-b-union-0"), ("oracle_kept", "oracle_kept-0")])
def test_a_benchmark_row_alone_trains_the_best_corpus_and_row_a_first(bench, tmp_path, monkeypatch, row,  # noqa: F811
                                                                       trained):
    """Bug caught: ``--rows e`` or ``--rows oracle_kept`` alone not adding the best corpus's row, so the run fails
    with KeyError after row a."""
    work = tmp_path / "work"
    calls = _fake_loop(bench, monkeypatch)
    assert bench.main(["--rows", row, "--work_dir", str(work), "--data_dir", str(tmp_path / "data"),
                       "--mt_model", "fake-mt", "--seeds", "0", "--threads", "1"]) == 0  # torch keeps one thread
    assert calls["synthesize"] == ["corpus-b"]
    assert calls["train"] == ["a-0", "b-0", trained]
    if row == "e":  # b's model re-labels b's discarded sentences
        assert [Path(model).name for model in calls["self_train"]] == ["b-0"]
    results = json.loads((work / "results-test.json").read_text())["results"]
    assert set(results) == {"a", "b", row}


def test_the_benchmarks_cached_scores_are_keyed_by_the_test_size(bench, tmp_path, monkeypatch):  # noqa: F811
    """Bug caught: the scores cache named by the split alone, so a 20-sentence run's scores stand for 3,000."""
    import crop_hf.ner.evaluate

    asked = []

    def evaluate_pretrained(model, specs, split, max_samples, drop_unknown_types):
        asked.append((split, max_samples))
        return SimpleNamespace(languages={"de": SimpleNamespace(f1=(max_samples or 0) / 10_000, per_type={})})

    monkeypatch.setattr(crop_hf.ner.evaluate, "evaluate_pretrained", evaluate_pretrained)
    model = tmp_path / "a-0"
    model.mkdir()

    def scored(test_sentences: int) -> float:
        args = bench.parse_args(["--test_sentences", str(test_sentences), "--source_test_sentences", "7"])
        return bench.scores(args, model, tmp_path / "data")["wikiann_de"]["f1"]

    assert scored(20) == pytest.approx(0.2)
    assert scored(3000) == pytest.approx(30.0)  # scored again, not read from the 20 sentences' cache
    assert [count for _, count in asked] == [20, None, 7, 3000, None, 7]
    assert (scored(20), scored(3000)) == pytest.approx((0.2, 30.0))  # each read from its own cache
    assert len(asked) == 6
