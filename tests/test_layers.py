"""The import map follows the layers in CONTRIBUTING.md: no module imports from a layer above it, no cycles."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "crop_hf"

#: Lowest first. A module may import from its own layer and the ones below (CONTRIBUTING.md).
LAYERS: list[set[str]] = [
    {"labels", "markers", "seqlogical", "arguments", "tables", "_registration", "model_cards", "resources", "errors", "console", "registry"},
    {"alignment", "hub", "engine"},
    {"data"},
    {"translation", "projection", "modeling"},
    {"ner", "metrics", "report"},
    {"synthesis", "self_training", "augment", "parsing"},
    {"demo_models"},
    {"commands", "cli", "app"},
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


#: The feature packages: peers that share only what sits below them (issue 46: "no feature package imports
#: another feature package"); what two of them need lives in engine/, data/ or lower.
FEATURES = LAYERS[5]


def test_no_feature_package_imports_another():
    across = sorted(f"{module} -> {target}" for module, targets in _imports().items()
                    for target in targets if _unit(module) in FEATURES and _unit(target) in FEATURES
                    and _unit(target) != _unit(module))
    assert not across, across


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



def _is_module(package: Path, dotted: str) -> bool:
    """Whether ``crop_hf.x.y`` names a module or package under ``package`` (not a name inside one)."""
    path = package.parent.joinpath(*dotted.split("."))
    return path.is_dir() or path.with_suffix(".py").is_file()


def private_imports(package: Path = PACKAGE) -> list[str]:
    """``importer: from module import _name`` for every private name one module of ``package`` takes from another.

    Importing a module whose name is private (``from crop_hf import _registration``) is an import
    of that module, not of a name inside another one; dunders (``__version__``) are public.
    """
    found = []
    for path in sorted(package.rglob("*.py")):
        module = ".".join(path.relative_to(package.parent).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(package.name)):
                continue
            for alias in node.names:
                private = alias.name.startswith("_") and not (alias.name.startswith("__") and alias.name.endswith("__"))
                if private and node.module != module and not _is_module(package, f"{node.module}.{alias.name}"):
                    found.append(f"{module}: from {node.module} import {alias.name}")
    return found


def test_private_imports_finds_private_names_of_other_modules_only(tmp_path):
    package = tmp_path / "crop_hf"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("__version__ = '0'\n_hidden = 1\n")
    (package / "_private.py").write_text("_secret = 1\n")
    (package / "sub" / "__init__.py").write_text("_local = 1\n")
    (package / "sub" / "a.py").write_text("_own = 1\nfrom crop_hf.sub.a import _own\n")
    (package / "sub" / "b.py").write_text(
        "from crop_hf import _private, __version__\nfrom crop_hf.sub import _local\n"
        "from crop_hf._private import _secret\nfrom crop_hf.sub.a import _own as own\nimport crop_hf._private\n")
    assert private_imports(package) == [
        "crop_hf.sub.b: from crop_hf.sub import _local",  # its own package's __init__ is another module
        "crop_hf.sub.b: from crop_hf._private import _secret",
        "crop_hf.sub.b: from crop_hf.sub.a import _own",
    ]


def test_no_module_imports_another_modules_private_names():
    problems = private_imports()
    assert not problems, "make these public or move them to their home (CONTRIBUTING.md):\n" + "\n".join(problems)


def _module_imports() -> dict[str, set[str]]:
    """Every module's imports of other crop_hf modules, relative ones and those under TYPE_CHECKING included."""
    edges: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        module = ".".join(parts).removesuffix(".__init__")
        package = parts[:-1]  # what a relative import starts from, for a module and an __init__ alike
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = ".".join(package[: len(package) - node.level + 1]) if node.level else ""
                name = ".".join(filter(None, [base, node.module or ""]))
                if not name.startswith("crop_hf"):
                    continue
                folder = PACKAGE.parent.joinpath(*name.split("."))
                for alias in node.names:  # from . import tabs: the module crop_hf.app.tabs
                    is_module = (folder / alias.name).is_dir() or (folder / f"{alias.name}.py").is_file()
                    targets.add(f"{name}.{alias.name}" if is_module else name)
        edges[module] = {target for target in targets if target != module}
    return edges


def test_no_module_imports_a_module_that_imports_it_back():
    """Within a package too, type-only imports included: the parser's search reads the model through a
    declared interface, so modeling_joint -> search and never back."""
    edges = _module_imports()
    assert "crop_hf.modeling.search" in edges["crop_hf.modeling.modeling_joint"]
    pairs = sorted((a, b) for a, targets in edges.items() for b in targets if a < b and a in edges.get(b, ()))
    assert pairs == []
