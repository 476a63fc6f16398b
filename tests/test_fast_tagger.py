"""The synthesis tagger (:class:`crop_hf.synthesis.tagging.EntityTagger`) gives what the pipeline gave.

Each test tags the same sentences with ``pipeline("token-classification", aggregation_strategy="first")``
and with the tagger, on the same weights, and asserts the same entities (``entity_group``, ``start``,
``end``, ``word``) and scores within 1e-5. A random tiny model tags at random, which is what these
tests need: every path of transformers' grouping occurs, and each test asserts that it did, counting
them on the words transformers itself aggregated (its ``aggregate_words``).
"""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
import torch
from transformers import (
    AutoModelForTokenClassification,
    AutoTokenizer,
    BertForTokenClassification,
    pipeline,
)

from crop_hf.synthesis.tagging import EntityTagger

# the reference pipeline says it on every sentence of an XLM-R tokenizer (crop_hf.console silences it in runs)
pytestmark = pytest.mark.filterwarnings("ignore:Tokenizer does not support real words:UserWarning")

#: English sentences with what translations hold: punctuation, digits, hyphens, quotes, initials,
#: unknown characters (emoji, CJK: ``<unk>`` to the tiny tokenizers), a tab, runs of spaces, and
#: texts with no word at all.
SENTENCES = [
    "Peter Blackburn lives in Brussels .",
    "The European Commission said on Thursday it disagreed with German advice to consumers .",
    "Germany 's representative to the European Union 's veterinary committee Werner Zwingmann said on Wednesday .",
    "Fischler proposed EU-wide measures after reports from Britain and France that under laboratory conditions .",
    "Spanish Farm Minister Loyola de Palacio had earlier accused Fischler at an EU farm ministers ' meeting .",
    "LONDON 1996-08-30",
    "West Indian all-rounder Phil Simmons took four for 38 on Friday as Leicestershire beat Somerset .",
    "After bowling Somerset out for 83 on the opening morning at Grace Road , Leicestershire extended their lead .",
    "Trading at the Sao Paulo exchange ( Bovespa ) was up 1.2 percent to 71,523 points .",
    '" We do n\'t support any such recommendation , " said Nikolaus van der Pas of the Commission .',
    "U.S. President Bill Clinton met Boris Yeltsin in Helsinki on March 21 , 1997 .",
    "Anna Schmidt-Müller moved from Göteborg to São Paulo in 2019 .",
    "The meeting in Reykjavík ended at 10:30 a.m. with no agreement 😀 .",
    "Tokyo ( 東京 ) is the capital of Japan .",
    "Mr. O'Neill of Goldman Sachs & Co. called it a \"one-off\" .",
    "email john.doe@example.com or call +44 20 7946 0958",
    "  leading and trailing spaces around New York  ",
    "two  spaces   between\twords and a tab in Berlin",
    "\tA tab before the first word , in Oslo .",  # its first piece follows no space: a word all the same
    "x",
    "",
    "   ",
    "Inter Milan beat AC Milan 2-1 ; Juventus drew with Lazio 0-0 .",
    "The United Nations Security Council voted 15-0 in New York on Monday .",
    "Barack Obama and Angela Merkel spoke about NATO , the EU and the G7 .",
    "Microsoft , Apple and Google reported earnings ; shares of Alphabet Inc. rose .",
    "She flew from Rio de Janeiro via Lisbon to Frankfurt am Main .",
    "The Tour de France passes through the Pyrenees and the Alps each July .",
    "Manchester United 's manager Alex Ferguson praised Eric Cantona .",
    "Zurich-based UBS and Credit Suisse said the Swiss National Bank would act .",
    "In Ürümqi , officials of the Xinjiang Uygur Autonomous Region met .",
]

#: how each grouping path is named in :func:`grouping_paths`
PATHS = ("B after O", "B after the same type", "B after another type", "I continues", "I after O",
         "I after another type", "subword tag overridden")


def tagged_by_both(model, tokenizer, texts: list[str]) -> tuple[list, list, Counter]:
    """``texts`` tagged by the pipeline (batches of 8) and by the tagger (batches of 5: other paddings), and the
    grouping paths the pipeline took."""
    reference = pipeline("token-classification", model=model, tokenizer=tokenizer, aggregation_strategy="first",
                         device=-1)
    paths = Counter()
    aggregate_words = reference.aggregate_words

    def recording(entities, strategy):  # transformers' own words of one sentence, each with its tag
        words = aggregate_words(entities, strategy)
        paths.update(grouping_paths(entities, [word["entity"] for word in words]))
        return words

    reference.aggregate_words = recording
    expected = reference(texts, batch_size=8)
    return expected, EntityTagger(model, tokenizer)(texts, batch_size=5), paths


def grouping_paths(sub_tokens: list[dict], tags: list[str]) -> Counter:
    """Which of :data:`PATHS` a sentence's word tags take (each word against the one before it), and how many of
    its words had a sub-token tagged otherwise than the word's first one (first-subword aggregation mattered)."""
    paths = Counter()
    for previous, tag in zip(["O", *tags], tags, strict=False):
        if tag == "O":
            continue
        prefix, kind = (tag[0], tag[2:]) if tag.startswith(("B-", "I-")) else ("I", tag)  # MISC: as I-MISC
        before = previous[2:] if previous.startswith(("B-", "I-")) else previous
        if previous == "O":
            paths[f"{prefix} after O"] += 1
        elif before != kind:
            paths[f"{prefix} after another type"] += 1
        else:
            paths["I continues" if prefix == "I" else "B after the same type"] += 1
    word: list[dict] = []
    for sub_token in [*sub_tokens, None]:
        if sub_token is None or not sub_token["is_subword"]:
            if len({int(piece["scores"].argmax()) for piece in word}) > 1:
                paths["subword tag overridden"] += 1
            word = [sub_token]
        else:
            word.append(sub_token)
    return paths


def assert_same_entities(texts: list[str], expected: list, got: list) -> None:
    assert len(got) == len(texts)
    for text, theirs, ours in zip(texts, expected, got, strict=True):
        assert [(e["entity_group"], e["start"], e["end"], e["word"]) for e in ours] == \
            [(e["entity_group"], e["start"], e["end"], e["word"]) for e in theirs], text
        assert [e["score"] for e in ours] == pytest.approx([float(e["score"]) for e in theirs], abs=1e-5), text
        assert all(type(e["score"]) is float for e in ours)


def within_limit(tokenizer, texts: list[str], limit: int) -> list[str]:
    """The texts the tiny tagger takes (its tiny vocabulary splits long sentences into many pieces)."""
    return [text for text, ids in zip(texts, tokenizer(texts)["input_ids"], strict=True) if len(ids) <= limit]


@pytest.fixture(scope="module")
def xlmr(tiny_xlmr_ner):
    return AutoModelForTokenClassification.from_pretrained(tiny_xlmr_ner), AutoTokenizer.from_pretrained(tiny_xlmr_ner)


def test_entities_are_the_pipelines_on_conll_english(xlmr, shared_data):
    from crop_hf.data.readers.conll import read_conll

    model, tokenizer = xlmr
    sentences = read_conll(shared_data / "conll2003" / "eng.testa", scheme="IOB1")
    texts = within_limit(tokenizer, [" ".join(s.tokens) for s in itertools.islice(sentences, 300)], 256)
    assert len(texts) >= 290
    expected, got, paths = tagged_by_both(model, tokenizer, texts)
    assert_same_entities(texts, expected, got)
    assert sum(map(len, expected)) > len(texts)  # a good number of entities: about 10 a sentence
    assert all(paths[path] >= 20 for path in PATHS), paths


def test_entities_are_the_pipelines_on_built_in_sentences(xlmr):
    model, tokenizer = xlmr
    expected, got, paths = tagged_by_both(model, tokenizer, SENTENCES)
    assert_same_entities(SENTENCES, expected, got)
    assert sum(map(len, expected)) > len(SENTENCES)
    assert all(paths[path] for path in PATHS), paths
    assert got[SENTENCES.index("")] == got[SENTENCES.index("   ")] == []


def test_entities_are_the_pipelines_with_the_heads_bias_on_some_tags(xlmr):
    """Other weights, other paths: most words PER (B- and I-), many I-LOC inside and around them.

    The random head's logits spread about 0.08, so these biases move the tags without fixing them."""
    model, tokenizer = xlmr
    biased = AutoModelForTokenClassification.from_config(model.config).eval()  # no dropout for the pipeline either
    biased.load_state_dict(model.state_dict())
    with torch.no_grad():
        for tag, bias in {"O": 0.1, "B-PER": 0.15, "I-PER": 0.2, "I-LOC": 0.15}.items():
            biased.classifier.bias[model.config.label2id[tag]] += bias
    expected, got, paths = tagged_by_both(biased, tokenizer, SENTENCES)
    assert_same_entities(SENTENCES, expected, got)
    assert all(paths[path] for path in PATHS), paths
    assert paths["I continues"] > 100 and paths["I after another type"] > 30, paths
    groups = Counter(entity["entity_group"] for entities in expected for entity in entities)
    assert groups["PER"] > 150 and groups["LOC"] > 30, groups


def test_a_wordpiece_tokenizer_and_a_tag_with_no_prefix(tiny_bert):
    """A tokenizer with a continuing-subword prefix (``##``) tells a word's pieces apart by it; a tag with
    neither ``B-`` nor ``I-`` (``MISC``) continues an entity of its type (``B-MISC``'s), as ``I-MISC`` would."""
    tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-MISC", "MISC"]
    torch.manual_seed(0)
    model = BertForTokenClassification.from_pretrained(tiny_bert, id2label=dict(enumerate(tags)),
                                                       label2id={tag: i for i, tag in enumerate(tags)})
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    assert tokenizer.backend_tokenizer.model.continuing_subword_prefix == "##"
    texts = within_limit(tokenizer, SENTENCES, model.config.max_position_embeddings)
    expected, got, paths = tagged_by_both(model, tokenizer, texts)
    assert_same_entities(texts, expected, got)
    assert any(e["entity_group"] == "MISC" for entities in expected for e in entities)
    assert all(paths[path] for path in PATHS), paths


def test_a_text_longer_than_the_model_takes_is_refused_alone(xlmr):
    from crop_hf.engine.records import each_or_none
    from crop_hf.synthesis.stages import _tag

    model, tokenizer = xlmr
    tagger = EntityTagger(model, tokenizer, batch_size=4)
    assert tagger.limit == 256  # 258 positions, numbered from the padding index + 1
    long = " ".join(["Gothenburg"] * tagger.limit)
    with pytest.raises(ValueError, match=r"^a translation of \d+ tokens is longer than the tagger takes \(256\)$"):
        tagger(["Anna lives here .", long])
    texts = ["I live in Gothenburg .", long, "Peter Blackburn lives in Brussels ."]
    outputs = each_or_none(lambda batch: _tag(tagger, batch, batch_size=2), texts)
    assert outputs[1] is None
    reference = pipeline("token-classification", model=model, tokenizer=tokenizer, aggregation_strategy="first",
                         device=-1)
    assert_same_entities([texts[0], texts[2]], reference([texts[0], texts[2]]), [outputs[0], outputs[2]])
    assert tagger(texts[0]) == outputs[0]  # one text: its entities alone, as the pipeline gives them


def test_synthesis_loads_the_tagger_on_its_device_with_its_batch_size(tmp_path, monkeypatch, tiny_xlmr_ner):
    import crop_hf.synthesis.stages as stages
    from crop_hf.labels import CONLL_LABELS
    from crop_hf.synthesis import SynthesisConfig, SynthesisModels

    monkeypatch.setattr(stages, "load_method_models", lambda *args, **kwargs: (object(), None))
    config = SynthesisConfig(tgt_langs=["de"], output_dir=str(tmp_path / "out"), mt_model=str(tmp_path),
                             ner_model=str(tiny_xlmr_ner), batch_size=3)
    models = SynthesisModels.load(config, device="cpu")
    assert isinstance(models.tagger, EntityTagger)
    assert models.tagger.batch_size == 3 and models.tagger.device == torch.device("cpu")
    assert list(models.labels) == list(CONLL_LABELS)
    with pytest.raises(ValueError, match="is not a fast tokenizer"):
        EntityTagger(models.tagger.model, object())
