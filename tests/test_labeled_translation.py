"""``pipeline("labeled-translation")``: inputs, languages, marker tokens, hypotheses, batching, learning."""

from __future__ import annotations

import logging
import random
import re

import pytest
import torch
from invented_languages import InventedLanguages
from tiny_models import session_model
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, pipeline

import crop_hf  # registers the task
from crop_hf import demo_models as tiny
from crop_hf.labels import tags_to_spans
from crop_hf.translation import LabeledSequenceTranslationPipeline, resolve_languages

OUTPUT_KEYS = {
    "translation", "marked_translation", "entities", "complete", "failures", "hypotheses_tried", "source",
    "marked_source",
}
GOTHENBURG = {"tokens": ["I", "live", "in", "Gothenburg", "."], "ner_tags": ["O", "O", "O", "B-LOC", "O"]}


@pytest.fixture(scope="module")
def translator(tiny_m2m100):
    return pipeline("labeled-translation", model=str(tiny_m2m100), device=-1)


@pytest.fixture(scope="module")
def m2m100_without_markers(tmp_path_factory):
    """A tiny M2M100 whose tokenizer, like facebook/m2m100_418M's, has no __SLOT{i}__ tokens."""
    def build(folder):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(tiny, "SLOT_TOKENS", ())
            return tiny.build_tiny_m2m100(folder)

    return session_model(tmp_path_factory, "m2m100-no-markers", build)


def spaced(text):
    """Markers decoded from added tokens lose a neighbouring space: compare texts with it restored."""
    return " ".join(re.sub(r"(__SLOT\d+__)", r" \1 ", text).split())


def scripted_generate(tokenizer, table, calls):
    """A ``generate`` that "translates" by looking the decoded source up in ``table``.

    ``table`` maps source text (markers included) to a list of hypotheses; each call is recorded.
    """

    def generate(input_ids, attention_mask=None, **kwargs):
        # Markers may be special tokens (added by the pipeline): keep them, drop the other special tokens.
        markers = {i for i, piece in enumerate(tokenizer.convert_ids_to_tokens(list(range(len(tokenizer)))))
                   if piece and re.fullmatch(r"__SLOT\d+__", piece)}
        drop = set(tokenizer.all_special_ids) - markers
        sources = [tokenizer.decode([i for i in row.tolist() if i not in drop]) for row in input_ids]
        calls.append({"sources": sources, **kwargs})
        rows = []
        returns = kwargs.get("num_return_sequences") or 1
        for source in calls[-1]["sources"]:
            hypotheses = {spaced(key): value for key, value in table.items()}[spaced(source)]
            for k in range(returns):
                ids = tokenizer(hypotheses[min(k, len(hypotheses) - 1)]).input_ids[1:]  # drop the source-language id
                rows.append([tokenizer.eos_token_id, kwargs.get("forced_bos_token_id", 0), *ids])
        width = max(map(len, rows))
        return torch.tensor([row + [tokenizer.pad_token_id] * (width - len(row)) for row in rows])

    return generate


# --- plumbing on a random-weight model ----------------------------------------------------------


def test_registered_task_returns_the_documented_output(translator):
    assert isinstance(translator, LabeledSequenceTranslationPipeline)
    result = translator(GOTHENBURG, src_lang="en", tgt_lang="de", num_beams=3, num_return_sequences=3,
                        max_new_tokens=6)
    assert set(result) == OUTPUT_KEYS
    assert result["marked_source"] == "I live in __SLOT0__ Gothenburg __SLOT0__ ."
    assert "SLOT" not in result["translation"]
    assert 1 <= result["hypotheses_tried"] <= 3
    # A random model does not keep markers: the record says so, slot by slot.
    assert result["complete"] is False and not result["entities"]
    assert result["failures"][0]["slot"] == 0 and result["failures"][0]["label"] == "LOC"


def test_settings_given_at_construction_apply_to_every_call(tiny_m2m100):
    translator = pipeline("labeled-translation", model=str(tiny_m2m100), device=-1, src_lang="en", tgt_lang="de",
                          num_return_sequences=3, max_new_tokens=4)
    # Beam search is widened to return three hypotheses; none keeps the markers, so all are tried.
    assert translator(GOTHENBURG)["hypotheses_tried"] == 3


def test_m2m100_languages_reach_tokenizer_and_generate(translator, monkeypatch):
    calls = []
    tokenizer = translator.tokenizer
    table = {"I live in __SLOT0__ Gothenburg __SLOT0__ .": ["Jag bor i __SLOT0__ Göteborg __SLOT0__ ."]}
    monkeypatch.setattr(translator.model, "generate", scripted_generate(tokenizer, table, calls))
    result = translator(GOTHENBURG, src_lang="en", tgt_lang="sv")
    assert calls[0]["forced_bos_token_id"] == tokenizer.get_lang_id("sv")
    assert tokenizer.src_lang == "en"
    assert result["complete"]
    assert result["entities"] == [{"text": "Göteborg", "label": "LOC", "start": 10, "end": 18, "slot": 0}]
    assert result["translation"] == "Jag bor i Göteborg ."


def test_unknown_or_missing_language_is_a_clear_error(translator):
    with pytest.raises(ValueError, match=r"unknown target language 'xx'.*m2m100"):
        translator(GOTHENBURG, src_lang="en", tgt_lang="xx")
    with pytest.raises(ValueError, match="pass both src_lang and tgt_lang"):
        translator(GOTHENBURG)


def test_language_codes_of_nllb_mbart50_and_marian():
    from transformers import MBart50Tokenizer, NllbTokenizer

    nllb = NllbTokenizer()
    setup = resolve_languages(nllb, "eng_Latn", "deu_Latn")
    assert setup.forced_bos_token_id == nllb.convert_tokens_to_ids("deu_Latn") != nllb.unk_token_id
    setup.apply(nllb)
    assert nllb.convert_ids_to_tokens(nllb("hello").input_ids)[0] == "eng_Latn"
    with pytest.raises(ValueError, match="did you mean 'deu_Latn'"):
        resolve_languages(nllb, "eng_Latn", "de")

    mbart = MBart50Tokenizer()
    setup = resolve_languages(mbart, "en_XX", "de_DE")
    assert setup.forced_bos_token_id == mbart.lang_code_to_id["de_DE"]
    with pytest.raises(ValueError, match="did you mean 'de_DE'"):
        resolve_languages(mbart, "en_XX", "de")

    class MarianTokenizer:  # the family is recognised by its class name, as for the real one
        def __init__(self, vocab):
            self.vocab = vocab

        def get_vocab(self):
            return self.vocab

    one_direction = resolve_languages(MarianTokenizer({"▁a": 0}), "en", "de")
    assert (one_direction.prefix, one_direction.forced_bos_token_id) == ("", None)
    multi = MarianTokenizer({">>deu<<": 0, ">>fra<<": 1, "▁a": 2})
    assert resolve_languages(multi, None, "fra").prefix == ">>fra<< "
    with pytest.raises(ValueError, match="unknown target language 'ita'"):
        resolve_languages(multi, None, "ita")


def test_markers_are_added_to_a_tokenizer_that_lacks_them(m2m100_without_markers, caplog, monkeypatch):
    tokenizer = AutoTokenizer.from_pretrained(m2m100_without_markers)
    model = AutoModelForSeq2SeqLM.from_pretrained(m2m100_without_markers)
    size = len(tokenizer)
    assert len(tokenizer.tokenize("__SLOT0__")) > 1
    with caplog.at_level(logging.WARNING, logger="crop_hf.translation.pipeline"):
        translator = LabeledSequenceTranslationPipeline(model=model, tokenizer=tokenizer, device=-1)
    assert "will not keep them" in caplog.text
    assert len(tokenizer) == size + 16
    assert tokenizer.tokenize("__SLOT15__") == ["__SLOT15__"]
    assert model.get_input_embeddings().weight.shape[0] >= len(tokenizer)
    assert model.get_output_embeddings().weight.shape[0] >= len(tokenizer)

    # Added tokens decode glued to the previous word; the first broken hypothesis is skipped.
    calls = []
    source = "Angela Merkel visited Paris ."
    record = {"text": source, "entities": [{"start": 0, "end": 13, "label": "PER"}, {"start": 22, "end": 27, "label": "LOC"}]}
    marked = "__SLOT0__ Angela Merkel __SLOT0__ visited __SLOT1__ Paris __SLOT1__ ."
    table = {marked: ["Angela Merkel besuchte __SLOT1__ Paris .",
                      "__SLOT0__ Angela Merkel __SLOT0__ besuchte __SLOT1__ Paris __SLOT1__ ."]}
    monkeypatch.setattr(model, "generate", scripted_generate(tokenizer, table, calls))
    result = translator(record, src_lang="en", tgt_lang="de", num_beams=2, num_return_sequences=2)
    assert [spaced(text) for text in calls[0]["sources"]] == [marked]
    assert "Merkel__SLOT0__" in result["marked_translation"]  # the space before an added token is lost
    assert result["hypotheses_tried"] == 2
    assert result["complete"] and result["translation"] == "Angela Merkel besuchte Paris ."
    assert [(e["text"], e["label"]) for e in result["entities"]] == [("Angela Merkel", "PER"), ("Paris", "LOC")]

    # With no complete hypothesis, the one that yields the most entities is returned.
    table[marked] = ["kaputt", "Angela Merkel besuchte __SLOT1__ Paris __SLOT1__ ."]
    result = translator(record, src_lang="en", tgt_lang="de", num_return_sequences=2)
    assert result["hypotheses_tried"] == 2 and not result["complete"]
    assert [e["label"] for e in result["entities"]] == ["LOC"]
    assert result["failures"] == [{"slot": 0, "reason": "missing", "label": "PER", "text": None}]


def test_the_first_complete_hypothesis_wins_and_is_counted(translator, monkeypatch):
    record = {"text": "Angela Merkel visited Paris .",
              "entities": [{"start": 0, "end": 13, "label": "PER"}, {"start": 22, "end": 27, "label": "LOC"}]}
    marked = "__SLOT0__ Angela Merkel __SLOT0__ visited __SLOT1__ Paris __SLOT1__ ."
    broken = "Angela Merkel besuchte __SLOT1__ Paris ."
    first = "__SLOT0__ Angela Merkel __SLOT0__ besuchte __SLOT1__ Paris __SLOT1__ ."
    second = "__SLOT0__ Frau Merkel __SLOT0__ war in __SLOT1__ Paris __SLOT1__ ."
    table = {marked: [broken, first, second]}
    monkeypatch.setattr(translator.model, "generate", scripted_generate(translator.tokenizer, table, []))
    result = translator(record, src_lang="en", tgt_lang="de", num_beams=3, num_return_sequences=3)
    assert (result["complete"], result["hypotheses_tried"]) == (True, 2)  # the broken one, then the first complete
    assert spaced(result["translation"]) == "Angela Merkel besuchte Paris ."  # not the later complete one
    table[marked] = [second, first, broken]
    result = translator(record, src_lang="en", tgt_lang="de", num_beams=3, num_return_sequences=3)
    assert (result["complete"], result["hypotheses_tried"]) == (True, 1)
    assert [e["text"] for e in result["entities"]] == ["Frau Merkel", "Paris"]


def test_length_buckets_return_results_in_input_order(translator):
    rng = random.Random(3)
    words = ["I", "live", "in", "Gothenburg", "and", "work", "for", "Volvo", "on", "Monday"]
    records = []
    for _ in range(11):
        tokens = rng.sample(words, rng.randint(1, len(words)))
        records.append({"tokens": tokens, "ner_tags": ["B-MISC"] + ["O"] * (len(tokens) - 1)})
    one = translator(records, src_lang="en", tgt_lang="de", max_new_tokens=5, batch_size=1)
    bucketed = translator(records, src_lang="en", tgt_lang="de", max_new_tokens=5, batch_size=4)
    assert [r["source"] for r in bucketed] == [" ".join(r["tokens"]) for r in records]
    assert [r["translation"] for r in bucketed] == [r["translation"] for r in one]


def test_a_dataset_streams_and_class_label_ids_become_labels(translator):
    datasets = pytest.importorskip("datasets")
    features = datasets.Features({
        "tokens": datasets.Sequence(datasets.Value("string")),
        "ner_tags": datasets.Sequence(datasets.ClassLabel(names=list(crop_hf.CONLL_LABELS))),
    })
    dataset = datasets.Dataset.from_dict(
        {"tokens": [["Volvo", "works"], ["in", "Paris"], ["hello"]], "ner_tags": [[3, 0], [0, 5], [0]]}, features=features
    )
    results = translator(dataset, src_lang="en", tgt_lang="de", max_new_tokens=4, batch_size=2)
    assert not isinstance(results, list)  # an iterator, consumed on demand
    results = list(results)
    assert [r["source"] for r in results] == ["Volvo works", "in Paris", "hello"]
    assert [[f["label"] for f in r["failures"]] for r in results] == [["ORG"], ["LOC"], []]


def test_bad_records_name_the_sentence(translator):
    records = [GOTHENBURG, {"tokens": ["a", "b"], "ner_tags": [1, 0]}]
    with pytest.raises(ValueError, match="sentence 1: ner_tags are ids: pass label_names"):
        translator(records, src_lang="en", tgt_lang="de")
    with pytest.raises(ValueError, match="sentence 0: 2 tokens but 1 tags"):
        translator([{"tokens": ["a", "b"], "ner_tags": ["O"]}], src_lang="en", tgt_lang="de")


def test_easyproject_brackets_restore_labels_from_entity_translations(tiny_m2m100, monkeypatch):
    translator = pipeline("labeled-translation", model=str(tiny_m2m100), device=-1, marker_style="easyproject")
    calls = []
    table = {
        "[ Angela Merkel ] visited [ Paris ] .": ["[ Paris ] besuchte [ Angela Merkel ] ."],
        "Angela Merkel": ["Angela Merkel"],
        "Paris": ["Paris"],
    }
    monkeypatch.setattr(translator.model, "generate", scripted_generate(translator.tokenizer, table, calls))
    record = {"tokens": ["Angela", "Merkel", "visited", "Paris", "."], "ner_tags": ["B-PER", "I-PER", "O", "B-LOC", "O"]}
    result = translator(record, src_lang="en", tgt_lang="de")
    assert calls[1]["sources"] == ["Angela Merkel", "Paris"]  # entities translated on their own
    assert result["complete"]
    assert [(e["text"], e["label"]) for e in result["entities"]] == [("Paris", "LOC"), ("Angela Merkel", "PER")]


# --- the plumbing carries meaning: a tiny model learns to keep markers ---------------------------

def entities_correct(language: InventedLanguages, record: dict, result: dict) -> bool:
    expected = [(language.translate_word(record["tokens"][s.start]), s.label) for s in tags_to_spans(record["ner_tags"])]
    return result["complete"] and [(e["text"], e["label"]) for e in result["entities"]] == expected


@pytest.mark.slow
def test_trained_tiny_model_returns_complete_correctly_labeled_entities(tmp_path):
    language = InventedLanguages()
    rng = random.Random(0)
    train = [language.pair(language.sentence(rng)) for _ in range(3000)]
    path = tiny.build_tiny_m2m100(tmp_path, corpus=[text for pair in train[:500] for text in pair])
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForSeq2SeqLM.from_pretrained(path)
    held_out = [language.sentence(random.Random(10_000 + i)) for i in range(40)]
    assert not {tuple(r["tokens"]) for r in held_out} & {tuple(p[0].split()) for p in train}

    def run(model):
        translator = LabeledSequenceTranslationPipeline(model=model, tokenizer=tokenizer, device=-1)
        results = translator(held_out, src_lang="en", tgt_lang="de", num_beams=2, num_return_sequences=2,
                             max_new_tokens=20, batch_size=16)
        return sum(entities_correct(language, r, res) for r, res in zip(held_out, results, strict=True)) / len(held_out)

    untrained = run(model)

    tokenizer.src_lang, tokenizer.tgt_lang = "en", "de"
    batch = tokenizer([s for s, _ in train], text_target=[t for _, t in train], padding=True, return_tensors="pt")
    labels = batch["labels"].masked_fill(batch["labels"] == tokenizer.pad_token_id, -100)
    torch.manual_seed(0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3)
    model.train()
    for _ in range(600):  # 5-20 s on one core, depending on how busy the machine is
        rows = torch.randint(0, len(train), (32,))
        loss = model(input_ids=batch["input_ids"][rows], attention_mask=batch["attention_mask"][rows],
                     labels=labels[rows]).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model.eval()

    trained = run(model)
    assert untrained == 0.0
    assert trained >= 0.85, f"only {trained:.0%} of held-out sentences came back complete and correctly labeled"
