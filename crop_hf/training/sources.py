"""Former home of corpus specs and label reconciliation, kept so that existing imports work.

Corpus specs, loading and mixing live in :mod:`crop_hf.data.sources`; tag columns in
:mod:`crop_hf.data.features`; label reconciliation and renaming in :mod:`crop_hf.labels`.
"""

from crop_hf.data.features import encode_tags, label_names_of, tag_strings
from crop_hf.data.sources import (
    STANDARD_SPLITS,
    NerSource,
    SourceSpec,
    WeightedMixSampler,
    is_split_by_language,
    join_languages,
    load_source,
    load_spec,
    parse_source_spec,
    split_by_language,
)
from crop_hf.labels import LabelConflictError, parse_label_map, reconcile_labels, rename_tag

__all__ = [
    "STANDARD_SPLITS",
    "LabelConflictError",
    "NerSource",
    "SourceSpec",
    "WeightedMixSampler",
    "encode_tags",
    "is_split_by_language",
    "join_languages",
    "label_names_of",
    "load_source",
    "load_spec",
    "parse_label_map",
    "parse_source_spec",
    "reconcile_labels",
    "rename_tag",
    "split_by_language",
    "tag_strings",
]
