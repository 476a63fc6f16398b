"""Pieces of NER training (crop_hf.ner, crop_hf.data) without a model: specs, label reconciliation, alignment, mixing, arguments."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crop_hf.data.sources import WeightedMixSampler, parse_source_spec
from crop_hf.data.tokenization import IGNORE_INDEX, align_labels_to_first_subword, pad_batch
from crop_hf.labels import CONLL_LABELS, PANX_LABELS, LabelConflictError, reconcile_labels
from crop_hf.ner import choose_labels, parse_arguments


@pytest.mark.parametrize(("spec", "kind", "name", "config", "kwargs"), [
    ("conll5:en", "builder", "conll5", "en", {}),
    ("xtreme40", "builder", "xtreme40", None, {}),
    ("hub:unimelb-nlp/wikiann:de", "hub", "unimelb-nlp/wikiann", "de", {}),
    ("conll5:de?data_dir=/data/de&skip_bad_records=true", "builder", "conll5", "de",
     {"data_dir": "/data/de", "skip_bad_records": True}),
    ("disk:/nowhere/corpus", "disk", "/nowhere/corpus", None, {}),
])
def test_source_specs(spec, kind, name, config, kwargs):
    parsed = parse_source_spec(spec)
    assert (parsed.kind, parsed.name, parsed.config, parsed.kwargs) == (kind, name, config, kwargs)


def test_an_existing_folder_is_a_disk_source(tmp_path):
    assert parse_source_spec(str(tmp_path)).kind == "disk"


def test_bad_spec_query_names_the_item():
    with pytest.raises(ValueError, match="'data_dir'"):
        parse_source_spec("conll5:de?data_dir")


def test_missing_disk_corpus_is_a_clear_error(tmp_path):
    from crop_hf.data.sources import load_source

    with pytest.raises(FileNotFoundError, match="no corpus at"):
        load_source(f"disk:{tmp_path / 'missing'}")


def test_a_corpus_split_by_language_trains_on_all_its_languages():
    import datasets
    from training_fixtures import as_dataset, synthetic_rows

    from crop_hf.data.sources import load_source

    by_language = datasets.DatasetDict({lang: as_dataset(synthetic_rows(3, 0, lang)) for lang in ("en", "xx")})
    source = load_source("synthesized", dataset=by_language)
    assert source.split("train")["lang"] == ["en"] * 3 + ["xx"] * 3
    with pytest.raises(KeyError, match="no 'test' split"):
        source.split("test")


def test_conll_and_panx_labels_reconcile_by_name():
    merged = reconcile_labels([PANX_LABELS.names, CONLL_LABELS.names], ["xtreme40:de", "conll5:en"])
    assert merged.names[:7] == PANX_LABELS.names  # first source's order first
    assert set(merged.names) == set(CONLL_LABELS.names)


def test_types_spelt_two_ways_are_a_conflict_naming_both_sources():
    with pytest.raises(LabelConflictError, match=r"'PER' \(a\).*'Per' \(b\).*label_map"):
        reconcile_labels([["O", "B-PER", "I-PER"], ["O", "B-Per", "I-Per"]], ["a", "b"])


def test_non_iob2_labels_are_a_conflict():
    with pytest.raises(LabelConflictError, match="not IOB2"):
        reconcile_labels([["O", "S-PER", "B-PER", "E-PER"]], ["bioes corpus"])


def test_model_labels_are_kept_when_they_cover_the_data():
    model = dict(enumerate(["O", "B-MISC", "I-MISC", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC"]))
    labels, new_head = choose_labels([PANX_LABELS.names], ["panx"], model)
    assert labels.names == tuple(model.values()) and not new_head
    generic = {0: "LABEL_0", 1: "LABEL_1"}
    labels, new_head = choose_labels([PANX_LABELS.names], ["panx"], generic)
    assert labels == PANX_LABELS and not new_head


def test_label_map_renames_types_before_reconciling(tmp_path):
    from training_fixtures import as_dataset

    from crop_hf.data.features import encode_tags
    from crop_hf.data.sources import load_source
    from crop_hf.labels import parse_label_map

    rows = [{"tokens": ["oslo", "x"], "tags": ["B-GPE_LOC", "B-DRV"], "lang": "no"}]
    dataset = as_dataset(rows, label_names=("O", "B-GPE_LOC", "I-GPE_LOC", "B-DRV"))
    label_map = parse_label_map(["GPE_LOC=LOC", "DRV=O"])
    source = load_source("norne", label_map, dataset=dataset)
    assert set(source.label_names) == {"O", "B-LOC", "I-LOC"}
    encoded = encode_tags(dataset, PANX_LABELS, label_map)
    assert encoded["word_labels"] == [[PANX_LABELS.label2id["B-LOC"], 0]]
    with pytest.raises(ValueError, match="OLD=NEW"):
        parse_label_map(["GPE_LOC"])


@st.composite
def word_ids_and_labels(draw):
    pieces = draw(st.lists(st.integers(1, 4), min_size=0, max_size=12))
    word_ids = [None] + [w for w, n in enumerate(pieces) for _ in range(n)] + [None]
    labels = draw(st.lists(st.integers(0, 8), min_size=len(pieces), max_size=len(pieces)))
    return word_ids, labels, pieces


@given(word_ids_and_labels())
def test_first_subword_alignment_labels_each_word_once_in_order(case):
    word_ids, labels, _ = case
    aligned = align_labels_to_first_subword(word_ids, labels)
    assert len(aligned) == len(word_ids)
    assert [a for a in aligned if a != IGNORE_INDEX] == labels
    kept = [i for i, w in enumerate(word_ids) if w is not None and (i == 0 or word_ids[i - 1] != w)]
    assert [aligned[i] for i in kept] == labels
    assert all(aligned[i] == IGNORE_INDEX for i in range(len(aligned)) if i not in kept)


def test_alignment_with_a_real_tokenizer(tiny_xlmr_ner):
    from transformers import AutoTokenizer

    from crop_hf.data.tokenization import tokenize_words

    tokenizer = AutoTokenizer.from_pretrained(tiny_xlmr_ner)
    words = [["Angela", "Merkel", "visited", "Gothenburg"]]
    out = tokenize_words(tokenizer, words, 64, [[1, 2, 0, 5]])
    word_ids = tokenizer(words[0], is_split_into_words=True).word_ids()
    assert len(word_ids) > 6  # some words are split, so alignment matters
    assert [label for label in out["labels"][0] if label != IGNORE_INDEX] == [1, 2, 0, 5]
    assert [w for w in out["word_index"][0] if w >= 0] == [0, 1, 2, 3]
    truncated = tokenize_words(tokenizer, words, 4, [[1, 2, 0, 5]])
    assert len(truncated["input_ids"][0]) == 4


def test_pad_batch_pads_each_field_with_its_own_value():
    batch = pad_batch([{"input_ids": [0, 5, 2], "attention_mask": [1, 1, 1], "labels": [-100, 3, -100]},
                       {"input_ids": [0, 2], "attention_mask": [1, 1], "labels": [-100, -100]}],
                      pad_token_id=1, pad_to_multiple_of=4)
    assert batch["input_ids"].tolist() == [[0, 5, 2, 1], [0, 2, 1, 1]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1, 0], [1, 1, 0, 0]]
    assert batch["labels"].tolist() == [[-100, 3, -100, -100], [-100, -100, -100, -100]]


@given(sizes=st.lists(st.integers(0, 30), min_size=1, max_size=4),
       weights=st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0]), min_size=4, max_size=4),
       seed=st.integers(0, 5), epoch=st.integers(0, 3))
def test_weighted_mix_sampler_draws_each_source_by_its_weight(sizes, weights, seed, epoch):
    weights = weights[: len(sizes)]
    sampler = WeightedMixSampler(sizes, weights, seed=seed)
    sampler.use_epoch(epoch)
    drawn = list(sampler)
    assert len(drawn) == len(sampler)
    offsets = [sum(sizes[:i]) for i in range(len(sizes))]
    for offset, n, w in zip(offsets, sizes, weights, strict=True):
        mine = [i for i in drawn if offset <= i < offset + n]
        assert len(mine) == math.floor(w) * n + round((w - math.floor(w)) * n)
        counts = {i: mine.count(i) for i in set(mine)}
        assert all(math.floor(w) <= c <= math.ceil(w) for c in counts.values())
    again = WeightedMixSampler(sizes, weights, seed=seed)
    again.use_epoch(epoch)
    assert list(again) == drawn  # same (seed, epoch): same order on every process and after a resume


@given(sizes=st.lists(st.integers(0, 60), min_size=1, max_size=3),
       weights=st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.5]), min_size=3, max_size=3),
       seed=st.integers(0, 5), batch_size=st.integers(1, 9))
def test_length_grouping_reorders_the_same_draw_of_rows_and_is_seeded(sizes, weights, seed, batch_size):
    import random

    weights = weights[: len(sizes)]
    lengths = [random.Random(seed * 1000 + i).randint(1, 80) for i in range(sum(sizes))]
    plain = WeightedMixSampler(sizes, weights, seed=seed)
    grouped = WeightedMixSampler(sizes, weights, seed=seed, lengths=lengths, batch_size=batch_size)
    drawn = list(grouped)
    assert sorted(drawn) == sorted(plain)  # the same draw of each source, only ordered by length
    assert list(WeightedMixSampler(sizes, weights, seed=seed, lengths=lengths, batch_size=batch_size)) == drawn


def test_length_grouped_batches_pad_less_and_come_in_random_order():
    import itertools
    import random

    lengths = [random.Random(i).randint(3, 60) for i in range(3000)]
    shuffled = list(WeightedMixSampler([3000], [1.0], seed=3))
    grouped = list(WeightedMixSampler([3000], [1.0], seed=3, lengths=lengths, batch_size=16))

    def longest(order):  # each batch's longest row, the length the batch is padded to
        return [max(lengths[i] for i in order[k:k + 16]) for k in range(0, len(order), 16)]

    assert sum(longest(grouped)) < 0.8 * sum(longest(shuffled))
    falls = sum(b < a for a, b in itertools.pairwise(longest(grouped)))
    assert falls < 0.7 * (len(longest(grouped)) - 1)  # not in runs of ever shorter batches
    with pytest.raises(ValueError, match="2999 lengths for 3000 rows"):
        WeightedMixSampler([3000], [1.0], lengths=lengths[1:])
    with pytest.raises(ValueError, match="batch_size must be at least 1"):
        WeightedMixSampler([3000], [1.0], lengths=lengths, batch_size=0)


def test_group_by_length_needs_input_ids():
    import datasets

    from crop_hf.data.sources import weighted_mix_loader

    with pytest.raises(ValueError, match=r"input_ids column; training source\(s\) \[1\]"):
        weighted_mix_loader([datasets.Dataset.from_dict({"input_ids": [[1, 2]]}),
                             datasets.Dataset.from_dict({"tokens": [["a"]]})], [1.0, 1.0], batch_size=2,
                            collate_fn=list, seed=0, group_by_length=True)


def test_fractional_weight_resamples_every_epoch():
    sampler = WeightedMixSampler([100], [0.5], seed=0)
    first = set(sampler)
    sampler.use_epoch(1)
    assert set(sampler) != first and len(set(sampler)) == 50


def test_weights_must_match_sources():
    with pytest.raises(ValueError, match="2 sampling weights for 1 sources"):
        WeightedMixSampler([3], [1.0, 1.0])
    with pytest.raises(ValueError, match=">= 0"):
        WeightedMixSampler([3], [-1.0])


def test_yaml_config_with_command_line_override(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text("model_name_or_path: m\ntrain_sources: [conll5:en]\nlearning_rate: 2e-5\n"
                      "output_dir: out\nnum_train_epochs: 15\n")
    model_args, data_args, training_args = parse_arguments([str(config), "--num_train_epochs", "2"])
    assert model_args.model_name_or_path == "m" and data_args.train_sources == ["conll5:en"]
    assert training_args.learning_rate == 2e-5  # YAML 1.1 reads 2e-5 as a string; argparse converts it
    assert training_args.num_train_epochs == 2.0
    (tmp_path / "bad.json").write_text('{"model_name_or_path": "m", "output_dir": "o", "learning_rat": 1}')
    with pytest.raises(ValueError, match=r"unknown argument.*learning_rat"):
        parse_arguments([str(tmp_path / "bad.json")])


def test_checkpointing_steps_is_validated():
    from crop_hf.ner import NerTrainingArguments

    assert NerTrainingArguments(output_dir="o", checkpointing_steps="500").checkpoint_every() == 500
    assert NerTrainingArguments(output_dir="o", checkpointing_steps="epoch").checkpoint_every() == "epoch"
    with pytest.raises(ValueError, match="positive integer or 'epoch'"):
        NerTrainingArguments(output_dir="o", checkpointing_steps="often").checkpoint_every()


def test_example_config_parses():
    from pathlib import Path

    config = Path(__file__).resolve().parents[1] / "examples" / "configs" / "conll5_xlmr_base.yaml"
    _, data_args, training_args = parse_arguments([str(config)])
    assert data_args.train_sources == ["conll5:en"]
    assert [parse_source_spec(s).config for s in data_args.eval_sources] == ["en", "es", "nl", "de", "no"]
    assert training_args.warmup_ratio == 0.1 and training_args.num_train_epochs == 15
