"""``crop-hf evaluate-parser``: exact match, intent accuracy and slot F1 of a parser, per domain.

    crop-hf evaluate-parser --model parser --sources "hinglish_top?data_dir=data/hinglish-top" --split validation

Exact match compares whole trees. Gold trees with intents inside slots are also scored alone (the
``nested`` line, and a summary line of how many there were and how the model did on them); a flat
parser cannot produce them, a hierarchical one (``max_intent_depth`` above 1) can up to its depth.
Gold trees the model cannot represent (deeper than it supports, a slot without words) are counted
by reason with their file:line (or row), and scored as wrong. With ``--seen_split train``, the rows
whose gold parse repeats a training parse word for word are scored apart from the others (the
``seen`` and ``unseen`` lines): a parser may match those from memory. A second table says where the wrong
trees of the flat and the nested rows first differ from gold: the root intent, the top-level slots, or
inside a slot (:func:`crop_hf.metrics.parsing.format_error_table`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from crop_hf.errors import check_model, check_output_path
from crop_hf.metrics.parsing import format_error_table, format_parse_table
from crop_hf.parsing.data import load_parse_rows
from crop_hf.parsing.evaluate import evaluate_parser


@dataclass
class EvaluateParserConfig:
    """What to score and on what."""

    model: str = field(metadata={"help": "Folder or Hub id of a parser trained with crop-hf."})
    sources: list[str] = field(
        default_factory=list,
        metadata={"help": "Source specs of the corpora to score, e.g. 'hinglish_top?data_dir=data/hinglish-top' "
                          "(add '#en' for the English side)."})
    split: str = field(default="validation", metadata={"help": "Split to score."})
    batch_size: int = field(default=64, metadata={"help": "Utterances per batch."})
    max_length: int = field(default=256, metadata={"help": "Sub-word limit per utterance."})
    max_samples: int | None = field(default=None, metadata={"help": "Score only the first N utterances."})
    seen_split: str | None = field(default=None, metadata={
        "help": "The split the model was trained on (train): its parses count as seen, and the rows whose gold "
                "parse repeats one word for word are scored apart (seen, unseen)."})
    output: str | None = field(default=None, metadata={"help": "Also write the scores as JSON to this file."})


CONFIG_CLASSES = (EvaluateParserConfig,)


def run(config: EvaluateParserConfig) -> int:
    import json
    from pathlib import Path

    from transformers import AutoTokenizer

    from crop_hf.modeling import JointIntentSlotModel  # heavy (torch): not loaded by --help

    if not config.sources:
        raise ValueError("--sources: name the corpora to score")
    # every mistake before the model loads: its folder, where the scores go, every corpus
    check_model(config.model, "parser (--model)")
    if config.output:
        check_output_path(config.output, "--output", file=True)
    corpora = {}
    for spec in config.sources:
        rows = load_parse_rows(spec, config.split, option="--sources")
        if config.max_samples is not None:
            rows = rows.select(range(min(config.max_samples, len(rows))))
        seen = load_parse_rows(spec, config.seen_split, option="--seen_split") if config.seen_split else None
        corpora[spec] = rows, seen
    model = JointIntentSlotModel.from_pretrained(config.model)
    tokenizer = AutoTokenizer.from_pretrained(config.model)
    results = {}
    for spec, (rows, seen) in corpora.items():
        scores, _ = evaluate_parser(model, tokenizer, rows, batch_size=config.batch_size, seen=seen,
                                    max_length=config.max_length, show_progress=True, where=f"{spec} ({config.split})")
        results[spec] = scores
        print(f"{spec} ({config.split}), percent\n{format_parse_table(scores)}")
        nested, bad = scores["nested"], scores["unrepresentable"]
        print(f"nested gold trees (intents inside slots): {nested['count']} of {scores['count']}; exact match on "
              f"them {100 * nested['exact_match']:.1f}% (model intent depth {model.config.max_intent_depth})")
        if "unseen" in scores:
            unseen = scores["unseen"]
            print(f"gold parses not in {config.seen_split} word for word: {unseen['count']} of {scores['count']}; "
                  f"exact match on them {100 * unseen['exact_match']:.1f}% (on the others "
                  f"{100 * scores['seen']['exact_match']:.1f}%)")
        print(f"where the wrong trees first differ from gold, percent\n{format_error_table(scores)}")
        if bad["count"]:
            reasons = ", ".join(f"{n} {reason}" for reason, n in bad["reasons"].items())
            print(f"gold trees this model cannot represent (scored as wrong): {bad['count']} ({reasons}); first: "
                  + " | ".join(bad["examples"][:3]))
        print()
    if config.output:
        Path(config.output).write_text(json.dumps({"model": config.model, "split": config.split,
                                                   "scores": results}, indent=2) + "\n", encoding="utf-8")
    return 0
