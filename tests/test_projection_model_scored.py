"""Projection scored by a translation model: ``insertion`` (markers placed in a fixed target) and ``rerank``.

Random-weight tiny models check the plumbing (shapes, batching, overlaps, statuses, errors) and the
exactness of insertion's search against exhaustive enumeration; fake scorers whose probabilities the
tests set check that the selection picks the best candidate and resolves conflicts by score.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from crop_hf.labels import Span
from crop_hf.markers import mark_tokens
from crop_hf.projection import TranslationScorer, symmetric_scores, tokenize_target
from crop_hf.projection.insertion import candidate_spans, mark_target, target_text
from crop_hf.projection.methods import PROJECTION_METHODS, ProjectionExample, method_options, project_examples
from crop_hf.projection.options import HybridRerankOptions, InsertionOptions, RerankOptions
from crop_hf.projection.rerank import ngram_spans, project_hybrid_rerank
from crop_hf.translation.scoring import RowScores, log_softmax_at

WORDS = ["ich", "wohne", "in", "Göteborg", "und", "arbeite", "für", "Volvo", "am", "Montag", "Paris", ".", "die",
         "Kanzlerin", "besuchte"]


def _load(path, sharpen: float = 1.0) -> TranslationScorer:
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    model = AutoModelForSeq2SeqLM.from_pretrained(path)
    if sharpen != 1.0:  # larger logits: peaked distributions, so bounds prune and near-ties are rare
        with torch.no_grad():
            model.model.decoder.layer_norm.weight.mul_(sharpen)
            model.model.decoder.layer_norm.bias.mul_(sharpen)
    return TranslationScorer(model, AutoTokenizer.from_pretrained(path), "en", "de", batch_size=8)


@pytest.fixture(scope="module")
def scorer(tiny_m2m100):
    return _load(tiny_m2m100)


@pytest.fixture(scope="module")
def sharp(tiny_m2m100):
    return _load(tiny_m2m100, sharpen=8.0)


def _example(target, source, spans, **kwargs):
    sentence = tokenize_target(target, kwargs.pop("lang", None)) if isinstance(target, str) else target
    return ProjectionExample(sentence, source_tokens=source.split(), source_spans=[Span(*s) for s in spans], **kwargs)


def _spans(result):
    return [(e.token_start, e.token_end, e.label) for e in result.entities]


# --- the scorer ------------------------------------------------------------------------------------


def test_batched_scores_equal_one_at_a_time_scores_and_leave_out_the_forced_language_token(scorer):
    sources = ["I live in Gothenburg .", "Volvo", "Angela Merkel visited Paris on Monday .", "I live in Gothenburg ."]
    targets = ["Ich wohne in Göteborg .", "Volvo ist eine Firma", "Paris", "Göteborg"]
    batched = scorer.token_log_probs(sources, targets)
    alone = [scorer.token_log_probs([s], [t])[0] for s, t in zip(sources, targets, strict=True)]
    labels = scorer.encode_targets(targets)
    for row, single, ids in zip(batched, alone, labels, strict=True):
        assert ids[0] == scorer.tokenizer.get_lang_id("de") and ids[-1] == scorer.tokenizer.eos_token_id
        assert len(row) == len(single) == len(ids) - 1  # every token after the forced __de__, </s> included
        assert max(abs(a - b) for a, b in zip(row, single, strict=True)) < 1e-5
        assert all(value < 0 for value in row)
    sums, means = scorer.sequence_log_probs(sources, targets), scorer.mean_log_probs(sources, targets)
    for total, mean, row in zip(sums, means, batched, strict=True):
        assert total == pytest.approx(sum(row), abs=1e-5) and mean == pytest.approx(sum(row) / len(row), abs=1e-5)


def test_targets_that_begin_a_longer_target_of_their_source_are_read_from_its_row(scorer):
    """Reranking's candidate n-grams: "Göteborg" and "Göteborg ist" are read from the row of the longest n-gram of
    the same source (fewer decoder rows), with the scores each gets alone; another source's target is its own row."""
    sources = ["Gothenburg"] * 4 + ["Volvo", "Gothenburg"]
    targets = ["Göteborg ist eine", "Göteborg", "Göteborg ist", "ist", "Göteborg", "Göteborg"]
    scorer.stats.clear()
    together = scorer.token_log_probs(sources, targets)
    assert scorer.stats["decoder_rows"] == 3  # "Göteborg ist eine" and "ist" for Gothenburg, "Göteborg" for Volvo
    for row, source, target in zip(together, sources, targets, strict=True):
        assert row == pytest.approx(scorer.token_log_probs([source], [target])[0], abs=1e-5)
    assert together[1] == together[5] and together[1] != together[4]


def test_directions_from_one_language_share_its_encoder_outputs_and_others_are_refused(scorer):
    candidates = ["Göteborg", "in Göteborg"]
    reverse, target_copy = scorer.reverse(), scorer.direction("de", "de")
    encoded = reverse.encode_sources(candidates)
    assert (encoded.src_lang, encoded.prefix) == ("de", "")
    for direction, targets in ((reverse, ["Gothenburg", "Gothenburg"]), (target_copy, candidates)):
        scorer.stats.clear()
        shared = direction.mean_log_probs(candidates, targets, encoded=encoded)
        assert scorer.stats["encoder_rows"] == 0
        assert shared == pytest.approx(direction.mean_log_probs(candidates, targets), abs=1e-5)
    with pytest.raises(ValueError, match=r"sources encoded as 'de' .* cannot be scored as 'en'"):
        scorer.mean_log_probs(candidates, candidates, encoded=encoded)
    with pytest.raises(ValueError, match=r"1 sources were not encoded, e\.g\. 'Paris'"):
        reverse.mean_log_probs(["Paris"], ["Paris"], encoded=encoded)


def test_token_log_probs_are_the_models_own_teacher_forced_probabilities(scorer):
    """Checked against transformers' own teacher forcing (labels= shifts them into decoder inputs itself)."""
    sources, targets = ["I live in Gothenburg .", "Volvo"], ["Ich wohne in Göteborg .", "Volvo ist eine Firma"]
    ours = scorer.token_log_probs(sources, targets)
    for source, target, values in zip(sources, targets, ours, strict=True):
        scorer._set_languages()
        batch = scorer.tokenizer(source, text_target=target, return_tensors="pt")
        with torch.no_grad():
            logits = scorer.model(**batch).logits[0]
        reference = torch.log_softmax(logits.double(), -1).gather(-1, batch["labels"][0].unsqueeze(-1)).squeeze(-1)
        assert values == pytest.approx(reference[1:].tolist(), abs=1e-4)  # the forced __de__ left out


@pytest.mark.parametrize("positions", [0, 1, 13])
@pytest.mark.parametrize("width", [1, 7, 50, 64])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_log_probabilities_read_slice_by_slice_are_log_softmax_over_the_whole_vocabulary(positions, width, dtype):
    """Slices of 1 to 64 ids over 50: one, several, a partial last one; 0 positions and none asked included."""
    generator = torch.Generator().manual_seed(positions + width)
    logits = (torch.randn(positions, 50, generator=generator) * 30).to(dtype)
    labels = torch.randint(0, 50, (positions,), generator=generator)
    rows = torch.randint(0, max(positions, 1), (2 * positions,), generator=generator)
    tokens = torch.randint(0, 50, (2 * positions,), generator=generator)
    own, asked = log_softmax_at(((begin, logits[:, begin:begin + width]) for begin in range(0, 50, width)),
                                labels, rows, tokens)
    reference = torch.log_softmax(logits.double(), dim=-1)
    assert own.dtype == asked.dtype == torch.float32
    assert own.tolist() == pytest.approx(reference[torch.arange(positions), labels].tolist(), abs=1e-4)
    assert asked.tolist() == pytest.approx(reference[rows, tokens].tolist(), abs=1e-4)


@pytest.mark.parametrize("family", ["m2m100", "bart"])
def test_scores_read_through_the_output_layer_in_slices_are_the_models_own(request, family, monkeypatch):
    """The decoder states go through the output layer a slice at a time (bias and final_logits_bias included, set
    here to random values), and give the log-probabilities of the logits the model returns; a model of a family
    not known to be just that layer is scored from its own logits."""
    import crop_hf.translation.scoring as scoring

    monkeypatch.setattr(scoring, "VOCABULARY_SLICE", 37)
    languages = ("en", "de") if family == "m2m100" else ()
    scorer = TranslationScorer.from_pretrained(request.getfixturevalue(f"tiny_{family}"), *languages, batch_size=2)
    head = scorer.model.get_output_embeddings()
    with torch.no_grad():
        if family == "bart":
            scorer.model.final_logits_bias.normal_(0, 3)
        else:
            head.bias = torch.nn.Parameter(torch.randn(head.out_features) * 3)
    sources, targets = ["I live in Gothenburg .", "Volvo", "Paris"], ["Ich wohne in Göteborg .", "Volvo ist eine Firma", "."]
    encoded = scorer.encode_sources(sources)
    rows = [(k, ids) for k, ids in enumerate(scorer.encode_targets(targets))]
    gathers = [[(1, 5), (3, 9)], [], [(0, 2)]]
    assert scorer._head is head
    positions = []  # how many positions the model's own call of its output layer computes

    def spied(call):
        spy = head.register_forward_hook(lambda module, args, output: positions.append(args[0].shape[1]))
        try:
            return call()
        finally:
            spy.remove()

    sliced = spied(lambda: scorer.score_rows(encoded, rows, gathers))
    assert positions == [0, 0]  # two batches of 2 rows: the layer ran only through the slices
    scorer._set_languages()
    for (k, ids), wanted, row in zip(rows, gathers, sliced, strict=True):
        batch = scorer.tokenizer(sources[k], return_tensors="pt")
        with torch.no_grad():
            logits = scorer.model(**batch, labels=torch.tensor([ids])).logits[0]
        reference = torch.log_softmax(logits.double(), -1)
        assert row.log_probs == pytest.approx(reference[torch.arange(len(ids)), torch.tensor(ids)].tolist(), abs=1e-4)
        assert row.gathered == pytest.approx([reference[t, token].item() for t, token in wanted], abs=1e-4)
    monkeypatch.setattr(scoring, "SLICED_HEAD_FAMILIES", frozenset())
    del scorer.__dict__["_head"]
    assert scorer._head is None
    for a, b in zip(sliced, spied(lambda: scorer.score_rows(encoded, rows, gathers)), strict=True):
        assert a.log_probs + a.gathered == pytest.approx(b.log_probs + b.gathered, abs=1e-5)
    assert len(positions) == 4 and min(positions[2:]) > 0  # the model's own logits, at every position


def test_a_gathered_token_is_the_log_probability_the_sequence_with_that_token_gets(scorer):
    """One pass over a sequence scores every sequence sharing its prefix, one token past it (what bounds rest on)."""
    encoded = scorer.encode_sources(["I live in __SLOT0__ Gothenburg __SLOT0__ ."])
    plain, marked = scorer.encode_targets(["Ich wohne in Göteborg .", "Ich wohne in __SLOT0__ Göteborg __SLOT0__ ."])
    shared = next(t for t, (a, b) in enumerate(zip(plain, marked, strict=False)) if a != b)
    probe, own = scorer.score_rows(encoded, [(0, plain), (0, marked)], [[(shared, marked[shared])], []])
    assert isinstance(probe, RowScores) and probe.skip == 1 and len(probe.log_probs) == len(plain)
    assert probe.log_probs[:shared] == pytest.approx(own.log_probs[:shared], abs=1e-5)
    assert probe.gathered[0] == pytest.approx(own.log_probs[shared], abs=1e-5)


@pytest.mark.parametrize("batch_size", [1, 4])
@pytest.mark.parametrize("family", ["m2m100", "bart"])  # positions: counted past padding / learned with an offset
def test_rows_resuming_from_kept_decoder_states_score_as_from_scratch(request, family, batch_size):
    """Rows that take over a kept row's decoder states for the tokens they begin with get the same
    log-probabilities (and gathered ones) as a pass from scratch, while the decoder computes fewer tokens."""
    languages = ("en", "de") if family == "m2m100" else ()
    scorer = TranslationScorer.from_pretrained(request.getfixturevalue(f"tiny_{family}"), *languages,
                                               batch_size=batch_size)
    encoded = scorer.encode_sources(["I live in Gothenburg .", "Angela Merkel visited Paris on Monday ."])
    plain = scorer.encode_targets(["Ich wohne in Göteborg und arbeite für Volvo .",
                                   "Die Kanzlerin besuchte am Montag Paris ."])
    kept = scorer.score_rows(encoded, [(0, plain[0]), (1, plain[1])], keep=True)
    assert all(row.prefix is not None and row.prefix.labels == tuple(ids) for row, ids in zip(kept, plain, strict=True))
    rows = [(0, plain[0][:4] + plain[1][2:]), (0, plain[0][:6] + plain[0][3:]), (1, plain[1][:3] + plain[0][5:]),
            (1, plain[1][:3]), (0, plain[1]), (1, plain[1][:5] + plain[1][2:])]
    gathers = [[(5, plain[0][1])], [], [(2, plain[0][2]), (len(rows[2][1]) - 1, plain[1][1])], [], [(0, 7)], []]
    scorer.stats.clear()
    fresh = scorer.score_rows(encoded, rows, gathers)
    computed = scorer.stats["decoder_tokens"]
    scorer.stats.clear()
    resumed = scorer.score_rows(encoded, rows, gathers, resume=[kept[source].prefix for source, _ in rows])
    with pytest.raises(ValueError, match=r"^1 gather lists and 0 prefixes for 1 rows$"):
        scorer.score_rows(encoded, rows[:1], gathers[:1], resume=[])
    with pytest.raises(ValueError, match=r"^a target row has no tokens$"):
        scorer.score_rows(encoded, [(0, [])])
    with pytest.raises(ValueError, match=r"^2 sources but 1 targets$"):
        scorer.mean_log_probs(["a", "b"], ["c"])
    for a, b in zip(fresh, resumed, strict=True):
        assert len(a.log_probs) == len(b.log_probs) and a.skip == b.skip
        assert max(abs(x - y) for x, y in zip(a.log_probs + a.gathered, b.log_probs + b.gathered, strict=True)) < 1e-5
    # row by row, positions taken over: 4 and 6 shared; 2 (a gather at 2); 2 (the last token is computed);
    # 0 (a gather at 0); 5. A batch of several rows resumes from the least of theirs.
    saved = computed - scorer.stats["decoder_tokens"]
    assert saved == 19 if batch_size == 1 else 0 < saved < 19
    with pytest.raises(ValueError, match="a row of source 1 cannot resume from the decoder states of source 0"):
        scorer.score_rows(encoded, [(1, plain[1])], resume=[kept[0].prefix])


def test_scorer_directions_and_language_errors(scorer, tiny_bart):
    reverse = scorer.reverse()
    assert (reverse.languages.src_lang, reverse.languages.tgt_lang) == ("de", "en")
    assert reverse.stats is scorer.stats and scorer.direction("en", "de") is scorer
    with pytest.raises(ValueError, match="cannot score the direction de→xx: unknown target language 'xx'"):
        scorer.direction("de", "xx")
    bart = TranslationScorer.from_pretrained(tiny_bart)
    with pytest.raises(ValueError, match="translates one fixed direction and cannot score"):
        bart.reverse()


# --- insertion: exactness ----------------------------------------------------------------------------


def _brute_force(scorer, source, span, target_words, max_span_words=4):
    """The reference: every span of <= max_span_words words, its marked target scored alone by teacher forcing."""
    start, end = span
    marked_source = " ".join([*source[:start], "__SLOT0__", *source[start:end], "__SLOT0__", *source[end:]])
    scored = []
    for i in range(len(target_words)):
        for j in range(i + 1, min(len(target_words), i + max_span_words) + 1):
            text = " ".join([*target_words[:i], "__SLOT0__", *target_words[i:j], "__SLOT0__", *target_words[j:]])
            scored.append((scorer.sequence_log_probs([marked_source], [text])[0], i, j))
    return scored


sentences = st.tuples(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6),
                      st.lists(st.sampled_from(WORDS), min_size=1, max_size=5), st.data())


@pytest.mark.parametrize("model", ["scorer", "sharp"])
@settings(max_examples=10, deadline=None)
@given(drawn=sentences)
def test_search_returns_the_span_of_exhaustive_enumeration(request, model, drawn):
    scorer = request.getfixturevalue(model)
    target, source, data = drawn
    start = data.draw(st.integers(0, len(source) - 1))
    end = data.draw(st.integers(start + 1, len(source)))
    example = _example(" ".join(target), " ".join(source), [(start, end, "X")])
    (result,) = project_examples("insertion", [example], scorer=scorer)
    scored = _brute_force(scorer, source, (start, end), target)
    best = max(scored, key=lambda item: item[0])  # the first of equal scores, as the search breaks ties
    (entity,) = result.entities
    chosen = next(value for value, i, j in scored if (i, j) == (entity.token_start, entity.token_end))
    assert (entity.token_start, entity.token_end) == best[1:] or chosen == pytest.approx(best[0], abs=1e-4)


@settings(max_examples=8, deadline=None)
@given(target=st.lists(st.sampled_from([*WORDS, "Göteborg,", "(Volvo)"]), min_size=1, max_size=7),
       spans=st.lists(st.integers(1, 2), min_size=1, max_size=3), markers=st.sampled_from(["one", "all"]))
def test_search_equals_exhaustive_with_several_slots_conflicts_and_glued_punctuation(sharp, target, spans, markers):
    source, position, labeled = [], 0, []
    for k, width in enumerate(spans):
        source += [f"w{k}"] + [f"e{k}x{n}" for n in range(width)]
        labeled.append((position + 1, position + 1 + width, f"L{k}"))
        position += 1 + width
    example = _example(" ".join(target), " ".join(source), labeled)
    fast, slow = (project_examples(f"insertion?source_markers={markers}{extra}", [example], scorer=sharp)[0]
                  for extra in ("", "&exhaustive=true"))
    assert fast.tags == slow.tags and [s.status for s in fast.statuses] == [s.status for s in slow.statuses]
    assert [e.score for e in fast.entities] == [e.score for e in slow.entities]
    occupied = [k for e in fast.entities for k in range(e.token_start, e.token_end)]
    assert len(occupied) == len(set(occupied))  # never overlapping


def test_search_runs_fewer_decoder_rows_than_exhaustive_when_bounds_prune():
    scorer = FakeMarkerScorer(peaked=True)
    example = _example("a b c d e f g h i j", "x y z", [(1, 2, "X")])
    scorer.stats.clear()
    fast = project_examples("insertion", [example], scorer=scorer)[0]
    search_rows = scorer.stats["decoder_rows"]
    scorer.stats.clear()
    slow = project_examples("insertion?exhaustive=true", [example], scorer=scorer)[0]
    # the exhaustive search: the unmarked target (for its decoder states), then every candidate
    assert fast.tags == slow.tags and scorer.stats["decoder_rows"] == 1 + len(candidate_spans(10, 4)) == 35
    assert search_rows < 34 / 2


# --- insertion: plumbing -----------------------------------------------------------------------------


def test_batching_sentences_together_equals_projecting_them_one_by_one(scorer):
    examples = [_example("Angela Merkel besuchte am Montag Paris .", "Angela Merkel visited Paris on Monday .",
                         [(0, 2, "PER"), (3, 4, "LOC"), (5, 6, "DATE")]),
                _example("我住在哥德堡。", "I live in Gothenburg", [(3, 4, "LOC")], lang="zh"),
                _example("Volvo", "Volvo", [(0, 1, "ORG")])]
    together = project_examples("insertion", examples, scorer=scorer)
    alone = [project_examples("insertion", [example], scorer=scorer)[0] for example in examples]
    for a, b in zip(together, alone, strict=True):
        assert a.tags == b.tags and [e.score for e in a.entities] == [e.score for e in b.entities]
        assert all(e.score is not None and 0 <= e.score <= 1 and e.match == "insertion" for e in a.entities)
    assert together[1].tokenization == "characters" and len(together[1].tags) == 7
    assert [s.status for s in together[0].statuses] == ["projected"] * 3 and together[0].complete


def test_markers_go_at_word_boundaries_of_the_targets_own_tokenization():
    text, offsets = target_text(tokenize_target("我住在哥德堡。", "zh"))
    assert mark_target(text, offsets, 3, 6, "[", "]") == "我住在 [ 哥德堡 ] 。"
    sentence = tokenize_target("Sie wohnt in Göteborg, nicht (Oslo).")
    text, offsets = target_text(sentence)
    assert mark_target(text, offsets, 3, 4, "M", "M") == "Sie wohnt in M Göteborg M , nicht (Oslo)."
    assert mark_target(text, offsets, 7, 8, "M", "M") == "Sie wohnt in Göteborg, nicht ( M Oslo M )."
    given = tokenize_target(["Sie", "wohnt", "in", "Göteborg"])
    assert target_text(given) == ("Sie wohnt in Göteborg", [(0, 3), (4, 9), (10, 12), (13, 21)])
    assert target_text(tokenize_target(["哥", "德", "堡"]))[0] == "哥德堡"


def test_spans_never_overlap_and_what_cannot_be_placed_is_a_counted_conflict(scorer):
    example = _example("Paris", "Angela Merkel visited Paris", [(0, 2, "PER"), (3, 4, "LOC")])
    (result,) = project_examples("insertion", [example], scorer=scorer)
    assert len(result.entities) == 1 and sorted(s.status for s in result.statuses) == ["conflict", "projected"]
    assert not result.complete and result.reason == "entity_not_projected" and not result.kept
    assert project_examples("insertion?drop_incomplete=false", [example], scorer=scorer)[0].kept


def test_a_span_under_min_score_comes_back_missing_with_its_reason(scorer):
    example = _example("Ich wohne in Göteborg .", "I live in Gothenburg .", [(3, 4, "LOC")])
    kept = project_examples("insertion", [example], scorer=scorer)[0]
    (entity,) = kept.entities
    dropped = project_examples("insertion", [example], scorer=scorer, min_score=0.5)[0]
    assert entity.score < 0.5  # a random model gives markers about 1/len(vocabulary)
    assert dropped.entities == [] and [s.status for s in dropped.statuses] == ["below_threshold"]
    assert dropped.tags == ["O"] * 5 and not dropped.kept


def test_bad_input_is_a_counted_drop_or_a_clear_error(scorer, tiny_bart):
    empty = _example(tokenize_target([]), "I live in Gothenburg", [(3, 4, "LOC")])
    (result,) = project_examples("insertion", [empty], scorer=scorer)
    assert [s.status for s in result.statuses] == ["empty_target"] and result.reason == "empty_target"
    # 17 slots: the tiny model has 16 marker tokens; only the sources that carry them all need them
    many = _example("a b c d e f g h i j k l m n o p q", " ".join("abcdefghijklmnopq"), [(k, k + 1, "X") for k in range(17)])
    (result,) = project_examples("insertion?source_markers=all", [many], scorer=scorer)
    assert {s.status for s in result.statuses} == {"too_many_spans"} and result.reason == "too_many_spans"
    bart = TranslationScorer.from_pretrained(tiny_bart)
    with pytest.raises(ValueError, match=rf"marker style, but {tiny_bart} has no token for '__SLOT0__'") as caught:
        project_examples("insertion", [empty], scorer=bart)
    assert "'crop'" in str(caught.value)
    with pytest.raises(ValueError, match="insertion projection scores spans with a translation model: pass scorer="):
        project_examples("insertion", [empty])
    with pytest.raises(ValueError, match=r"rerank projection scores .* or scorer_model=NAME with src_lang/tgt_lang to "
                                         r"pipeline\('projection'\)$"):
        PROJECTION_METHODS["rerank"].function([empty], RerankOptions())  # the function itself checks too
    with pytest.raises(ValueError, match="sentence 0: the target already contains a marker of the 'easyproject'"):
        project_examples("insertion?marker_style=easyproject", [_example("a [b]", "x", [(0, 1, "X")])], scorer=scorer)
    with pytest.raises(ValueError, match=r"sentence 1: span .* is empty or outside"):
        project_examples("insertion", [empty, _example("a b", "x", [(0, 3, "X")])], scorer=scorer)
    with pytest.raises(ValueError, match="needs source_tokens"):
        project_examples("insertion", [ProjectionExample(tokenize_target("a"))], scorer=scorer)


def test_the_bracket_style_places_brackets(scorer):
    example = _example("Ich wohne in Göteborg .", "I live in Gothenburg .", [(3, 4, "LOC")])
    (result,) = project_examples("insertion?marker_style=easyproject&max_span_words=2", [example], scorer=scorer)
    assert result.statuses[0].status == "projected" and result.entities[0].token_end - result.entities[0].token_start <= 2


# --- insertion: the selection, with probabilities the test sets ---------------------------------------


class FakeMarkerScorer:
    """A "model" over whitespace tokens: an opening marker before word ``a`` costs ``OPEN[source][a]``, a
    closing one after word ``b`` costs ``CLOSE[source][b]``, a word costs ``after[word]`` right after a
    marker and ``words[word]`` elsewhere (default 0.5 both), ``</s>`` 0.5 (log-probabilities, negated).
    With the default word costs the best span of a source is the ``(a, b)`` of highest ``OPEN[a] + CLOSE[b]``."""

    name = "fake-marker-model"
    sentences_per_batch = 64
    tolerance = 1e-9

    def __init__(self, tables=None, peaked=False, words=None, after=None, back=None):
        self.tables = tables or {}
        self.back = back  # span text -> mean log P(entity | span), the reverse direction (None: the model has none)
        self.peaked = peaked
        self.words, self.after = words or {}, after or {}
        self.stats = __import__("collections").Counter()
        self.ids: dict[str, int] = {"</s>": 0, "__SLOT0__": 1, "__SLOT1__": 2}
        self.spelled = {0: "</s>"}

    def marker_vocabulary(self, style):
        return SimpleNamespace(single_token_slots={0, 1}, marker_ids=[1, 2], signatures={})

    def reverse(self):
        if self.back is None:
            raise ValueError("fake-marker-model translates one fixed direction")
        return SimpleNamespace(mean_log_probs=lambda spans, entities: [self.back[span] for span in spans])

    def encode_targets(self, texts):
        rows = [[self.ids.setdefault(word, len(self.ids)) for word in text.split()] + [0] for text in texts]
        self.spelled.update({number: word for word, number in self.ids.items()})
        return rows

    def total(self, source, text):
        """The reference score of one marked target: its own tokens' log-probabilities, summed."""
        (ids,) = self.encode_targets([text])
        return sum(self._log_prob(source, ids[:t], ids[t]) for t in range(len(ids)))

    def encode_sources(self, texts):
        return SimpleNamespace(texts=list(texts))

    def _table(self, source, n):
        if source in self.tables:
            return self.tables[source]
        if self.peaked:  # one clear best span, (3, 5), everything else far behind
            return [-0.1 if a == 3 else -30.0 for a in range(n)], [-0.1 if b == 5 else -30.0 for b in range(n + 1)]
        raise KeyError(source)

    def _log_prob(self, source, prefix, token):
        if token == 0:
            return -0.5
        if token not in (1, 2):
            word = self.spelled[token]
            return self.after.get(word, -0.5) if prefix and prefix[-1] in (1, 2) else self.words.get(word, -0.5)
        words = sum(t not in (1, 2) for t in prefix)
        opening, closing = self._table(source, 10)
        return opening[words] if not any(t in (1, 2) for t in prefix) else closing[words]

    def score_rows(self, encoded, rows, gather, keep=False, resume=None):  # keeps no decoder states
        self.stats["decoder_rows"] += len(rows)
        out = []
        for (source, ids), asked in zip(rows, gather, strict=True):
            text = encoded.texts[source]
            own = [self._log_prob(text, ids[:t], ids[t]) for t in range(len(ids))]
            out.append(RowScores(own, [self._log_prob(text, ids[:t], token) for t, token in asked], 0))
        return out


@pytest.mark.parametrize("tail_tokens", [None, 1])
def test_insertion_decodes_exactly_the_tokens_it_needs(tiny_m2m100, tail_tokens):
    """One row per batch, so each row's decoded positions are its own: the unmarked target up to the last opening
    marker (to its end where candidates read tails from it), and each candidate from its opening marker (to where
    its tail window ends), resuming from the unmarked target's kept states."""
    scorer = TranslationScorer.from_pretrained(tiny_m2m100, "en", "de", batch_size=1)
    example = _example("Ich wohne in Göteborg .", "I live in Gothenburg .", [(3, 4, "LOC")])
    option = "" if tail_tokens is None else f"&tail_tokens={tail_tokens}"
    scorer.stats.clear()
    project_examples(f"insertion?exhaustive=true{option}", [example], scorer=scorer)
    text, offsets = target_text(example.target)
    plain, *full = scorer.encode_targets([text] + [mark_target(text, offsets, i, j, "__SLOT0__", "__SLOT0__")
                                                   for i, j in candidate_spans(5, 4)])
    opening = [next(t for t, (a, b) in enumerate(zip(plain, row, strict=False)) if a != b) for row in full]
    if tail_tokens is None:
        expected = max(opening) + 1 + sum(len(row) - at for row, at in zip(full, opening, strict=True))
    else:
        ending = [next(t for t in range(1, len(row)) if row[-t] != plain[-t]) - 1 for row in full]
        expected = len(plain) + sum(len(row) - max(0, common - tail_tokens) - at
                                    for row, at, common in zip(full, opening, ending, strict=True))
    assert scorer.stats["decoder_rows"] == 1 + len(full)
    assert scorer.stats["decoder_tokens"] == expected
    scorer.stats.clear()
    project_examples(f"insertion?{option}", [example], scorer=scorer)  # the search: never more than that
    assert scorer.stats["decoder_tokens"] <= expected


class RecordingScorer(FakeMarkerScorer):
    """Records the sources it encodes and the targets it tokenizes."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.sources, self.targets = [], []

    def encode_sources(self, texts):
        self.sources += list(texts)
        return super().encode_sources(texts)

    def encode_targets(self, texts):
        self.targets += list(texts)
        return super().encode_targets(texts)


def test_source_markers_all_numbers_every_span_in_sentence_order_on_both_sides():
    scorer = RecordingScorer(peaked=True)
    example = _example("a b c d e f g h i j", "p q r s t", [(3, 4, "B"), (0, 1, "A")])  # given out of order
    project_examples("insertion?source_markers=all", [example], scorer=scorer)
    assert scorer.sources == ["__SLOT0__ p __SLOT0__ q r __SLOT1__ s __SLOT1__ t"]  # one source for both slots
    marked = {text for text in scorer.targets if "__SLOT" in text}
    assert "__SLOT1__ a __SLOT1__ b c d e f g h i j" in marked  # span (3, 4) is the second in sentence order
    assert "__SLOT0__ a __SLOT0__ b c d e f g h i j" in marked
    one = RecordingScorer(peaked=True)
    project_examples("insertion", [example], scorer=one)
    assert one.sources == ["p q r __SLOT0__ s __SLOT0__ t", "__SLOT0__ p __SLOT0__ q r s t"]
    assert not any("__SLOT1__" in text for text in one.targets)


def test_statuses_name_their_entity_and_sentences_without_spans_pass_through():
    scorer = FakeMarkerScorer(peaked=True)
    examples = [_example("a b c", "x y", []), _example("a b c d e f g h i j", "x y z w", [(1, 3, "ORG"), (3, 4, "PER")]),
                _example(tokenize_target([]), "u v", [(0, 2, "LOC")])]
    empty, placed, nothing = project_examples("insertion?min_score=0.5", examples, scorer=scorer)
    assert empty.entities == [] and empty.statuses == [] and empty.reason is None
    # ORG takes the one probable span; PER's best free span is improbable (score 0.0)
    assert [(s.text, s.label, s.status) for s in placed.statuses] == [("y z", "ORG", "projected"),
                                                                      ("w", "PER", "below_threshold")]
    assert [(e.source, e.label, e.token_start, e.token_end) for e in placed.entities] == [(0, "ORG", 3, 5)]
    assert [(s.text, s.label, s.status) for s in nothing.statuses] == [("u v", "LOC", "empty_target")]
    with pytest.raises(ValueError, match="sentence 2: the target already contains a marker"):
        project_examples("insertion", [*examples[:2], _example("a __SLOT0__", "x", [(0, 1, "X")])], scorer=scorer)
    with pytest.raises(ValueError, match="sentence 1: insertion projection needs source_tokens"):
        project_examples("insertion", [examples[1], ProjectionExample(tokenize_target("a"))], scorer=scorer)


def _marked(source, span):
    return mark_tokens(source.split(), [span]).text


dyadic = st.integers(-64, 0).map(lambda value: value / 16)  # sums of these are exact in floating point


@settings(max_examples=150, deadline=None)
@given(n=st.integers(1, 7), max_span_words=st.integers(1, 4), width=st.sampled_from([1, 4]), data=st.data())
def test_search_is_exact_where_a_marker_changes_the_probability_of_the_words_after_it(n, max_span_words, width, data):
    """Random marker and word costs (a word right after a marker costs something else): the search's span is the
    one of highest total score over every candidate, ties going to the first (the exhaustive order)."""
    words = [f"t{k}" for k in range(n)]
    source = "x y"
    tables = {_marked(source, (1, 2, "X")): ([data.draw(dyadic) for _ in range(n)],
                                              [data.draw(dyadic) for _ in range(n + 1)])}
    scorer = FakeMarkerScorer(tables, words={w: data.draw(dyadic) for w in words},
                              after={w: data.draw(dyadic) for w in words})
    (result,) = project_examples(f"insertion?max_span_words={max_span_words}&width={width}",
                                 [_example(" ".join(words), source, [(1, 2, "X")])], scorer=scorer)
    marked = _marked(source, (1, 2, "X"))
    totals = {(i, j): scorer.total(marked, " ".join([*words[:i], "__SLOT0__", *words[i:j], "__SLOT0__", *words[j:]]))
              for i, j in candidate_spans(n, max_span_words)}
    best = max(totals, key=totals.get)
    assert _spans(result) == [(*best, "X")]


def _windowed_total(scorer, source, marked_ids, plain_ids, tail_tokens):
    """tail_tokens' objective, computed apart from the search: the marked target's tokens, except that the common
    ending with the unmarked target past its first tail_tokens tokens is read from the unmarked target."""
    common = 0
    while common < min(len(marked_ids), len(plain_ids)) and marked_ids[-1 - common] == plain_ids[-1 - common]:
        common += 1
    tail = max(0, common - tail_tokens)
    return (sum(scorer._log_prob(source, marked_ids[:t], marked_ids[t]) for t in range(len(marked_ids) - tail))
            + sum(scorer._log_prob(source, plain_ids[:t], plain_ids[t])
                  for t in range(len(plain_ids) - tail, len(plain_ids))))


@settings(max_examples=120, deadline=None)
@given(n=st.integers(1, 7), tail_tokens=st.integers(0, 3), width=st.sampled_from([1, 4]), data=st.data())
def test_tail_tokens_search_is_exact_for_its_objective(n, tail_tokens, width, data):
    """With tail_tokens the search returns the best span under that objective (the unmarked target's probability
    for the common ending past the window), computed here apart; exhaustive enumeration agrees."""
    words = [f"t{k}" for k in range(n)]
    source = "x y"
    marked = _marked(source, (1, 2, "X"))
    tables = {marked: ([data.draw(dyadic) for _ in range(n)], [data.draw(dyadic) for _ in range(n + 1)])}
    scorer = FakeMarkerScorer(tables, words={w: data.draw(dyadic) for w in words},
                              after={w: data.draw(dyadic) for w in words})
    example = _example(" ".join(words), source, [(1, 2, "X")])
    fast, slow = (project_examples(f"insertion?tail_tokens={tail_tokens}&width={width}{extra}", [example],
                                   scorer=scorer)[0] for extra in ("", "&exhaustive=true"))
    (plain,) = scorer.encode_targets([" ".join(words)])
    totals = {}
    for i, j in candidate_spans(n, 4):
        (ids,) = scorer.encode_targets([" ".join([*words[:i], "__SLOT0__", *words[i:j], "__SLOT0__", *words[j:]])])
        totals[(i, j)] = _windowed_total(scorer, marked, ids, plain, tail_tokens)
    best = max(totals, key=totals.get)
    assert _spans(fast) == _spans(slow) == [(*best, "X")]
    if tail_tokens >= 1:  # this model's markers change only the next word's cost: one token of window is exact
        exact = project_examples("insertion", [example], scorer=scorer)[0]
        assert _spans(fast) == _spans(exact)


def test_tail_tokens_decodes_fewer_tokens_and_keeps_real_models_search_exact(scorer, sharp):
    examples = [_example("Angela Merkel besuchte am Montag Paris .", "Angela Merkel visited Paris on Monday .",
                         [(0, 2, "PER"), (3, 4, "LOC")]), _example("Ich wohne in Göteborg", "I live in Gothenburg",
                                                                    [(3, 4, "LOC")])]
    tokens = {}
    for spec in ("insertion?exhaustive=true", "insertion?exhaustive=true&tail_tokens=1", "insertion?tail_tokens=1"):
        sharp.stats.clear()
        tokens[spec] = (project_examples(spec, examples, scorer=sharp), sharp.stats["decoder_tokens"])
    assert [r.tags for r in tokens["insertion?tail_tokens=1"][0]] == \
        [r.tags for r in tokens["insertion?exhaustive=true&tail_tokens=1"][0]]
    # the window leaves out most of each candidate's tokens after its closing marker
    assert tokens["insertion?exhaustive=true&tail_tokens=1"][1] < 0.8 * tokens["insertion?exhaustive=true"][1]
    # a window past every candidate's ending is the exact objective: the same spans and scores
    exact, wide = (project_examples(spec, examples, scorer=scorer) for spec in ("insertion", "insertion?tail_tokens=99"))
    assert [r.tags for r in exact] == [r.tags for r in wide]
    assert [e.score for r in exact for e in r.entities] == pytest.approx([e.score for r in wide for e in r.entities])
    with pytest.raises(ValueError, match="tail_tokens must be none or at least 0, got -1"):
        project_examples("insertion?tail_tokens=-1", examples, scorer=scorer)


@settings(max_examples=100, deadline=None)
@given(n=st.integers(1, 6), nbest=st.integers(2, 5), weight=st.sampled_from([0.5, 1.0, 4.0]), data=st.data())
def test_nbest_placements_are_reranked_by_the_reverse_score(n, nbest, weight, data):
    """With nbest > 1 the span is the best, by log-probability + weight x reverse score, of the nbest placements
    of highest log-probability over every candidate (ties: the first), found by the pruned search."""
    words = [f"t{k}" for k in range(n)]
    source = "x y"
    marked = _marked(source, (1, 2, "X"))
    tables = {marked: ([data.draw(dyadic) for _ in range(n)], [data.draw(dyadic) for _ in range(n + 1)])}
    spans = candidate_spans(n, 3)
    back = {" ".join(words[i:j]): data.draw(dyadic) for i, j in spans}
    scorer = FakeMarkerScorer(tables, words={w: data.draw(dyadic) for w in words}, back=back)
    (result,) = project_examples(f"insertion?max_span_words=3&nbest={nbest}&reverse_weight={weight}",
                                 [_example(" ".join(words), source, [(1, 2, "X")])], scorer=scorer)
    totals = [(scorer.total(marked, " ".join([*words[:i], "__SLOT0__", *words[i:j], "__SLOT0__", *words[j:]])), -c)
              for c, (i, j) in enumerate(spans)]
    top = sorted(range(len(spans)), key=lambda c: totals[c], reverse=True)[:nbest]
    chosen = max(top, key=lambda c: (totals[c][0] + weight * back[" ".join(words[slice(*spans[c])])], -c))
    assert _spans(result) == [(*spans[chosen], "X")]


def test_nbest_reranking_needs_the_reverse_direction_and_fixes_what_the_reverse_score_knows(scorer):
    source = "I live in Gothenburg"
    table = {_marked(source, (3, 4, "LOC")): ([-9.0, -3.0, -0.2, -8.0], [-9.0, -9.0, -9.0, -0.6, -0.3])}
    example = _example("a b c d", source, [(3, 4, "LOC")])
    assert _spans(project_examples("insertion", [example], scorer=FakeMarkerScorer(table))[0]) == [(2, 4, "LOC")]
    words = example.target.tokens
    back = {" ".join(words[i:j]): -5.0 for i, j in candidate_spans(4, 4)}
    back.update({"c d": -3.0, "c": -0.1})  # the reverse direction reads "c" as Gothenburg, "c d" hardly
    reranked = FakeMarkerScorer(table, back=back)
    (result,) = project_examples("insertion?nbest=2", [example], scorer=reranked)
    assert _spans(result) == [(2, 3, "LOC")]  # -0.2 - 0.6 - 0.1 beats -0.2 - 0.3 - 3.0
    with pytest.raises(ValueError, match="insertion with nbest=2 reranks placements by the reverse direction: "
                                         "fake-marker-model translates one fixed direction"):
        project_examples("insertion?nbest=2", [example], scorer=FakeMarkerScorer(table))
    with pytest.raises(ValueError, match="nbest must be at least 1"):
        project_examples("insertion?nbest=0", [example], scorer=FakeMarkerScorer(table))
    # a real model: the pruned n-best search gives what the exhaustive one gives
    examples = [_example("Angela Merkel besuchte am Montag Paris .", "Angela Merkel visited Paris on Monday .",
                         [(0, 2, "PER"), (3, 4, "LOC")]), _example("Ich wohne in Göteborg", source, [(3, 4, "LOC")])]
    fast, slow = (project_examples(f"insertion?nbest=3{extra}", examples, scorer=scorer)
                  for extra in ("", "&exhaustive=true"))
    assert [r.tags for r in fast] == [r.tags for r in slow]


def test_the_selection_takes_the_most_probable_marker_placement():
    source = "I live in Gothenburg"
    opening = [-9.0, -3.0, -0.2, -8.0]  # before word 2 ...
    closing = [-9.0, -9.0, -9.0, -7.0, -0.3]  # ... and after word 3: (2, 4)
    scorer = FakeMarkerScorer({_marked(source, (3, 4, "LOC")): (opening, closing)})
    (result,) = project_examples("insertion", [_example("a b c d", source, [(3, 4, "LOC")])], scorer=scorer)
    assert _spans(result) == [(2, 4, "LOC")]
    assert result.entities[0].score == round(math.exp((-0.2 - 0.3) / 2), 2)
    (short,) = project_examples("insertion?max_span_words=1", [_example("a b c d", source, [(3, 4, "LOC")])],
                                scorer=scorer)
    assert _spans(short) == [(2, 3, "LOC")]  # -0.2 + -9.0 beats every other one-word span


@pytest.mark.parametrize("first_wins", [True, False])
def test_overlapping_best_spans_go_to_the_higher_score_and_the_other_slot_searches_again(first_wins):
    source = "Anna met Bo"
    high, low = (-0.1, -0.1), (-1.0, -1.0)
    a, b = high if first_wins else low, low if first_wins else high
    tables = {  # slot A wants (1, 3), else (0, 1); slot B wants (2, 4), else (3, 4)
        _marked(source, (0, 1, "A")): ([-20.0, a[0], -20.0, -20.0], [-20.0, -5.0, -20.0, a[1], -20.0]),
        _marked(source, (2, 3, "B")): ([-20.0, -20.0, b[0], -5.0], [-20.0, -20.0, -20.0, -20.0, b[1]]),
    }
    tables[_marked(source, (0, 1, "A"))][0][0] = -4.0
    scorer = FakeMarkerScorer(tables)
    (result,) = project_examples("insertion", [_example("w x y z", source, [(0, 1, "A"), (2, 3, "B")])],
                                 scorer=scorer)
    assert _spans(result) == ([(1, 3, "A"), (3, 4, "B")] if first_wins else [(0, 1, "A"), (2, 4, "B")])
    assert [s.status for s in result.statuses] == ["projected", "projected"]


# --- rerank ----------------------------------------------------------------------------------------


class FakePlainScorer:
    """Copying costs nothing (P = 1/2 each way); translating e into c, either way, has probability ``TABLE[(e, c)]``,
    so s(e, c) = 2 TABLE[(e, c)]."""

    sentences_per_batch = 64

    def __init__(self, table, src="en", tgt="de", *, reverse=None, copies=None, log=None):
        self.table, self.languages = table, SimpleNamespace(src_lang=src, tgt_lang=tgt)
        self.reverse_table = table if reverse is None else reverse  # P(e | c), when it should differ from P(c | e)
        self.copies = copies or {}  # P(c | c) where it is not 1/2
        self.log = {"reverse": [], "copied": []} if log is None else log  # what P(e | c) and P(c | c) were asked for

    def direction(self, src, tgt):
        return FakePlainScorer(self.table, src, tgt, reverse=self.reverse_table, copies=self.copies, log=self.log)

    def reverse(self):
        return self.direction(self.languages.tgt_lang, self.languages.src_lang)

    def encode_sources(self, texts):
        return SimpleNamespace(texts=list(texts), src_lang=self.languages.src_lang)

    def mean_log_probs(self, sources, targets, encoded=None):
        src, tgt = self.languages.src_lang, self.languages.tgt_lang
        # reranking encodes each language's texts once and hands them to both directions from that language
        assert encoded is not None and encoded.src_lang == src and set(sources) <= set(encoded.texts)
        if src == tgt == "de":
            self.log["copied"] += targets
            return [math.log(self.copies.get(text, 0.5)) for text in targets]
        if src == tgt:
            return [math.log(0.5)] * len(sources)
        if src == "en":
            return [math.log(self.table.get(pair, 0.01)) for pair in zip(sources, targets, strict=True)]
        self.log["reverse"] += zip(targets, sources, strict=True)
        return [math.log(self.reverse_table.get(pair, 0.01)) for pair in zip(targets, sources, strict=True)]


def test_symmetric_score_is_t_projections():
    scorer = FakePlainScorer({("Paris", "Paris"): 0.4, ("Paris", "Parigi"): 0.3})
    assert symmetric_scores(scorer, [("Paris", "Paris"), ("Paris", "Parigi"), ("Paris", "Rom")]) == pytest.approx(
        [0.8, 0.6, 0.02])


def test_a_shortlist_reads_the_reverse_half_only_for_each_groups_best_on_the_forward_half():
    forward = {("Paris", "Paris"): 0.4, ("Paris", "Parigi"): 0.3, ("Paris", "Rom"): 0.2, ("Rom", "Rom"): 0.45}
    reverse = {("Paris", "Paris"): 0.1, ("Paris", "Parigi"): 0.1, ("Paris", "Rom"): 0.45, ("Rom", "Rom"): 0.45}
    pairs = [("Paris", "Paris"), ("Paris", "Parigi"), ("Paris", "Rom"), ("Rom", "Rom"), ("Rom", "Paris")]
    log = {"reverse": [], "copied": []}
    scorer = FakePlainScorer(forward, reverse=reverse, log=log)
    assert symmetric_scores(scorer, pairs) == pytest.approx([0.5, 0.4, 0.65, 0.9, 0.02])
    log["reverse"].clear()
    # groups default to the entity text; Paris → Rom is the best pair in full, but not on P(c | e) / P(c | c)
    assert symmetric_scores(scorer, pairs, shortlist=1) == pytest.approx([0.5, None, None, 0.9, None])
    assert sorted(log["reverse"]) == [("Paris", "Paris"), ("Rom", "Rom")]
    flagged = symmetric_scores(scorer, pairs, shortlist=1, always=[False, False, True, False, False])
    assert flagged == pytest.approx([0.5, None, 0.65, 0.9, None])
    assert symmetric_scores(scorer, pairs, shortlist=2, groups=["one"] * 5) == pytest.approx(
        [0.5, None, None, 0.9, None])
    assert symmetric_scores(scorer, pairs, shortlist=5) == pytest.approx(symmetric_scores(scorer, pairs))
    with pytest.raises(ValueError, match="shortlist must be at least 1, got 0"):
        symmetric_scores(scorer, pairs, shortlist=0)
    with pytest.raises(ValueError, match="2 groups and 5 always flags for 5 pairs"):
        symmetric_scores(scorer, pairs, shortlist=1, groups=[0, 1])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("ab"), st.sampled_from("wxyz"), st.integers(1, 9), st.integers(1, 9),
                          st.integers(0, 2)), min_size=1, max_size=12),
       st.integers(1, 3))
def test_a_shortlist_scores_exactly_the_pairs_some_group_keeps_and_scores_them_in_full(rows, size):
    forward = {(e, c): f / 20 for e, c, f, _, _ in rows}
    reverse = {(e, c): r / 20 for e, c, _, r, _ in rows}
    pairs, groups = [(e, c) for e, c, *_ in rows], [g for *_, g in rows]
    scorer = FakePlainScorer(forward, reverse=reverse)
    full = symmetric_scores(scorer, pairs)
    kept = set()
    for group in set(groups):  # independently: each group's best on the forward half, ties to the earlier pair
        members = sorted((-forward[pairs[i]], i) for i in range(len(pairs)) if groups[i] == group)
        kept.update(pairs[i] for _, i in members[:size])
    short = symmetric_scores(scorer, pairs, shortlist=size, groups=groups)
    assert [value is not None for value in short] == [pair in kept for pair in pairs]
    assert [v for v in short if v is not None] == pytest.approx(
        [f for f, v in zip(full, short, strict=True) if v is not None])


def test_a_shortlist_ranks_by_the_forward_half_with_its_copy_probability():
    # "Rom" is the likelier translation, "Roma" the better on P(c | e) / P(c | c): it is harder to copy
    log = {"reverse": [], "copied": []}
    scorer = FakePlainScorer({("Rome", "Rom"): 0.3, ("Rome", "Roma"): 0.2}, copies={"Rom": 0.9, "Roma": 0.25},
                             log=log)
    assert symmetric_scores(scorer, [("Rome", "Rom"), ("Rome", "Roma")], shortlist=1) == pytest.approx(
        [None, 0.5 * (0.4 + 0.2 / 0.25)])
    assert log["reverse"] == [("Rome", "Roma")] and sorted(log["copied"]) == ["Rom", "Roma"]


def test_rerank_with_a_shortlist_takes_only_shortlisted_ngrams_and_always_hybrids_span():
    example = _example("Jag såg Göteborg idag", "I saw Gothenburg", [(2, 3, "LOC")], alignment=[(0, 0), (1, 1), (2, 2)])
    forward = {("Gothenburg", "Göteborg"): 0.2, ("Gothenburg", "idag"): 0.3, ("Gothenburg", "såg"): 0.25}
    reverse = {("Gothenburg", "Göteborg"): 0.45, ("Gothenburg", "idag"): 0.05, ("Gothenburg", "såg"): 0.05}
    scorer = FakePlainScorer(forward, reverse=reverse)
    [full] = project_examples("rerank?max_span_words=1", [example], scorer=scorer)
    [short] = project_examples("rerank?max_span_words=1&candidates=ngrams&shortlist=1", [example], scorer=scorer)
    assert _spans(full) == [(2, 3, "LOC")] and full.entities[0].score == pytest.approx(0.65)
    assert _spans(short) == [(3, 4, "LOC")] and short.entities[0].score == pytest.approx(0.35)
    other = _example("Rom ist schön", "Rome is nice", [(0, 1, "LOC")])  # its entity has its own shortlist
    both = project_examples("rerank?max_span_words=1&candidates=ngrams&shortlist=1", [example, other],
                            scorer=FakePlainScorer(forward | {("Rome", "Rom"): 0.1}, reverse=reverse))
    assert [_spans(result) for result in both] == [[(3, 4, "LOC")], [(0, 1, "LOC")]]
    same_name = [_example("Paris ist schön", "Paris is nice", [(0, 1, "LOC")]),
                 _example("Parigi è bella", "Paris is nice", [(0, 1, "LOC")])]  # one entity text, two sentences
    paris = FakePlainScorer({("Paris", "Paris"): 0.4, ("Paris", "Parigi"): 0.3})
    results = project_examples("rerank?max_span_words=1&candidates=ngrams&shortlist=1", same_name, scorer=paris)
    assert [r.entities[0].text for r in results] == ["Paris", "Parigi"]
    # hybrid's span (Göteborg, through the link) is always scored in full, so the shortlist cannot hide it
    [kept] = project_examples("hybrid_rerank?max_span_words=1&shortlist=1&margin=0", [example], scorer=scorer)
    assert _spans(kept) == [(2, 3, "LOC")] and kept.entities[0].match == "alignment"
    with pytest.raises(ValueError, match="max_span_words and shortlist must be at least 1, got 4 and 0"):
        project_examples("rerank?shortlist=0", [example], scorer=scorer)


def test_rerank_with_a_shortlist_on_a_real_model_scores_fewer_rows_and_keeps_full_scores(scorer):
    examples = [_example("Angela Merkel besuchte am Montag Paris .", "Angela Merkel visited Paris on Monday .",
                         [(0, 2, "PER"), (3, 4, "LOC")]),
                _example("Sie wohnt in der schönen Stadt Göteborg", "She lives in the beautiful city of Gothenburg",
                         [(3, 8, "LOC")])]
    runs = {}
    for spec in ("rerank?max_span_words=2&shortlist=none", "rerank?max_span_words=2&shortlist=2",
                 "rerank?max_span_words=2&shortlist=99"):
        before = scorer.stats["decoder_tokens"]
        runs[spec] = (project_examples(spec, examples, scorer=scorer), scorer.stats["decoder_tokens"] - before)
    (full, tokens), (short, fewer), (everything, same) = runs.values()
    assert fewer < 0.6 * tokens and same == tokens
    assert [r.tags for r in everything] == [r.tags for r in full]
    alone = [project_examples("rerank?max_span_words=2&shortlist=2", [example], scorer=scorer)[0] for example in examples]
    assert [r.tags for r in alone] == [r.tags for r in short]  # each entity of each sentence has its own shortlist
    assert all(s.status == "projected" for r in short for s in r.statuses)
    texts = [[" ".join(e.source_tokens[s.start:s.end]) for s in e.source_spans] for e in examples]
    for example, names, result in zip(examples, texts, short, strict=True):  # a taken span's score is its full score
        for entity in result.entities:
            [value] = symmetric_scores(scorer, [(names[entity.source], example.target.span_text(entity.token_start,
                                                                                                 entity.token_end))])
            assert entity.score == pytest.approx(value, abs=0.01)
    before = dict(scorer.stats)
    with pytest.raises(ValueError, match="shortlist must be at least 1, got 0"):
        symmetric_scores(scorer, [("Paris", "Paris")], shortlist=0)
    assert scorer.stats == before  # refused before any model pass


def test_rerank_takes_each_entitys_best_free_candidate_in_source_order():
    example = _example("Angela Merkel besuchte Paris", "Angela Merkel visited Paris", [(0, 2, "PER"), (3, 4, "LOC")])
    scorer = FakePlainScorer({("Angela Merkel", "Angela Merkel"): 0.4, ("Paris", "Merkel"): 0.49,
                              ("Paris", "Paris"): 0.45})
    (result,) = project_examples("rerank", [example], scorer=scorer)
    assert _spans(result) == [(0, 2, "PER"), (3, 4, "LOC")]  # Merkel scores higher for Paris but is taken
    assert [e.score for e in result.entities] == [0.8, 0.9] and {e.match for e in result.entities} == {"rerank"}
    (strict,) = project_examples("rerank?min_score=0.85", [example], scorer=scorer)
    assert [s.status for s in strict.statuses] == ["below_threshold", "projected"]
    assert _spans(strict) == [(1, 2, "LOC")]  # an entity under min_score takes nothing, so Merkel is free


@pytest.mark.parametrize("margin, expected", [(0.1, [(2, 3, "LOC", "rerank")]), (1.0, [(3, 4, "LOC", "alignment")])])
def test_hybrid_rerank_keeps_hybrids_span_unless_the_model_prefers_another_by_the_margin(margin, expected):
    example = _example("Jag såg Göteborg idag", "I saw Gothenburg", [(2, 3, "LOC")], alignment=[(0, 0), (1, 1), (2, 3)])
    scorer = FakePlainScorer({("Gothenburg", "Göteborg"): 0.45, ("Gothenburg", "idag"): 0.1})
    (result,) = project_examples("hybrid_rerank", [example], scorer=scorer, margin=margin)
    assert [(e.token_start, e.token_end, e.label, e.match) for e in result.entities] == expected
    assert result.statuses[0].status == "projected"


def test_rerank_with_a_real_model_batches_and_takes_hybrids_spans_as_candidates(scorer):
    examples = [_example("Angela Merkel besuchte am Montag Paris .", "Angela Merkel visited Paris on Monday .",
                         [(0, 2, "PER"), (3, 4, "LOC")]),
                _example("Sie wohnt in der schönen Stadt Göteborg", "She lives in the beautiful city of Gothenburg",
                         [(3, 8, "LOC")], alignment=[(3, 3), (4, 4), (5, 5), (7, 6)])]
    together = project_examples("rerank?max_span_words=1", examples, scorer=scorer)
    alone = [project_examples("rerank?max_span_words=1", [example], scorer=scorer)[0] for example in examples]
    for a, b in zip(together, alone, strict=True):
        assert a.tags == b.tags and [e.score for e in a.entities] == [e.score for e in b.entities]
        occupied = [k for e in a.entities for k in range(e.token_start, e.token_end)]
        assert len(occupied) == len(set(occupied)) and all(e.score is not None for e in a.entities)
    ngrams = project_examples("rerank?max_span_words=1&candidates=ngrams", examples[1:], scorer=scorer)[0]
    assert all(e.token_end - e.token_start == 1 for e in ngrams.entities)
    hybrid = project_examples("hybrid", examples[1:])[0]
    kept = project_examples("hybrid_rerank?margin=100", examples[1:], scorer=scorer)[0]
    assert kept.tags == hybrid.tags and kept.tags.count("I-LOC") == 3  # hybrid's 4-word span, a candidate too


def test_rerank_statuses_for_an_empty_target_and_an_entity_with_no_free_candidate():
    scorer = FakePlainScorer({("Paris", "Paris"): 0.45, ("Rome", "Paris"): 0.4})
    examples = [_example("", "Paris and Rome", [(0, 1, "LOC"), (2, 3, "GPE")]),
                _example("Paris", "Paris and Rome", [(0, 1, "LOC"), (2, 3, "GPE")]),
                _example("Paris", "Paris and Rome", [])]
    empty, one, none = project_examples("rerank", examples, scorer=scorer)
    assert [(s.text, s.label, s.status) for s in empty.statuses] == [("Paris", "LOC", "empty_target"),
                                                                     ("Rome", "GPE", "empty_target")]
    assert empty.entities == [] and empty.reason == "empty_target" and not empty.complete
    assert empty.method == one.method == "rerank"
    assert _spans(one) == [(0, 1, "LOC")] and one.entities[0].score == pytest.approx(0.9)
    assert [(s.text, s.label, s.status) for s in one.statuses] == [("Paris", "LOC", "projected"),
                                                                   ("Rome", "GPE", "conflict")]
    assert one.reason == "entity_not_projected" and none.complete and none.statuses == []
    assert [r.kept for r in project_examples("rerank?drop_incomplete=true", examples, scorer=scorer)] == [
        False, False, True]
    assert [r.kept for r in project_examples("rerank?drop_incomplete=false", examples, scorer=scorer)] == [
        True, True, True]


def test_hybrid_rerank_keeps_hybrids_status_and_match_and_rounds_its_score():
    """Hybrid found Göteborg as the translated entity's text; the model's score is put on it, to two decimals."""
    example = _example("Jag såg Göteborg idag", "I saw Gothenburg", [(2, 3, "LOC")], alignment=[(0, 0), (1, 1)],
                       entities=[("Göteborg", "LOC")])
    scorer = FakePlainScorer({("Gothenburg", "Göteborg"): 0.1234, ("Gothenburg", "idag"): 0.2})
    (kept,) = project_examples("hybrid_rerank?margin=1", [example], scorer=scorer)
    hybrid = project_examples("hybrid", [example])[0]
    assert _spans(kept) == _spans(hybrid) == [(2, 3, "LOC")]
    assert [s.status for s in kept.statuses] == [s.status for s in hybrid.statuses] != ["projected"]
    assert kept.entities[0].match == hybrid.entities[0].match and kept.entities[0].score == 0.25
    assert kept.method == "hybrid_rerank"
    (replaced,) = project_examples("hybrid_rerank?margin=0.1", [example], scorer=scorer)
    assert _spans(replaced) == [(3, 4, "LOC")] and replaced.entities[0].match == "rerank"
    assert replaced.statuses[0].status == "projected" and replaced.entities[0].score == pytest.approx(0.4)


def test_rerank_errors_name_the_sentence():
    good = _example("Paris", "Paris", [(0, 1, "LOC")], alignment=[(0, 0)])
    scorer = FakePlainScorer({})
    no_links = _example("Paris", "Paris", [(0, 1, "LOC")])
    with pytest.raises(ValueError, match=r"^alignment projection needs an 'alignment' in each input"):
        project_examples("hybrid_rerank", [good, no_links], scorer=scorer)  # the method's wrapper checks first
    with pytest.raises(ValueError, match=r"^sentence 1: hybrid_rerank needs an alignment \(see align_missing\)$"):
        project_hybrid_rerank([good, no_links], HybridRerankOptions(), scorer)
    with pytest.raises(ValueError, match=r"^sentence 1: span \(0, 2, 'LOC'\) is empty or outside the 1 source tokens$"):
        project_examples("rerank", [good, _example("Paris", "Paris", [(0, 2, "LOC")])], scorer=scorer)
    with pytest.raises(ValueError, match=r"^sentence 0: rerank projection needs source_tokens and source_spans$"):
        project_examples("rerank", [ProjectionExample(tokenize_target("Paris"))], scorer=scorer)
    with pytest.raises(ValueError, match=r"^sentence 0: span \(1, 1, 'LOC'\) is empty or outside the 2 source tokens$"):
        project_examples("rerank", [_example("Paris", "Paris Rome", [(1, 1, "LOC")])], scorer=scorer)
    with pytest.raises(ValueError, match=r"^hybrid_rerank projection scores spans with a translation model"):
        project_hybrid_rerank([good], HybridRerankOptions(), None)


def test_rerank_candidates_proposed_by_links_and_by_translated_entities_and_adjacent_spans():
    """max_span_words=1, so the two-word "New York" is a candidate only where hybrid (links) or fuzzy (translated
    entities) proposes it; spans that only touch do not overlap; batches of one sentence are all returned."""
    scorer = FakePlainScorer({("New York", "New York"): 0.45, ("Paris", "Paris"): 0.45, ("Rome", "Rom"): 0.4})
    linked = _example("Jag såg New York idag", "I saw New York", [(2, 4, "LOC")], alignment=[(2, 2), (3, 3)])
    named = _example("Jag såg New York idag", "I saw New York", [(2, 4, "LOC")], entities=[("New York", "LOC")])
    for example in (linked, named):
        [all_], [ngrams] = (project_examples(f"rerank?max_span_words=1&candidates={which}", [example], scorer=scorer)
                            for which in ("all", "ngrams"))
        assert _spans(all_) == [(2, 4, "LOC")] and all_.entities[0].score == pytest.approx(0.9)
        assert all(e.token_end - e.token_start == 1 for e in ngrams.entities)
    touching = _example("Paris Rom", "Paris and Rome", [(0, 1, "LOC"), (2, 3, "LOC")])
    one_at_a_time = FakePlainScorer(scorer.table)
    one_at_a_time.sentences_per_batch = 1
    results = project_examples("rerank", [touching, touching], scorer=one_at_a_time)
    assert [_spans(r) for r in results] == [[(0, 1, "LOC"), (1, 2, "LOC")]] * 2


def test_ngram_candidates_neither_start_nor_end_with_punctuation():
    assert ngram_spans(tokenize_target("Ich , wohne in Göteborg ."), 2) == [
        (0, 1), (2, 3), (2, 4), (3, 4), (3, 5), (4, 5)]


def test_rerank_needs_the_reverse_direction(tiny_bart):
    bart = TranslationScorer.from_pretrained(tiny_bart)
    example = _example("a b", "x", [(0, 1, "X")])
    with pytest.raises(ValueError, match=r"reranking needs the reverse direction \(target→source\) .* translates one "
                                         "fixed direction"):
        project_examples("rerank", [example], scorer=bart)


# --- the registry ----------------------------------------------------------------------------------


def test_the_methods_are_registered_with_typed_options_and_the_scorer_flag():
    assert [name for name, method in PROJECTION_METHODS.items() if method.uses_scorer] == [
        "insertion", "rerank", "hybrid_rerank"]
    assert PROJECTION_METHODS["hybrid_rerank"].uses_alignment and not PROJECTION_METHODS["rerank"].uses_alignment
    _, options = method_options("insertion?max_span_words=3&min_score=0.25&source_markers=all&exhaustive=true")
    assert isinstance(options, InsertionOptions) and options.drop_incomplete is True
    assert (options.max_span_words, options.min_score, options.source_markers, options.exhaustive) == (3, 0.25, "all", True)
    assert (options.nbest, options.reverse_weight) == (1, 1.0)  # no reranking unless asked
    _, options = method_options("insertion?nbest=10&reverse_weight=4")
    assert (options.nbest, options.reverse_weight) == (10, 4.0) and isinstance(options.nbest, int)
    _, options = method_options("rerank?candidates=ngrams")
    assert isinstance(options, RerankOptions) and options.candidates == "ngrams" and options.drop_incomplete is False
    assert options.shortlist is None and method_options("hybrid_rerank")[1].shortlist == 4
    assert method_options("hybrid_rerank?shortlist=none")[1].shortlist is None
    _, options = method_options("hybrid_rerank?margin=0.3&threshold=80")
    assert isinstance(options, HybridRerankOptions) and (options.margin, options.threshold) == (0.3, 80.0)
    assert "margin" not in options.hybrid_arguments() and options.hybrid_arguments()["threshold"] == 80.0
    with pytest.raises(ValueError, match="source_markers='some' is not one of 'one', 'all'"):
        method_options("insertion?source_markers=some")
