"""Marker-annotated parallel data: the training data of a labeled sequence translation model.

CroP (section 3.3) fine-tunes its translation model on parallel sentences in which aligned phrase
pairs are wrapped in the *same* markers on both sides, so that the model learns to carry markers
across. This module builds such data from any sentence-aligned corpus:

1. read sentence pairs (two text files, a ``datasets.Dataset`` with a ``translation`` column, or
   two text columns), dropping and counting empty pairs and pairs that already hold a marker;
2. word-align each language pair with :class:`crop_hf.alignment.EflomalAligner` over the whole
   corpus (up to ``align_chunk_size`` pairs at a time) and symmetrize with grow-diag-final-and;
3. extract the consistent phrase pairs (Koehn et al., 2003: no alignment link leaves the box of
   a phrase pair) of at most ``max_phrase_length`` words per side;
4. with probability ``slot_prob`` choose up to ``max_slots`` non-overlapping phrase pairs, with at
   least ``min_gap`` words between chosen phrases on both sides, and wrap both sides of each in
   the same marker; slot numbers are drawn at random, so that a model learns to copy numbers,
   not positions.

Words are ``\\w+`` runs and single punctuation characters (:func:`words`); markers are inserted at
their character offsets, so the text between markers keeps its original spacing.

>>> consistent_phrase_pairs([(0, 0), (1, 2), (2, 1)], 3, 3, max_length=2)  # words 1 and 2 swap places
[(0, 1, 0, 1), (1, 2, 2, 3), (1, 3, 1, 3), (2, 3, 1, 2)]
>>> mark_pair("a red cat", "eine rote Katze", [(2, 5, 5, 9), (6, 9, 10, 15)], slots=[1, 0]).target
'eine __SLOT1__ rote __SLOT1__ __SLOT0__ Katze __SLOT0__'
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import random
import re
import shutil
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from crop_hf.alignment import EflomalAligner
from crop_hf.arguments import changes_results
from crop_hf.data.readers.words import read_function_words
from crop_hf.engine.jobs import CorpusJob, ShardResult, result_arguments, run_job
from crop_hf.engine.shards import (
    atomic_write_bytes,
    process_state,
    read_shard_rows,
    row_descriptions,
    save_dataset_dict,
    shard_statistics,
    shards_of,
)
from crop_hf.errors import EmptyInputError
from crop_hf.hub import size_category
from crop_hf.markers import MarkerStyle, get_marker_style
from crop_hf.tables import format_table

__all__ = [
    "DROP_REASONS",
    "DroppedPair",
    "MarkParallelJob",
    "MarkParallelRun",
    "MarkedPair",
    "MarkedRow",
    "MarkingConfig",
    "MarkingResult",
    "ParallelPair",
    "consistent_phrase_pairs",
    "mark_pair",
    "mark_parallel",
    "marked_parallel_card",
    "pairs_from_dataset",
    "pairs_from_files",
    "read_function_words",
    "remark",
    "select_phrase_pairs",
    "without_function_word_edges",
    "words",
]

logger = logging.getLogger(__name__)

#: Why a sentence pair is dropped before alignment.
DROP_REASONS: dict[str, str] = {
    "empty": "one side is empty or whitespace only",
    "has_marker": "one side already contains a marker of the chosen style",
    "too_long": "one side has more words than max_words",
}

#: Letters and digits joined by single hyphens, apostrophes, periods, ampersands or slashes are one
#: word ("T-Shirt", "E-Mails", "girl's", "3.5"); any other non-space character is a word of its own.
#: A slot boundary falls between words only, so no marker ever lands inside "T-Shirt".
_WORD = re.compile(r"\w+(?:[-\u2010\u2011'\u2019.&/]\w+)*|[^\w\s]")

#: A phrase pair as character spans: ``(source_start, source_end, target_start, target_end)``.
PhrasePair = tuple[int, int, int, int]


def words(text: str) -> list[tuple[int, int]]:
    """Character spans of the words of ``text``: ``\\w+`` runs, joined into one word by a single hyphen,
    apostrophe, period, ampersand or slash between them, and single other non-space characters.

    Words are what gets aligned, what phrase lengths count and where slot boundaries may fall, so a
    compound such as ``T-Shirt`` is marked whole or not at all.

    >>> text = "Zwei Männer im T-Shirt, im Freien."
    >>> [text[s:e] for s, e in words(text)]
    ['Zwei', 'Männer', 'im', 'T-Shirt', ',', 'im', 'Freien', '.']
    """
    return [match.span() for match in _WORD.finditer(text)]


@dataclass(frozen=True)
class ParallelPair:
    """One sentence pair and where it came from."""

    source: str
    target: str
    src_lang: str
    tgt_lang: str
    origin: str = ""
    line: int = 0


@dataclass(frozen=True)
class MarkedPair:
    """Both sides of a pair with markers, and the marked phrase pairs (``slot``, ``source``, ``target``)."""

    source: str
    target: str
    slots: tuple[dict[str, Any], ...]


@dataclass
class MarkingConfig:
    """How phrase pairs are chosen and marked (the ``crop-hf mark-parallel`` options besides the inputs).

    The fields marked with ``changes_results`` change the marked rows: they make a run's fingerprint
    (:func:`crop_hf.engine.jobs.result_arguments`), so a rerun with other values starts afresh.
    ``shard_size`` only cuts the same rows into other files.
    """

    slot_prob: float = field(
        default=0.85, metadata=changes_results({"help": "Probability that a sentence pair gets markers (CroP: 0.85)."}))
    max_slots: int = field(
        default=14, metadata=changes_results({"help": "Most marked phrase pairs per sentence pair (CroP: 14)."}))
    max_phrase_length: int = field(
        default=4, metadata=changes_results({"help": "Most words per side of a phrase pair."}))
    min_gap: int = field(
        default=1, metadata=changes_results({"help": "Fewest words between two chosen phrases, on both sides "
                                                     "(0 allows adjacent slots)."}))
    random_slot_numbers: bool = field(
        default=True, metadata=changes_results({"help": "Number slots at random (else left to right in the source)."}))
    marker_style: Literal["crop", "easyproject"] = field(
        default="crop", metadata=changes_results({"help": "crop: __SLOT{i}__ on both sides; easyproject: [ ... ]."}))
    function_words_file: str | None = field(
        default=None,
        metadata=changes_results({
                  "help": "A file of closed-class words (articles, prepositions, pronouns...), one 'lang<TAB>word' "
                          "per line: no slot begins or ends with one of its side's words, so that slots look like "
                          "entity mentions (default: any phrase pair)."}))
    both_directions: bool = field(
        default=False, metadata=changes_results({"help": "Also emit every pair target-to-source."}))
    max_words: int = field(
        default=200, metadata=changes_results({"help": "Drop pairs with a side longer than this (words)."}))
    align_chunk_size: int = field(
        default=200_000,
        metadata=changes_results({
                  "help": "Sentence pairs aligned together (eflomal learns from the whole chunk; memory grows with "
                          "it); a chunk is also the shard a rerun resumes from."}))
    shard_size: int = field(default=10_000, metadata={"help": "Rows per parquet shard written."})
    seed: int = field(
        default=0, metadata=changes_results({"help": "Seed of phrase and slot-number choices (same seed, same data)."}))

    def __post_init__(self) -> None:
        if not 0.0 <= self.slot_prob <= 1.0:
            raise ValueError(f"slot_prob must be within [0, 1], got {self.slot_prob}")
        for name in ("max_slots", "max_phrase_length", "align_chunk_size", "shard_size", "max_words"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.min_gap < 0:
            raise ValueError(f"min_gap must be 0 or more, got {self.min_gap}")
        get_marker_style(self.marker_style)
        if self.function_words_file is not None:
            read_function_words(self.function_words_file)  # a bad file fails here, before any alignment


# --- reading -------------------------------------------------------------------------------------


def _open_text(path: Path):
    return gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else path.open(encoding="utf-8")


def _count_lines(path: Path) -> tuple[int, int]:
    """The lines of a text file, and those that are not blank."""
    lines = sentences = 0
    with _open_text(path) as handle:
        for line in handle:
            lines += 1
            sentences += bool(line.strip())
    return lines, sentences


def pairs_from_files(source_file: str | Path, target_file: str | Path, src_lang: str, tgt_lang: str) -> Iterator[ParallelPair]:
    """Stream the line pairs of two aligned text files (``.gz`` read as gzip).

    Before the first pair is given out, both files are read: a missing file is a ``FileNotFoundError``,
    one without a sentence (blank lines skipped) an :class:`~crop_hf.errors.EmptyInputError`, each
    naming the file and its option (``--source_files``, ``--target_files``); files of different
    lengths are a ``ValueError`` naming both files and both line counts.
    """
    source_file, target_file = Path(source_file), Path(target_file)
    counts = []
    for path, option in ((source_file, "--source_files"), (target_file, "--target_files")):
        if not path.is_file():
            raise FileNotFoundError(f"{option}: no file {path}")
        lines, sentences = _count_lines(path)
        if not sentences:
            raise EmptyInputError(f"{option} {path}: no sentences (blank lines are skipped)")
        counts.append(lines)
    n_source, n_target = counts
    if n_source != n_target:
        raise ValueError(f"--source_files, --target_files: {source_file} has {n_source} lines but {target_file} has "
                         f"{n_target}: the files of a parallel corpus must be line-aligned")

    def generate() -> Iterator[ParallelPair]:
        with _open_text(source_file) as src, _open_text(target_file) as tgt:
            for number, (s, t) in enumerate(zip(src, tgt, strict=True), start=1):
                yield ParallelPair(s.rstrip("\n"), t.rstrip("\n"), src_lang, tgt_lang, str(source_file), number)

    return generate()


def pairs_from_dataset(
    dataset: Iterable[Mapping[str, Any]],
    language_pairs: Sequence[tuple[str, str]] | None = None,
    *,
    source_column: str | None = None,
    target_column: str | None = None,
    origin: str = "dataset",
) -> Iterator[ParallelPair]:
    """Sentence pairs of a ``datasets.Dataset`` (or any iterable of rows).

    * a ``translation`` column of ``{"en": ..., "de": ...}`` dicts: one pair per row and
      language pair in ``language_pairs`` (default: every ordered pair of the first row's
      languages taken once, in column order, e.g. ``[("en", "de")]``);
    * ``source_column``/``target_column``: two text columns; ``language_pairs`` then holds the
      one ``(src_lang, tgt_lang)`` they are in.
    """
    rows = iter(dataset)
    if source_column or target_column:
        if not (source_column and target_column) or not language_pairs or len(language_pairs) != 1:
            raise ValueError("two text columns need source_column, target_column and one (src_lang, tgt_lang)")
        (src_lang, tgt_lang), = language_pairs
        for index, row in enumerate(rows):
            yield ParallelPair(str(row[source_column] or ""), str(row[target_column] or ""), src_lang, tgt_lang,
                               origin, index)
        return
    first = next(rows, None)
    if first is None:
        return
    if "translation" not in first:
        raise ValueError(f"{origin}: expected a 'translation' column or source_column/target_column; "
                         f"columns are {sorted(first)}")
    if not language_pairs:
        langs = list(first["translation"])
        language_pairs = [(langs[i], langs[j]) for i in range(len(langs)) for j in range(i + 1, len(langs))]
    for index, row in enumerate(_chain(first, rows)):
        translation = row["translation"]
        for src_lang, tgt_lang in language_pairs:
            if src_lang not in translation or tgt_lang not in translation:
                raise ValueError(f"{origin} row {index}: no {src_lang!r} or {tgt_lang!r} in its translation "
                                 f"(it has {sorted(translation)})")
            yield ParallelPair(str(translation[src_lang] or ""), str(translation[tgt_lang] or ""), src_lang, tgt_lang,
                               origin, index)


def _chain(first, rest):
    yield first
    yield from rest


# --- phrase pairs --------------------------------------------------------------------------------


def consistent_phrase_pairs(
    alignment: Iterable[tuple[int, int]], n_source: int, n_target: int, max_length: int
) -> list[tuple[int, int, int, int]]:
    """Phrase pairs ``(i1, i2, j1, j2)`` (word indices, ends exclusive) consistent with ``alignment``.

    Koehn et al. (2003): a pair is consistent when at least one link lies inside its box and no
    link connects a word inside the box with a word outside it. Only the tight pairs are
    returned (unaligned boundary words are not added), at most ``max_length`` words a side.

    >>> consistent_phrase_pairs([(0, 1), (1, 0)], 2, 2, 2)
    [(0, 1, 1, 2), (0, 2, 0, 2), (1, 2, 0, 1)]
    """
    links = sorted(set(alignment))
    by_source: dict[int, list[int]] = {}
    by_target: dict[int, list[int]] = {}
    for i, j in links:
        if not (0 <= i < n_source and 0 <= j < n_target):
            raise ValueError(f"link {i}-{j} is outside a {n_source}x{n_target} sentence pair")
        by_source.setdefault(i, []).append(j)
        by_target.setdefault(j, []).append(i)
    found = []
    for i1 in range(n_source):
        for i2 in range(i1 + 1, min(n_source, i1 + max_length) + 1):
            targets = [j for i in range(i1, i2) for j in by_source.get(i, ())]
            if not targets:
                continue
            j1, j2 = min(targets), max(targets) + 1
            if j2 - j1 > max_length:
                continue
            if all(i1 <= i < i2 for j in range(j1, j2) for i in by_target.get(j, ())):
                found.append((i1, i2, j1, j2))
    return found


def without_function_word_edges(
    source: str, target: str, candidates: Sequence[PhrasePair], source_words: frozenset[str],
    target_words: frozenset[str],
) -> list[PhrasePair]:
    """The candidates whose first and last word, on both sides, are not function words (case-insensitive).

    >>> without_function_word_edges("a red cat", "eine rote Katze", [(0, 5, 0, 9), (2, 9, 5, 15)],
    ...                             frozenset({"a"}), frozenset({"eine"}))
    [(2, 9, 5, 15)]
    """
    def edges_ok(text: str, start: int, end: int, banned: frozenset[str]) -> bool:
        spans = words(text[start:end])
        return not spans or not ({text[start + s:start + e].lower() for s, e in (spans[0], spans[-1])} & banned)

    return [c for c in candidates
            if edges_ok(source, c[0], c[1], source_words) and edges_ok(target, c[2], c[3], target_words)]


def _word_edges(text: str) -> bool:
    """Whether ``text`` starts and ends with a letter or digit."""
    return bool(text) and text[0].isalnum() and text[-1].isalnum()


def select_phrase_pairs(
    source: str, target: str, candidates: Sequence[PhrasePair], *, max_slots: int, min_gap: int, rng: random.Random
) -> list[PhrasePair]:
    """Choose up to ``max_slots`` non-overlapping phrase pairs at random, ``min_gap`` words apart on both sides.

    The number wanted is drawn uniformly from 1..``max_slots``; candidates are visited in random
    order and kept when they fit. Returned in source order.
    """
    if not candidates:
        return []
    wanted = rng.randint(1, max_slots)
    order = list(candidates)
    rng.shuffle(order)
    chosen: list[PhrasePair] = []
    for pair in order:
        if len(chosen) >= wanted:
            break
        if all(_apart(source, (pair[0], pair[1]), (c[0], c[1]), min_gap)
               and _apart(target, (pair[2], pair[3]), (c[2], c[3]), min_gap) for c in chosen):
            chosen.append(pair)
    return sorted(chosen)


def _apart(text: str, a: tuple[int, int], b: tuple[int, int], min_gap: int) -> bool:
    """Spans ``a`` and ``b`` do not overlap and at least ``min_gap`` words lie between them."""
    first, second = (a, b) if a[0] <= b[0] else (b, a)
    if second[0] < first[1]:
        return False
    return len(words(text[first[1] : second[0]])) >= min_gap


def _insert(text: str, spans: Sequence[tuple[int, int, str, str]]) -> str:
    pieces, cursor = [], 0
    for start, end, opening, closing in sorted(spans):
        pieces += [text[cursor:start], f" {opening} ", text[start:end], f" {closing} "]
        cursor = end
    pieces.append(text[cursor:])
    return " ".join("".join(pieces).split())


def mark_pair(
    source: str,
    target: str,
    chosen: Sequence[PhrasePair],
    slots: Sequence[int] | None = None,
    style: str | MarkerStyle | None = None,
) -> MarkedPair:
    """Wrap each chosen phrase pair in the markers of its slot on both sides.

    ``slots[k]`` is the slot number of ``chosen[k]`` (default: 0, 1, ... in the given order). Untyped
    styles (``easyproject``) cannot show numbers: their slots are numbered in source order.
    """
    style = get_marker_style(style)
    if not style.typed:
        chosen, slots = sorted(chosen), None
    slots = list(range(len(chosen))) if slots is None else list(slots)
    if len(slots) != len(chosen):
        raise ValueError(f"{len(slots)} slot numbers for {len(chosen)} phrase pairs")
    src_spans, tgt_spans, info = [], [], []
    for (s0, s1, t0, t1), slot in zip(chosen, slots, strict=True):
        opening, closing = style.markers(slot)
        src_spans.append((s0, s1, opening, closing))
        tgt_spans.append((t0, t1, opening, closing))
        info.append({"slot": int(slot), "source": " ".join(source[s0:s1].split()),
                     "target": " ".join(target[t0:t1].split())})
    info.sort(key=lambda item: item["slot"])
    return MarkedPair(_insert(source, src_spans), _insert(target, tgt_spans), tuple(info))


def remark(
    source: str,
    target: str,
    candidates: Sequence[PhrasePair],
    config: MarkingConfig,
    rng: random.Random,
) -> MarkedPair:
    """Draw markers for one pair from its candidate phrase pairs (used by marking and per-epoch re-sampling)."""
    if not candidates or rng.random() >= config.slot_prob:
        return mark_pair(source, target, [], style=config.marker_style)
    chosen = select_phrase_pairs(source, target, candidates, max_slots=config.max_slots, min_gap=config.min_gap, rng=rng)
    if config.random_slot_numbers:
        slots = rng.sample(range(config.max_slots), len(chosen))
    else:
        slots = list(range(len(chosen)))
    return mark_pair(source, target, chosen, slots, config.marker_style)


# --- the corpus run ------------------------------------------------------------------------------


@dataclass
class MarkingResult:
    """The marked dataset, counts (pairs ``read``, ``dropped_<reason>``, ``marked_pairs``, ``slots``, ``rows``)
    and this call's timings in seconds (``read``, ``align``, ``extract_and_mark``, ``write``: the rest, from
    writing shards to the card, and ``total``)."""

    dataset: Any  # datasets.Dataset
    counts: Counter = field(default_factory=Counter)
    timings: dict[str, float] = field(default_factory=dict)

    def report(self) -> str:
        """A small table of counts and timings, for the CLI."""
        lines = ["counts:"]
        lines += [f"  {key:<22} {value}" for key, value in sorted(self.counts.items())]
        total = self.timings.get("total", 0.0) or 1e-9
        lines.append("time (s):")
        lines += [f"  {key:<22} {value:8.1f}  ({100 * value / total:.0f}%)" for key, value in self.timings.items()]
        return "\n".join(lines)


@dataclass
class MarkedRow:
    """One row of the marked dataset: a sentence pair in one direction."""

    source: str = field(metadata={"help": "the source sentence with markers"})
    target: str = field(metadata={"help": "the target sentence with the same markers"})
    src_lang: str = field(metadata={"help": "the source language"})
    tgt_lang: str = field(metadata={"help": "the target language"})
    slots: list[dict[str, Any]] = field(metadata={"help": "per marked phrase pair: its slot number, source and target"})
    source_text: str = field(metadata={"help": "the source sentence without markers"})
    target_text: str = field(metadata={"help": "the target sentence without markers"})
    phrase_pairs: list[list[int]] = field(
        metadata={"help": "every candidate phrase pair as character spans (source start, end, target start, end), "
                          "for drawing markers afresh each epoch"})
    origin: str = field(metadata={"help": "the file or dataset the pair comes from"})
    line: int = field(metadata={"help": "its line (files, from 1) or row (datasets, from 0) there"})


@dataclass
class DroppedPair:
    """A sentence pair dropped before alignment, why, and where it came from."""

    reason: str = field(metadata={"help": "why it was dropped (DROP_REASONS)"})
    source: str = field(metadata={"help": "the source sentence"})
    target: str = field(metadata={"help": "the target sentence"})
    src_lang: str = field(metadata={"help": "the source language"})
    tgt_lang: str = field(metadata={"help": "the target language"})
    origin: str = field(metadata={"help": "the file or dataset the pair comes from"})
    line: int = field(metadata={"help": "its line (files, from 1) or row (datasets, from 0) there"})


def _schema():
    """The Arrow schema of ``data-*.parquet`` (fixed: ``crop-hf train-translation`` reads these files)."""
    import pyarrow as pa

    slot = pa.struct([("slot", pa.int32()), ("source", pa.string()), ("target", pa.string())])
    return pa.schema([
        ("source", pa.string()), ("target", pa.string()), ("src_lang", pa.string()), ("tgt_lang", pa.string()),
        ("slots", pa.list_(slot)), ("source_text", pa.string()), ("target_text", pa.string()),
        ("phrase_pairs", pa.list_(pa.list_(pa.int32()))), ("origin", pa.string()), ("line", pa.int64()),
    ])


def _screen(pair: ParallelPair, style: MarkerStyle, max_words: int) -> str | None:
    if not pair.source.strip() or not pair.target.strip():
        return "empty"
    if style.find(pair.source) or style.find(pair.target):
        return "has_marker"
    if len(words(pair.source)) > max_words or len(words(pair.target)) > max_words:
        return "too_long"
    return None


def _shard_rng(seed: int, index: int) -> random.Random:
    """Shard 0 draws from ``Random(seed)`` (a one-chunk corpus marks as earlier releases did); shard k from
    a generator of its own, so that shards can be resumed and shared between processes in any order."""
    return random.Random(seed) if index == 0 else random.Random(f"mark-parallel:{seed}:{index}")


#: The one key of a mark-parallel run: its shard folder and the split of ``discarded/``.
_KEY = "train"


@dataclass
class MarkParallelRun:
    """A mark-parallel run: the marking settings, where the run writes, and what its pairs are.

    ``inputs_id`` describes the pairs (files with sizes and modification times, or a dataset, its
    config, split and language pairs): with it, a rerun with the same settings and inputs resumes
    from the finished shards; without it, the pairs cannot be recognised again and a run starts
    afresh.
    """

    marking: MarkingConfig
    output_dir: str
    inputs_id: str | None = None
    show_progress: bool = False
    # mark-parallel has always replaced the results in its folder; the shards of other settings stay and are
    # reused when those settings come back.
    overwrite_output_dir: bool = True


class MarkParallelJob(CorpusJob[MarkedRow, DroppedPair, MarkingResult]):
    """Mark-parallel on the corpus-job contract (:func:`crop_hf.engine.jobs.run_job`).

    A shard is a chunk of ``align_chunk_size`` pairs, screened, aligned per language pair, then
    extracted and marked; the merge writes ``data-*.parquet`` (``shard_size`` rows each, the kept
    rows), ``discarded/`` (the dropped pairs), ``statistics.json`` and ``README.md``.
    """

    name = "mark-parallel"
    reasons = DROP_REASONS
    kept_type = MarkedRow
    dropped_type = DroppedPair
    unit = " pairs"
    extra_counts = ("marked_pairs", "slots", "seconds_align", "seconds_extract_and_mark")

    def __init__(self, config: MarkParallelRun, pairs: Iterable[ParallelPair], aligner: Any = None) -> None:
        super().__init__(config, pairs)
        if aligner is None:
            aligner = EflomalAligner()
        self.aligner = aligner
        self.marking = config.marking
        self.style = get_marker_style(self.marking.marker_style)
        self.function_words = read_function_words(self.marking.function_words_file) \
            if self.marking.function_words_file else {}
        self.timings = {"read": 0.0, "align": 0.0, "extract_and_mark": 0.0}
        self.language_pairs: Counter = Counter()

    def fingerprint_arguments(self) -> dict[str, Any]:
        marking = self.config.marking
        arguments = {**result_arguments(marking), "inputs": self.config.inputs_id}
        if marking.function_words_file:  # the file's words, not only its name, change the rows
            arguments["function_words_sha256"] = hashlib.sha256(
                Path(marking.function_words_file).read_bytes()).hexdigest()[:16]
        return arguments

    def before_run(self) -> None:
        self.started = time.perf_counter()
        if self.config.inputs_id is None:
            # Pairs given without inputs_id cannot be told apart from other pairs: shards of an earlier run
            # with the same settings may hold other sentences. Rather than resume them (or pick a random
            # fingerprint, which several processes could not share and which would leave a folder behind
            # per run), the main process removes this fingerprint's folder before anyone starts: the run
            # starts afresh and replaces the results, as mark-parallel always did.
            state = process_state()
            if state.is_main_process:
                shutil.rmtree(self.store.root, ignore_errors=True)
            state.wait_for_everyone()

    def shard_keys(self) -> list[str]:
        return [_KEY]

    def shards(self, key: str) -> Iterator[tuple[int, list[ParallelPair]]]:
        chunks = shards_of(self.inputs, self.marking.align_chunk_size)
        while True:
            tick = time.perf_counter()
            chunk = next(chunks, None)
            self.timings["read"] += time.perf_counter() - tick
            if chunk is None:
                return
            yield chunk

    def process(self, key: str, index: int, items: Sequence[ParallelPair], status: Any) -> ShardResult:
        marking, rng = self.marking, _shard_rng(self.marking.seed, index)
        kept: list[MarkedRow] = []
        dropped: list[DroppedPair] = []
        groups: dict[tuple[str, str], list[ParallelPair]] = {}
        for pair in items:
            reason = _screen(pair, self.style, marking.max_words)
            if reason:
                dropped.append(DroppedPair(reason, pair.source, pair.target, pair.src_lang, pair.tgt_lang,
                                           pair.origin, pair.line))
            else:
                groups.setdefault((pair.src_lang, pair.tgt_lang), []).append(pair)
        seconds = {"align": 0.0, "extract_and_mark": 0.0}
        marked = slots = 0
        for (src_lang, tgt_lang), group in groups.items():
            status(f"aligning {len(group)} {src_lang}-{tgt_lang} pairs")
            spans = [(words(p.source), words(p.target)) for p in group]
            source_words = [[p.source[s:e] for s, e in src] for p, (src, _) in zip(group, spans, strict=True)]
            target_words = [[p.target[s:e] for s, e in tgt] for p, (_, tgt) in zip(group, spans, strict=True)]
            tick = time.perf_counter()
            alignments = self.aligner.align(source_words, target_words)
            seconds["align"] += time.perf_counter() - tick
            status(f"marking {len(group)} {src_lang}-{tgt_lang} pairs")
            tick = time.perf_counter()
            banned = (self.function_words.get(src_lang, frozenset()), self.function_words.get(tgt_lang, frozenset()))
            for pair, (src_spans, tgt_spans), links in zip(group, spans, alignments, strict=True):
                candidates = [
                    (src_spans[i1][0], src_spans[i2 - 1][1], tgt_spans[j1][0], tgt_spans[j2 - 1][1])
                    for i1, i2, j1, j2 in consistent_phrase_pairs(links, len(src_spans), len(tgt_spans),
                                                                  marking.max_phrase_length)
                ]
                # Entities do not start or end with punctuation ("bushes ." is not a phrase to label).
                candidates = [c for c in candidates if _word_edges(pair.source[c[0]:c[1]])
                              and _word_edges(pair.target[c[2]:c[3]])]
                if self.function_words:
                    candidates = without_function_word_edges(pair.source, pair.target, candidates, *banned)
                kept.append(_row(pair, candidates, remark(pair.source, pair.target, candidates, marking, rng)))
                marked, slots = marked + 1, slots + len(kept[-1].slots)
                if marking.both_directions:
                    reverse = ParallelPair(pair.target, pair.source, pair.tgt_lang, pair.src_lang, pair.origin,
                                           pair.line)
                    flipped = [(c[2], c[3], c[0], c[1]) for c in candidates]
                    kept.append(_row(reverse, flipped, remark(reverse.source, reverse.target, flipped, marking, rng)))
            seconds["extract_and_mark"] += time.perf_counter() - tick
        for stage, value in seconds.items():
            self.timings[stage] += value
        return ShardResult(kept, dropped, {"marked_pairs": marked, "slots": slots, "seconds_align": seconds["align"],
                                           "seconds_extract_and_mark": seconds["extract_and_mark"]})

    def kept_features(self) -> Any:
        """The columns of ``data-*.parquet`` (``slots`` is a list of structs, which a row dataclass cannot declare)."""
        import datasets

        return datasets.Features.from_arrow_schema(_schema())

    def _records(self, kept: bool) -> Iterator[dict[str, Any]]:
        """The kept (or dropped) rows of the finished shards, straight from the files (no dataset cache: a
        third copy of the corpus, and the rows only go into ``data-*.parquet``)."""
        return read_shard_rows([path for _, path, _ in self.store.finished(_KEY)], kept)

    def write_outputs(self, statistics: Mapping[str, Mapping[str, float]]) -> None:
        """``data-*.parquet`` of ``shard_size`` kept rows each (those of an earlier run replaced) and ``discarded/``."""
        import datasets
        import pyarrow as pa
        import pyarrow.parquet as pq

        written = set()
        for index, rows in shards_of(self._records(True), self.marking.shard_size):
            self.language_pairs.update((row["src_lang"], row["tgt_lang"]) for row in rows)
            sink = pa.BufferOutputStream()
            pq.write_table(pa.Table.from_pylist(rows, schema=_schema()), sink)
            path = self.output_dir / f"data-{index:05d}.parquet"
            atomic_write_bytes(path, sink.getvalue().to_pybytes())
            written.add(path)
        for stale in set(self.output_dir.glob("data-*.parquet")) - written:
            stale.unlink()
        schema = self.dropped_features().arrow_schema
        dropped = [pa.Table.from_pylist(rows, schema=schema) for _, rows in shards_of(self._records(False), 10_000)]
        table = pa.concat_tables(dropped) if dropped else schema.empty_table()
        save_dataset_dict(datasets.DatasetDict({_KEY: datasets.Dataset(table)}), self.output_dir / "discarded")

    def statistics_record(self, statistics: Mapping[str, Mapping[str, float]]) -> Any:
        """``counts`` and ``marking`` as ``crop-hf mark-parallel`` writes them (it adds ``timings``, its ``inputs``)."""
        return {"counts": dict(_counts(statistics[_KEY])), "marking": asdict(self.marking),
                "inputs": self.config.inputs_id}

    def card(self, statistics: Mapping[str, Mapping[str, float]], *, command_line: str) -> str:
        return marked_parallel_card(_counts(statistics[_KEY]), statistics[_KEY], self.language_pairs,
                                    command_line=command_line, settings=result_arguments(self.marking),
                                    inputs_id=self.config.inputs_id)

    def result(self, statistics: Mapping[str, Mapping[str, float]], skipped: Mapping[str, int]) -> MarkingResult:
        from datasets import Dataset

        # Every process reads the same finished shards (statistics is empty on all but the main one).
        counts = _counts(statistics.get(_KEY) or shard_statistics(self.store.finished(_KEY), self.statistics_columns))
        files = sorted(self.output_dir.glob("data-*.parquet"))
        if files:
            dataset = Dataset.from_parquet([str(p) for p in files], split="train")
        else:
            dataset = Dataset(_schema().empty_table())
        total = time.perf_counter() - self.started
        timings = {**self.timings, "write": max(0.0, total - sum(self.timings.values())), "total": total}
        dropped = {name: value for name, value in counts.items() if name.startswith("dropped_") and value}
        if dropped:
            logger.info("mark-parallel dropped %s", dropped)
        return MarkingResult(dataset, counts, timings)


def _counts(totals: Mapping[str, float]) -> Counter:
    """The counts of a :class:`MarkingResult` from a run's shard statistics."""
    return Counter({"read": totals["input"], **{f"dropped_{reason}": totals[reason] for reason in DROP_REASONS},
                    "marked_pairs": totals["marked_pairs"], "slots": totals["slots"], "rows": totals["kept"]})


def marked_parallel_card(
    counts: Mapping[str, int],
    totals: Mapping[str, float],
    language_pairs: Mapping[tuple[str, str], int],
    *,
    command_line: str,
    settings: Mapping[str, Any],
    inputs_id: str | None = None,
) -> str:
    """The dataset card of a mark-parallel folder: what the rows are, the counts, columns and settings."""
    from huggingface_hub import DatasetCard, DatasetCardData

    languages = sorted({lang for pair in language_pairs for lang in pair})
    pairs = ", ".join(f"{src}-{tgt}" for src, tgt in sorted(language_pairs)) or "none"
    data = DatasetCardData(language=languages or None, pretty_name=f"Marker-annotated parallel data ({pairs})",
                           task_categories=["translation"], size_categories=[size_category(counts["rows"])],
                           tags=["crop-hf", "parallel", "markers", "label-projection"])
    funnel = format_table(list(counts), [list(counts.values())], style="markdown")
    per_pair = format_table(["language pair", "rows"],
                            [[f"{s}-{t}", n] for (s, t), n in sorted(language_pairs.items())], style="markdown")
    columns = "\n".join(f"- `{name}`: {meaning}" for name, meaning in row_descriptions(MarkedRow).items())
    reasons = "\n".join(f"- `dropped_{name}`: {meaning}" for name, meaning in DROP_REASONS.items())
    table = format_table(["setting", "value"], [[name, f"`{value}`"] for name, value in settings.items()],
                         style="markdown")
    body = f"""
# {data.pretty_name}

Sentence pairs in which aligned phrase pairs are wrapped in the same markers on both sides, the
training data of a labeled sequence translation model (CroP, section 3.3). Made with
[crop-hf](https://github.com/crop-hf/crop-hf) `mark-parallel`: eflomal word alignment
(grow-diag-final-and), consistent phrase pairs, and random slots. The files are `data-*.parquet`;
`crop-hf train-translation --train_file FOLDER` reads them, and `discarded/` holds the dropped pairs.

## Counts

{funnel}

{reasons}

Rows per language pair:

{per_pair}

Aligning took {totals.get("seconds_align", 0.0):.1f} s and extracting and marking
{totals.get("seconds_extract_and_mark", 0.0):.1f} s, over all shards.

## Columns

{columns}

## How it was made

```bash
{command_line}
```

Inputs: `{inputs_id or "pairs given in memory"}`

Every setting that affects the rows:

{table}
"""
    return str(DatasetCard(f"---\n{data.to_yaml()}\n---\n{body}"))


def mark_parallel(
    pairs: Iterable[ParallelPair],
    config: MarkingConfig | None = None,
    *,
    output_dir: str | Path | None = None,
    aligner: Any = None,
    show_progress: bool = False,
    inputs_id: str | None = None,
) -> MarkingResult:
    """Align, extract phrase pairs and mark a parallel corpus; returns a :class:`MarkingResult`.

    ``pairs`` is any iterable of :class:`ParallelPair` (:func:`pairs_from_files`,
    :func:`pairs_from_dataset`); it is read ``config.align_chunk_size`` pairs at a time, so memory
    stays bounded by the chunk, whatever the corpus size. Pairs of several language pairs may be
    mixed: each chunk is aligned per language pair. Rows are written as parquet shards to
    ``output_dir`` (a temporary folder when ``None``; ``data-*.parquet`` files already there are
    replaced) and the dataset is read back from them
    (memory-mapped). Its columns: ``source``, ``target`` (marked), ``src_lang``, ``tgt_lang``,
    ``slots`` (``slot``, ``source``, ``target`` per marked phrase pair), ``source_text``,
    ``target_text`` (unmarked), ``phrase_pairs`` (every candidate as character spans, for
    re-sampling), ``origin`` and ``line`` (provenance). ``aligner`` defaults to
    :class:`~crop_hf.alignment.EflomalAligner`.

    The run is a :class:`MarkParallelJob`: each chunk is a shard kept under
    ``output_dir/shards/<fingerprint>/``, the folder also gets ``discarded/`` (the dropped pairs),
    ``statistics.json`` and a card (``README.md``), and several processes (``torchrun``,
    ``accelerate launch``) share the chunks. ``inputs_id`` describes ``pairs`` (``crop-hf
    mark-parallel`` gives its files with sizes and modification times, or its dataset): with it, a
    rerun with the same settings and inputs skips the finished chunks; without it, every run starts
    afresh. An aligner given here is not part of the fingerprint: change ``inputs_id`` with it.

    Each chunk draws its markers from its own random generator, shard 0 from ``Random(seed)`` as
    before: a corpus of one chunk marks exactly as earlier releases did, but a corpus of more than
    ``align_chunk_size`` pairs marks its later chunks differently from releases before the shards.
    """
    import tempfile

    config = config or MarkingConfig()
    if output_dir is None and process_state().num_processes > 1:
        raise ValueError("mark_parallel: several processes share their chunks through output_dir: pass one")
    folder = Path(output_dir) if output_dir else Path(tempfile.mkdtemp(prefix="crop-hf-marked-"))
    run = MarkParallelRun(config, str(folder), inputs_id=inputs_id, show_progress=show_progress)
    return run_job(MarkParallelJob(run, pairs, aligner))


def _row(pair: ParallelPair, candidates: list[PhrasePair], marked: MarkedPair) -> MarkedRow:
    return MarkedRow(marked.source, marked.target, pair.src_lang, pair.tgt_lang, list(marked.slots), pair.source,
                     pair.target, [list(c) for c in candidates], pair.origin, pair.line)
