"""Registries open to installed packages: entry points read on the first lookup (issue 63 point 6)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from crop_hf.projection.methods import PROJECTION_METHODS, ProjectionExample, project_examples
from crop_hf.registry import Registry

GROUP = "crop_hf_test.shapes"


def install(site: Path, package: str, entry_points: dict[str, str], files: dict[str, str]) -> None:
    """Write an installed distribution into ``site`` as pip lays one out: the modules and a dist-info
    folder whose ``entry_points.txt`` declares ``entry_points`` (group -> lines)."""
    for name, text in files.items():
        path = site / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    info = site / f"{package}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(
        "".join(f"[{group}]\n{lines}\n" for group, lines in entry_points.items()), encoding="utf-8")


@pytest.fixture
def site(tmp_path, monkeypatch):
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    yield folder
    for name in [name for name in sys.modules if name.startswith("shapes_pkg")]:
        del sys.modules[name]


def test_a_package_s_entry_point_is_found_on_the_first_lookup_and_not_before(site):
    install(site, "shapes-pkg", {GROUP: "hexagon = shapes_pkg:HEXAGON"},
            {"shapes_pkg/__init__.py": "import builtins\nbuiltins.shapes_pkg_loaded = True\nHEXAGON = 6\n"})
    shapes = Registry("shape", {"circle": 0}, group=GROUP)
    assert not hasattr(__import__("builtins"), "shapes_pkg_loaded")  # nothing imported until a lookup
    try:
        assert shapes.get("hexagon") == 6
        assert shapes.names() == ("circle", "hexagon") and "hexagon" in shapes and len(shapes) == 2
    finally:
        vars(__import__("builtins")).pop("shapes_pkg_loaded", None)


def test_a_closed_registry_reads_no_entry_points(site):
    install(site, "shapes-pkg", {GROUP: "hexagon = shapes_pkg:HEXAGON"}, {"shapes_pkg/__init__.py": "HEXAGON = 6\n"})
    shapes = Registry("shape", {"circle": 0})
    with pytest.raises(ValueError, match="unknown shape 'hexagon': expected one of circle"):
        shapes.get("hexagon")


def test_a_taken_name_is_refused_with_one_line_naming_the_package(site, caplog):
    install(site, "shapes-pkg", {GROUP: "circle = shapes_pkg:CIRCLE\nsquare = shapes_pkg:SQUARE"},
            {"shapes_pkg/__init__.py": "CIRCLE = 'theirs'\nSQUARE = 4\n"})
    shapes = Registry("shape", {"circle": "ours"}, group=GROUP)
    with caplog.at_level(logging.WARNING, logger="crop-hf"):
        assert shapes["circle"] == "ours" and shapes["square"] == 4
    assert len(caplog.records) == 1
    assert "shape 'circle' is registered already" in caplog.text and "package shapes-pkg" in caplog.text


def test_a_module_entry_point_registers_its_own_name(site):
    shapes = Registry("shape", group=GROUP)
    sys.modules["shapes_registry"] = type(sys)("shapes_registry")
    sys.modules["shapes_registry"].SHAPES = shapes
    try:
        install(site, "shapes-pkg", {GROUP: "star = shapes_pkg.star\nlost = shapes_pkg.lost"},
                {"shapes_pkg/__init__.py": "",
                 "shapes_pkg/star.py": "from shapes_registry import SHAPES\nSHAPES.register('star', 5)\n",
                 "shapes_pkg/lost.py": "X = 1\n"})
        with pytest.raises(ValueError, match=r"entry point 'lost' = 'shapes_pkg.lost' of package shapes-pkg "
                                             r"\(group crop_hf_test.shapes\) names a module, and importing it did "
                                             r"not register shape 'lost'"):
            shapes.get("star")
    finally:
        del sys.modules["shapes_registry"]


def test_a_broken_package_and_an_object_of_the_wrong_type_are_errors_naming_the_package(site):
    install(site, "shapes-pkg", {GROUP: "bad = shapes_pkg:missing"}, {"shapes_pkg/__init__.py": "X = 1\nNAME = 'e'\n"})
    with pytest.raises(ImportError, match="cannot load shape 'bad' from entry point 'bad' = 'shapes_pkg:missing' "
                                          "of package shapes-pkg"):
        Registry("shape", group=GROUP).get("anything")
    typed = Registry("number", group="crop_hf_test.numbers", item_type=int)
    install(site, "numbers-pkg", {"crop_hf_test.numbers": "pi = shapes_pkg:X\ne = shapes_pkg:NAME"}, {})
    with pytest.raises(TypeError, match=r"'e' = 'shapes_pkg:NAME' of package numbers-pkg .* is of type str, not int"):
        typed.names()


PACKAGE = {
    "mine_methods/__init__.py": """
        from dataclasses import dataclass, field

        from crop_hf.projection import project_lexical, read_entities
        from crop_hf.projection.methods import register_method
        from crop_hf.projection.options import ProjectionOptions


        @dataclass
        class OnlyOptions(ProjectionOptions):
            labels: str = field(default="PER,LOC,ORG", metadata={"help": "The entity types to project."})


        @register_method("only_types", options=OnlyOptions)
        def project_only(example, options):
            wanted = options.labels.split(",")
            entities = [(e.text, e.label) for e in read_entities(example.entities)[0] if e.label in wanted]
            return project_lexical(example.target, entities, drop_incomplete=options.drop_incomplete)
        """,
}


def test_an_installed_package_s_projection_method_works_by_name(site, monkeypatch):
    install(site, "mine-methods", {"crop_hf_projection_methods": "only_types = mine_methods"}, PACKAGE)
    monkeypatch.setattr(PROJECTION_METHODS, "_opened", False)  # as in a fresh process with the package installed
    monkeypatch.setattr(PROJECTION_METHODS, "_items", dict(PROJECTION_METHODS._items))
    example = ProjectionExample(["Anna", "wohnt", "in", "Göteborg", "."], entities=[("Anna", "PER"), ("Göteborg", "LOC")])
    assert project_examples("only_types?labels=LOC", [example])[0].tags == ["O", "O", "O", "B-LOC", "O"]
    del sys.modules["mine_methods"]


def test_crop_hf_synthesize_finds_a_pip_installed_method_with_no_import_in_user_code(tmp_path):
    source = tmp_path / "source"
    for name, text in PACKAGE.items():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_text(textwrap.dedent(text), encoding="utf-8")
    (source / "pyproject.toml").write_text(textwrap.dedent("""
        [build-system]
        requires = ["setuptools"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "mine-methods"
        version = "0.1"

        [project.entry-points."crop_hf_projection_methods"]
        only_types = "mine_methods"
        """), encoding="utf-8")
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                    "--no-build-isolation", "--target", str(target), str(source)], check=True, capture_output=True)
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-m", "crop_hf.cli", "synthesize", "--tgt_langs", "de", "--method",
                          "only_types?label=LOC", "--input", str(tmp_path / "{lang}.txt"),
                          "--output_dir", str(tmp_path / "out")],
                         capture_output=True, text=True, env=environment, check=False)
    # the package's method was found and its own options read: the typo is named against them
    assert run.returncode == 2, run.stderr
    assert ("projection method 'only_types': unknown option 'label' (did you mean labels?); "
            "valid options: drop_incomplete, labels") in run.stderr
    assert not (tmp_path / "out").exists()


class _Point:
    """An entry point as importlib.metadata gives one, with the distribution it came from (or none)."""

    def __init__(self, name: str, value: str, dist_name: str | None) -> None:
        self.name, self.value = name, value
        self.dist = type("Dist", (), {"name": dist_name})() if dist_name is not None else None

    def load(self):
        return self.value.upper()


def test_a_closed_registry_never_asks_for_entry_points(monkeypatch):
    import crop_hf.registry as registry

    def refuse(**kwargs):
        raise AssertionError(f"entry points read for a closed registry: {kwargs}")

    monkeypatch.setattr(registry, "entry_points", refuse)
    shapes = Registry("shape", {"circle": 0})
    assert shapes["circle"] == 0 and shapes.names() == ("circle",) and "square" not in shapes


def test_the_taken_name_line_names_the_entry_point_its_package_and_group_or_says_the_package_is_unknown(
        monkeypatch, caplog):
    import crop_hf.registry as registry

    points = [_Point("circle", "pkg:CIRCLE", "shapes-pkg"), _Point("circle", "other:CIRCLE", None),
              _Point("square", "pkg:square", None)]
    monkeypatch.setattr(registry, "entry_points", lambda group: [p for p in points if group == GROUP])
    shapes = Registry("shape", {"circle": "ours"}, group=GROUP)
    with caplog.at_level(logging.WARNING, logger="crop-hf"):
        assert shapes["square"] == "PKG:SQUARE" and shapes["circle"] == "ours"
    assert [record.getMessage() for record in caplog.records] == [
        f"shape 'circle' is registered already: entry point 'circle' = 'pkg:CIRCLE' of package shapes-pkg (group "
        f"{GROUP}) is ignored",
        f"shape 'circle' is registered already: entry point 'circle' = 'other:CIRCLE' of package an unknown package "
        f"(group {GROUP}) is ignored"]
