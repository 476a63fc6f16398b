"""A tiny random-weight parser built offline in seconds, for tests, examples and smoke runs.

>>> from crop_hf.parsing.tiny import build_tiny_parser
>>> folder = build_tiny_parser("/tmp/tiny-parser", ["GET_WEATHER"], ["O", "B-LOCATION", "I-LOCATION"])  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = ["build_tiny_parser"]


def build_tiny_parser(save_dir: str | Path, intent_labels: Sequence[str], slot_labels: Sequence[str],
                      corpus: Iterable[str] | None = None, *, use_crf: bool = True, hidden_size: int = 32,
                      layers: int = 2, seed: int = 0) -> Path:
    """Write a :class:`~crop_hf.modeling.JointIntentSlotModel` over a tiny BERT and its WordPiece tokenizer.

    The folder loads with ``AutoModel.from_pretrained`` and ``pipeline("semantic-parsing", model=...)``.
    """
    import tempfile

    from transformers import AutoTokenizer

    from crop_hf.modeling import JointIntentSlotModel
    from crop_hf.tiny import build_tiny_bert

    save_dir = Path(save_dir)
    with tempfile.TemporaryDirectory() as encoder_dir:
        encoder = build_tiny_bert(encoder_dir, corpus, hidden_size=hidden_size, layers=layers, seed=seed)
        model = JointIntentSlotModel.from_encoder(str(encoder), list(intent_labels), list(slot_labels),
                                                  use_crf=use_crf)
        model.config.encoder_name_or_path = "tiny-bert"
        model.save_pretrained(save_dir)
        AutoTokenizer.from_pretrained(encoder).save_pretrained(save_dir)
    return save_dir
