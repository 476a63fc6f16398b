"""The plots of a corpus report, drawn with matplotlib from a :class:`~crop_hf.report.data.ReportData`.

Figures are built with ``matplotlib.figure.Figure`` and its Agg canvas, never ``pyplot``: no
global figure state, no GUI backend, nothing that needs a display. Every plot has one row per
language (bars, box plots, heat-map rows) and grows in height with the number of languages, so
that the same code draws one language or forty; a single-language run gets the "all languages"
panels only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from crop_hf.report.data import OK_STATUSES, ReportData

__all__ = ["PLOTS", "draw_projection_evaluation", "require_matplotlib"]

KEPT_COLOR = "#2ca02c"
SOURCE_COLOR = "#7f7f7f"
INPUT_COLOR = "#3b4a5a"
TARGET_COLOR = "#1f77b4"
# Drop reasons and projection failures in colours that are never the "kept" green.
_WARM = ("#d62728", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf", "#7f7f7f",
         "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#dbdb8d", "#9edae5")
_GOOD = ("#2ca02c", "#98df8a", "#1f77b4", "#aec7e8")


def require_matplotlib():
    """Import matplotlib, or fail saying how to install it (it is the ``report`` extra)."""
    try:
        import matplotlib
    except ImportError as error:  # pragma: no cover - the dev extra installs it
        raise ImportError("crop-hf reports draw with matplotlib, which is not installed: "
                          "pip install 'crop-hf[report]' (or pip install matplotlib)") from error
    return matplotlib


def _figure(width: float, height: float):
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _layout(multi: bool, rows: int = 0, *, per_row: float = 0.3, top: float = 3.6):
    """A figure with the "all languages" panel on top and, for several languages, one row per language below.

    Returns ``(figure, top axes, per-language axes or None)``; the figure grows with ``rows``.
    """
    if not multi:
        figure = _figure(8, top)
        return figure, figure.subplots(1, 1), None
    below = max(1.8, 1.0 + per_row * rows)
    figure = _figure(11, top + below)
    upper, lower = figure.subplots(2, 1, height_ratios=[top, below])
    return figure, upper, lower


def _empty(ax, message: str) -> None:
    ax.text(0.5, 0.5, message, ha="center", va="center", wrap=True, fontsize=11, transform=ax.transAxes)
    ax.set_axis_off()


def _fontsize(rows: int) -> float:
    return 9 if rows <= 12 else 7 if rows <= 30 else 6


def _save(figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    return path


def funnel_numbers(data: ReportData) -> list[tuple[str, int, int]]:
    """The "all languages" funnel: ``(step, sentences before it, sentences after it)`` for input, each reason, kept.

    >>> from crop_hf.report.data import LanguageReport
    >>> data = ReportData("out", ["too_long", "all_o"], [LanguageReport("de", {"input": 10, "kept": 6, "too_long": 1, "all_o": 3})])
    >>> funnel_numbers(data)
    [('input', 10, 10), ('too_long', 10, 9), ('all_o', 9, 6), ('kept', 6, 6)]
    """
    remaining = data.total_input
    steps = [("input", remaining, remaining)]
    for reason in data.reasons:
        dropped = sum(lang.counts.get(reason, 0) for lang in data.languages)
        if dropped:
            steps.append((reason, remaining, remaining - dropped))
            remaining -= dropped
    steps.append(("kept", data.total_kept, data.total_kept))
    return steps


def draw_funnel(data: ReportData, path: Path) -> Path:
    """Input → each drop reason → kept: a waterfall over all languages, and each language's shares."""
    multi = len(data.languages) > 1
    figure, waterfall, shares = _layout(multi, len(data.languages), top=max(3.2, 1.4 + 0.3 * len(data.reasons)))
    steps = funnel_numbers(data)
    if data.total_input == 0:
        _empty(waterfall, "No sentences were read.")
    else:
        names = [name for name, _, _ in steps][::-1]
        for y, (name, before, after) in enumerate(steps[::-1]):
            color = KEPT_COLOR if name == "kept" else INPUT_COLOR if name == "input" else _reason_color(data, name)
            left, width = (0, before) if name in {"input", "kept"} else (after, before - after)
            waterfall.barh(y, width, left=left, color=color)
            label = f"{before:,}" if name in {"input", "kept"} else f"−{before - after:,}"
            waterfall.text(before if name != "kept" else after, y, f" {label}", va="center", fontsize=8)
        waterfall.set_yticks(range(len(names)), names, fontsize=9)
        waterfall.set_xlim(0, data.total_input * 1.18)
        waterfall.set_xlabel("sentences")
        title = "all languages" if multi else data.languages[0].lang
        waterfall.set_title(f"Filter funnel ({title}): {data.total_kept:,} of {data.total_input:,} kept", fontsize=10)
    if shares is not None:
        langs = data.languages[::-1]
        size = _fontsize(len(langs))
        segments = ["kept", *[r for r in data.reasons if any(lang.counts.get(r, 0) for lang in langs)]]
        for segment in segments:
            lefts = [_share_before(lang, segment, segments) for lang in langs]
            widths = [100 * lang.counts.get(segment, 0) / lang.input if lang.input else 0 for lang in langs]
            color = KEPT_COLOR if segment == "kept" else _reason_color(data, segment)
            shares.barh(range(len(langs)), widths, left=lefts, color=color, label=segment)
        for y, lang in enumerate(langs):
            shares.text(101, y, f"n={lang.input:,}", va="center", fontsize=size)
        shares.set_yticks(range(len(langs)), [lang.lang for lang in langs], fontsize=size)
        shares.set_ylim(-0.6, len(langs) - 0.4)
        shares.set_xlim(0, 115)
        shares.set_xlabel("% of the sentences read")
        shares.set_title("Where each language's sentences went", fontsize=10)
        figure.legend(*shares.get_legend_handles_labels(), loc="outside lower center", fontsize=8,
                      ncol=min(len(segments), 6), frameon=False)
    return _save(figure, path)


def _share_before(lang, segment: str, segments: Sequence[str]) -> float:
    if not lang.input:
        return 0.0
    before = segments[: segments.index(segment)]
    return 100 * sum(lang.counts.get(s, 0) for s in before) / lang.input


def _reason_color(data: ReportData, reason: str) -> str:
    return _WARM[data.reasons.index(reason) % len(_WARM)] if reason in data.reasons else _WARM[-1]


def label_numbers(data: ReportData) -> dict[str, dict[str, dict[str, int]]]:
    """Per side (``source``, ``target``), per language and ``"all"``: counts per label."""
    numbers: dict[str, dict[str, dict[str, int]]] = {"source": {}, "target": {}}
    for lang in data.languages:
        if lang.source_labels is not None:
            numbers["source"][lang.lang] = dict(lang.source_labels)
        numbers["target"][lang.lang] = dict(lang.target_labels)
    for side in numbers.values():
        total: dict[str, int] = {}
        for counts in side.values():
            for label, count in counts.items():
                total[label] = total.get(label, 0) + count
        if side or data.languages:
            side["all"] = total
    return numbers


def _shares(counts: dict[str, int], labels: Sequence[str]) -> list[float]:
    total = sum(counts.values())
    return [100 * counts.get(label, 0) / total if total else 0.0 for label in labels]


def draw_labels(data: ReportData, path: Path) -> Path:
    """Label mix of the source side (all tagged sentences) and of the kept target side."""
    labels = data.labels()
    numbers = label_numbers(data)
    has_source = bool(numbers["source"]) and any(lang.source_labels is not None for lang in data.languages)
    multi = len(data.languages) > 1 and bool(labels)
    figure, bars, heat = _layout(multi, len(data.languages), top=max(3.2, 1.4 + 0.5 * len(labels)))
    kind = data.label_kind
    if not labels:
        _empty(bars, f"No {kind} was found on either side" + (": no sentence was kept." if not data.total_kept else "."))
    else:
        ys = list(range(len(labels)))[::-1]
        target = numbers["target"]["all"]
        height = 0.4 if has_source else 0.7
        if has_source:
            source = numbers["source"]["all"]
            bars.barh([y + height / 2 for y in ys], _shares(source, labels), height=height, color=SOURCE_COLOR,
                      label=f"source side, all tagged sentences ({sum(source.values()):,})")
        bars.barh([y - height / 2 if has_source else y for y in ys], _shares(target, labels), height=height,
                  color=TARGET_COLOR, label=f"target side, kept sentences ({sum(target.values()):,})")
        bars.set_yticks(ys, labels, fontsize=9)
        bars.set_xlabel(f"% of {kind} mentions")
        bars.set_title(f"{kind.capitalize()} distribution (" + ("all languages" if multi else data.languages[0].lang)
                       + ")", fontsize=10)
        bars.legend(fontsize=8, loc="lower right")
        if not data.total_kept:
            bars.text(0.5, 0.02, "no sentence was kept", transform=bars.transAxes, ha="center", color="#d62728")
    if heat is not None:
        langs = [lang.lang for lang in data.languages]
        if has_source:
            # A language with no entity on one side has no share to compare: its row stays blank.
            matrix = [[t - s if sum(numbers["source"].get(lang, {}).values()) and sum(numbers["target"][lang].values())
                       else float("nan")
                       for s, t in zip(_shares(numbers["source"].get(lang, {}), labels),
                                       _shares(numbers["target"][lang], labels), strict=True)] for lang in langs]
            title, bar_label, cmap, limits = ("Kept target share − source share (points)", "percentage points",
                                              "RdBu_r", None)
        else:
            matrix = [_shares(numbers["target"][lang], labels) if sum(numbers["target"][lang].values())
                      else [float("nan")] * len(labels) for lang in langs]
            title, bar_label, cmap, limits = "Kept target share (%)", "%", "Blues", (0, 100)
        _heatmap(figure, heat, matrix, langs, labels, title, bar_label, cmap, limits, fmt="{:+.0f}" if has_source else "{:.0f}")
    return _save(figure, path)


def _heatmap(figure, ax, matrix, rows, columns, title, bar_label, cmap, limits=None, fmt="{:.0f}") -> None:
    import numpy as np

    values = np.array(matrix, dtype=float)
    if limits is None:
        # At least ±5 points, so that a difference of one or two entities does not look dramatic.
        bound = max(5.0, float(np.nanmax(np.abs(values))) if values.size and not np.isnan(values).all() else 5.0)
        limits = (-bound, bound)
    from matplotlib import colormaps

    colors = colormaps[cmap].with_extremes(bad="#e8e8e8")  # no value (e.g. no entity on a side): light grey
    image = ax.imshow(values, aspect="auto", cmap=colors, vmin=limits[0], vmax=limits[1], interpolation="nearest")
    size = _fontsize(len(rows))
    ax.set_yticks(range(len(rows)), rows, fontsize=size)
    ax.set_xticks(range(len(columns)), columns, fontsize=8, rotation=45 if len(columns) > 6 else 0, ha="right"
                  if len(columns) > 6 else "center")
    if values.size and len(rows) * len(columns) <= 400:
        for (i, j), value in np.ndenumerate(values):
            if np.isnan(value):
                ax.text(j, i, "–", ha="center", va="center", fontsize=min(size, 7), color="#666666")
            else:
                # White on the dark ends of the colour map, black elsewhere.
                dark = abs(image.norm(value) - (0.5 if limits[0] < 0 else 0.0)) > (0.3 if limits[0] < 0 else 0.6)
                ax.text(j, i, fmt.format(value), ha="center", va="center", fontsize=min(size, 7),
                        color="white" if dark else "black")
    ax.set_title(title, fontsize=10)
    figure.colorbar(image, ax=ax, label=bar_label, shrink=0.8)


def draw_lengths(data: ReportData, path: Path) -> Path:
    """Tokens per sentence: kept vs dropped, over all languages and per language."""
    multi = len(data.languages) > 1
    figure, hist, boxes = _layout(multi, 2 * len(data.languages), per_row=0.17)
    kept = [n for lang in data.languages for n in lang.lengths_kept]
    dropped = [n for lang in data.languages for n in lang.lengths_dropped]
    if not kept and not dropped:
        _empty(hist, "No sentence lengths were recorded.")
    else:
        top = max(kept + dropped)
        bins = range(0, top + 2, max(1, (top + 1) // 40 + 1))
        if dropped:
            hist.hist(dropped, bins=bins, color=_WARM[0], alpha=0.55, label=f"dropped ({len(dropped):,})")
        if kept:
            hist.hist(kept, bins=bins, color=KEPT_COLOR, alpha=0.7, label=f"kept ({len(kept):,})")
        else:
            hist.text(0.5, 0.9, "no sentence was kept", transform=hist.transAxes, ha="center", color="#d62728")
        hist.set_xlabel("tokens per sentence")
        hist.set_ylabel("sentences")
        hist.legend(fontsize=8)
        hist.set_title("Sentence length (" + ("all languages" if multi else data.languages[0].lang) + ")", fontsize=10)
    if boxes is not None:
        series, names, colors = [], [], []
        for lang in data.languages[::-1]:
            for part, values, color in (("dropped", lang.lengths_dropped, _WARM[0]), ("kept", lang.lengths_kept,
                                                                                         KEPT_COLOR)):
                series.append(values or [float("nan")])
                names.append(f"{lang.lang} {part}")
                colors.append(color)
        artists = boxes.boxplot(series, orientation="horizontal", patch_artist=True, showfliers=False, widths=0.7)
        for patch, color in zip(artists["boxes"], colors, strict=True):
            patch.set_facecolor(color)
            patch.set_alpha(0.6)
        boxes.set_yticks(range(1, len(names) + 1), names, fontsize=_fontsize(len(names) // 2))
        boxes.set_xlabel("tokens per sentence (box: quartiles, whiskers: 1.5 IQR)")
        boxes.set_title("Per language", fontsize=10)
    return _save(figure, path)


def status_numbers(data: ReportData) -> dict[str, dict[str, int]]:
    """Per language: entities per projection status, kept and dropped sentences together."""
    numbers = {}
    for lang in data.languages:
        counts: dict[str, int] = {}
        for part in (lang.statuses_kept or {}, lang.statuses_dropped or {}):
            for status, count in part.items():
                counts[status] = counts.get(status, 0) + count
        numbers[lang.lang] = counts
    return numbers


def draw_statuses(data: ReportData, path: Path) -> Path:
    """What became of each translated entity in projection, per language (counts and shares)."""
    statuses = data.statuses()
    numbers = status_numbers(data)
    langs = data.languages[::-1]
    if not statuses:
        figure = _figure(8, 1.5)
        _empty(figure.subplots(1, 1), "No translated entity reached projection.")
        return _save(figure, path)
    figure = _figure(13, max(3.2, 1.6 + 0.3 * len(langs)))
    counts_ax, shares_ax = figure.subplots(1, 2)
    good = [s for s in statuses if s in OK_STATUSES]
    colors = {s: _GOOD[i % len(_GOOD)] for i, s in enumerate(good)}
    colors.update({s: _WARM[i % len(_WARM)] for i, s in enumerate(s for s in statuses if s not in OK_STATUSES)})
    size = _fontsize(len(langs))
    for ax, share in ((counts_ax, False), (shares_ax, True)):
        lefts = [0.0] * len(langs)
        for status in statuses:
            values = []
            for lang in langs:
                total = sum(numbers[lang.lang].values())
                count = numbers[lang.lang].get(status, 0)
                values.append(100 * count / total if share and total else 0 if share else count)
            ax.barh(range(len(langs)), values, left=lefts, color=colors[status], label=status)
            lefts = [a + b for a, b in zip(lefts, values, strict=True)]
        ax.set_yticks(range(len(langs)), [lang.lang for lang in langs], fontsize=size)
        ax.set_ylim(-0.6, len(langs) - 0.4)
        ax.set_xlabel("% of the translated entities" if share else "translated entities")
    counts_ax.set_title("Projection outcome of each translated entity", fontsize=10)
    shares_ax.set_title("… as shares", fontsize=10)
    shares_ax.set_xlim(0, 100)
    figure.legend(*counts_ax.get_legend_handles_labels(), loc="outside lower center", fontsize=8,
                  ncol=min(len(statuses), 7), frameon=False)
    return _save(figure, path)


def draw_gold(data: ReportData, path: Path) -> Path:
    """Projection P/R/F1 per language against gold labels, and F1 per language and label."""
    langs = [lang for lang in data.languages if lang.gold is not None]
    labels = sorted({label for lang in langs for label in lang.gold["per_type"]})
    figure = _figure(13, max(3.2, 1.6 + 0.45 * len(langs)))
    overall, heat = figure.subplots(1, 2, width_ratios=[1, 1.2])
    ys = list(range(len(langs)))[::-1]
    for k, (metric, color) in enumerate((("precision", "#1f77b4"), ("recall", "#ff7f0e"), ("f1", "#2ca02c"))):
        overall.barh([y + (1 - k) * 0.27 for y in ys], [100 * lang.gold[metric] for lang in langs], height=0.27,
                     color=color, label=metric)
    overall.set_yticks(ys, [f"{lang.lang} ({lang.gold['kept']}/{lang.gold['matched']})" for lang in langs],
                       fontsize=_fontsize(len(langs)))
    overall.set_xlim(0, 100)
    overall.set_ylim(-0.6, len(langs) - 0.4)
    overall.set_xlabel("% (kept sentences vs gold; label: kept / matched sentences)")
    overall.set_title("Projection quality against gold labels", fontsize=10)
    overall.legend(fontsize=8, loc="lower right")
    if labels:
        matrix = [[100 * lang.gold["per_type"][label]["f1"] if label in lang.gold["per_type"] else float("nan")
                   for label in labels] for lang in langs]
        _heatmap(figure, heat, matrix, [lang.lang for lang in langs], labels, f"F1 per {data.label_kind} (%)", "F1 %",
                 "viridis", (0, 100))
    else:
        _empty(heat, "No gold or projected entity to score.")
    return _save(figure, path)


#: name -> (file, caption, draw function, whether there is something to draw). A plot adds a row.
PLOTS: dict[str, tuple[str, str, Callable[[ReportData, Path], Path], Callable[[ReportData], Any]]] = {
    "funnel": ("funnel.png", "Filter funnel: input → each drop reason → kept", draw_funnel, lambda d: True),
    "labels": ("labels.png", "Label distribution: source side vs kept target side", draw_labels, lambda d: True),
    "lengths": ("lengths.png", "Sentence length, kept vs dropped", draw_lengths, lambda d: True),
    "statuses": ("statuses.png", "Projection outcome of each translated entity", draw_statuses,
                 lambda d: any(lang.statuses_kept is not None for lang in d.languages)),
    "gold": ("gold.png", "Projection P/R/F1 against gold labels", draw_gold, lambda d: d.has_gold),
}


def draw_projection_evaluation(evaluation: Any, path: Path) -> Path:
    """``crop-hf evaluate-projection``'s plot: P/R/F1 of every (method, aligner, model) row, and F1 per entity type.

    ``evaluation`` is a :class:`crop_hf.metrics.projection.ProjectionEvaluation` or its ``to_dict()``.
    """
    rows = evaluation["rows"] if isinstance(evaluation, dict) else [vars(row) for row in evaluation.rows]
    names = [row["name"] + (f" ({row['aligner']})" if row["aligner"] else "")
             + (f" [{row['model']}]" if row.get("model") else "") for row in rows]
    types = sorted({t for row in rows for t in row["per_type"]})
    figure = _figure(13, max(3.2, 1.6 + 0.45 * len(rows)))
    overall, heat = figure.subplots(1, 2, width_ratios=[1, 1.2])
    ys = list(range(len(rows)))[::-1]
    for k, (metric, color) in enumerate((("precision", "#1f77b4"), ("recall", "#ff7f0e"), ("f1", "#2ca02c"))):
        overall.barh([y + (1 - k) * 0.27 for y in ys], [100 * row[metric] for row in rows], height=0.27,
                     color=color, label=metric)
    overall.set_yticks(ys, names, fontsize=_fontsize(len(rows)))
    overall.set_xlim(0, 100)
    overall.set_xlabel("% (all sentences; a dropped sentence's entities count as missed)")
    overall.set_title("Projection against gold target tags", fontsize=10)
    figure.legend(*overall.get_legend_handles_labels(), loc="outside lower center", fontsize=8, ncol=3, frameon=False)
    if types:
        matrix = [[100 * row["per_type"][t]["f1"] if t in row["per_type"] else float("nan") for t in types]
                  for row in rows]
        _heatmap(figure, heat, matrix, names, types, "F1 per entity type", "F1 (%)", "viridis", (0, 100))
    else:
        _empty(heat, "No entity in the gold target tags.")
    return _save(figure, Path(path))
