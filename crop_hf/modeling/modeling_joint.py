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
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from transformers import AutoConfig, AutoModel, PreTrainedModel
from transformers.utils import ModelOutput

from .configuration_joint import INTENT_POOLING, JointParserConfig
from .crf import ConstrainedCRF, bio_constraints, viterbi_decode

__all__ = ["JointIntentSlotModel", "JointParserOutput", "ParsedUtterance"]


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


@dataclass
class ParsedUtterance:
    """Decoded output of one row: intent and tag ids, and probabilities of each."""

    intent_id: int
    intent_probability: float
    slot_ids: list[int]
    slot_probability: float  # of the whole tag sequence


class JointIntentSlotModel(PreTrainedModel):
    """Encoder + intent classifier + slot tagger (CRF) over word positions.

    Build a new one around a pretrained encoder with :meth:`from_encoder`; load a trained one with
    ``from_pretrained`` (or ``AutoModel.from_pretrained`` once :mod:`crop_hf.modeling` is imported).
    """

    config_class = JointParserConfig
    base_model_prefix = "joint_parser"
    supports_gradient_checkpointing = True

    def __init__(self, config: JointParserConfig) -> None:
        super().__init__(config)
        if not config.intent_labels or not config.slot_labels:
            raise ValueError("JointParserConfig needs intent_labels and slot_labels")
        if config.intent_pooling not in INTENT_POOLING:
            raise ValueError(f"intent_pooling must be one of {INTENT_POOLING}, got {config.intent_pooling!r}")
        allowed_start, allowed = bio_constraints(config.slot_labels)
        try:
            self.encoder = AutoModel.from_config(config.encoder, add_pooling_layer=False)
        except TypeError:  # encoders without a pooler (DistilBERT, ...)
            self.encoder = AutoModel.from_config(config.encoder)
        hidden = config.encoder.hidden_size
        self.dropout = nn.Dropout(config.classifier_dropout)
        self.intent_classifier = nn.Linear(hidden, len(config.intent_labels))
        self.slot_classifier = nn.Linear(hidden, len(config.slot_labels))
        self.crf = ConstrainedCRF(len(config.slot_labels), allowed_start, allowed) if config.use_crf else None
        # Without a CRF, decoding still forbids invalid BIO: zero scores plus the same penalties.
        self._allowed_start, self._allowed = allowed_start, allowed
        self.post_init()

    def _init_weights(self, module: nn.Module) -> None:
        std = getattr(self.config.encoder, "initializer_range", 0.02)
        if isinstance(module, nn.Linear) and module in (self.intent_classifier, self.slot_classifier):
            module.weight.data.normal_(0.0, std)
            module.bias.data.zero_()
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

    @staticmethod
    def compact(token_scores: torch.Tensor, word_index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Token-level scores ``(batch, tokens, tags)`` at first sub-words → ``(batch, words, tags)`` and a word mask."""
        batch, _, tags = token_scores.shape
        words = int(word_index.max().item()) + 1 if word_index.numel() else 0
        words = max(words, 1)
        out = token_scores.new_zeros(batch, words, tags)
        mask = torch.zeros(batch, words, dtype=torch.bool, device=token_scores.device)
        rows, columns = (word_index >= 0).nonzero(as_tuple=True)
        positions = word_index[rows, columns]
        out[rows, positions] = token_scores[rows, columns]
        mask[rows, positions] = True
        lengths = mask.sum(1, keepdim=True)
        if not torch.equal(mask, torch.arange(words, device=mask.device).unsqueeze(0) < lengths):
            raise ValueError("word_index must number each row's words 0, 1, 2, ... at their first sub-words "
                             "(a word without sub-words leaves a gap)")
        return out, mask

    def forward(self, input_ids: torch.Tensor | None = None, attention_mask: torch.Tensor | None = None,
                word_index: torch.Tensor | None = None, intent_labels: torch.Tensor | None = None,
                slot_labels: torch.Tensor | None = None, token_type_ids: torch.Tensor | None = None,
                inputs_embeds: torch.Tensor | None = None, **kwargs) -> JointParserOutput:
        encoder_inputs = {"input_ids": input_ids, "attention_mask": attention_mask, "inputs_embeds": inputs_embeds}
        if token_type_ids is not None:
            encoder_inputs["token_type_ids"] = token_type_ids
        hidden = self.encoder(**encoder_inputs, return_dict=True).last_hidden_state
        hidden = self.dropout(hidden)
        intent_logits = self.intent_classifier(self._pool(hidden, attention_mask))
        slot_emissions = word_mask = None
        if word_index is not None:
            slot_emissions, word_mask = self.compact(self.slot_classifier(hidden), word_index)

        loss = intent_loss = slot_loss = None
        if intent_labels is not None:
            intent_loss = nn.functional.cross_entropy(intent_logits, intent_labels)
            loss = intent_loss
        if slot_labels is not None:
            if slot_emissions is None:
                raise ValueError("slot_labels need word_index (each word's position at its first sub-word)")
            slot_loss = self.slot_loss(slot_emissions, word_mask, slot_labels)
            loss = slot_loss * self.config.slot_loss_weight + (loss if loss is not None else 0.0)
        return JointParserOutput(loss=loss, intent_loss=intent_loss, slot_loss=slot_loss,
                                 intent_logits=intent_logits, slot_emissions=slot_emissions, word_mask=word_mask)

    def slot_loss(self, emissions: torch.Tensor, mask: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Mean negative log-likelihood (CRF) or cross-entropy per word (no CRF) of word-level ``labels``."""
        words = emissions.shape[1]
        if labels.shape[1] < words:
            labels = nn.functional.pad(labels, (0, words - labels.shape[1]), value=-100)
        labels = labels[:, :words]  # words cut off by truncation are not trained on
        if bool(((labels < 0) & mask).any()):
            raise ValueError("slot_labels hold -100 inside an utterance; label every word")
        if self.crf is None:
            return nn.functional.cross_entropy(emissions[mask], labels[mask]) if mask.any() else emissions.sum() * 0
        log_likelihood = self.crf.log_likelihood(emissions, labels, mask)
        return -log_likelihood.sum() / mask.any(1).sum().clamp(min=1)

    # ------------------------------------------------------------------ decoding

    @torch.no_grad()
    def decode(self, outputs: JointParserOutput) -> list[ParsedUtterance]:
        """Best intent and best valid IOB2 tag sequence of each row, with their probabilities."""
        intent_probs = outputs.intent_logits.float().softmax(-1)
        best_prob, best_intent = intent_probs.max(-1)
        emissions, mask = outputs.slot_emissions.float(), outputs.word_mask
        if self.crf is not None:
            paths, log_probs = self.crf.decode(emissions, mask)
        else:
            log_softmax = emissions.log_softmax(-1)
            device = emissions.device
            penalty = torch.where(torch.tensor(self._allowed, device=device), 0.0, -1e4)
            start = torch.where(torch.tensor(self._allowed_start, device=device), 0.0, -1e4)
            paths, log_probs = viterbi_decode(log_softmax, mask, penalty, start, torch.zeros_like(start))
        return [ParsedUtterance(int(best_intent[i]), float(best_prob[i]), paths[i], float(log_probs[i].exp()))
                for i in range(len(paths))]
