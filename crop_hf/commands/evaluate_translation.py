"""``crop-hf evaluate-translation``: marker completeness, slot accuracy, BLEU and chrF of translation models.

    crop-hf evaluate-translation --model m2m100-418M-markers --baseline facebook/m2m100_418M \\
        --data marked/test --num_beams 4

Each model translates the marked sources of ``--data`` (a ``crop-hf mark-parallel`` output) with
free and marker-constrained decoding; the table shows every model and decoding side by side.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from crop_hf.errors import check_device, check_model, check_output_path
from crop_hf.translation.data import load_marked_dataset
from crop_hf.translation.evaluate import (
    TranslationEvaluation,
    check_decodings,
    evaluate_translation,
    format_translation_table,
)
from crop_hf.translation.languages import parse_language_codes
from crop_hf.translation.marker_tokens import add_marker_tokens


@dataclass
class EvaluateTranslationArguments:
    """Models and held-out marked pairs."""

    model: str = field(metadata={"help": "Folder or Hub id of the (marker-trained) translation model."})
    data: str = field(metadata={"help": "Held-out marked pairs: a mark-parallel folder, parquet file or saved dataset."})
    baseline: str | None = field(
        default=None, metadata={"help": "A second model shown beside it, e.g. the model before fine-tuning."})
    marker_style: Literal["crop", "easyproject"] = field(default="crop", metadata={"help": "Marker style of the data."})
    decodings: list[str] = field(default_factory=lambda: ["free", "constrained"],
                                 metadata={"help": "free and/or constrained."})
    num_beams: int = field(default=4, metadata={"help": "Beam size."})
    batch_size: int = field(default=32, metadata={"help": "Sentences per generation batch."})
    max_new_tokens: int = field(default=128, metadata={"help": "Generation length limit."})
    max_samples: int | None = field(default=None, metadata={"help": "First N pairs per direction only."})
    language_codes: list[str] | None = field(
        default=None, metadata={"help": "CODE=MODEL_CODE maps, e.g. en=eng_Latn de=deu_Latn for NLLB."})
    device: str | None = field(default=None, metadata={"help": "torch device (default: cuda if available, else cpu)."})
    output: str | None = field(default=None, metadata={"help": "Also write the scores as JSON to this file."})


CONFIG_CLASSES = (EvaluateTranslationArguments,)


def run(args: EvaluateTranslationArguments) -> int:
    import json
    from pathlib import Path

    import torch
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    # every mistake before the first model loads: the models, the device, where the scores go, the data
    models = [(name, path) for name, path in (("baseline", args.baseline), ("model", args.model)) if path]
    for name, path in models:
        check_model(path, f"{name} (--{name})")
    device = check_device(args.device) if args.device else ("cuda" if torch.cuda.is_available() else "cpu")
    if args.output:
        check_output_path(args.output, "--output", file=True)
    check_decodings(args.decodings, "--decodings")
    data = load_marked_dataset(args.data, option="--data")
    evaluation = TranslationEvaluation()
    for name, path in models:
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForSeq2SeqLM.from_pretrained(path).to(device).eval()
        add_marker_tokens(tokenizer, model, args.marker_style)  # a public baseline lacks them
        with torch.no_grad():
            evaluation.merge(evaluate_translation(
                model, tokenizer, data, name=name, marker_style=args.marker_style, decodings=args.decodings,
                batch_size=args.batch_size, num_beams=args.num_beams, max_new_tokens=args.max_new_tokens,
                language_codes=parse_language_codes(args.language_codes), max_samples=args.max_samples))
    print(format_translation_table(evaluation))
    if args.output:
        Path(args.output).write_text(json.dumps(evaluation.to_dict(), indent=2) + "\n", encoding="utf-8")
    return 0
