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
