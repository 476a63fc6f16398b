"""Where the time of ``crop-hf synthesize`` goes, per stage, with real-size models, for each backend.

The models have the exact architectures of the defaults' families, random weights, built here
(offline): translation = ``facebook/m2m100_418M`` (the configuration in
``benchmarks/bench_backends.py``, its 128,112-token vocabulary included: the tokenizer is a small
trained SentencePiece model whose ``vocab.json`` is padded to M2M100's size, so language ids are the
real ones), tagger = ``FacebookAI/xlm-roberta-base`` (768 hidden, 12 layers, 250,002 tokens) with a
CoNLL token-classification head. The whole synthesis runs (:class:`crop_hf.synthesis.SynthesisJob`:
shards, filters, merge, card) on generated German sentences of fixed length, with every generation
running to ``--max-new-tokens`` (random weights never stop earlier).

    nice -n 10 python benchmarks/bench_synthesis_profile.py          # 8 sentences, 3 runs: minutes
    python benchmarks/bench_synthesis_profile.py --sentences 64 --backends transformers ctranslate2:int8

Latest (2026-12-03, ``--sentences 64``, 2 threads of an Intel Xeon shared with other jobs; the
overhead is the share of the run's wall time outside the three model stages, target at most 15%)::

    stage              transformers         ctranslate2     ctranslate2:int8
    total           112.23 s             82.57 s             33.74 s
    overhead (projection of all 64 sentences, 0.003 s, added): 1.5 %, 2.3 %, 6.7 %

Results, settings and history: docs/benchmarks/bench-synthesis-profile.md
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_backends import M2M100_418M

#: ``FacebookAI/xlm-roberta-base``'s config.json (architecture fields).
XLM_ROBERTA_BASE = {
    "vocab_size": 250002,
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "hidden_act": "gelu",
    "max_position_embeddings": 514,
    "type_vocab_size": 1,
    "layer_norm_eps": 1e-5,
    "pad_token_id": 1,
    "bos_token_id": 0,
    "eos_token_id": 2,
}
STAGES = ("translate", "tag", "back-translate", "project", "filter", "write", "other")
MODEL_STAGES = ("translate", "tag", "back-translate")
WORDS = ["Haus", "Stadt", "Berlin", "Anna", "fährt", "nach", "Hamburg", "und", "trifft", "Peter", "im", "Hafen",
         "der", "Elbe", "am", "Montag", "mit", "Freunden", "aus", "München", "zur", "Arbeit", "bei", "Siemens"]


def build_m2m100_tokenizer(folder: Path, *, marker_pieces: bool = True) -> Path:
    """``facebook/m2m100_418M``'s tokenizer at its real size, written to ``folder`` (a tiny model beside it).

    A small SentencePiece model trained here on :data:`WORDS`, its ``vocab.json`` padded to M2M100's
    128,004 entries, then M2M100's 100 language tokens: 128,104 tokens, language ids the real ones
    (``__en__`` = 128022). ``marker_pieces=False`` leaves the markers out of the SentencePiece model,
    as the real checkpoint's vocabulary does (the pipeline then adds them as special tokens).
    """
    from transformers import M2M100Tokenizer
    from transformers.models.m2m_100.tokenization_m2m_100 import FAIRSEQ_LANGUAGE_CODES

    from crop_hf.demo_models import build_tiny_m2m100

    build_tiny_m2m100(folder, WORDS, marker_pieces=marker_pieces)
    vocab = json.loads((folder / "vocab.json").read_text(encoding="utf-8"))
    # M2M100's vocab.json has 128,004 entries; language ids follow it (__en__ = 128022).
    for i in range(128004 - len(vocab)):
        vocab[f"<unused{i}>"] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    tokenizer = M2M100Tokenizer(str(folder / "vocab.json"), str(folder / "sentencepiece.bpe.model"),
                                additional_special_tokens=[f"__{c}__" for c in FAIRSEQ_LANGUAGE_CODES["m2m100"]])
    assert tokenizer.get_lang_id("en") == 128022
    tokenizer.save_pretrained(folder)
    return folder


def build_ner_model(ner: Path) -> Path:
    """A random-weight XLM-R base NER model (CoNLL labels) with a working tokenizer of its full size, in ``ner``."""
    import torch
    from transformers import XLMRobertaConfig, XLMRobertaForTokenClassification, XLMRobertaTokenizer

    from crop_hf.demo_models import _pieces, _train_sentencepiece
    from crop_hf.labels import CONLL_LABELS

    if (ner / "model.safetensors").is_file():
        return ner
    _, processor = _train_sentencepiece(WORDS * 4 + ["Ich wohne in Göteborg ."], 200)
    pieces = _pieces(processor)
    padding = [(f"<unused{i}>", -100.0) for i in range(XLM_ROBERTA_BASE["vocab_size"] - len(pieces) - 5)]
    specials = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)]
    tokenizer = XLMRobertaTokenizer(vocab=[*specials, *pieces, *padding, ("<mask>", 0.0)])
    assert len(tokenizer) == XLM_ROBERTA_BASE["vocab_size"]
    tokenizer.save_pretrained(ner)
    torch.manual_seed(0)
    names = list(CONLL_LABELS)
    config = XLMRobertaConfig(**XLM_ROBERTA_BASE, id2label=dict(enumerate(names)),
                              label2id={n: i for i, n in enumerate(names)})
    XLMRobertaForTokenClassification(config).save_pretrained(ner)
    return ner


def build_models(folder: Path) -> tuple[Path, Path]:
    """Real-size random M2M100 (418M) and XLM-R base NER model with working tokenizers."""
    import torch
    from transformers import M2M100Config, M2M100ForConditionalGeneration

    mt, ner = folder / "m2m100_418M-random", folder / "xlm-roberta-base-ner-random"
    if not (mt / "model.safetensors").is_file():
        build_m2m100_tokenizer(mt)
        torch.manual_seed(0)
        M2M100ForConditionalGeneration(M2M100Config(**M2M100_418M)).save_pretrained(mt)
    build_ner_model(ner)
    return mt, ner


def profile(args) -> dict:
    """One synthesis run with timers around each stage (runs in its own process)."""
    import torch

    import crop_hf.engine.jobs as jobs_module
    import crop_hf.synthesis.runner as runner_module
    from crop_hf.engine.language import LanguageIdFilter
    from crop_hf.engine.shards import ShardStore
    from crop_hf.synthesis import SynthesisConfig
    from crop_hf.synthesis.runner import SynthesisJob

    torch.set_num_threads(args.threads)
    backend, _, compute_type = args.backend.partition(":")
    times: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    current = {"stage": None, "since": 0.0}

    def switch(stage: str | None) -> None:
        now = time.perf_counter()
        if current["stage"] is not None:
            times[current["stage"]] += now - current["since"]
        current.update(stage=stage, since=now)

    accepts = LanguageIdFilter.accepts

    def timed_accepts(self, text, lang):
        start = time.perf_counter()
        accepts(self, text, lang)
        times["filter"] += time.perf_counter() - start  # counted in its stage too; subtracted below
        times[f"filter in {current['stage']}"] += time.perf_counter() - start
        return True  # random-weight output is no language: time the filter, ignore its verdict

    synthesize_shard = runner_module.synthesize_shard

    def timed_synthesize_shard(sentences, lang, config, models, language_filter, on_stage=None):
        def stage(name):
            counts[name] += 1
            switch(name)
        result = synthesize_shard(sentences, lang, config, models, language_filter, on_stage=stage)
        switch(None)
        reasons = result.reasons()
        counts["reached project"] += len(result.kept) + reasons.get("projection_incomplete", 0)
        counts.update({f"dropped {k}": v for k, v in reasons.items()})
        return result

    def timed(function, stage):
        def wrapper(*a, **k):
            start = time.perf_counter()
            try:
                return function(*a, **k)
            finally:
                times[stage] += time.perf_counter() - start
        return wrapper

    LanguageIdFilter.accepts = timed_accepts
    runner_module.synthesize_shard = timed_synthesize_shard
    ShardStore.write = timed(ShardStore.write, "write")
    jobs_module._merge = timed(jobs_module._merge, "write")  # the driver's merge: datasets, statistics, card

    config = SynthesisConfig(
        tgt_langs=["de"], input=str(Path(args.input) / "{lang}.txt"), output_dir=args.output_dir,
        mt_model=args.mt_model, ner_model=args.ner_model, backend=backend, compute_type=compute_type or None,
        batch_size=args.batch_size, num_beams=args.num_beams, num_return_sequences=args.num_beams,
        max_new_tokens=args.max_new_tokens, shard_size=args.shard_size, show_progress=False, device="cpu",
    )
    runner = SynthesisJob(config)
    start = time.perf_counter()
    runner.models  # noqa: B018  (load, and convert on a cache miss, before the clock starts)
    load_s = time.perf_counter() - start
    start = time.perf_counter()
    result = runner.run()
    total = time.perf_counter() - start
    for stage in ("translate", "back-translate"):
        times[stage] -= times.pop(f"filter in {stage}", 0.0)
    for key in [k for k in times if k.startswith("filter in ")]:
        times.pop(key)
    times["other"] = total - sum(times[s] for s in STAGES if s != "other")
    return {"backend": args.backend, "load_s": load_s, "total_s": total, "times": dict(times),
            "counts": dict(counts), "statistics": result.statistics}


def projection_cost(sentences: list[str]) -> float:
    """Seconds to project two entities onto every sentence lexically (what a trained translator would need)."""
    from crop_hf.projection import project_lexical

    rng = random.Random(0)
    start = time.perf_counter()
    for sentence in sentences:
        words = sentence.split()
        entities = [(rng.choice(words), "LOC"), (rng.choice(words), "PER")]
        project_lexical(sentence, entities, lang="de")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=8)
    parser.add_argument("--words", type=int, default=12, help="words per input sentence")
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--num-beams", type=int, default=2, help="beams and hypotheses tried (back-translation)")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--backends", nargs="+", default=["transformers", "ctranslate2", "ctranslate2:int8"],
                        help="backend[:compute_type] per run")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--workdir", help="keep the built models and conversions here (default: temporary)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    for name in ("backend", "input", "output_dir", "mt_model", "ner_model", "shard_size"):
        parser.add_argument(f"--{name}", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.threads is None:
        import torch

        args.threads = torch.get_num_threads()
    if args.child:
        args.shard_size = int(args.shard_size)
        print(json.dumps(profile(args)))
        return

    with tempfile.TemporaryDirectory() as temporary:
        workdir = Path(args.workdir or temporary)
        workdir.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        mt, ner = build_models(workdir)
        print(f"built the random-weight models in {time.perf_counter() - start:.0f} s", file=sys.stderr)
        rng = random.Random(0)
        sentences = [" ".join(rng.choice(WORDS) for _ in range(args.words - 1)) + " ." for _ in range(args.sentences)]
        (workdir / "input").mkdir(exist_ok=True)
        (workdir / "input" / "de.txt").write_text("\n".join(sentences) + "\n", encoding="utf-8")
        runs = []
        for backend in args.backends:
            output = workdir / f"out-{backend.replace(':', '-')}"
            command = [sys.executable, __file__, "--child", "--backend", backend, "--input", str(workdir / "input"),
                       "--output_dir", str(output), "--mt_model", str(mt), "--ner_model", str(ner),
                       "--shard_size", str(max(1, args.sentences // 2)), "--threads", str(args.threads),
                       "--batch-size", str(args.batch_size), "--num-beams", str(args.num_beams),
                       "--max-new-tokens", str(args.max_new_tokens)]
            env = {**os.environ, "CROP_HF_CACHE": str(workdir / "cache")}
            done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True, env=env)
            runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
        projection_s = projection_cost(sentences)

    print(f"\ncrop-hf synthesize, m2m100_418M + xlm-roberta-base architectures (random weights); {args.sentences} "
          f"sentences of {args.words} words in 2 shards, {args.num_beams} beams, {args.max_new_tokens} new tokens, "
          f"batch {args.batch_size}, {args.threads} threads, {os.cpu_count()} CPUs shared with other work")
    header = f"{'stage':16s}" + "".join(f"{run['backend']:>26s}" for run in runs)
    print(header)
    for stage in STAGES:
        cells = "".join(f"{run['times'].get(stage, 0.0):12.2f} s {100 * run['times'].get(stage, 0.0) / run['total_s']:9.1f} %"
                        for run in runs)
        print(f"{stage:16s}{cells}")
    print(f"{'total':16s}" + "".join(f"{run['total_s']:12.2f} s {'':11s}" for run in runs))
    print(f"{'sentences/s':16s}" + "".join(f"{args.sentences / run['total_s']:14.3f} {'':11s}" for run in runs))
    print(f"{'load (+convert)':16s}" + "".join(f"{run['load_s']:12.2f} s {'':11s}" for run in runs))
    base = runs[0]
    for run in runs[1:]:
        print(f"end-to-end speed-up of {run['backend']} over {base['backend']}: {base['total_s'] / run['total_s']:.2f}x")
    for run in runs:
        stage = max((s for s in STAGES if s != "other"), key=lambda s: run["times"].get(s, 0.0))
        print(f"bottleneck with {run['backend']}: {stage} ({100 * run['times'][stage] / run['total_s']:.0f} % of the run)")
    print(f"projection of all {args.sentences} sentences (none reached it: random translators drop their markers) "
          f"would add {projection_s:.3f} s (counted below)")
    shares = ", ".join(f"{run['backend']} {100 * overhead_share(run, projection_s):.1f} %" for run in runs)
    print(f"overhead (everything outside translate, tag and back-translate, projection included): {shares} "
          f"of the run's wall time (target: at most 15 %)")


def overhead_share(run: dict, projection_s: float) -> float:
    """The share of a run's wall time spent outside the three model stages, all-sentence projection added.

    >>> overhead_share({"total_s": 10.0, "times": {"translate": 4.0, "tag": 1.0, "back-translate": 4.0}}, 0.0)
    0.1
    """
    model = sum(run["times"].get(stage, 0.0) for stage in MODEL_STAGES)
    total = run["total_s"] + projection_s
    return (total - model) / total


if __name__ == "__main__":
    main()
