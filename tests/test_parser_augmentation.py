"""Training-data augmentation of the parser: slot substitution (``--slot_substitution N``: copies of training
trees with swapped fillers) and input dropout (``--input_dropout``: sub-words replaced by the unknown token)."""

from __future__ import annotations

import json

import datasets
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crop_hf.parsing.substitution import substitute_slots, with_substituted_slots
from crop_hf.seqlogical import Tree, flatten_top_level, parse
from tests.test_parser_nested import _intent, _rows, _split


def _with_sources(trees: list[str]) -> datasets.Dataset:
    rows = _rows(trees)
    return rows.add_column("source", [f"train.tsv:{k + 2}" for k in range(len(trees))])


@settings(max_examples=60, deadline=None)
@given(st.lists(_intent(3), min_size=1, max_size=6), st.floats(0.0, 1.0), st.integers(0, 3), st.integers(0, 9))
def test_a_substituted_tree_keeps_its_intent_and_words_and_takes_whole_slots_of_the_same_name(
        trees, probability, copies, seed):
    texts = [str(t) for t in trees]
    rows = _with_sources(texts)
    out = substitute_slots(rows, copies, probability=probability, seed=seed)
    assert len(out) <= copies * len(rows)
    slots = {}  # (name, slot text) of every top-level slot of every row
    for tree in trees:
        for child in tree.children:
            if isinstance(child, Tree):
                slots.setdefault(child.name, set()).add(str(child))
    deepest = max(t.depth for t in trees)
    for row in out:
        source = trees[int(row["source"].rpartition(":")[2]) - 2]
        tree = parse(row["parse"])
        assert row["parse"] != str(source)  # unchanged copies are left out
        assert tree.name == source.name and len(tree.children) == len(source.children)
        for new, old in zip(tree.children, source.children, strict=True):
            if isinstance(old, str):
                assert new == old  # the row's own words stay where they were
            else:  # a whole slot of the same name, from some row
                assert isinstance(new, Tree) and new.name == old.name and str(new) in slots[old.name]
        assert tree.depth <= deepest
        flat, nested = flatten_top_level(tree)
        assert (row["tokens"], row["intent"], row["slot_tags"], row["nested"]) == (
            flat.tokens, flat.intent, flat.slot_tags, nested)
    again = substitute_slots(rows, copies, probability=probability, seed=seed)
    assert again["parse"] == out["parse"]  # seeded


def test_fillers_come_from_other_rows_and_every_slot_is_swapped_at_probability_one():
    rows = _with_sources(["[IN:W in [SL:LOC paris ] on [SL:DAY monday ] ]", "[IN:W at [SL:LOC rome ] ]",
                          "[IN:R remind me [SL:DAY friday ] ]", "[IN:W at [SL:LOC [IN:GET_LOC my [SL:P home ] ] ] ]"])
    out = substitute_slots(rows, copies=1, probability=1.0, seed=3)
    by_source = dict(zip(out["source"], out["parse"], strict=True))
    assert by_source["train.tsv:2"] in {f"[IN:W in [SL:LOC {loc} ] on [SL:DAY friday ] ]"
                                        for loc in ("rome", "[IN:GET_LOC my [SL:P home ] ]")}
    assert by_source["train.tsv:4"] == "[IN:R remind me [SL:DAY monday ] ]"
    assert parse(by_source["train.tsv:5"]).children[1].tokens in (["paris"], ["rome"])
    assert substitute_slots(rows, copies=1, probability=0.0, seed=3).num_rows == 0
    assert substitute_slots(rows, copies=0, seed=3).num_rows == 0
    other_seed = [substitute_slots(rows, copies=3, seed=s)["parse"] for s in range(4)]
    assert len({tuple(p) for p in other_seed}) > 1


def test_every_draw_comes_uniformly_from_the_other_rows_never_the_rows_own_slot():
    rows = _rows([f"[IN:W weather in [SL:LOC {city} ] ]" for city in ("paris", "rome", "oslo", "lima")])
    out = substitute_slots(rows, copies=400, probability=1.0, seed=0)
    assert len(out) == 400 * 4  # a row never draws its own filler, so no copy comes out unchanged
    drawn = {}
    for row in out:
        drawn[row["tokens"][2]] = drawn.get(row["tokens"][2], 0) + 1
    assert set(drawn) == {"paris", "rome", "oslo", "lima"}
    assert all(250 < count < 550 for count in drawn.values())  # 400 each if uniform over the others
    for k, source in enumerate(("paris", "rome", "oslo", "lima")):  # the copies come row by row, in order
        fillers = {row["tokens"][2] for row in out.select(range(k, len(out), 4))}
        assert fillers == {"paris", "rome", "oslo", "lima"} - {source}


def test_an_unreadable_row_or_an_identical_filler_skips_only_that_row():
    rows = _rows(["[IN:A [SL:B x ] ]", "[IN:A [SL:B x ] ]", "[IN:A z [SL:B w ] ]"])
    out = substitute_slots(rows, copies=30, probability=1.0, seed=0)
    # rows 1 and 2 draw the other's identical "x" half the time (left out); row 3 always changes
    assert out["parse"].count("[IN:A z [SL:B x ] ]") == 30
    broken = _rows(["[IN:W in [SL:LOC paris ] ]", "[IN:W at [SL:LOC rome ] ]", "[IN:W to [SL:LOC oslo ] ]"])
    broken = broken.map(lambda row, k: {"parse": row["parse"] if k else "[IN:W in [SL:LOC"}, with_indices=True)
    assert sorted(substitute_slots(broken, copies=1, probability=1.0, seed=0)["parse"]) == [
        "[IN:W at [SL:LOC oslo ] ]", "[IN:W to [SL:LOC rome ] ]"]


def test_an_empty_result_keeps_the_column_types_and_flat_rows_take_copies():
    empty = substitute_slots(_rows(["[IN:W in [SL:LOC paris ] ]"]), copies=3, seed=0)
    assert len(empty) == 0
    assert empty.features == datasets.Features({
        "tokens": datasets.Sequence(datasets.Value("string")), "intent": datasets.Value("string"),
        "slot_tags": datasets.Sequence(datasets.Value("string")), "parse": datasets.Value("string"),
        "nested": datasets.Value("bool")})
    flat = datasets.Dataset.from_dict({"tokens": [["in", "paris"], ["at", "rome"]], "intent": ["W", "W"],
                                       "slot_tags": [["O", "B-LOC"], ["O", "B-LOC"]]})
    both = with_substituted_slots(flat, 1, seed=1)  # only the three columns a flat corpus has
    assert both.column_names == ["tokens", "intent", "slot_tags"]
    assert both["tokens"] == [["in", "paris"], ["at", "rome"], ["in", "rome"], ["at", "paris"]]
    assert with_substituted_slots(flat, 1, seed=0)["tokens"] == flat["tokens"]  # this draw swapped nothing


def test_a_slot_name_no_other_row_has_is_left_as_it_is():
    rows = _rows(["[IN:A x [SL:ONLY y ] ]", "[IN:A z [SL:B w ] ]", "[IN:A [SL:B v ] ]"])
    out = substitute_slots(rows, copies=2, probability=1.0, seed=0)
    assert set(out["parse"]) == {"[IN:A z [SL:B v ] ]", "[IN:A [SL:B w ] ]"}


def test_flat_rows_without_a_parse_column_and_unreadable_parses():
    flat = datasets.Dataset.from_dict({"tokens": [["in", "paris"], ["at", "rome", "now"]], "intent": ["W", "W"],
                                       "slot_tags": [["O", "B-LOC"], ["O", "B-LOC", "B-T"]]})
    out = substitute_slots(flat, copies=1, probability=1.0, seed=0)
    assert sorted(out["parse"]) == ["[IN:W at [SL:LOC paris ] [SL:T now ] ]", "[IN:W in [SL:LOC rome ] ]"]
    broken = _rows(["[IN:W in [SL:LOC paris ] ]", "[IN:W at [SL:LOC rome ] ]"])
    broken = broken.map(lambda row, k: {"parse": row["parse"] if k else "[IN:W in [SL:LOC paris ]"}, with_indices=True)
    # the unreadable first tree is neither substituted nor a filler: the second has nothing to swap in
    assert substitute_slots(broken, copies=2, probability=1.0, seed=0).num_rows == 0


def test_bad_arguments_are_refused():
    rows = _rows(["[IN:W in [SL:LOC paris ] ]"])
    with pytest.raises(ValueError, match="copies"):
        substitute_slots(rows, copies=-1)
    with pytest.raises(ValueError, match="probability"):
        substitute_slots(rows, copies=1, probability=1.5)
    with pytest.raises(ValueError, match="tokens, intent and slot_tags"):
        with_substituted_slots(rows.remove_columns("slot_tags"), 1, seed=0)


def test_training_adds_substituted_copies_of_the_training_rows_and_never_of_the_dev_split(tiny_bert, tmp_path):
    from crop_hf.parsing.arguments import ParserDataArguments, ParserModelArguments, ParserTrainingArguments
    from crop_hf.parsing.data import dev_split
    from crop_hf.parsing.train import train_parser

    train, _ = _split()
    data = datasets.DatasetDict({"train": _rows(train).add_column("domain", ["d"] * len(train))})
    arguments = dict(output_dir=str(tmp_path / "out"), max_train_steps=2, eval_steps=2, show_progress=False, seed=5)
    train_parser(ParserModelArguments(model_name_or_path=str(tiny_bert), max_intent_depth=3),
                 ParserDataArguments(train_sources=["syn"], eval_split=None, dev_size=0.25, slot_substitution=2),
                 ParserTrainingArguments(**arguments), datasets={"syn": data})
    results = json.loads((tmp_path / "out" / "all_results.json").read_text())
    kept, dev = dev_split(data["train"], 0.25, seed=5)
    added = substitute_slots(data["train"].select(kept), 2, seed=5)
    assert 0 < len(added) <= 2 * len(kept)
    assert results["train_utterances_per_epoch"] == len(kept) + len(added)
    assert results["dev"]["rows"] == {"syn": len(dev)}  # the dev split is carved before and left as written


def test_nested_copies_add_copies_of_the_nested_training_rows_only(tiny_bert, tmp_path):
    from crop_hf.parsing.arguments import ParserDataArguments, ParserModelArguments, ParserTrainingArguments
    from crop_hf.parsing.data import dev_split
    from crop_hf.parsing.train import train_parser

    train, _ = _split()
    rows = _rows(train)
    rows = rows.add_column("nested", [parse(tree).depth > 2 for tree in train])  # an intent in a slot
    data = datasets.DatasetDict({"train": rows.add_column("domain", ["d"] * len(train))})
    kept, _ = dev_split(data["train"], 0.25, seed=5)
    nested = sum(data["train"].select(kept)["nested"])
    assert 0 < nested < len(kept)
    for copies, flat_source in ((3, False), (3, True)):
        source = data.remove_columns("nested") if flat_source else data
        out = tmp_path / f"out{copies}{flat_source}"
        train_parser(ParserModelArguments(model_name_or_path=str(tiny_bert), max_intent_depth=3),
                     ParserDataArguments(train_sources=["syn"], eval_split=None, dev_size=0.25, nested_copies=copies),
                     ParserTrainingArguments(output_dir=str(out), max_train_steps=1, eval_steps=1, show_progress=False,
                                             seed=5), datasets={"syn": source})
        results = json.loads((out / "all_results.json").read_text())
        # without a 'nested' column nothing is known to be nested: no copies
        assert results["train_utterances_per_epoch"] == len(kept) + (0 if flat_source else copies * nested)


# ---------------------------------------------------------------- input dropout


def test_input_dropout_replaces_sub_words_with_the_unknown_token_never_special_tokens_or_padding(tiny_bert):
    import torch
    from transformers import AutoTokenizer

    from crop_hf.parsing.train import input_dropout

    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    batch = tokenizer(["weather in paris on monday please"] * 64 + ["hi"] * 64, padding=True, return_tensors="pt")
    batch = dict(batch)
    assert input_dropout(tokenizer, 0.0)(batch) is batch
    torch.manual_seed(0)
    dropped = input_dropout(tokenizer, 0.5)(batch)
    ids, new = batch["input_ids"], dropped["input_ids"]
    changed = new != ids
    assert bool((new[changed] == tokenizer.unk_token_id).all())
    special = torch.isin(ids, torch.tensor(tokenizer.all_special_ids))
    assert not bool((changed & special).any()) and not bool((changed & (batch["attention_mask"] == 0)).any())
    eligible = (~special & (batch["attention_mask"] == 1) & (ids != tokenizer.unk_token_id)).sum()
    assert 0.4 < changed.sum() / eligible < 0.6
    assert torch.equal(dropped["attention_mask"], batch["attention_mask"])  # only the ids change
    torch.manual_seed(0)
    assert torch.equal(input_dropout(tokenizer, 0.5)(batch)["input_ids"], new)  # torch's seeded generator


def test_input_dropout_refuses_a_bad_rate_and_a_tokenizer_without_an_unknown_token(tiny_bert):
    from types import SimpleNamespace

    from transformers import AutoTokenizer

    from crop_hf.parsing.train import input_dropout

    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    for rate in (-0.1, 1.0):
        with pytest.raises(ValueError, match="input_dropout"):
            input_dropout(tokenizer, rate)
    with pytest.raises(ValueError, match="unknown"):
        input_dropout(SimpleNamespace(unk_token_id=None, mask_token_id=None, all_special_ids=[0]), 0.1)


def test_input_dropout_reaches_the_training_loss(tiny_bert, tmp_path):
    from crop_hf.parsing.arguments import ParserDataArguments, ParserModelArguments, ParserTrainingArguments
    from crop_hf.parsing.train import train_parser

    train, _ = _split()
    data = datasets.DatasetDict({"train": _rows(train)})
    losses = []
    for rate in (0.0, 0.0, 0.3):
        result = train_parser(
            ParserModelArguments(model_name_or_path=str(tiny_bert)),
            ParserDataArguments(train_sources=["syn"], eval_split=None),
            ParserTrainingArguments(output_dir=str(tmp_path / f"out{len(losses)}"), max_train_steps=3,
                                    input_dropout=rate, show_progress=False, seed=1),
            datasets={"syn": data})
        losses.append(result.step_losses)
    assert losses[0] == losses[1] != losses[2]
