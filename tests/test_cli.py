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
