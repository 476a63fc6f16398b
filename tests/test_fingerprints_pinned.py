"""Every corpus job's run fingerprint stays byte-identical across refactors (issue 63 point 2).

The fingerprint names a run's shard folder: if it changed for the same settings, an output folder
written by an earlier release would no longer resume. The expected values were computed by the code
before the run options had one base class (0de2cc4); each case sets run-only options too (device,
show_progress, batch_size where it changes nothing, save_model), which must stay out of it.
"""

from __future__ import annotations

import pytest

from crop_hf.augment.generate_filter import GenerateFilterConfig, GenerateFilterJob
from crop_hf.augment.translate_align import TranslateAlignConfig, TranslateAlignJob
from crop_hf.synthesis.config import SynthesisConfig
from crop_hf.synthesis.runner import SynthesisJob
from crop_hf.translation.mark_parallel import MarkParallelConfig, MarkParallelJob

CASES = {
 "synthesis_default": lambda: SynthesisJob(SynthesisConfig(tgt_langs=["de", "es"], output_dir="o")),
 "synthesis_options": lambda: SynthesisJob(SynthesisConfig(tgt_langs=["nl"], output_dir="o", src_lang="en", max_examples=7, method="hybrid?one_word=true", alignment_model="bert-base-multilingual-cased", shard_size=50, language_filter=False, device="cpu", show_progress=False, strict_input=True)),
 "translate_align_default": lambda: TranslateAlignJob(TranslateAlignConfig(input="a.tsv", output_dir="o", tgt_lang="es")),
 "translate_align_options": lambda: TranslateAlignJob(TranslateAlignConfig(input="a.tsv", output_dir="o", tgt_lang="hi", symmetrization="grow-diag-final", max_examples=3, batch_size=2, shard_size=10, keep_incomplete=True)),
 "generate_filter_default": lambda: GenerateFilterJob(GenerateFilterConfig(few_shot="f.tsv", english="e.tsv", output_dir="o")),
 "generate_filter_options": lambda: GenerateFilterJob(GenerateFilterConfig(few_shot="f.tsv", english="e.tsv", output_dir="o", lang="es", top_k=3, max_sources=9, cpu=True, save_model=True)),
 "mark_parallel_default": lambda: MarkParallelJob(MarkParallelConfig(output_dir="o"), [], inputs_id="files:x"),
 # rows_per_file was called shard_size, and shard_size align_chunk_size
 "mark_parallel_options": lambda: MarkParallelJob(MarkParallelConfig(output_dir="o", slot_prob=0.5, both_directions=True,
                                                                     rows_per_file=7, shard_size=11, seed=3),
                                                  [], inputs_id="files:y"),
}

#: the fingerprints (and the number of arguments behind each) that runs written before the change have
EXPECTED = {
    "generate_filter_default": ("36c65c84523e3fd2", 20),
    "generate_filter_options": ("d505f727e2a1fac9", 20),
    "mark_parallel_default": ("69203a69e6b5c4d9", 12),
    "mark_parallel_options": ("14d4d3963248cdfa", 12),
    "synthesis_default": ("d7d6296346accee9", 21),
    "synthesis_options": ("0a02a19f280062b8", 21),
    "translate_align_default": ("6f663287f47971d8", 18),
    "translate_align_options": ("931d10bce77d26a2", 19),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_jobs_fingerprint_is_the_one_earlier_releases_wrote(case):
    job = CASES[case]()
    assert (job.store.fingerprint, len(job.store.arguments)) == EXPECTED[case], job.store.arguments
