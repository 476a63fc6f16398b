"""Synthesis with a marker-trained translation model: CroP's main job on Multi30k German captions.

    python benchmarks/bench_marker_mt.py --both_directions --minutes 20 --work_dir bench-marker-mt-bi
    python benchmarks/synthesize_multi30k.py --mt_model bench-marker-mt-bi/recommended

``crop-hf synthesize`` translates each raw German sentence into English, tags it, translates the
tagged sentence back into German with markers and projects the labels onto the raw sentence. One
translation model does both directions, so it must have been trained on marked pairs both ways
(``bench_marker_mt.py --both_directions``). The same run with the untrained model of the same
shape is the baseline (a public checkpoint behaves alike: markers do not come back).

Measured (2026-12-02, 2 AMD EPYC cores, ``--sentences 500``; the model of ``bench_marker_mt.py
--minutes 20 --recipes content`` then ``--both_directions --minutes 8``): the untrained model keeps
0 of 500 (113 wrong_language_source, 5 pipeline_error, 382 all_o); the trained one keeps 343
(68.6%) with free decoding (100 projection_incomplete, 49 all_o, 6 markers_incomplete, 2 language)
and 344 (68.8%) with constrained decoding. Caption tagger F1 0.993.

Latest (2026-12-06, ``--sentences 300 --methods lexical insertion``, the 30-minute content model of
issue 47): lexical keeps 211 of 300 (70.3%), insertion into the raw sentence 282 (94.0%), from the
same translations.

Results, settings and history: docs/benchmarks/synthesize-multi30k.md
"""

from __future__ import annotations

import argparse
import gzip
import logging
import os
import re
from pathlib import Path

PEOPLE = frozenset(["man", "men", "woman", "women", "boy", "boys", "girl", "girls", "child", "children", "kid", "kids",
                    "person", "people", "guy", "guys", "lady", "ladies", "baby", "toddler", "player", "players",
                    "worker", "workers"])
ANIMALS = frozenset(["dog", "dogs", "cat", "cats", "horse", "horses", "bird", "birds", "cow", "cows", "sheep"])
TAGGER_TYPES = ("PER", "ANIMAL")
TAG_OF = {**dict.fromkeys(PEOPLE, "B-PER"), **dict.fromkeys(ANIMALS, "B-ANIMAL")}


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mt_model", required=True, help="a marker-trained model (both directions en<->de)")
    parser.add_argument("--baseline_model", default=None,
                        help="the untrained model of the same shape (default: MT_MODEL/../tiny-m2m100)")
    parser.add_argument("--data_dir", default=str(Path(__file__).resolve().parents[1].parent / "shared/data/multi30k"))
    parser.add_argument("--work_dir", default="synthesize-multi30k")
    parser.add_argument("--sentences", type=int, default=1000, help="first N Multi30k test (2016 flickr) de sentences")
    parser.add_argument("--tagger_steps", type=int, default=600)
    parser.add_argument("--num_beams", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--methods", nargs="+", default=["lexical"],
                        help="projection methods of the trained model's runs: lexical (CroP: back-translation with "
                             "markers, then matching), insertion (no back-translation: the model places the markers "
                             "in the raw sentence), ... (the untrained baseline runs lexical only)")
    return parser.parse_args(argv)


def _lines(path: Path) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [line.strip() for line in handle]


def caption_tags(tokens: list[str]) -> list[str]:
    """Word-list tags of one tokenized English caption (one-word entities)."""
    return [TAG_OF.get(t.lower(), "O") for t in tokens]


def build_tagger(args, work: Path) -> tuple[Path, float]:
    """Train the caption tagger with crop-hf's NER training; returns its folder and held-out F1."""
    import datasets

    from crop_hf.data.features import ner_features
    from crop_hf.demo_models import build_tiny_xlmr_ner
    from crop_hf.labels import LabelSet
    from crop_hf.ner import parse_arguments, train_ner

    labels = LabelSet.from_types(TAGGER_TYPES)
    splits = {}
    for split, name in (("train", "train"), ("validation", "val")):
        tokens = [re.findall(r"\w+|[^\w\s]", line) for line in _lines(Path(args.data_dir) / f"{name}.en.gz")]
        splits[split] = datasets.Dataset.from_dict(
            {"tokens": tokens, "ner_tags": [labels.encode(caption_tags(t)) for t in tokens]},
            features=ner_features(labels.names, lang=False))
    corpus = [" ".join(t) for t in splits["train"]["tokens"][:20000]]
    path = build_tiny_xlmr_ner(work / "caption-tagger-init", labels, corpus, vocab_size=2000, hidden_size=64)
    model_args, data_args, training_args = parse_arguments([
        "--model_name_or_path", str(path), "--train_sources", "captions", "--eval_sources", "captions",
        "--test_split", "", "--max_eval_samples", "500", "--output_dir", str(work / "caption-tagger"),
        "--learning_rate", "3e-3", "--per_device_train_batch_size", "32", "--max_train_steps", str(args.tagger_steps),
        "--no_show_progress"])
    result = train_ner(model_args, data_args, training_args, datasets={"captions": datasets.DatasetDict(splits)})
    evaluation = result.evaluations[0]
    scores = evaluation.average or next(iter(evaluation.languages.values()))
    return work / "caption-tagger", scores.f1


def main(argv=None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    import torch

    torch.set_num_threads(args.threads)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s: %(message)s")

    from crop_hf.synthesis import SynthesisConfig, synthesize

    work = Path(args.work_dir)
    raw = work / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    (raw / "de.txt").write_text("\n".join(_lines(Path(args.data_dir) / "test_2016_flickr.de.gz")[: args.sentences])
                                + "\n", encoding="utf-8")
    tagger, f1 = build_tagger(args, work)
    print(f"caption tagger: held-out F1 {f1:.3f} (Multi30k val English, word-list labels)\n", flush=True)

    baseline = args.baseline_model or str(Path(args.mt_model).parent / "tiny-m2m100")
    runs = [("untrained", baseline, "lexical", False), ("untrained", baseline, "lexical", True)]
    for method in args.methods:
        # constrained decoding shapes the labeled back-translation, which insertion does not make
        runs += [("trained", args.mt_model, method, constrained) for constrained in (False, True)
                 if not (constrained and method == "insertion")]
    kept_by_run = {}
    for name, model, method, constrained in runs:
        decoding = "constrained" if constrained else "free"
        suffix = "" if method == "lexical" else f"-{method}"  # lexical runs keep their folders of earlier releases
        result = synthesize(SynthesisConfig(
            tgt_langs=["de"], input=str(raw / "{lang}.txt"), output_dir=str(work / f"{name}-{decoding}{suffix}"),
            mt_model=model, ner_model=str(tagger), method=method, num_beams=args.num_beams,
            num_return_sequences=args.num_beams, max_new_tokens=64, constrain_markers=constrained,
            shard_size=250, show_progress=False, report=False))
        stats = result.statistics["de"]
        kept_by_run[f"{name} {method} {decoding}"] = stats.get("kept", 0)
        print(f"== {name} model, {method}, {decoding} decoding: kept {stats.get('kept', 0)} of "
              f"{stats.get('input', 0)} ({stats.get('kept', 0) / max(stats.get('input', 1), 1):.1%}) ==")
        print(result.table(), flush=True)
        if name == "trained" and stats.get("kept"):
            import datasets

            kept = datasets.load_from_disk(str(result.dataset_path))
            if isinstance(kept, datasets.DatasetDict):  # one split per target language
                kept = kept["de"]
            names = kept.features["ner_tags"].feature.names
            for row in kept.select(range(min(3, len(kept)))):
                print("   ", " ".join(t if tag == 0 else f"[{t}|{names[tag]}]"
                                      for t, tag in zip(row["tokens"], row["ner_tags"], strict=True)))
        print()
    print("kept sentences per run (same raw sentences, same first translation):")
    for run, count in kept_by_run.items():
        print(f"  {run:<36} {count:5d} of {args.sentences}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
