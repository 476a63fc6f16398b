"""Label projection: put entity labels on raw target-language sentences.

* :func:`project_lexical` — CroP's string matching of translated entities (words, or characters
  for zh, ja, th, my, km, lo, bo), longest first, without overlaps;
* :func:`project_fuzzy` — exact matching, then RapidFuzz similarity (EasyProject-style);
* :func:`project_alignment` — CSTOP's copying of source spans over a word alignment;
* :func:`project_hybrid` — lexical matching first, alignment for the entities it cannot place;
* :func:`project_insertion` — a marker-trained translation model places each span's markers in the
  fixed target (exact best-first search, batched across sentences);
* :func:`project_rerank`, :func:`project_hybrid_rerank` — candidate spans ranked by a plain
  translation model's symmetric score (T-Projection), alone or overriding hybrid by a margin;
  these three score with a :class:`TranslationScorer`;
* :class:`ProjectionPipeline` — every method as ``transformers.pipeline("projection", ...)`` (the
  model-scored ones with ``scorer=`` or ``scorer_model=``).

Every method returns a :class:`ProjectionResult` (tokens, IOB2 tags, projected entities, one
status per input entity, ``complete``/``kept``). Importing this package does not import
transformers or torch; ``ProjectionPipeline`` loads them when first accessed.

>>> from crop_hf.projection import project_lexical
>>> project_lexical("Angela Merkel besuchte Paris .", [("Angela Merkel", "PER"), ("Paris", "LOC")]).tags
['B-PER', 'I-PER', 'O', 'B-LOC', 'O']
"""

from crop_hf.projection.alignment import project_alignment, source_spans
from crop_hf.projection.fuzzy import project_fuzzy
from crop_hf.projection.hybrid import project_hybrid
from crop_hf.projection.insertion import project_insertion
from crop_hf.projection.lexical import LexicalMatcher, TranslatedEntity, project_lexical, read_entities
from crop_hf.projection.rerank import project_hybrid_rerank, project_rerank, symmetric_scores
from crop_hf.projection.result import EntityStatus, ProjectedEntity, ProjectionResult
from crop_hf.projection.target import (
    NO_SPACE_LANGUAGES,
    Normalizer,
    TargetSentence,
    is_punctuation,
    tokenize_target,
    uses_characters,
)
from crop_hf.translation.scoring import TranslationScorer

__all__ = [
    "NO_SPACE_LANGUAGES",
    "EntityStatus",
    "LexicalMatcher",
    "Normalizer",
    "ProjectedEntity",
    "ProjectionPipeline",
    "ProjectionResult",
    "TargetSentence",
    "TranslatedEntity",
    "TranslationScorer",
    "is_punctuation",
    "project_alignment",
    "project_fuzzy",
    "project_hybrid",
    "project_hybrid_rerank",
    "project_insertion",
    "project_lexical",
    "project_rerank",
    "read_entities",
    "source_spans",
    "symmetric_scores",
    "tokenize_target",
    "uses_characters",
]


def __getattr__(name: str):
    if name == "ProjectionPipeline":  # imports transformers: only on demand
        from crop_hf.projection.pipeline import ProjectionPipeline  # heavy (torch): loaded on first use

        return ProjectionPipeline
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
