"""CroP corpus synthesis: pseudo-labeled NER corpora in target languages from raw sentences.

>>> from crop_hf.synthesis import SynthesisConfig, synthesize
>>> result = synthesize(SynthesisConfig(tgt_langs=["de", "es"], input="raw/{lang}.txt",
...                                     output_dir="out"))  # doctest: +SKIP
>>> print(result.table())  # doctest: +SKIP

See :class:`~crop_hf.synthesis.runner.SynthesisJob` for sharding, resumption and several
processes, :mod:`crop_hf.synthesis.stages` for what happens to each sentence and
:mod:`crop_hf.synthesis.rows` for the rows and why a row is dropped. Importing this package is light.
"""

from crop_hf.engine.language import LanguageIdFilter
from crop_hf.synthesis.config import SynthesisConfig
from crop_hf.synthesis.rows import SYNTHESIS_REASONS
from crop_hf.synthesis.runner import SynthesisJob, SynthesisResult, synthesize
from crop_hf.synthesis.stages import SynthesisModels

__all__ = [
    "SYNTHESIS_REASONS",
    "LanguageIdFilter",
    "SynthesisConfig",
    "SynthesisJob",
    "SynthesisModels",
    "SynthesisResult",
    "synthesize",
]
