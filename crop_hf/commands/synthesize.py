"""``crop-hf synthesize``: build pseudo-labeled NER corpora in target languages (CroP).

Example (the paper's models, raw sentences one per line in raw/de.txt and raw/es.txt)::

    crop-hf synthesize --tgt_langs de es --input "raw/{lang}.txt" --output_dir out/crop
    crop-hf synthesize run.yaml --device cuda:0     # options from a file, overridden on the line
    # no labeled back-translation: your marker-trained model inserts the markers into the raw sentence
    crop-hf synthesize --tgt_langs de --input "raw/{lang}.txt" --output_dir out/insertion \\
        --mt_model models/m2m100-markers --method insertion

Several processes split the shards: ``accelerate launch --multi_gpu -m crop_hf.cli synthesize ...`` on
GPUs, ``ACCELERATE_USE_CPU=1 torchrun --standalone --nproc_per_node 2 -m crop_hf.cli synthesize ...`` on
CPUs; the run logs how many it runs on. A folder that holds a finished result of other settings is
refused unless ``--overwrite_output_dir`` is given.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from crop_hf.commands import run_corpus_job
from crop_hf.synthesis import synthesize
from crop_hf.synthesis.config import SynthesisConfig
from crop_hf.synthesis.runner import push_to_hub


@dataclass
class HubOptions:
    """Where to publish the result."""

    push_to_hub: str | None = field(
        default=None, metadata={"help": "Also publish the dataset (one split per language), its report and its card "
                                        "to this Hub dataset repository (REPO_ID)."})
    private: bool = field(default=False, metadata={"help": "Make the Hub repository private."})


CONFIG_CLASSES = (SynthesisConfig, HubOptions)


def run(config: SynthesisConfig, hub: HubOptions | None = None) -> int:
    hub = hub or HubOptions()
    result = run_corpus_job(synthesize, config)
    if result.statistics:  # the main process
        if config.report:
            print(f"report: {result.output_dir / 'report' / 'index.html'} (plots linked from the card)")
        if hub.push_to_hub:
            url = push_to_hub(result, hub.push_to_hub, private=hub.private)
            print(f"pushed to {url}")
    return 0
