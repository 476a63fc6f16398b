"""crop_hf registers its pipelines with transformers in either import order, without a slow import."""

import subprocess
import sys
import textwrap

import pytest

ECHO_MODULE = '''
from transformers import Pipeline

class EchoPipeline(Pipeline):
    def _sanitize_parameters(self, **kwargs):
        return {}, {}, {}
    def preprocess(self, text):
        return {"text": text}
    def _forward(self, inputs):
        return inputs
    def postprocess(self, outputs):
        return outputs["text"].upper()
'''


def run_python(code, tmp_path):
    (tmp_path / "echo_pipeline.py").write_text(ECHO_MODULE)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd=tmp_path, check=False
    )


@pytest.mark.parametrize("crop_hf_first", [True, False])
def test_tasks_register_in_either_import_order(tmp_path, crop_hf_first):
    first, second = ("import crop_hf", "import transformers.pipelines")[:: 1 if crop_hf_first else -1]
    code = f"""
        import sys
        from crop_hf import _registration
        _registration.PIPELINE_TASKS["crop-hf-echo"] = ("echo_pipeline", "EchoPipeline", None, "text")
        {first}
        if {crop_hf_first!r}:
            assert "transformers.pipelines" not in sys.modules, "import crop_hf must stay light"
        {second}
        from transformers.pipelines import PIPELINE_REGISTRY
        tasks = PIPELINE_REGISTRY.get_supported_tasks()
        missing = [t for t in _registration.PIPELINE_TASKS if t not in tasks]
        assert not missing, missing
        assert _registration.register_pipelines() == []  # a second registration is a no-op
        print("ok")
    """
    result = run_python(code, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("ok")


def test_registered_task_is_usable_through_transformers_pipeline(tmp_path, tiny_bart):
    code = f"""
        from crop_hf import _registration
        _registration.PIPELINE_TASKS["crop-hf-echo"] = ("echo_pipeline", "EchoPipeline", "AutoModelForSeq2SeqLM", "text")
        import crop_hf
        from transformers import pipeline
        echo = pipeline("crop-hf-echo", model={str(tiny_bart)!r})
        print(echo("hola"))
    """
    result = run_python(code, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "HOLA"


@pytest.mark.parametrize("module", ["crop_hf.translation.pipeline", "crop_hf.projection.pipeline"])
def test_importing_a_pipeline_module_first_registers_every_task(tmp_path, module):
    # The module's own import of transformers.pipelines fires the hook while the module is half
    # imported; it must not break the import, and its task must still end up registered.
    code = f"""
        import {module}
        from crop_hf import _registration
        from transformers.pipelines import PIPELINE_REGISTRY
        tasks = PIPELINE_REGISTRY.get_supported_tasks()
        print(sorted(t for t in _registration.PIPELINE_TASKS if t not in tasks))
    """
    result = run_python(code, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_the_main_verbs_are_offered_at_the_top_level_and_load_only_when_used(tmp_path):
    code = """
        import sys
        import crop_hf
        heavy = ("crop_hf.synthesis", "crop_hf.augment.translate_align", "crop_hf.augment.generate_filter",
                 "crop_hf.projection.methods")
        assert not [m for m in heavy if m in sys.modules], [m for m in heavy if m in sys.modules]
        assert {"synthesize", "translate_align", "project_examples", "SynthesisConfig"} <= set(dir(crop_hf))
        from crop_hf.synthesis import synthesize
        from crop_hf.augment.translate_align import TranslateAlignConfig
        assert crop_hf.synthesize is synthesize and crop_hf.TranslateAlignConfig is TranslateAlignConfig
        assert all(hasattr(crop_hf, name) for name in crop_hf.__all__)
        try:
            crop_hf.synthesise
        except AttributeError as error:
            assert "has no attribute 'synthesise'" in str(error)
        else:
            raise AssertionError("a misspelt verb was found")
        print("ok")
    """
    result = run_python(code, tmp_path)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
