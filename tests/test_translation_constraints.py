"""Marker-constrained decoding: markers come back complete by construction, in every search mode and style."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, LogitsProcessor, pipeline

import crop_hf  # noqa: F401  (registers the pipeline)
from crop_hf.markers import mark_tokens
from crop_hf.translation.constraints import MarkerConstraintProcessor
from crop_hf.translation.marker_tokens import MarkerVocabulary

RECORDS = [
    {"tokens": ["I", "live", "in", "Gothenburg", "and", "work", "for", "Volvo", "."],
     "ner_tags": ["O", "O", "O", "B-LOC", "O", "O", "O", "B-ORG", "O"]},
    {"tokens": ["Angela", "Merkel", "visited", "Paris"], "ner_tags": ["B-PER", "I-PER", "O", "B-LOC"]},
    {"tokens": ["Where", "is", "the", "station", "?"], "ner_tags": ["O", "O", "O", "O", "O"]},
    {"tokens": ["Paris"], "ner_tags": ["B-LOC"]},
]


class ScoreShift(LogitsProcessor):
    """Adds a fixed amount to the scores of some tokens (``-inf`` forbids them): steers a random model."""

    def __init__(self, *shifts):
        self.shifts = shifts  # (token id or ids, amount) pairs

    def __call__(self, input_ids, scores):
        scores = scores.clone()
        for ids, amount in self.shifts:
            scores[:, ids] += amount
        return scores


@pytest.fixture(scope="module")
def translator(tiny_m2m100):
    return pipeline("labeled-translation", model=str(tiny_m2m100), device=-1)


def marker_bias(translator, style="crop"):
    vocabulary = MarkerVocabulary(translator.tokenizer, style)
    ids = sorted(vocabulary.signatures)
    from transformers import LogitsProcessorList

    # A random model that loves markers and ending: free decoding then repeats and drops them.
    return LogitsProcessorList([ScoreShift((ids, 50.0), (translator.model.generation_config.eos_token_id, 40.0))])


@pytest.mark.parametrize("search", [{}, {"num_beams": 3}, {"num_beams": 4, "num_return_sequences": 3}])
def test_constrained_markers_are_complete_where_free_ones_break(translator, search):
    kwargs = {"src_lang": "en", "tgt_lang": "de", "max_new_tokens": 24, "batch_size": 4,
              "generate_kwargs": {"logits_processor": marker_bias(translator)}, **search}
    free = translator(RECORDS, **kwargs)
    constrained = translator(RECORDS, constrain_markers=True, **kwargs)
    assert not all(r["complete"] for r in free)  # the bias breaks free decoding
    for record, result in zip(RECORDS, constrained, strict=True):
        assert result["complete"], result
        entities = sum(tag.startswith("B-") for tag in record["ner_tags"])
        assert len(result["entities"]) == entities
        assert all(e["text"].strip() for e in result["entities"])


def test_constrained_bracket_style(tiny_m2m100):
    translator = pipeline("labeled-translation", model=str(tiny_m2m100), device=-1, marker_style="easyproject",
                          constrain_markers=True)
    same_label = [{"tokens": ["Paris", "and", "Rome"], "ner_tags": ["B-LOC", "O", "B-LOC"]}, RECORDS[3], RECORDS[2]]
    results = translator(same_label, src_lang="en", tgt_lang="de", max_new_tokens=24, num_beams=2, batch_size=3,
                         generate_kwargs={"logits_processor": marker_bias(translator, "easyproject")})
    assert [r["complete"] for r in results] == [True, True, True], results
    assert [len(r["entities"]) for r in results] == [2, 1, 0]


def test_state_machine_rules_on_hand_written_hypotheses(tiny_m2m100):
    tokenizer = AutoTokenizer.from_pretrained(tiny_m2m100)
    vocabulary = MarkerVocabulary(tokenizer, "crop")
    slot = {i: tokenizer.convert_tokens_to_ids(f"__SLOT{i}__") for i in range(3)}
    word = tokenizer.convert_tokens_to_ids("▁Paris") if "▁Paris" in tokenizer.get_vocab() else \
        next(iter(sorted(vocabulary.text_tokens)))
    eos = tokenizer.eos_token_id
    processor = MarkerConstraintProcessor(vocabulary, [[0, 2]], eos)
    scores = torch.zeros(1, len(tokenizer))

    def allowed(prefix):
        out = processor(torch.tensor([[eos, *prefix]]), scores.clone())[0]
        return {name: bool(out[token] > -1e9) for name, token in
                [("s0", slot[0]), ("s1", slot[1]), ("s2", slot[2]), ("eos", eos), ("word", word)]}

    start = allowed([])
    assert start == {"s0": True, "s1": False, "s2": True, "eos": False, "word": True}
    opened = allowed([slot[0]])
    assert not opened["s0"] and not opened["s2"] and opened["word"]  # no empty span, no nesting
    inside = allowed([slot[0], word])
    assert inside["s0"] and not inside["s2"] and not inside["eos"]
    closed = allowed([slot[0], word, slot[0]])
    assert not closed["s0"] and closed["s2"] and not closed["eos"]  # slot 2 still unused
    done = allowed([slot[0], word, slot[0], slot[2], word, slot[2]])
    assert done["eos"] and not done["s0"] and not done["s2"]


def test_typed_constraint_needs_single_token_markers(tiny_bart):
    tokenizer = AutoTokenizer.from_pretrained(tiny_bart)
    with pytest.raises(ValueError, match=r"slot\(s\) \[0\] of the 'crop' style are not single tokens of this "
                       r"tokenizer; add them \(crop_hf\.translation\.marker_tokens\.add_marker_tokens\) or decode "
                       r"without constrain_markers$"):
        MarkerConstraintProcessor(MarkerVocabulary(tokenizer, "crop"), [[0]], tokenizer.eos_token_id)


def test_free_decoding_is_unchanged_by_the_option(tiny_m2m100):
    tokenizer = AutoTokenizer.from_pretrained(tiny_m2m100)
    model = AutoModelForSeq2SeqLM.from_pretrained(tiny_m2m100)
    translator = pipeline("labeled-translation", model=model, tokenizer=tokenizer, device=-1)
    marked = mark_tokens(RECORDS[1]["tokens"], [(0, 2, "PER"), (3, 4, "LOC")])
    a = translator(marked, src_lang="en", tgt_lang="de", max_new_tokens=12)
    b = translator(marked, src_lang="en", tgt_lang="de", max_new_tokens=12, constrain_markers=False)
    assert a == b


def test_synthesis_passes_constrain_markers_to_the_translator(tiny_m2m100, tiny_xlmr_ner, tmp_path):
    from crop_hf.synthesis import SynthesisConfig
    from crop_hf.synthesis.stages import SynthesisModels

    config = SynthesisConfig(tgt_langs=["de"], mt_model=str(tiny_m2m100), ner_model=str(tiny_xlmr_ner),
                             constrain_markers=True, output_dir=str(tmp_path))
    assert SynthesisModels.load(config, device=-1).translator.constrain_markers is True
    assert config.result_arguments()["constrain_markers"] is True  # a separate set of shards


def test_state_machine_events_one_by_one():
    """The rules of the module docstring on signature events, typed (slots 0 and 2) and untyped (2 pairs)."""
    from crop_hf.translation.constraints import _apply, _State

    def valid(events, n_slots=2, slots=(0, 2), state=None):
        return _apply(state or _State({}, None, False, 0), events, n_slots, frozenset(slots)).valid

    slot0, slot2, text = ("slot", 0), ("slot", 2), ("text",)
    assert valid([slot0, text, slot0, slot2, text, slot2])
    assert not valid([slot0, slot0])  # no text between a slot's markers (a marker token's own text counts)
    assert valid([slot0, ("text",), slot0])
    assert not valid([slot0, text, slot2])  # another slot inside an open one
    assert not valid([("slot", 1)])  # not a slot of the source
    assert not valid([slot0, text, slot0, slot0])  # a slot opens once
    assert not valid([("garbled",)]) and not valid([text, ("garbled",), text])
    # Untyped (brackets): pairs up to the source's count, never nested, never empty.
    assert valid([("open",), text, ("close",), ("open",), text, ("close",)])
    assert not valid([("open",), text, ("close",), ("open",)], n_slots=1)
    assert not valid([("open",), ("open",)]) and not valid([("close",)]) and not valid([("open",), ("close",)])
    # An invalid state stays invalid whatever follows.
    assert not valid([text], state=_State({}, None, False, 0, valid=False))


def test_end_of_sentence_is_allowed_exactly_when_every_slot_is_closed(tiny_m2m100):
    from crop_hf.translation.constraints import _State

    tokenizer = AutoTokenizer.from_pretrained(tiny_m2m100)
    untyped = MarkerConstraintProcessor(MarkerVocabulary(tokenizer, "easyproject"), [[0, 1]], tokenizer.eos_token_id)
    assert untyped._complete(_State({}, None, False, 2), 0)
    assert not untyped._complete(_State({}, None, False, 1), 0)
    assert not untyped._complete(_State({}, True, True, 2), 0)
    typed = MarkerConstraintProcessor(MarkerVocabulary(tokenizer, "crop"), [[0, 2]], tokenizer.eos_token_id)
    assert typed._complete(_State({0: 2, 2: 2}, None, False, 0), 0)
    assert not typed._complete(_State({0: 2, 2: 1}, None, False, 0), 0)
    assert not typed._complete(_State({0: 2, 2: 2}, None, False, 0, valid=False), 0)


class _Pieces:
    """The part of a tokenizer MarkerVocabulary reads: its pieces and special ids."""

    def __init__(self, pieces, specials):
        self.pieces, self.all_special_ids = pieces, specials

    def __len__(self):
        return len(self.pieces)

    def convert_ids_to_tokens(self, ids):
        return [self.pieces[i] for i in ids]


def test_vocabulary_signatures_spell_each_token_as_marker_events():
    pieces = ["</s>", "▁Paris", "__SLOT0__", "▁__SLOT1__", "Paris__SLOT1__▁x", "__SLOT3", "▁", None, "a__SLOT3",
              "▁__SLOT2__▁__SLOT2__", "[", "]▁", "a[", "SLOT3__"]
    crop = MarkerVocabulary(_Pieces(pieces, [0]), "crop")
    assert crop.signatures == {
        2: (("slot", 0),), 3: (("slot", 1),), 4: (("text",), ("slot", 1), ("text",)), 5: (("garbled",),),
        8: (("text",), ("garbled",)), 9: (("slot", 2), ("slot", 2)), 13: (("garbled",),)}
    assert crop.text_tokens == {1, 10, 11, 12}  # not the special </s>, the bare space or the missing piece
    assert crop.single_token_slots == {0, 1}  # slot 2 only comes as a pair in one token
    assert crop.groups[(("garbled",),)] == [5, 13]
    brackets = MarkerVocabulary(_Pieces(pieces, [0]), "easyproject")
    assert {k: v for k, v in brackets.signatures.items() if k >= 10} == {
        10: (("open",),), 11: (("close",),), 12: (("text",), ("open",))}
    assert brackets.single_token_slots == set()


def test_processor_reads_every_row_token_by_default_and_any_eos_form(tiny_m2m100):
    tokenizer = AutoTokenizer.from_pretrained(tiny_m2m100)
    vocabulary = MarkerVocabulary(tokenizer, "crop")
    slot0 = tokenizer.convert_tokens_to_ids("__SLOT0__")
    word = next(iter(sorted(vocabulary.text_tokens)))
    eos = tokenizer.eos_token_id
    scores = torch.zeros(1, len(tokenizer))
    # The row starts with the marker itself: with prompt_length 0 it is read, so the slot is closed.
    done = MarkerConstraintProcessor(vocabulary, [[0]], eos)(torch.tensor([[slot0, word, slot0]]), scores.clone())
    assert done[0, eos] == 0 and done[0, slot0] == float("-inf")
    skipped = MarkerConstraintProcessor(vocabulary, [[0]], eos, prompt_length=1)
    assert skipped(torch.tensor([[slot0, word, slot0]]), scores.clone())[0, eos] == float("-inf")  # one marker seen
    other = sorted(vocabulary.text_tokens)[1]  # a plain word, standing in for a second end-of-sentence id
    for eos_form, banned in ((None, []), (eos, [eos]), ([eos, other], [eos, other])):
        out = MarkerConstraintProcessor(vocabulary, [[0]], eos_form)(torch.tensor([[word]]), scores.clone())[0]
        assert [i for i in (eos, other) if out[i] == float("-inf")] == banned  # slot 0 unused: no end yet


def whole_word(tokenizer, vocabulary):
    """A plain token that starts a word (so that repeating it gives separate words)."""
    return next(t for t in sorted(vocabulary.text_tokens)
                if tokenizer.convert_ids_to_tokens(t).startswith("▁") and tokenizer.convert_ids_to_tokens(t)[1:].isalpha())


@pytest.mark.parametrize("search", [{}, {"num_beams": 3, "num_return_sequences": 2}])
def test_a_hypothesis_that_runs_to_the_length_limit_still_closes_every_slot(translator, search):
    vocabulary = MarkerVocabulary(translator.tokenizer, "crop")
    word = whole_word(translator.tokenizer, vocabulary)
    from transformers import LogitsProcessorList

    # A random model that repeats one plain word for ever: no marker, no end of sentence.
    eos = translator.model.generation_config.eos_token_id
    looping = LogitsProcessorList([ScoreShift((word, 100.0), (eos, float("-inf")))])
    # Two slots need 6 tokens after the language token: 9 new tokens leave room for two more words.
    kwargs = {"src_lang": "en", "tgt_lang": "de", "max_new_tokens": 9, "batch_size": 4,
              "generate_kwargs": {"logits_processor": looping}, **search}
    results = translator(RECORDS, constrain_markers=True, **kwargs)
    assert [r["complete"] for r in results] == [True, True, True, True], results
    assert [len(r["entities"]) for r in results] == [2, 2, 0, 1]
    words = [len(r["translation"].split()) for r in results]
    assert words == [8 - 6 + 2, 8 - 6 + 2, 8, 8 - 3 + 1]  # each slot holds exactly one of the 8 tokens
    free = translator(RECORDS[:1], **kwargs)
    assert not free[0]["complete"] and free[0]["entities"] == []


def test_the_length_rule_allows_only_tokens_that_complete_the_markers_in_time(tiny_m2m100):
    tokenizer = AutoTokenizer.from_pretrained(tiny_m2m100)
    vocabulary = MarkerVocabulary(tokenizer, "crop")
    slot = {i: tokenizer.convert_tokens_to_ids(f"__SLOT{i}__") for i in range(3)}
    word = whole_word(tokenizer, vocabulary)
    eos, lang = tokenizer.eos_token_id, tokenizer.convert_tokens_to_ids("__de__")
    scores = torch.zeros(1, len(tokenizer))

    def allowed(prefix, max_new_tokens=None, max_length=None, slots=(0, 2)):
        processor = MarkerConstraintProcessor(vocabulary, [list(slots)], eos, max_new_tokens=max_new_tokens,
                                              max_length=max_length)
        processor(torch.tensor([[eos]]), scores.clone())  # the first step fixes where the limit counts from
        out = processor(torch.tensor([[eos, *prefix]]), scores.clone())[0]
        return {name for name, token in [("s0", slot[0]), ("s2", slot[2]), ("eos", eos), ("word", word),
                                         ("lang", lang)] if out[token] > -1e9}

    # After "word __SLOT0__": slot 0 needs a word and its close, slot 2 three tokens: 5 in all.
    prefix = [word, slot[0]]
    assert allowed(prefix) == {"word", "lang"}
    assert allowed(prefix, max_new_tokens=2 + 6) == {"word", "lang"}  # 6 left: room to spare
    assert allowed(prefix, max_new_tokens=2 + 5) == {"word"}  # 5 left: only the word that fills slot 0
    assert allowed(prefix, max_length=1 + 2 + 5) == {"word"}  # the same limit as a whole row length
    assert allowed(prefix, max_new_tokens=2 + 4) == {"word", "lang"}  # too late either way: no extra rule
    filled = [word, slot[0], word]  # 4 needed: close slot 0, then slot 2
    assert allowed(filled, max_new_tokens=3 + 4) == {"s0"}
    assert allowed(filled, max_new_tokens=3 + 5) == {"s0", "word", "lang"}
    closed = [word, slot[0], word, slot[0]]  # 3 needed: open slot 2
    assert allowed(closed, max_new_tokens=4 + 3) == {"s2"}
    done = [*closed, slot[2], word, slot[2]]
    assert allowed(done, max_new_tokens=7 + 1) == {"eos", "word", "lang"}  # nothing needed: nothing forced
    assert allowed([word], max_new_tokens=1 + 3, slots=(2,)) == {"s2"}
    # A row no longer than the last one is a new generate call: its tokens count from that step.
    processor = MarkerConstraintProcessor(vocabulary, [[2]], eos, max_new_tokens=4)
    for row in ([eos], [eos, word], [eos, word]):
        out = processor(torch.tensor([row]), scores.clone())[0]
    assert out[word] > -1e9 and out[slot[2]] > -1e9


def test_the_length_rule_gives_way_where_another_processor_allows_a_single_token(tiny_m2m100):
    tokenizer = AutoTokenizer.from_pretrained(tiny_m2m100)
    vocabulary = MarkerVocabulary(tokenizer, "crop")
    eos, lang = tokenizer.eos_token_id, tokenizer.convert_tokens_to_ids("__de__")
    slot0 = tokenizer.convert_tokens_to_ids("__SLOT0__")
    processor = MarkerConstraintProcessor(vocabulary, [[0, 1], [0, 1]], eos, max_new_tokens=6)
    scores = torch.zeros(2, len(tokenizer))
    scores[0] = float("-inf")
    scores[0, lang] = 0.0  # row 0: the forced language token, 6 tokens before the limit that two slots need
    out = processor(torch.tensor([[eos], [eos]]), scores)
    assert out[0, lang] == 0.0 and torch.isinf(out[0]).sum() == len(tokenizer) - 1
    # Row 1, with nothing forced, gets the length rule: only the two opening markers are left.
    assert torch.isfinite(out[1]).sum() == 2 and out[1, slot0] == 0.0


def test_the_length_rule_counts_the_brackets_of_untyped_styles(tiny_m2m100):
    tokenizer = AutoTokenizer.from_pretrained(tiny_m2m100)
    vocabulary = MarkerVocabulary(tokenizer, "easyproject")
    opening, closing = tokenizer.convert_tokens_to_ids(["[", "]"])
    word, eos = whole_word(tokenizer, vocabulary), tokenizer.eos_token_id
    scores = torch.zeros(1, len(tokenizer))
    for row, left, allowed in (([eos, opening, word, closing], 3, {opening}),  # one pair of two left: 3 tokens
                               ([eos, opening, word, closing], 4, {opening, word}),
                               ([eos, opening], 2, {word})):
        processor = MarkerConstraintProcessor(vocabulary, [[0, 1]], eos, max_length=len(row) + left)
        out = processor(torch.tensor([row]), scores.clone())[0]
        assert set(torch.isfinite(out).nonzero().flatten().tolist()) & {opening, closing, word, eos} == allowed


# --- The incremental processor against the one that rebuilt every state at every step ------------

#: A vocabulary with every kind of piece: specials (0-1), text, single-token slot markers, a marker
#: with text around it, two markers in one piece, garbled fragments, brackets, a bare space, a hole.
PROPERTY_PIECES = ["</s>", "<pad>", "▁Paris", "▁und", "__SLOT0__", "__SLOT1__", "__SLOT2__", "__SLOT3__",
                   "▁__SLOT1__", "Paris__SLOT2__▁x", "__SLOT3", "a__SLOT3", "▁", None, "▁__SLOT0__▁__SLOT0__",
                   "[", "]▁", "a[", "▁x", "]", "[▁Rom", "▁y", "__de__"]
PROPERTY_EOS, PROPERTY_LANG = 0, len(PROPERTY_PIECES) - 1


def _property_vocabulary(style):
    return MarkerVocabulary(_Pieces(PROPERTY_PIECES, [0, 1, PROPERTY_LANG]), style)


@given(st.data())
@settings(max_examples=150)
def test_incremental_processor_returns_what_rebuilding_every_state_returned(data):
    """At every step of random decodings (beam reorders, tight length limits, forced tokens, NaN and
    infinite scores, a processor reused for a second call, rows of no clear parent), the
    processor's scores equal those of the reference that re-reads every prefix."""
    from constraints_reference import ReferenceMarkerConstraintProcessor

    style = data.draw(st.sampled_from(["crop", "easyproject"]), label="style")
    vocabulary = _property_vocabulary(style)
    sentences = data.draw(st.integers(1, 3), label="sentences")
    slots = data.draw(st.lists(st.lists(st.integers(0, 3), max_size=3, unique=True), min_size=sentences,
                               max_size=sentences), label="slots")
    limit = data.draw(st.sampled_from(["max_new_tokens", "max_length", None]), label="limit")
    options = {"prompt_length": data.draw(st.integers(0, 2), label="prompt_length"),
               "eos_token_id": data.draw(st.sampled_from([PROPERTY_EOS, [PROPERTY_EOS, 3], None]), label="eos")}
    if limit is not None:
        options[limit] = data.draw(st.integers(1, 12), label="limit value")
    reference = ReferenceMarkerConstraintProcessor(vocabulary, slots, **options)
    processor = MarkerConstraintProcessor(vocabulary, slots, **options)
    generator = torch.Generator().manual_seed(data.draw(st.integers(0, 2**16), label="seed"))
    width = len(PROPERTY_PIECES) + data.draw(st.integers(0, 2), label="padding columns")
    for _call in range(data.draw(st.integers(1, 2), label="calls")):
        beams = data.draw(st.integers(1, 4), label="beams")
        rows = sentences * beams + data.draw(st.sampled_from([0, 0, 0, 1]), label="extra rows")
        prompt = [PROPERTY_EOS, PROPERTY_LANG][: data.draw(st.integers(1, 2), label="prompt")]
        input_ids = torch.tensor([prompt] * rows)
        per_sentence = max(1, rows // sentences)
        sentence = [min(r // per_sentence, sentences - 1) for r in range(rows)]
        for _step in range(data.draw(st.integers(1, 12), label="steps")):
            scores = torch.randn(rows, width, generator=generator)
            for r in data.draw(st.lists(st.integers(0, rows - 1), max_size=2), label="forced rows"):
                scores[r] = float("-inf")
                scores[r, data.draw(st.integers(0, width - 1), label="forced token")] = 0.0
            for r, column in data.draw(st.lists(st.tuples(st.integers(0, rows - 1), st.integers(0, width - 1)),
                                                max_size=3), label="odd scores"):
                scores[r, column] = data.draw(st.sampled_from([float("nan"), float("inf"), float("-inf")]),
                                              label="odd score")
            expected = reference(input_ids.clone(), scores.clone())
            got = processor(input_ids.clone(), scores.clone())
            assert torch.equal(got.nan_to_num(), expected.nan_to_num()), (input_ids, (got != expected).nonzero())
            assert torch.equal(got.isnan(), expected.isnan())
            # The next step: each row continues a row of its own sentence (a beam reorder), with a
            # token the constraint allows (as decoding would) or any token at all.
            parents = [data.draw(st.sampled_from([p for p in range(rows) if sentence[p] == sentence[r]]),
                                 label="parent") for r in range(rows)]
            tokens = []
            for p in parents:
                allowed = torch.isfinite(expected[p]).nonzero().flatten().tolist()
                if allowed and data.draw(st.booleans(), label="follow the constraint"):
                    tokens.append(data.draw(st.sampled_from(allowed), label="token"))
                else:
                    tokens.append(data.draw(st.integers(0, width - 1), label="token"))
            input_ids = torch.cat([input_ids[parents], torch.tensor(tokens)[:, None]], dim=1)
            change = data.draw(st.integers(0, 9), label="change")
            if change == 0 and input_ids.shape[1] > 2:  # not the next step of the last one: a column less
                input_ids = torch.cat([input_ids[:, :1], input_ids[:, 2:]], dim=1)
            elif change == 1:  # a row whose prefix no row of the last step holds
                position = data.draw(st.integers(0, input_ids.shape[1] - 2), label="position")
                input_ids[data.draw(st.integers(0, rows - 1), label="row"), position] = data.draw(
                    st.integers(0, width - 1), label="token")


def test_generate_gives_the_reference_s_outputs_with_beams(tiny_m2m100):
    """Through ``generate`` itself (its own beam reordering), the same hypotheses come out."""
    from constraints_reference import ReferenceMarkerConstraintProcessor
    from transformers import LogitsProcessorList

    tokenizer = AutoTokenizer.from_pretrained(tiny_m2m100, src_lang="en", tgt_lang="de")
    model = AutoModelForSeq2SeqLM.from_pretrained(tiny_m2m100)
    vocabulary = MarkerVocabulary(tokenizer, "crop")
    marker_ids = sorted(vocabulary.signatures)
    sources = [mark_tokens(r["tokens"], [(i, i + 1, "X") for i, t in enumerate(r["ner_tags"]) if t.startswith("B-")])
               for r in RECORDS]
    inputs = tokenizer([s.text for s in sources], return_tensors="pt", padding=True)
    slots = [[e.slot for e in s.entities] for s in sources]
    eos = model.generation_config.eos_token_id
    outputs = []
    for kind in (ReferenceMarkerConstraintProcessor, MarkerConstraintProcessor):
        processor = kind(vocabulary, slots, eos, max_new_tokens=10)
        bias = ScoreShift((marker_ids, 3.0))  # markers often enough to make beams diverge
        outputs.append([model.generate(**inputs, num_beams=4, num_return_sequences=4, max_new_tokens=10,
                                       forced_bos_token_id=tokenizer.get_lang_id("de"), do_sample=False,
                                       logits_processor=LogitsProcessorList([bias, processor]))
                        for _call in range(2)])  # the same processor again: a second generate call
    assert all(torch.equal(a, b) for a, b in zip(*outputs, strict=True))
    assert any(token in marker_ids for token in outputs[1][0].flatten().tolist())


def test_a_next_step_reads_only_its_new_tokens_even_after_a_beam_reorder():
    """Rows that extend a row of the last step (in any order) are not read whole; a new call's are."""
    vocabulary = _property_vocabulary("crop")
    processor = MarkerConstraintProcessor(vocabulary, [[0, 2], [1]], PROPERTY_EOS, max_new_tokens=6)
    read = []
    scan = processor._scan
    processor._scan = lambda row, kind: read.append(list(row)) or scan(row, kind)
    scores = torch.zeros(4, len(PROPERTY_PIECES))
    rows = torch.tensor([[PROPERTY_EOS]] * 4)
    processor(rows, scores)
    assert len(read) == 4
    for step, tokens in enumerate(([4, 2, 5, 3], [2, 6, 2, 2], [4, 6, 5, 5])):
        order = [1, 0, 3, 2] if step % 2 else [0, 0, 2, 3]  # beam reorders within each sentence
        rows = torch.cat([rows[order], torch.tensor(tokens)[:, None]], dim=1)
        processor(rows, scores)
    assert len(read) == 4
    processor(torch.tensor([[PROPERTY_EOS, 4]] * 4), scores)  # a new generate call: read whole
    assert read[4:] == [[PROPERTY_EOS, 4]] * 4
