"""A labeled corpus scored against gold labels of the same sentences, in seconds and without a model.

:func:`evaluate_corpus` takes a crop-hf NER corpus (a ``crop-hf synthesize`` output folder with its
``dataset/`` and ``discarded/``, a ``crop-hf self-train`` corpus, a Hub id, a source spec, or any
``Dataset``/``DatasetDict`` with ``tokens`` and ``ner_tags``) and a gold-labeled corpus of the same
language (a source spec such as ``conll5:es?data_dir=...`` and its split). Each corpus sentence is
matched to the gold sentence of the same text (:func:`sentence_key`: tokens joined by single
spaces, Unicode NFC); one tokenized differently but spelling the same characters is matched on
its text without spaces and the gold tags are carried onto its tokens (:func:`retokenize_tags`).
Then, for the kept sentences, for each ``label_rule`` of a self-training corpus, and for each drop
reason of the discarded sentences that carry labels (``projected_tags``):

* entity precision, recall and F1, overall and per type (seqeval, IOB2, exact spans: one
  :func:`~crop_hf.ner.evaluate.score_tags` call per group);
* every gold span counted as correct, wrong type, wrong boundary or missed, and every predicted span
  that overlaps no gold span as spurious (:func:`~crop_hf.metrics.projection.span_errors`), with
  the most frequent examples of each;
* for the kept sentences, the share of the gold split's entities that they cover (their gold
  sentences' entities, whatever the corpus labels) and the share they label right.

Entity types that only one side has cannot be scored: they are named (a warning, and the report)
and read as ``O`` on both sides, and the common types are scored. A gold set that shares no
sentence with the corpus is an error that says how many sentences were tried.

>>> import datasets
>>> gold = datasets.Dataset.from_dict({"tokens": [["Anna", "lives", "in", "New", "York", "."]],
...                                    "ner_tags": [["B-PER", "O", "O", "B-LOC", "I-LOC", "O"]]})
>>> corpus = datasets.Dataset.from_dict({"tokens": [["Anna", "lives", "in", "New", "York", "."]],
...                                      "ner_tags": [["B-PER", "O", "O", "B-LOC", "O", "O"]]})
>>> evaluation = evaluate_corpus(corpus, gold)
>>> evaluation.kept.f1, evaluation.kept.errors["boundary"]
(0.5, 1)
"""

from __future__ import annotations

import logging
import os
import time
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from crop_hf.data.features import tag_names
from crop_hf.data.sources import is_split_by_language, join_languages, load_source, load_spec, names_a_file
from crop_hf.errors import EmptyInputError
from crop_hf.labels import Span, rename_tag, split_tag, tags_to_spans
from crop_hf.metrics.projection import ERROR_KINDS, span_errors
from crop_hf.tables import format_table

logger = logging.getLogger(__name__)

__all__ = [
    "ERROR_NAMES",
    "CorpusEvaluation",
    "CorpusParts",
    "GroupScores",
    "entity_scores",
    "evaluate_corpus",
    "format_corpus_report",
    "read_corpus",
    "retokenize_tags",
    "sentence_key",
]

#: How the report names each kind of :data:`~crop_hf.metrics.projection.ERROR_KINDS`.
ERROR_NAMES: dict[str, str] = {
    "correct": "correct",
    "type": "wrong type (same span, other type)",
    "boundary": "wrong boundary (overlapping span, other boundaries)",
    "missed": "missed (gold span, no predicted span overlaps it)",
    "spurious": "spurious (predicted span, no gold span overlaps it)",
}

#: The discarded sentences' column of labels, first found wins (older corpora call it ``source_tags``).
DISCARDED_TAG_COLUMNS = ("projected_tags", "source_tags")


def sentence_key(text: str | Sequence[str]) -> str:
    """What a sentence is matched by: its tokens joined by single spaces, in Unicode NFC.

    >>> sentence_key(["Caf\\u0065\\u0301", "  de", "Flore "]) == sentence_key("Café de Flore")
    True
    """
    joined = text if isinstance(text, str) else " ".join(text)
    return " ".join(unicodedata.normalize("NFC", joined).split())


def _spelling_key(text: str | Sequence[str]) -> str:
    """The characters of a sentence without its spaces: what two tokenizations of it share."""
    return "".join(sentence_key(text).split())


def retokenize_tags(tokens: Sequence[str], tags: Sequence[str], target_tokens: Sequence[str]) -> list[str] | None:
    """Move IOB2 ``tags`` of ``tokens`` onto ``target_tokens`` of the same characters, or ``None``.

    Gold corpora tokenize into words where synthesis may use characters (Chinese, Japanese,
    Thai) or split punctuation otherwise; both spell the same characters once spaces are removed.
    An entity covers the target tokens that overlap it.

    >>> retokenize_tags(["北京", "大学"], ["B-ORG", "I-ORG"], ["北", "京", "大", "学"])
    ['B-ORG', 'I-ORG', 'I-ORG', 'I-ORG']
    """
    if "".join(tokens) != "".join(target_tokens):
        return None

    def offsets(words: Sequence[str]) -> list[tuple[int, int]]:
        result, position = [], 0
        for word in words:
            result.append((position, position + len(word)))
            position += len(word)
        return result

    source, target = offsets(tokens), offsets(target_tokens)
    out = ["O"] * len(target_tokens)
    for span in tags_to_spans(tags):
        start, end = source[span.start][0], source[span.end - 1][1]
        covered = [i for i, (a, b) in enumerate(target) if a < end and b > start]
        for k, i in enumerate(covered):
            out[i] = f"{'B' if k == 0 else 'I'}-{span.label}"
    return out


# -- reading a corpus ---------------------------------------------------------------------------


@dataclass
class CorpusParts:
    """A corpus as :func:`evaluate_corpus` reads it: its kept rows and, where stored, its discarded ones."""

    name: str
    kept: Any  # datasets.Dataset: tokens, ner_tags, and maybe lang, label_rule
    discarded: Any | None = None  # datasets.Dataset: tokens, reason, projected_tags (maybe None per row)


def _one_split(value: Any, split: str | None, where: str) -> Any:
    """One ``Dataset`` of a ``DatasetDict``: ``split``, else every language of one keyed by language, else ``train``."""
    import datasets

    if isinstance(value, datasets.Dataset):
        return value
    if not isinstance(value, datasets.DatasetDict):
        raise TypeError(f"{where}: expected a Dataset, DatasetDict, folder or source spec, got {type(value).__name__}")
    if split is not None:
        if split not in value:
            raise KeyError(f"{where}: no {split!r} split (has {', '.join(value)})")
        return value[split]
    if is_split_by_language(value):
        return join_languages(value)
    if "train" in value:
        return value["train"]
    if len(value) == 1:
        return next(iter(value.values()))
    raise KeyError(f"{where}: several splits ({', '.join(value)}) and no 'train'; choose one with --corpus_split")


def read_corpus(corpus: Any, *, discarded: Any = None, split: str | None = None) -> CorpusParts:
    """The kept (and discarded) rows of a corpus, wherever it is.

    ``corpus`` is a ``Dataset`` or ``DatasetDict``; or a folder: a ``crop-hf synthesize`` output
    (``dataset/``, with ``discarded/`` read too), a ``crop-hf self-train`` output (``corpus/``), a
    ``save_to_disk`` folder; or a source spec or Hub id (``hub:NAME``, ``disk:PATH``, ``user/corpus``).
    A ``DatasetDict`` keyed by language is read whole (its languages joined), one split
    train/validation/test gives its ``train`` split; ``split`` picks a split (or a language) of both
    the kept and the discarded rows. ``discarded`` gives the discarded rows of a corpus given in memory.
    """
    import datasets

    name = str(corpus) if isinstance(corpus, (str, os.PathLike)) else "(the corpus given)"
    if isinstance(corpus, (str, os.PathLike)):
        text = str(corpus)
        folder = Path(text.removeprefix("disk:"))
        if folder.is_dir() and (folder / "dataset").is_dir():  # a corpus job's output folder
            corpus = datasets.load_from_disk(str(folder / "dataset"))
            if discarded is None and (folder / "discarded").is_dir():
                discarded = datasets.load_from_disk(str(folder / "discarded"))
        elif folder.is_dir() and (folder / "corpus").is_dir():  # crop-hf self-train's output folder
            corpus = datasets.load_from_disk(str(folder / "corpus"))
        elif names_a_file(text) and not folder.exists():
            raise FileNotFoundError(f"no corpus at {text}")
        else:
            corpus = load_spec(text)
    if isinstance(discarded, (str, os.PathLike)):
        discarded = load_spec(str(discarded))
    kept = _one_split(corpus, split, f"corpus {name}")
    for column in ("tokens", "ner_tags"):
        if column not in kept.column_names:
            raise KeyError(f"corpus {name}: no {column!r} column (columns: {kept.column_names})")
    if discarded is not None:
        if isinstance(discarded, datasets.DatasetDict) and split is not None and split not in discarded:
            discarded = None  # a language that kept everything
        else:
            discarded = _one_split(discarded, split, f"discarded sentences of {name}")
            if "tokens" not in discarded.column_names:
                raise KeyError(f"discarded sentences of {name}: no 'tokens' column (columns: {discarded.column_names})")
    return CorpusParts(name, kept, discarded)


def _of_language(rows: Any, lang: str) -> Any:
    if rows is None or "lang" not in rows.column_names:
        return rows
    return rows.select([i for i, value in enumerate(_column(rows, "lang")) if value == lang])


def _languages(parts: CorpusParts) -> set[str]:
    found: set[str] = set()
    for rows in (parts.kept, parts.discarded):
        if rows is not None and "lang" in rows.column_names:
            found.update(value for value in rows.unique("lang") if value)
    return found


# -- scores -------------------------------------------------------------------------------------


@dataclass
class GroupScores:
    """The scores of one group of corpus sentences (the kept ones, one label rule, one drop reason).

    ``sentences`` counts the group's rows, ``matched`` those with a gold sentence of the same text,
    ``scored`` the matched ones that carry labels; the scores are over the scored ones (fractions in
    [0, 1]). ``errors`` counts :data:`~crop_hf.metrics.projection.ERROR_KINDS` (gold spans as
    correct, type, boundary or missed; predicted spans that overlap none as spurious); ``examples``
    lists, per kind but ``correct``, the most frequent ones: ``gold`` and ``predicted`` spans as
    ``[text, type]`` pairs, how often (``count``) and the first sentence that has it.
    """

    sentences: int = 0
    matched: int = 0
    scored: int = 0
    precision: float = 0.0
    recall: float = 0.0
    f1: float = 0.0
    per_type: dict[str, dict[str, float]] = field(default_factory=dict)
    entities: int = 0
    gold_entities: int = 0
    errors: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ERROR_KINDS, 0))
    examples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


@dataclass
class CorpusEvaluation:
    """What :func:`evaluate_corpus` found (see the module docstring); ``to_dict`` is the JSON written."""

    corpus: str
    gold: str
    split: str
    lang: str | None
    gold_sentences: int
    gold_entities: int
    types: list[str]
    corpus_only_types: list[str]
    gold_only_types: list[str]
    kept: GroupScores
    rules: dict[str, GroupScores]
    discarded: dict[str, GroupScores]
    coverage: dict[str, float | int]
    retokenized: int = 0
    seconds: float = 0.0

    @property
    def unscored_types(self) -> list[str]:
        """The entity types only one side has, which are read as ``O``."""
        return sorted({*self.corpus_only_types, *self.gold_only_types})

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def entity_scores(references: Sequence[Sequence[str]], predictions: Sequence[Sequence[str]]) -> dict[str, Any]:
    """Micro P/R/F1, per-type scores (with ``support``) and entity counts (``predicted``, ``support``) of
    IOB2 tag sequences, in one seqeval pass.

    The entities are seqeval's (``get_entities``, its default, conlleval-compatible reading) and the
    arithmetic is its own (a prediction is right when type, start and end match; 0 where a ratio
    has no denominator), so the numbers are those of :func:`~crop_hf.ner.evaluate.score_tags`;
    each side is read once instead of the seven times its separate seqeval calls take.

    >>> scores = entity_scores([["B-PER", "O", "B-LOC"]], [["B-PER", "O", "B-ORG"]])
    >>> scores["precision"], scores["recall"], scores["per_type"]["LOC"]["support"]
    (0.5, 0.5, 1)
    """
    from seqeval.metrics.sequence_labeling import get_entities

    if len(references) != len(predictions):
        raise ValueError(f"{len(references)} reference sentences but {len(predictions)} predicted ones")
    true: dict[str, set[tuple[int, int]]] = {}
    found: dict[str, set[tuple[int, int]]] = {}
    for side, tags in ((true, references), (found, predictions)):
        for entity_type, start, end in get_entities([list(sentence) for sentence in tags]):
            side.setdefault(entity_type, set()).add((start, end))

    def ratios(right: int, predicted: int, gold: int) -> dict[str, float]:
        precision = right / predicted if predicted else 0.0
        recall = right / gold if gold else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return {"precision": precision, "recall": recall, "f1": f1}

    per_type = {}
    for entity_type in sorted(true.keys() | found.keys()):
        gold, predicted = true.get(entity_type, set()), found.get(entity_type, set())
        per_type[entity_type] = {**ratios(len(gold & predicted), len(predicted), len(gold)), "support": len(gold)}
    totals = [sum(len(true.get(t, set()) & found.get(t, set())) for t in per_type),
              sum(len(spans) for spans in found.values()), sum(len(spans) for spans in true.values())]
    return {**ratios(*totals), "per_type": per_type, "predicted": totals[1], "support": totals[2]}


class _Tally:
    """One group's sentences as they are matched: the tags to score, error counts and examples."""

    def __init__(self) -> None:
        self.scores = GroupScores()
        self.references: list[list[str]] = []
        self.predictions: list[list[str]] = []
        self.seen: Counter = Counter()
        self.first: dict[tuple, str] = {}

    def add(self, tokens: Sequence[str], predicted: list[str], reference: list[str]) -> int:
        """Score one matched sentence; returns how many of its gold spans it labels right."""
        self.references.append(reference)
        self.predictions.append(predicted)
        right = 0
        for kind, gold, found in span_errors(predicted, reference):
            self.scores.errors[kind] += 1
            if kind == "correct":
                right += 1
                continue
            key = (kind, _texts(tokens, [gold] if gold else []), _texts(tokens, found))
            self.seen[key] += 1
            self.first.setdefault(key, " ".join(tokens))
        return right

    def finish(self, examples: int) -> GroupScores:
        scores = self.scores
        scores.scored = len(self.references)
        if self.references:
            scored = entity_scores(self.references, self.predictions)
            scores.precision, scores.recall, scores.f1 = scored["precision"], scored["recall"], scored["f1"]
            scores.per_type = scored["per_type"]
            scores.entities, scores.gold_entities = scored["predicted"], scored["support"]
        order = {key: index for index, key in enumerate(self.first)}
        ranked = sorted(self.seen, key=lambda key: (-self.seen[key], order[key]))
        for kind in ERROR_KINDS[1:]:
            chosen = [key for key in ranked if key[0] == kind][:examples]
            scores.examples[kind] = [{"gold": [list(pair) for pair in key[1]],
                                      "predicted": [list(pair) for pair in key[2]],
                                      "count": self.seen[key], "sentence": self.first[key]} for key in chosen]
        return scores


def _texts(tokens: Sequence[str], spans: Iterable[Span]) -> tuple[tuple[str, str], ...]:
    return tuple((" ".join(tokens[span.start:span.end]), span.label) for span in spans)


def _types_of(rows: Iterable[Sequence[str] | None]) -> set[str]:
    """The entity types of the tags of ``rows`` (tag names, or sentences of tags; ``None`` rows skipped)."""
    tags = {tag for row in rows if row for tag in ([row] if isinstance(row, str) else row)}
    return {entity_type for tag in tags if (entity_type := split_tag(tag)[1]) is not None}


def _column(rows: Any, name: str) -> list:
    """One column as a Python list, converted from Arrow at once (``rows[name]`` formats row by row)."""
    return rows.select_columns([name]).to_dict()[name]


def _tag_column(rows: Any, column: str,
                label_map: Mapping[str, str]) -> tuple[list[list[str] | None], set[str] | None]:
    """Every row's tags as strings after ``label_map`` (``None`` for a row without labels), and the types
    its ``ClassLabel`` declares (``None`` for a column of strings): :func:`~crop_hf.data.features.tag_strings`,
    read through Arrow at once."""
    names = tag_names(rows, column)
    values = _column(rows, column)
    if names is not None:
        renamed = [rename_tag(name, label_map) for name in names]
        return [None if ids is None else [renamed[i] for i in ids] for ids in values], _types_of(renamed)
    return [None if tags is None else [rename_tag(tag, label_map) for tag in tags] for tags in values], None


def _names(rows: Any, column: str) -> list[str]:
    """A column of names, read through its ``ClassLabel`` if it has one (``label_rule``, ``reason``)."""
    names = getattr(rows.features[column], "names", None)
    return [names[value] if names else str(value) for value in _column(rows, column)]


class _GoldIndex:
    """Gold sentences found by their text (:func:`sentence_key`), or by their characters when tokenized otherwise.

    A text the gold split holds several times is matched to its copies in turn (the k-th corpus
    sentence of that text to the k-th gold one, again from the first when the corpus has more).
    """

    def __init__(self, tokens: Sequence[Sequence[str]], tags: Sequence[list[str]]) -> None:
        self.tokens, self.tags = tokens, tags
        self.by_text: dict[str, list[int]] = {}
        self.by_spelling: dict[str, list[int]] = {}
        for index, words in enumerate(tokens):
            key = sentence_key(words)
            self.by_text.setdefault(key, []).append(index)
            self.by_spelling.setdefault("".join(key.split()), []).append(index)
        self.taken: Counter = Counter()
        self.retokenized = 0

    def match(self, tokens: Sequence[str]) -> tuple[int, list[str]] | None:
        """``(gold sentence, its tags on tokens)`` for the gold sentence of ``tokens``' text, or ``None``."""
        key = sentence_key(tokens)
        copies = self.by_text.get(key)
        if copies is None:
            key = "".join(key.split())
            copies = self.by_spelling.get(key)
            if copies is None:
                return None
        index = copies[self.taken[key] % len(copies)]
        self.taken[key] += 1
        if list(tokens) == list(self.tokens[index]):
            return index, self.tags[index]
        reference = retokenize_tags([_spelling_key(word) for word in self.tokens[index]], self.tags[index],
                                    [_spelling_key(word) for word in tokens])
        if reference is None:
            return None
        self.retokenized += 1
        return index, reference


def evaluate_corpus(corpus: Any, gold: Any, *, split: str = "train", discarded: Any = None,
                    corpus_split: str | None = None, lang: str | None = None,
                    label_map: Mapping[str, str] | None = None, examples: int = 3) -> CorpusEvaluation:
    """Score a corpus's labels against the gold labels of the same sentences (see the module docstring).

    Args:
        corpus: a corpus folder, Hub id or source spec, or a ``Dataset``/``DatasetDict``
            (:func:`read_corpus`).
        gold: a source spec (``"conll5:es?data_dir=data/conll2002"``) or a ``Dataset``/``DatasetDict``
            with ``tokens`` and ``ner_tags``.
        split: the split of ``gold`` to match against (a ``Dataset`` given is used whole).
        discarded: the discarded rows of a corpus given in memory (``tokens``, ``reason``,
            ``projected_tags``).
        corpus_split: a split (or a language) of the corpus; by default all its languages, or ``train``.
        lang: score only the corpus rows of this language (their ``lang`` column); by default the
            gold spec's language where the corpus has rows of several languages, it among them.
        label_map: entity type renames applied to both sides (``{"GPE_LOC": "LOC"}``; ``"O"``
            drops a type).
        examples: how many examples of each error kind to keep, most frequent first.

    Raises:
        ValueError: no corpus sentence has the text of a gold sentence (the message says how many
            were tried), or the two share no entity type.
    """
    import datasets

    started = time.perf_counter()
    label_map = dict(label_map or {})
    parts = read_corpus(corpus, discarded=discarded, split=corpus_split)
    gold_name = gold if isinstance(gold, str) else "(the gold corpus given)"
    if isinstance(gold, datasets.Dataset):
        gold_rows, gold_lang = gold, None
    else:
        source = load_source(gold_name, dataset=None if isinstance(gold, str) else gold, splits=(split,))
        gold_rows, gold_lang = source.sentences(split, "--gold"), source.lang
    languages = _languages(parts)
    if lang is None and gold_lang in languages and len(languages) > 1:
        lang = gold_lang
        logger.info("scoring the corpus's %r sentences only (the language of %s)", lang, gold_name)
    if lang is not None:
        if languages and lang not in languages:
            raise KeyError(f"corpus {parts.name}: no sentence of language {lang!r} (has {', '.join(sorted(languages))})")
        parts = CorpusParts(parts.name, _of_language(parts.kept, lang), _of_language(parts.discarded, lang))

    gold_tags, gold_declared = _tag_column(gold_rows, "ner_tags", label_map)
    kept_tags, kept_declared = _tag_column(parts.kept, "ner_tags", label_map)
    discarded_tags: list[list[str] | None] = []
    discarded_column = None
    if parts.discarded is not None:
        discarded_column = next((c for c in DISCARDED_TAG_COLUMNS if c in parts.discarded.column_names), None)
        discarded_tags = (_tag_column(parts.discarded, discarded_column, label_map)[0] if discarded_column
                          else [None] * len(parts.discarded))
    types, dropped_types = _scored_types(_types_of(kept_tags) | _types_of(discarded_tags), kept_declared,
                                         (gold_declared or set()) | _types_of(gold_tags), parts.name, gold_name)
    gold_tokens = _column(gold_rows, "tokens")
    gold_tags = [_keep_types(tags, dropped_types) for tags in gold_tags]
    index = _GoldIndex(gold_tokens, gold_tags)

    def tally(groups: Sequence[_Tally], tokens: Sequence[str], tags: Sequence[str] | None,
              where: str) -> tuple[int, int] | None:
        """Count one corpus sentence in each of ``groups``; ``(gold sentence, gold spans labeled right)``
        when it was matched and scored."""
        for group in groups:
            group.scores.sentences += 1
        found = index.match(tokens)
        if found is None:
            return None
        for group in groups:
            group.scores.matched += 1
        if tags is None:
            return None
        if len(tags) != len(tokens):
            raise ValueError(f"{where}: {len(tokens)} tokens but {len(tags)} tags")
        predicted = _keep_types(tags, dropped_types)
        right = [group.add(tokens, predicted, found[1]) for group in groups]
        return found[0], right[0]

    kept = _Tally()
    rules: dict[str, _Tally] = {}
    rule_names = _names(parts.kept, "label_rule") if "label_rule" in parts.kept.column_names else None
    covered: dict[int, int] = {}  # gold sentence -> its gold spans that the kept corpus labels right
    for row, (tokens, tags) in enumerate(zip(_column(parts.kept, "tokens"), kept_tags, strict=True)):
        groups = [kept, rules.setdefault(rule_names[row], _Tally())] if rule_names else [kept]
        result = tally(groups, tokens, tags, f"corpus {parts.name}, kept sentence {row}")
        if result is not None:
            covered.setdefault(*result)
    reasons: dict[str, _Tally] = {}
    if parts.discarded is not None and len(parts.discarded):
        why = (_names(parts.discarded, "reason") if "reason" in parts.discarded.column_names
               else ["discarded"] * len(parts.discarded))
        for row, (tokens, tags) in enumerate(zip(_column(parts.discarded, "tokens"), discarded_tags, strict=True)):
            tally([reasons.setdefault(why[row], _Tally())], tokens or [], tags or None,
                  f"corpus {parts.name}, discarded sentence {row} ({discarded_column})")
    _check_shared(parts, [kept, *reasons.values()], gold_tokens, gold_name, split, lang)

    per_sentence = [len(tags_to_spans(tags)) for tags in gold_tags]
    total = sum(per_sentence)
    in_covered, right = sum(per_sentence[i] for i in covered), sum(covered.values())
    coverage = {"gold_sentences": len(covered), "gold_entities": in_covered,
                "share": in_covered / total if total else 0.0, "found": right,
                "found_share": right / total if total else 0.0}
    return CorpusEvaluation(
        corpus=parts.name, gold=gold_name, split=split, lang=lang, gold_sentences=len(gold_tokens),
        gold_entities=total, types=sorted(types), corpus_only_types=sorted(dropped_types["corpus"]),
        gold_only_types=sorted(dropped_types["gold"]), kept=kept.finish(examples),
        rules={name: t.finish(examples) for name, t in sorted(rules.items())},
        discarded={name: t.finish(examples) for name, t in reasons.items()}, coverage=coverage,
        retokenized=index.retokenized, seconds=time.perf_counter() - started)


def _scored_types(corpus_found: set[str], corpus_declared: set[str] | None, gold_types: set[str], corpus: str,
                  gold: str) -> tuple[set[str], dict[str, set[str]]]:
    """The types to score, and those only one side has (``{"corpus": ..., "gold": ...}``, said in a warning).

    A corpus's types are those its ``ClassLabel`` declares (its labeler's label set) and those its
    tags use. A gold type is "only in the gold" where the corpus declares a label set without it;
    a corpus of tag strings declares none, so every gold type is scored (a type it never predicts
    is missed, not excused).
    """
    corpus_types = corpus_found | (corpus_declared or set())
    types = gold_types if corpus_declared is None else corpus_types & gold_types
    if corpus_types and not corpus_types & gold_types:
        raise ValueError(f"corpus {corpus} and gold {gold} share no entity type: the corpus has "
                         f"{', '.join(sorted(corpus_types)) or 'none'}, the gold {', '.join(sorted(gold_types)) or 'none'}"
                         "; rename one side's types with label_map (OLD=NEW)")
    only = {"corpus": corpus_types - gold_types, "gold": gold_types - types}
    if only["corpus"] or only["gold"]:
        said = [f"{', '.join(sorted(names))} only in the {side}" for side, names in only.items() if names]
        logger.warning("cannot score entity type(s) %s (%s): read as O on both sides; label_map renames a type",
                       ", ".join(sorted(only["corpus"] | only["gold"])), "; ".join(said))
    return types, only


def _keep_types(tags: list[str], dropped: Mapping[str, set[str]]) -> list[str]:
    """``tags`` with every tag of a type only one side has read as ``O``."""
    if not (dropped["corpus"] or dropped["gold"]):
        return tags
    unscored = dropped["corpus"] | dropped["gold"]
    return [tag if tag == "O" or split_tag(tag)[1] not in unscored else "O" for tag in tags]


def _check_shared(parts: CorpusParts, groups: Sequence[_Tally], gold_tokens: Sequence[Sequence[str]],
                  gold: str, split: str, lang: str | None) -> None:
    """Refuse a corpus without sentences, or one that shares no sentence with the gold split."""
    tried = sum(group.scores.sentences for group in groups)
    if not tried:
        raise EmptyInputError(f"corpus {parts.name}: no sentences" + (f" of language {lang!r}" if lang else ""))
    if any(group.scores.matched for group in groups):
        return
    kept = groups[0].scores.sentences
    first = _column(parts.kept if kept else parts.discarded, "tokens")[0]
    raise ValueError(
        f"no sentence of corpus {parts.name} has the text of a gold sentence: tried {tried:,} corpus sentences "
        f"({kept:,} kept, {tried - kept:,} discarded) against the {len(gold_tokens):,} sentences of gold {gold} "
        f"({split!r}); are they the same language, split and text? (first corpus sentence: "
        f"{sentence_key(first or [])[:80]!r}; first gold sentence: "
        f"{sentence_key(gold_tokens[0])[:80] if gold_tokens else ''!r})")


# -- the report ---------------------------------------------------------------------------------


def _percent(value: float, scored: int) -> str:
    return f"{100 * value:.1f}" if scored else "-"


def _spans(pairs: Sequence[Sequence[str]]) -> str:
    return ", ".join(f'{label} "{text}"' for text, label in pairs) or "nothing"


def _groups(evaluation: CorpusEvaluation) -> list[tuple[str, GroupScores]]:
    groups = [("kept", evaluation.kept)]
    groups += [(f"kept, label_rule {name}", scores) for name, scores in evaluation.rules.items()]
    groups += [(f"discarded, {reason}", scores) for reason, scores in evaluation.discarded.items()]
    return groups


def format_corpus_report(evaluation: CorpusEvaluation, *, examples: bool = True) -> str:
    """The report ``crop-hf evaluate-corpus`` prints: scores per group and type, coverage, errors, examples."""
    e = evaluation
    discarded = sum(scores.sentences for scores in e.discarded.values())
    lines = [f"corpus {e.corpus}" + (f" ({e.lang})" if e.lang else "") + f": {e.kept.sentences:,} kept"
             + (f", {discarded:,} discarded" if e.discarded else "") + " sentences",
             f"gold {e.gold} ({e.split}): {e.gold_sentences:,} sentences, {e.gold_entities:,} entities",
             f"types scored: {' '.join(e.types)}"]
    if e.unscored_types:
        said = [f"{' '.join(e.corpus_only_types)} (only in the corpus)" if e.corpus_only_types else "",
                f"{' '.join(e.gold_only_types)} (only in the gold)" if e.gold_only_types else ""]
        lines.append(f"types not scored, read as O: {'; '.join(filter(None, said))}")
    groups = _groups(e)
    header = ["sentences", "matched", "scored", "entities", "gold", "P", "R", "F1", *(f"{t} F1" for t in e.types)]
    rows = []
    for name, scores in groups:
        rows.append([name, f"{scores.sentences:,}", f"{scores.matched:,}", f"{scores.scored:,}",
                     f"{scores.entities:,}", f"{scores.gold_entities:,}",
                     _percent(scores.precision, scores.scored), _percent(scores.recall, scores.scored),
                     _percent(scores.f1, scores.scored),
                     *(_percent(scores.per_type[t]["f1"], 1) if t in scores.per_type else "-" for t in e.types)])
    lines += ["", format_table(["", *header], rows, align_first="left")]
    unmatched = sum(scores.sentences - scores.matched for scores in [e.kept, *e.discarded.values()])
    lines.append(f"{unmatched:,} corpus sentences have no gold sentence of the same text"
                 + (f"; {e.retokenized:,} matched on their text, tokenized otherwise" if e.retokenized else ""))
    c = e.coverage
    lines += ["", f"the kept sentences cover {c['gold_entities']:,} of the {e.gold_entities:,} gold entities "
                  f"({100 * c['share']:.1f}%, in {c['gold_sentences']:,} gold sentences) and label "
                  f"{c['found']:,} of them right ({100 * c['found_share']:.1f}%)"]
    scored = [(name, scores) for name, scores in groups if scores.scored]
    if scored:
        table = [[ERROR_NAMES[kind], *(f"{scores.errors[kind]:,}" for _, scores in scored)] for kind in ERROR_KINDS]
        lines += ["", format_table(["errors", *(name for name, _ in scored)], table, align_first="left")]
    if examples:
        for name, scores in scored:
            shown = [(kind, example) for kind in ERROR_KINDS[1:] for example in scores.examples.get(kind, [])]
            if not shown:
                continue
            lines += ["", f"examples ({name}):"]
            for kind, example in shown:
                sentence = example["sentence"]
                sentence = sentence if len(sentence) <= 90 else sentence[:87] + "..."
                lines.append(f"  {kind:<8} {example['count']:>5}x  gold {_spans(example['gold'])} -> "
                             f"{_spans(example['predicted'])}   in: {sentence}")
    lines += ["", f"{e.seconds:.1f} s"]
    return "\n".join(lines)
