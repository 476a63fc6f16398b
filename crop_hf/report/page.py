"""Write a report: PNG plots, ``report.json``, one self-contained HTML page, and the card's plot section."""

from __future__ import annotations

import base64
import json
import logging
import re
import statistics as stats
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crop_hf.report.data import ReportData, read_gold, read_report_data, read_statistics
from crop_hf.report.plots import PLOTS, label_numbers, require_matplotlib, status_numbers

logger = logging.getLogger(__name__)

__all__ = ["CARD_END", "CARD_START", "ReportFiles", "card_section", "summary", "update_card", "write_report"]

CARD_START = "<!-- crop-hf report: start -->"
CARD_END = "<!-- crop-hf report: end -->"


@dataclass
class ReportFiles:
    """What :func:`write_report` wrote: the folder, the page, each plot by name, and the numbers."""

    folder: Path
    html: Path
    json: Path
    plots: dict[str, Path] = field(default_factory=dict)
    data: ReportData | None = None
    card: Path | None = None

    def written(self) -> list[tuple[str, Path]]:
        """Every file written into :attr:`folder`, with what it is (``"plot"``, ``"numbers"``, ``"page"``),
        plots in :data:`~crop_hf.report.plots.PLOTS` order: what ``crop-hf report`` lists."""
        return [*(("plot", path) for path in self.plots.values()), ("numbers", self.json), ("page", self.html)]


def summary(data: ReportData) -> str | None:
    """The one sentence a report leads with when the corpus is empty (``None`` otherwise).

    >>> from crop_hf.report.data import LanguageReport
    >>> summary(ReportData("out", ["too_long", "all_o"], [LanguageReport("de", {"input": 4, "kept": 0, "too_long": 1, "all_o": 3})]))
    'No sentence was kept: all 4 sentences read were dropped, most of them by all_o (3).'
    """
    if data.total_input == 0:
        return "No sentence was read: the input was empty, so there is nothing to report but the settings."
    if data.total_kept == 0:
        dropped = {reason: sum(lang.counts.get(reason, 0) for lang in data.languages) for reason in data.reasons}
        reason = max(dropped, key=dropped.get) if dropped else None
        most = f", most of them by {reason} ({dropped[reason]:,})" if reason and dropped[reason] else ""
        return f"No sentence was kept: all {data.total_input:,} sentences read were dropped{most}."
    return None


def write_report(
    output_dir: str | Path,
    *,
    gold: str | None = None,
    gold_split: str | None = None,
    gold_label_map: dict[str, str] | None = None,
    report_dir: str | Path | None = None,
    update_card_file: bool = True,
) -> ReportFiles:
    """Report on a synthesis output folder: plots, numbers, an HTML page, and the card's plot section.

    Args:
        output_dir: what ``crop-hf synthesize`` wrote.
        gold: gold target labels (a corpus spec, see :func:`crop_hf.report.data.read_gold`);
            adds projection P/R/F1 per language and label.
        gold_split / gold_label_map: which split of the gold corpus, and type renames.
        report_dir: where the files go (default ``OUTPUT_DIR/report``, which the card links).
        update_card_file: put links to the plots into ``OUTPUT_DIR/README.md`` (the dataset
            card), replacing an earlier report's section.
    """
    require_matplotlib()
    output = Path(output_dir)
    folder = Path(report_dir) if report_dir is not None else output / "report"
    gold_labels = None
    if gold:
        gold_labels = read_gold(gold, list(read_statistics(output)), split=gold_split, label_map=gold_label_map)
    data = read_report_data(output, gold=gold_labels)
    folder.mkdir(parents=True, exist_ok=True)
    plots: dict[str, Path] = {}
    for name, (filename, _, draw, applies) in PLOTS.items():
        path = folder / filename
        if applies(data):
            plots[name] = draw(data, path)
        elif path.exists():
            path.unlink()  # a plot of an earlier report that no longer applies
    json_path = folder / "report.json"
    json_path.write_text(json.dumps(data.to_dict(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    html = folder / "index.html"
    html.write_text(render_html(data, plots), encoding="utf-8")
    files = ReportFiles(folder, html, json_path, plots, data)
    card = output / "README.md"
    if update_card_file and card.exists():
        try:
            relative = folder.resolve().relative_to(output.resolve()).as_posix()
        except ValueError:
            logger.warning("report folder %s is outside %s: the card cannot link it", folder, output)
        else:
            update_card(card, card_section(data, {name: f"{relative}/{path.name}" for name, path in plots.items()},
                                           f"{relative}/{html.name}"))
            files.card = card
    logger.debug("report written to %s", html)  # the commands print where it is
    return files


def card_section(data: ReportData, plots: dict[str, str], page: str) -> str:
    """The card's plot section: each plot as a linked image (paths relative to the card)."""
    lines = [CARD_START, "## Plots", ""]
    message = summary(data)
    if message:
        lines += [f"**{message}**", ""]
    for name, path in plots.items():
        lines += [f"### {PLOTS[name][1]}", "", f"![{PLOTS[name][1]}]({path})", ""]
    lines += [f"The numbers behind the plots, and tables of them: [{page}]({page}) (a self-contained page, "
              f"made by `crop-hf report`).", CARD_END]
    return "\n".join(lines)


def update_card(card: Path, section: str) -> None:
    """Replace the card's report section (between :data:`CARD_START` and :data:`CARD_END`), or add one.

    A card without the markers gets the section before its ``## Features`` heading, or at its end.
    """
    text = card.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(CARD_START) + ".*?" + re.escape(CARD_END), re.DOTALL)
    if pattern.search(text):
        text = pattern.sub(lambda _: section, text, count=1)
    elif "\n## Features" in text:
        text = text.replace("\n## Features", f"\n{section}\n\n## Features", 1)
    else:
        text = text.rstrip("\n") + f"\n\n{section}\n"
    card.write_text(text, encoding="utf-8")


# -- the HTML page ----------------------------------------------------------------------------

def _percent(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "–"


def _median(values: list[int]) -> str:
    return f"{stats.median(values):g}" if values else "–"


def _tables(data: ReportData) -> dict[str, dict[str, Any]]:
    """Per section: a table (header and rows of cells) of the numbers its plot draws."""
    tables: dict[str, dict[str, Any]] = {}
    columns = ["input", "kept", *data.reasons]
    rows = [[lang.lang, *(f"{lang.counts.get(c, 0):,}" for c in columns), _percent(lang.kept, lang.input)]
            for lang in data.languages]
    totals = [sum(lang.counts.get(c, 0) for lang in data.languages) for c in columns]
    if len(data.languages) > 1:
        rows.append(["all", *(f"{t:,}" for t in totals), _percent(data.total_kept, data.total_input)])
    tables["funnel"] = {"header": ["lang", *columns, "kept %"], "rows": rows}

    numbers = label_numbers(data)
    labels = data.labels()
    keys = [lang.lang for lang in data.languages] + (["all"] if len(data.languages) > 1 else [])
    rows = []
    for key in keys:
        source = numbers["source"].get(key)
        target = numbers["target"].get(key, {})
        for label in labels:
            rows.append([key, label,
                         f"{source.get(label, 0):,}" if source is not None else "not recorded",
                         _percent(source.get(label, 0), sum(source.values())) if source is not None else "–",
                         f"{target.get(label, 0):,}", _percent(target.get(label, 0), sum(target.values()))])
    tables["labels"] = {"header": ["lang", data.label_kind, "source", "source %", "kept target", "target %"],
                        "rows": rows}

    tables["lengths"] = {"header": ["lang", "kept", "median tokens (kept)", "dropped", "median tokens (dropped)"],
                         "rows": [[lang.lang, f"{len(lang.lengths_kept):,}", _median(lang.lengths_kept),
                                   f"{len(lang.lengths_dropped):,}", _median(lang.lengths_dropped)]
                                  for lang in data.languages]}

    statuses = data.statuses()
    status_counts = status_numbers(data)
    tables["statuses"] = {
        "header": ["lang", *statuses, "entities"],
        "rows": [[lang.lang, *(f"{status_counts[lang.lang].get(s, 0):,}" for s in statuses),
                  f"{sum(status_counts[lang.lang].values()):,}"] for lang in data.languages]}

    rows = []
    for lang in data.languages:
        if lang.gold is None:
            continue
        gold = lang.gold
        rows.append([lang.lang, "all", f"{100 * gold['precision']:.1f}", f"{100 * gold['recall']:.1f}",
                     f"{100 * gold['f1']:.1f}", f"{gold['matched']:,}", f"{gold['kept']:,}"])
        for label, scores in gold["per_type"].items():
            rows.append([lang.lang, label, f"{100 * scores['precision']:.1f}", f"{100 * scores['recall']:.1f}",
                         f"{100 * scores['f1']:.1f}", f"support {scores['support']:,}", ""])
    tables["gold"] = {"header": ["lang", data.label_kind, "P", "R", "F1", "matched sentences", "kept"], "rows": rows}
    return tables


_EXPLANATIONS = {
    "funnel": "Each sentence read is either kept or dropped by the first filter it failed. Top: all "
              "languages, input minus each reason gives kept; below (several languages): each language's shares.",
    "labels": "Source side: every {kind} the source-language model found in the translations of the "
              "sentences that reached tagging (kept or dropped). Target side: the {kind}s of the kept sentences' "
              "labels. A label whose share shrinks is lost by filters or projection more often than the others. "
              "The target side can count more mentions than its sentences' source side: lexical projection also "
              "labels further occurrences of an entity it found.",
    "lengths": "Tokens per sentence (words; characters for languages written without spaces).",
    "statuses": "What became of each translated entity when projected onto the raw sentence, in kept and dropped "
                "sentences together (found/fuzzy/projected/split reached the target; the others are failures).",
    "gold": "Kept sentences scored against gold target labels (seqeval, exact spans); the run's sentences are "
            "matched to gold sentences by text, and matched sentences that were dropped count in 'kept' only.",
}

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>crop-hf report: {{ title }}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1300px; color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; border-bottom: 1px solid #ddd; padding-bottom: .2em; margin-top: 2em; }
.summary { font-size: 1.05em; } .alert { background: #fdecea; border-left: 4px solid #d62728; padding: .6em 1em; }
.note { background: #fff8e1; border-left: 4px solid #ff9800; padding: .4em 1em; }
img { max-width: 100%; height: auto; border: 1px solid #eee; }
.scroll { overflow-x: auto; } table { border-collapse: collapse; font-size: .85em; margin: .5em 0; }
th { max-width: 9em; }
th, td { border: 1px solid #ddd; padding: .2em .5em; text-align: right; }
th:first-child, td:first-child, td:nth-child(2) { text-align: left; }
details { margin: .5em 0 1em; } summary { cursor: pointer; color: #1f77b4; }
</style></head><body>
<h1>crop-hf report: {{ title }}</h1>
<p class="summary">{{ languages|length }} language{{ "s" if languages|length != 1 }} ({{ languages|join(", ") }});
{{ "{:,}".format(total_kept) }} of {{ "{:,}".format(total_input) }} sentences kept ({{ kept_percent }}).
Output folder: <code>{{ output_dir }}</code>.</p>
{% if alert %}<p class="alert"><strong>{{ alert }}</strong></p>{% endif %}
{% for note in notes %}<p class="note">{{ note }}</p>{% endfor %}
{% for section in sections %}
<h2 id="{{ section.name }}">{{ section.caption }}</h2>
<p>{{ section.explanation }}</p>
{% if section.image %}<img src="data:image/png;base64,{{ section.image }}" alt="{{ section.caption }}">{% endif %}
<details{% if section.open %} open{% endif %}><summary>Numbers ({{ section.table.rows|length }} rows)</summary>
<div class="scroll"><table><tr>{% for cell in section.table.header %}<th>{{ cell|replace("_", "_\u200b") }}</th>{% endfor %}</tr>
{% for row in section.table.rows %}<tr>{% for cell in row %}<td>{{ cell }}</td>{% endfor %}</tr>
{% endfor %}</table></div></details>
{% endfor %}
<p><small>Made by <code>crop-hf report</code>; the numbers are in <code>report.json</code> beside this page.</small></p>
</body></html>
"""


def render_html(data: ReportData, plots: dict[str, Path]) -> str:
    """One HTML page, images embedded as data URIs: it opens anywhere, offline, on its own."""
    from jinja2 import Environment

    tables = _tables(data)
    sections = []
    for name, (_, caption, _, _) in PLOTS.items():
        if name not in plots:
            continue
        image = base64.b64encode(plots[name].read_bytes()).decode("ascii")
        sections.append({"name": name, "caption": caption, "image": image, "table": tables[name],
                         "explanation": _EXPLANATIONS[name].format(kind=data.label_kind),
                         "open": len(tables[name]["rows"]) <= 12})
    environment = Environment(autoescape=True)
    return environment.from_string(_PAGE).render(
        title=Path(data.output_dir).name or data.output_dir, output_dir=data.output_dir,
        languages=[lang.lang for lang in data.languages], total_kept=data.total_kept, total_input=data.total_input,
        kept_percent=_percent(data.total_kept, data.total_input), alert=summary(data), notes=data.notes,
        sections=sections)
