"""Word aligners and symmetrization.

* :class:`EmbeddingAligner` — SimAlign's ArgMax / IterMax / Match over any Hugging Face encoder
  and layer, batched (:mod:`crop_hf.alignment.embedding`);
* :class:`EflomalAligner` — the eflomal statistical aligner over a parallel corpus, both
  directions (:mod:`crop_hf.alignment.eflomal`);
* :func:`symmetrize` — intersection, union, grow, grow-diag, grow-diag-final(-and)
  (:mod:`crop_hf.alignment.symmetrize`).

Every aligner has one method, ``align(source, target) -> list[Alignment]``, with its settings
(layer, SimAlign method, symmetrization) fixed when it is built, so callers never check which
aligner they hold. An alignment is, per sentence pair, a sorted list of ``(source_word,
target_word)`` index pairs: the Pharaoh ``i-j`` format as Python tuples (:func:`to_pharaoh`
writes the text).
Importing this package loads neither torch nor eflomal; each aligner imports what it needs.
"""

from crop_hf.alignment.eflomal import EflomalAligner
from crop_hf.alignment.embedding import DEFAULT_ENCODER, EMBEDDING_METHODS, EmbeddingAligner
from crop_hf.alignment.symmetrize import (
    SYMMETRIZATION_METHODS,
    Alignment,
    parse_pharaoh,
    symmetrize,
    to_pharaoh,
)

__all__ = [
    "DEFAULT_ENCODER",
    "EMBEDDING_METHODS",
    "SYMMETRIZATION_METHODS",
    "Alignment",
    "EflomalAligner",
    "EmbeddingAligner",
    "parse_pharaoh",
    "symmetrize",
    "to_pharaoh",
]
