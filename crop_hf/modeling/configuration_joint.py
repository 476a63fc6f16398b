"""Configuration of the joint intent + slot model (CSTOP, section 4).

The encoder's own configuration is stored inside this one (``encoder``), so a saved model rebuilds
its encoder from ``config.json`` alone: ``from_pretrained(folder)`` works offline and without the
original encoder checkpoint. The module imports nothing from crop-hf, so saved folders carry it as
remote code (``auto_map``).
"""

from __future__ import annotations

from transformers import AutoConfig, PretrainedConfig
from transformers.configuration_utils import SubConfigSpec

__all__ = ["INTENT_POOLING", "TOP_TAGGERS", "JointParserConfig"]

#: How the intent classifier reads the encoder: the first hidden state (``<s>``/``[CLS]``, as in
#: CSTOP) or the mean over the sentence's tokens.
INTENT_POOLING = ("first", "mean")

#: How the top-level slot tagger reads the encoder: each word's state alone (``"words"``, CSTOP's
#: tagger), or that state combined with the utterance's intent by its own layers (``"intent"``) or by
#: the hierarchical decoder's inner tagger (``"shared"``: one tagger for every level).
TOP_TAGGERS = ("words", "intent", "shared")


class JointParserConfig(PretrainedConfig):
    r"""Joint intent classification + slot tagging over any Hugging Face encoder.

    Args:
        encoder: the encoder's configuration (a ``PretrainedConfig`` or its dict); default XLM-R's.
        encoder_name_or_path: the checkpoint the encoder was initialised from
            (default ``FacebookAI/xlm-roberta-base``; ``FacebookAI/xlm-roberta-large`` is CSTOP's larger
            model), recorded for model cards.
        intent_labels: intent names (without ``IN:``).
        slot_labels: IOB2 slot tags over slot names (without ``SL:``), ``"O"`` first.
        use_crf: score slot tags with a CRF (``True``) or independently per word; both decode with
            Viterbi constrained to valid BIO.
        slot_loss_weight: weight of the slot loss against the intent loss.
        intent_pooling: ``"first"`` hidden state (CSTOP) or ``"mean"`` over tokens.
        classifier_dropout: dropout before both classifiers.
        max_intent_depth: levels of intents the model predicts: 1 (the default, and what checkpoints
            saved without this field load as) is a flat parser, one intent and its slots; 2 or more
            adds the hierarchical decoder: for each predicted slot a classifier decides whether an
            intent fills it (and which), then that intent's slots are tagged over the slot's words by
            a second tagger conditioned on the intent, recursively, all over the one shared encoding.
            TOP and Hinglish-TOP need 4.
        span_hidden_size: width of the span and inner-tagging layers of the hierarchical decoder
            (default: the encoder's hidden size).
        top_tagger: ``"words"`` (the default): top-level slot tags are scored from each word's state;
            ``"intent"``: from each word's state and the intent of the utterance (the gold intent in
            training, each of the most likely intents in decoding, which keeps the intent and tags
            with the best joint probability); ``"shared"``: as ``"intent"``, by the hierarchical
            decoder's inner tagger, so one tagger (and CRF) tags the slots of every level.
    """

    model_type = "crop-hf-joint-parser"
    sub_configs_defaults = {"encoder": SubConfigSpec(config_class=AutoConfig, model_type="xlm-roberta")}  # noqa: RUF012 (transformers reads it as is)

    encoder: PretrainedConfig | dict | None = None
    encoder_name_or_path: str = "FacebookAI/xlm-roberta-base"
    intent_labels: list[str] | None = None
    slot_labels: list[str] | None = None
    use_crf: bool = True
    slot_loss_weight: float = 1.0
    intent_pooling: str = "first"
    classifier_dropout: float = 0.1
    max_intent_depth: int = 1
    span_hidden_size: int | None = None
    top_tagger: str = "words"
