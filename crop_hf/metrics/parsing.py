"""Semantic parsing scores as CSTOP reports them: exact match, intent accuracy, slot F1, per domain.

* **Exact match**: the whole predicted tree equals the gold one (bracket parses compared after
  whitespace canonicalisation: ``[IN:X  a [SL:Y b]]`` equals ``[IN:X a [SL:Y b ] ]``), nested
  intents and all. A gold tree with an intent inside a slot can never be matched by a flat parser;
  a hierarchical one matches it only with every nested intent and slot right.
* **Intent accuracy**: the root intents agree.
* **Slot micro-F1** with seqeval's semantics: a slot counts only when its name, first and last word
  all match; gold slots are the top-level ones (each over all the words under it, as
  :func:`crop_hf.seqlogical.flatten_top_level` reads them), spans compared by word position.

Scores come overall, per domain (given ``domains``) and separately for the rows whose gold tree is
nested (``nested``) and those that are flat (``flat``), so the cost of nesting stays visible. Given
the training parses (``seen``), the rows whose gold parse repeats one of them word for word
(``seen``, a quarter of Hinglish-TOP's validation rows) are scored apart from the rest
(``unseen``): a parser can match a seen tree by memory, so ``unseen`` is what it learned.
An unparseable prediction scores as wrong intent, no slots, no match.

Each group also says where its wrong trees first differ from the gold ones (``errors``): the root
``intent``; else the ``top_level`` slots (a name or a boundary, or a slot missed or added); else
``inside`` a slot (a nested intent missed, added or wrong, or its slots). A tree's exact match is at
most its top level's, so this tells a parser whose nested trees fail at the top level (which a
better nested decoder cannot mend) from one whose nested intents are wrong.

>>> scores = parse_scores(["[IN:GET_WEATHER weather [SL:LOCATION Delhi ] ]", "[IN:PLAY_MUSIC play ]"],
...                       ["[IN:GET_WEATHER weather [SL:LOCATION  Delhi]]", "[IN:PLAY_MUSIC [SL:MUSIC_TYPE play ] ]"],
...                       domains=["weather", "music"])
>>> scores["exact_match"], scores["intent_accuracy"], round(scores["slot_f1"], 3)
(0.5, 1.0, 0.667)
>>> scores["per_domain"]["music"]["exact_match"]
0.0
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from crop_hf.seqlogical import ParseError, Tree, parse

__all__ = ["ERROR_KINDS", "canonical_parse", "format_error_table", "format_parse_table", "parse_scores"]

_TOKEN = re.compile(r"\[[^\s\[\]]*|\]|[^\s\[\]]+")


def canonical_parse(text: str) -> str:
    """A parse with canonical spacing (one space between brackets, labels and words).

    >>> canonical_parse("[IN:X  a [SL:Y b]]")
    '[IN:X a [SL:Y b ] ]'
    """
    return " ".join(_TOKEN.findall(text))


@dataclass
class _Row:
    intent: str | None
    spans: set[tuple[str, int, int]]
    nested: bool


def _read(text: str) -> _Row:
    try:
        tree = parse(text)
    except ParseError:
        return _Row(None, set(), False)
    # The top level as flatten_top_level reads it, without its refusal of empty slots (a gold tree a
    # model cannot represent still scores, as wrong, rather than stopping the evaluation).
    spans, position = set(), 0
    for child in tree.children:
        width = len(child.tokens) if isinstance(child, Tree) else 1
        if isinstance(child, Tree):
            spans.add((child.name, position, position + width))
        position += width
    return _Row(tree.name, spans, tree.depth > 2)


#: Where a wrong tree first differs from the gold one, outermost first (``errors`` in the scores).
ERROR_KINDS = ("intent", "top_level", "inside")


def _error(exact: bool, guess: _Row, gold: _Row) -> str | None:
    if exact:
        return None
    if guess.intent != gold.intent:
        return "intent"
    return "top_level" if guess.spans != gold.spans else "inside"


def _summarise(rows: list[tuple[bool, bool, int, int, int, str | None]]) -> dict[str, Any]:
    n = len(rows)
    matched = sum(r[0] for r in rows)
    intents = sum(r[1] for r in rows)
    correct = sum(r[2] for r in rows)
    predicted = sum(r[3] for r in rows)
    gold = sum(r[4] for r in rows)
    precision = correct / predicted if predicted else 0.0
    recall = correct / gold if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"exact_match": matched / n if n else 0.0, "intent_accuracy": intents / n if n else 0.0,
            "slot_precision": precision, "slot_recall": recall, "slot_f1": f1, "count": n,
            "errors": {kind: sum(r[5] == kind for r in rows) for kind in ERROR_KINDS}}


def parse_scores(predictions: Sequence[str], references: Sequence[str],
                 domains: Sequence[str] | None = None, seen: Iterable[str] | None = None) -> dict[str, Any]:
    """Score predicted bracket parses against gold ones.

    Returns ``exact_match``, ``intent_accuracy``, ``slot_precision``/``slot_recall``/``slot_f1`` and
    ``count`` over all rows, the same under ``nested`` and ``flat`` (gold trees with and without
    intents inside slots) and, with ``domains``, under ``per_domain[domain]``. Each group's
    ``errors`` counts its wrong trees by where they first differ from gold (:data:`ERROR_KINDS`:
    the root intent, the top-level slots, inside a slot). With ``seen`` (the training parses), the
    same again under ``seen`` (rows whose gold parse equals a training parse, spacing aside) and
    ``unseen`` (the others).

    >>> scores = parse_scores(["[IN:A x ]", "[IN:A y ]"], ["[IN:A x ]", "[IN:A  z]"], seen=["[IN:A x]"])
    >>> scores["seen"]["count"], scores["seen"]["exact_match"], scores["unseen"]["count"], scores["unseen"]["exact_match"]
    (1, 1.0, 1, 0.0)

    >>> scores = parse_scores(["[IN:A [SL:B x ] ]", "[IN:A [SL:B x ] y ]", "[IN:C x y ]"],
    ...                       ["[IN:A [SL:B [IN:D x ] ] ]", "[IN:A [SL:B x y ] ]", "[IN:A x y ]"])
    >>> scores["errors"]
    {'intent': 1, 'top_level': 1, 'inside': 1}
    """
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions but {len(references)} references")
    if domains is not None and len(domains) != len(references):
        raise ValueError(f"{len(domains)} domains but {len(references)} references")
    rows = []
    nested_flags = []
    for index, (prediction, reference) in enumerate(zip(predictions, references, strict=True)):
        gold = _read(reference)
        if gold.intent is None:
            raise ValueError(f"reference {index} is not a valid parse: {reference!r}")
        guess = _read(prediction)
        exact = canonical_parse(prediction) == canonical_parse(reference)
        rows.append((exact, guess.intent == gold.intent, len(guess.spans & gold.spans), len(guess.spans),
                     len(gold.spans), _error(exact, guess, gold)))
        nested_flags.append(gold.nested)
    scores = _summarise(rows)
    scores["nested"] = _summarise([r for r, nested in zip(rows, nested_flags, strict=True) if nested])
    scores["flat"] = _summarise([r for r, nested in zip(rows, nested_flags, strict=True) if not nested])
    if domains is not None:
        scores["per_domain"] = {domain: _summarise([r for r, d in zip(rows, domains, strict=True) if d == domain])
                                for domain in sorted(set(domains))}
    if seen is not None:
        known = {canonical_parse(parse) for parse in seen}
        repeats = [canonical_parse(reference) in known for reference in references]
        scores["seen"] = _summarise([r for r, repeat in zip(rows, repeats, strict=True) if repeat])
        scores["unseen"] = _summarise([r for r, repeat in zip(rows, repeats, strict=True) if not repeat])
    return scores


def format_parse_table(scores: dict[str, Any]) -> str:
    """A text table: one line per domain, then ``flat``, ``nested``, ``seen`` and ``unseen`` (when scored) and ``all``.

    >>> print(format_parse_table(parse_scores(["[IN:A x ]"], ["[IN:A x ]"], ["d"])))
    domain     count  exact match  intent acc  slot F1
    d              1        100.0       100.0      0.0
    flat           1        100.0       100.0      0.0
    nested         0          0.0         0.0      0.0
    all            1        100.0       100.0      0.0
    """
    lines = [f"{'domain':<10} {'count':>5}  {'exact match':>11}  {'intent acc':>10}  {'slot F1':>7}"]
    groups = [*scores.get("per_domain", {}).items(), ("flat", scores["flat"]), ("nested", scores["nested"]),
              *((name, scores[name]) for name in ("seen", "unseen") if name in scores), ("all", scores)]
    for name, group in groups:
        lines.append(f"{name:<10} {group['count']:>5}  {100 * group['exact_match']:>11.1f}  "
                     f"{100 * group['intent_accuracy']:>10.1f}  {100 * group['slot_f1']:>7.1f}")
    return "\n".join(lines)


def format_error_table(scores: dict[str, Any]) -> str:
    """A text table of where the wrong trees of ``flat``, ``nested`` and ``all`` rows first differ from gold.

    Columns: wrong trees, then the root intent, the top-level slots, inside a slot (percent of the wrong).

    >>> print(format_error_table(parse_scores(["[IN:A [SL:B x ] ]", "[IN:C y ]"],
    ...                                       ["[IN:A [SL:B [IN:D x ] ] ]", "[IN:A y ]"])))
    wrong      count   intent  top-level slots  inside a slot
    flat           1    100.0              0.0            0.0
    nested         1      0.0              0.0          100.0
    all            2     50.0              0.0           50.0
    """
    lines = [f"{'wrong':<10} {'count':>5}  {'intent':>7}  {'top-level slots':>15}  {'inside a slot':>13}"]
    for name, group in (("flat", scores["flat"]), ("nested", scores["nested"]), ("all", scores)):
        errors = group["errors"]
        wrong = sum(errors.values())
        share = [100 * errors[kind] / wrong if wrong else 0.0 for kind in ERROR_KINDS]
        lines.append(f"{name:<10} {wrong:>5}  {share[0]:>7.1f}  {share[1]:>15.1f}  {share[2]:>13.1f}")
    return "\n".join(lines)
