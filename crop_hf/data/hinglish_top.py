"""Hinglish-TOP: code-switched Hindi-English task-oriented parses, each beside its English original.

The human-annotated part of Google's Hinglish-TOP release (Agarwal et al., 2022): files
``train.tsv`` and ``validation.tsv`` (and ``test.tsv`` where a user has it) with a header
``en_query cs_query en_parse cs_parse domain``. Parses are in TOP's bracket notation and some nest
an intent inside a slot (380 of 2,993 train rows, 189 of 1,390 validation rows).

Features: the code-switched side in the columns the other semantic-parse builders use (``id``,
``utterance``, ``tokens``, ``intent``, ``slot_tags``, ``parse``, ``domain``), a ``nested`` flag,
and the English side beside it (``en_utterance``, ``en_tokens``, ``en_intent``, ``en_slot_tags``,
``en_parse``, ``en_nested``), and ``source``, the row's ``file:line`` (the file's name within
``data_dir``), for messages about the row later (a tree a parser cannot represent). ``tokens`` are
the words of the parse; ``slot_tags`` are IOB2 over the top-level slots. A nested tree is kept,
never dropped silently: its slot tags span every word under each top-level slot, ``parse`` holds
the whole tree and ``nested`` is true, so a flat model scores such rows as wrong while a
hierarchical one (:mod:`crop_hf.modeling`, ``max_intent_depth``) trains on and predicts the whole
tree; ``nested="skip"`` drops them, counted.

Example (``data_dir`` holding the two files)::

    >>> import crop_hf  # doctest: +SKIP
    >>> ds = crop_hf.load_dataset("hinglish_top", data_dir="Hinglish-TOP/Human Annotated Data")  # doctest: +SKIP
    >>> ds["train"].num_rows, sum(ds["train"]["nested"])  # doctest: +SKIP
    (2993, 380)
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

import datasets

from crop_hf.data.builder import SemanticParseBuilder, SemanticParseConfig, find_split_files
from crop_hf.data.readers import FormatError, SkippedRecords, iter_lines
from crop_hf.data.readers.io import undecodable_error
from crop_hf.seqlogical import ParseError, flatten_top_level, parse

logger = logging.getLogger(__name__)

__all__ = ["HINGLISH_TOP_COLUMNS", "HINGLISH_TOP_FILES", "HinglishParse", "HinglishTop", "read_hinglish_top"]

#: The header of the release's files (column order may differ; names may not).
HINGLISH_TOP_COLUMNS = ("en_query", "cs_query", "en_parse", "cs_parse", "domain")

#: split -> file names, first match wins.
HINGLISH_TOP_FILES: dict[str, tuple[str, ...]] = {
    "train": ("train.tsv",),
    "validation": ("validation.tsv", "valid.tsv", "dev.tsv", "eval.tsv"),
}

_CITATION = """\
@inproceedings{agarwal-etal-2022-cst5,
  title = "{CST5}: Data Augmentation for Code-Switched Semantic Parsing",
  author = "Agarwal, Anmol and Gupta, Jigar and Goel, Rahul and Upadhyay, Shyam and Joshi, Pankaj and Aravamudhan, Rengarajan",
  booktitle = "Proceedings of the Workshop on Task-Oriented Dialogue (TODS)", year = "2023"}
"""


@dataclass
class HinglishParse:
    """One side (code-switched or English) of a Hinglish-TOP row, flattened for joint tagging."""

    utterance: str
    tokens: list[str]
    intent: str
    slot_tags: list[str]
    parse: str
    nested: bool


def _side(path: str, number: int, query: str, parse_text: str, column: str) -> HinglishParse:
    try:
        tree = parse(parse_text)
    except ParseError as error:
        raise FormatError(path, number, f"a well-formed bracket parse in {column}", str(error), "parse") from None
    if tree.kind != "IN":
        raise FormatError(path, number, f"a parse whose root is an intent '[IN:' in {column}", parse_text, "parse")
    try:
        flat, nested = flatten_top_level(tree)
    except ValueError as error:  # an empty slot
        raise FormatError(path, number, f"slots holding words in {column}", str(error), "parse") from None
    return HinglishParse(query, flat.tokens, tree.name, flat.slot_tags, str(tree), nested)


def read_hinglish_top(
    source: str | os.PathLike,
    *,
    errors: Literal["strict", "skip"] = "strict",
    skipped: SkippedRecords | None = None,
) -> Iterator[tuple[int, HinglishParse, HinglishParse, str]]:
    """Yield ``(line, code_switched, english, domain)`` for each row of a Hinglish-TOP TSV file.

    The header must name the five columns of :data:`HINGLISH_TOP_COLUMNS` (any order). A row with
    the wrong number of columns or a malformed parse raises :class:`~crop_hf.data.readers.FormatError`
    naming the file and line; with ``errors="skip"`` it is dropped and counted in ``skipped``
    (under ``"columns"``, ``"parse"`` or, for a line that is not valid UTF-8, ``"encoding"``) instead.
    """
    if errors not in ("strict", "skip"):
        raise ValueError(f"errors must be 'strict' or 'skip', got {errors!r}")
    path = os.fspath(source)
    skipped = skipped if skipped is not None else SkippedRecords()
    before = skipped.total
    where: dict[str, int] | None = None
    for number, text in iter_lines(path, "utf-8"):
        if text is None:  # not valid UTF-8
            error = undecodable_error(path, number, "UTF-8")
            if errors == "strict" or where is None:  # without the header nothing can be read
                raise error
            skipped.add(error)
            continue
        if not text.strip():
            continue
        fields = text.split("\t")
        if where is None:
            names = [f.strip().lower() for f in fields]
            missing = [c for c in HINGLISH_TOP_COLUMNS if c not in names]
            if missing:  # without the header nothing can be read: always an error
                raise FormatError(path, number, "a header naming the columns " + " ".join(HINGLISH_TOP_COLUMNS),
                                  text, "header")
            where = {c: names.index(c) for c in HINGLISH_TOP_COLUMNS}
            width = len(names)
            continue
        try:
            if len(fields) != width:
                raise FormatError(path, number, f"{width} tab-separated columns", text, "columns")
            code_switched = _side(path, number, fields[where["cs_query"]].strip(), fields[where["cs_parse"]].strip(),
                                  "cs_parse")
            english = _side(path, number, fields[where["en_query"]].strip(), fields[where["en_parse"]].strip(),
                            "en_parse")
        except FormatError as error:
            if errors == "strict":
                raise
            skipped.add(error)
            continue
        yield number, code_switched, english, fields[where["domain"]].strip().lower()
    if where is None:
        raise FormatError(path, 1, "a header naming the columns " + " ".join(HINGLISH_TOP_COLUMNS), "", "header")
    if skipped.total > before:
        logger.warning("%s: skipped %d malformed rows; so far %s", path, skipped.total - before, skipped)


class HinglishTop(SemanticParseBuilder):
    """Hinglish-TOP, code-switched side in CSTOP's features, English side in ``en_*`` columns."""

    CITATION = _CITATION
    HOMEPAGE = "https://github.com/google-research-datasets/Hinglish-TOP-Dataset"
    BUILDER_CONFIGS: ClassVar[list] = [
        SemanticParseConfig(name="default", description="Hinglish-TOP human-annotated parses (code-switched + English)")
    ]
    DEFAULT_CONFIG_NAME = "default"

    def _features(self) -> datasets.Features:
        strings = datasets.Sequence(datasets.Value("string"))
        features = dict(super()._features())
        features["nested"] = datasets.Value("bool")
        for name in ("utterance", "tokens", "intent", "slot_tags", "parse"):
            features[f"en_{name}"] = strings if name in ("tokens", "slot_tags") else datasets.Value("string")
        features["en_nested"] = datasets.Value("bool")
        features["source"] = datasets.Value("string")
        return datasets.Features(features)

    def _split_generators(self, dl_manager) -> list[datasets.SplitGenerator]:
        if not self.config.data_dir:
            raise FileNotFoundError(
                "hinglish_top: pass data_dir=<folder holding train.tsv and validation.tsv> (the release's "
                "'Dataset/Human Annotated Data' folder)")
        candidates = dict(HINGLISH_TOP_FILES)
        if any(os.path.isfile(os.path.join(self.config.data_dir, name)) for name in ("test.tsv",)):
            candidates["test"] = ("test.tsv",)
        files = find_split_files(self.config.data_dir, candidates, "hinglish_top")
        return [datasets.SplitGenerator(name=split, gen_kwargs={"files": [path], "split": split})
                for split, path in files.items()]

    def _generate_examples(self, files: Sequence[str], split: str):
        if self.config.nested not in ("flatten", "skip", "error"):
            raise ValueError(f"nested must be 'flatten', 'skip' or 'error', got {self.config.nested!r}")
        domains = {d.lower() for d in self.config.domains} if self.config.domains else None
        skipped = self._skipped_for(split)
        index = 0
        seen: set[str] = set()
        for path in files:
            for line, cs, en, domain in read_hinglish_top(path, errors=self._errors, skipped=skipped):
                seen.add(domain)
                if domains is not None and domain not in domains:
                    continue
                if cs.nested and self.config.nested != "flatten":
                    error = FormatError(path, line, "a parse without intents nested in slots", cs.parse, "nested")
                    if self.config.nested == "error":
                        raise error
                    skipped.add(error)
                    continue
                yield index, {
                    "id": str(index), "utterance": cs.utterance, "tokens": cs.tokens, "intent": cs.intent,
                    "slot_tags": cs.slot_tags, "parse": cs.parse, "domain": domain, "nested": cs.nested,
                    "en_utterance": en.utterance, "en_tokens": en.tokens, "en_intent": en.intent,
                    "en_slot_tags": en.slot_tags, "en_parse": en.parse, "en_nested": en.nested,
                    "source": f"{os.path.basename(path)}:{line}",  # no local folders in published rows
                }
                index += 1
        if index == 0:
            raise ValueError(f"{self.name}: no row left in the {split} split (domains present: {sorted(seen)})")
        self._report_skipped(split)
