"""The mutation-testing set-up stays consistent: every scored module is mutated, equivalents parse."""

from __future__ import annotations

import configparser
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("mutation_score", ROOT / "benchmarks" / "mutation_score.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while being defined
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[spec.name]


def test_every_scored_module_is_mutated_and_its_tests_exist(script):
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    mutated = config.get("mutmut", "only_mutate").split()
    assert sorted(module.path for module in script.MODULES.values()) == sorted(mutated)
    for path in mutated:
        assert (ROOT / path).is_file(), path
    for test_file in config.get("mutmut", "pytest_add_cli_args_test_selection").split():
        assert (ROOT / test_file).is_file(), test_file


def test_mutants_run_without_pytest_s_heap_walking_unraisableexception_plugin(tmp_path):
    # As mutmut reads it (one argument per line), the option must reach pytest and switch the
    # plugin off: its gc.collect() calls cost a mutant's process 0.9 of its 1.1 s.
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    arguments = [line for line in config.get("mutmut", "pytest_add_cli_args").split("\n") if line]
    (tmp_path / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    run = subprocess.run([sys.executable, "-m", "pytest", "--trace-config", "--collect-only", "-q", *arguments,
                          "test_nothing.py"], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 test collected" in run.stdout and "_pytest.unraisableexception" not in run.stdout


def test_equivalents_name_functions_that_exist_and_give_reasons(script):
    entries = script.load_equivalents()
    functions = set()
    for module in script.MODULES.values():
        source = (ROOT / module.path).read_text(encoding="utf-8")
        functions |= {f"{module.dotted}.{name}" for name in _functions(source)}
    for entry in entries:
        assert entry["function"] in functions, entry
        assert entry["before"] != entry["after"] and len(entry["reason"]) > 20, entry


def test_mutant_names_map_to_their_function_and_module(script):
    assert script.function_of("crop_hf.markers.xǁEntityǁas_dict__mutmut_3") == ("crop_hf.markers", "Entity.as_dict")
    assert script.function_of("crop_hf.labels.x_tags_to_spans__mutmut_12") == ("crop_hf.labels", "tags_to_spans")
    labels = script.MODULES["labels (tag schemes)"]
    assert script.selected(labels, "crop_hf.labels.x_repair_tags__mutmut_1")
    assert not script.selected(labels, "crop_hf.labels.x_parse_label_map__mutmut_1")
    assert script.changed_lines("--- a\n+++ a\n@@ -1 +1 @@\n def f():\n-    return x < 1\n+    return x <= 1") == (
        "return x < 1", "return x <= 1")


def _functions(source: str) -> set[str]:
    import ast

    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.ClassDef):
            names |= {f"{node.name}.{item.name}" for item in node.body
                      if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)}
    return names


def test_resume_picks_unreached_mutants_and_retest_forgets_survivors(script, tmp_path, monkeypatch):
    import json

    monkeypatch.setattr(script, "ROOT", tmp_path)
    labels = {"labels": script.MODULES["labels (tag schemes)"]}
    meta = tmp_path / "mutants" / "crop_hf" / "labels.py.meta"
    meta.parent.mkdir(parents=True)
    codes = {"crop_hf.labels.x_split_tag__mutmut_1": 1, "crop_hf.labels.x_split_tag__mutmut_2": 0,
             "crop_hf.labels.x_split_tag__mutmut_3": None, "crop_hf.labels.x_parse_label_map__mutmut_1": None,
             "crop_hf.labels.x_is_valid__mutmut_1": 33, "crop_hf.labels.x_is_valid__mutmut_2": -24}
    meta.write_text(json.dumps({"exit_code_by_key": codes}))
    # parse_label_map is outside the scored functions: never picked
    assert script.mutants_to_run(labels, [], only_unchecked=True) == ["crop_hf.labels.x_split_tag__mutmut_3"]
    everything = sorted(name for name in codes if "parse_label_map" not in name)  # by function, then number
    assert script.mutants_to_run(labels, []) == everything
    # documented equivalents are left out of both
    equivalent = "crop_hf.labels.x_split_tag__mutmut_2"
    monkeypatch.setattr(script, "equivalent_entry", lambda module, name, entries: (0 if name == equivalent else None, ""))
    assert script.mutants_to_run(labels, [{"function": "any"}]) == [n for n in everything if n != equivalent]
    assert script.forget_survivors(labels) == [equivalent, "crop_hf.labels.x_is_valid__mutmut_1"]  # file order
    assert script.mutants_to_run(labels, [], only_unchecked=True) == [
        "crop_hf.labels.x_is_valid__mutmut_1", "crop_hf.labels.x_split_tag__mutmut_2", "crop_hf.labels.x_split_tag__mutmut_3"]
    assert script.mutants_to_run({"markers": script.MODULES["markers"]}, []) == []  # no result file yet
