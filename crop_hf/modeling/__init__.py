"""The joint intent + slot model of CSTOP, registered with transformers' Auto classes.

Importing this package (which imports torch and transformers; ``import crop_hf`` does not) makes
``AutoConfig``/``AutoModel.from_pretrained(folder)`` recognise ``model_type:
"crop-hf-joint-parser"``, and marks the classes for ``register_for_auto_class`` so that
``save_pretrained``/``push_to_hub`` write ``auto_map`` and copy the model code beside the
weights: a user without crop-hf loads a pushed model with ``trust_remote_code=True``.

>>> from crop_hf.modeling import JointIntentSlotModel, JointParserConfig  # doctest: +SKIP
>>> model = JointIntentSlotModel.from_encoder("FacebookAI/xlm-roberta-base", intents, slot_tags)  # doctest: +SKIP
"""

from __future__ import annotations

from crop_hf.modeling.configuration_joint import JointParserConfig
from crop_hf.modeling.crf import ConstrainedCRF, bio_constraints, is_valid_bio, viterbi_decode
from crop_hf.modeling.modeling_joint import (
    JointIntentSlotModel,
    JointParserOutput,
    NestedParse,
    ParsedUtterance,
)

__all__ = [
    "ConstrainedCRF",
    "JointIntentSlotModel",
    "JointParserConfig",
    "JointParserOutput",
    "NestedParse",
    "ParsedUtterance",
    "bio_constraints",
    "is_valid_bio",
    "register",
    "viterbi_decode",
]


def register() -> None:
    """Register the parser with ``AutoConfig``/``AutoModel`` (idempotent; runs on import)."""
    from transformers import AutoConfig, AutoModel

    AutoConfig.register(JointParserConfig.model_type, JointParserConfig, exist_ok=True)
    AutoModel.register(JointParserConfig, JointIntentSlotModel, exist_ok=True)
    JointParserConfig.register_for_auto_class()
    JointIntentSlotModel.register_for_auto_class("AutoModel")


register()
