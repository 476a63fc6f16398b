"""Generation speed and memory: Hugging Face ``generate`` (float32) vs CTranslate2 float32 and int8.

The model is ``facebook/m2m100_418M``'s exact architecture (:data:`M2M100_418M`, from its public
``config.json``) with random weights, built here, so the run is offline; no tokenizer is needed
because the engines get token ids. Both engines run through the pipeline's backends
(:mod:`crop_hf.translation.backends`) on the same inputs (``--src-tokens`` tokens each) and produce
exactly ``--new-tokens`` tokens (``min_new_tokens = max_new_tokens``, so end-of-sentence never
cuts a run short), greedy and with 4 beams, at batch sizes 8 and 32. Engines take turns batch by
batch, so a machine shared with other work slows all of them alike; ratios are against HF
float32 from the same run. Peak memory (peak RSS of a fresh process that loads one engine and runs
the largest configuration) is measured separately, one process per engine.

    nice -n 10 python benchmarks/bench_backends.py                       # about 5 minutes on 2 cores
    python benchmarks/bench_backends.py --packed-gemm                    # CT2_USE_EXPERIMENTAL_PACKED_GEMM=1
    python benchmarks/bench_backends.py --ct2-env CT2_USE_MKL=0          # oneDNN (AMD's path) on Intel
    python benchmarks/bench_backends.py --ct2-threads 1 --engines hf ct2-float32
    python benchmarks/bench_backends.py --marker_model PATH              # + quality of int8 vs float32
    python benchmarks/bench_backends.py --marker_model PATH --quality_only

Latest (2026-12-03, 2 cores of an Intel Xeon shared with three other jobs, CTranslate2 on MKL):

    MKL (defaults)       hf sent/s  ct2-float32  ct2-int8   float32/hf  int8/hf
    greedy        32        4.66         7.67     20.10        1.64x    4.31x
    4 beams       32        1.69         4.58      7.15        2.71x    4.23x
    peak memory: hf 3,265 MB, ct2-float32 3,727 MB (1.14x), ct2-int8 1,524 MB (0.47x)

Results, settings and history: docs/benchmarks/bench-backends.md
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import ClassVar

#: ``facebook/m2m100_418M``'s config.json (the fields that shape the network and its generation).
M2M100_418M = {
    "vocab_size": 128112,
    "d_model": 1024,
    "encoder_layers": 12,
    "decoder_layers": 12,
    "encoder_attention_heads": 16,
    "decoder_attention_heads": 16,
    "encoder_ffn_dim": 4096,
    "decoder_ffn_dim": 4096,
    "max_position_embeddings": 1024,
    "scale_embedding": True,
    "activation_function": "relu",
    "dropout": 0.1,
    "attention_dropout": 0.1,
    "activation_dropout": 0.0,
    "encoder_layerdrop": 0.05,
    "decoder_layerdrop": 0.05,
    "init_std": 0.02,
    "pad_token_id": 1,
    "bos_token_id": 0,
    "eos_token_id": 2,
    "decoder_start_token_id": 2,
}
#: Token ids as in facebook/m2m100_418M: ``__en__`` and ``__de__``.
EN, DE = 128022, 128021
ENGINES = ("hf", "ct2-float32", "ct2-int8")
#: Extra engines for finding defaults: ``ct2-TYPE-unsplit`` hands CTranslate2 whole batches,
#: ``ct2-TYPE-rowsN`` sub-batches of at most N decoding rows (sentences × beams); plain ``ct2-TYPE``
#: uses the backend's defaults for this CPU (float32 on oneDNN races ``generate``: ``race_engines`` in
#: crop_hf/translation/backends.py; the race runs once per row before the timed batches and its
#: winner and time are printed beside the row).
VARIANT = re.compile(r"^ct2-(?P<type>float32|int8)(?:-(?P<split>unsplit|rows(?P<rows>[1-9][0-9]*)))?$")


def engine_name(name: str) -> str:
    """``argparse`` type of ``--engines``: ``hf`` or a CTranslate2 variant (see :data:`VARIANT`)."""
    if name != "hf" and not VARIANT.match(name):
        raise argparse.ArgumentTypeError(f"{name!r}: use hf, ct2-float32, ct2-int8, ct2-TYPE-unsplit or ct2-TYPE-rowsN")
    return name


class IdTokenizer:
    """A tokenizer stand-in for id-only runs: token ``i`` is ``"t{i}"``, fairseq's specials first."""

    bos_token, pad_token, eos_token, unk_token = "<s>", "<pad>", "</s>", "<unk>"
    bos_token_id, pad_token_id, eos_token_id, unk_token_id = 0, 1, 2, 3
    special_tokens_map: ClassVar[dict] = {}
    num_madeup_words = 0

    def __init__(self, size: int) -> None:
        self.tokens = ["<s>", "<pad>", "</s>", "<unk>", *(f"t{i}" for i in range(4, size))]

    def __len__(self) -> int:
        return len(self.tokens)

    def get_vocab(self) -> dict[str, int]:
        return {token: i for i, token in enumerate(self.tokens)}

    def convert_ids_to_tokens(self, index: int) -> str:
        return self.tokens[index]


def build_model(seed: int = 0, meta: bool = False):
    import torch
    from transformers import M2M100Config, M2M100ForConditionalGeneration

    torch.manual_seed(seed)
    config = M2M100Config(**M2M100_418M)
    if meta:  # architecture only: CTranslate2 runs from its converted folder
        with torch.device("meta"):
            return M2M100ForConditionalGeneration(config).eval()
    return M2M100ForConditionalGeneration(config).eval()


def prepare(workdir: Path) -> None:
    """Convert the random model to CTranslate2 float32 and int8 once (kept in ``workdir``)."""
    from crop_hf.translation.backends import convert_checkpoint

    missing = [t for t in ("float32", "int8") if not (workdir / f"ct2-{t}" / "model.bin").is_file()]
    if not missing:
        return
    model, tokenizer = build_model(), IdTokenizer(M2M100_418M["vocab_size"])
    for compute_type in missing:
        convert_checkpoint(model, tokenizer, workdir / f"ct2-{compute_type}", compute_type)


def load_engine(name: str, workdir: Path, threads: int, ct2_threads: int | None, ct2_inter_threads: int = 1):
    from crop_hf.translation.backends import CTranslate2Backend, TransformersBackend, cpu_gemm_library

    if name == "hf":
        return TransformersBackend(build_model())
    match = VARIANT.match(name)
    compute_type, rows = match["type"], (0 if match["split"] == "unsplit" else match["rows"])
    # Plain ct2-float32 on oneDNN races generate (CTranslate2Backend's race_engines): it needs the weights.
    races = match["split"] is None and compute_type == "float32" and cpu_gemm_library() == "onednn"
    return CTranslate2Backend(build_model(meta=not races), IdTokenizer(M2M100_418M["vocab_size"]),
                              compute_type=compute_type, race_engines=races if match["split"] is None else False,
                              device="cpu", converted_model=workdir / f"ct2-{compute_type}",
                              intra_threads=ct2_threads if ct2_threads is not None else threads,
                              inter_threads=ct2_inter_threads,
                              max_batch_rows=None if rows is None else int(rows))


def inputs(count: int, length: int, seed: int = 0):
    import torch

    generator = torch.Generator().manual_seed(seed)
    body = torch.randint(4, 128000, (count, length - 2), generator=generator)
    ids = torch.cat([torch.full((count, 1), EN), body, torch.full((count, 1), 2)], dim=1)
    return ids, torch.ones_like(ids)


def generate_settings(beams: int, new_tokens: int) -> dict:
    return {"num_beams": beams, "num_return_sequences": 1, "max_new_tokens": new_tokens, "min_new_tokens": new_tokens,
            "forced_bos_token_id": DE, "early_stopping": True, "do_sample": False}


def run_config(engine, ids, mask, batch: int, beams: int, new_tokens: int):
    """Seconds and outputs of one engine on all sentences, ``batch`` at a time."""
    seconds, outputs = 0.0, []
    for offset in range(0, len(ids), batch):
        took, output = run_batch(engine, ids[offset:offset + batch], mask[offset:offset + batch], beams, new_tokens)
        seconds += took
        outputs.append(output)
    return seconds, outputs


def run_batch(engine, ids, mask, beams: int, new_tokens: int):
    import torch

    start = time.perf_counter()
    with torch.inference_mode():
        output = engine.generate({"input_ids": ids, "attention_mask": mask}, generate_settings(beams, new_tokens))
    return time.perf_counter() - start, output


def child_time(args) -> None:
    """All engines in one process, taking turns batch by batch: sentences/s per engine.

    Taking turns per batch (not per configuration) means a burst of other work on a shared
    machine slows every engine about equally, so the ratios stay meaningful.
    """
    import torch

    torch.set_num_threads(args.threads)
    workdir = Path(args.workdir)
    engines = {name: load_engine(name, workdir, args.threads, args.ct2_threads, args.ct2_inter_threads) for name in args.engines}
    ids, mask = inputs(args.sentences, args.src_tokens)
    for engine in engines.values():  # warm-up: first-call allocations
        run_config(engine, ids[:2], mask[:2], 2, 1, 4)
    results = []
    for beams in args.beams:
        for batch in args.batch_sizes:
            seconds = dict.fromkeys(engines, 0.0)
            outputs: dict[str, list] = {name: [] for name in engines}
            raced = {}
            for name, engine in engines.items():  # a racing engine's one-off race, timed apart
                if getattr(engine, "race_engines", False):
                    took, _ = run_batch(engine, ids[:batch], mask[:batch], beams, args.new_tokens)
                    raced[name] = {"race_s": took, "winner": engine.winners[(beams, 1, (batch - 1).bit_length())]}
            for offset in range(0, len(ids), batch):
                for name, engine in engines.items():
                    took, output = run_batch(engine, ids[offset:offset + batch], mask[offset:offset + batch], beams,
                                             args.new_tokens)
                    seconds[name] += took
                    outputs[name].append(output)
            row = {"beams": beams, "batch": batch, **{name: args.sentences / s for name, s in seconds.items()},
                   "raced": raced}
            shapes = {name: [tuple(o.shape) for o in result] for name, result in outputs.items()}
            if len({tuple(v) for v in shapes.values()}) != 1:
                raise SystemExit(f"output shapes differ between engines: {shapes}")
            if beams == 1 and {"hf", "ct2-float32"} <= engines.keys():
                row["float32 greedy ids equal"] = all(
                    torch.equal(a, b) for a, b in zip(outputs["hf"], outputs["ct2-float32"], strict=True))
            results.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    print(json.dumps(results))


def child_memory(args) -> None:
    """One engine: RSS after loading and peak RSS after the largest configuration."""
    import torch

    torch.set_num_threads(args.threads)
    before = _rss_mb()
    engine = load_engine(args.engines[0], Path(args.workdir), args.threads, args.ct2_threads,
                         args.ct2_inter_threads)
    loaded = _rss_mb()
    batch = max(args.batch_sizes)
    ids, mask = inputs(batch, args.src_tokens)
    run_config(engine, ids, mask, batch, max(args.beams), args.new_tokens)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"engine": args.engines[0], "start_mb": before, "loaded_mb": loaded, "peak_mb": peak}))


def _rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _child(mode: str, args, engines: list[str]) -> str:
    command = [sys.executable, __file__, "--child", mode, "--workdir", str(args.workdir), "--threads", str(args.threads),
               "--sentences", str(args.sentences), "--src-tokens", str(args.src_tokens),
               "--new-tokens", str(args.new_tokens), "--engines", *engines,
               "--batch-sizes", *map(str, args.batch_sizes), "--beams", *map(str, args.beams)]
    if args.ct2_threads is not None:
        command += ["--ct2-threads", str(args.ct2_threads)]
    command += ["--ct2-inter-threads", str(args.ct2_inter_threads)]
    env = dict(os.environ)
    if args.packed_gemm:
        env["CT2_USE_EXPERIMENTAL_PACKED_GEMM"] = "1"
    env.update(item.split("=", 1) for item in args.ct2_env)
    done = subprocess.run(command, env=env, stdout=subprocess.PIPE, text=True, check=True)
    lines = done.stdout.strip().splitlines()
    return lines[-1] if lines else ""


def quality(args) -> None:
    """Marker completeness and BLEU of a marker-trained model: CTranslate2 float32 vs int8."""
    import gzip

    import sacrebleu
    from transformers import pipeline

    import crop_hf  # noqa: F401
    from crop_hf.data.readers import read_conll

    # Sentences with entities and at most 40 words: the tiny models' positions end at 256 subwords,
    # and CoNLL-2003 has a few table-like "sentences" of hundreds of tokens.
    records = [{"tokens": s.tokens, "ner_tags": s.tags} for s in read_conll(args.marker_data, scheme="IOB1")
               if any(tag != "O" for tag in s.tags) and len(s.tokens) <= 40][:args.quality_sentences]
    with gzip.open(args.bleu_source, "rt", encoding="utf-8") as src, gzip.open(args.bleu_reference, "rt",
                                                                                  encoding="utf-8") as ref:
        sources = [line.strip() for line, _ in zip(src, range(args.quality_sentences), strict=False)]
        references = [line.strip() for line, _ in zip(ref, range(args.quality_sentences), strict=False)]
    settings = {"src_lang": args.src_lang, "tgt_lang": args.tgt_lang, "num_beams": 4, "num_return_sequences": 4,
                "max_new_tokens": 64, "batch_size": 16}
    scores = {}
    for compute_type in ("float32", "int8"):
        translate = pipeline("labeled-translation", model=args.marker_model, backend="ctranslate2",
                             compute_type=compute_type, early_stopping=True)
        marked = translate(records, **settings)
        plain = translate(sources, **settings)
        completeness = 100 * sum(o["complete"] for o in marked) / len(marked)
        bleu = sacrebleu.corpus_bleu([o["translation"] for o in plain], [references]).score
        scores[compute_type] = (completeness, bleu)
        print(f"CTranslate2 {compute_type:8s} marker completeness {completeness:6.2f}%  BLEU {bleu:6.2f}"
              f"  ({len(marked)} labeled sentences, {len(plain)} BLEU sentences)")
    print(f"int8 - float32: completeness {scores['int8'][0] - scores['float32'][0]:+.2f} points, "
          f"BLEU {scores['int8'][1] - scores['float32'][1]:+.2f} points (target: within 1 point)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=32, help="sentences per configuration")
    parser.add_argument("--src-tokens", type=int, default=16)
    parser.add_argument("--new-tokens", type=int, default=16)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--beams", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--engines", nargs="+", default=list(ENGINES), type=engine_name,
                        help="hf, ct2-float32, ct2-int8, or variants ct2-TYPE-unsplit / ct2-TYPE-rowsN")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    parser.add_argument("--ct2-threads", type=int, default=None, help="CTranslate2 intra_threads (default: --threads)")
    parser.add_argument("--ct2-inter-threads", type=int, default=1,
                        help="CTranslate2 inter_threads: sub-batches translated in parallel (default 1)")
    parser.add_argument("--packed-gemm", action="store_true", help="set CT2_USE_EXPERIMENTAL_PACKED_GEMM=1")
    parser.add_argument("--ct2-env", nargs="*", default=[], metavar="KEY=VALUE",
                        help="environment for the CTranslate2 runs, e.g. CT2_USE_MKL=1 (MKL on a non-Intel CPU)")
    parser.add_argument("--no-memory", action="store_true", help="skip the per-engine memory processes")
    parser.add_argument("--workdir", help="keep the converted models here (default: a temporary folder)")
    parser.add_argument("--marker_model", help="a marker-trained labeled-translation model: also check int8 quality")
    shared = Path(__file__).resolve().parents[1].parent / "shared" / "data"
    parser.add_argument("--marker_data", default=str(shared / "conll2003" / "eng.testb"))
    parser.add_argument("--bleu_source", default=str(shared / "multi30k" / "val.en.gz"))
    parser.add_argument("--bleu_reference", default=str(shared / "multi30k" / "val.de.gz"))
    parser.add_argument("--src_lang", default="en")
    parser.add_argument("--tgt_lang", default="de")
    parser.add_argument("--quality_sentences", type=int, default=300)
    parser.add_argument("--quality_only", action="store_true", help="only the int8-vs-float32 quality check")
    parser.add_argument("--child", choices=["time", "memory", "prepare"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.threads is None:
        import torch

        args.threads = torch.get_num_threads()

    if args.child:
        {"time": child_time, "memory": child_memory, "prepare": lambda a: prepare(Path(a.workdir))}[args.child](args)
        return
    if args.quality_only:
        if not args.marker_model:
            parser.error("--quality_only needs --marker_model")
        quality(args)
        return
    with tempfile.TemporaryDirectory() as temporary:
        args.workdir = Path(args.workdir or temporary)
        args.workdir.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        _child("prepare", args, ["hf"])
        print(f"converted the random m2m100_418M-shaped model in {time.perf_counter() - start:.0f} s", file=sys.stderr)
        rows = json.loads(_child("time", args, args.engines))
        memory = {} if args.no_memory else {e: json.loads(_child("memory", args, [e])) for e in args.engines}

    import ctranslate2

    from crop_hf.translation.backends import cpu_gemm_library

    print(f"\nm2m100_418M architecture, random weights; {args.sentences} sentences of {args.src_tokens} tokens -> "
          f"{args.new_tokens} tokens; {args.threads} torch threads, CTranslate2 intra_threads="
          f"{args.ct2_threads or args.threads}, inter_threads={args.ct2_inter_threads}, packed GEMM {'on' if args.packed_gemm else 'off'}"
          f"{''.join(', ' + item for item in args.ct2_env)}; "
          f"ctranslate2 {ctranslate2.__version__} with "
          f"{cpu_gemm_library({**os.environ, **dict(item.split('=', 1) for item in args.ct2_env)})} GEMM, "
          f"{os.cpu_count()} CPUs "
          f"(shared with other work: compare ratios)")
    header = f"{'decoding':10s} {'batch':>5s} " + " ".join(f"{e + ' sent/s':>18s}" for e in args.engines)
    others = [e for e in args.engines if e != "hf"]
    if "hf" in args.engines:
        header += " " + " ".join(f"{e + ' / hf':>16s}" for e in others)
    print(header)
    for row in rows:
        decoding = "greedy" if row["beams"] == 1 else f"{row['beams']} beams"
        line = f"{decoding:10s} {row['batch']:5d} " + " ".join(f"{row[e]:18.2f}" for e in args.engines)
        if "hf" in args.engines:
            line += " " + " ".join(f"{row[e] / row['hf']:15.2f}x" for e in others)
        if "float32 greedy ids equal" in row:
            line += f"   (CT2 float32 = HF token ids: {row['float32 greedy ids equal']})"
        for engine, race in row.get("raced", {}).items():
            winner = race["winner"]
            ran = "generate" if winner == "generate" else f"ct2 {winner}-row sub-batches" if winner else "ct2 whole batches"
            line += f"   ({engine} raced once, {race['race_s']:.1f} s: runs {ran})"
        print(line)
    if memory:
        print("\npeak memory (RSS of a process that loads one engine and runs the largest configuration):")
        base = memory.get("hf", {}).get("peak_mb")
        for engine, values in memory.items():
            ratio = f"  ({values['peak_mb'] / base:.2f}x of hf)" if base else ""
            print(f"  {engine:12s} loaded {values['loaded_mb']:8.0f} MB   peak {values['peak_mb']:8.0f} MB{ratio}")
    if args.marker_model:
        quality(args)
    else:
        print("\nquality (int8 vs float32 marker completeness and BLEU): not run; pass --marker_model PATH")


if __name__ == "__main__":
    main()
