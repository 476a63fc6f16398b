"""``crop-hf generate-filter``: CSTOP's generate-and-filter, English parses to code-switched parses with a fine-tuned seq2seq model.

Example (CSTOP_100-style few-shot set drawn from Hinglish-TOP's train split, its English side as the pool)::

    crop-hf generate-filter --few_shot "hinglish_top?data_dir=Hinglish-TOP" \\
        --english "hinglish_top?data_dir=Hinglish-TOP" --few_shot_size 100 --few_shot_seed 0 \\
        --model facebook/bart-base --top_k 10 --num_beams 5 --output_dir out/generated

The augmented set (few-shot + kept generations) is ``output_dir/dataset``; train the parser on it
with ``crop-hf train-parser --train_sources disk:out/generated/dataset``. The English parses are
generated from in resumable shards (``--shard_size``): a rerun with the same options resumes without
fine-tuning again when every shard is finished, and one with other options into a finished folder
is refused unless ``--overwrite_output_dir`` is given.
"""

from __future__ import annotations

from crop_hf.augment.generate_filter import GenerateFilterConfig, generate_and_filter
from crop_hf.commands import run_corpus_job

CONFIG_CLASSES = (GenerateFilterConfig,)


def run(config: GenerateFilterConfig) -> int:
    run_corpus_job(generate_and_filter, config)
    return 0
