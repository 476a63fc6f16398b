"""The Hugging Face Space of crop-hf: the ``crop-hf app`` page, its models named by the Space's variables.

``CROP_HF_MT_MODEL``, ``CROP_HF_NER_MODEL``, ``CROP_HF_PARSER_MODEL`` and ``CROP_HF_ALIGN_MODEL``
take Hub ids; a model left unset is a tiny random one (the page says its output is meaningless).
"""

import os

from crop_hf.app import AppModels, build_app, launch

models = AppModels(
    mt_model=os.environ.get("CROP_HF_MT_MODEL") or None,
    ner_model=os.environ.get("CROP_HF_NER_MODEL") or None,
    parser_model=os.environ.get("CROP_HF_PARSER_MODEL") or None,
    align_model=os.environ.get("CROP_HF_ALIGN_MODEL") or None,
)
demo = build_app(models)

if __name__ == "__main__":
    launch(demo, host="0.0.0.0", port=int(os.environ.get("PORT", "7860")))
