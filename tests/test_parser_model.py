"""The joint parser as a Hugging Face model and pipeline: Auto classes, word compaction, batching, parses."""

from __future__ import annotations

import pytest
import torch

INTENTS = ["GET_WEATHER", "SET_TIMER"]
TAGS = ["O", "B-LOCATION", "I-LOCATION", "B-DATE_TIME", "I-DATE_TIME"]


@pytest.fixture(scope="module")
def parser_dir(tiny_bert, tmp_path_factory):
    from crop_hf.modeling import JointIntentSlotModel

    torch.manual_seed(0)
    model = JointIntentSlotModel.from_encoder(str(tiny_bert), INTENTS, TAGS)
    with torch.no_grad():  # transitions that favour slots, so decoding produces some
        model.crf.transitions.normal_(0, 1.0)
    folder = tmp_path_factory.mktemp("parser")
    model.save_pretrained(folder)
    from transformers import AutoTokenizer

    AutoTokenizer.from_pretrained(tiny_bert).save_pretrained(folder)
    return folder


def _batch(tokenizer, words):
    from crop_hf.parsing.predict import collate, encode_words

    encoded = encode_words(tokenizer, words, 64)
    return collate([{k: encoded[k][i] for k in encoded} for i in range(len(words))], tokenizer.pad_token_id)


def test_auto_classes_load_the_saved_model_and_config_records_everything(parser_dir):
    import json

    from transformers import AutoConfig, AutoModel, AutoTokenizer

    import crop_hf.modeling  # noqa: F401

    config = json.loads((parser_dir / "config.json").read_text())
    assert config["auto_map"] == {"AutoConfig": "configuration_joint.JointParserConfig",
                                  "AutoModel": "modeling_joint.JointIntentSlotModel"}
    assert config["intent_labels"] == INTENTS and config["slot_labels"] == TAGS and config["use_crf"] is True
    assert (parser_dir / "crf.py").exists()  # remote code is self-contained
    loaded = AutoModel.from_pretrained(parser_dir).eval()
    assert type(loaded).__name__ == "JointIntentSlotModel"
    assert AutoConfig.from_pretrained(parser_dir).encoder.model_type == "bert"
    tokenizer = AutoTokenizer.from_pretrained(parser_dir)
    batch = _batch(tokenizer, [["weather", "in", "Paris"]])
    again = AutoModel.from_pretrained(parser_dir).eval()
    assert torch.allclose(loaded(**batch).slot_emissions, again(**batch).slot_emissions)
    # Without crop-hf's registration, the copied code loads the same model.
    remote = AutoModel.from_pretrained(parser_dir, trust_remote_code=True).eval()
    assert torch.allclose(loaded(**batch).intent_logits, remote(**batch).intent_logits, atol=1e-6)


def test_compaction_takes_first_subwords_only():
    from crop_hf.modeling import JointIntentSlotModel

    scores = torch.arange(2 * 6 * 1, dtype=torch.float).reshape(2, 6, 1)
    word_index = torch.tensor([[-1, 0, -1, 1, 2, -1], [-1, 0, 1, -1, -1, -1]])
    words, mask = JointIntentSlotModel.compact(scores, word_index)
    assert words[..., 0].tolist() == [[1.0, 3.0, 4.0], [7.0, 8.0, 0.0]]
    assert mask.tolist() == [[True, True, True], [True, True, False]]
    with pytest.raises(ValueError, match="gap"):
        JointIntentSlotModel.compact(scores, torch.tensor([[-1, 0, 2, -1, -1, -1]] * 2))


@torch.no_grad()
def test_padding_and_batch_mates_do_not_change_a_sentence(parser_dir):
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(parser_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(parser_dir)
    short = ["weather", "Paris"]
    long = ["Angela", "Merkel", "visited", "Paris", "on", "Monday", "and", "Gothenburg", "later"]
    labels = {"intent_labels": torch.tensor([0]), "slot_labels": torch.tensor([[0, 1]])}
    alone = model(**_batch(tokenizer, [short]), **labels)
    both = model(**_batch(tokenizer, [short, long]), intent_labels=torch.tensor([0, 1]),
                 slot_labels=torch.tensor([[0, 1] + [-100] * 7, [0] * 9]))
    assert torch.allclose(alone.slot_emissions[0], both.slot_emissions[0, :2], atol=1e-5)
    assert not both.word_mask[0, 2:].any()
    # The CRF likelihood of the short sentence is the same alone and padded beside a long one.
    single = model.crf.log_likelihood(alone.slot_emissions, torch.tensor([[0, 1]]), alone.word_mask)
    paired = model.crf.log_likelihood(both.slot_emissions, torch.tensor([[0, 1] + [0] * 7, [0] * 9]), both.word_mask)
    assert float(single[0]) == pytest.approx(float(paired[0]), abs=1e-4)
    assert model.decode(alone)[0].slot_ids == model.decode(both)[0].slot_ids


def test_pipeline_outputs_parses_that_round_trip_and_batches_like_single_calls(parser_dir):
    from transformers import pipeline

    import crop_hf  # noqa: F401
    from crop_hf.seqlogical import parse

    parser = pipeline("semantic-parsing", model=str(parser_dir))
    texts = ["weather  in Paris next Monday", "I live in [Gothenburg]", "Paris", ""]
    singles = [parser(text) for text in texts]
    batched = parser(texts, batch_size=3)
    assert [b["parse"] for b in batched] == [s["parse"] for s in singles]
    for text, out in zip(texts, batched, strict=True):
        assert set(out) == {"intent", "slots", "parse", "score"}
        assert out["intent"] in INTENTS and 0.0 <= out["score"] <= 1.0
        tree = parse(out["parse"])
        assert tree.name == out["intent"] and len(tree.tokens) == len(text.split())
        assert [s.name for s in tree.subtrees() if s.kind == "SL"] == [s["label"] for s in out["slots"]]
        for slot in out["slots"]:
            assert text[slot["start"]:slot["end"]] == slot["text"]
    words = parser([["weather", "in", "Paris"]])
    assert words[0]["parse"] == parser("weather in Paris")["parse"]


def test_config_rejects_bad_labels_and_pooling():
    from transformers import BertConfig

    from crop_hf.modeling import JointIntentSlotModel, JointParserConfig

    encoder = BertConfig(hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8,
                         vocab_size=20).to_dict()
    with pytest.raises(ValueError, match="IOB2"):
        JointIntentSlotModel(JointParserConfig(encoder=encoder, intent_labels=["A"], slot_labels=["O", "S-X"]))
    with pytest.raises(ValueError, match="intent_pooling"):
        JointIntentSlotModel(JointParserConfig(encoder=encoder, intent_labels=["A"], slot_labels=["O"],
                                               intent_pooling="max"))
    mean = JointIntentSlotModel(JointParserConfig(encoder=encoder, intent_labels=["A", "B"], slot_labels=["O"],
                                                  intent_pooling="mean", use_crf=False))
    out = mean(input_ids=torch.tensor([[1, 2, 3]]), attention_mask=torch.tensor([[1, 1, 1]]),
               word_index=torch.tensor([[-1, 0, -1]]), intent_labels=torch.tensor([1]),
               slot_labels=torch.tensor([[0]]))
    assert out.loss is not None and mean.crf is None


@pytest.mark.parametrize("top_tagger", ["intent", "shared"])
def test_an_intent_conditioned_top_tagger_decodes_the_best_joint_intent_and_tags(top_tagger):
    from transformers import BertConfig

    from crop_hf.modeling import JointIntentSlotModel, JointParserConfig

    encoder = BertConfig(hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8,
                         vocab_size=20).to_dict()
    config = JointParserConfig(encoder=encoder, intent_labels=["A", "B", "C"], slot_labels=TAGS,
                               max_intent_depth=2 if top_tagger == "shared" else 1, top_tagger=top_tagger,
                               classifier_dropout=0.0)
    model = JointIntentSlotModel(config).eval()
    projection, embeddings, classifier = ((model.inner_projection, model.inner_intent_embeddings,
                                           model.inner_slot_classifier) if top_tagger == "shared" else
                                          (model.top_projection, model.top_intent_embeddings, model.top_slot_classifier))
    with torch.no_grad():
        # The tags depend on the intent alone: under A every tag is as likely (the best path is
        # unlikely), under B the word is a LOCATION with near certainty; C is never likely.
        projection.weight.zero_(), projection.bias.zero_(), classifier.bias.zero_()
        embeddings.weight.zero_()
        embeddings.weight[1].fill_(1.0)
        classifier.weight.zero_()
        classifier.weight[1].fill_(5.0)
        model.intent_classifier.weight.zero_()
        model.intent_classifier.bias.copy_(torch.tensor([0.3, 0.0, -5.0]))  # A a little likelier than B
        crf = model._top_crf
        for parameter in (crf.transitions, crf.start_transitions, crf.end_transitions):
            parameter.zero_()
    batch = {"input_ids": torch.tensor([[1, 5, 2]]), "attention_mask": torch.ones(1, 3, dtype=torch.long),
             "word_index": torch.tensor([[-1, 0, -1]])}
    out = model(**batch)
    (parsed,) = model.decode(out)
    # Intent alone would say A; the joint probability of intent and tags says B.
    assert out.intent_logits.argmax(-1).item() == 0
    assert (parsed.intent_id, [TAGS[t] for t in parsed.slot_ids]) == (1, ["B-LOCATION"])
    assert parsed.slot_probability > 0.9 and parsed.intent_probability < 0.5
    # The emissions follow the intent they are given: the gold one in training.
    given_b = model(**batch, intent_labels=torch.tensor([1])).slot_emissions
    given_a = model(**batch, intent_labels=torch.tensor([0])).slot_emissions
    assert not torch.allclose(given_a, given_b)
    assert torch.allclose(given_a, out.slot_emissions)  # without labels: the likeliest intent, A


def test_config_rejects_unknown_top_taggers_and_a_shared_one_without_the_hierarchical_decoder():
    from transformers import BertConfig

    from crop_hf.modeling import JointIntentSlotModel, JointParserConfig

    encoder = BertConfig(hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8,
                         vocab_size=20).to_dict()
    with pytest.raises(ValueError, match="top_tagger must be one of"):
        JointIntentSlotModel(JointParserConfig(encoder=encoder, intent_labels=["A"], slot_labels=["O"],
                                               top_tagger="span"))
    with pytest.raises(ValueError, match="max_intent_depth 2 or more"):
        JointIntentSlotModel(JointParserConfig(encoder=encoder, intent_labels=["A"], slot_labels=["O"],
                                               top_tagger="shared"))


@pytest.mark.parametrize("top_tagger,depth", [("words", 1), ("intent", 1), ("shared", 2), ("intent", 2)])
def test_the_taggers_are_built_once_each_and_checkpoints_keep_their_keys(top_tagger, depth):
    """``top_tagger`` is settled when the two taggers are built (one object for "shared"), and their layers
    keep the state-dict keys that checkpoints saved before the tagger type existed hold."""
    from transformers import BertConfig

    from crop_hf.modeling import JointIntentSlotModel, JointParserConfig
    from crop_hf.modeling.tagger import SlotTagger

    encoder = BertConfig(hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8,
                         vocab_size=20).to_dict()
    model = JointIntentSlotModel(JointParserConfig(encoder=encoder, intent_labels=["A", "B"], slot_labels=TAGS,
                                                   max_intent_depth=depth, top_tagger=top_tagger))
    assert isinstance(model.top_level_tagger, SlotTagger)
    assert model.top_level_tagger.conditioned == (top_tagger != "words")
    assert (model.inner_tagger is None) == (depth == 1)
    assert (model.top_level_tagger is model.inner_tagger) == (top_tagger == "shared")
    assert model.top_level_tagger.crf is model._top_crf is (model.inner_crf if top_tagger == "shared" else model.crf)
    heads = {"intent_classifier.weight", "intent_classifier.bias"}
    crf = {f"crf.{name}" for name in ("start_transitions", "end_transitions", "transitions")}
    words = {"slot_classifier.weight", "slot_classifier.bias"}
    top = {"top_projection.weight", "top_projection.bias", "top_intent_embeddings.weight",
           "top_slot_classifier.weight", "top_slot_classifier.bias"}
    nested = {"span_projection.weight", "span_projection.bias", "slot_name_embeddings.weight",
              "nested_intent_classifier.weight", "nested_intent_classifier.bias", "inner_projection.weight",
              "inner_projection.bias", "inner_intent_embeddings.weight", "inner_slot_classifier.weight",
              "inner_slot_classifier.bias", *(f"inner_{key}" for key in crf)}
    expected = {("words", 1): heads | words | crf, ("intent", 1): heads | top | crf,
                ("shared", 2): heads | nested, ("intent", 2): heads | crf | nested | top}[top_tagger, depth]
    assert {key for key in model.state_dict() if not key.startswith("encoder.")} == expected
