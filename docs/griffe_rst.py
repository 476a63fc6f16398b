"""A Griffe extension: crop-hf's docstrings are written for ``help()`` and doctest; render them as Markdown.

* Sphinx roles (``:func:`crop_hf.x.f```, ``:class:`~crop_hf.x.C```) become code spans (``f``, ``C``
  for a ``~`` name);
* runs of ``>>>`` lines with their output become ``pycon`` fenced blocks (else Markdown would read
  ``['a', 'b'][0]`` as a link);
* an rST literal block (a paragraph ending in ``::``) keeps one colon; its indented block is already
  a Markdown code block.

Docstrings are left untouched in the source; this runs when mkdocstrings loads the package.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:func|class|mod|meth|data|attr|exc|obj|const|ref):`(~?)([^`]+)`")


def _role(match: re.Match) -> str:
    name = match.group(2)
    if match.group(1):
        name = name.rsplit(".", 1)[-1]
    return f"`{name}`"


def _fence_doctests(text: str) -> str:
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.lstrip()
        if stripped.startswith(">>>"):
            indent = line[: len(line) - len(stripped)]
            if out and out[-1].strip():
                out.append("")
            out.append(f"{indent}```pycon")
            while i < len(lines) and lines[i].strip():
                out.append(lines[i])
                i += 1
            out.append(f"{indent}```")
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


def to_markdown(text: str) -> str:
    """The Markdown of one docstring (roles, doctest runs, literal-block colons)."""
    text = ROLE.sub(_role, text)
    text = re.sub(r"(\S)::$", r"\1:", text, flags=re.M)
    text = re.sub(r"^(\s*)::$", r"\1", text, flags=re.M)
    return _fence_doctests(text)


class RstToMarkdown(griffe.Extension):
    """Rewrite every docstring of the loaded package with :func:`to_markdown`."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = to_markdown(obj.docstring.value)
