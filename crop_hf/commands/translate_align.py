"""``crop-hf translate-align``: English bracket parses to target-language parses (CSTOP's translate-and-align).

Examples::

    # CSTOP's zero-shot data (ES*): English TOPv2 parses into Spanish
    crop-hf translate-align --input "top:v2?data_dir=data/topv2" --tgt_lang es \\
        --mt_model facebook/m2m100_418M --output_dir out/en-es
    # Hinglish-TOP's English side, hybrid projection, no language check (code-switched target)
    crop-hf translate-align --input "hinglish_top?data_dir=Hinglish-TOP" --tgt_lang hi --method hybrid \\
        --language_filter false --output_dir out/en-hi
    # ... with the Hindi postposition rule and grow-diag-final links (the best measured on Hinglish-TOP)
    crop-hf translate-align --input "hinglish_top?data_dir=Hinglish-TOP" --tgt_lang hi \\
        --method "hybrid?postpositions=hi" --symmetrization grow-diag-final --language_filter false \\
        --output_dir out/en-hi
    # slots placed by the translation model itself: T-Projection's reranking with a plain model
    crop-hf translate-align --input "top:v2?data_dir=data/topv2" --tgt_lang es --method rerank \\
        --mt_model facebook/m2m100_418M --output_dir out/en-es-rerank

Several processes split the shards: ``accelerate launch --multi_gpu -m crop_hf.cli translate-align ...``
on GPUs, ``ACCELERATE_USE_CPU=1 torchrun --standalone --nproc_per_node 2 -m crop_hf.cli translate-align ...``
on CPUs; a rerun with the same options resumes, and one with other options into a finished folder
is refused unless ``--overwrite_output_dir`` is given.
"""

from __future__ import annotations

from crop_hf.augment.translate_align import TranslateAlignConfig, translate_align
from crop_hf.commands import run_corpus_job

CONFIG_CLASSES = (TranslateAlignConfig,)


def run(config: TranslateAlignConfig) -> int:
    run_corpus_job(translate_align, config)
    return 0
