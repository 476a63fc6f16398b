"""Translation-model scores for projection: teacher-forced log-probabilities of target texts under a seq2seq model.

The model-scored projection methods (``insertion``, ``rerank``, ``hybrid_rerank``) ask one question
many times: how probable is this target token sequence, given that source text? A
:class:`TranslationScorer` answers it for any ``AutoModelForSeq2SeqLM`` (M2M100, NLLB, mBART-50,
MarianMT, BART) and its tokenizer, in a fixed direction (``src_lang`` → ``tgt_lang``, codes of the
model's family as :func:`~crop_hf.translation.resolve_languages` reads them):

* sources and targets are tokenized as marker MT training tokenizes them
  (``tokenizer(source)``, ``tokenizer(text_target=target)``): the target's label ids start with the
  forced language token where the family has one and end with ``</s>``;
* each distinct source is encoded **once** (:meth:`TranslationScorer.encode_sources`); any number of
  target rows then share that encoder output (:meth:`TranslationScorer.score_rows`), batched
  across sources and sentences, right-padded (the decoder is causal, so padding never changes a
  real position's probability);
* a target's score leaves out its forced language token (the model does not choose it) and
  counts ``</s>``: :meth:`TranslationScorer.sequence_log_probs` sums the token log-probabilities,
  :meth:`TranslationScorer.mean_log_probs` averages them (the log of the per-token geometric-mean
  probability that T-Projection's score uses).

:meth:`TranslationScorer.score_rows` also returns the log-probability of any further token at any
position of a row (``gather``): the distribution at position ``t`` depends on the row's first ``t``
tokens only, so one pass over a sequence scores every sequence that shares a prefix with it up to
one token past that prefix. Insertion's exact search is built on that
(:mod:`crop_hf.projection.insertion`). For the same reason a row's decoder states can be kept
(``keep=True``, a :class:`DecoderPrefix`) and taken over by later rows that begin with the same
tokens (``resume=``): those rows decode only from where they differ, with the same numbers. The
log-probabilities are read from the logits one vocabulary slice at a time (:func:`log_softmax_at`), and
for the families whose logits are just their output layer (M2M100, NLLB, MarianMT, mBART, BART) that
layer is applied to the decoder states slice by slice too, at real positions only: the whole
``[rows, positions, vocabulary]`` tensor is never built.

Nothing here imports torch or transformers until a scorer is built.

>>> from crop_hf.demo_models import build_tiny_m2m100  # doctest: +SKIP
>>> scorer = TranslationScorer.from_pretrained(build_tiny_m2m100("m2m"), src_lang="en", tgt_lang="de")  # doctest: +SKIP
>>> scorer.mean_log_probs(["I live in Gothenburg ."], ["Ich wohne in Göteborg ."])  # doctest: +SKIP
[-5.8...]
"""

from __future__ import annotations

import functools
import logging
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from crop_hf.markers import MarkerStyle, get_marker_style
from crop_hf.translation.languages import LanguageSetup, resolve_languages
from crop_hf.translation.marker_tokens import MarkerVocabulary

if TYPE_CHECKING:
    import torch

__all__ = ["DecoderPrefix", "EncodedSources", "RowScores", "TranslationScorer", "require_scorer"]

logger = logging.getLogger(__name__)

#: Families whose checkpoints translate between many languages by language code: a reverse or
#: copy direction exists whenever the tokenizer knows both codes.
MULTILINGUAL_FAMILIES = frozenset({"m2m100", "nllb", "mbart"})

#: ``config.model_type`` of the models whose logits are their output layer applied to the decoder states, plus
#: ``final_logits_bias`` where they have one (read from transformers' sources; the tests compare both on M2M100
#: and BART). Any other model is scored from the logits it returns.
SLICED_HEAD_FAMILIES = frozenset({"m2m_100", "marian", "mbart", "bart"})

#: Vocabulary ids per slice of logits (:func:`log_softmax_at`).
VOCABULARY_SLICE = 4096


def require_scorer(scorer: Any, method: str) -> None:
    """A ``ValueError`` saying what to pass when a model-scored ``method`` was called without its scorer."""
    if scorer is None:
        raise ValueError(f"{method} projection scores spans with a translation model: pass scorer="
                         "TranslationScorer(model, tokenizer, src_lang, tgt_lang) to project_examples, or "
                         "scorer=... or scorer_model=NAME with src_lang/tgt_lang to pipeline('projection')")


@dataclass
class EncodedSources:
    """Encoder outputs of some source texts, one ``[length, hidden]`` tensor each (padding removed).

    ``src_lang`` is the language they were encoded as and ``prefix`` the text put before each (a
    MarianMT ``>>deu<<``): every direction with both the same reads the same encoder outputs
    (reranking shares them between ``e|c`` and ``c|c``).
    """

    texts: list[str]
    states: list[Any]  # torch.Tensor each
    src_lang: str | None = None
    prefix: str = ""

    def __len__(self) -> int:
        return len(self.states)


@dataclass
class DecoderPrefix:
    """The decoder states one scored row left behind, kept so later rows that begin like it resume from them.

    ``states`` holds, per decoder layer, the self-attention keys and values of the row's positions
    (``[heads, positions, head_dim]`` each), and ``cross`` the cross-attention keys and values of its
    source (``[heads, source length, head_dim]``). The state at a position depends only on the
    tokens up to it, so a row of the same source whose label ids begin with the same tokens can take
    them over instead of computing them again: the model gives the same numbers either way (an exact
    reuse, not an approximation).
    """

    source: int
    labels: tuple[int, ...]
    log_probs: list[float]
    states: list[tuple[Any, Any]]  # torch.Tensor keys, values per layer
    cross: list[tuple[Any, Any]]


@dataclass
class RowScores:
    """What one decoder row gave: the log-probability of each of its label tokens, and of each gathered token.

    ``log_probs[t]`` is ``log P(labels[t] | labels[:t], source)`` for every label position, the
    forced prefix included (``skip`` says how many leading tokens are forced); ``gathered[k]`` is
    ``log P(token_k | labels[:t_k], source)`` for the ``k``-th ``(t_k, token_k)`` asked for.
    ``prefix`` holds the row's decoder states where they were asked to be kept.
    """

    log_probs: list[float]
    gathered: list[float]
    skip: int
    prefix: DecoderPrefix | None = None

    @property
    def total(self) -> float:
        """The row's score: the sum of its label log-probabilities after the forced prefix."""
        return float(sum(self.log_probs[self.skip:]))


class TranslationScorer:
    """Teacher-forced log-probabilities of targets given sources under one seq2seq model, in one direction.

    Args:
        model: an ``AutoModelForSeq2SeqLM`` (put in eval mode; never trained here).
        tokenizer: its tokenizer.
        src_lang, tgt_lang: the direction, as codes of the model's family (``"en"``, ``"de"`` for
            M2M100; ``"eng_Latn"`` for NLLB; ``"en_XX"`` for mBART-50; none for a one-direction
            MarianMT model). An unknown code is a ``ValueError`` naming close matches.
        batch_size: decoder rows (and encoder sources) per forward pass.
        sentences_per_batch: how many sentences a projection method takes into one search (its
            candidate sequences are all held at once).

    ``stats`` counts the work done (``encoder_rows``, ``decoder_rows``, ``decoder_tokens``,
    ``decoder_calls``), for benchmarks.
    """

    def __init__(self, model: Any, tokenizer: Any, src_lang: str | None = None, tgt_lang: str | None = None, *,
                 batch_size: int = 32, sentences_per_batch: int = 64, _shared: dict | None = None) -> None:
        if batch_size < 1 or sentences_per_batch < 1:
            raise ValueError(f"batch_size and sentences_per_batch must be at least 1, got {batch_size}, "
                             f"{sentences_per_batch}")
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.sentences_per_batch = sentences_per_batch
        self.languages: LanguageSetup = resolve_languages(tokenizer, src_lang, tgt_lang)
        # Shared by every direction of one model: the counts and the marker vocabularies read.
        self._shared = _shared if _shared is not None else {"stats": Counter(), "vocabularies": {}}
        if _shared is None:
            model.eval()
        start = getattr(model.config, "decoder_start_token_id", None)
        if start is None:
            start = getattr(getattr(model, "generation_config", None), "decoder_start_token_id", None)
        if start is None:
            raise ValueError(f"{self.name} has no decoder_start_token_id: it cannot be scored by teacher forcing")
        self.decoder_start = int(start)
        pad = tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else getattr(model.config, "pad_token_id", 0) or 0)

    @classmethod
    def from_pretrained(cls, name_or_path: Any, src_lang: str | None = None, tgt_lang: str | None = None, *,
                        device: Any = None, dtype: Any = None, revision: str | None = None,
                        **kwargs) -> TranslationScorer:
        """Load ``AutoModelForSeq2SeqLM`` and ``AutoTokenizer`` from a checkpoint (``"facebook/m2m100_418M"``)
        at ``revision`` (default: the main branch)."""
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        at = {"revision": revision} if revision else {}
        tokenizer = AutoTokenizer.from_pretrained(name_or_path, **at)
        model = AutoModelForSeq2SeqLM.from_pretrained(name_or_path, **at, **({"dtype": dtype} if dtype else {}))
        if device is not None:
            model = model.to(device)
        return cls(model, tokenizer, src_lang, tgt_lang, **kwargs)

    # -- identity and directions ---------------------------------------------------------------

    @property
    def name(self) -> str:
        """The model's name for messages: its checkpoint name or path, else its class."""
        return str(getattr(self.model, "name_or_path", "") or getattr(self.model.config, "name_or_path", "")
                   or type(self.model).__name__)

    @property
    def stats(self) -> Counter:
        return self._shared["stats"]

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def tolerance(self) -> float:
        """How far two computations of one log-probability may differ (batch and padding change float sums):
        1e-4 in float32, 0.05 in half precision. Exact searches prune only by more than this."""
        import torch

        return 5e-2 if next(self.model.parameters()).dtype in (torch.float16, torch.bfloat16) else 1e-4

    def direction(self, src_lang: str | None, tgt_lang: str | None) -> TranslationScorer:
        """The same model scoring ``src_lang`` → ``tgt_lang`` (sharing weights, counts and caches).

        Only families that take language codes (M2M100, NLLB, mBART-50) have directions to choose;
        for any other model (a MarianMT checkpoint translates one fixed pair) this is a ``ValueError``.
        """
        what = f"{src_lang or '?'}→{tgt_lang or '?'}"
        if self.languages.family not in MULTILINGUAL_FAMILIES:
            raise ValueError(
                f"{self.name} ({self.languages.family} family) translates one fixed direction and cannot score "
                f"{what}; use a multilingual model that knows both languages (M2M100, NLLB, mBART-50)")
        if (src_lang, tgt_lang) == (self.languages.src_lang, self.languages.tgt_lang):
            return self
        try:
            return TranslationScorer(self.model, self.tokenizer, src_lang, tgt_lang, batch_size=self.batch_size,
                                     sentences_per_batch=self.sentences_per_batch, _shared=self._shared)
        except ValueError as error:
            raise ValueError(f"{self.name} cannot score the direction {what}: {error}") from None

    def reverse(self) -> TranslationScorer:
        """The target → source direction (a ``ValueError`` saying why when the model does not have it)."""
        return self.direction(self.languages.tgt_lang, self.languages.src_lang)

    def marker_vocabulary(self, style: str | MarkerStyle | None = None):
        """The tokenizer's :class:`~crop_hf.translation.marker_tokens.MarkerVocabulary` for ``style`` (read once)."""
        style = get_marker_style(style)
        cache = self._shared["vocabularies"]
        if style.name not in cache:
            cache[style.name] = MarkerVocabulary(self.tokenizer, style)
        return cache[style.name]

    # -- tokenization ---------------------------------------------------------------------------

    def _set_languages(self) -> None:
        self.languages.apply(self.tokenizer)
        if self.languages.tgt_lang is not None and hasattr(self.tokenizer, "tgt_lang"):
            self.tokenizer.tgt_lang = self.languages.tgt_lang

    def encode_targets(self, texts: Sequence[str]) -> list[list[int]]:
        """The label ids of each target text, as marker MT training builds them."""
        if not texts:
            return []
        self._set_languages()
        return [list(ids) for ids in self.tokenizer(text_target=list(texts))["input_ids"]]

    def skip(self, labels: Sequence[int]) -> int:
        """How many leading label tokens are forced (the target language token), left out of scores."""
        forced = self.languages.forced_bos_token_id
        return int(forced is not None and len(labels) > 0 and labels[0] == forced)

    # -- model passes ---------------------------------------------------------------------------

    def encode_sources(self, texts: Sequence[str]) -> EncodedSources:
        """Run the encoder once over each source text (batched); the states stay on the model's device."""
        import torch

        self._set_languages()
        texts = list(texts)
        states: list[Any] = [None] * len(texts)
        order = sorted(range(len(texts)), key=lambda k: len(texts[k]))
        encoder = self.model.get_encoder()
        with torch.inference_mode():
            for begin in range(0, len(order), self.batch_size):
                chunk = order[begin:begin + self.batch_size]
                encoded = self.tokenizer([self.languages.prefix + texts[k] for k in chunk], return_tensors="pt",
                                         padding=True).to(self.device)
                hidden = encoder(input_ids=encoded["input_ids"], attention_mask=encoded["attention_mask"])[0]
                lengths = encoded["attention_mask"].sum(1).tolist()
                for row, k in enumerate(chunk):
                    states[k] = hidden[row, :lengths[row]]
                self.stats["encoder_rows"] += len(chunk)
        return EncodedSources(texts, states, self.languages.src_lang, self.languages.prefix)

    def score_rows(self, encoded: EncodedSources, rows: Sequence[tuple[int, Sequence[int]]],
                   gather: Sequence[Sequence[tuple[int, int]]] | None = None, *, keep: bool = False,
                   resume: Sequence[DecoderPrefix | None] | None = None) -> list[RowScores]:
        """Teacher-force each row ``(source index into encoded, label ids)``; batched, in any mix of sources.

        ``gather[r]`` lists ``(position, token id)`` pairs of row ``r`` whose log-probability is
        wanted too (``position`` < the row's length): the probability of ``token`` in place of
        the row's own label at ``position``.

        ``keep=True`` keeps each row's decoder states in its :attr:`RowScores.prefix`. ``resume[r]``
        is such a kept prefix of the same source: row ``r`` then takes over its states for the label
        ids the two rows begin with (up to its first gathered position) and computes only the rest.
        Rows are batched by how far they can resume; a batch resumes from the least of its rows'.
        """
        import torch

        gather = gather if gather is not None else [()] * len(rows)
        resume = resume if resume is not None else [None] * len(rows)
        if len(gather) != len(rows) or len(resume) != len(rows):
            raise ValueError(f"{len(gather)} gather lists and {len(resume)} prefixes for {len(rows)} rows")
        starts = []
        for (source, ids), wanted, prefix in zip(rows, gather, resume, strict=True):
            if not ids:
                raise ValueError("a target row has no tokens")
            starts.append(_resumed_length(source, ids, wanted, prefix))
        # A batch resumes from the least of its rows' lengths and decodes to the longest row's end, so rows
        # that start and end about alike go together: by length in steps of 3 tokens, then by where they
        # resume (on insertion's rows this decodes 17% fewer positions than by resume point, then length;
        # batching only equal resume points would cost far more forward passes, each reading every weight)
        order = sorted(range(len(rows)), key=lambda r: (len(rows[r][1]) // 3, starts[r], len(rows[r][1])))
        out: list[RowScores | None] = [None] * len(rows)
        with torch.inference_mode():
            for begin in range(0, len(order), self.batch_size):
                chunk = order[begin:begin + self.batch_size]
                scored = self._score_chunk(encoded, [rows[r] for r in chunk], [gather[r] for r in chunk],
                                           [resume[r] for r in chunk], min(starts[r] for r in chunk), keep)
                for r, scores in zip(chunk, scored, strict=True):
                    out[r] = scores
        return out  # type: ignore[return-value]

    def _score_chunk(self, encoded: EncodedSources, rows: list, gather: list, resume: list, start: int,
                     keep: bool) -> list[RowScores]:
        """One forward pass over ``rows``, each resuming at position ``start`` from its prefix (0: from scratch)."""
        import torch
        from transformers.modeling_outputs import BaseModelOutput

        device = self.device
        states = [encoded.states[source] for source, _ in rows]
        hidden = torch.nn.utils.rnn.pad_sequence(states, batch_first=True)
        source_mask = torch.zeros(len(rows), hidden.shape[1], dtype=torch.long, device=device)
        for row, state in enumerate(states):
            source_mask[row, :state.shape[0]] = 1
        length = max(len(ids) for _, ids in rows)
        labels = torch.full((len(rows), length), self.pad_id, dtype=torch.long)
        target_mask = torch.zeros(len(rows), length, dtype=torch.long)
        for row, (_, ids) in enumerate(rows):
            labels[row, :len(ids)] = torch.tensor(list(ids))
            target_mask[row, :len(ids)] = 1
        decoder_input = torch.full_like(labels, self.pad_id)
        decoder_input[:, 0] = self.decoder_start
        decoder_input[:, 1:] = labels[:, :-1]
        labels, target_mask, decoder_input = labels.to(device), target_mask.to(device), decoder_input.to(device)
        past = {}
        if start:
            from transformers.cache_utils import DynamicCache, EncoderDecoderCache

            layers = [tuple(torch.stack([prefix.states[layer][kind][:, :start] for prefix in resume]) for kind in (0, 1))
                      for layer in range(len(resume[0].states))]
            cross = [tuple(_stack_padded([prefix.cross[layer][kind] for prefix in resume])
                           for kind in (0, 1)) for layer in range(len(resume[0].cross))]
            past[self._cache_argument] = EncoderDecoderCache(DynamicCache(layers), DynamicCache(cross))
        real = target_mask[:, start:].bool()  # the positions scored: padding never reaches the output layer
        where = torch.full(real.shape, -1, dtype=torch.long, device=device)
        where[real] = torch.arange(int(real.sum()), device=device)
        asked = torch.tensor([(row, position - start, token) for row, wanted in enumerate(gather)
                              for position, token in wanted], dtype=torch.long, device=device).view(-1, 3)
        with _DecoderStates(self._head) as decoder:
            output = self.model(encoder_outputs=BaseModelOutput(last_hidden_state=hidden), attention_mask=source_mask,
                                decoder_input_ids=decoder_input[:, start:], decoder_attention_mask=target_mask,
                                use_cache=keep or bool(start), **past)
        if decoder.states is not None:
            logits = decoder.logits(self.model, real)
        else:
            full = output.logits[real]
            logits = _slices(full.shape[-1], lambda begin, end: full[:, begin:end])
        own, values = log_softmax_at(logits, labels[:, start:][real], where[asked[:, 0], asked[:, 1]], asked[:, 2])
        own, values = own.double().tolist(), values.double().tolist()
        kept = _kept_states(output) if keep else None
        scores, cursor, read = [], 0, 0
        for row, ((source, ids), wanted, prefix) in enumerate(zip(rows, gather, resume, strict=True)):
            log_probs = (prefix.log_probs[:start] if start else []) + own[read:read + len(ids) - start]
            scores.append(RowScores(log_probs, values[cursor:cursor + len(wanted)], self.skip(ids)))
            cursor, read = cursor + len(wanted), read + len(ids) - start
            if kept is not None:
                source_length = states[row].shape[0]
                scores[-1].prefix = DecoderPrefix(source, tuple(ids), log_probs,
                                                  [(keys[row, :, :len(ids)], vals[row, :, :len(ids)])
                                                   for keys, vals in kept[0]],
                                                  [(keys[row, :, :source_length], vals[row, :, :source_length])
                                                   for keys, vals in kept[1]])
        self.stats["decoder_calls"] += 1
        self.stats["decoder_rows"] += len(rows)
        self.stats["decoder_tokens"] += int(target_mask[:, start:].sum())
        return scores

    @functools.cached_property
    def _head(self) -> Any:
        """The model's output layer, where its logits are exactly ``head(decoder states)`` plus any
        ``final_logits_bias`` (M2M100 and NLLB, MarianMT, mBART, BART): scores then read the decoder states through
        slices of it (:func:`log_softmax_at`). ``None`` for any other family: scores read the model's own logits."""
        import torch

        head = self.model.get_output_embeddings()
        known = getattr(self.model.config, "model_type", None) in SLICED_HEAD_FAMILIES
        return head if known and isinstance(head, torch.nn.Linear) else None

    @functools.cached_property
    def _cache_argument(self) -> str:
        """The model's keyword for decoder states to resume from (``cache`` in newer transformers), read once."""
        import inspect

        return "cache" if "cache" in inspect.signature(self.model.forward).parameters else "past_key_values"

    # -- scores of text pairs -------------------------------------------------------------------

    def _pairs(self, sources: Sequence[str], targets: Sequence[str], encoded: EncodedSources | None) -> list[RowScores]:
        if len(sources) != len(targets):
            raise ValueError(f"{len(sources)} sources but {len(targets)} targets")
        if encoded is None:
            encoded = self.encode_sources(list(dict.fromkeys(sources)))
        elif (encoded.src_lang, encoded.prefix) != (self.languages.src_lang, self.languages.prefix):
            raise ValueError(f"sources encoded as {encoded.src_lang!r} (prefix {encoded.prefix!r}) cannot be scored "
                             f"as {self.languages.src_lang!r} (prefix {self.languages.prefix!r})")
        position = {text: k for k, text in enumerate(encoded.texts)}
        missing = [text for text in dict.fromkeys(sources) if text not in position]
        if missing:
            raise ValueError(f"{len(missing)} sources were not encoded, e.g. {missing[0]!r}")
        wanted = [(position[source], tuple(ids))
                  for source, ids in zip(sources, self.encode_targets(targets), strict=True)]
        # A target that, but for its </s>, begins a longer target of the same source is read from that row: its
        # tokens' log-probabilities, and </s>'s gathered where the longer row goes on (reranking's candidate
        # n-grams from one word are read from the longest: about a third of their decoder tokens)
        hosts: list[tuple[int, tuple[int, ...]]] = []
        of_source: dict[int, list[int]] = {}
        asks: list[list[tuple[int, int]]] = []
        read_from: dict[tuple, tuple[int, int | None]] = {}  # row -> (host, index of its gathered </s>)
        for row in sorted(dict.fromkeys(wanted), key=lambda row: -len(row[1])):
            source, ids = row
            host = next((h for h in of_source.get(source, ()) if hosts[h][1][:len(ids) - 1] == ids[:-1]), None)
            if host is None:
                of_source.setdefault(source, []).append(len(hosts))
                read_from[row] = (len(hosts), None)
                hosts.append(row)
                asks.append([])
            else:
                read_from[row] = (host, len(asks[host]))
                asks[host].append((len(ids) - 1, ids[-1]))
        scored = self.score_rows(encoded, hosts, asks)
        out = []
        for row in wanted:
            host, asked = read_from[row]
            scores = scored[host]
            out.append(scores if asked is None else
                       RowScores([*scores.log_probs[:len(row[1]) - 1], scores.gathered[asked]], [], scores.skip))
        return out

    def token_log_probs(self, sources: Sequence[str], targets: Sequence[str], *,
                        encoded: EncodedSources | None = None) -> list[list[float]]:
        """Per pair, the log-probability of each target token (the forced language token left out, ``</s>`` in).

        ``encoded``: the sources' encoder outputs from :meth:`encode_sources` of any direction from this
        source language, to share one encoder pass between directions (default: encode them here).
        """
        return [row.log_probs[row.skip:] for row in self._pairs(sources, targets, encoded)]

    def sequence_log_probs(self, sources: Sequence[str], targets: Sequence[str], *,
                           encoded: EncodedSources | None = None) -> list[float]:
        """Per pair, ``log P(target | source)``: the sum of :meth:`token_log_probs`."""
        return [row.total for row in self._pairs(sources, targets, encoded)]

    def mean_log_probs(self, sources: Sequence[str], targets: Sequence[str], *,
                       encoded: EncodedSources | None = None) -> list[float]:
        """Per pair, the mean token log-probability: the log of T-Projection's per-token geometric-mean ``P(y|x)``."""
        return [row.total / max(1, len(row.log_probs) - row.skip) for row in self._pairs(sources, targets, encoded)]

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.name!r}, {self.languages.src_lang}→{self.languages.tgt_lang}, "
                f"batch_size={self.batch_size})")


def _resumed_length(source: int, ids: Sequence[int], gather: Sequence[tuple[int, int]],
                    prefix: DecoderPrefix | None) -> int:
    """How many leading positions a row takes from ``prefix``: those of the label ids both begin with, stopping
    before the row's first gathered position and its last token (at least one position is computed)."""
    if prefix is None:
        return 0
    if prefix.source != source:
        raise ValueError(f"a row of source {source} cannot resume from the decoder states of source {prefix.source}")
    return min(shared_prefix(ids, prefix.labels), len(ids) - 1, *(position for position, _ in gather))


def log_softmax_at(logits: Any, labels: Any, rows: Any, tokens: Any) -> tuple[Any, Any]:
    """Log-probabilities at ``N`` positions, without holding their ``[N, vocabulary]`` logits at once: of ``labels[n]``
    at position ``n``, and of ``tokens[k]`` at position ``rows[k]`` (float32; the arguments are long tensors).

    ``logits`` yields ``(begin, block)``: the ``[N, width]`` logits of vocabulary ids ``begin`` onwards, slice
    after slice. The normalizer is accumulated over the slices (``logaddexp`` of each one's ``logsumexp``). With
    M2M100's 128k-token vocabulary, a batch of 32 rows of 40 tokens has 655 MB of float32 logits, written, paged in
    and read again by ``logsumexp``; slices of 4,096 ids (:data:`VOCABULARY_SLICE`) stay at 21 MB (the time saved:
    ``docs/benchmarks/bench-model-projection.md``).
    """
    import torch

    normalizer = None
    own = torch.zeros(labels.shape, dtype=torch.float32, device=labels.device)
    asked = torch.zeros(tokens.shape, dtype=torch.float32, device=tokens.device)
    for begin, block in logits:
        block = block.float()
        part = torch.logsumexp(block, dim=-1)
        normalizer = part if normalizer is None else torch.logaddexp(normalizer, part)
        # read where the id falls in this slice (no boolean indexing: a GPU would wait on its count)
        inside = (labels - begin).clamp(0, block.shape[1] - 1)
        own = torch.where(inside == labels - begin, block.gather(1, inside.unsqueeze(1)).squeeze(1), own)
        inside = (tokens - begin).clamp(0, block.shape[1] - 1)
        asked = torch.where(inside == tokens - begin, block[rows, inside], asked)
    return own - normalizer, asked - normalizer[rows]


def _slices(width: int, block: Callable[[int, int], Any]) -> Iterator[tuple[int, Any]]:
    """``(begin, block(begin, end))`` over vocabulary ids 0 to ``width``, :data:`VOCABULARY_SLICE` ids at a time."""
    for begin in range(0, width, VOCABULARY_SLICE):
        yield begin, block(begin, min(begin + VOCABULARY_SLICE, width))


class _DecoderStates:
    """While open, the model's output layer ``head`` receives no position: the decoder states meant for it are kept
    in ``states``, and :meth:`logits` applies the layer to them one vocabulary slice at a time. With ``head`` None
    nothing changes (``states`` stays None and the model returns its logits)."""

    def __init__(self, head: Any) -> None:
        self.head, self.states, self._hook = head, None, None

    def _keep(self, module: Any, args: tuple) -> tuple:
        self.states = args[0]
        return (args[0][:, :0],)

    def __enter__(self) -> _DecoderStates:
        if self.head is not None:
            self._hook = self.head.register_forward_pre_hook(self._keep)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._hook is not None:
            self._hook.remove()

    def logits(self, model: Any, real: Any) -> Any:
        """``(begin, block)`` slices of the logits at the ``real`` positions, the model's ``final_logits_bias`` added."""
        import torch

        states, bias = self.states[real], getattr(model, "final_logits_bias", None)
        weight, shift = self.head.weight, self.head.bias

        def block(begin: int, end: int) -> Any:
            values = torch.nn.functional.linear(states, weight[begin:end], None if shift is None else shift[begin:end])
            return values if bias is None else values + bias[..., begin:end]

        return _slices(weight.shape[0], block)


def shared_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens ``a`` and ``b`` share."""
    shared, most = 0, min(len(a), len(b))
    while shared < most and a[shared] == b[shared]:
        shared += 1
    return shared


def _kept_states(output: Any) -> tuple[list, list] | None:
    """Per decoder layer, the self- and cross-attention keys and values a forward pass left in its cache
    (None where the model returned no such cache)."""
    cache = getattr(output, "cache", None)
    if cache is None:
        cache = getattr(output, "past_key_values", None)
    kept = []
    for part in (getattr(cache, "self_attention_cache", None), getattr(cache, "cross_attention_cache", None)):
        layers = getattr(part, "layers", None)
        if not layers or any(getattr(layer, "keys", None) is None for layer in layers):
            return None
        kept.append([(layer.keys, layer.values) for layer in layers])
    return kept[0], kept[1]


def _stack_padded(tensors: Sequence[Any]) -> Any:
    """``[heads, n, dim]`` tensors stacked into ``[rows, heads, longest n, dim]``, zero-padded along ``n`` (as the
    batch's encoder states are padded: the longest source of the batch sets both lengths)."""
    import torch

    stacked = torch.nn.utils.rnn.pad_sequence([tensor.transpose(0, 1) for tensor in tensors], batch_first=True)
    return stacked.transpose(1, 2).contiguous()
