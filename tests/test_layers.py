"""The import map follows the layers in CONTRIBUTING.md: no module imports from a layer above it, no cycles."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "crop_hf"

#: Lowest first. A module may import from its own layer and the ones below (CONTRIBUTING.md).
LAYERS: list[set[str]] = [
    {"labels", "markers", "seqlogical", "arguments", "tables", "_registration", "model_cards", "resources", "errors", "console"},
    {"alignment", "hub", "cards", "optim"},
    {"data"},
    {"translation", "projection", "modeling"},
    {"evaluation", "metrics"},
    {"training"},
    {"synthesis", "self_training", "report", "augment", "parsing"},
    {"tiny", "demo_models"},
    {"commands", "cli"},
]


def _unit(module: str) -> str:
    """``crop_hf.data.readers.io`` -> ``data``; ``crop_hf`` -> ``""`` (the package's public face, above all)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _layer(unit: str) -> int:
    for index, members in enumerate(LAYERS):
        if unit in members:
            return index
    raise AssertionError(f"crop_hf.{unit} is in no layer: add it to LAYERS here and in CONTRIBUTING.md")


def _imports() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("crop_hf"):
                targets.add(node.module)
                targets.update(f"crop_hf.{alias.name}" for alias in node.names if node.module == "crop_hf"
                               and ((PACKAGE / alias.name).is_dir() or (PACKAGE / f"{alias.name}.py").is_file()))
            elif isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names if alias.name.startswith("crop_hf"))
        edges[module] = targets
    return edges


def test_no_module_imports_from_a_layer_above_it():
    upward = []
    for module, targets in _imports().items():
        unit = _unit(module)
        if not unit:
            continue
        for target in targets:
            other = _unit(target)
            if other and other != unit and _layer(other) > _layer(unit):
                upward.append(f"{module} -> {target}")
    assert not upward, upward


def test_no_import_cycles_between_units():
    graph: dict[str, set[str]] = {}
    for module, targets in _imports().items():
        unit = _unit(module)
        if unit:
            graph.setdefault(unit, set()).update(o for t in targets if (o := _unit(t)) and o != unit)
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in graph.get(node, ()):
            assert state.get(nxt) != 1, f"import cycle: {' -> '.join([*path, nxt])}"
            if nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for node in list(graph):
        if node not in state:
            visit(node, [node])
