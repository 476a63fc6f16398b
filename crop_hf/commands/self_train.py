"""``crop-hf self-train``: re-label the sentences synthesis discarded with a self-trained multilingual model.

    crop-hf self-train --kept out/crop/dataset --discarded out/crop/discarded --source_corpus conll5:en \\
        --model_name_or_path FacebookAI/xlm-roberta-base --source_model xlmr-base-conll5-en \\
        --output_dir self-trained
"""

from __future__ import annotations

from dataclasses import dataclass, field

from crop_hf.console import setup_logging
from crop_hf.ner.arguments import DataArguments, ModelArguments, NerTrainingArguments, parse_arguments
from crop_hf.self_training import COMBINATION_RULES, self_train

#: What each label_rule of the new corpus means, printed beside its count.
RULE_MEANINGS = {
    "synthesis": "kept by synthesis, labels unchanged",
    "agree": "re-labeled: both models gave the same entities",
    "multilingual": "re-labeled: the self-trained multilingual model's entities",
    "source": "re-labeled: the source model's entities (the multilingual model found a subset)",
    "union": "re-labeled: multilingual entities plus source entities overlapping none of them",
    "intersection": "re-labeled: only entities both models predicted identically",
}


@dataclass
class SelfTrainConfig:
    """Options of ``crop-hf self-train`` (see crop_hf.self_training for the rules)."""

    kept: str = field(metadata={"help": "Kept synthesized corpus: a save_to_disk folder (synthesis's dataset/) or a "
                                        "source spec."})
    discarded: str = field(metadata={"help": "Discarded sentences (tokens, lang, optional projected_tags): "
                                             "synthesis's discarded/ folder or a source spec."})
    output_dir: str = field(metadata={"help": "Multilingual model here, new corpus in OUTPUT_DIR/corpus."})
    source_corpus: str | None = field(
        default=None, metadata={"help": "Labeled source corpus trained on with the kept one, e.g. conll5:en."})
    source_model: str | None = field(
        default=None, metadata={"help": "Source NER model that tags discarded sentences without projected_tags."})
    multilingual_model: str | None = field(
        default=None, metadata={"help": "An already self-trained model: skip training."})
    model_name_or_path: str = field(
        default="FacebookAI/xlm-roberta-base", metadata={"help": "Model the multilingual model is fine-tuned from."})
    corpus_dir: str | None = field(default=None, metadata={"help": "Where to save the new corpus instead."})
    rule: str = field(default="union", metadata={"help": "How the source and multilingual labels are combined: "
                                                         "union, intersection or multilingual."})
    keep_all_o: bool = field(default=False, metadata={"help": "Keep re-labeled sentences without entities."})
    train_config: str | None = field(
        default=None, metadata={"help": "JSON/YAML of training arguments (as crop-hf train-ner reads them)."})
    num_train_epochs: float | None = field(default=None, metadata={"help": "Overrides the training arguments."})
    max_train_steps: int | None = field(default=None, metadata={"help": "Overrides the training arguments."})
    learning_rate: float | None = field(default=None, metadata={"help": "Overrides the training arguments."})
    per_device_train_batch_size: int | None = field(default=None, metadata={"help": "Overrides the training arguments."})
    seed: int | None = field(default=None, metadata={"help": "Overrides the training arguments."})
    show_progress: bool = field(default=True, metadata={"help": "Show progress bars on the main process "
                                                                 "(--no_show_progress hides every bar)."})


CONFIG_CLASSES = (SelfTrainConfig,)


def run(config: SelfTrainConfig) -> int:
    import logging
    from dataclasses import replace

    if config.rule not in COMBINATION_RULES:
        raise ValueError(f"rule must be one of {', '.join(COMBINATION_RULES)}, got {config.rule!r}")

    setup_logging(logging.INFO)
    if config.train_config:
        model_args, data_args, training_args = parse_arguments(
            [config.train_config, "--output_dir", config.output_dir, "--model_name_or_path", config.model_name_or_path])
    else:
        model_args = ModelArguments(model_name_or_path=config.model_name_or_path)
        data_args = DataArguments(eval_split=None, test_split=None)
        training_args = NerTrainingArguments(output_dir=config.output_dir)
    overrides = {name: getattr(config, name) for name in ("num_train_epochs", "max_train_steps", "learning_rate",
                                                          "per_device_train_batch_size", "seed")
                 if getattr(config, name) is not None}
    training_args = replace(training_args, show_progress=config.show_progress, **overrides)
    result = self_train(config.kept, config.discarded, source_corpus=config.source_corpus, model_args=model_args,
                        training_args=training_args, data_args=data_args,
                        multilingual_model=config.multilingual_model, source_model=config.source_model,
                        rule=config.rule, keep_all_o=config.keep_all_o, corpus_dir=config.corpus_dir,
                        show_progress=config.show_progress)
    total = sum(result.rule_counts.values())
    print(f"corpus: {total} sentences in {result.corpus_dir}")
    print("label_rule of each sentence:")
    for name, count in sorted(result.rule_counts.items()):
        print(f"  {name:<13} {count:>7}  {RULE_MEANINGS.get(name, '')}")
    for reason, count in sorted(result.dropped.items()):
        print(f"  dropped ({reason}): {count}")
    return 0
