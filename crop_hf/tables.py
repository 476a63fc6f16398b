"""One table formatter for every table crop-hf prints or writes: evaluation results, cards, run reports.

>>> print(format_table(["lang", "f1"], [["es", "81.2"], ["nl", "79.0"]]))
lang    f1
----  ----
  es  81.2
  nl  79.0
>>> print(format_table(["lang", "f1"], [["es", "81.2"]], style="markdown"))
| lang | f1 |
| --- | ---: |
| es | 81.2 |
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

__all__ = ["format_table", "score_rows"]


def format_table(header: Sequence[Any], rows: Sequence[Sequence[Any]], *,
                 style: Literal["text", "markdown"] = "text", align_first: Literal["left", "right"] = "right") -> str:
    """Render ``rows`` under ``header``.

    ``"text"``: columns right-aligned to their widest cell (the first column as ``align_first``
    says), a dashed rule under the header, for terminals and logs. ``"markdown"``: a GitHub table,
    the first column left-aligned and the others right-aligned (numbers), for cards and reports.
    """
    header = [str(cell) for cell in header]
    body = [[str(cell) for cell in row] for row in rows]
    for row in body:
        if len(row) != len(header):
            raise ValueError(f"a row has {len(row)} cells for {len(header)} columns: {row}")
    if style == "markdown":
        lines = ["| " + " | ".join(header) + " |", "| --- |" + " ---: |" * (len(header) - 1)]
        lines += ["| " + " | ".join(row) + " |" for row in body]
        return "\n".join(lines)
    if style != "text":
        raise ValueError(f"style must be 'text' or 'markdown', got {style!r}")
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]

    def line(row: list[str]) -> str:
        cells = [cell.ljust(width) if i == 0 and align_first == "left" else cell.rjust(width)
                 for i, (cell, width) in enumerate(zip(row, widths, strict=True))]
        return "  ".join(cells)

    return "\n".join([line(header), "  ".join("-" * width for width in widths), *map(line, body)])


def score_rows(evaluation: Any, per_type: bool = True) -> tuple[list[str], list[list[str]]]:
    """``(columns, rows)`` of a :class:`crop_hf.ner.evaluate.NerEvaluation`: languages (and ``avg``) as columns;
    P, R, F1, per-type F1 and sentence counts as rows, in percent. The one table behind the printed
    evaluation table and the model card."""
    columns = dict(evaluation.languages)
    if evaluation.average is not None:
        columns["avg"] = evaluation.average
    percent = lambda value: f"{100 * value:.1f}"  # noqa: E731
    rows = [[metric, *(percent(getattr(s, metric)) for s in columns.values())]
            for metric in ("precision", "recall", "f1")]
    if per_type:
        for entity_type in sorted({t for s in columns.values() for t in s.per_type}):
            rows.append([f"{entity_type} f1", *(percent(s.per_type[entity_type]["f1"]) if entity_type in s.per_type
                                                else "-" for s in columns.values())])
    rows.append(["sentences", *(str(s.sentences) for s in columns.values())])
    return list(columns), rows
