"""``crop-hf report``: plots and an HTML page of a synthesized corpus, linked from its dataset card.

Examples::

    crop-hf report out/crop
    crop-hf report out/crop --gold "xtreme40:{lang}?data_dir=/data/panx" --gold_split train

OUTPUT_DIR (or ``--output_dir``) is a finished ``crop-hf synthesize`` output. The files go to
OUTPUT_DIR/report: funnel.png, labels.png, lengths.png, statuses.png, gold.png (with --gold),
report.json and index.html (self-contained; open it in a browser); the dataset card
(OUTPUT_DIR/README.md) gets a "Plots" section linking the PNGs.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from crop_hf.console import setup_logging
from crop_hf.labels import parse_label_map
from crop_hf.report import write_report
from crop_hf.report.page import summary

#: A bare first argument is the output folder (``crop-hf report OUT`` = ``--output_dir OUT``).
POSITIONAL = "output_dir"


@dataclass
class ReportConfig:
    """What ``crop-hf report`` reads and where it writes."""

    output_dir: str = field(metadata={"help": "A finished crop-hf synthesize output folder (may also be given "
                                              "as the first argument)."})
    gold: str | None = field(
        default=None,
        metadata={"help": "Gold target labels, to score projection P/R/F1 per language and type: a corpus spec with "
                  "'{lang}' (e.g. 'xtreme40:{lang}?data_dir=/data/panx', 'conll5:{lang}'), or one keyed by language "
                  "(a saved DatasetDict whose splits are languages, or rows with a 'lang' column). Rows need tokens "
                  "and ner_tags; they are matched to the run's sentences by text."},
    )
    gold_split: str | None = field(default=None, metadata={"help": "Split of the gold corpus (default: all splits)."})
    gold_label_map: list[str] = field(
        default_factory=list, metadata={"help": "Gold type renames OLD=NEW (e.g. GPE_LOC=LOC; NEW=O drops a type)."})
    report_dir: str | None = field(default=None, metadata={"help": "Where to write (default: OUTPUT_DIR/report)."})
    update_card: bool = field(default=True, metadata={"help": "Link the plots from OUTPUT_DIR/README.md."})


CONFIG_CLASSES = (ReportConfig,)


def run(config: ReportConfig) -> int:
    setup_logging(logging.INFO)
    files = write_report(config.output_dir, gold=config.gold, gold_split=config.gold_split,
                         gold_label_map=parse_label_map(config.gold_label_map), report_dir=config.report_dir,
                         update_card_file=config.update_card)
    data = files.data
    print(f"{len(data.languages)} language(s), {data.total_kept:,} of {data.total_input:,} sentences kept")
    message = summary(data)
    if message:
        print(message)
    for lang in data.languages:
        if lang.gold is not None:
            print(f"{lang.lang}: projection P {100 * lang.gold['precision']:.1f} R {100 * lang.gold['recall']:.1f} "
                  f"F1 {100 * lang.gold['f1']:.1f} over {lang.gold['kept']} kept of {lang.gold['matched']} matched")
    for kind, path in files.written():  # every file, funnel.png and report.json included
        print(f"{kind}: {path}")
    if files.card is not None:
        print(f"card: {files.card} (links the plots)")
    return 0
