import json
import subprocess
import sys

import pytest

import crop_hf
from crop_hf.cli import COMMANDS, main


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "crop_hf.cli", *args], capture_output=True, text=True, check=False)


def test_version_and_help():
    result = run_cli("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"crop-hf {crop_hf.__version__}"
    result = run_cli("--help")
    assert result.returncode == 0
    for name in COMMANDS:
        assert name in result.stdout


def test_help_does_not_import_heavy_libraries():
    code = (
        "import sys\n"
        "from crop_hf.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('torch', 'transformers', 'datasets') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_unknown_command_fails_with_usage():
    result = run_cli("translate-everything")
    assert result.returncode == 2
    assert "invalid choice" in result.stderr


def test_env_reports_installed_versions(capsys):
    import transformers

    assert main(["env", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["transformers"] == transformers.__version__
    assert info["crop-hf"] == crop_hf.__version__


def test_env_lists_ctranslate2_as_installed_or_not(capsys):
    from importlib import metadata

    try:
        expected = metadata.version("ctranslate2")
    except metadata.PackageNotFoundError:
        expected = "not installed"
    assert main(["env", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ctranslate2"] == expected
    assert main(["env"]) == 0
    assert any(line.split() == ["ctranslate2", *expected.split()] for line in capsys.readouterr().out.splitlines())


DEMO_COUNTS = {"de": {"input": 3, "kept": 1, "all_o": 2}}


def _fake_demo_stages(monkeypatch, fail: bool = False) -> list:
    """The demo's model builders and synthesis replaced by ones that write into the folders they are given
    (and a synthesis that fails, with ``fail``); the list collects those folders."""
    from pathlib import Path

    from crop_hf.commands import demo
    from crop_hf.engine.jobs import JobResult

    folders = []

    def build(path, corpus):
        Path(path).mkdir(parents=True)
        (Path(path) / "config.json").write_text("{}")
        folders.append(Path(path))
        return Path(path)

    def synthesize(config):
        output = Path(config.output_dir)
        output.mkdir(parents=True)
        (output / "README.md").write_text("card")
        folders.append(output)
        if fail:
            raise OSError("no space left on the device")
        return JobResult(output, DEMO_COUNTS, {"de": 0}, [], "lang")

    monkeypatch.setattr(demo, "build_tiny_m2m100", build)
    monkeypatch.setattr(demo, "build_tiny_xlmr_ner", build)
    monkeypatch.setattr(demo, "synthesize", synthesize)
    return folders


def test_demo_removes_its_temporary_folder_and_keeps_an_output_dir(tmp_path, monkeypatch, capsys):
    import tempfile

    from crop_hf.engine.jobs import JobResult

    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    folders = _fake_demo_stages(monkeypatch)
    assert main(["demo", "--tgt_langs", "de", "--no_show_progress"]) == 0
    out = capsys.readouterr().out
    assert len(folders) == 3 and all(temporary in folder.parents for folder in folders)  # it wrote there...
    assert list(temporary.iterdir()) == []  # ...and nothing is left
    assert JobResult(temporary, DEMO_COUNTS, {}, [], "lang").table() in out  # the counts are printed
    assert str(temporary) not in out and "pass --output_dir DIR to keep them" in out  # no path that is gone

    folders = _fake_demo_stages(monkeypatch, fail=True)
    assert main(["demo", "--tgt_langs", "de", "--no_show_progress"]) == 1  # an error removes it too
    assert folders and list(temporary.iterdir()) == []

    folders = _fake_demo_stages(monkeypatch)
    assert main(["demo", "--tgt_langs", "de", "--no_show_progress", "--output_dir", str(tmp_path / "kept")]) == 0
    assert all(folder.is_dir() for folder in folders) and (tmp_path / "kept" / "synthesis" / "README.md").is_file()
    assert str(tmp_path / "kept" / "synthesis") in capsys.readouterr().out  # the report says where


def test_subcommand_help_lists_its_options(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["env", "--help"])
    assert exit_info.value.code == 0
    assert "--json" in capsys.readouterr().out


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_is_configuration_dataclasses_and_run(name):
    import dataclasses
    import importlib

    module = importlib.import_module(COMMANDS[name][0])
    assert module.CONFIG_CLASSES and all(dataclasses.is_dataclass(cls) for cls in module.CONFIG_CLASSES)
    assert callable(module.run)
    for cls in module.CONFIG_CLASSES:
        for field in dataclasses.fields(cls):
            assert field.metadata.get("help"), f"{name}: --{field.name} has no help"


def test_a_command_reads_its_options_from_a_yaml_file_and_the_line_overrides_it(tmp_path, capsys):
    config = tmp_path / "env.yaml"
    config.write_text("json: true\n")
    assert main(["env", str(config)]) == 0
    assert json.loads(capsys.readouterr().out)["crop-hf"] == crop_hf.__version__
    assert main(["env", str(config), "--json", "false"]) == 0
    assert not capsys.readouterr().out.startswith("{")
    config.write_text("jsn: true\n")
    assert main(["env", str(config)]) == 2  # a usage error, in one line
    assert capsys.readouterr().err == f"crop-hf env: error: {config}: unknown argument(s) jsn; valid options: json\n"
    with pytest.raises(ValueError, match=r"unknown argument\(s\) jsn; valid options: json"):
        main(["env", str(config), "--debug"])
