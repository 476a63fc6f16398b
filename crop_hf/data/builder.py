"""What crop-hf's dataset builders share: a cache that follows the code, finding release files, counted skips.

The builders (:mod:`~crop_hf.data.conll5`, :mod:`~crop_hf.data.xtreme40`, :mod:`~crop_hf.data.cstop`,
:mod:`~crop_hf.data.top`) are ``datasets.GeneratorBasedBuilder`` subclasses; this module imports
``datasets`` at the top, so ``crop_hf.data`` imports it only when a builder is used.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import logging
import os
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets

from crop_hf import labels, seqlogical
from crop_hf.data import readers
from crop_hf.data.features import ner_features
from crop_hf.data.readers import SkippedRecords, TaggedSentence, read_semantic_parses
from crop_hf.errors import MissingFilesError
from crop_hf.labels import LabelSet

logger = logging.getLogger(__name__)

__all__ = ["CropBuilder", "CropBuilderConfig", "NerBuilder", "SemanticParseBuilder", "SemanticParseConfig", "find_split_files"]

@dataclass
class CropBuilderConfig(datasets.BuilderConfig):
    """Options every crop-hf builder takes.

    Args:
        skip_bad_records: drop malformed sentences or rows (counted by reason and logged as a
            warning) instead of raising an error that names the file and line.
        splits: build only these splits (``None``: all), so that loading one split needs only its
            files (NorNE with only the dev and test files, CoNLL with only the test file).
            :func:`crop_hf.data.load_dataset` sets it from ``split``.
    """

    skip_bad_records: bool = False
    splits: tuple[str, ...] | None = None


def _source_hash(cls: type) -> str:
    """A digest of the modules that decide a builder's rows, so editing them builds a fresh cache."""
    digest = hashlib.sha256()
    modules = {sys.modules[c.__module__] for c in cls.__mro__ if c.__module__.startswith("crop_hf.")}
    modules |= {sys.modules[name] for name in list(sys.modules) if name.startswith(readers.__name__ + ".")}
    for module in sorted(modules | {labels, seqlogical, readers}, key=lambda m: m.__name__):
        digest.update(inspect.getsource(module).encode())
    return digest.hexdigest()[:16]


def _files_hash(data_dir: str | os.PathLike | None) -> str:
    """A digest of every file under ``data_dir``: relative path, size, modification and status-change time.

    Part of the cache key, so that editing, adding or replacing a release file builds a fresh
    cache instead of returning the rows of the old file. The status-change time (``st_ctime_ns``
    on POSIX) catches what size and modification time miss: a same-size edit by a tool that
    restores the old modification time (``cp -p``, ``rsync -a``, unpacking an archive). Stat
    only: nothing is read.
    """
    digest = hashlib.sha256()
    if data_dir is None or "://" in str(data_dir) or not Path(data_dir).is_dir():
        return ""
    root = Path(data_dir)
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        stat = path.stat()
        digest.update(f"{path.relative_to(root).as_posix()}\0{stat.st_size}\0{stat.st_mtime_ns}\0{stat.st_ctime_ns}\n"
                      .encode())
    return digest.hexdigest()[:16]


class CropBuilder(datasets.GeneratorBasedBuilder):
    """Base of crop-hf's builders.

    The cache key covers everything that decides the rows: the builder's options (``datasets``
    puts them in the config id), the source of the builder and its readers (as ``datasets`` does
    for loading scripts, so a cache written by an older version of the code is not reused) and
    the path, size, modification and status-change time of every file under ``data_dir`` (so an
    edited release file is read again). After :meth:`download_and_prepare`,
    :attr:`skipped_records` maps each split to what ``skip_bad_records`` dropped. A split in which
    every record was skipped is an error naming the files and the counts, raised while the split
    is generated, so no cache is written for it.
    """

    BUILDER_CONFIG_CLASS = CropBuilderConfig
    CITATION = ""
    HOMEPAGE = ""

    def __init_subclass__(cls, **kwargs) -> None:
        """Count what every builder's ``_generate_examples`` yields per split (for :meth:`_report_skipped`)."""
        super().__init_subclass__(**kwargs)
        generate = cls.__dict__.get("_generate_examples")
        if generate is None or getattr(generate, "_counts_examples", False):
            return

        @functools.wraps(generate)
        def counted(self, *args, **gen_kwargs):
            split = str(gen_kwargs.get("split"))
            for item in generate(self, *args, **gen_kwargs):
                self._produced[split] += 1
                yield item

        counted._counts_examples = True
        cls._generate_examples = counted

    def __init__(self, *args, **kwargs) -> None:
        if kwargs.get("hash") is None:
            data_dir = kwargs.get("data_dir") or getattr(kwargs.get("config"), "data_dir", None)
            files = _files_hash(data_dir)
            kwargs["hash"] = _source_hash(type(self)) + (f"-{files}" if files else "")
        if kwargs.get("data_files") is not None:
            raise ValueError(f"{type(self).__name__} reads a release from `data_dir`; `data_files` is not supported")
        super().__init__(*args, **kwargs)
        self.skipped_records: dict[str, SkippedRecords] = {}
        self._produced: Counter = Counter()

    def _features(self) -> datasets.Features:
        raise NotImplementedError

    def _info(self) -> datasets.DatasetInfo:
        """Description (the first paragraph of the builder module's docstring), features, citation."""
        return datasets.DatasetInfo(
            description=(sys.modules[type(self).__module__].__doc__ or "").split("\n\n")[0],
            features=self._features(),
            homepage=self.HOMEPAGE,
            citation=self.CITATION,
        )

    def _only(self, per_split: Mapping[str, Any]) -> dict[str, Any]:
        """``per_split`` restricted to the splits asked for (config ``splits``); an unknown one is an error."""
        if self.config.splits is None:
            return dict(per_split)
        unknown = [split for split in self.config.splits if split not in per_split]
        if unknown:
            raise ValueError(f"{self.name}/{self.config.name} has no split {', '.join(map(repr, unknown))}; "
                             f"its splits are {', '.join(per_split)}")
        return {split: value for split, value in per_split.items() if split in self.config.splits}

    @property
    def _errors(self) -> str:
        return "skip" if self.config.skip_bad_records else "strict"

    def _skipped_for(self, split: str) -> SkippedRecords:
        return self.skipped_records.setdefault(str(split), SkippedRecords())

    def _report_skipped(self, split: str) -> None:
        """Log what the split skipped; stop with an error naming files and counts if nothing is left.

        ``datasets`` cannot store an empty split (it fails later with "Instruction 'train'
        corresponds to no data"); raising here, inside generation, also leaves no cache behind.
        """
        skipped = self.skipped_records.get(str(split))
        if skipped is not None and skipped.total:
            logger.warning("%s/%s %s: %s", self.name, self.config.name, split, skipped)
        if self._produced[str(split)] == 0:
            where = f"{self.name}/{self.config.name} {split} split"
            if skipped is not None and skipped.total:
                raise ValueError(f"{where}: every record was skipped as malformed, nothing is left to load "
                                 f"(files: {', '.join(sorted(skipped.files))}; {skipped})")
            raise ValueError(f"{where}: the release files hold no records")


def find_split_files(
    folder: str | os.PathLike,
    candidates: Mapping[str, Sequence[str]],
    what: str,
) -> dict[str, str]:
    """Find one file per split in ``folder`` (or one folder level below it), trying names in order.

    ``candidates`` maps a split to the file names releases use for it, so both layouts of a corpus
    work (``eng.testa`` or ``valid.txt``); only the splits in ``candidates`` are looked for (a
    builder passes the ones asked for, :meth:`CropBuilder._only`). A missing folder or split raises
    :class:`~crop_hf.errors.MissingFilesError` naming the folder and, for each missing split, the
    names that were looked for: one message shape for every builder.
    """
    root = Path(folder)
    if not root.is_dir():
        raise MissingFilesError(what, root, candidates, hint=DATA_DIR_HINT)
    places = [root, *sorted(p for p in root.iterdir() if p.is_dir())]
    found: dict[str, str] = {}
    missing: dict[str, Sequence[str]] = {}
    for split, names in candidates.items():
        path = next((place / name for name in names for place in places if (place / name).is_file()), None)
        if path is None:
            missing[split] = names
        else:
            found[split] = str(path)
    if missing:
        raise MissingFilesError(what, root, missing)
    return found


#: What a missing folder's message suggests.
DATA_DIR_HINT = "Pass data_dir=<the folder of the extracted release>"


@dataclass
class SemanticParseConfig(CropBuilderConfig):
    """Options of the TOP-style builders.

    Args:
        domains: keep only utterances of these domains (``None``: all), e.g. ``("weather",)``.
        nested: what to do with parses that have intents inside slots (TOP): ``"flatten"`` tags each
            top-level slot over all its words and keeps the full tree in ``parse``; ``"skip"`` drops
            the row, counted under ``"nested"`` in :attr:`skipped_records`; ``"error"`` raises.
    """

    domains: Sequence[str] | None = None
    nested: str = "flatten"


class NerBuilder(CropBuilder):
    """Base of the NER builders: ``id``, ``tokens``, ``ner_tags`` (``ClassLabel`` over :attr:`LABELS`), ``lang``."""

    LABELS: LabelSet
    VERSION = datasets.Version("1.0.0")

    def _features(self) -> datasets.Features:
        return ner_features(self.LABELS.names, id=True)

    def _examples(self, sentences: Iterable[TaggedSentence], lang: str, start: int = 0):
        """``(key, example)`` pairs numbered from ``start``; tags become ids here, not in ``datasets``."""
        encode = self.LABELS.label2id
        for index, sentence in enumerate(sentences, start):
            yield index, {
                "id": str(index),
                "tokens": sentence.tokens,
                "ner_tags": [encode[tag] for tag in sentence.tags],
                "lang": sentence.lang or lang,
            }


class SemanticParseBuilder(CropBuilder):
    """Base of :class:`~crop_hf.data.cstop.Cstop` and :class:`~crop_hf.data.top.Top`: identical features, so they concatenate."""

    BUILDER_CONFIG_CLASS = SemanticParseConfig
    VERSION = datasets.Version("1.0.0")

    def _features(self) -> datasets.Features:
        return datasets.Features(
            {
                "id": datasets.Value("string"),
                "utterance": datasets.Value("string"),
                "tokens": datasets.Sequence(datasets.Value("string")),
                "intent": datasets.Value("string"),
                "slot_tags": datasets.Sequence(datasets.Value("string")),
                "parse": datasets.Value("string"),
                "domain": datasets.Value("string"),
            }
        )

    def _generate_examples(self, files: Sequence[str], split: str):
        domains = {d.lower() for d in self.config.domains} if self.config.domains else None
        skipped = self._skipped_for(split)
        index = 0
        seen: set[str] = set()
        for path in files:
            for record in read_semantic_parses(path, nested=self.config.nested, errors=self._errors, skipped=skipped):
                seen.add(record.domain)
                if domains is not None and record.domain not in domains:
                    continue
                yield index, {
                    "id": str(index),
                    "utterance": record.utterance,
                    "tokens": record.tokens,
                    "intent": record.intent,
                    "slot_tags": record.slot_tags,
                    "parse": record.parse,
                    "domain": record.domain,
                }
                index += 1
        if domains is not None and index == 0:
            # datasets cannot store an empty split; say why it is empty instead of "corresponds to no data".
            raise ValueError(f"{self.name}/{self.config.name}: no utterance of domains {sorted(domains)} in the "
                             f"{split} split; its domains are {sorted(seen)}")
        self._report_skipped(split)
