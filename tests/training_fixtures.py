"""Fixtures of the NER training tests: a small learnable synthetic NER task and a model trained on it.

The task: template sentences in two "languages" (``en`` and ``xx``, with different function
words) whose entities come from disjoint vocabularies per type, some of them two words long.
Held-out sentences combine entities and templates afresh, so a model must have learned which
words are entities of which type (and where multi-word names continue), not memorised sentences.
"""

from __future__ import annotations

import random

import pytest

from crop_hf.labels import CONLL_LABELS

PER = ["anna", "boris", "carla", "dmitri", "elena", "fatima", "goran", "hiroshi", "ingrid", "jamal"]
SURNAMES = ["smith", "novak", "garcia", "tanaka"]
LOC = ["paris", "lima", "oslo", "cairo", "quito", "dublin", "madrid", "nairobi", "kyoto", "tromso"]
ORG = ["volvo", "acme", "siemens", "nokia", "unicef", "toyota", "ikea", "fifa", "nasa", "lego"]
ENTITIES = {"PER": PER, "LOC": LOC, "ORG": ORG}
TEMPLATES = {
    "en": ["{PER} lives in {LOC} .", "{PER} works for {ORG} in {LOC} .", "yesterday {ORG} hired {PER} .",
           "the office of {ORG} is near {LOC} .", "{PER} met {PER} at {ORG} .", "nothing happened today ."],
    "xx": ["{PER} bor i {LOC} .", "{PER} jobber for {ORG} i {LOC} .", "i gar ansatte {ORG} {PER} .",
           "kontoret til {ORG} ligger ved {LOC} .", "{PER} traff {PER} hos {ORG} .", "ingenting skjedde i dag ."],
}


def synthetic_rows(n: int, seed: int, lang: str = "en") -> list[dict]:
    """``n`` sentences of ``lang`` as ``{"tokens", "tags", "lang"}`` (IOB2 tag strings)."""
    rng = random.Random(f"{seed}-{lang}")
    rows = []
    for _ in range(n):
        tokens, tags = [], []
        for piece in rng.choice(TEMPLATES[lang]).split():
            if piece.startswith("{"):
                entity_type = piece[1:-1]
                words = [rng.choice(ENTITIES[entity_type])]
                if entity_type == "PER" and rng.random() < 0.3:
                    words.append(rng.choice(SURNAMES))
                tokens += words
                tags += [f"B-{entity_type}"] + [f"I-{entity_type}"] * (len(words) - 1)
            else:
                tokens.append(piece)
                tags.append("O")
        rows.append({"tokens": tokens, "tags": tags, "lang": lang})
    return rows


def as_dataset(rows: list[dict], label_names=tuple(CONLL_LABELS), class_label: bool = True):
    """A ``datasets.Dataset`` with ``tokens``, ``ner_tags`` (ClassLabel ids, or strings) and ``lang``."""
    import datasets

    if class_label:
        features = datasets.Features({
            "tokens": datasets.List(datasets.Value("string")),
            "ner_tags": datasets.List(datasets.ClassLabel(names=list(label_names))),
            "lang": datasets.Value("string"),
        })
        index = {name: i for i, name in enumerate(label_names)}
        data = [{"tokens": r["tokens"], "ner_tags": [index[t] for t in r["tags"]], "lang": r["lang"]} for r in rows]
        return datasets.Dataset.from_list(data, features=features)
    return datasets.Dataset.from_list([{"tokens": r["tokens"], "ner_tags": r["tags"], "lang": r["lang"]} for r in rows])


def task_corpus(lang: str, seed: int = 0, train: int = 150, held_out: int = 60, class_label: bool = True):
    """A ``DatasetDict`` (train / validation / test) of the synthetic task in ``lang``."""
    import datasets

    return datasets.DatasetDict({
        "train": as_dataset(synthetic_rows(train, seed, lang), class_label=class_label),
        "validation": as_dataset(synthetic_rows(held_out, seed + 1, lang), class_label=class_label),
        "test": as_dataset(synthetic_rows(held_out, seed + 2, lang), class_label=class_label),
    })


def all_sentences() -> list[str]:
    """Text the tiny tokenizer is trained on: every template filled with every entity word."""
    lines = []
    for lang, templates in TEMPLATES.items():
        lines += [" ".join(r["tokens"]) for r in synthetic_rows(200, 99, lang)]
        lines += templates
    # Each first name, place and organisation on lines of its own, so SentencePiece keeps them whole
    # and a tiny model learns the task in seconds; surnames stay split into several subwords, so
    # labels still have to be read at first subwords.
    lines += [f"{word} {word}" for word in PER + LOC + ORG for _ in range(10)]
    return lines


def reset_accelerate() -> None:
    """Forget Accelerate's process-wide state, so the next Accelerator may choose other settings."""
    from accelerate.state import AcceleratorState, GradientState

    AcceleratorState._reset_state(True)
    GradientState._reset_state()


@pytest.fixture(autouse=True)
def fresh_accelerate_state():
    """A fresh Accelerate state around each test (torch already runs one thread: see conftest)."""
    reset_accelerate()
    yield
    reset_accelerate()


@pytest.fixture(scope="session")
def task_model_dir(tmp_path_factory):
    """A tiny random XLM-R whose tokenizer knows the synthetic task's words (CoNLL labels)."""
    from crop_hf.demo_models import build_tiny_xlmr_ner

    return build_tiny_xlmr_ner(tmp_path_factory.mktemp("task-xlmr"), corpus=all_sentences())


@pytest.fixture(scope="session")
def task_corpora(tmp_path_factory):
    """``{"en": folder, "xx": folder}``: the synthetic task per language, saved with ``save_to_disk``."""
    root = tmp_path_factory.mktemp("task-corpora")
    out = {}
    for i, lang in enumerate(("en", "xx")):
        path = root / lang
        task_corpus(lang, seed=10 * i).save_to_disk(str(path))
        out[lang] = path
    return out


def learning_arguments(model_dir, corpora, output_dir, **training):
    """The arguments of the learning check, as examples/train_ner.py would parse them."""
    from crop_hf.ner import parse_arguments

    argv = ["--model_name_or_path", str(model_dir),
            "--train_sources", f"disk:{corpora['en']}", f"disk:{corpora['xx']}",
            "--train_weights", "1", "0.5",
            "--eval_sources", f"disk:{corpora['en']}", f"disk:{corpora['xx']}",
            "--output_dir", str(output_dir), "--per_device_train_batch_size", "16", "--learning_rate", "5e-3",
            "--num_train_epochs", "6", "--seed", "0", "--no_show_progress"]
    for key, value in training.items():
        argv += [f"--{key}", str(value)]
    return parse_arguments(argv)


@pytest.fixture(scope="session")
def learned(task_model_dir, task_corpora, tmp_path_factory):
    """The tiny model trained on the synthetic task through ``train_ner`` (the example script's path)."""

    from crop_hf.ner import train_ner

    reset_accelerate()
    try:
        result = train_ner(*learning_arguments(task_model_dir, task_corpora, tmp_path_factory.mktemp("learned")))
    finally:
        reset_accelerate()
    return result
