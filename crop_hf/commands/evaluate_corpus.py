"""``crop-hf evaluate-corpus``: a corpus's labels scored against gold labels of the same sentences, without a model.

    crop-hf evaluate-corpus out/crop --gold "conll5:es?data_dir=data/conll2002" --split train \\
        --output_dir out/crop/gold-check
    # a self-training corpus, per label rule; a Hub corpus, its German sentences only
    crop-hf evaluate-corpus out/self-train --gold "conll5:es?data_dir=data/conll2002"
    crop-hf evaluate-corpus user/crop-corpus --gold "xtreme40:de?data_dir=data/panx" --lang de

CORPUS (or ``--corpus``) is a ``crop-hf synthesize`` output folder (its ``dataset/`` and
``discarded/``), a ``crop-hf self-train`` output folder or its ``corpus/``, a ``save_to_disk``
folder, a Hub id or a source spec, with ``tokens`` and ``ner_tags``. Each of its sentences is
matched to the ``--gold`` sentence of the same text (tokens joined by spaces; a sentence tokenized
otherwise is matched on its characters and the gold tags carried onto its tokens). The report
gives entity P/R/F1 per type (seqeval, IOB2) of the kept sentences, of each ``label_rule`` of a
self-training corpus and of each drop reason of the discarded sentences that carry labels
(``projected_tags``); the share of the gold split's entities the kept sentences cover and label
right; an error table (wrong type, wrong boundary, missed, spurious) with the most frequent
examples. With ``--output_dir`` it is written there as ``corpus_eval.txt`` and ``corpus_eval.json``.

Entity types that only one side has are named and read as ``O`` (``--label_map`` renames them);
a gold split that shares no sentence with the corpus is an error saying how many were tried.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from crop_hf.console import setup_logging
from crop_hf.errors import check_output_path
from crop_hf.labels import parse_label_map
from crop_hf.metrics.corpus import evaluate_corpus, format_corpus_report

#: A bare first argument is the corpus (``crop-hf evaluate-corpus OUT`` = ``--corpus OUT``).
POSITIONAL = "corpus"


@dataclass
class EvaluateCorpusConfig:
    """Options of ``crop-hf evaluate-corpus``."""

    corpus: str = field(metadata={"help": "The corpus to check (may also be given as the first argument): a "
                                          "crop-hf synthesize or self-train output folder, a save_to_disk folder, "
                                          "a Hub id or a source spec, with tokens and ner_tags."})
    gold: str = field(metadata={"help": "Source spec of the gold-labeled sentences of the same language: "
                                        "'conll5:es?data_dir=...', 'xtreme40:de?data_dir=...', hub:NAME:CONFIG, "
                                        "disk:PATH (see crop_hf.data.sources)."})
    split: str = field(default="train", metadata={"help": "Split of --gold to match against."})
    corpus_split: str | None = field(default=None, metadata={
        "help": "Split (or language) of the corpus to check (default: all languages of a corpus keyed by "
                "language, else its train split)."})
    lang: str | None = field(default=None, metadata={
        "help": "Check only the corpus sentences of this language (its lang column; default: the language of "
                "--gold where the corpus holds several)."})
    label_map: list[str] | None = field(default=None, metadata={
        "help": "Entity type renames applied to the corpus and the gold, as OLD=NEW (GPE_LOC=LOC; NEW=O drops "
                "a type)."})
    examples: int = field(default=3, metadata={"help": "Examples shown of each error kind, most frequent first."})
    output_dir: str | None = field(default=None, metadata={"help": "Write corpus_eval.txt and corpus_eval.json "
                                                                    "here."})
    show_progress: bool = field(default=True, metadata={"help": "Show progress bars "
                                                                 "(--no_show_progress hides every bar)."})

    def __post_init__(self) -> None:
        if self.examples < 0:
            raise ValueError(f"--examples must be 0 or more, got {self.examples}")


CONFIG_CLASSES = (EvaluateCorpusConfig,)


def run(config: EvaluateCorpusConfig) -> int:
    import json
    from pathlib import Path

    from crop_hf.engine.shards import atomic_write_bytes

    setup_logging()
    if config.output_dir:  # before the corpora are read
        check_output_path(config.output_dir, "--output_dir")
    evaluation = evaluate_corpus(config.corpus, config.gold, split=config.split, corpus_split=config.corpus_split,
                                 lang=config.lang, label_map=parse_label_map(config.label_map),
                                 examples=config.examples)
    report = format_corpus_report(evaluation)
    print(report)
    if config.output_dir:
        folder = Path(config.output_dir)
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(folder / "corpus_eval.txt", (report + "\n").encode("utf-8"))
        payload = json.dumps(evaluation.to_dict(), indent=2, ensure_ascii=False) + "\n"
        atomic_write_bytes(folder / "corpus_eval.json", payload.encode("utf-8"))
        print(f"written to {folder}")
    return 0
