"""``crop-hf self-train``: re-label the sentences synthesis discarded with a self-trained multilingual model.

    crop-hf self-train --kept synth/kept --discarded synth/discarded --source_corpus conll5:en \
        --model_name_or_path FacebookAI/xlm-roberta-base --source_model xlmr-base-conll5-en \
        --output_dir self-trained
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kept", required=True, help="kept synthesized corpus (save_to_disk folder or source spec)")
    parser.add_argument("--discarded", required=True,
                        help="discarded sentences (tokens, lang, optional projected_tags; folder or source spec)")
    parser.add_argument("--source_corpus", help="labeled source corpus trained on with the kept one, e.g. conll5:en")
    parser.add_argument("--source_model", help="source NER model that tags discarded sentences without projected_tags")
    parser.add_argument("--multilingual_model", help="an already self-trained model: skip training")
    parser.add_argument("--model_name_or_path", default="FacebookAI/xlm-roberta-base",
                        help="model the multilingual model is fine-tuned from")
    parser.add_argument("--output_dir", required=True, help="multilingual model here, new corpus in OUTPUT_DIR/corpus")
    parser.add_argument("--corpus_dir", help="where to save the new corpus instead")
    parser.add_argument("--rule", choices=("union", "intersection", "multilingual"), default="union",
                        help="how the source and multilingual labels are combined (see crop_hf.self_training)")
    parser.add_argument("--keep_all_o", action="store_true", help="keep re-labeled sentences without entities")
    parser.add_argument("--train_config", help="JSON/YAML of training arguments (as examples/train_ner.py reads)")
    parser.add_argument("--num_train_epochs", type=float, default=None)
    parser.add_argument("--max_train_steps", type=int, default=None)
    parser.add_argument("--learning_rate", type=float, default=None)
    parser.add_argument("--per_device_train_batch_size", type=int, default=None)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--no_progress", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    import logging
    from dataclasses import replace

    from crop_hf.self_training import self_train
    from crop_hf.training import DataArguments, ModelArguments, NerTrainingArguments, parse_arguments

    logging.basicConfig(format="%(levelname)s %(name)s: %(message)s", level=logging.INFO)
    if args.train_config:
        model_args, data_args, training_args = parse_arguments(
            [args.train_config, "--output_dir", args.output_dir, "--model_name_or_path", args.model_name_or_path])
    else:
        model_args = ModelArguments(model_name_or_path=args.model_name_or_path)
        data_args = DataArguments(eval_split=None, test_split=None)
        training_args = NerTrainingArguments(output_dir=args.output_dir)
    overrides = {name: getattr(args, name) for name in ("num_train_epochs", "max_train_steps", "learning_rate",
                                                        "per_device_train_batch_size", "seed")
                 if getattr(args, name) is not None}
    training_args = replace(training_args, show_progress=not args.no_progress, **overrides)
    result = self_train(args.kept, args.discarded, source_corpus=args.source_corpus, model_args=model_args,
                        training_args=training_args, data_args=data_args,
                        multilingual_model=args.multilingual_model, source_model=args.source_model, rule=args.rule,
                        keep_all_o=args.keep_all_o, corpus_dir=args.corpus_dir,
                        show_progress=not args.no_progress)
    total = sum(result.rule_counts.values())
    print(f"corpus: {total} sentences in {result.corpus_dir}")
    for name, count in sorted(result.rule_counts.items()):
        print(f"  {name:<13} {count}")
    for reason, count in sorted(result.dropped.items()):
        print(f"  dropped ({reason}): {count}")
    return 0
