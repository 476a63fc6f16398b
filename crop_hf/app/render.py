"""HTML of the demo app's results: highlighted entities, tables, alignment links, parse trees.

Plain functions from results to HTML strings (every piece of user text escaped, inline styles
only, so the page needs no CSS of its own). The class names and ``data-*`` attributes are what
the browser test reads: ``mark.crop-entity[data-label]`` holds ``.crop-entity-text``; a tree
node is ``.crop-node[data-label="IN:GET_WEATHER"]``; an alignment link is ``line.crop-link[data-link="0-0"]``.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any

from crop_hf import seqlogical

__all__ = [
    "banner",
    "highlight",
    "hypotheses_table",
    "links_svg",
    "message",
    "projection_html",
    "statuses_table",
    "translation_html",
    "tree_html",
]

_PALETTE = ("#fde68a", "#bfdbfe", "#bbf7d0", "#fbcfe8", "#ddd6fe", "#fed7aa", "#a5f3fc", "#d9f99d")
_FIXED = {"PER": "#fde68a", "LOC": "#bbf7d0", "ORG": "#bfdbfe", "MISC": "#ddd6fe"}
_TABLE = "border-collapse:collapse;margin:4px 0;font-size:0.92em"
_CELL = "border:1px solid #d1d5db;padding:3px 8px;text-align:left;vertical-align:top"


def color(label: str) -> str:
    """A background colour per label, the same in every run (CoNLL's four fixed)."""
    return _FIXED.get(label) or _PALETTE[zlib.crc32(label.encode("utf-8")) % len(_PALETTE)]


def message(text: str) -> str:
    """A notice for bad input (empty when ``text`` is)."""
    if not text:
        return ""
    return ('<div class="crop-message" role="alert" style="border:1px solid #f59e0b;background:#fffbeb;'
            f'color:#78350f;padding:8px 12px;border-radius:6px;white-space:pre-wrap">⚠ {escape(text)}</div>')


def banner(tiny: Sequence[str]) -> str:
    """The warning that the unset models are tiny random ones (empty when every model was given)."""
    if not tiny:
        return ""
    return ('<div id="crop-tiny-banner" style="border:1px solid #dc2626;background:#fef2f2;color:#7f1d1d;'
            'padding:8px 12px;border-radius:6px"><b>Tiny random-weight models: their output is meaningless.</b> '
            f"No {', '.join(escape(option) for option in tiny)} was given, so this app runs tiny models built "
            "offline with random weights; translations, tags, alignments and parses only show how the app works. "
            "For real output start it with models, e.g. <code>crop-hf app --mt_model facebook/m2m100_418M "
            "--ner_model &lt;NER model&gt; --parser_model &lt;parser&gt;</code>.</div>")


def _mark(text: str, label: str) -> str:
    return (f'<mark class="crop-entity" data-label="{escape(label)}" style="background:{color(label)};'
            'padding:1px 4px;border-radius:4px;margin:0 1px">'
            f'<span class="crop-entity-text">{escape(text)}</span> '
            f'<span class="crop-entity-label" style="font-size:0.72em;font-weight:600;opacity:0.75">'
            f"{escape(label)}</span></mark>")


def highlight(text: str, entities: Iterable[Mapping[str, Any]]) -> str:
    """``text`` with each ``{"start", "end", "label"}`` character span highlighted (overlaps after the first skipped)."""
    pieces, cursor = [], 0
    for entity in sorted(entities, key=lambda e: (e["start"], e["end"])):
        start, end = int(entity["start"]), int(entity["end"])
        if start < cursor or end <= start:
            continue
        pieces += [escape(text[cursor:start]), _mark(text[start:end], str(entity["label"]))]
        cursor = end
    pieces.append(escape(text[cursor:]))
    return f'<span class="crop-highlighted" style="line-height:2">{"".join(pieces)}</span>'


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], css_class: str) -> str:
    head = "".join(f'<th style="{_CELL};background:#f3f4f6">{escape(h)}</th>' for h in header)
    body = "".join("<tr>" + "".join(f'<td style="{_CELL}">{cell}</td>' for cell in row) + "</tr>" for row in rows)
    return f'<table class="{css_class}" style="{_TABLE}"><tr>{head}</tr>{body}</table>'


def _failure(failure: Mapping[str, Any]) -> str:
    where = f"slot {failure['slot']}" if failure.get("slot") is not None else "untyped span"
    about = " ".join(str(failure[key]) for key in ("label", "text") if failure.get(key))
    return f'<span class="crop-failure">{escape(where)}{" (" + escape(about) + ")" if about else ""}: ' \
           f'<b>{escape(str(failure["reason"]))}</b></span>'


def translation_html(view) -> tuple[str, str]:
    """(source panel, translation panel) of a :class:`~crop_hf.app.tabs.LabeledTranslation`."""
    origin = "written in the input" if view.entities_from == "written" else "tagged by the NER model"
    count = len(view.source_entities)
    heading = '<h4 style="margin:0 0 4px 0">{}</h4>'.format
    source = (f'<div class="crop-source">{heading("Source")}<div>{highlight(view.source, view.source_entities)}</div>'
              f'<p style="color:#6b7280;margin:4px 0">{count} entit{"y" if count == 1 else "ies"} {origin}. '
              f'Sent to the model with markers:</p><code class="crop-marked-source">{escape(view.marked_source)}</code>'
              "</div>")
    result = view.result
    status = ("all markers came back" if result["complete"]
              else f"{len(result['failures'])} slot(s) failed")
    failures = "".join(f"<li>{_failure(f)}</li>" for f in result["failures"])
    translation = (
        f'<div class="crop-translation">{heading("Translation")}<div>{highlight(result["translation"], result["entities"])}</div>'
        f'<p style="color:#6b7280;margin:4px 0">Marked translation ({escape(status)}; '
        f'<span class="crop-tried">{result["hypotheses_tried"]}</span> hypothes'
        f'{"is" if result["hypotheses_tried"] == 1 else "es"} tried):</p>'
        f'<code class="crop-marked-translation">{escape(result["marked_translation"])}</code>'
        + (f'<ul class="crop-failures">{failures}</ul>' if failures else "") + "</div>"
    )
    return source, translation


def hypotheses_table(hypotheses: Sequence[Any]) -> str:
    """One row per hypothesis: its marked text, entities read, what failed, whether it was tried and chosen."""
    rows = []
    for number, hypothesis in enumerate(hypotheses, start=1):
        failures = "<br>".join(_failure(f) for f in hypothesis.failures) or "none: complete"
        state = "chosen" if hypothesis.chosen else ("tried" if hypothesis.tried else "not needed")
        rows.append([str(number), f"<code>{escape(hypothesis.marked)}</code>", str(len(hypothesis.entities)),
                     failures, escape(state)])
    return _table(["#", "hypothesis (with markers)", "entities read", "why markers failed", "used"], rows,
                  "crop-hypotheses")


def statuses_table(statuses: Sequence[Mapping[str, Any]]) -> str:
    """What became of each source entity (found, fuzzy, projected, missing, ...)."""
    rows = [[escape(s["text"]), escape(s["label"]), f'<span class="crop-status">{escape(s["status"])}</span>']
            for s in statuses]
    return _table(["source entity", "label", "status"], rows, "crop-statuses")


def projection_html(view) -> str:
    """The target sentence with the projected spans of a :class:`~crop_hf.app.tabs.Projection` highlighted."""
    result = view.result
    tokens = result["tokens"]
    joiner = "" if result["tokenization"] == "characters" else " "
    pieces, cursor = [], 0
    for entity in result["entities"]:
        pieces += [escape(joiner.join(tokens[cursor:entity["token_start"]])),
                   _mark(joiner.join(tokens[entity["token_start"]:entity["token_end"]]), entity["label"])]
        cursor = entity["token_end"]
    pieces.append(escape(joiner.join(tokens[cursor:])))
    sentence = joiner.join(piece for piece in pieces if piece)
    verdict = "complete" if result["complete"] else f"incomplete ({result['reason']})"
    kept = "kept" if result["kept"] else "dropped"
    return (f'<div class="crop-projection"><div style="line-height:2">{sentence}</div>'
            f'<p style="color:#6b7280;margin:4px 0">{escape(result["method"])} projection: '
            f'<span class="crop-verdict">{escape(verdict)}</span>, the sentence would be {kept}.</p>'
            f"{statuses_table(result['entity_status'])}</div>")


def _token_x(tokens: Sequence[str], unit: float = 8.0, gap: float = 16.0) -> tuple[list[float], float]:
    """Centre x of each token laid out left to right, and the total width."""
    centres, x = [], 10.0
    for token in tokens:
        width = max(len(token), 1) * unit
        centres.append(x + width / 2)
        x += width + gap
    return centres, x


def links_svg(view) -> str:
    """The word alignment of a :class:`~crop_hf.app.tabs.Projection` as lines from source to target words."""
    if view.alignment is None:
        return ('<p class="crop-no-links" style="color:#6b7280">This method matches the entities\' words in the '
                "target; it uses no word alignment.</p>")
    target = view.result["tokens"]
    source_x, source_width = _token_x(view.source_tokens)
    target_x, target_width = _token_x(target)
    width = max(source_width, target_width) + 10
    source_label = {i: span.label for span in view.source_spans for i in range(span.start, span.end)}
    target_label = {i: e["label"] for e in view.result["entities"] for i in range(e["token_start"], e["token_end"])}
    parts = [f'<svg class="crop-links" xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="120" '
             f'viewBox="0 0 {width:.0f} 120" style="font-family:monospace;font-size:13px">']
    for i, j in view.alignment:
        parts.append(f'<line class="crop-link" data-link="{i}-{j}" x1="{source_x[i]:.1f}" y1="30" '
                     f'x2="{target_x[j]:.1f}" y2="88" stroke="#6b7280" stroke-width="1.2"/>')
    for tokens, xs, y, labels in ((view.source_tokens, source_x, 20, source_label), (target, target_x, 104, target_label)):
        for index, (token, x) in enumerate(zip(tokens, xs, strict=True)):
            label = labels.get(index)
            if label:
                box = max(len(token), 1) * 8.0 + 6
                parts.append(f'<rect x="{x - box / 2:.1f}" y="{y - 14}" width="{box:.1f}" height="19" rx="3" '
                             f'fill="{color(label)}"/>')
            parts.append(f'<text x="{x:.1f}" y="{y}" text-anchor="middle">{escape(token)}</text>')
    parts.append("</svg>")
    how = {"given": "typed in", "embedding": "SimAlign over the alignment encoder",
           "eflomal": "eflomal"}.get(view.aligned_by or "", view.aligned_by or "")
    pharaoh = " ".join(f"{i}-{j}" for i, j in view.alignment) or "(no links)"
    return (f'<div class="crop-alignment" style="overflow-x:auto">{"".join(parts)}'
            f'<p style="color:#6b7280;margin:4px 0">Alignment ({escape(how)}): '
            f'<code class="crop-pharaoh">{escape(pharaoh)}</code></p></div>')


def _node(tree: seqlogical.Tree) -> str:
    intent = tree.kind == "IN"
    border, background = ("#2563eb", "#eff6ff") if intent else ("#16a34a", "#f0fdf4")
    children = "".join(_node(child) if isinstance(child, seqlogical.Tree)
                       else f'<span class="crop-word" style="padding:2px 3px">{escape(child)}</span>'
                       for child in tree.children)
    return (f'<div class="crop-node" data-label="{escape(tree.label)}" style="display:inline-flex;flex-direction:column;'
            f'border:2px solid {border};background:{background};border-radius:6px;margin:3px;padding:2px 4px;'
            f'vertical-align:top"><span class="crop-node-label" style="font-weight:600;font-size:0.8em;'
            f'color:{border}">{escape(tree.label)}</span><div style="display:flex;flex-wrap:wrap;align-items:flex-start">'
            f"{children}</div></div>")


def tree_html(view) -> str:
    """A :class:`~crop_hf.app.tabs.ParsedUtterance` as nested boxes (intents blue, slots green) and its bracket parse."""
    origin = (f"predicted by the parser (score {view.score:.2f})" if view.from_model
              else "read from the bracket parse typed in")
    return (f'<div class="crop-tree">{_node(view.tree)}'
            f'<p style="color:#6b7280;margin:4px 0">Tree {escape(origin)}:</p>'
            f'<code class="crop-parse">{escape(view.parse)}</code></div>')
