"""``crop-hf evaluate-ner``: per-language entity F1 of any token-classification model.

    crop-hf evaluate-ner --model xlmr-base-conll5-en --dataset conll5 --configs es,nl,no --split test
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="folder or Hub id of a token-classification model")
    parser.add_argument("--dataset", help="crop-hf builder or Hub dataset evaluated with each of --configs "
                                          "(e.g. conll5, xtreme40)")
    parser.add_argument("--configs", default="", help="comma-separated configs (languages) of --dataset, "
                                                       "e.g. es,nl,de,no")
    parser.add_argument("--dataset_arg", action="append", default=[], metavar="KEY=VALUE",
                        help="keyword argument for the dataset loader, e.g. data_dir=/data/conll (repeatable)")
    parser.add_argument("--sources", nargs="*", default=[], metavar="SPEC",
                        help="further source specs (conll5:es, hub:NAME:CONFIG, disk:PATH, a saved folder)")
    parser.add_argument("--split", default="test", help="split to score (default: test)")
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--max_length", type=int, default=256, help="subword limit per sentence")
    parser.add_argument("--max_samples", type=int, default=None, help="first N sentences of each language only")
    parser.add_argument("--label_map", nargs="*", default=None, metavar="OLD=NEW",
                        help="entity type renames applied to the references (e.g. GPE_LOC=LOC)")
    parser.add_argument("--average_exclude", default="", help="comma-separated languages left out of 'avg'")
    parser.add_argument("--drop_unknown_types", action="store_true",
                        help="score reference types the model lacks as O instead of stopping with an error")
    parser.add_argument("--no_per_type", action="store_true", help="leave the per-type rows out of the table")
    parser.add_argument("--output", help="also write the scores as JSON to this file")


def run(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from crop_hf.evaluation import evaluate_pretrained, format_table
    from crop_hf.labels import parse_label_map

    query = "&".join(args.dataset_arg)
    specs = [f"{args.dataset}:{config}" + (f"?{query}" if query else "")
             for config in filter(None, (c.strip() for c in args.configs.split(",")))] if args.dataset else []
    if args.dataset and not specs:
        specs = [args.dataset + (f"?{query}" if query else "")]
    specs += args.sources
    if not specs:
        raise SystemExit("crop-hf evaluate-ner: name what to evaluate on with --dataset/--configs or --sources")
    evaluation = evaluate_pretrained(
        args.model, specs, split=args.split, batch_size=args.batch_size, max_length=args.max_length,
        max_samples=args.max_samples, label_map=parse_label_map(args.label_map),
        average_exclude=[c for c in args.average_exclude.split(",") if c],
        drop_unknown_types=args.drop_unknown_types)
    print(format_table(evaluation, per_type=not args.no_per_type))
    if args.output:
        payload = {"model": args.model, **evaluation.to_dict(), "flat": evaluation.flat()}
        Path(args.output).write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0
