"""The numbers behind every plot of a corpus report, read from a synthesis output folder.

:func:`read_report_data` reads ``statistics.json``, ``dataset/`` and ``discarded/`` (the layout
:mod:`crop_hf.synthesis` writes) and returns a :class:`ReportData`: plain counts per language,
which :mod:`crop_hf.report.plots` draws and the tests check against the run's own statistics.

What each number means:

* ``counts``: the run's ``statistics.json`` row for the language (``input``, ``kept`` and one
  count per drop reason, in the file's order); the report never recounts them.
* ``source_labels``: the labels (entity types) the source-language model found in the
  translations of *every* sentence that reached tagging, kept or dropped (column
  ``source_labels``). ``target_labels``: the entities of the kept sentences' tags, read as IOB2.
  Their difference shows what the filters and the projection did to the label mix.
* ``lengths_kept`` / ``lengths_dropped``: tokens per sentence (words, or characters for
  languages written without spaces; see the dataset's ``tokenization`` column).
* ``statuses_kept`` / ``statuses_dropped``: what became of each translated entity in projection
  (``found``, ``fuzzy``, ``missing``, ...; see :class:`crop_hf.projection.EntityStatus`), in kept
  and in dropped sentences.
* ``gold``: :func:`crop_hf.metrics.projection_scores` of the kept sentences against gold target
  labels, when given (see :func:`read_gold`).
* ``notes``: lines the page shows first, among them how the labels were placed when the run used
  a model-scored method such as ``insertion`` (read from the run's recorded settings: there was
  no labeled back-translation).

"A label" is kept generic (any IOB type in the tag column), so an output whose tags are slot
labels rather than entity types reports the same way: it needs ``statistics.json``,
``dataset/`` as a ``DatasetDict`` keyed by language with ``tokens`` and one of
:data:`TAG_COLUMNS`, and ``discarded/`` with ``tokens`` (optional). ``source_labels`` and
``projection_status`` are optional columns; without them those plots say they were not recorded.

>>> from collections import Counter
>>> count_labels([["B-PER", "I-PER", "O", "B-LOC"], ["O"]])
Counter({'PER': 1, 'LOC': 1})
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from crop_hf.data.features import tag_strings
from crop_hf.data.sources import is_split_by_language, load_spec, split_by_language
from crop_hf.labels import rename_tag, tags_to_spans
from crop_hf.metrics import projection_scores
from crop_hf.metrics.corpus import retokenize_tags, sentence_key
from crop_hf.projection.methods import placement

logger = logging.getLogger(__name__)

__all__ = ["TAG_COLUMNS", "LanguageReport", "ReportData", "count_labels", "read_gold", "read_report_data"]

#: Columns read as a sentence's tags, first found wins. An output of another kind whose tags
#: live under another name adds its column here.
TAG_COLUMNS: tuple[str, ...] = ("ner_tags", "slot_tags", "tags")

#: Statuses of a translated entity that reached the target sentence (the others are failures).
OK_STATUSES: tuple[str, ...] = ("found", "fuzzy", "projected", "split")

_BATCH = 4096


@dataclass
class LanguageReport:
    """The numbers of one language (see the module docstring for what each means)."""

    lang: str
    counts: dict[str, int]
    source_labels: dict[str, int] | None = None
    target_labels: dict[str, int] = field(default_factory=dict)
    lengths_kept: list[int] = field(default_factory=list)
    lengths_dropped: list[int] = field(default_factory=list)
    statuses_kept: dict[str, int] | None = None
    statuses_dropped: dict[str, int] | None = None
    gold: dict[str, Any] | None = None

    @property
    def input(self) -> int:
        return int(self.counts.get("input", 0))

    @property
    def kept(self) -> int:
        return int(self.counts.get("kept", 0))

    def dropped(self, reasons: Sequence[str]) -> dict[str, int]:
        """Sentences dropped per reason, in the order of ``reasons``."""
        return {reason: int(self.counts.get(reason, 0)) for reason in reasons}


@dataclass
class ReportData:
    """Everything a report shows, per language, as plain data (``to_dict`` is JSON)."""

    output_dir: str
    reasons: list[str]
    languages: list[LanguageReport]
    tag_column: str | None = None
    label_kind: str = "entity type"
    notes: list[str] = field(default_factory=list)

    @property
    def total_input(self) -> int:
        return sum(lang.input for lang in self.languages)

    @property
    def total_kept(self) -> int:
        return sum(lang.kept for lang in self.languages)

    @property
    def has_gold(self) -> bool:
        return any(lang.gold is not None for lang in self.languages)

    def labels(self) -> list[str]:
        """Every label seen on either side, most frequent first (ties by name)."""
        totals: Counter = Counter()
        for lang in self.languages:
            totals.update(lang.source_labels or {})
            totals.update(lang.target_labels)
        return sorted(totals, key=lambda label: (-totals[label], label))

    def statuses(self) -> list[str]:
        """Every projection status seen, successes first in :data:`OK_STATUSES` order, then failures by name."""
        seen: set[str] = set()
        for lang in self.languages:
            seen.update(lang.statuses_kept or {})
            seen.update(lang.statuses_dropped or {})
        return [s for s in OK_STATUSES if s in seen] + sorted(seen - set(OK_STATUSES))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def count_labels(tag_rows: Iterable[Sequence[str]]) -> Counter:
    """Entities per label in rows of IOB2 tags (an ``I-X`` that starts an entity counts, as in seqeval)."""
    counts: Counter = Counter()
    for tags in tag_rows:
        counts.update(span.label for span in tags_to_spans(tags))
    return counts


def _load(path: Path):
    import datasets

    return datasets.load_from_disk(str(path)) if path.exists() else None


def _tag_names(split, column: str) -> list[str] | None:
    """ClassLabel names of a tag column, or ``None`` when it holds strings."""
    inner = getattr(split.features[column], "feature", None)
    return list(inner.names) if hasattr(inner, "names") else None


def read_statistics(output_dir: str | Path) -> dict[str, dict[str, int]]:
    """``statistics.json`` of a run: ``{lang: {"input": n, "kept": n, reason: n, ...}}``."""
    path = Path(output_dir) / "statistics.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: {output_dir} is not a finished crop-hf synthesis output "
                                "(run `crop-hf synthesize` to the end first)")
    try:
        statistics = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}, line {error.lineno}: not valid JSON ({error.msg})") from error
    if not isinstance(statistics, dict) or not all(isinstance(v, dict) for v in statistics.values()):
        raise ValueError(f"{path}: expected {{language: {{count name: number}}}}")
    return statistics


def read_report_data(output_dir: str | Path, gold: Mapping[str, Any] | None = None) -> ReportData:
    """Read the numbers of a report from a synthesis output folder.

    Args:
        output_dir: the folder ``crop-hf synthesize`` wrote (``statistics.json``, ``dataset/``,
            ``discarded/``).
        gold: per language, gold target labels as :func:`read_gold` returns them; adds
            projection P/R/F1 per language and label.
    """
    output = Path(output_dir)
    statistics = read_statistics(output)
    reasons: list[str] = []
    for stats in statistics.values():
        reasons += [name for name in stats if name not in {"input", "kept"} and name not in reasons]
    kept_dict, dropped_dict = _load(output / "dataset"), _load(output / "discarded")
    data = ReportData(str(output), reasons, [])
    how = placement_of_run(output)
    if how:
        data.notes.append(f"The labels were {how}. So markers_incomplete and wrong_language_target count nothing, "
                          "and projection_incomplete counts sentences with an entity that could not be placed.")
    if kept_dict is None:
        data.notes.append(f"{output / 'dataset'} is missing: only the counts of statistics.json are shown.")
    for lang, stats in statistics.items():
        report = LanguageReport(lang, {name: int(value) for name, value in stats.items()})
        kept = kept_dict[lang] if kept_dict is not None and lang in kept_dict else None
        dropped = dropped_dict[lang] if dropped_dict is not None and lang in dropped_dict else None
        _read_kept(report, kept, data)
        _read_dropped(report, dropped)
        if gold is not None and lang in gold:
            report.gold = gold_scores(kept, dropped, gold[lang], data.tag_column)
        data.languages.append(report)
    if any(lang.source_labels is None for lang in data.languages) and kept_dict is not None:
        data.notes.append("This output has no source_labels column (made before crop-hf recorded it): "
                          "the source side of the label distribution is not shown.")
    if all(lang.statuses_kept is None for lang in data.languages) and kept_dict is not None:
        data.notes.append("This output has no projection_status column: projection outcomes are not shown.")
    return data


def placement_of_run(output_dir: str | Path) -> str | None:
    """How a model-scored method placed the labels of the run whose merge wrote ``output_dir``
    (:func:`crop_hf.projection.methods.placement` of the method in its ``shards/<fingerprint>/run.json``);
    ``None`` for other methods or when the folder does not record its run."""
    shards = Path(output_dir) / "shards"
    try:
        record = json.loads((shards / "result.json").read_text(encoding="utf-8"))
        arguments = json.loads((shards / record["fingerprint"] / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    method = arguments.get("method") if isinstance(arguments, dict) else None
    return placement(method) if isinstance(method, str) else None


def _read_kept(report: LanguageReport, kept, data: ReportData) -> None:
    if kept is None:
        return
    column = next((c for c in TAG_COLUMNS if c in kept.column_names), None)
    if column is None:
        raise KeyError(f"{data.output_dir}/dataset[{report.lang}] has none of the tag columns {TAG_COLUMNS} "
                       f"(columns: {kept.column_names})")
    data.tag_column = data.tag_column or column
    if column != "ner_tags":
        data.label_kind = "label"
    names = _tag_names(kept, column)
    target: Counter = Counter()
    source: Counter = Counter()
    statuses: Counter = Counter()
    wanted = [c for c in ("tokens", column, "source_labels", "projection_status") if c in kept.column_names]
    for batch in kept.select_columns(wanted).iter(batch_size=_BATCH):
        report.lengths_kept += [len(tokens) for tokens in batch["tokens"]]
        rows = batch[column] if names is None else [[names[i] for i in ids] for ids in batch[column]]
        target.update(count_labels(rows))
        for labels in batch.get("source_labels", []):
            source.update(labels or [])
        for row_statuses in batch.get("projection_status", []):
            statuses.update(row_statuses or [])
    report.target_labels = dict(target)
    report.source_labels = dict(source) if "source_labels" in kept.column_names else None
    report.statuses_kept = dict(statuses) if "projection_status" in kept.column_names else None


def _read_dropped(report: LanguageReport, dropped) -> None:
    if dropped is None:
        return
    source: Counter = Counter(report.source_labels or {})
    statuses: Counter = Counter()
    wanted = [c for c in ("tokens", "source_labels", "projection_status") if c in dropped.column_names]
    for batch in dropped.select_columns(wanted).iter(batch_size=_BATCH):
        report.lengths_dropped += [len(tokens or []) for tokens in batch["tokens"]]
        for labels in batch.get("source_labels", []):
            source.update(labels or [])
        for row_statuses in batch.get("projection_status", []):
            statuses.update(row_statuses or [])
    if "source_labels" in dropped.column_names and report.source_labels is not None:
        report.source_labels = dict(source)
    report.statuses_dropped = dict(statuses) if "projection_status" in dropped.column_names else None


# -- gold labels ------------------------------------------------------------------------------

def read_gold(spec: str, languages: Sequence[str], *, split: str | None = None,
              label_map: Mapping[str, str] | None = None) -> dict[str, dict[str, tuple[list[str], list[str]]]]:
    """Gold target labels per language: ``{lang: {sentence text: (tokens, IOB2 tags)}}``.

    ``spec`` is a corpus spec as training takes it (``xtreme40:{lang}?data_dir=/data/panx``,
    ``conll5:{lang}``, ``hub:NAME:{lang}``, ``disk:PATH``, a saved folder): with ``{lang}`` it is
    loaded once per language; without, it must be keyed by language (a ``DatasetDict`` whose
    splits are languages, or rows with a ``lang`` column) or the run must have one language. Rows
    need ``tokens`` and ``ner_tags`` (``ClassLabel`` ids or IOB2 strings). ``split`` picks one
    split of a corpus split train/validation/test (default: all splits). Sentences are matched to
    the run's sentences by their text (tokens joined by single spaces); ``label_map`` renames
    gold types (``{"GPE_LOC": "LOC"}``; ``"O"`` drops a type).
    """
    import datasets

    def splits_of(loaded, where: str) -> list:
        if isinstance(loaded, datasets.Dataset):
            return [loaded]
        if split is not None:
            if split not in loaded:
                raise KeyError(f"gold {where}: no split {split!r} (has {', '.join(loaded)})")
            return [loaded[split]]
        return list(loaded.values())

    per_language: dict[str, list] = {}
    if "{lang}" in spec:
        for lang in languages:
            per_language[lang] = splits_of(load_spec(spec.replace("{lang}", lang)), spec.replace("{lang}", lang))
    else:
        loaded = load_spec(spec)
        if isinstance(loaded, datasets.DatasetDict) and is_split_by_language(loaded):
            per_language = {lang: [loaded[lang]] for lang in languages if lang in loaded}
        else:
            parts = splits_of(loaded, spec)
            if all("lang" in part.column_names for part in parts):
                for part in parts:
                    for lang, rows in split_by_language(part, languages[0]).items():
                        per_language.setdefault(lang, []).append(rows)
            elif len(languages) == 1:
                per_language = {languages[0]: parts}
            else:
                raise ValueError(f"gold {spec!r} is not keyed by language: put '{{lang}}' in the spec, or give a "
                                 "DatasetDict whose splits are languages, or rows with a 'lang' column")
    gold: dict[str, dict[str, tuple[list[str], list[str]]]] = {}
    for lang, parts in per_language.items():
        sentences: dict[str, tuple[list[str], list[str]]] = {}
        for part in parts:
            for column in ("tokens", "ner_tags"):
                if column not in part.column_names:
                    raise KeyError(f"gold {spec!r} ({lang}): no {column!r} column (columns: {part.column_names})")
            tag_rows = tag_strings(part)
            for tokens, tags in zip(part["tokens"], tag_rows, strict=True):
                tags = [rename_tag(tag, label_map or {}) for tag in tags]
                sentences.setdefault(sentence_key(tokens), (list(tokens), tags))  # first occurrence wins
        gold[lang] = sentences
    missing = [lang for lang in languages if lang not in gold]
    if missing:
        logger.warning("no gold labels for %s", ", ".join(missing))
    return gold


def gold_scores(kept, dropped, gold: Mapping[str, tuple[list[str], list[str]]], tag_column: str | None) -> dict:
    """Projection P/R/F1 of one language's kept sentences against ``gold`` (see :func:`read_gold`).

    Sentences of the run (kept or dropped) are matched to gold sentences by text; a dropped one
    counts as not kept. Returns :func:`crop_hf.metrics.projection_scores` plus ``matched`` (run
    sentences found in the gold set) and ``unmatched_tokens`` (found, but tokenized differently
    beyond what :func:`retokenize_tags` can bridge; left out).
    """
    predictions: list = []
    references: list = []
    unmatched = 0
    column = tag_column or "ner_tags"
    if kept is not None and len(kept):
        names = _tag_names(kept, column)
        for batch in kept.select_columns(["tokens", column]).iter(batch_size=_BATCH):
            for tokens, ids in zip(batch["tokens"], batch[column], strict=True):
                entry = gold.get(sentence_key(tokens))
                if entry is None:
                    continue
                tags = ids if names is None else [names[i] for i in ids]
                reference = entry[1] if list(entry[0]) == list(tokens) else retokenize_tags(*entry, tokens)
                if reference is None:
                    unmatched += 1
                    continue
                predictions.append(tags)
                references.append(reference)
    if dropped is not None and len(dropped):
        text_column = "text" if "text" in dropped.column_names else "tokens"
        for value in dropped[text_column]:
            entry = gold.get(sentence_key(value or []))
            if entry is not None:
                predictions.append(None)
                references.append(entry[1])
    scores = projection_scores(predictions, references)
    scores["per_type"] = {label: dict(values) for label, values in scores["per_type"].items()}
    return {**scores, "matched": len(references), "unmatched_tokens": unmatched}
