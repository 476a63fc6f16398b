"""``crop-hf env``: the versions that matter when reporting a bug."""

from __future__ import annotations

import json
import platform
from dataclasses import dataclass, field
from importlib import metadata

from crop_hf.translation.apertium import Apertium, ApertiumNotInstalledError

PACKAGES = (
    "crop-hf", "torch", "transformers", "tokenizers", "datasets", "accelerate", "huggingface_hub",
    "sentencepiece", "peft", "ctranslate2", "seqeval", "sacrebleu", "langid", "eflomal", "simalign",
)


@dataclass
class EnvConfig:
    """Options of ``crop-hf env``."""

    json: bool = field(default=False, metadata={"help": "Print one JSON object instead of a table."})


CONFIG_CLASSES = (EnvConfig,)


def collect() -> dict[str, str]:
    """Python, platform, the installed version of each package (``"not installed"`` when absent), and
    Apertium (``--mt_model apertium``): its version and installed pairs."""
    info = {"python": platform.python_version(), "platform": platform.platform()}
    for name in PACKAGES:
        try:
            info[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            info[name] = "not installed"
    info.update(apertium())
    return info


def apertium() -> dict[str, str]:
    """``apertium`` and ``apertium pairs``: the engine's version and its installed pairs, or why there are none."""
    engine = Apertium()
    try:
        return {"apertium": engine.version, "apertium pairs": " ".join(engine.installed_pairs) or "none"}
    except ApertiumNotInstalledError:
        return {"apertium": "not installed (apt-get install apertium apertium-eng-spa)", "apertium pairs": "none"}
    except (OSError, RuntimeError) as error:
        return {"apertium": f"not working: {error}", "apertium pairs": "none"}


def run(config: EnvConfig) -> int:
    info = collect()
    if config.json:
        print(json.dumps(info, indent=2))
    else:
        width = max(map(len, info))
        for key, value in info.items():
            print(f"{key:<{width}}  {value}")
    return 0
