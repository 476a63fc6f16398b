"""``crop-hf demo``: an offline smoke run of every synthesis stage on bundled sample sentences.

It builds a tiny random-weight M2M100 and XLM-R tagger (no download), runs synthesis on the
sample sentences shipped with crop-hf and prints the same summary table as ``crop-hf synthesize``.
**The labels are meaningless**: random models translate into noise, so nearly every sentence is
dropped (mostly ``markers_incomplete``). It shows that the installation, the stages, the shard
files, the dataset and its card all work before real models are downloaded.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import ClassVar

from crop_hf.console import progress_bars, setup_logging
from crop_hf.demo_models import build_tiny_m2m100, build_tiny_xlmr_ner
from crop_hf.synthesis import SynthesisConfig, synthesize

SAMPLE_LANGUAGES = ("de", "es", "nl", "zh")


@dataclass
class DemoConfig:
    """Options of ``crop-hf demo``."""

    renamed: ClassVar[Mapping[str, str]] = {"target_langs": "tgt_langs"}

    output_dir: str | None = field(default=None, metadata={
        "help": "Where to write and keep the outputs (default: a temporary folder, removed at the end)."})
    tgt_langs: list[str] = field(default_factory=lambda: list(SAMPLE_LANGUAGES), metadata={
        "help": f"Bundled sample languages to run ({' '.join(SAMPLE_LANGUAGES)})."})
    show_progress: bool = field(default=True, metadata={"help": "Show progress bars (--no_show_progress hides "
                                                                 "every bar)."})

    def __post_init__(self) -> None:
        unknown = sorted(set(self.tgt_langs) - set(SAMPLE_LANGUAGES))
        if unknown:
            raise ValueError(f"no bundled sample sentences for {unknown}; choose among {', '.join(SAMPLE_LANGUAGES)}")


CONFIG_CLASSES = (DemoConfig,)


def sample_path() -> str:
    """The ``{lang}`` path template of the bundled sample sentences."""
    return str(Path(str(resources.files("crop_hf") / "resources" / "samples")) / "{lang}.txt")


def run(config: DemoConfig) -> int:
    """Run the demo into ``--output_dir``, or into a temporary folder that is removed at the end, even on an error."""
    setup_logging(logging.WARNING)
    if config.output_dir:
        return _run(config, Path(config.output_dir))
    with tempfile.TemporaryDirectory(prefix="crop-hf-demo-") as folder:
        return _run(config, Path(folder), temporary=True)


def _run(config: DemoConfig, output: Path, temporary: bool = False) -> int:
    print("SMOKE RUN with tiny random-weight models: the labels are meaningless.")
    corpus = [line for lang in config.tgt_langs for line in Path(sample_path().format(lang=lang)).read_text(
        encoding="utf-8").splitlines()]
    mt_model = build_tiny_m2m100(output / "models" / "tiny-m2m100", corpus=corpus)
    ner_model = build_tiny_xlmr_ner(output / "models" / "tiny-xlmr-ner", corpus=corpus)
    synthesis = SynthesisConfig(
        tgt_langs=config.tgt_langs, input=sample_path(), output_dir=str(output / "synthesis"),
        mt_model=str(mt_model), ner_model=str(ner_model), num_beams=2, num_return_sequences=2,
        max_new_tokens=32, shard_size=4, show_progress=config.show_progress,
    )
    with progress_bars(config.show_progress, own_only=True):
        result = synthesize(synthesis)
    if temporary:  # the paths a report names would be gone: the counts only
        print("\n".join([result.table(), *result.notes]))
        print("\nThe outputs were in a temporary folder, now removed: pass --output_dir DIR to keep them.")
    else:
        print(result.report())
    return 0
