"""The whole CroP loop judged by what it is for: a NER model in a new language trained on crop-hf's corpus.

    python benchmarks/bench_crop_end_to_end.py --mt_model bench-marker-mt-bi/content      # German, the README figure
    python benchmarks/bench_crop_end_to_end.py --mt_model bench-marker-mt-bi/content --split validation  # choose
    python benchmarks/bench_crop_end_to_end.py --lang es --split validation --rows a b b_prime c  # Spanish: choose
    python benchmarks/bench_crop_end_to_end.py --lang es --b_prime "lexical?ignore_case=true"     # Spanish table
    python benchmarks/bench_crop_end_to_end.py --mt_minutes 20 --steps 300 --seeds 0 --raw_sentences 500  # a look

Two settings (``--lang``), data from ``--data_dir`` (``../shared/data`` by default):

* ``de`` (German, the default): labeled source = WikiANN en train; raw target text = the first
  ``--raw_sentences`` (5,000) WikiANN de train sentences with their labels removed (they come back
  only in the oracle rows); gold = the first ``--test_sentences`` (3,000) of WikiANN de test, and
  Europarl-NER de (799 sentences, out of domain; its MISC is scored as O, the model has no MISC);
  WikiANN en test (first 1,000) shows what the source language keeps. Labels PER ORG LOC.
  Translator: the tiny M2M100 that ``bench_marker_mt.py --both_directions --recipes content`` trains
  on Multi30k (``--mt_model`` reuses a saved one; without it this script trains one for
  ``--mt_minutes``).
* ``es`` (Spanish, CroP's CoNLL setting): labeled source = CoNLL-2003 English train (IOB1, read as
  such); raw target text = CoNLL-2002 Spanish train (all 8,323 sentences unless ``--raw_sentences``),
  labels removed; gold = CoNLL-2002 Spanish testb (``--split test``; testa with ``--split
  validation``, where every choice is made), and CoNLL-2003 English testb (first 1,000) for the
  source language. Labels PER ORG LOC MISC. Translator: Apertium (``spa-eng``, ``eng-spa``;
  ``apt-get install apertium apertium-eng-spa``), the default ``--mt_model`` here. eflomal's hybrid
  corpus (c) aligns the raw sentences with news-parallel's es-en pairs as extra text
  (``--eflomal_extra``).

The NER models are one tiny from-scratch XLM-R (``--layers`` 2, ``--hidden_size`` 128, a SentencePiece
model of ``--vocab_size`` 4,000 pieces over the source + target train text), built once, and every
row trains it for the same ``--steps`` with the same ``--seeds``: only the training data differ.

The loop runs through the public functions the commands call (``crop-hf synthesize``:
:func:`crop_hf.synthesis.synthesize`; ``train-ner``: :func:`crop_hf.ner.train.train_ner`;
``self-train``: :func:`crop_hf.self_training.self_train`; ``evaluate-ner``:
:func:`crop_hf.ner.evaluate.evaluate_pretrained`). Rows (each the English training data plus):

* ``a`` English only (zero-shot); its seed-0 model is the English tagger synthesis uses;
* ``b`` the CroP corpus, lexical projection (the paper's route: translate into English, tag,
  translate back with markers, match the marked entities in the raw sentence);
* ``b_prime`` the CroP corpus with the projection setting ``--b_prime`` (default ``lexical?ignore_case=true``;
  the one the validation split prefers, see the benchmark's page);
* ``c`` the corpus of ``hybrid`` projection with eflomal (no back-translation and no pretrained
  model: the raw sentence's words are linked to the English translation's, the shard aligned as one
  corpus); ``c_alignment`` the same links with CSTOP's alignment rule alone; ``c_rerank`` hybrid's
  spans re-ranked by the translation model (``hybrid_rerank``; German only);
* ``d`` the corpus of ``--method insertion``: the raw sentence stays as it is and the marker-trained
  translation model places the English tagger's entities into it (no back-translation; German only);
* ``e`` self-training on top of ``--best_corpus`` (CroP's step iii: that row's model re-labels the
  sentences synthesis discarded, combined by ``--self_train_rule`` with the labels projection gave
  them, or the English tagger's where it gave none);
* ``f`` translate-train: the English training sentences translated with markers (German: the first
  ``--raw_sentences``; Spanish: all 14,041 of CoNLL-2003 train);
* ``f_b`` translate-train and the ``--best_corpus`` corpus together;
* ``g`` gold training data of the target language alone (the ceiling);
* ``oracle_kept``: the raw sentences the best corpus kept, with their *gold* labels (what selection
  costs, against ``oracle_all``; what label noise costs, against that corpus's row);
* ``oracle_all``: every raw sentence with its gold labels (what the whole raw text could give).

Also printed: each corpus's synthesis funnel (kept, each drop reason) and the CPU time of each stage.

German settings: ``--best_corpus b`` was chosen on WikiANN de validation (b 22.9 ± 0.2, c 17.7 ±
0.2, English only 20.1 ± 0.4); the 2,000 steps, AdamW 5e-4, batch 32, beam 4 with 2 hypotheses and
self-training's ``union`` were fixed before any row was scored. WikiANN de test chose nothing.
Spanish settings: the same training settings; ``--b_prime`` and ``--best_corpus`` chosen on
CoNLL-2002 testa (the benchmark's page has the validation table). testb chose nothing.

Results, settings and history: docs/benchmarks/bench-crop-end-to-end.md.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path

ROWS = ("a", "b", "b_prime", "c", "c_alignment", "c_rerank", "d", "e", "f", "f_b", "g", "oracle_kept", "oracle_all")
#: rows whose projection is scored by the translation model: not with a text engine (Apertium has no scores)
SCORED_ROWS = ("c_rerank", "d")
HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Setting:
    """One language's data: where each part comes from, the label set and the sets scored."""

    lang: str
    name: str  # the language's name in row titles
    types: tuple[str, ...]
    rows: tuple[str, ...]  # the rows run by default
    default_mt_model: str | None
    default_raw_sentences: int | None  # None: every sentence
    default_test_sentences: int | None


SETTINGS = {
    "de": Setting("de", "German", ("PER", "ORG", "LOC"),
                  ("a", "b", "c", "c_alignment", "e", "f", "g", "oracle_kept", "oracle_all"), None, 5000, 3000),
    # rows c_rerank and d (model-scored projection) run when asked: --rows ... c_rerank d
    "es": Setting("es", "Spanish", ("PER", "ORG", "LOC", "MISC"),
                  ("a", "b", "b_prime", "c", "e", "f", "f_b", "g", "oracle_kept", "oracle_all"), "apertium", None,
                  None),
}


def row_names(setting: Setting, b_prime: str = "") -> dict[str, str]:
    return {
        "a": "English only (zero-shot)",
        "b": "+ CroP corpus, lexical",
        "b_prime": f"+ CroP corpus, {b_prime}",
        "c": "+ corpus, hybrid (eflomal)",
        "c_alignment": "+ corpus, alignment (eflomal)",
        "c_rerank": "+ corpus, hybrid_rerank (eflomal)",
        "d": "+ corpus, insertion (marker model)",
        "e": "+ self-training on the best",
        "f": "+ translate-train",
        "f_b": "+ translate-train + the best corpus",
        "g": f"{setting.name} gold only",
        "oracle_kept": "+ kept raw, gold labels",
        "oracle_all": "+ all raw, gold labels",
    }


ROW_NAMES = row_names(SETTINGS["de"], "lexical?ignore_case=true")
TYPES = SETTINGS["de"].types


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lang", choices=sorted(SETTINGS), default="de", help="the target language's setting")
    parser.add_argument("--data_dir", default=str(HERE.parents[1] / "shared/data"))
    parser.add_argument("--work_dir", default=None, help="default: bench-crop-e2e (de), bench-crop-e2e-es (es)")
    parser.add_argument("--mt_model", default=None,
                        help="de: a marker-trained model both ways en<->de (default: train one); es: apertium")
    parser.add_argument("--mt_minutes", type=float, default=20.0, help="training minutes when no --mt_model is given")
    parser.add_argument("--rows", nargs="+", default=None, choices=ROWS, help="default: every row of the language")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=2000, help="training steps of every NER model")
    parser.add_argument("--learning_rate", type=float, default=5e-4)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--raw_sentences", type=int, default=None,
                        help="first N target train sentences, unlabeled (default: 5,000 de; all 8,323 es)")
    parser.add_argument("--test_sentences", type=int, default=None,
                        help="first N target sentences scored (default: 3,000 de; all es)")
    parser.add_argument("--source_test_sentences", type=int, default=1000,
                        help="first N English test sentences scored (what the source language keeps)")
    parser.add_argument("--translate_train_sentences", type=int, default=None,
                        help="English sentences translate-train translates (default: --raw_sentences de; all es)")
    parser.add_argument("--split", choices=["test", "validation"], default="test",
                        help="target split scored (validation: choosing settings)")
    parser.add_argument("--vocab_size", type=int, default=4000)
    parser.add_argument("--hidden_size", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--num_beams", type=int, default=4)
    parser.add_argument("--num_return_sequences", type=int, default=2)
    parser.add_argument("--b_prime", default="lexical?ignore_case=true",
                        help="the projection method of row b_prime (a method spec; chosen on --split validation)")
    parser.add_argument("--best_corpus", choices=["b", "b_prime", "c", "c_alignment", "c_rerank", "d"], default="b",
                        help="the corpus self-training (e) and f_b build on and whose kept sentences oracle_kept "
                             "takes: the best CroP corpus on the validation split")
    parser.add_argument("--eflomal_extra", default="auto",
                        help="parallel text eflomal aligns with the raw sentences in row c: a news-parallel pair "
                             "prefix such as .../news-parallel/es-en, 'none', or auto (es: news-parallel es-en)")
    parser.add_argument("--self_train_rule", choices=["union", "intersection", "multilingual"], default="union",
                        help="how self-training combines the model's labels with projection's (CroP: union)")
    parser.add_argument("--language_filter", action=argparse.BooleanOptionalAction, default=True,
                        help="synthesis's langid filter of both translations")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    setting = SETTINGS[args.lang]
    args.rows = args.rows or list(setting.rows)
    args.work_dir = args.work_dir or ("bench-crop-e2e" if args.lang == "de" else f"bench-crop-e2e-{args.lang}")
    args.mt_model = args.mt_model or setting.default_mt_model
    if args.raw_sentences is None:
        args.raw_sentences = setting.default_raw_sentences
    if args.test_sentences is None:
        args.test_sentences = setting.default_test_sentences
    if args.translate_train_sentences is None:
        args.translate_train_sentences = args.raw_sentences if args.lang == "de" else None
    return args


class Clock:
    """CPU seconds (this process and its children) and wall seconds per stage."""

    def __init__(self) -> None:
        self.stages: dict[str, tuple[float, float]] = {}

    def run(self, stage: str, call: Callable, *args, **kwargs):
        cpu, wall = _cpu(), time.perf_counter()
        try:
            return call(*args, **kwargs)
        finally:
            before = self.stages.get(stage, (0.0, 0.0))
            self.stages[stage] = (before[0] + _cpu() - cpu, before[1] + time.perf_counter() - wall)


def _cpu() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


# --- data ---------------------------------------------------------------------------------------

def wikiann_spec(data_dir: Path, lang: str) -> str:
    return f"xtreme40:{lang}?data_dir={data_dir / 'wikiann'}"


def conll_spec(data_dir: Path, lang: str) -> str:
    return f"conll5:{lang}?data_dir={data_dir / ('conll2003' if lang == 'en' else 'conll2002')}"


def gold_rows(data_dir: Path, lang: str, split: str, count: int | None = None) -> list[dict]:
    """``{"tokens", "tags"}`` (IOB2 strings) of the first ``count`` sentences of WikiANN ``lang`` ``split``."""
    from crop_hf.data.readers import read_panx

    file = {"train": "train", "validation": "dev", "test": "test"}[split]
    return _first(({"tokens": list(s.tokens), "tags": list(s.tags)}
                   for s in read_panx(data_dir / "wikiann" / lang / file)), count)


def conll_rows(data_dir: Path, lang: str, split: str, count: int | None = None) -> list[dict]:
    """``{"tokens", "tags"}`` (IOB2) of CoNLL-2003 English (IOB1 in its files, read as such) or CoNLL-2002 ``lang``."""
    from crop_hf.data.readers.conll import read_conll

    file = {"train": "train", "validation": "testa", "test": "testb"}[split]
    if lang == "en":
        path, scheme = data_dir / "conll2003" / f"eng.{file}", "IOB1"
    else:
        path, scheme = data_dir / "conll2002" / f"{ {'es': 'esp', 'nl': 'ned'}[lang]}.{file}", "IOB2"
    return _first(({"tokens": list(s.tokens), "tags": list(s.tags)} for s in read_conll(path, scheme=scheme)), count)


def _first(rows, count: int | None) -> list[dict]:
    out = []
    for row in rows:
        if count is not None and len(out) == count:
            break
        out.append(row)
    return out


def source_spec(args, data_dir: Path) -> str:
    """The labeled English training data."""
    return wikiann_spec(data_dir, "en") if args.lang == "de" else conll_spec(data_dir, "en")


def target_gold_spec(args, data_dir: Path) -> str:
    """The target language's gold training data (row g)."""
    return wikiann_spec(data_dir, "de") if args.lang == "de" else conll_spec(data_dir, args.lang)


def labeled_rows(args, data_dir: Path, lang: str, split: str, count: int | None = None) -> list[dict]:
    return gold_rows(data_dir, lang, split, count) if args.lang == "de" else conll_rows(data_dir, lang, split, count)


def label_names(args) -> list[str]:
    from crop_hf.labels import CONLL_LABELS, PANX_LABELS

    return list(PANX_LABELS if args.lang == "de" else CONLL_LABELS)


def test_sets(args, data_dir: Path) -> dict[str, tuple[list[str], str, int | None]]:
    """Name -> (source specs, split, first N) of every set a model is scored on."""
    if args.lang == "de":
        return {
            "wikiann_de": ([wikiann_spec(data_dir, "de")], args.split, args.test_sentences),
            "europarl_de": ([f"europarl_ner:de?data_dir={data_dir / 'europarl-ner'}"], "test", None),
            "wikiann_en": ([wikiann_spec(data_dir, "en")], args.split, args.source_test_sentences),
        }
    return {
        f"conll_{args.lang}": ([conll_spec(data_dir, args.lang)], args.split, args.test_sentences),
        "conll_en": ([conll_spec(data_dir, "en")], args.split, args.source_test_sentences),
    }


def save_corpus(rows: Sequence[dict], path: Path, lang: str = "de", names: Sequence[str] | None = None) -> str:
    """Rows of ``tokens`` and IOB2 ``tags`` as a ``save_to_disk`` corpus (a ``disk:`` source spec)."""
    import datasets

    from crop_hf.data.features import ner_features
    from crop_hf.labels import PANX_LABELS

    names = list(names or PANX_LABELS)
    data = datasets.Dataset.from_dict(
        {"tokens": [r["tokens"] for r in rows], "ner_tags": [[names.index(t) for t in r["tags"]] for r in rows],
         "lang": [lang] * len(rows)}, features=ner_features(names))
    datasets.DatasetDict({"train": data}).save_to_disk(str(path))
    return f"disk:{path}"


def raw_key(tokens: Sequence[str]) -> str:
    return " ".join(tokens)


def slug(text: str) -> str:
    """A method spec as part of a folder name."""
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-")


# --- models -------------------------------------------------------------------------------------

def build_encoder(args, work: Path, data_dir: Path) -> Path:
    from crop_hf.demo_models import build_tiny_xlmr_ner

    path = work / "encoder"
    if not (path / "config.json").exists():
        lines = [raw_key(r["tokens"]) for lang in ("en", args.lang) for r in labeled_rows(args, data_dir, lang, "train")]
        build_tiny_xlmr_ner(path, label_names(args), lines, vocab_size=args.vocab_size, hidden_size=args.hidden_size,
                            layers=args.layers, seed=0)
    return path


def train_model(args, encoder: Path, sources: Sequence[str], out: Path, seed: int) -> Path:
    """``crop-hf train-ner`` with the benchmark's fixed budget (skipped when ``out`` holds a model)."""
    from crop_hf.ner.arguments import DataArguments, ModelArguments, NerTrainingArguments
    from crop_hf.ner.train import train_ner

    if (out / "config.json").exists():
        return out
    train_ner(ModelArguments(model_name_or_path=str(encoder)),
              DataArguments(train_sources=list(sources), eval_split=None, test_split=None),
              NerTrainingArguments(output_dir=str(out), max_train_steps=args.steps, learning_rate=args.learning_rate,
                                   per_device_train_batch_size=args.batch_size, warmup_ratio=0.1, seed=seed,
                                   show_progress=False))
    return out


def scores(args, model: Path, data_dir: Path) -> dict[str, dict]:
    """Overall and per-type F1 (percent) on every set of :func:`test_sets`."""
    from crop_hf.ner.evaluate import evaluate_pretrained

    cache = model / f"bench_scores-{args.split}-{args.test_sentences}.json"  # a model is trained once, scored per split
    if cache.exists():
        return json.loads(cache.read_text())
    out = {}
    for name, (specs, split, count) in test_sets(args, data_dir).items():
        evaluation = evaluate_pretrained(str(model), specs, split=split, max_samples=count, drop_unknown_types=True)
        (lang_scores,) = evaluation.languages.values()
        out[name] = {"f1": 100 * lang_scores.f1,
                     **{t: 100 * lang_scores.per_type.get(t, {}).get("f1", 0.0) for t in SETTINGS[args.lang].types}}
    cache.write_text(json.dumps(out))
    return out


def get_mt_model(args, work: Path) -> str:
    if args.mt_model:
        return args.mt_model
    folder = work / "mt"
    model = folder / "content"
    if not (model / "config.json").exists():
        multi30k = Path(args.data_dir) / "multi30k"  # the translator's data, under --data_dir like the rest
        missing = [name for name in ("train.en.gz", "train.de.gz", "val.en.gz", "val.de.gz")
                   if not (multi30k / name).is_file()]
        if missing:
            raise SystemExit(f"no --mt_model given, and no Multi30k to train one on: {multi30k} lacks "
                             f"{', '.join(missing)} (pass --mt_model, or a --data_dir holding multi30k/)")
        done = subprocess.run([sys.executable, str(HERE / "bench_marker_mt.py"), "--both_directions", "--recipes",
                               "content", "--data_dir", str(multi30k), "--minutes", str(args.mt_minutes),
                               "--eval_minutes", str(args.mt_minutes), "--eval_samples", "200", "--num_beams", "1",
                               "--work_dir", str(folder), "--threads", str(args.threads)])
        if done.returncode:
            raise SystemExit(f"training the translator failed (bench_marker_mt.py exit {done.returncode}; its "
                             f"output above says why): pass a trained --mt_model instead")
    return str(model)


def is_engine(mt_model: str) -> bool:
    from crop_hf.translation.apertium import is_apertium

    return is_apertium(mt_model)


# --- corpora ------------------------------------------------------------------------------------

def synthesize_corpus(args, folder: Path, name: str, mt_model: str, tagger: Path, raw_file: Path, method: str,
                      alignment_model: str | None, aligner=None):
    """``crop-hf synthesize`` of the raw file; ``aligner`` replaces the one synthesis would build (eflomal with
    extra parallel text)."""
    from crop_hf.synthesis import SynthesisConfig, SynthesisModels, synthesize

    engine = is_engine(mt_model)  # Apertium gives one translation: beams do not apply
    config = SynthesisConfig(
        tgt_langs=[args.lang], input=str(raw_file), output_dir=str(folder / name), mt_model=str(mt_model),
        ner_model=str(tagger), method=method, alignment_model=alignment_model, batch_size=32,
        num_beams=1 if engine else args.num_beams, num_return_sequences=1 if engine else args.num_return_sequences,
        max_new_tokens=96, shard_size=args.raw_sentences or 100_000, language_filter=args.language_filter,
        show_progress=False)
    models = None
    if aligner is not None:
        models = SynthesisModels.load(config)
        models.aligner = aligner
    return synthesize(config, models=models)


def eflomal_extra(args, data_dir: Path):
    """An eflomal aligner that also reads parallel text (``--eflomal_extra``), or ``None`` for synthesis's own."""
    spec = args.eflomal_extra
    if spec == "auto":
        spec = "none" if args.lang == "de" else str(data_dir / "news-parallel" / f"{args.lang}-en")
    if spec == "none":
        return None
    import gzip

    from crop_hf.alignment import EflomalAligner
    from crop_hf.projection import tokenize_target

    def read(lang: str) -> list[list[str]]:
        with gzip.open(f"{spec}.{lang}.gz", "rt", encoding="utf-8") as handle:
            return [tokenize_target(line.strip(), lang).tokens for line in handle]

    english, target = read("en"), read(args.lang)
    pairs = [(e, t) for e, t in zip(english, target, strict=True) if e and t]
    return EflomalAligner(extra_corpus=([e for e, _ in pairs], [t for _, t in pairs]))


def load_translator(mt_model: str):
    """The ``labeled-translation`` pipeline of ``mt_model`` (a model folder, or apertium)."""
    import crop_hf  # noqa: F401 - registers labeled-translation
    from crop_hf.translation.loading import load_translator as load

    return load(mt_model) if is_engine(mt_model) else load(mt_model, batch_size=32)


def translate_train(args, translator, english: Sequence[dict], lang: str = "de") -> tuple[list[dict], int]:
    """The English sentences translated into ``lang`` with markers: ``(rows, sentences with broken markers)``."""
    from crop_hf.labels import spans_to_tags, tags_to_spans
    from crop_hf.projection import tokenize_target
    from crop_hf.projection.methods import word_spans
    from crop_hf.translation.text_engine import TextEngineTranslationPipeline

    inputs = []
    for row in english:  # as text and character spans, the input every labeled translator takes
        starts = list(accumulate((len(token) + 1 for token in row["tokens"]), initial=0))
        inputs.append({"text": " ".join(row["tokens"]),
                       "entities": [{"start": starts[span.start], "end": starts[span.end] - 1, "label": span.label}
                                    for span in tags_to_spans(row["tags"])]})
    generation = {} if isinstance(translator, TextEngineTranslationPipeline) else {
        "num_beams": args.num_beams, "num_return_sequences": args.num_return_sequences, "max_new_tokens": 96}
    outputs = translator(inputs, src_lang="en", tgt_lang=lang, **generation)
    rows, broken = [], 0
    for output in outputs:
        if not output["complete"] or not output["translation"].strip():
            broken += 1
            continue
        sentence = tokenize_target(output["translation"], lang)
        spans = word_spans(sentence, output["entities"])
        rows.append({"tokens": sentence.tokens, "tags": spans_to_tags(spans, len(sentence.tokens))})
    return rows, broken


def kept_gold(kept_dataset, raw_gold: Sequence[dict], lang: str = "de") -> list[dict]:
    """The gold rows of the raw sentences a synthesized corpus kept, matched by their text as synthesis
    tokenized it (of repeated raw sentences, the first)."""
    from crop_hf.projection import tokenize_target

    rows = []
    by_key: dict[str, dict] = {}
    for row in raw_gold:
        by_key.setdefault(raw_key(tokenize_target(raw_key(row["tokens"]), lang).tokens), row)
    for tokens in kept_dataset["tokens"]:
        row = by_key.get(raw_key(tokens))
        if row is not None:
            rows.append(row)
    return rows


# --- report -------------------------------------------------------------------------------------

def spread(values: Sequence[float]) -> float:
    """The sample standard deviation over seeds (0 for one seed)."""
    return statistics.stdev(values) if len(values) > 1 else 0.0


def summarize(values: Sequence[float]) -> str:
    return f"{statistics.fmean(values):5.1f} ± {spread(values):3.1f}"


def print_table(results: dict[str, list[dict]], split: str, args=None) -> None:
    args = args or argparse.Namespace(lang="de", b_prime="", split=split)
    setting = SETTINGS[args.lang]
    names = row_names(setting, args.b_prime)
    sets = list(next(iter(results.values()))[0])
    main, others = sets[0], sets[1:]
    header = (f"{'row':<46} {main + ' ' + split:>20} " + " ".join(f"{t:>5}" for t in setting.types) + " "
              + " ".join(f"{name:>14}" for name in others))
    print(header)
    print("-" * len(header))
    for row, runs in results.items():
        scores_ = summarize([r[main]["f1"] for r in runs])
        types = " ".join(f"{statistics.fmean(r[main][t] for r in runs):5.1f}" for t in setting.types)
        rest = " ".join(f"{summarize([r[name]['f1'] for r in runs]):>14}" for name in others)
        print(f"{row + ' ' + names[row]:<46} {scores_:>20} {types} {rest}")


def funnel_line(name: str, statistics_: dict[str, int]) -> str:
    parts = ", ".join(f"{reason} {count}" for reason, count in sorted(statistics_.items())
                      if reason not in ("input", "kept") and count)
    return f"{name}: {statistics_.get('kept', 0)} kept of {statistics_.get('input', 0)} ({parts})"


# --- the loop -----------------------------------------------------------------------------------

def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    import datasets
    import torch
    import transformers

    torch.set_num_threads(args.threads)
    datasets.disable_progress_bars()
    transformers.logging.disable_progress_bar()
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    data_dir, work = Path(args.data_dir), Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    lang, names = args.lang, label_names(args)
    clock = Clock()
    rows = set(args.rows) | {"a"}  # the English model tags for synthesis
    best = args.best_corpus
    if rows & {"e", "f_b", "oracle_kept"}:
        rows.add(best)
    if "f_b" in rows:
        rows.add("f")

    mt_model = clock.run("translation model", get_mt_model, args, work)
    encoder = clock.run("encoder + SentencePiece", build_encoder, args, work, data_dir)
    english = source_spec(args, data_dir)
    raw_gold = labeled_rows(args, data_dir, lang, "train", args.raw_sentences)
    raw_file = work / "raw" / f"{lang}.txt"
    raw_file.parent.mkdir(exist_ok=True)
    raw_file.write_text("".join(raw_key(r["tokens"]) + "\n" for r in raw_gold), encoding="utf-8")
    if args.raw_sentences is None:
        args.raw_sentences = len(raw_gold)

    # trained models are reused by a rerun with the same training settings (and only then)
    models = work / f"models-{args.steps}steps-lr{args.learning_rate:g}-batch{args.batch_size}"
    results: dict[str, list[dict]] = {}
    funnels: list[str] = []
    kept_share: dict[str, float] = {}

    def train_row(row: str, sources: Sequence[str], model_name: str | None = None) -> list[dict]:
        from crop_hf.data.sources import load_source

        if any(spec.startswith("disk:") and not len(load_source(spec).split("train")) for spec in sources):
            funnels.append(f"{row}: its corpus is empty, the row is not trained")
            return []
        runs = []
        for seed in args.seeds:
            model = clock.run("train-ner", train_model, args, encoder, sources,
                              models / f"{model_name or row}-{seed}", seed)
            runs.append(clock.run("evaluate-ner", scores, args, model, data_dir))
        return runs

    results["a"] = train_row("a", [english])
    tagger = models / f"a-{args.seeds[0]}"
    corpora = {}
    for row, method, aligner in (("b", "lexical", None), ("b_prime", args.b_prime, None), ("c", "hybrid", "eflomal"),
                                 ("c_alignment", "alignment", "eflomal"), ("c_rerank", "hybrid_rerank", "eflomal"),
                                 ("d", "insertion", None)):
        if row not in rows:
            continue
        if row in SCORED_ROWS and is_engine(mt_model):
            funnels.append(f"{row} ({method}): not run, {mt_model} has no scores to place entities with")
            continue
        folder = f"corpus-{row}" if row != "b_prime" else f"corpus-{slug(args.b_prime)}"
        extra = clock.run("eflomal extra text", eflomal_extra, args, data_dir) if row == "c" else None
        result = clock.run(f"synthesize ({method})", synthesize_corpus, args, models, folder, mt_model, tagger,
                           raw_file, method, aligner, extra)
        stats = result.statistics[lang]
        funnels.append(funnel_line(f"{row} ({method})", stats))
        kept_share[row] = stats.get("kept", 0) / max(stats.get("input", 0), 1)
        corpora[row] = result
        model_name = row if row != "b_prime" else f"b_prime-{slug(args.b_prime)}"
        results[row] = train_row(row, [english, f"disk:{result.dataset_path}"], model_name)
    best_name = best if best != "b_prime" else f"b_prime-{slug(args.b_prime)}"
    if "e" in rows:
        from crop_hf.self_training import self_train

        runs = []
        for seed in args.seeds:
            corpus_dir = models / f"self-trained-{best_name}-{args.self_train_rule}-{seed}"
            if not (corpus_dir / "dataset_dict.json").exists():
                clock.run("self-train (re-label)", self_train, str(corpora[best].dataset_path),
                          str(corpora[best].discarded_path), multilingual_model=str(models / f"{best_name}-{seed}"),
                          source_model=str(tagger), rule=args.self_train_rule, corpus_dir=str(corpus_dir))
            model = clock.run("train-ner", train_model, args, encoder, [english, f"disk:{corpus_dir}"],
                              models / f"e-{best_name}-{args.self_train_rule}-{seed}", seed)
            runs.append(clock.run("evaluate-ner", scores, args, model, data_dir))
        results["e"] = runs
        funnels.append(f"e: self-training on {best}'s corpus, rule {args.self_train_rule}")
    translated = None
    if "f" in rows:
        path = work / "translate-train"
        if not (path / "dataset_dict.json").exists():
            english_rows = labeled_rows(args, data_dir, "en", "train", args.translate_train_sentences)
            rows_out, broken = clock.run("translate-train", translate_train, args, load_translator(mt_model),
                                         english_rows, lang)
            save_corpus(rows_out, path, lang, names)
            funnels.append(f"f (translate-train): {len(rows_out)} kept of {len(english_rows)} "
                           f"(markers_incomplete {broken})")
        translated = f"disk:{path}"
        results["f"] = train_row("f", [english, translated])
    if "f_b" in rows:
        results["f_b"] = train_row("f_b", [english, translated, f"disk:{corpora[best].dataset_path}"],
                                   f"f_b-{best_name}")
    if "g" in rows:
        results["g"] = train_row("g", [target_gold_spec(args, data_dir)])
    if "oracle_kept" in rows:
        from datasets import load_from_disk

        kept = load_from_disk(str(corpora[best].dataset_path))[lang]
        oracle = kept_gold(kept, raw_gold, lang)
        funnels.append(f"oracle_kept: {len(oracle)} of {best}'s {len(kept)} kept sentences matched to their gold row")
        suffix = "" if best == "b" else f"-{best_name}"  # the names German runs had before other corpora
        results["oracle_kept"] = train_row("oracle_kept", [english, save_corpus(oracle, work / f"oracle-kept{suffix}",
                                                                              lang, names)], f"oracle_kept{suffix}")
    if "oracle_all" in rows:
        results["oracle_all"] = train_row("oracle_all", [english, save_corpus(raw_gold, work / "oracle-all", lang,
                                                                              names)])

    main_set = next(iter(test_sets(args, data_dir)))
    print(f"\nF1 (%, mean ± standard deviation over seeds {args.seeds}; {args.steps} steps each; "
          f"{main_set} {args.split}: {'first ' + str(args.test_sentences) if args.test_sentences else 'all'}; "
          f"{args.raw_sentences} raw sentences; translator {mt_model})")
    print_table({row: results[row] for row in ROWS if results.get(row)}, args.split, args)
    print("\nfunnels:")
    for line in funnels:
        print("  " + line)
    print("\nCPU / wall seconds per stage:")
    for stage, (cpu, wall) in clock.stages.items():
        print(f"  {stage:<26} {cpu:8.0f} {wall:8.0f}")
    baseline = [r[main_set]["f1"] for r in results["a"]]
    for row in ROWS:
        if results.get(row) and row not in ("a", "g") and not row.startswith("oracle"):
            values = [r[main_set]["f1"] for r in results[row]]
            gain = statistics.fmean(values) - statistics.fmean(baseline)
            larger = max(spread(values), spread(baseline))
            times = f"{gain / larger:.1f}x the larger seed spread" if larger else "one seed: no spread"
            print(f"{row}: {gain:+.1f} F1 over English only ({times})")
    if results.get("g"):
        gap = statistics.fmean(r[main_set]["f1"] for r in results["g"]) - statistics.fmean(baseline)
        print(f"gap between English only and {SETTINGS[lang].name} gold: {gap:.1f} F1 (half: {gap / 2:.1f})")
    for row, share in kept_share.items():
        print(f"{row} keeps {100 * share:.1f}% of the raw sentences")
    (work / f"results-{args.split}.json").write_text(json.dumps(
        {"args": vars(args), "results": results, "funnels": funnels, "stages": clock.stages}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
