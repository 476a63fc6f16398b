"""Run ``crop-hf synthesize`` and a capped ``crop-hf translate-align`` with stand-in models (for test_multiprocess.py).

``python multiprocess_run.py RAW_TEMPLATE PARSES_TSV OUTPUT_DIR`` runs both commands as a user
would (their logging set-up, their printed reports), with the models each command would load
replaced by the fakes the single-process tests use: ``synthesis_fakes.fake_models()`` and
``test_translate_align``'s word-by-word translator with identity links. Launched by ``torchrun``
it runs as one of several processes.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(raw_template: str, parses: str, output_dir: str) -> int:
    from synthesis_fakes import fake_models
    from test_translate_align import DictTranslator, TableAligner

    from crop_hf.augment.translate_align import TranslateAlignModels
    from crop_hf.cli import main as cli
    from crop_hf.synthesis import SynthesisModels

    SynthesisModels.load = classmethod(lambda cls, config, device=None: fake_models())
    TranslateAlignModels.load = classmethod(lambda cls, config, device=None: cls(DictTranslator(), TableAligner()))
    output = Path(output_dir)
    code = cli(["synthesize", "--tgt_langs", "de", "nl", "--input", raw_template,
                "--output_dir", str(output / "synthesis"), "--mt_model", "fake-mt", "--ner_model", "fake-ner",
                "--shard_size", "2", "--max_words", "12", "--language_filter", "false", "--show_progress", "false"])
    return code or cli(["translate-align", "--input", parses, "--tgt_lang", "es",
                        "--output_dir", str(output / "translate_align"), "--max_examples", "7", "--shard_size", "2",
                        "--language_filter", "false", "--show_progress", "false"])


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
