"""Self-training: the documented combination rule, re-labeling discarded sentences, `crop-hf self-train`."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from training_fixtures import (  # noqa: F401  (pytest fixtures)
    as_dataset,
    fresh_accelerate_state,
    learned,
    reset_accelerate,
    synthetic_rows,
    task_corpora,
    task_model_dir,
)

from crop_hf.labels import is_valid, spans_to_tags, tags_to_spans
from crop_hf.self_training import COMBINATION_RULES, combine_labels


@st.composite
def tag_pair(draw):
    n = draw(st.integers(1, 10))

    def tags():
        spans, position = [], 0
        while position < n:
            start = draw(st.integers(position, n))
            if start >= n:
                break
            end = draw(st.integers(start + 1, n))
            spans.append((start, end, draw(st.sampled_from(["PER", "LOC", "ORG"]))))
            position = end + draw(st.integers(0, 2))
        return spans_to_tags(spans, n)

    return tags(), tags()


@given(tag_pair(), st.sampled_from(COMBINATION_RULES))
def test_combination_rule_invariants(pair, rule):
    source, multi = pair
    tags, label_rule = combine_labels(source, multi, rule)
    assert is_valid(tags) and len(tags) == len(multi)
    out, s_spans, m_spans = set(tags_to_spans(tags)), set(tags_to_spans(source)), set(tags_to_spans(multi))
    if s_spans == m_spans:
        assert label_rule == "agree" or rule == "multilingual"
    if rule == "union":  # the multilingual model wins; every source span that overlaps none of its spans joins
        free = {s for s in s_spans if all(s.end <= m.start or m.end <= s.start for m in m_spans)}
        assert out == m_spans | free
    elif rule == "intersection":
        assert out == s_spans & m_spans
    else:
        assert out == m_spans and label_rule == "multilingual"
    # The recorded rule tells which labels the sentence got.
    if label_rule == "multilingual":
        assert out == m_spans
    elif label_rule == "source":
        assert out == s_spans != m_spans
    elif label_rule in ("union", "intersection"):
        assert out not in (s_spans, m_spans)


def test_union_adds_source_spans_that_touch_but_do_not_overlap_the_multilingual_ones():
    multi = ["O", "B-PER", "O", "B-MISC", "O", "O"]  # PER [1,2), MISC [3,4)
    source = ["B-LOC", "B-ORG", "I-ORG", "O", "B-LOC", "I-LOC"]  # LOC [0,1) ORG [1,3) LOC [4,6)
    # LOC [0,1) ends where PER starts and LOC [4,6) starts where MISC ends: both added; ORG overlaps PER.
    assert combine_labels(source, multi) == (["B-LOC", "B-PER", "O", "B-MISC", "B-LOC", "I-LOC"], "union")
    assert combine_labels(source, multi, "intersection") == (["O"] * 6, "intersection")
    assert combine_labels(multi, multi) == (multi, "agree")
    assert combine_labels(["B-PER", "O", "O"], ["B-PER", "O", "B-LOC"]) == (["B-PER", "O", "B-LOC"], "multilingual")
    with pytest.raises(ValueError, match="3 source tags for 2 tokens"):
        combine_labels(["O", "O", "O"], ["O", "O"])


def test_without_source_labels_the_multilingual_labels_are_used():
    assert combine_labels(None, ["O", "I-PER"]) == (["O", "B-PER"], "multilingual")  # stray I- repaired
    with pytest.raises(ValueError, match=r"unknown combination rule .vote.; expected one of union, intersection, multilingual$"):
        combine_labels(["O"], ["O"], rule="vote")


def _discarded(n=40):
    """Discarded target sentences: half with (partly wrong) projected tags, half with none."""
    import datasets

    rows = synthetic_rows(n, 7, "xx")
    source_tags = []
    for i, row in enumerate(rows):
        if i % 2:
            source_tags.append(None)
        else:  # the projection lost every LOC: the self-trained model should restore them
            source_tags.append([("O" if t.endswith("LOC") else t) for t in row["tags"]])
    data = {"tokens": [r["tokens"] for r in rows], "lang": ["xx"] * n, "source_tags": source_tags}
    features = datasets.Features({"tokens": datasets.List(datasets.Value("string")), "lang": datasets.Value("string"),
                                  "source_tags": datasets.List(datasets.Value("string"))})
    return datasets.Dataset.from_dict(data, features=features), rows


def test_self_train_relabels_discarded_sentences_and_records_the_rule(learned, task_corpora, tmp_path):  # noqa: F811
    """With an already trained multilingual model, the relabeled corpus follows the documented rule."""
    import datasets
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    from crop_hf.ner.evaluate import predict_tags, score_tags
    from crop_hf.self_training import self_train

    discarded, truth = _discarded()
    kept = datasets.load_from_disk(str(task_corpora["xx"]))["train"].select(range(10))
    result = self_train(kept, discarded, multilingual_model=str(learned.output_dir), corpus_dir=tmp_path / "c")
    corpus = datasets.load_from_disk(str(tmp_path / "c"))["train"]
    assert corpus.column_names == ["tokens", "ner_tags", "lang", "label_rule"]
    rules = corpus.features["label_rule"].int2str(corpus["label_rule"])
    names = corpus.features["ner_tags"].feature.names
    tags = [[names[t] for t in row] for row in corpus["ner_tags"]]
    assert rules[:10] == ["synthesis"] * 10
    original = kept.features["ner_tags"].feature.names
    assert tags[:10] == [[original[t] for t in row] for row in kept["ner_tags"]]  # kept labels untouched

    # Every re-labeled sentence got combine_labels(projected tags or None, model's tags), rule recorded.
    model = AutoModelForTokenClassification.from_pretrained(learned.output_dir)
    predicted = predict_tags(model, AutoTokenizer.from_pretrained(learned.output_dir), discarded["tokens"])
    expected = [combine_labels(s, p) for s, p in zip(discarded["source_tags"], predicted, strict=True)]
    expected = [e for e in expected if any(t != "O" for t in e[0])]
    assert [(t, r) for t, r in zip(tags[10:], rules[10:], strict=True)] == expected
    assert rules[10:].count("multilingual") >= 20  # no source tags: the multilingual model's alone
    assert result.rule_counts == {r: rules.count(r) for r in set(rules)}
    assert result.dropped.get("no entities after re-labeling", 0) == 40 - len(expected)
    # The point of self-training: the re-labeled corpus is better than the projected tags it started from.
    gold = [r["tags"] for r in truth]
    projected = [s or ["O"] * len(g) for s, g in zip(discarded["source_tags"], gold, strict=True)]
    relabeled = [combine_labels(s, p)[0] for s, p in zip(discarded["source_tags"], predicted, strict=True)]
    assert score_tags(gold, relabeled).f1 > 0.9 > score_tags(gold, projected).f1


def test_self_train_trains_the_multilingual_model_first(task_model_dir, task_corpora, tmp_path,  # noqa: F811
                                                        monkeypatch):
    """Without a multilingual model, self_train fine-tunes one on the kept + source corpora (train_ner)."""
    import datasets

    from crop_hf.ner import ModelArguments, NerTrainingArguments
    from crop_hf.ner import train as loop
    from crop_hf.self_training import self_train

    trained_on = []  # the tokens of every corpus that became training rows
    real_train_rows = loop.training_rows

    def recording_train_rows(source, *args, **kwargs):
        trained_on.append((source.spec, list(source.split("train")["tokens"])))
        return real_train_rows(source, *args, **kwargs)

    monkeypatch.setattr(loop, "training_rows", recording_train_rows)

    discarded, _ = _discarded(8)
    kept = datasets.load_from_disk(str(task_corpora["xx"]))
    result = self_train(kept, discarded, source_corpus=f"disk:{task_corpora['en']}",
                        model_args=ModelArguments(model_name_or_path=str(task_model_dir)),
                        training_args=NerTrainingArguments(output_dir=str(tmp_path / "all"), max_train_steps=2,
                                                           per_device_train_batch_size=8, show_progress=False),
                        rule="intersection", keep_all_o=True)
    assert result.multilingual_model == str(tmp_path / "all")
    assert (tmp_path / "all" / "model.safetensors").exists()
    assert result.corpus_dir == tmp_path / "all" / "corpus" and result.corpus_dir.is_dir()
    assert len(result.corpus["train"]) == 150 + 8  # keep_all_o: no re-labeled sentence dropped
    assert result.dropped == {}
    # Both the kept synthetic corpus and the source corpus reached training, in that order.
    english = datasets.load_from_disk(str(task_corpora["en"]))["train"]["tokens"]
    assert trained_on == [("synthesized", kept["train"]["tokens"]), (f"disk:{task_corpora['en']}", english)]


def test_self_train_command(learned, task_corpora, tmp_path, capsys):  # noqa: F811
    import datasets

    from crop_hf.cli import main

    # Laid out as corpus synthesis writes them: DatasetDicts keyed by language.
    discarded, _ = _discarded(6)
    datasets.DatasetDict({"xx": discarded}).save_to_disk(str(tmp_path / "discarded"))
    kept = {lang: datasets.load_from_disk(str(path))["train"] for lang, path in task_corpora.items()}
    datasets.DatasetDict(kept).save_to_disk(str(tmp_path / "kept"))
    code = main(["self-train", "--kept", str(tmp_path / "kept"), "--discarded", str(tmp_path / "discarded"),
                 "--multilingual_model", str(learned.output_dir), "--source_model", str(learned.output_dir),
                 "--output_dir", str(tmp_path / "out"), "--rule", "union", "--no_show_progress"])
    assert code == 0
    out = capsys.readouterr().out
    corpus = datasets.load_from_disk(str(tmp_path / "out" / "corpus"))["train"]
    assert f"corpus: {len(corpus)} sentences" in out
    rules = corpus.features["label_rule"].int2str(corpus["label_rule"])
    assert rules.count("synthesis") == 300  # both languages of the kept corpus
    assert set(corpus["lang"]) == {"en", "xx"}
    # Odd rows have no projected tags: the source model tagged them, and as it is the same model, they agree.
    assert "agree" in rules and "synthesis" in out


def test_projected_tags_are_read_from_either_column_and_empty_means_none():
    import datasets

    from crop_hf.self_training import _source_tag_strings

    tokens = [["a", "b"], ["c"], ["d"]]
    for column in ("projected_tags", "source_tags"):  # synthesis's name, and the one older corpora used
        rows = datasets.Dataset.from_dict({"tokens": tokens, column: [["B-PER", "O"], [], None]})
        assert _source_tag_strings(rows) == [["B-PER", "O"], None, None]
    both = datasets.Dataset.from_dict({"tokens": tokens, "projected_tags": [["O", "O"], ["O"], ["O"]],
                                       "source_tags": [["B-PER", "O"], ["O"], ["O"]]})
    assert _source_tag_strings(both)[0] == ["O", "O"]  # the current name wins
    assert _source_tag_strings(datasets.Dataset.from_dict({"tokens": tokens})) == [None, None, None]
