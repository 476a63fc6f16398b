"""The documentation site builds strictly, and nothing README or the site names is stale.

* ``mkdocs build --strict`` fails on a broken link or anchor, a missing page, an unresolvable
  ``::: crop_hf...`` API reference or a docstring mkdocstrings cannot read; the CLI reference it
  generates (``docs/hooks.py``) lists every command of ``crop_hf.cli.COMMANDS``.
* Every ``crop-hf COMMAND`` mentioned in code (fenced blocks and inline spans) of README.md,
  CONTRIBUTING.md and ``docs/**/*.md`` is a command; every ``--option`` on its line is one that
  command's parser accepts (``--no_X`` and ``-``/``_`` spellings included); an option mentioned
  alone is one of the commands its paragraph (list item, table row) or else its page names, or of
  some command if the page names none; every
  ``crop_hf.<name>`` resolves, and every ``from crop_hf... import name`` of a Python block imports.
* README's relative links point at files that exist.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)
SPAN = re.compile(r"(`+)(.+?)\1")
DOTTED = re.compile(r"(?<![\w/.-])crop_hf(?:\.[A-Za-z_]\w*)+")
#: the example scripts are the commands under another name
SCRIPTS = {"examples/train_ner.py": "train-ner", "examples/train_parser.py": "train-parser",
           "examples/train_translation.py": "train-translation"}
#: a paragraph about these runs other programs' options (benchmarks, pip, pytest, launchers)
OTHER_PROGRAMS = ("benchmarks/", "bench_", "pytest", "pip install", "torchrun --", "accelerate config")
#: every page here is about one benchmark script: an option alone is the script's
BENCHMARK_PAGES = "docs/benchmarks/"


def _load_hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HOOKS = _load_hooks()


@functools.cache
def command_options(name: str) -> frozenset[str]:
    return frozenset(HOOKS.command_options(name))


@functools.cache
def any_command_options() -> frozenset[str]:
    from crop_hf.cli import COMMANDS

    return frozenset().union(*(command_options(name) for name in COMMANDS))


def _option_name(token: str) -> str | None:
    """``--max-train-steps=3`` → ``max_train_steps``; placeholders (``--OPTION``, ``--no_NAME``) → None."""
    if not token.startswith("--") or len(token) < 3:
        return None
    name = token[2:].split("=", 1)[0].rstrip(".,;:)").replace("-", "_")
    return name if re.fullmatch(r"[a-z][a-z0-9_]*", name) else None


def _command_in(tokens: list[str]) -> tuple[str | None, list[str]] | None:
    """The command a shell line runs (``None`` for bare ``crop-hf --help``) and the tokens after it."""
    for k, token in enumerate(tokens):
        script = SCRIPTS.get(token)
        if script:
            return script, tokens[k + 1:]
        if token == "crop-hf" or (token == "crop_hf.cli" and k and tokens[k - 1] == "-m"):
            rest = tokens[k + 1:]
            if rest and re.fullmatch(r"[a-z][a-z0-9-]*", rest[0]):
                return rest[0], rest[1:]
            return None, rest
    return None


def _tokens(line: str) -> list[str]:
    try:
        return shlex.split(line, comments=True)
    except ValueError:  # an unbalanced quote in prose
        return line.split()


def _check_command_line(line: str, where: str, problems: list[str]) -> str | None:
    """Check one shell line; return the command it runs (if any)."""
    found = _command_in(_tokens(line))
    if found is None:
        return None
    from crop_hf.cli import COMMANDS

    command, rest = found
    if command is None:
        allowed = {"help", "version", "debug"}
    elif command not in COMMANDS:
        problems.append(f"{where}: `crop-hf {command}` is not a command ({line.strip()[:80]})")
        return None
    else:
        allowed = command_options(command)
    for token in rest:
        name = _option_name(token)
        if name and name not in allowed:
            problems.append(f"{where}: `crop-hf {command or ''}` has no option --{name}")
    return command


def _check_dotted(text: str, where: str, problems: list[str]) -> None:
    for name in sorted(set(DOTTED.findall(text))):
        if not _resolves(name):
            problems.append(f"{where}: {name} does not exist")


@functools.cache
def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(obj, attribute):
                return False
            obj = getattr(obj, attribute)
        return True
    return False


def _check_python(code: str, where: str, problems: list[str]) -> None:
    try:
        tree = ast.parse(code)
    except SyntaxError as error:
        problems.append(f"{where}: Python block does not parse: {error}")
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "crop_hf":
            for alias in node.names:
                if not _resolves(f"{node.module}.{alias.name}"):
                    problems.append(f"{where}: from {node.module} import {alias.name} fails")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "crop_hf" and not _resolves(alias.name):
                    problems.append(f"{where}: import {alias.name} fails")


def _check_prose(text: str, where: str, problems: list[str], page_commands: set[str]) -> None:
    """Inline code: command lines are checked whole; a lone ``--option`` must belong to a command that
    the same paragraph, list item or table row, or else the page, names in code (to some command if
    the page names none). A unit about another program (a benchmark, pip, pytest) that names no
    command is not checked, nor is a unit that names no command on a benchmark's page (docs/benchmarks/)."""
    benchmark_page = where.startswith(BENCHMARK_PAGES)
    for unit in re.split(r"\n\s*\n|\n(?=\s*(?:[-*]|\d+\.) )|\n(?=\|)", text):
        spans = [span.strip() for _, span in SPAN.findall(unit)]
        commands = {command for span in spans if not span.startswith("--")
                    and ("crop-hf" in span or "crop_hf.cli" in span or any(script in span for script in SCRIPTS))
                    for command in [_check_command_line(span, where, problems)] if command}
        if not commands and (benchmark_page or any(marker in unit for marker in OTHER_PROGRAMS)):  # another program
            continue
        named = commands | page_commands
        allowed = frozenset().union(*map(command_options, named)) if named else any_command_options()
        for span in spans:
            name = _option_name(span.split()[0]) if span.startswith("--") else None
            if name and name not in allowed:
                described = ", ".join(f"crop-hf {command}" for command in sorted(named)) or "any crop-hf command"
                problems.append(f"{where}: --{name} is not an option of {described}")


def stale_mentions(text: str, where: str) -> list[str]:
    """Every command, option or ``crop_hf`` name that ``text`` (Markdown) mentions and that does not exist."""
    problems: list[str] = []
    page_commands: set[str] = set()
    prose = FENCE.sub("\n\n", text)
    for match in FENCE.finditer(text):
        language, code = match.group(1), match.group(2)
        line = text.count("\n", 0, match.start()) + 2
        if language == "python":
            _check_python(code, f"{where}:{line}", problems)
        elif language in ("bash", "sh", "text", ""):
            for logical in re.sub(r"\\\n", " ", code).splitlines():
                page_commands.add(_check_command_line(logical, f"{where}:{line}", problems))
        if language != "mermaid":
            _check_dotted(code, f"{where}:{line}", problems)
    for _, span in SPAN.findall(prose):
        if "crop-hf" in span or "crop_hf.cli" in span or any(script in span for script in SCRIPTS):
            page_commands.add(_check_command_line(span, where, []))
    page_commands.discard(None)
    _check_prose(prose, where, problems, page_commands)
    _check_dotted(prose, where, problems)
    return problems


@pytest.mark.parametrize("page", PAGES, ids=[page.relative_to(ROOT).as_posix() for page in PAGES])
def test_page_names_only_what_exists(page):
    where = page.relative_to(ROOT).as_posix()
    assert stale_mentions(page.read_text(encoding="utf-8"), where) == []


def test_staleness_check_catches_planted_names():
    planted = """A paragraph with `crop-hf synthesise` and `crop-hf synthesize --target_lang de`.

Then `crop-hf report` takes `--gold_splits train`; `--no_such_option` exists nowhere.
`crop_hf.projection.project_lexicall` and `crop_hf.nowhere` are gone.

```bash
crop-hf train-ner --model_name_or_path x \\
    --max_train_step 20
accelerate launch -m crop_hf.cli evaluate-parsers --model m
```

```python
from crop_hf.labels import iob3_to_iob2
```
"""
    problems = "\n".join(stale_mentions(planted, "planted"))
    for stale in ("crop-hf synthesise", "--target_lang", "--gold_splits", "--no_such_option",
                  "crop_hf.projection.project_lexicall", "crop_hf.nowhere", "--max_train_step",
                  "crop-hf evaluate-parsers", "iob3_to_iob2"):
        assert stale in problems, stale
    fine = """`crop-hf report out --gold_split train --no_update_card --report-dir r`, `--debug`,
`crop-hf --help`, `crop_hf.labels.iob1_to_iob2`, `examples/train_ner.py --max_train_steps 3`."""
    assert stale_mentions(fine, "fine") == []
    benchmark = "Run it with `--steps 300`.\n\nThen `crop-hf synthesize --no_such_option`.\n"
    assert stale_mentions(benchmark, "docs/benchmarks/b.md") == [
        "docs/benchmarks/b.md: `crop-hf synthesize` has no option --no_such_option"]  # the script's own option passes
    assert "--steps" in "\n".join(stale_mentions(benchmark, "docs/how-to/b.md"))


def test_readme_links_point_at_files():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = [target.split("#", 1)[0] for target in re.findall(r"\]\(([^)\s]+)\)", text)
               if "://" not in target and not target.startswith("#")]
    assert targets
    missing = [target for target in targets if not (ROOT / target).exists()]
    assert missing == []


def test_readme_is_a_front_page():
    assert len((ROOT / "README.md").read_bytes()) <= 10_000
    assert "not yet" not in (ROOT / "README.md").read_text(encoding="utf-8").lower()


def test_mkdocs_build_strict(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings_handlers.python")
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    from crop_hf.cli import COMMANDS

    cli_page = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    assert "<!-- cli-reference -->" not in cli_page
    for name in COMMANDS:
        assert f'id="crop-hf-{name}"' in cli_page, name
    assert "--max_train_steps" in cli_page  # options come from the dataclasses


def test_cli_reference_covers_every_command_and_tolerates_one_that_cannot_load(monkeypatch):
    from crop_hf.cli import COMMANDS

    monkeypatch.setitem(COMMANDS, "ghost", ("crop_hf_no_such_package.command", "a command whose package is missing"))
    page = HOOKS.cli_reference()
    for name in COMMANDS:
        assert f"## `crop-hf {name}`" in page
    assert "need a package that is not installed" in page
    assert "`--tgt_langs`" in page and "`--no_update_card`" in page
