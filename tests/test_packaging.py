"""What a wheel of crop-hf carries: the card templates (from the top-level model_cards/), no test helpers."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def test_wheel_carries_the_card_templates_and_the_package_has_no_symlink(tmp_path):
    assert not [p for p in (REPO_ROOT / "crop_hf").rglob("*") if p.is_symlink()]
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp_path), str(REPO_ROOT)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("crop_hf-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    templates = {p.name for p in (REPO_ROOT / "model_cards").glob("*.md")}
    assert templates and {f"crop_hf/model_cards/{name}" for name in templates} <= names
    assert "crop_hf/resources/samples/de.txt" in names
    assert not any(name.startswith(("tests/", "model_cards/", "benchmarks/")) for name in names)
    assert "crop_hf/demo_models.py" in names  # what crop-hf demo needs stays; test-only models do not
    assert not any("tiny_models" in name for name in names)
    assert {"crop_hf/metrics/slot_f1/slot_f1.py", "crop_hf/metrics/exact_match_parse/exact_match_parse.py"} <= names


def test_installed_templates_are_found_by_the_card_writers():
    from crop_hf.hub import template_path

    assert template_path("ner_model_card.md").read_text(encoding="utf-8").startswith("---")
    assert template_path("synthesis_dataset_card.md").is_file()


def test_the_https_filesystem_of_default_downloads_is_installed_and_declared():
    """Default downloads (no data_dir) go through fsspec's https:// filesystem, which needs requests and aiohttp."""
    import configparser

    from fsspec.core import url_to_fs

    fs, path = url_to_fs("https://example.org/panx_dataset.zip")  # what datasets' downloads call; no request is made
    assert fs.protocol[0] in {"http", "https"} and path.endswith("panx_dataset.zip")
    setup = configparser.ConfigParser()
    setup.read(REPO_ROOT / "setup.cfg")
    required = {line.split(">")[0].split("=")[0].strip() for line in setup["options"]["install_requires"].splitlines()
                if line.strip() and not line.strip().startswith("#")}
    assert {"requests", "aiohttp"} <= required
