"""Docstring examples are part of the documentation: they must run and print what they claim."""

import doctest
import importlib
import pkgutil

import pytest

import crop_hf

MODULES = sorted(
    info.name for info in pkgutil.walk_packages(crop_hf.__path__, prefix="crop_hf.") if not info.name.endswith("__main__")
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} docstring examples failed in {name}"
