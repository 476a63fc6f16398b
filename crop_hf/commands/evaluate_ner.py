"""``crop-hf evaluate-ner``: per-language entity P/R/F1 of any token-classification model.

    crop-hf evaluate-ner --model xlmr-base-conll5-en --sources conll5:es conll5:nl conll5:no --split test
    crop-hf evaluate-ner --model my-model --sources "conll5:de?data_dir=/data/conll2003-de" disk:out/crop/dataset \\
        --output_dir scores/my-model

``--output_dir`` takes a folder, as in every other command, and writes ner_scores.json and
ner_scores.txt there; ``--output FILE``, which wrote the JSON to a file, still works, with a
deprecation line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from crop_hf.arguments import say_deprecated
from crop_hf.errors import check_output_path
from crop_hf.labels import parse_label_map
from crop_hf.ner.evaluate import evaluate_pretrained, format_ner_table


@dataclass
class EvaluateNerConfig:
    """Options of ``crop-hf evaluate-ner``."""

    model: str = field(metadata={"help": "Folder or Hub id of a token-classification model."})
    sources: list[str] = field(
        metadata={"help": "Source specs to score, one column each: conll5:es, xtreme40:de, "
                          "'conll5:de?data_dir=/data/conll2003-de', hub:NAME:CONFIG, disk:PATH (see crop_hf.data.sources)."})
    split: str = field(default="test", metadata={"help": "Split to score (only its files are read)."})
    batch_size: int = field(default=64, metadata={"help": "Sentences per forward pass."})
    max_length: int = field(default=256, metadata={"help": "Subword limit per sentence."})
    max_samples: int | None = field(default=None, metadata={"help": "Score only the first N sentences of each language."})
    label_map: list[str] | None = field(
        default=None, metadata={"help": "Entity type renames applied to the references, as OLD=NEW (e.g. GPE_LOC=LOC)."})
    average_exclude: list[str] | None = field(default=None, metadata={"help": "Languages left out of the 'avg' column."})
    drop_unknown_types: bool = field(
        default=False, metadata={"help": "Score reference types the model lacks as O instead of stopping with an error."})
    per_type: bool = field(default=True, metadata={"help": "Include per-entity-type F1 rows in the table."})
    output_dir: str | None = field(default=None, metadata={
        "help": "Also write the scores to this folder: ner_scores.json (every number) and ner_scores.txt (the "
                "table)."})
    output: str | None = field(default=None, metadata={
        "help": "Deprecated: write the scores as JSON to this file (--output_dir DIR writes DIR/ner_scores.json)."})
    show_progress: bool = field(default=True, metadata={"help": "Show progress bars on the main process "
                                                                 "(--no_show_progress hides every bar)."})


CONFIG_CLASSES = (EvaluateNerConfig,)


#: What ``--output_dir`` holds after a run: the scores as JSON, and the table as printed.
SCORES_JSON, SCORES_TABLE = "ner_scores.json", "ner_scores.txt"


def run(config: EvaluateNerConfig) -> int:
    import json
    from pathlib import Path

    if config.output_dir:  # a folder the scores can go to, before the work, not only after
        check_output_path(config.output_dir, "--output_dir")
    if config.output:  # its folder exists before the work, not only after
        check_output_path(config.output, "--output", file=True)
        say_deprecated(f"crop-hf evaluate-ner: --output FILE is deprecated; --output_dir DIR writes DIR/{SCORES_JSON} "
                       "(a folder, as every command's --output_dir): --output will stop working in a later release")
    evaluation = evaluate_pretrained(
        config.model, config.sources, split=config.split, batch_size=config.batch_size,
        max_length=config.max_length, max_samples=config.max_samples, label_map=parse_label_map(config.label_map),
        average_exclude=config.average_exclude or (), drop_unknown_types=config.drop_unknown_types,
        show_progress=config.show_progress)
    table = format_ner_table(evaluation, per_type=config.per_type)
    print(table)
    scores = json.dumps({"model": config.model, **evaluation.to_dict(), "flat": evaluation.flat()}, indent=2) + "\n"
    if config.output_dir:
        folder = Path(config.output_dir)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / SCORES_JSON).write_text(scores, encoding="utf-8")
        (folder / SCORES_TABLE).write_text(table + "\n", encoding="utf-8")
        print(f"written to {folder}")
    if config.output:
        Path(config.output).write_text(scores, encoding="utf-8")
    return 0
