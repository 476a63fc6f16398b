"""Corpora named by a *source spec*, loaded as ``datasets`` objects, split by language and mixed.

A source spec names one corpus, the same way in every command, config file and function:

* ``conll5:en``, ``xtreme40:de`` — a crop-hf builder and its config (:func:`crop_hf.data.load_dataset`;
  names that are not ours go on to ``datasets.load_dataset``);
* ``hub:NAME[:CONFIG]`` — straight to ``datasets.load_dataset`` (``hub:unimelb-nlp/wikiann:de``);
* ``disk:PATH`` or an existing folder — a corpus saved with ``save_to_disk`` (a synthesized
  corpus), or any folder ``datasets.load_dataset`` reads;
* ``?key=value&...`` at the end passes keyword arguments to the loader
  (``conll5:de?data_dir=/data/conll2003-de``);
* ``#en`` at the very end, where a command reads one side of a parallel corpus, names that side: its
  columns are the ones prefixed ``en_`` (:func:`split_side`; ``hinglish_top?data_dir=DIR#en``).

>>> parse_source_spec("conll5:de?data_dir=/data/conll2003-de")
SourceSpec(kind='builder', name='conll5', config='de', kwargs={'data_dir': '/data/conll2003-de'})
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crop_hf.data.features import label_names_of
from crop_hf.data.loading import BUILDERS, load_dataset
from crop_hf.errors import LANGUAGE_CODE, EmptyInputError, looks_local, reaching
from crop_hf.labels import rename_tag

logger = logging.getLogger(__name__)

__all__ = [
    "STANDARD_SPLITS",
    "NerSource",
    "SourceSpec",
    "WeightedMixSampler",
    "is_split_by_language",
    "join_languages",
    "length_grouped_order",
    "load_source",
    "load_spec",
    "mix_weights",
    "names_a_file",
    "parse_query",
    "parse_source_spec",
    "split_by_language",
    "split_side",
    "weighted_mix_loader",
]


@dataclass(frozen=True)
class SourceSpec:
    """A parsed source spec (see this module for the syntax)."""

    kind: str  # "builder" (crop_hf.load_dataset), "hub" (datasets.load_dataset) or "disk"
    name: str
    config: str | None = None
    kwargs: dict[str, Any] = field(default_factory=dict)


def _parse_value(value: str) -> Any:
    return {"true": True, "false": False}.get(value.lower(), value)


def parse_query(query: str, what: str, value: Callable[[str], Any] = _parse_value) -> dict[str, Any]:
    """The ``key=value&...`` after a ``?`` (source specs, projection methods) as a dict; ``what`` names the
    whole string in the error a malformed item raises, ``value`` reads each value.

    >>> parse_query("data_dir=/d&strict=false", "spec")
    {'data_dir': '/d', 'strict': False}
    """
    options = {}
    for item in filter(None, query.split("&")):
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise ValueError(f"{what}: expected key=value after '?', got {item!r}")
        options[key] = value(text)
    return options


def parse_source_spec(spec: str) -> SourceSpec:
    """Read ``[hub:|disk:]NAME[:CONFIG][?key=value&...]``; an existing folder is a ``disk`` source."""
    body, _, query = spec.partition("?")
    kwargs = parse_query(query, f"source spec {spec!r}")
    if body.startswith("disk:"):
        return SourceSpec("disk", body[len("disk:"):], None, kwargs)
    if Path(body).is_dir():
        return SourceSpec("disk", body, None, kwargs)
    kind = "builder"
    if body.startswith("hub:"):
        kind, body = "hub", body[len("hub:"):]
    name, _, config = body.partition(":")
    if not name:
        raise ValueError(f"source spec {spec!r} names no dataset")
    return SourceSpec(kind, name, config or None, kwargs)


def split_side(spec: str) -> tuple[str, str | None]:
    """``"spec#en"`` → ``("spec", "en")``: a source spec, folder or file, and the side of a parallel corpus to read.

    The side is the prefix of that side's columns (``en_tokens``, ``en_parse``: Hinglish-TOP's English
    ones), ``None`` when none is written. Only a language code after the last ``#`` is a side, so a
    path with a ``#`` elsewhere stays whole; the suffix is read the same after a file, a folder or a spec.

    >>> split_side("hinglish_top?data_dir=data/hinglish-top#en"), split_side("parses/en.tsv#en")
    (('hinglish_top?data_dir=data/hinglish-top', 'en'), ('parses/en.tsv', 'en'))
    >>> split_side("cstop"), split_side("runs/#3/data")
    (('cstop', None), ('runs/#3/data', None))
    """
    body, sep, side = spec.rpartition("#")
    if sep and (not side or LANGUAGE_CODE.fullmatch(side)):
        return body, side or None
    return spec, None


#: Endings of a text file's name (never of a source spec's): such a name that is not there is a missing file.
TEXT_FILE_SUFFIXES = (".tsv", ".txt", ".csv", ".tab")


def names_a_file(text: str | os.PathLike) -> bool:
    """Whether ``text`` is written as a file's path, not as a source spec: a local-looking path (``./``,
    ``/``, ``~``) or a name ending in ``.tsv``, ``.txt``, ... . Such a name that does not exist is a
    missing file to report as one, not a dataset to look up on the Hub.

    >>> names_a_file("parses/en.tsv"), names_a_file("./corpus"), names_a_file("hinglish_top?data_dir=/d")
    (True, True, False)
    """
    return looks_local(text) or str(text).partition("?")[0].lower().endswith(TEXT_FILE_SUFFIXES)


def load_spec(spec: str | SourceSpec, splits: Sequence[str] | None = None):
    """Load what a source spec names, as the loader returns it (``Dataset`` or ``DatasetDict``), unchecked.

    ``splits`` limits a crop-hf builder to those splits, so only their release files are read
    (``evaluate-ner --split test`` needs no train file); other sources load as they are.
    A Hub dataset that cannot be reached is an error naming it and saying whether offline mode is on.
    """
    import datasets

    if isinstance(spec, str):
        spec = parse_source_spec(spec)

    if spec.kind == "disk":
        path = Path(spec.name)
        if not path.exists():
            raise FileNotFoundError(f"no corpus at {path} (source spec 'disk:{spec.name}')")
        if (path / "dataset_dict.json").exists() or (path / "state.json").exists():
            return datasets.load_from_disk(str(path))
        return datasets.load_dataset(str(path), **spec.kwargs)
    if spec.kind == "builder":
        kwargs = dict(spec.kwargs)
        if splits is not None and spec.name in BUILDERS:
            kwargs.setdefault("splits", tuple(splits))
        return load_dataset(spec.name, spec.config, **kwargs)
    with reaching(spec.name, "dataset"):
        return datasets.load_dataset(spec.name, spec.config, **spec.kwargs)


@dataclass
class NerSource:
    """A loaded corpus: its spec, splits (``DatasetDict``), language and tag names after renaming."""

    spec: str
    splits: Any  # datasets.DatasetDict
    label_names: list[str]
    lang: str | None

    def split(self, name: str):
        """One split; ``train`` of a corpus split by language instead (synthesis output) joins all languages."""
        if name in self.splits:
            return self.splits[name]
        if name == "train" and is_split_by_language(self.splits):
            return join_languages(self.splits)
        raise KeyError(f"{self.spec}: no {name!r} split (has {', '.join(self.splits)})")

    def sentences(self, name: str, option: str):
        """:meth:`split`, refused when it holds no sentence (an :class:`~crop_hf.errors.EmptyInputError`
        naming ``option``, as the command line spells it, and the spec): read before any model loads."""
        rows = self.split(name)
        if not len(rows):
            raise EmptyInputError(f"{option} {self.spec}: no sentences in its {name!r} split")
        return rows


#: Split names that mark a ``DatasetDict`` as split train/validation/test rather than by language.
STANDARD_SPLITS = frozenset({"train", "validation", "test", "dev"})


def is_split_by_language(splits) -> bool:
    """Whether a ``DatasetDict`` is keyed by language (as corpus synthesis writes it) rather than by split."""
    return not STANDARD_SPLITS & set(splits)


def join_languages(splits):
    """All parts of a ``DatasetDict`` keyed by language, as one ``Dataset`` (in key order)."""
    from datasets import concatenate_datasets

    return concatenate_datasets([splits[key] for key in splits])


def load_source(spec: str, label_map: Mapping[str, str] | None = None, dataset=None,
                splits: Sequence[str] | None = None) -> NerSource:
    """Load a corpus for training or evaluation, checking it has ``tokens`` and ``ner_tags``.

    ``dataset`` (a ``Dataset`` or ``DatasetDict``) skips loading: ``spec`` is then only its name.
    A single ``Dataset`` becomes the ``train`` split. ``splits``: only these are needed (a crop-hf
    builder then reads only their files; see :func:`load_spec`).
    """
    import datasets

    parsed = None
    if dataset is None:
        parsed = parse_source_spec(spec)
        dataset = load_spec(parsed, splits=splits)
    if isinstance(dataset, datasets.Dataset):
        dataset = datasets.DatasetDict({"train": dataset})
    if not isinstance(dataset, datasets.DatasetDict):
        raise TypeError(f"{spec}: expected a Dataset or DatasetDict, got {type(dataset).__name__}")
    first = next(iter(dataset.values()))
    for column in ("tokens", "ner_tags"):
        if column not in first.column_names:
            raise KeyError(f"{spec}: corpus has no {column!r} column (columns: {first.column_names})")
    names: list[str] = []
    for split in dataset.values():
        for name in label_names_of(split)[0]:
            if name not in names:
                names.append(name)
    renamed = [rename_tag(name, label_map or {}) for name in names]
    lang = None
    if parsed is not None and parsed.kind != "disk" and parsed.config and parsed.config != "all":
        lang = parsed.config
    return NerSource(spec, dataset, renamed, lang)


def split_by_language(dataset, default: str) -> dict[str, Any]:
    """``{lang: rows}``: by the ``lang`` column when it holds several languages, else ``{default: dataset}``."""
    if "lang" not in dataset.column_names or len(dataset) == 0:
        return {default: dataset}
    langs = dataset.unique("lang")
    if len(langs) == 1:
        return {langs[0]: dataset}
    column = dataset["lang"]
    return {lang: dataset.select([i for i, value in enumerate(column) if value == lang]) for lang in sorted(langs)}


def mix_weights(sources: Sequence[str], weights: Sequence[float] | None) -> list[float]:
    """The sampling weight of each training source: ``weights`` (one per source), or 1 each.

    >>> mix_weights(["conll5:en", "disk:synthetic"], None)
    [1.0, 1.0]
    """
    weights = list(weights) if weights else [1.0] * len(sources)
    if len(weights) != len(sources):
        raise ValueError(f"{len(weights)} train_weights for {len(sources)} train_sources")
    return weights


def weighted_mix_loader(parts: Sequence[Any], weights: Sequence[float], *, batch_size: int, collate_fn: Any,
                        seed: int, group_by_length: bool = False):
    """A ``DataLoader`` over the concatenated ``parts`` (one ``Dataset`` per source), sampled by
    :class:`WeightedMixSampler` (``loader.sampler``: its ``len`` is the examples of one epoch).

    ``group_by_length``: batches of rows of similar ``input_ids`` length (see the sampler), so they pad less.
    """
    import torch
    from datasets import concatenate_datasets
    from torch.utils.data import DataLoader

    lengths = None
    if group_by_length:
        missing = [i for i, p in enumerate(parts) if "input_ids" not in p.column_names]
        if missing:
            raise ValueError(f"group_by_length needs an input_ids column; training source(s) {missing} have none")
        lengths = [len(ids) for p in parts for ids in p["input_ids"]]
    sampler = WeightedMixSampler([len(p) for p in parts], weights, seed=seed, lengths=lengths, batch_size=batch_size)
    if len(sampler) == 0:
        raise ValueError("the training mix is empty (check train_sources, train_weights and max_train_samples)")
    # Its own generator, so creating an iterator does not consume the global RNG that dropout uses:
    # a resumed run then draws the same dropout masks as an uninterrupted one.
    return DataLoader(concatenate_datasets(list(parts)), batch_size=batch_size, sampler=sampler,
                      collate_fn=collate_fn, generator=torch.Generator().manual_seed(seed))


def length_grouped_order(lengths: Sequence[int], batch_size: int, generator) -> list[int]:
    """Positions ``0 .. len(lengths) - 1`` in random batches of ``batch_size`` of similar ``lengths``.

    transformers' length grouping (the Trainer's ``group_by_length``: a random permutation cut into
    mega-batches of up to 50 batches, each sorted by length), then the batches shuffled: transformers
    leaves each mega-batch's batches in falling length order, 50 in a row, and steps should not come
    in runs of ever shorter rows (fairseq shuffles its length buckets too). Depends only on
    ``generator``'s state.
    """
    import torch
    from transformers.trainer_pt_utils import get_length_grouped_indices

    if not lengths:
        return []
    grouped = get_length_grouped_indices(list(lengths), batch_size, generator=generator)
    batches = [grouped[k : k + batch_size] for k in range(0, len(grouped), batch_size)]
    order = torch.randperm(len(batches), generator=generator).tolist()
    return [position for b in order for position in batches[b]]


class WeightedMixSampler:
    """Indices of a concatenation of corpora, each corpus sampled ``weight`` times per epoch on average.

    A weight ``w`` takes every sentence ``floor(w)`` times plus a fresh random ``w - floor(w)``
    fraction each epoch, so a corpus of ``n`` sentences contributes ``round(w * n)`` per epoch and
    every epoch has the same length. The order depends only on ``(seed, epoch)``: every process of
    a distributed run draws the same sequence (Accelerate then shards it), and a run resumed from
    a checkpoint sees the batches it would have seen.

    The epoch is chosen with :meth:`use_epoch` (deliberately not ``set_epoch``, which Accelerate
    calls with its own iteration counter on every fresh or skipped dataloader).

    With ``lengths`` (one per row of the concatenation) the epoch's rows are put in batches of
    ``batch_size`` rows of similar length (:func:`length_grouped_order`), so a batch pads to a
    length close to its own rows' (on Hinglish-TOP, 1.03x the real sub-words instead of 2.1x).

    >>> sampler = WeightedMixSampler([3, 2], [1.0, 0.5], seed=0)
    >>> len(sampler), sorted(i for i in sampler if i < 3)
    (4, [0, 1, 2])
    """

    def __init__(self, sizes: Sequence[int], weights: Sequence[float], seed: int = 0, shuffle: bool = True,
                 lengths: Sequence[int] | None = None, batch_size: int = 1):
        if len(sizes) != len(weights):
            raise ValueError(f"{len(weights)} sampling weights for {len(sizes)} sources")
        if any(w < 0 or not math.isfinite(w) for w in weights):
            raise ValueError(f"sampling weights must be finite and >= 0, got {list(weights)}")
        if lengths is not None and len(lengths) != sum(sizes):
            raise ValueError(f"{len(lengths)} lengths for {sum(sizes)} rows")
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.sizes, self.weights, self.seed, self.shuffle = list(sizes), list(weights), seed, shuffle
        self.lengths, self.batch_size = (list(lengths) if lengths is not None else None), batch_size
        self.epoch = 0
        self.offsets = [sum(self.sizes[:i]) for i in range(len(self.sizes))]

    def use_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return sum(math.floor(w) * n + round((w - math.floor(w)) * n) for n, w in zip(self.sizes, self.weights, strict=True))

    def indices(self) -> list[int]:
        import torch

        generator = torch.Generator().manual_seed(self.seed * 100_003 + self.epoch)
        chosen: list[int] = []
        for offset, n, w in zip(self.offsets, self.sizes, self.weights, strict=True):
            whole = math.floor(w)
            chosen += list(range(offset, offset + n)) * whole
            extra = round((w - whole) * n)
            if extra:
                chosen += (torch.randperm(n, generator=generator)[:extra] + offset).tolist()
        if self.shuffle:
            chosen = [chosen[i] for i in torch.randperm(len(chosen), generator=generator).tolist()]
        if self.lengths is not None:
            positions = length_grouped_order([self.lengths[i] for i in chosen], self.batch_size, generator)
            chosen = [chosen[k] for k in positions]
        return chosen

    def __iter__(self) -> Iterator[int]:
        return iter(self.indices())
