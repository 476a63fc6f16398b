"""The joint intent + slot model of CSTOP (section 4) as a ``PreTrainedModel``.

An encoder (any ``AutoModel``), a linear intent classifier on the first hidden state (or the mean,
``intent_pooling``), and a linear slot classifier whose emissions are taken at the first sub-word
of every word and *compacted to word positions* before the CRF: the CRF sees exactly the words of
the utterance, never padding, special tokens or continuation sub-words, so it cannot learn
transitions into padding. Slot tags are decoded by Viterbi constrained to valid IOB2, with or
without the CRF (without it, transitions are zero and emissions are log-softmax scores).

Inputs besides the encoder's: ``word_index`` ``(batch, tokens)``, each word's position at its
first sub-word and ``-1`` elsewhere (:func:`crop_hf.data.tokenization.tokenize_words` builds it);
for training, ``intent_labels`` ``(batch,)`` and ``slot_labels`` ``(batch, words)`` padded with -100.
Words cut off by truncation have no position and are neither trained on nor predicted.

With ``max_intent_depth`` above 1 the model also predicts intents nested inside slots (TOP's trees),
over the same encoding: every slot span gets a representation (mean, first and last word's hidden
state, plus an embedding of the slot's name) from which ``nested_intent_classifier`` picks "words
only" (0) or the intent filling the slot (1 + intent id); a filled slot's words are then tagged by
a second tagger (``inner_slot_classifier`` and ``inner_crf``, conditioned on the inner intent's
embedding), and so on down to ``max_intent_depth`` levels. Training takes the gold spans (teacher
forcing): ``span_targets`` ``(n, 5)`` rows ``[row, start, end, slot name id, 0 or 1 + intent id]``
for every slot of every level, ``inner_targets`` ``(m, 4)`` rows ``[row, start, end, intent id]`` for
every nested intent and ``inner_labels`` ``(m, words)`` its tags, -100 padded. Positions are words
of the whole utterance, end exclusive.

``top_tagger`` (``"words"`` by default) chooses how the top-level tags are scored: from each word's
state alone (``slot_classifier``), or from it and an embedding of the utterance's intent, by layers of
their own (``"intent"``: ``top_projection``, ``top_intent_embeddings``, ``top_slot_classifier``) or
by the inner tagger (``"shared"``, which then tags every level). Conditioned taggers are trained on
the gold intent; :meth:`JointIntentSlotModel.decode` tags each row under its three likeliest intents
and keeps the intent and tags with the highest joint probability.

The two taggers are one type, :class:`~crop_hf.modeling.tagger.SlotTagger`, built at construction
as ``top_tagger`` says; decoding and scoring live in :mod:`crop_hf.modeling.search`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from transformers import AutoConfig, AutoModel, PreTrainedModel
from transformers.utils import ModelOutput

from .configuration_joint import INTENT_POOLING, TOP_TAGGERS, JointParserConfig
from .crf import ConstrainedCRF, bio_constraints
from .search import NestedParse, ParsedUtterance, decode_outputs, score_outputs
from .tagger import SlotTagger, compact, tag_loss

__all__ = ["JointIntentSlotModel", "JointParserOutput", "NestedParse", "ParsedUtterance"]


@dataclass
class JointParserOutput(ModelOutput):
    """``loss`` (with labels), ``intent_logits`` ``(batch, intents)``, word-level ``slot_emissions``
    ``(batch, words, tags)`` and ``word_mask`` ``(batch, words)``."""

    loss: torch.Tensor | None = None
    intent_loss: torch.Tensor | None = None
    slot_loss: torch.Tensor | None = None
    intent_logits: torch.Tensor | None = None
    slot_emissions: torch.Tensor | None = None
    word_mask: torch.Tensor | None = None
    nested_loss: torch.Tensor | None = None
    #: ``(batch, words, hidden)`` word-level encoder states, kept for the hierarchical decoder
    word_hidden: torch.Tensor | None = None



class JointIntentSlotModel(PreTrainedModel):
    """Encoder + intent classifier + slot tagger (CRF) over word positions.

    Build a new one around a pretrained encoder with :meth:`from_encoder`; load a trained one with
    ``from_pretrained`` (or ``AutoModel.from_pretrained`` once :mod:`crop_hf.modeling` is imported).
    ``top_level_tagger`` and ``inner_tagger`` (``None`` for a flat model) are the
    :class:`~crop_hf.modeling.tagger.SlotTagger` of each level; with ``top_tagger="shared"`` they are one.
    """

    config_class = JointParserConfig
    base_model_prefix = "joint_parser"
    supports_gradient_checkpointing = True

    #: the linear heads and embeddings of the parser (those a configuration builds), initialised here
    _HEADS = ("intent_classifier", "slot_classifier", "span_projection", "nested_intent_classifier",
              "inner_projection", "inner_slot_classifier", "top_projection", "top_slot_classifier")
    _EMBEDDINGS = ("slot_name_embeddings", "inner_intent_embeddings", "top_intent_embeddings")

    def __init__(self, config: JointParserConfig) -> None:
        super().__init__(config)
        if not config.intent_labels or not config.slot_labels:
            raise ValueError("JointParserConfig needs intent_labels and slot_labels")
        if config.intent_pooling not in INTENT_POOLING:
            raise ValueError(f"intent_pooling must be one of {INTENT_POOLING}, got {config.intent_pooling!r}")
        if config.top_tagger not in TOP_TAGGERS:
            raise ValueError(f"top_tagger must be one of {TOP_TAGGERS}, got {config.top_tagger!r}")
        if config.top_tagger == "shared" and config.max_intent_depth < 2:
            raise ValueError("top_tagger 'shared' uses the hierarchical decoder's inner tagger: it needs "
                             "max_intent_depth 2 or more")
        allowed_start, allowed = bio_constraints(config.slot_labels)
        try:
            self.encoder = AutoModel.from_config(config.encoder, add_pooling_layer=False)
        except TypeError:  # encoders without a pooler (DistilBERT, ...)
            self.encoder = AutoModel.from_config(config.encoder)
        hidden = config.encoder.hidden_size
        self.dropout = nn.Dropout(config.classifier_dropout)
        self.intent_classifier = nn.Linear(hidden, len(config.intent_labels))
        # The layers keep their names (and checkpoints their keys); the taggers built below use them.
        # An intent-conditioned top-level tagger has its own layers ("intent") or the inner tagger's ("shared").
        words = config.top_tagger == "words"
        self.slot_classifier = nn.Linear(hidden, len(config.slot_labels)) if words else None
        own_crf = config.use_crf and config.top_tagger != "shared"
        self.crf = ConstrainedCRF(len(config.slot_labels), allowed_start, allowed) if own_crf else None
        if config.max_intent_depth < 1:
            raise ValueError(f"max_intent_depth must be 1 (flat) or more, got {config.max_intent_depth}")
        names = [tag[2:] for tag in config.slot_labels if tag.startswith("B-")]
        size = config.span_hidden_size or hidden
        #: the tagger of intents nested in slots (and of the top level with ``top_tagger="shared"``)
        self.inner_tagger: SlotTagger | None = None
        if self.hierarchical:
            self.span_projection = nn.Linear(3 * hidden, size)
            self.slot_name_embeddings = nn.Embedding(len(names), size)
            self.nested_intent_classifier = nn.Linear(size, 1 + len(config.intent_labels))
            self.inner_projection = nn.Linear(hidden, size)
            self.inner_intent_embeddings = nn.Embedding(len(config.intent_labels), size)
            self.inner_slot_classifier = nn.Linear(size, len(config.slot_labels))
            self.inner_crf = ConstrainedCRF(len(config.slot_labels), allowed_start, allowed) if config.use_crf else None
            self.inner_tagger = SlotTagger(self, "inner_slot_classifier", "inner_crf", allowed_start, allowed,
                                           projection="inner_projection", intent_embeddings="inner_intent_embeddings")
        if config.top_tagger == "intent":
            self.top_projection = nn.Linear(hidden, size)
            self.top_intent_embeddings = nn.Embedding(len(config.intent_labels), size)
            self.top_slot_classifier = nn.Linear(size, len(config.slot_labels))
            self.top_level_tagger = SlotTagger(self, "top_slot_classifier", "crf", allowed_start, allowed,
                                               projection="top_projection", intent_embeddings="top_intent_embeddings")
        elif words:
            self.top_level_tagger = SlotTagger(self, "slot_classifier", "crf", allowed_start, allowed)
        else:
            self.top_level_tagger = self.inner_tagger
        # word states are kept for the taggers and levels that read them
        self._keeps_word_hidden = self.top_level_tagger.conditioned or self.inner_tagger is not None
        self.post_init()

    @property
    def hierarchical(self) -> bool:
        """Whether the model predicts intents inside slots (``max_intent_depth`` above 1)."""
        return self.config.max_intent_depth > 1

    def _init_weights(self, module: nn.Module) -> None:
        std = getattr(self.config.encoder, "initializer_range", 0.02)
        if isinstance(module, nn.Linear) and any(module is getattr(self, name, None) for name in self._HEADS):
            module.weight.data.normal_(0.0, std)
            module.bias.data.zero_()
        elif any(module is getattr(self, name, None) for name in self._EMBEDDINGS):
            module.weight.data.normal_(0.0, std)
        elif isinstance(module, ConstrainedCRF):
            for parameter in (module.start_transitions, module.end_transitions, module.transitions):
                parameter.data.uniform_(-0.1, 0.1)
        elif hasattr(self, "encoder") and isinstance(self.encoder, PreTrainedModel):
            self.encoder._init_weights(module)

    @classmethod
    def from_encoder(cls, encoder_name_or_path: str, intent_labels: list[str], slot_labels: list[str],
                     **config_kwargs) -> JointIntentSlotModel:
        """A new parser around a pretrained encoder (``FacebookAI/xlm-roberta-base``, a local folder...).

        The heads and CRF start random; ``config_kwargs`` set :class:`JointParserConfig` fields.
        """
        encoder_config = AutoConfig.from_pretrained(encoder_name_or_path)
        config = JointParserConfig(encoder=encoder_config.to_dict(), encoder_name_or_path=encoder_name_or_path,
                                   intent_labels=list(intent_labels), slot_labels=list(slot_labels), **config_kwargs)
        model = cls(config)
        try:
            encoder = AutoModel.from_pretrained(encoder_name_or_path, add_pooling_layer=False)
        except TypeError:
            encoder = AutoModel.from_pretrained(encoder_name_or_path)
        model.encoder.load_state_dict(encoder.state_dict())
        return model

    def get_input_embeddings(self) -> nn.Module:
        return self.encoder.get_input_embeddings()

    # ------------------------------------------------------------------ forward

    def _pool(self, hidden: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        if self.config.intent_pooling == "first" or attention_mask is None:
            return hidden[:, 0] if self.config.intent_pooling == "first" else hidden.mean(1)
        weights = attention_mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * weights).sum(1) / weights.sum(1).clamp(min=1.0)

    compact = staticmethod(compact)

    def forward(self, input_ids: torch.Tensor | None = None, attention_mask: torch.Tensor | None = None,
                word_index: torch.Tensor | None = None, intent_labels: torch.Tensor | None = None,
                slot_labels: torch.Tensor | None = None, token_type_ids: torch.Tensor | None = None,
                inputs_embeds: torch.Tensor | None = None, span_targets: torch.Tensor | None = None,
                inner_targets: torch.Tensor | None = None, inner_labels: torch.Tensor | None = None,
                **kwargs) -> JointParserOutput:
        encoder_inputs = {"input_ids": input_ids, "attention_mask": attention_mask, "inputs_embeds": inputs_embeds}
        if token_type_ids is not None:
            encoder_inputs["token_type_ids"] = token_type_ids
        hidden = self.encoder(**encoder_inputs, return_dict=True).last_hidden_state
        hidden = self.dropout(hidden)
        intent_logits = self.intent_classifier(self._pool(hidden, attention_mask))
        slot_emissions = word_mask = word_hidden = None
        if word_index is not None:
            word_hidden, word_mask = self.compact(hidden, word_index)
            # a conditioned tagger tags given the intent: the gold one in training, the most likely one otherwise
            intents = intent_labels if intent_labels is not None else intent_logits.argmax(-1)
            slot_emissions = self.top_level_tagger.utterance_emissions(hidden, word_index, word_hidden, intents)
            if not self._keeps_word_hidden:
                word_hidden = None

        loss = intent_loss = slot_loss = nested_loss = None
        if intent_labels is not None:
            intent_loss = nn.functional.cross_entropy(intent_logits, intent_labels)
            loss = intent_loss
        if slot_labels is not None:
            if slot_emissions is None:
                raise ValueError("slot_labels need word_index (each word's position at its first sub-word)")
            slot_loss = self.top_level_tagger.loss(slot_emissions, word_mask, slot_labels)
            loss = slot_loss * self.config.slot_loss_weight + (loss if loss is not None else 0.0)
        if span_targets is not None or inner_targets is not None:
            if not self.hierarchical:
                raise ValueError("span_targets/inner_targets train the hierarchical decoder; this model has "
                                 "max_intent_depth 1")
            if word_hidden is None:
                raise ValueError("span_targets/inner_targets need word_index")
            nested_loss = self.nested_loss(word_hidden, word_mask, span_targets, inner_targets, inner_labels)
            loss = nested_loss + (loss if loss is not None else 0.0)
        return JointParserOutput(loss=loss, intent_loss=intent_loss, slot_loss=slot_loss,
                                 intent_logits=intent_logits, slot_emissions=slot_emissions, word_mask=word_mask,
                                 nested_loss=nested_loss, word_hidden=word_hidden)

    @property
    def _top_crf(self) -> ConstrainedCRF | None:
        return self.top_level_tagger.crf

    def top_emissions(self, word_hidden: torch.Tensor, intents: torch.Tensor) -> torch.Tensor:
        """Top-level tag scores ``(batch, words, tags)`` given each row's intent (``top_tagger`` ``"intent"``/``"shared"``)."""
        return self.top_level_tagger.emissions(word_hidden, intents)

    # ------------------------------------------------------------------ the hierarchical decoder

    @staticmethod
    def _gather(word_hidden: torch.Tensor, rows: torch.Tensor, starts: torch.Tensor,
                ends: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The words ``start:end`` of each span as ``(spans, longest, hidden)`` and their prefix mask."""
        lengths = ends - starts
        longest = max(int(lengths.max()), 1) if lengths.numel() else 1
        offsets = torch.arange(longest, device=word_hidden.device)
        mask = offsets.unsqueeze(0) < lengths.unsqueeze(1)
        positions = (starts.unsqueeze(1) + offsets.unsqueeze(0)).clamp(max=word_hidden.shape[1] - 1)
        return word_hidden[rows.unsqueeze(1), positions] * mask.unsqueeze(-1), mask

    def span_logits(self, word_hidden: torch.Tensor, spans: torch.Tensor) -> torch.Tensor:
        """Scores ``(spans, 1 + intents)`` of "words only" (0) and of each intent filling each slot span.

        ``spans`` ``(n, 4)``: ``[row, start, end, slot name id]``.
        """
        words, mask = self._gather(word_hidden, spans[:, 0], spans[:, 1], spans[:, 2])
        lengths = mask.sum(1, keepdim=True).clamp(min=1)
        last = words[torch.arange(len(spans), device=words.device), (lengths.squeeze(1) - 1)]
        features = torch.cat([words.sum(1) / lengths, words[:, 0], last], dim=-1)
        state = nn.functional.gelu(self.span_projection(features) + self.slot_name_embeddings(spans[:, 3]))
        return self.nested_intent_classifier(self.dropout(state))

    def inner_emissions(self, word_hidden: torch.Tensor, spans: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Tag scores ``(spans, words, tags)`` of the words of each span given the intent filling it, and the mask.

        ``spans`` ``(n, 4)``: ``[row, start, end, intent id]``.
        """
        words, mask = self._gather(word_hidden, spans[:, 0], spans[:, 1], spans[:, 2])
        return self.inner_tagger.emissions(words, spans[:, 3]), mask

    def nested_loss(self, word_hidden: torch.Tensor, word_mask: torch.Tensor, span_targets: torch.Tensor | None,
                    inner_targets: torch.Tensor | None, inner_labels: torch.Tensor | None) -> torch.Tensor:
        """Cross-entropy of the nested-intent decision of every gold slot plus the inner taggers' loss.

        Spans reaching past the words kept after truncation are left out.
        """
        lengths = word_mask.sum(1)
        loss = word_hidden.sum() * 0.0
        if span_targets is not None and len(span_targets):
            kept = span_targets[span_targets[:, 2] <= lengths[span_targets[:, 0]]]
            if len(kept):
                logits = self.span_logits(word_hidden, kept[:, :4])
                loss = loss + nn.functional.cross_entropy(logits, kept[:, 4])
        if inner_targets is not None and len(inner_targets):
            if inner_labels is None:
                raise ValueError("inner_targets need inner_labels (the tags of each nested intent's words)")
            keep = inner_targets[:, 2] <= lengths[inner_targets[:, 0]]
            kept, labels = inner_targets[keep], inner_labels[keep]
            if len(kept):  # the loss fits the labels' width to the kept spans' longest
                emissions, mask = self.inner_emissions(word_hidden, kept)
                loss = loss + self.config.slot_loss_weight * self.inner_tagger.loss(emissions, mask, labels)
        return loss

    def slot_loss(self, emissions: torch.Tensor, mask: torch.Tensor, labels: torch.Tensor,
                  crf: ConstrainedCRF | str | None = "top") -> torch.Tensor:
        """Mean negative log-likelihood (CRF) or cross-entropy per word (no CRF) of word-level ``labels``.

        ``crf``: the top level's CRF by default (the inner tagger's with ``top_tagger="shared"``), or
        another one.
        """
        return tag_loss(emissions, mask, labels, self._top_crf if isinstance(crf, str) else crf)

    # ------------------------------------------------------------------ search (crop_hf.modeling.search)

    @torch.no_grad()
    def decode(self, outputs: JointParserOutput) -> list[ParsedUtterance]:
        """Best intent and best valid IOB2 tag sequence of each row, with their probabilities: :func:`.search.decode_outputs`.

        A hierarchical model then decides, level by level for the whole batch at once, which
        predicted slots an intent fills and tags that intent's words (greedy: each level takes the
        best decision of the one above).
        """
        return decode_outputs(self, outputs)

    @torch.no_grad()
    def score(self, outputs: JointParserOutput, parses: list[ParsedUtterance]) -> torch.Tensor:
        """Log-probability ``(batch,)`` under the model of one given parse per row, as :meth:`decode` scores its
        own: :func:`.search.score_outputs`, which says how each level counts. An intent nested deeper than
        ``max_intent_depth`` (or in a flat model) scores ``-inf``.

        Compare a gold tree's score with the decoded one's to tell the decoder's errors from the
        model's: where the gold tree scores higher, the greedy search missed it; where it scores lower,
        the model prefers its own tree and no search would return the gold one.
        """
        return score_outputs(self, outputs, parses)
