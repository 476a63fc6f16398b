"""The source NER model of synthesis as an entity tagger that runs at the model's speed.

:class:`EntityTagger` gives, text for text, what transformers' ``pipeline("token-classification",
aggregation_strategy="first")`` gives (``entity_group``, ``score``, ``word``, ``start``, ``end``),
without the pipeline's per-sentence Python postprocess. A profile of synthesis with Apertium as the
translator (issue 72) found that postprocess (``gather_pre_entities``, one Python dict and one
``warnings.warn`` per sub-token) cost more than the model's forward; Python work per sentence, it
does not shrink on a GPU. Here the texts are tokenized in one call, the forward runs in length-sorted padded
batches, and the softmax, first-subword aggregation and entity grouping are array operations over
every sub-token of the call at once; Python runs once per text and once per entity found.

The pipeline's rules are kept exactly, quirks included:

* a sub-token continues the word before it by the pipeline's rule, not by the tokenizer's
  ``word_ids()``: for a tokenizer with a continuing-subword prefix (WordPiece ``##``), when its
  piece's length differs from the text it covers; otherwise (SentencePiece, XLM-R's) when it
  does not start the text and neither its first character nor the one before it is a space. An unknown token (``<unk>``) always starts a word. (``word_ids()`` differs: it splits
  at a tab, and makes one word of XLM-R's lone ``▁`` and the piece after it, which the pipeline
  tags as two words.)
* a word takes the tag of its first sub-token and that sub-token's softmax probability;
* consecutive words form one entity while the tag's type stays the same and no ``B-`` tag
  comes; a bare ``I-X`` after ``O`` or after another type starts an ``X`` entity; a tag with
  neither prefix counts as ``I-``; ``entity_group`` is the first word's tag after its first
  ``-``, and groups named ``O`` are left out;
* an entity's ``score`` is the mean of its words' scores, ``start`` its first word's start and
  ``end`` its last word's end (characters of the text), and ``word`` the tokenizer's
  ``convert_tokens_to_string`` of its words', each its pieces' (the text itself for ``<unk>``).

Unlike the pipeline, a text longer than the model takes is refused (``ValueError``) before any
forward, instead of being truncated: the synthesis stage drops that sentence alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import chain
from pathlib import Path
from typing import Any

__all__ = ["EntityTagger", "refuse_overlong", "tagger_token_limit"]


def tagger_token_limit(tagger: Any) -> int | None:
    """The most tokens ``tagger``'s model takes (``None`` when it does not say).

    ``tagger`` is anything with a ``model`` (and optionally a ``tokenizer``): an :class:`EntityTagger`
    or a ``token-classification`` pipeline. RoBERTa-style models (XLM-R) number positions from
    ``pad_token_id + 1``: XLM-R's 514 position embeddings take 512 tokens.
    """
    config = getattr(getattr(tagger, "model", None), "config", None)
    positions = getattr(config, "max_position_embeddings", None)
    if positions is None:
        return None
    if config.model_type in ("roberta", "xlm-roberta", "camembert") and config.pad_token_id is not None:
        positions -= config.pad_token_id + 1
    declared = getattr(getattr(tagger, "tokenizer", None), "model_max_length", None)
    return min(positions, declared) if declared else positions


def refuse_overlong(lengths: Iterable[int], limit: int | None) -> None:
    """A ``ValueError`` for the first of ``lengths`` (tokens of each text, special tokens included) over ``limit``.

    A degenerate translation (an untrained or public model looping) can exceed the tagger's
    positions, which makes the model raise an index error for the whole batch; refused, it is
    dropped alone (:func:`~crop_hf.engine.records.each_or_none`).
    """
    if limit is None:
        return
    for length in lengths:
        if length > limit:
            raise ValueError(f"a translation of {length} tokens is longer than the tagger takes ({limit})")


class EntityTagger:
    """A token-classification model and its fast tokenizer, tagging texts into grouped entities.

    ``tagger(texts, batch_size=...)`` returns, for each text, the list of entity dicts that
    ``pipeline("token-classification", aggregation_strategy="first")`` returns for it (see the
    module's docstring for the rules), with ``score`` a ``float``; a single string gives its
    list alone. A text over :attr:`limit` tokens makes the call raise ``ValueError``.

    Args:
        model: a loaded ``AutoModelForTokenClassification`` (its ``config.id2label`` names the tags).
        tokenizer: its fast tokenizer (the offsets of each sub-token are needed).
        device: where to run (a ``torch.device``, ``"cuda:0"``, ``-1`` for the CPU, ``0`` for the
            first GPU); ``None`` leaves the model where it is. The model is put in eval mode.
        batch_size: texts per forward when a call does not say.
    """

    def __init__(self, model: Any, tokenizer: Any, *, device: Any = None, batch_size: int = 32) -> None:
        import numpy as np

        if not getattr(tokenizer, "is_fast", False):
            raise ValueError(f"{type(tokenizer).__name__} is not a fast tokenizer; tagging needs each token's offsets")
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.model = model.eval()
        if device is not None:
            self.model.to(_torch_device(device))
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        tags = [model.config.id2label[i] for i in range(model.config.num_labels)]
        types = {}
        #: per tag id: does it begin an entity (``B-``), the id of its type, the entity_group it names
        self._begins = np.array([tag.startswith("B-") for tag in tags], dtype=bool)
        self._types = np.array([types.setdefault(_tag_type(tag), len(types)) for tag in tags], dtype=np.int64)
        self._groups = [tag.split("-", 1)[-1] for tag in tags]
        self._kept = np.array([group != "O" for group in self._groups], dtype=bool)  # the pipeline's ignore_labels
        backend = getattr(tokenizer, "_tokenizer", None)
        #: a continuing-subword prefix (WordPiece's ``##``) tells a word's pieces apart; else the spaces do
        self._word_aware = bool(backend and getattr(backend.model, "continuing_subword_prefix", None))
        self.limit = tagger_token_limit(self)

    @classmethod
    def from_pretrained(cls, name_or_path: str | Path, *, revision: str | None = None, device: Any = None,
                        batch_size: int = 32) -> EntityTagger:
        """Load a token-classification model and its tokenizer by Hub id or folder.

        ``device=None`` takes the first GPU when there is one, as the pipeline does; the weights
        keep the precision they were saved in.
        """
        from transformers import AutoModelForTokenClassification, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(name_or_path), revision=revision)
        model = AutoModelForTokenClassification.from_pretrained(str(name_or_path), revision=revision, dtype="auto")
        return cls(model, tokenizer, device=_default_device() if device is None else device, batch_size=batch_size)

    @property
    def device(self) -> Any:
        return next(self.model.parameters()).device

    def __call__(self, texts: str | Sequence[str], batch_size: int | None = None) -> list:
        if isinstance(texts, str):
            return self([texts], batch_size=batch_size)[0]
        texts = list(texts)
        if not texts:
            return []
        encoded = self.tokenizer(texts, return_offsets_mapping=True, return_special_tokens_mask=True,
                                 return_attention_mask=False)
        lengths = [len(ids) for ids in encoded["input_ids"]]
        refuse_overlong(lengths, self.limit)
        tokens = _Tokens.of(encoded, lengths)
        tokens.tags, tokens.scores = self._classify(tokens, batch_size or self.batch_size)
        return self._entities(texts, tokens)

    # -- the model -----------------------------------------------------------------------------

    def _classify(self, tokens: _Tokens, batch_size: int) -> tuple[Any, Any]:
        """Each sub-token's best tag and its softmax probability, in the order of ``tokens``.

        The forward runs on batches of texts of similar length (longest first), each padded to
        its longest text, so padding costs little; outputs are put back in the input's order.
        """
        import numpy as np
        import torch

        tags = np.zeros(len(tokens.ids), dtype=np.int64)
        scores = np.zeros(len(tokens.ids), dtype=np.float32)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        order = np.argsort(-tokens.lengths, kind="stable")
        with torch.inference_mode():
            for begin in range(0, len(order), batch_size):
                rows = order[begin:begin + batch_size]
                lengths = tokens.lengths[rows]
                width = int(lengths.max())
                # every sub-token of the batch: its row, its column, its place in ``tokens``
                row = np.repeat(np.arange(len(rows)), lengths)
                column = np.arange(len(row)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
                place = tokens.firsts[rows][row] + column
                ids = np.full((len(rows), width), pad, dtype=np.int64)
                ids[row, column] = tokens.ids[place]
                inputs = {"input_ids": ids, "attention_mask": (np.arange(width)[None, :] < lengths[:, None])}
                if tokens.type_ids is not None:
                    inputs["token_type_ids"] = np.full((len(rows), width), self.tokenizer.pad_token_type_id,
                                                       dtype=np.int64)
                    inputs["token_type_ids"][row, column] = tokens.type_ids[place]
                inputs = {name: torch.from_numpy(array).to(self.device).long() for name, array in inputs.items()}
                output = self.model(**inputs)
                logits = output["logits"] if isinstance(output, dict) else output[0]
                best, tag = logits.float().softmax(dim=-1).max(dim=-1)
                tags[place] = tag.cpu().numpy()[row, column]
                scores[place] = best.cpu().numpy()[row, column]
        return tags, scores

    # -- logits to entities --------------------------------------------------------------------

    def _entities(self, texts: list[str], tokens: _Tokens) -> list[list[dict]]:
        """The pipeline's entities of each text, from the tags and scores of every sub-token of the call."""
        import numpy as np

        results: list[list[dict]] = [[] for _ in texts]
        kept = ~tokens.special
        text = np.repeat(np.arange(len(texts)), tokens.lengths)[kept]
        if not len(text):
            return results
        ids, starts, ends = tokens.ids[kept], tokens.offsets[kept, 0], tokens.offsets[kept, 1]
        tags, scores = tokens.tags[kept], tokens.scores[kept]

        # words: a sub-token that does not continue the one before it starts a word, as does each text's first
        starts_word = ~self._continues(texts, text, ids, starts, ends)
        starts_word[0] = True
        starts_word[1:] |= text[1:] != text[:-1]
        first = np.flatnonzero(starts_word)  # each word's first sub-token, whose tag and score it takes
        last = np.append(first[1:] - 1, len(ids) - 1)
        word_tag, word_text = tags[first], text[first]

        # entities: a word starts one at a B- tag, at a change of type, and at its text's start
        word_type = self._types[word_tag]
        starts_group = self._begins[word_tag].copy()
        starts_group[0] = True
        starts_group[1:] |= (word_type[1:] != word_type[:-1]) | (word_text[1:] != word_text[:-1])
        group_first = np.flatnonzero(starts_group)
        group_last = np.append(group_first[1:] - 1, len(first) - 1)
        group_score = np.add.reduceat(scores[first].astype(np.float64), group_first) / (group_last - group_first + 1)
        for group in np.flatnonzero(self._kept[word_tag[group_first]]):
            head, tail = group_first[group], group_last[group]
            owner = int(word_text[head])
            results[owner].append({
                "entity_group": self._groups[word_tag[head]],
                "score": float(group_score[group]),
                "word": self._word(texts[owner], ids, starts, ends, first[head:tail + 1], last[head:tail + 1]),
                "start": int(starts[first[head]]),
                "end": int(ends[last[tail]]),
            })
        return results

    def _continues(self, texts: list[str], text: Any, ids: Any, starts: Any, ends: Any) -> Any:
        """Whether each sub-token continues the word before it (the pipeline's ``is_subword``)."""
        import numpy as np

        if self._word_aware:  # its piece is longer than what it covers: it carries the continuing prefix
            unique, inverse = np.unique(ids, return_inverse=True)
            piece_length = np.array([len(piece) for piece in self.tokenizer.convert_ids_to_tokens(unique.tolist())],
                                    dtype=np.int64)
            continues = piece_length[inverse.reshape(-1)] != ends - starts
        else:  # it starts after the text's first character, with no space at or just before its start
            characters = np.array([len(t) for t in texts], dtype=np.int64)
            joined = "".join(texts).encode("utf-32-le", errors="surrogatepass")
            space = np.append(np.frombuffer(joined, dtype="<u4") == ord(" "), False)
            position = (np.cumsum(characters) - characters)[text] + starts
            before = space[np.maximum(position - 1, 0)]
            at = space[position] & (starts < characters[text])
            continues = (starts > 0) & ~before & ~at
        if self.tokenizer.unk_token_id is not None:
            continues &= ids != self.tokenizer.unk_token_id
        return continues

    def _word(self, text: str, ids: Any, starts: Any, ends: Any, firsts: Any, lasts: Any) -> str:
        """An entity's ``word`` as the pipeline decodes it: its words' pieces, word by word, then the words."""
        unk = self.tokenizer.unk_token_id
        words = []
        for first, last in zip(firsts.tolist(), lasts.tolist(), strict=True):
            pieces = self.tokenizer.convert_ids_to_tokens(ids[first:last + 1].tolist())
            pieces = [text[starts[k]:ends[k]] if ids[k] == unk else piece
                      for k, piece in zip(range(first, last + 1), pieces, strict=True)]
            words.append(self.tokenizer.convert_tokens_to_string(pieces))
        return self.tokenizer.convert_tokens_to_string(words)


class _Tokens:
    """Every sub-token of one call, flattened text after text (arrays), and where each text's begin."""

    def __init__(self, ids: Any, offsets: Any, special: Any, type_ids: Any, lengths: Any) -> None:
        import numpy as np

        self.ids, self.offsets, self.special, self.type_ids, self.lengths = ids, offsets, special, type_ids, lengths
        self.firsts = np.cumsum(lengths) - lengths
        self.tags: Any = None
        self.scores: Any = None

    @classmethod
    def of(cls, encoded: Any, lengths: list[int]) -> _Tokens:
        import numpy as np

        total = sum(lengths)

        def flat(column: str) -> Any:
            return np.fromiter(chain.from_iterable(encoded[column]), dtype=np.int64, count=total)

        offsets = np.fromiter(chain.from_iterable(chain.from_iterable(encoded["offset_mapping"])), dtype=np.int64,
                              count=2 * total).reshape(total, 2)
        type_ids = flat("token_type_ids") if "token_type_ids" in encoded else None
        return cls(flat("input_ids"), offsets, flat("special_tokens_mask").astype(bool), type_ids,
                   np.array(lengths, dtype=np.int64))


def _tag_type(tag: str) -> str:
    """The entity type a tag continues (transformers' ``get_tag``): ``B-X``/``I-X`` → ``X``; any other tag is itself."""
    return tag[2:] if tag.startswith(("B-", "I-")) else tag


def _torch_device(device: Any) -> Any:
    """``device`` as the pipeline reads it: ``-1`` the CPU, another int that GPU, else ``torch.device(device)``."""
    import torch

    if isinstance(device, int):
        return torch.device("cpu") if device < 0 else torch.device(f"cuda:{device}")
    return torch.device(device)


def _default_device() -> Any:
    """The first accelerator (CUDA, then Apple's MPS), else the CPU: where the pipeline runs when not told."""
    import torch

    if torch.cuda.is_available():
        return torch.device("cuda:0")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")
