"""Registers crop-hf's pipelines with transformers, without making ``import crop_hf`` slow.

``transformers.pipelines`` takes several seconds to import. Registering eagerly would put that
cost on every ``import crop_hf`` and every ``crop-hf --help``. Instead:

* if ``transformers.pipelines`` is already imported, :func:`register_pipelines` runs at once;
* otherwise a one-shot import hook runs it right after ``transformers.pipelines`` finishes
  importing, which happens before any ``transformers.pipeline(...)`` call can look a task up.

Either way ``import crop_hf; pipeline("labeled-translation", ...)`` works in any import order,
and registering twice is harmless.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import logging
import os
import sys

from crop_hf.registry import Registry

_TARGET = "transformers.pipelines"


class ModelFree(os.PathLike):
    """The default "model" of a task that can run without one (``pipeline("projection")``).

    ``transformers.pipeline(task)`` without ``model=`` always resolves the task's registered
    default and would download it. Registered as the default instead, this marker passes through
    the factory untouched (it is a local path, crop-hf's own code folder, so no revision is looked
    up, and not a string, so nothing is loaded) and the pipeline class receives it as ``model``
    and builds itself without a model.
    """

    def __fspath__(self) -> str:
        return os.path.dirname(os.path.abspath(__file__))

    def __repr__(self) -> str:
        return "no model (crop-hf runs this task without one)"


#: The marker a model-free task receives as ``model`` from ``transformers.pipeline``.
MODEL_FREE = ModelFree()


class _NoDefaultModelNotice(logging.Filter):
    """Drops transformers' "No model was supplied, defaulted to ..." warning when the default is :data:`MODEL_FREE`.

    ``pipeline("projection")`` needs no model, so advice to name one (and its revision) "in
    production" is wrong there; the notice stays for every task that does download a default.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return repr(MODEL_FREE) not in str(record.msg)

#: task -> (module, pipeline class, transformers auto-model class name or None, input type[,
#: default model: ``MODEL_FREE`` for a task that runs without one]). Each feature that adds a
#: pipeline adds one row here.
PIPELINE_TASKS: Registry[tuple] = Registry("pipeline task", {
    "labeled-translation": ("crop_hf.translation.pipeline", "LabeledSequenceTranslationPipeline",
                            "AutoModelForSeq2SeqLM", "text", None),
    "projection": ("crop_hf.projection.pipeline", "ProjectionPipeline", "AutoModel", "text", MODEL_FREE),
    "semantic-parsing": ("crop_hf.parsing.pipeline", "SemanticParsingPipeline", "AutoModel", "text"),
})


def register_pipelines() -> list[str]:
    """Register every task in :data:`PIPELINE_TASKS` that transformers does not know yet.

    Returns the tasks registered by this call. Safe to call any number of times.

    A pipeline module may itself be what first imports ``transformers.pipelines`` (a user who
    imports ``crop_hf.translation.pipeline`` directly); the hook then finds that module half
    imported, without its class. Such a task is skipped here, and every pipeline module ends with
    a call to this function, which registers it once its class exists.
    """
    import transformers
    from transformers.pipelines import PIPELINE_REGISTRY

    registered = []
    for task, (module_name, class_name, model_class, input_type, *default) in PIPELINE_TASKS.items():
        module = sys.modules.get(module_name)
        if task in PIPELINE_REGISTRY.get_supported_tasks() or (module and not hasattr(module, class_name)):
            continue
        pipeline_class = getattr(importlib.import_module(module_name), class_name)
        if task in PIPELINE_REGISTRY.get_supported_tasks():  # importing the module registered it
            continue
        pt_model = getattr(transformers, model_class) if model_class else ()
        options = {"default": {"model": (default[0], None)}} if default and default[0] is not None else {}
        PIPELINE_REGISTRY.register_pipeline(task, pipeline_class=pipeline_class, pt_model=pt_model, type=input_type,
                                            **options)
        registered.append(task)
    notices = logging.getLogger("transformers.pipelines")  # where pipeline() logs the notice
    if not any(isinstance(existing, _NoDefaultModelNotice) for existing in notices.filters):
        notices.addFilter(_NoDefaultModelNotice())
    return registered


class _RegisterAfterImport(importlib.abc.MetaPathFinder):
    """Wraps the loader of ``transformers.pipelines`` so registration follows its execution."""

    def find_spec(self, fullname, path, target=None):
        if fullname != _TARGET:
            return None
        sys.meta_path.remove(self)  # one shot; also keeps the lookup below from recursing
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        execute = spec.loader.exec_module

        def exec_module(module):
            execute(module)
            register_pipelines()

        spec.loader.exec_module = exec_module
        return spec


def install() -> None:
    """Register now if transformers' pipelines are loaded, else as soon as they are."""
    if _TARGET in sys.modules:
        register_pipelines()
    elif not any(isinstance(finder, _RegisterAfterImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _RegisterAfterImport())
