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
from crop_hf.registry import EntryPointError, Registry

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
        assert shapes.get("star") == 5  # the package's other entry point, which registers nothing, stops only itself
        with pytest.raises(EntryPointError, match=r"^shape 'lost' is not available: entry point 'lost' = "
                                                  r"'shapes_pkg.lost' of package shapes-pkg \(group crop_hf_test.shapes\) "
                                                  r"names a module, and importing it did not register shape 'lost'"):
            shapes.get("lost")
        assert shapes.names() == ("star",) and "lost" not in shapes
    finally:
        del sys.modules["shapes_registry"]


def test_a_broken_package_and_an_object_of_the_wrong_type_are_errors_of_their_own_name_only(site, caplog):
    install(site, "shapes-pkg", {GROUP: "bad = shapes_pkg:missing"}, {"shapes_pkg/__init__.py": "X = 1\nNAME = 'e'\n"})
    shapes = Registry("shape", {"circle": 0}, group=GROUP)
    with caplog.at_level(logging.WARNING, logger="crop-hf"):
        assert shapes.get("circle") == 0  # the broken package does not stop the others
        with pytest.raises(ValueError, match=r"^unknown shape 'anything': expected one of circle$"):
            shapes.get("anything")
    for lookup in (shapes.get, shapes.__getitem__):
        with pytest.raises(EntryPointError, match=r"^shape 'bad' is not available: cannot load entry point 'bad' = "
                                                  r"'shapes_pkg:missing' of package shapes-pkg \(group "
                                                  r"crop_hf_test.shapes\): AttributeError: .*'missing'"):
            lookup("bad")
    assert [record.getMessage() for record in caplog.records] == [
        f"shape 'bad' is not available: cannot load entry point 'bad' = 'shapes_pkg:missing' of package shapes-pkg "
        f"(group {GROUP}): AttributeError: module 'shapes_pkg' has no attribute 'missing'"]  # said once
    assert shapes.get("bad", None) is None  # a default answers for it, as a mapping's get does
    typed = Registry("number", group="crop_hf_test.numbers", item_type=int)
    install(site, "numbers-pkg", {"crop_hf_test.numbers": "pi = shapes_pkg:X\ne = shapes_pkg:NAME"}, {})
    assert typed.names() == ("pi",) and typed["pi"] == 1
    with pytest.raises(EntryPointError, match=r"'e' = 'shapes_pkg:NAME' of package numbers-pkg .* is of type str, "
                                              "not int"):
        typed["e"]


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
    monkeypatch.setattr(PROJECTION_METHODS, "_failed", {})
    monkeypatch.setattr(PROJECTION_METHODS, "_packages", {})
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


# -- one bad package stops only itself (issue 68, point 4) --------------------------------------------


class _Loads(_Point):
    """An entry point of package ``dist_name`` whose ``load()`` gives ``loaded``, or raises it when it is an error."""

    def __init__(self, name: str, loaded, dist_name: str, version: str = "0.1") -> None:
        super().__init__(name, f"{dist_name.replace('-', '_')}:{name}", dist_name)
        self.dist.version = version
        self.loaded = loaded

    def load(self):
        if isinstance(self.loaded, BaseException):
            raise self.loaded
        return self.loaded


def _installed(monkeypatch, wanted: str, points: list) -> None:
    """``points`` as the installed packages' entry points of group ``wanted`` (no other group has any)."""
    import crop_hf.registry as registry

    monkeypatch.setattr(registry, "entry_points", lambda group: list(points) if group == wanted else [])


@pytest.mark.parametrize("first_lookup", [len, list, lambda r: list(iter(r)), Registry.names, lambda r: dict(r.items())],
                         ids=["len", "list", "iter", "names", "items"])
def test_len_iteration_and_list_as_the_first_lookup_hold_the_packages_and_never_raise(monkeypatch, caplog,
                                                                                    first_lookup):
    points = [_Loads("hexagon", 6, "shapes-pkg"), _Loads("broken", ModuleNotFoundError("No module named 'nope'"),
                                                          "broken-pkg"), _Loads("seven", "7", "typed-pkg")]
    _installed(monkeypatch, GROUP, points)
    shapes = Registry("shape", {"circle": 0}, group=GROUP, item_type=int)
    with caplog.at_level(logging.WARNING, logger="crop-hf"):
        seen = first_lookup(shapes)
    expected = {"circle": 0, "hexagon": 6}
    assert seen in (len(expected), list(expected), tuple(expected), expected)
    assert dict(shapes.items()) == expected and len(shapes) == 2
    said = [record.getMessage() for record in caplog.records]
    assert len(said) == 2 and "package broken-pkg" in said[0] and "package typed-pkg" in said[1]


def test_package_names_the_installed_package_an_item_came_from_until_code_replaces_it(monkeypatch):
    _installed(monkeypatch, GROUP, [_Loads("hexagon", 6, "shapes-pkg", "2.1"), _Loads("star", 5, "plain-pkg", "")])
    shapes = Registry("shape", {"circle": 0}, group=GROUP)
    assert shapes.package("hexagon") == "shapes-pkg 2.1"  # as the first lookup too
    assert shapes.package("star") == "plain-pkg" and shapes.package("circle") is None
    shapes.register("hexagon", 66, replace=True)
    del shapes["star"]
    assert shapes.package("hexagon") is None and shapes.package("star") is None


def test_unreadable_entry_points_leave_the_built_ins_and_say_why(monkeypatch, caplog):
    import crop_hf.registry as registry

    def unreadable(group):
        raise ValueError("malformed entry_points.txt")

    monkeypatch.setattr(registry, "entry_points", unreadable)
    shapes = Registry("shape", {"circle": 0}, group=GROUP)
    with caplog.at_level(logging.WARNING, logger="crop-hf"):
        assert len(shapes) == 1 and list(shapes) == ["circle"] and shapes.get("circle") == 0
    assert caplog.messages == [f"cannot read the installed packages' shape entry points (group {GROUP}): "
                               "malformed entry_points.txt"]


def _plugin(example, options):
    from crop_hf.projection import project_lexical

    return project_lexical(example.target, example.entities, drop_incomplete=options.drop_incomplete)


@pytest.fixture
def plugins(monkeypatch):
    """PROJECTION_METHODS as a fresh process sees it with two packages installed: ``broken-methods``, whose
    import fails, and ``first-words`` 0.3, whose ``plugin_lexical`` method works (and aligns nothing)."""
    from crop_hf.projection.methods import ProjectionMethod
    from crop_hf.projection.options import ProjectionOptions

    method = ProjectionMethod("plugin_lexical", _plugin, ProjectionOptions, uses_alignment=False, drop_incomplete=True)
    points = [_Loads("broken_method", ModuleNotFoundError("No module named 'torch_nightly'"), "broken-methods"),
              _Loads("plugin_lexical", method, "first-words", "0.3")]
    _installed(monkeypatch, "crop_hf_projection_methods", points)
    monkeypatch.setattr(PROJECTION_METHODS, "_opened", False)
    monkeypatch.setattr(PROJECTION_METHODS, "_items", dict(PROJECTION_METHODS._items))
    monkeypatch.setattr(PROJECTION_METHODS, "_failed", {})
    monkeypatch.setattr(PROJECTION_METHODS, "_packages", {})
    return method


BROKEN = ("projection method 'broken_method' is not available: cannot load entry point 'broken_method' = "
          "'broken_methods:broken_method' of package broken-methods (group crop_hf_projection_methods): "
          "ModuleNotFoundError: No module named 'torch_nightly'")


def test_a_package_that_fails_to_import_stops_only_its_own_method(plugins, caplog, capsys, tmp_path):
    from crop_hf.arguments import parse_config
    from crop_hf.cli import main
    from crop_hf.projection import ProjectionPipeline
    from crop_hf.projection.methods import resolve_method
    from crop_hf.registry import EntryPointError
    from crop_hf.synthesis import SynthesisConfig

    row = {"target": "Anna wohnt in Göteborg .", "entities": [("Anna", "PER"), ("Göteborg", "LOC")]}
    with caplog.at_level(logging.WARNING, logger="crop-hf"):
        assert ProjectionPipeline(method="lexical")(row)["tags"] == ["B-PER", "O", "O", "B-LOC", "O"]
        assert ProjectionPipeline(method="plugin_lexical")(row)["tags"] == ["B-PER", "O", "O", "B-LOC", "O"]
        config, = parse_config([SynthesisConfig], ["--tgt_langs", "de", "--method", "lexical"])
        assert config.projection.name == "lexical"
        for lookup in (resolve_method, lambda name: ProjectionPipeline(method=name), PROJECTION_METHODS.__getitem__):
            with pytest.raises(EntryPointError) as error:
                lookup("broken_method")
            assert str(error.value) == BROKEN
    assert caplog.messages == [BROKEN]  # one warning, however often the registry is read
    assert "broken_method" not in PROJECTION_METHODS and "plugin_lexical" in PROJECTION_METHODS
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:  # a usage error, as any refused option value
        main(["synthesize", "--tgt_langs", "de", "--method", "broken_method", "--output_dir", str(tmp_path / "o")])
    assert exit_info.value.code == 2 and capsys.readouterr().err == f"crop-hf synthesize: error: {BROKEN}\n"
    assert not (tmp_path / "o").exists()


def test_a_misspelt_method_gets_the_closest_names(capsys, tmp_path):
    from crop_hf.cli import main
    from crop_hf.projection.methods import resolve_method

    with pytest.raises(ValueError, match=r"^unknown projection method 'lexcal' \(did you mean lexical\?\): expected "
                                         r"one of lexical, fuzzy, "):
        resolve_method("lexcal")
    with pytest.raises(SystemExit) as exit_info:
        main(["synthesize", "--tgt_langs", "de", "--method", "lexcal?ignore_case=true", "--output_dir",
              str(tmp_path / "o")])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.startswith("crop-hf synthesize: error: unknown projection method 'lexcal' (did you "
                                              "mean lexical?): expected one of lexical, fuzzy, ")


def _method_list(help_text: str, option_help_start: str) -> list[str]:
    """The names a ``--method`` help lists after "one of", up to the parenthesis."""
    flat = " ".join(help_text.split())
    start = flat.index("one of ", flat.index(option_help_start)) + len("one of ")
    return flat[start:flat.index(" (", start)].split(", ")


def test_help_lists_the_methods_the_registry_holds_a_package_s_included(plugins, capsys):
    from crop_hf.cli import main

    def help_of(command: str) -> str:
        with pytest.raises(SystemExit):
            main([command, "--help"])
        return capsys.readouterr().out

    synthesize = _method_list(help_of("synthesize"), "--method METHOD")
    assert synthesize == list(PROJECTION_METHODS) and "plugin_lexical" in synthesize
    assert "broken_method" not in synthesize
    aligning = _method_list(help_of("translate-align"), "--method METHOD")
    assert aligning == [name for name, row in PROJECTION_METHODS.items() if row.uses_alignment or row.uses_scorer]
    assert "plugin_lexical" not in aligning and "alignment" in aligning  # translate-align runs only these


def test_the_card_names_the_package_of_a_method_that_is_not_crop_hf_s(plugins):
    from crop_hf.synthesis import SynthesisConfig
    from crop_hf.synthesis.card import synthesis_card
    from crop_hf.synthesis.rows import STATISTICS_COLUMNS

    def card(method: str) -> str:
        config = SynthesisConfig(tgt_langs=["de"], method=method, mt_model="m", ner_model="n")
        return synthesis_card(config, {"de": {"input": 2, "kept": 1}}, ["O", "B-PER", "I-PER"], command_line="crop-hf",
                              fingerprint="f", columns=STATISTICS_COLUMNS)

    plugin = " ".join(card("plugin_lexical").split())
    assert ("The projection method `plugin_lexical` is not crop-hf's own: it comes from the installed package "
            "first-words 0.3.") in plugin
    assert PROJECTION_METHODS.package("plugin_lexical") == "first-words 0.3"
    assert PROJECTION_METHODS.package("lexical") is None and "not crop-hf's own" not in card("lexical")
