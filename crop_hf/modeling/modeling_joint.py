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
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn
from transformers import AutoConfig, AutoModel, PreTrainedModel
from transformers.utils import ModelOutput

from .configuration_joint import INTENT_POOLING, TOP_TAGGERS, JointParserConfig
from .crf import ConstrainedCRF, bio_constraints, sequence_score, viterbi_decode

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


@dataclass
class NestedParse:
    """An intent the model put inside a slot: the slot's words ``start:end`` (of the whole utterance),
    the intent, the tags of the slot's words, and the intents nested in its own slots."""

    start: int
    end: int
    intent_id: int
    slot_ids: list[int]
    nested: list[NestedParse] = field(default_factory=list)


@dataclass
class ParsedUtterance:
    """Decoded output of one row: intent and tag ids, and probabilities of each.

    ``nested`` (hierarchical models only) holds the intents predicted inside top-level slots;
    ``nested_probability`` is the product of the probabilities of every nested decision (which
    slots hold an intent, which one, its tags), 1.0 for a flat model.
    """

    intent_id: int
    intent_probability: float
    slot_ids: list[int]
    slot_probability: float  # of the whole tag sequence
    nested: list[NestedParse] = field(default_factory=list)
    nested_probability: float = 1.0


def _tag_spans(tag_ids: list[int], prefixes: list[str]) -> list[tuple[int, int, int]]:
    """``(start, end, tag id of the B-)`` of each slot in a valid IOB2 sequence of tag ids."""
    spans: list[list[int]] = []
    for position, tag in enumerate(tag_ids):
        if prefixes[tag] == "B":
            spans.append([position, position + 1, tag])
        elif prefixes[tag] == "I" and spans and spans[-1][1] == position:
            spans[-1][1] = position + 1
    return [tuple(span) for span in spans]


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
        # An intent-conditioned top-level tagger has its own layers ("intent") or the inner tagger's ("shared").
        words = config.top_tagger == "words"
        self.slot_classifier = nn.Linear(hidden, len(config.slot_labels)) if words else None
        own_crf = config.use_crf and config.top_tagger != "shared"
        self.crf = ConstrainedCRF(len(config.slot_labels), allowed_start, allowed) if own_crf else None
        # Without a CRF, decoding still forbids invalid BIO: zero scores plus the same penalties.
        self._allowed_start, self._allowed = allowed_start, allowed
        if config.max_intent_depth < 1:
            raise ValueError(f"max_intent_depth must be 1 (flat) or more, got {config.max_intent_depth}")
        self._prefixes = [tag.partition("-")[0] for tag in config.slot_labels]
        names = [tag[2:] for tag in config.slot_labels if tag.startswith("B-")]
        #: slot tag id -> slot name id (``O`` -> -1)
        self._tag_name = [names.index(tag[2:]) if tag != "O" else -1 for tag in config.slot_labels]
        if self.hierarchical:
            size = config.span_hidden_size or hidden
            self.span_projection = nn.Linear(3 * hidden, size)
            self.slot_name_embeddings = nn.Embedding(len(names), size)
            self.nested_intent_classifier = nn.Linear(size, 1 + len(config.intent_labels))
            self.inner_projection = nn.Linear(hidden, size)
            self.inner_intent_embeddings = nn.Embedding(len(config.intent_labels), size)
            self.inner_slot_classifier = nn.Linear(size, len(config.slot_labels))
            self.inner_crf = ConstrainedCRF(len(config.slot_labels), allowed_start, allowed) if config.use_crf else None
        if config.top_tagger == "intent":
            size = config.span_hidden_size or hidden
            self.top_projection = nn.Linear(hidden, size)
            self.top_intent_embeddings = nn.Embedding(len(config.intent_labels), size)
            self.top_slot_classifier = nn.Linear(size, len(config.slot_labels))
        self.post_init()

    @property
    def hierarchical(self) -> bool:
        """Whether the model predicts intents inside slots (``max_intent_depth`` above 1)."""
        return self.config.max_intent_depth > 1

    def _init_weights(self, module: nn.Module) -> None:
        std = getattr(self.config.encoder, "initializer_range", 0.02)
        heads = [self.intent_classifier, self.slot_classifier]
        embeddings = []
        if self.hierarchical:
            heads += [self.span_projection, self.nested_intent_classifier, self.inner_projection,
                      self.inner_slot_classifier]
            embeddings += [self.slot_name_embeddings, self.inner_intent_embeddings]
        if self.config.top_tagger == "intent":
            heads += [self.top_projection, self.top_slot_classifier]
            embeddings.append(self.top_intent_embeddings)
        if isinstance(module, nn.Linear) and any(module is head for head in heads):
            module.weight.data.normal_(0.0, std)
            module.bias.data.zero_()
        elif any(module is embedding for embedding in embeddings):
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
            if self.config.top_tagger == "words":
                slot_emissions, word_mask = self.compact(self.slot_classifier(hidden), word_index)
                if self.hierarchical:
                    word_hidden, _ = self.compact(hidden, word_index)
            else:  # tags given the intent: the gold one in training, the most likely one otherwise
                word_hidden, word_mask = self.compact(hidden, word_index)
                intents = intent_labels if intent_labels is not None else intent_logits.argmax(-1)
                slot_emissions = self.top_emissions(word_hidden, intents)

        loss = intent_loss = slot_loss = nested_loss = None
        if intent_labels is not None:
            intent_loss = nn.functional.cross_entropy(intent_logits, intent_labels)
            loss = intent_loss
        if slot_labels is not None:
            if slot_emissions is None:
                raise ValueError("slot_labels need word_index (each word's position at its first sub-word)")
            slot_loss = self.slot_loss(slot_emissions, word_mask, slot_labels, self._top_crf)
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
        return self.inner_crf if self.config.top_tagger == "shared" else self.crf

    def top_emissions(self, word_hidden: torch.Tensor, intents: torch.Tensor) -> torch.Tensor:
        """Top-level tag scores ``(batch, words, tags)`` given each row's intent (``top_tagger`` ``"intent"``/``"shared"``)."""
        return self._conditioned_emissions(word_hidden, intents, top=True)

    def _conditioned_emissions(self, words: torch.Tensor, intents: torch.Tensor, top: bool = False) -> torch.Tensor:
        """Tag scores of ``words`` ``(n, words, hidden)``, each row given its intent, by the inner tagger's
        layers (also the top level's with ``top_tagger`` ``"shared"``) or, for ``top`` with ``"intent"``, the
        top tagger's own."""
        if top and self.config.top_tagger == "intent":
            projection, embeddings, classifier = self.top_projection, self.top_intent_embeddings, self.top_slot_classifier
        else:
            projection, embeddings, classifier = (self.inner_projection, self.inner_intent_embeddings,
                                                  self.inner_slot_classifier)
        state = nn.functional.gelu(projection(words) + embeddings(intents).unsqueeze(1))
        return classifier(self.dropout(state))

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
        return self._conditioned_emissions(words, spans[:, 3]), mask

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
            if len(kept):  # slot_loss fits the labels' width to the kept spans' longest
                emissions, mask = self.inner_emissions(word_hidden, kept)
                loss = loss + self.config.slot_loss_weight * self.slot_loss(emissions, mask, labels, self.inner_crf)
        return loss

    def slot_loss(self, emissions: torch.Tensor, mask: torch.Tensor, labels: torch.Tensor,
                  crf: ConstrainedCRF | str | None = "top") -> torch.Tensor:
        """Mean negative log-likelihood (CRF) or cross-entropy per word (no CRF) of word-level ``labels``.

        ``crf``: the top level's CRF by default (the inner tagger's with ``top_tagger="shared"``), or
        another one.
        """
        crf = self._top_crf if isinstance(crf, str) else crf
        words = emissions.shape[1]
        if labels.shape[1] < words:
            labels = nn.functional.pad(labels, (0, words - labels.shape[1]), value=-100)
        labels = labels[:, :words]  # words cut off by truncation are not trained on
        if bool(((labels < 0) & mask).any()):
            raise ValueError("slot_labels hold -100 inside an utterance; label every word")
        if crf is None:
            return nn.functional.cross_entropy(emissions[mask], labels[mask]) if mask.any() else emissions.sum() * 0
        log_likelihood = crf.log_likelihood(emissions, labels, mask)
        return -log_likelihood.sum() / mask.any(1).sum().clamp(min=1)

    # ------------------------------------------------------------------ decoding

    def _without_crf(self, emissions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        # Without a CRF a path scores its words' log-softmax, and a move invalid in IOB2 a penalty.
        device = emissions.device
        penalty = torch.where(torch.tensor(self._allowed, device=device), 0.0, -1e4)
        start = torch.where(torch.tensor(self._allowed_start, device=device), 0.0, -1e4)
        return emissions.log_softmax(-1), penalty, start, torch.zeros_like(start)

    def _viterbi(self, emissions: torch.Tensor, mask: torch.Tensor,
                 crf: ConstrainedCRF | None) -> tuple[list[list[int]], torch.Tensor]:
        if crf is not None:
            return crf.decode(emissions, mask)
        log_softmax, penalty, start, end = self._without_crf(emissions)
        return viterbi_decode(log_softmax, mask, penalty, start, end)

    def _path_log_probability(self, emissions: torch.Tensor, mask: torch.Tensor, tags: torch.Tensor,
                              crf: ConstrainedCRF | None) -> torch.Tensor:
        """Log-probability ``(n,)`` of given tag sequences, as :meth:`_viterbi` scores the one it returns."""
        if crf is not None:
            return crf.log_likelihood(emissions, tags, mask, constrained=True)
        log_softmax, penalty, start, end = self._without_crf(emissions)
        return sequence_score(log_softmax, tags, mask, penalty, start, end)

    @torch.no_grad()
    def decode(self, outputs: JointParserOutput) -> list[ParsedUtterance]:
        """Best intent and best valid IOB2 tag sequence of each row, with their probabilities.

        A hierarchical model then decides, level by level for the whole batch at once, which
        predicted slots an intent fills and tags that intent's words (greedy: each level takes the
        best decision of the one above).
        """
        intent_probs = outputs.intent_logits.float().softmax(-1)
        mask = outputs.word_mask
        if self.config.top_tagger != "words" and outputs.word_hidden is not None:
            parsed = self._decode_with_intents(outputs.word_hidden.float(), mask, intent_probs)
        else:
            best_prob, best_intent = intent_probs.max(-1)
            paths, log_probs = self._viterbi(outputs.slot_emissions.float(), mask, self.crf)
            parsed = [ParsedUtterance(int(best_intent[i]), float(best_prob[i]), paths[i], float(log_probs[i].exp()))
                      for i in range(len(paths))]
        if self.hierarchical and outputs.word_hidden is not None:
            self._decode_nested(outputs.word_hidden.float(), parsed)
        return parsed

    def _decode_with_intents(self, word_hidden: torch.Tensor, mask: torch.Tensor, intent_probs: torch.Tensor,
                             candidates: int = 3) -> list[ParsedUtterance]:
        """Intent and tags of each row with the best joint probability among its ``candidates`` likeliest intents."""
        batch = intent_probs.shape[0]
        k = min(candidates, intent_probs.shape[1])
        top_probs, top_intents = intent_probs.topk(k, dim=-1)  # (batch, k)
        flat_intents = top_intents.reshape(-1)
        repeated = word_hidden.repeat_interleave(k, dim=0)
        emissions = self.top_emissions(repeated, flat_intents).float()
        paths, log_probs = self._viterbi(emissions, mask.repeat_interleave(k, dim=0), self._top_crf)
        joint = top_probs.log() + log_probs.reshape(batch, k)
        best = joint.argmax(-1).tolist()
        return [ParsedUtterance(int(top_intents[i, j]), float(top_probs[i, j]), paths[i * k + j],
                                float(log_probs[i * k + j].exp())) for i, j in enumerate(best)]

    def _slot_spans(self, row: int, slot_ids: list[int], offset: int, nested: list[NestedParse]) -> list[tuple]:
        """``(row, start, end, slot name id, nested)`` of each slot of one level whose words start at ``offset``.

        The slots :meth:`_decode_nested` and :meth:`_score_nested` decide on, level by level; ``nested``
        is the list of the level's nested intents (the decoder appends to it, scoring reads it).
        """
        return [(row, offset + start, offset + end, self._tag_name[tag], nested)
                for start, end, tag in _tag_spans(slot_ids, self._prefixes)]

    def _top_slot_spans(self, parses: list[ParsedUtterance]) -> list[tuple]:
        """:meth:`_slot_spans` of the top level of every row: where both nested walks start."""
        return [span for row, parse in enumerate(parses) for span in self._slot_spans(row, parse.slot_ids, 0, parse.nested)]

    def _decode_nested(self, word_hidden: torch.Tensor, parsed: list[ParsedUtterance]) -> None:
        device = word_hidden.device
        pending = self._top_slot_spans(parsed)
        for _ in range(1, self.config.max_intent_depth):
            if not pending:
                break
            spans = torch.tensor([p[:4] for p in pending], device=device)
            probabilities = self.span_logits(word_hidden, spans).float().softmax(-1)
            best_prob, best = probabilities.max(-1)
            for (row, *_), p in zip(pending, best_prob.tolist(), strict=True):
                parsed[row].nested_probability *= p
            chosen = [(i, int(best[i]) - 1) for i in range(len(pending)) if int(best[i]) > 0]
            if not chosen:
                break
            inner = torch.tensor([[*pending[i][:3], intent] for i, intent in chosen], device=device)
            emissions, mask = self.inner_emissions(word_hidden, inner)
            tag_paths, tag_log_probs = self._viterbi(emissions.float(), mask, self.inner_crf)
            following = []
            for (i, intent), path, log_prob in zip(chosen, tag_paths, tag_log_probs.tolist(), strict=True):
                row, start, end, _, siblings = pending[i]
                node = NestedParse(start, end, intent, path)
                siblings.append(node)
                parsed[row].nested_probability *= float(torch.tensor(log_prob).exp())
                following += self._slot_spans(row, path, start, node.nested)
            pending = following

    # ------------------------------------------------------------------ scoring given parses

    @torch.no_grad()
    def score(self, outputs: JointParserOutput, parses: list[ParsedUtterance]) -> torch.Tensor:
        """Log-probability ``(batch,)`` under the model of one given parse per row, as :meth:`decode` scores its own.

        The sum of the log-probabilities of the intent, of the top-level tags (given that intent for
        a conditioned ``top_tagger``), and for a hierarchical model of the decision on each slot (words
        only, or the intent filling it) and of each nested intent's tags, down to ``max_intent_depth``
        levels: scoring what :meth:`decode` returns gives the log of its ``intent_probability *
        slot_probability * nested_probability``. ``parses`` take the decoder's form
        (:class:`ParsedUtterance`: ids; tags for the row's words, ``word_mask``'s count of them;
        :class:`NestedParse` positions over the whole utterance). An intent nested deeper than
        ``max_intent_depth`` (or in a flat model) scores ``-inf``.

        Compare a gold tree's score with the decoded one's to tell the decoder's errors from the
        model's: where the gold tree scores higher, the greedy search missed it; where it scores lower,
        the model prefers its own tree and no search would return the gold one.
        """
        mask = outputs.word_mask
        if mask is None or len(parses) != mask.shape[0]:
            raise ValueError(f"score needs word_index in the forward pass and one parse per row "
                             f"({len(parses)} parses for {0 if mask is None else mask.shape[0]} rows)")
        device = mask.device
        intents = torch.tensor([p.intent_id for p in parses], device=device)
        tags = torch.zeros(mask.shape, dtype=torch.long, device=device)
        for row, parse in enumerate(parses):
            if len(parse.slot_ids) != int(mask[row].sum()):
                raise ValueError(f"parse {row} has {len(parse.slot_ids)} tags for the row's "
                                 f"{int(mask[row].sum())} words")
            tags[row, : len(parse.slot_ids)] = torch.tensor(parse.slot_ids, dtype=torch.long)
            self._check_nested(row, parse.slot_ids, 0, parse.nested)
        total = outputs.intent_logits.float().log_softmax(-1).gather(1, intents.unsqueeze(1)).squeeze(1)
        if self.config.top_tagger != "words" and outputs.word_hidden is not None:
            emissions = self.top_emissions(outputs.word_hidden.float(), intents)
        else:
            emissions = outputs.slot_emissions
        total = total + self._path_log_probability(emissions.float(), mask, tags, self._top_crf)
        if self.hierarchical and outputs.word_hidden is not None:
            self._score_nested(outputs.word_hidden.float(), parses, total)
        too_deep = [row for row, parse in enumerate(parses) if _depth(parse.nested) + 1 > self.config.max_intent_depth]
        total[too_deep] = float("-inf")
        return total

    def _check_nested(self, row: int, slot_ids: list[int], offset: int, nodes: list[NestedParse]) -> None:
        spans = {(offset + start, offset + end) for start, end, _ in _tag_spans(slot_ids, self._prefixes)}
        for node in nodes:
            if (node.start, node.end) not in spans:
                raise ValueError(f"parse {row}: the intent nested at words {node.start}:{node.end} does not fill "
                                 "one of its level's slots")
            if len(node.slot_ids) != node.end - node.start:
                raise ValueError(f"parse {row}: the intent nested at words {node.start}:{node.end} has "
                                 f"{len(node.slot_ids)} tags for {node.end - node.start} words")
            self._check_nested(row, node.slot_ids, node.start, node.nested)

    def _score_nested(self, word_hidden: torch.Tensor, parses: list[ParsedUtterance], total: torch.Tensor) -> None:
        device = word_hidden.device
        pending = self._top_slot_spans(parses)
        for _ in range(1, self.config.max_intent_depth):
            if not pending:
                break
            filled = [next((n for n in nodes if (n.start, n.end) == (start, end)), None)
                      for _, start, end, _, nodes in pending]
            rows = torch.tensor([p[0] for p in pending], device=device)
            targets = torch.tensor([0 if node is None else 1 + node.intent_id for node in filled], device=device)
            decisions = self.span_logits(word_hidden, torch.tensor([p[:4] for p in pending], device=device))
            total.index_add_(0, rows, decisions.float().log_softmax(-1).gather(1, targets.unsqueeze(1)).squeeze(1))
            inner = [(p[0], node) for p, node in zip(pending, filled, strict=True) if node is not None]
            if not inner:
                break
            spans = torch.tensor([[row, node.start, node.end, node.intent_id] for row, node in inner], device=device)
            emissions, mask = self.inner_emissions(word_hidden, spans)
            tags = torch.zeros(mask.shape, dtype=torch.long, device=device)
            for i, (_, node) in enumerate(inner):
                tags[i, : len(node.slot_ids)] = torch.tensor(node.slot_ids, dtype=torch.long)
            total.index_add_(0, spans[:, 0], self._path_log_probability(emissions.float(), mask, tags, self.inner_crf))
            pending = [span for row, node in inner for span in self._slot_spans(row, node.slot_ids, node.start,
                                                                                 node.nested)]


def _depth(nodes: list[NestedParse]) -> int:
    """Levels of intents nested below a parse's top level (0 for a flat parse)."""
    return max((1 + _depth(node.nested) for node in nodes), default=0)
