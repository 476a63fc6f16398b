"""Word alignment from contextual embeddings of any Hugging Face encoder, batched (SimAlign's methods).

SimAlign (Jalili Sabet et al., 2020) aligns two sentences by the cosine similarity of their
subword embeddings at one encoder layer, with three extraction methods:

* ``argmax`` (SimAlign's *ArgMax*, ``inter``): the intersection of the forward and the reverse
  arg-max alignments — precise, sparse;
* ``itermax`` (*IterMax*): ArgMax, then further rounds that let still-unaligned words take
  their best remaining partner (SimAlign's default extraction);
* ``match`` (*Match*, ``mwmf``): a maximum-weight bipartite matching of the similarity matrix.

``fwd`` and ``rev`` return the two directional arg-max alignments, to combine with
:func:`crop_hf.alignment.symmetrize` like any statistical aligner's output.

:class:`EmbeddingAligner` reproduces the ``simalign`` package's results for the same model,
layer, method, ``token_type`` and ``distortion`` (a test checks it on a tiny BERT), but
encodes many sentences per forward pass and runs the extraction on whole batches of padded
similarity matrices: the ``simalign`` package embeds one pair per call and works on NumPy
matrices one at a time (its issue #43), which leaves a GPU idle and a CPU busy in Python.

Subwords come from the tokenizer's ``word_ids`` (any fast tokenizer), so special tokens of any
model are skipped and words the tokenizer drops (a lone zero-width space) are simply
unaligned. Words beyond the model's maximum length are cut off and stay unaligned (a warning
says how many).

>>> aligner = EmbeddingAligner.from_pretrained("google-bert/bert-base-multilingual-cased", layer=8)  # doctest: +SKIP
>>> aligner.align([["I", "live", "in", "Gothenburg"]], [["Ich", "wohne", "in", "Göteborg"]])  # doctest: +SKIP
[[(0, 0), (1, 1), (2, 2), (3, 3)]]
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from crop_hf.alignment.symmetrize import Alignment
from crop_hf.errors import reaching

if TYPE_CHECKING:
    import torch

__all__ = ["DEFAULT_ENCODER", "EMBEDDING_METHODS", "EmbeddingAligner"]

logger = logging.getLogger(__name__)

#: SimAlign's default encoder (layer 8 of multilingual BERT), under its current Hub id.
DEFAULT_ENCODER = "google-bert/bert-base-multilingual-cased"

#: Extraction methods; SimAlign's names and one-letter codes are accepted too.
EMBEDDING_METHODS: dict[str, str] = {
    "argmax": "argmax", "inter": "argmax", "a": "argmax",
    "itermax": "itermax", "i": "itermax",
    "match": "match", "mwmf": "match", "m": "match",
    "fwd": "fwd", "f": "fwd",
    "rev": "rev", "r": "rev",
}

Words = Sequence[str] | str


def _words(sentence: Words) -> list[str]:
    return sentence.split() if isinstance(sentence, str) else list(sentence)


class EmbeddingAligner:
    """Aligns the words of sentence pairs with a Hugging Face encoder's hidden states at ``layer``.

    Args:
        model: a model id or folder (loaded with ``AutoModel``) or a loaded ``PreTrainedModel``.
        tokenizer: a fast tokenizer; loaded from ``model`` when that is a name.
        layer: index into ``hidden_states`` (0 is the embedding layer, as in SimAlign).
        token_type: ``"bpe"`` aligns subwords and maps the links to words (SimAlign's default);
            ``"word"`` averages each word's subword vectors first.
        distortion: SimAlign's positional prior (0 disables it).
        method: what :meth:`align` uses: ``"itermax"`` (SimAlign's best, default), ``"argmax"`` or ``"match"``.
        batch_size: sentence pairs per forward pass.
        device: where to run; defaults to the model's device.
        max_length: subwords per sentence (default: the tokenizer's or the model's limit).
    """

    def __init__(
        self,
        model,
        tokenizer=None,
        *,
        layer: int = 8,
        token_type: Literal["bpe", "word"] = "bpe",
        distortion: float = 0.0,
        method: str = "itermax",
        batch_size: int = 64,
        device=None,
        max_length: int | None = None,
    ) -> None:
        if isinstance(model, (str, Path)):
            from transformers import AutoModel, AutoTokenizer

            with reaching(model, "alignment encoder"):
                tokenizer = tokenizer or AutoTokenizer.from_pretrained(str(model))
                model = AutoModel.from_pretrained(str(model))
        if tokenizer is None:
            raise ValueError("a loaded model needs its tokenizer: EmbeddingAligner(model, tokenizer)")
        if not getattr(tokenizer, "is_fast", False):
            raise ValueError(f"{type(tokenizer).__name__} is not a fast tokenizer; word alignment needs word_ids()")
        if token_type not in {"bpe", "word"}:
            raise ValueError(f"token_type must be 'bpe' or 'word', got {token_type!r}")
        layers = getattr(model.config, "num_hidden_layers", None)
        if layers is not None and not 0 <= layer <= layers:
            raise ValueError(f"layer {layer} does not exist: the model has hidden states 0..{layers}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if method not in EMBEDDING_METHODS:
            raise ValueError(f"unknown alignment method {method!r}; expected one of {sorted(EMBEDDING_METHODS)}")
        self.method = method
        self.model = model.eval()
        if device is not None:
            self.model.to(device)
        self.tokenizer = tokenizer
        self.layer = layer
        self.token_type = token_type
        self.distortion = distortion
        self.batch_size = batch_size
        if max_length is None:
            limits = [tokenizer.model_max_length, getattr(model.config, "max_position_embeddings", None)]
            max_length = min(limit for limit in limits if limit and limit < 1_000_000)
        self.max_length = max_length
        self._early_exit: bool | None = None  # decided on the first batch


    @classmethod
    def from_pretrained(cls, name_or_path: str | Path = DEFAULT_ENCODER, **kwargs) -> EmbeddingAligner:
        """Load an encoder and its tokenizer by Hub id or folder (SimAlign's default: mBERT, layer 8)."""
        return cls(name_or_path, **kwargs)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def align(
        self,
        source: Sequence[Words],
        target: Sequence[Words],
        *,
        show_progress: bool = False,
    ) -> list[Alignment]:
        """Align each ``source[k]`` with ``target[k]`` with :attr:`method`; sentences are word lists or strings.

        Returns one sorted list of ``(source_word, target_word)`` pairs per sentence pair.
        """
        return self.align_methods(source, target, (self.method,), show_progress=show_progress)[self.method]

    def align_methods(
        self,
        source: Sequence[Words],
        target: Sequence[Words],
        methods: Sequence[str] = ("argmax", "itermax", "match"),
        *,
        show_progress: bool = False,
    ) -> dict[str, list[Alignment]]:
        """Like :meth:`align` for several methods at once, embedding each sentence only once."""
        import torch

        if len(source) != len(target):
            raise ValueError(f"{len(source)} source sentences but {len(target)} target sentences")
        unknown = [m for m in methods if m not in EMBEDDING_METHODS]
        if unknown:
            raise ValueError(f"unknown alignment method(s) {unknown}; expected one of {sorted(EMBEDDING_METHODS)}")
        source_words = [_words(sentence) for sentence in source]
        target_words = [_words(sentence) for sentence in target]
        results: dict[str, list[Alignment]] = {m: [[] for _ in source_words] for m in methods}
        if not source_words:
            return results
        source_encoded = self._tokenize(source_words)
        target_encoded = self._tokenize(target_words)
        # Pairs of similar length share a batch, so little compute goes to padding.
        order = sorted(
            (k for k in range(len(source_words)) if source_encoded[k][1] and target_encoded[k][1]),
            key=lambda k: max(len(source_encoded[k][0]), len(target_encoded[k][0])),
        )
        batches = [order[i:i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        if show_progress:
            from tqdm.auto import tqdm

            batches = tqdm(batches, desc="aligning", unit="batch")
        with torch.inference_mode():
            for batch in batches:
                aligned = self._align_batch(
                    [source_encoded[k] for k in batch], [target_encoded[k] for k in batch], methods
                )
                for method, per_pair in aligned.items():
                    for k, pairs in zip(batch, per_pair, strict=True):
                        results[method][k] = pairs
        return results

    # -- internals ---------------------------------------------------------------------------

    def _tokenize(self, sentences: list[list[str]]) -> list[tuple[list[int], list[int]]]:
        """Per sentence: (input ids with special tokens, word index of each id or -1)."""
        encoded = self.tokenizer(sentences, is_split_into_words=True, truncation=True, max_length=self.max_length)
        out = []
        cut = 0
        for k, ids in enumerate(encoded["input_ids"]):
            word_ids = [-1 if w is None else w for w in encoded.word_ids(k)]
            out.append((ids, word_ids))
            cut += bool(encoded.encodings[k].overflowing)
        if cut:
            logger.warning("%d sentence(s) are longer than %d subwords; their last words stay unaligned",
                           cut, self.max_length)
        return out

    def _embed(self, encoded: list[tuple[list[int], list[int]]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Hidden states at ``self.layer`` (float32) and the word index of every position (-1: none)."""
        import torch

        padded = self.tokenizer.pad({"input_ids": [ids for ids, _ in encoded]}, return_tensors="pt")
        padded = {key: value.to(self.device) for key, value in padded.items()}
        hidden = self._hidden_states(padded).float()
        width = hidden.shape[1]
        word_ids = torch.full((len(encoded), width), -1, dtype=torch.long)
        for row, (_, words) in enumerate(encoded):
            word_ids[row, : len(words)] = torch.tensor(words)
        return hidden, word_ids.to(hidden.device)

    def _hidden_states(self, inputs: dict) -> torch.Tensor:
        """``hidden_states[layer]``, without running the layers above it when that gives the same values.

        Layer ``k``'s output is ``hidden_states[k + 1]`` in encoders such as BERT and XLM-R, so a
        forward hook on it can stop the pass there (mBERT's layer 8 skips a third of the work). The
        first batch is computed both ways; if a model's hidden states are not its raw layer outputs,
        the full pass is used from then on.
        """
        full = None
        if self._early_exit is not False:
            layer_module = self._layer_module()
            if layer_module is not None:
                early = _run_until(self.model, layer_module, inputs)
                if self._early_exit:
                    return early
                full = self.model(**inputs, output_hidden_states=True).hidden_states[self.layer]
                self._early_exit = early.shape == full.shape and bool(
                    (early.float() - full.float()).abs().max() <= 1e-5 * (1 + full.float().abs().max()))
                logger.debug("early exit at layer %d: %s", self.layer, self._early_exit)
            else:
                self._early_exit = False
        if full is None:
            full = self.model(**inputs, output_hidden_states=True).hidden_states[self.layer]
        return full

    def _layer_module(self):
        """The encoder block whose output is ``hidden_states[layer]``, or ``None`` if not found."""
        import torch

        n_layers = getattr(self.model.config, "num_hidden_layers", None)
        if not n_layers or not 1 <= self.layer < n_layers:
            return None  # the embeddings, or the last layer (which some models normalize again)
        for module in self.model.modules():
            if isinstance(module, torch.nn.ModuleList) and len(module) == n_layers:
                return module[self.layer - 1]
        return None

    def _units(self, hidden: torch.Tensor, word_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The vectors to align, left-packed, and the word index of each (-1 marks padding).

        ``bpe``: the subword vectors; ``word``: the mean of each word's subword vectors.
        """
        import torch

        if self.token_type == "bpe":
            keep = word_ids >= 0
            counts = keep.sum(1)
            width = int(counts.max())
            # A stable sort on "not a subword" moves each row's subwords to the front in order.
            index = torch.sort((~keep).to(torch.int8), dim=1, stable=True).indices[:, :width]
            vectors = torch.gather(hidden, 1, index.unsqueeze(-1).expand(-1, -1, hidden.shape[-1]))
            unit_words = torch.gather(word_ids, 1, index)
            unit_words[torch.arange(width, device=hidden.device)[None, :] >= counts[:, None]] = -1
            return vectors, unit_words
        n_words = int(word_ids.max()) + 1
        batch, _, dim = hidden.shape
        flat = (word_ids + torch.arange(batch, device=hidden.device)[:, None] * n_words)[word_ids >= 0]
        sums = torch.zeros(batch * n_words, dim, device=hidden.device).index_add_(0, flat, hidden[word_ids >= 0])
        counts = torch.zeros(batch * n_words, device=hidden.device).index_add_(
            0, flat, torch.ones_like(flat, dtype=sums.dtype))
        vectors = (sums / counts.clamp(min=1)[:, None]).view(batch, n_words, dim)
        unit_words = torch.arange(n_words, device=hidden.device).repeat(batch, 1)
        unit_words[counts.view(batch, n_words) == 0] = -1  # words without subwords
        return vectors, unit_words

    def _align_batch(self, source, target, methods) -> dict[str, list[Alignment]]:
        import torch

        hidden, word_ids = self._embed(source + target)
        vectors, unit_words = self._units(hidden, word_ids)
        n = len(source)
        src, tgt = vectors[:n], vectors[n:]
        src_words, tgt_words = unit_words[:n], unit_words[n:]
        src_valid, tgt_valid = src_words >= 0, tgt_words >= 0
        # SimAlign's similarity: cosine rescaled to [0, 1].
        src = torch.nn.functional.normalize(src, dim=-1)
        tgt = torch.nn.functional.normalize(tgt, dim=-1)
        sim = (torch.bmm(src, tgt.transpose(1, 2)) + 1.0) / 2.0
        valid = src_valid[:, :, None] & tgt_valid[:, None, :]
        if self.distortion:
            sim = sim * self._distortion_mask(src_valid.sum(1), tgt_valid.sum(1), sim.shape)
        matrices = {}
        canonical = {EMBEDDING_METHODS[m] for m in methods}
        forward, reverse = _argmax_both(sim, valid)
        matrices.update(fwd=forward, rev=reverse, argmax=forward & reverse)
        if "itermax" in canonical:
            matrices["itermax"] = _iter_max(sim, valid, matrices["argmax"])
        if "match" in canonical:
            matrices["match"] = _max_weight_match(sim, valid)
        return {m: _to_word_pairs(matrices[EMBEDDING_METHODS[m]], src_words, tgt_words) for m in methods}

    def _distortion_mask(self, m: torch.Tensor, n: torch.Tensor, shape) -> torch.Tensor:
        """SimAlign's ``1 - ratio * (j/(n-1) - i/(m-1))**2``; pairs with fewer than 2 units on a side keep 1."""
        import torch

        _, rows, cols = shape
        device = m.device
        i = torch.arange(rows, device=device, dtype=torch.float32)[None, :, None]
        j = torch.arange(cols, device=device, dtype=torch.float32)[None, None, :]
        pos_i = i / (m - 1).clamp(min=1).float()[:, None, None]
        pos_j = j / (n - 1).clamp(min=1).float()[:, None, None]
        mask = 1.0 - (pos_j - pos_i) ** 2 * self.distortion
        short = ((m < 2) | (n < 2))[:, None, None]
        return torch.where(short, torch.ones_like(mask), mask)


class _StopForward(Exception):
    """Raised by a forward hook to end a forward pass once the wanted layer has run."""


def _run_until(model, layer_module, inputs: dict) -> torch.Tensor:
    """Run ``model`` until ``layer_module`` has produced its output, and return that output."""
    captured = []

    def hook(module, args, output):
        captured.append(output[0] if isinstance(output, tuple) else output)
        raise _StopForward

    handle = layer_module.register_forward_hook(hook)
    try:
        model(**inputs)
    except _StopForward:
        pass
    finally:
        handle.remove()
    if not captured:
        raise RuntimeError(f"{type(layer_module).__name__} did not run during the forward pass")
    return captured[0]


def _argmax_both(sim: torch.Tensor, valid: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Boolean forward (best target of each source unit) and reverse (best source of each target unit)."""
    import torch

    scores = sim.masked_fill(~valid, float("-inf"))
    forward = torch.zeros_like(valid)
    forward.scatter_(2, scores.argmax(2, keepdim=True), True)
    reverse = torch.zeros_like(valid)
    reverse.scatter_(1, scores.argmax(1, keepdim=True), True)
    return forward & valid, reverse & valid


def _iter_max(sim: torch.Tensor, valid: torch.Tensor, inter: torch.Tensor, max_count: int = 2,
              alpha: float = 0.9) -> torch.Tensor:
    """SimAlign's IterMax on a batch, step for step (its ``alpha_ratio`` 0.9 and ``max_count`` 2)."""
    import torch

    src_valid, tgt_valid = valid.any(2), valid.any(1)
    m, n = src_valid.sum(1), tgt_valid.sum(1)
    grows = (torch.minimum(m, n) > 2)[:, None, None]  # SimAlign keeps ArgMax for tiny matrices
    inter = inter.float()
    for _ in range(1, max_count):
        free_rows = 1.0 - inter.sum(2).clamp(0.0, 1.0)  # (B, M)
        free_cols = 1.0 - inter.sum(1).clamp(0.0, 1.0)  # (B, N)
        mask_x, mask_y = free_rows[:, :, None], free_cols[:, None, :]
        mask = (alpha * mask_x + alpha * mask_y).clamp(0.0, 1.0)
        mask_zeros = 1.0 - (1.0 - mask_x) * (1.0 - mask_y)
        # SimAlign stops once every word of one side is aligned.
        active = (((free_rows * src_valid).sum(1) >= 1) & ((free_cols * tgt_valid).sum(1) >= 1))[:, None, None]
        forward, reverse = _argmax_both(sim * mask, valid)
        new = forward & reverse & (mask_zeros > 0) & active & grows
        if not new.any():
            break
        inter = inter + new.float()
    return inter > 0


def _max_weight_match(sim: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Maximum-weight matching of each similarity matrix.

    SimAlign runs networkx's general-graph ``max_weight_matching(maxcardinality=True)``; on a
    complete bipartite graph with positive weights that is the assignment problem, which SciPy's
    ``linear_sum_assignment`` solves in C far faster.
    """
    import torch

    try:
        from scipy.optimize import linear_sum_assignment
    except ImportError as err:  # pragma: no cover - scipy ships with the [align] extra
        raise ImportError("the 'match' method needs scipy: pip install 'crop-hf[align]'") from err
    result = torch.zeros_like(valid)
    matrices = sim.detach().cpu().numpy()
    m, n = valid.any(2).sum(1).tolist(), valid.any(1).sum(1).tolist()
    for b, matrix in enumerate(matrices):
        rows, cols = linear_sum_assignment(matrix[: m[b], : n[b]], maximize=True)
        result[b, torch.as_tensor(rows, dtype=torch.long), torch.as_tensor(cols, dtype=torch.long)] = True
    return result


def _to_word_pairs(matrix: torch.Tensor, src_words: torch.Tensor, tgt_words: torch.Tensor) -> list[Alignment]:
    """Links between units → sorted, de-duplicated word pairs per sentence pair."""
    import torch

    b, i, j = matrix.nonzero(as_tuple=True)
    triples = torch.stack([b, src_words[b, i], tgt_words[b, j]], dim=1)
    pairs: list[Alignment] = [[] for _ in range(matrix.shape[0])]
    for k, source_word, target_word in torch.unique(triples, dim=0).tolist():
        pairs[k].append((source_word, target_word))
    return pairs
