"""Marker-constrained decoding against free decoding, time per step, at ``facebook/m2m100_418M``'s shape on CPU.

Every decoding runs exactly ``--steps`` steps (``min_new_tokens = max_new_tokens``), the forced
target-language token included, from encoder outputs computed once beforehand, so a run's time
divided by its steps is the decoder's time per step. ``free`` is ``generate`` as it is;
``constrained`` adds :class:`~crop_hf.translation.constraints.MarkerConstraintProcessor` with the
pipeline's arguments (its length rule on: ``max_new_tokens``); ``before`` (``--before``) is the
processor as it was before it carried its state between steps (``tests/constraints_reference.py``).
Modes take turns within each repeat and the table shows the median per mode, so a machine shared
with other work slows all of them alike; ``processor`` is the constraint's own time per step.

    nice -n 10 python benchmarks/bench_constrained_decoding.py                # real shape, 10-35 minutes on 2 cores
    python benchmarks/bench_constrained_decoding.py --layers 2 --before       # same vocabulary, 2+2 layers

Latest (2026-12-03, real shape, batch 16, 16 steps, 2 threads of a heavily shared Intel Xeon;
``in-run``: the processor's time against the steps of the same run)::

    decoding    free ms/step  constrained   ratio  in-run   processor
    greedy             973.4        708.6  0.728x  1.007x     15.09ms
    5 beams           4806.6       4279.6  0.890x  1.005x     37.89ms

Results, settings and history: docs/benchmarks/bench-constrained-decoding.md
"""

from __future__ import annotations

import argparse
import gzip
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_backends import M2M100_418M  # noqa: E402
from bench_synthesis_profile import build_m2m100_tokenizer  # noqa: E402

MULTI30K = ROOT.parent / "shared" / "data" / "multi30k" / "val.en.gz"


def marked_sources(count: int, seed: int = 0) -> list[Any]:
    """The first ``count`` Multi30k validation captions with two of their words marked as entities."""
    from crop_hf.markers import mark_tokens

    rng = random.Random(seed)
    with gzip.open(MULTI30K, "rt", encoding="utf-8") as lines:
        captions = [line.split() for line, _ in zip(lines, range(count), strict=False)]
    marked = []
    for tokens in captions:
        first, second = sorted(rng.sample(range(len(tokens)), 2))
        marked.append(mark_tokens(tokens, [(first, first + 1, "PER"), (second, second + 1, "LOC")]))
    return marked


def build_m2m100_418m(layers: int = M2M100_418M["decoder_layers"]) -> tuple[Any, Any]:
    """A random-weight model of ``facebook/m2m100_418M``'s configuration (``layers`` encoder and decoder
    layers; the checkpoint has 12) and its real-size tokenizer, with the 16 ``crop`` markers added
    as the pipeline adds them. Offline; about 20 s and 1.7 GB at 12 layers."""
    import torch
    from transformers import M2M100Config, M2M100ForConditionalGeneration, M2M100Tokenizer

    from crop_hf.translation.marker_tokens import add_marker_tokens

    with tempfile.TemporaryDirectory() as folder:
        tokenizer = M2M100Tokenizer.from_pretrained(build_m2m100_tokenizer(Path(folder), marker_pieces=False))
    torch.manual_seed(0)
    config = M2M100Config(**{**M2M100_418M, "encoder_layers": layers, "decoder_layers": layers})
    model = M2M100ForConditionalGeneration(config).eval()
    add_marker_tokens(tokenizer, model, "crop", 16)
    return model, tokenizer


class _Timed:
    """A logits processor that times another one (seconds of each call)."""

    def __init__(self, processor: Any) -> None:
        self.processor, self.calls = processor, []

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        start = time.perf_counter()
        try:
            return self.processor(input_ids, scores)
        finally:
            self.calls.append(time.perf_counter() - start)


class _StepClock:
    """A logits processor that changes nothing and notes when each step reaches it: the differences
    are the decoder's time per step (model, search and processors), free of the call's set-up."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        self.times.append(time.perf_counter())
        return scores

    def step(self) -> float:
        """The median time between consecutive steps."""
        return statistics.median(b - a for a, b in zip(self.times, self.times[1:], strict=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layers", type=int, default=M2M100_418M["decoder_layers"],
                        help="encoder and decoder layers (the checkpoint has 12)")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--steps", type=int, default=16, help="new tokens per decoding, all of them run")
    parser.add_argument("--beams", type=int, nargs="+", default=[1, 5])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--before", action="store_true", help="also time the processor as it was before")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()

    import torch
    from transformers import LogitsProcessorList
    from transformers.modeling_outputs import BaseModelOutput

    from crop_hf.translation.constraints import MarkerConstraintProcessor
    from crop_hf.translation.marker_tokens import MarkerVocabulary

    if args.threads:
        torch.set_num_threads(args.threads)
    start = time.perf_counter()
    model, tokenizer = build_m2m100_418m(args.layers)
    vocabulary = MarkerVocabulary(tokenizer, "crop")
    print(f"built the model ({sum(p.numel() for p in model.parameters()) / 1e6:.0f} M parameters, vocabulary "
          f"{model.get_output_embeddings().weight.shape[0]:,}, tokenizer {len(tokenizer):,}) in "
          f"{time.perf_counter() - start:.0f} s", file=sys.stderr)

    sources = marked_sources(args.batch)
    tokenizer.src_lang = "en"
    inputs = tokenizer([m.text for m in sources], return_tensors="pt", padding=True)
    slots = [[e.slot for e in m.entities] for m in sources]
    eos = model.generation_config.eos_token_id
    with torch.inference_mode():
        hidden = model.get_encoder()(**inputs).last_hidden_state

    modes = ["free", "constrained", *(["before"] if args.before else [])]

    def processor(mode: str) -> Any:
        if mode == "constrained":
            return MarkerConstraintProcessor(vocabulary, slots, eos, max_new_tokens=args.steps)
        sys.path.insert(0, str(ROOT / "tests"))
        from constraints_reference import ReferenceMarkerConstraintProcessor

        return ReferenceMarkerConstraintProcessor(vocabulary, slots, eos, max_new_tokens=args.steps)

    def decode(mode: str, beams: int, steps: int) -> tuple[float, float, Any]:
        """One decoding: its median time per step, the constraint's mean time per call, its output."""
        timed = None if mode == "free" else _Timed(processor(mode))
        clock = _StepClock()
        with torch.inference_mode():
            output = model.generate(
                encoder_outputs=BaseModelOutput(last_hidden_state=hidden), attention_mask=inputs["attention_mask"],
                num_beams=beams, do_sample=False, max_new_tokens=steps, min_new_tokens=steps,
                forced_bos_token_id=tokenizer.get_lang_id("de"),
                logits_processor=LogitsProcessorList([*([timed] if timed else []), clock]))
        return clock.step(), statistics.fmean(timed.calls) if timed else 0.0, output

    rows = []
    for beams in args.beams:
        decode("free", beams, 3)  # warm-up
        step: dict[str, list[float]] = {mode: [] for mode in modes}
        own: dict[str, list[float]] = {mode: [] for mode in modes}
        for repeat in range(args.repeats):
            for mode in modes[repeat % len(modes):] + modes[: repeat % len(modes)]:  # take turns
                seconds, inside, output = decode(mode, beams, args.steps)
                assert output.shape[1] == args.steps + 1, output.shape  # decoder start + every step
                step[mode].append(seconds)
                own[mode].append(inside)
                print(f"beams {beams} repeat {repeat} {mode}: {1000 * seconds:.1f} ms/step, processor "
                      f"{1000 * inside:.2f} ms", file=sys.stderr, flush=True)
        rows.append((beams, step, own))

    print(f"\nfacebook/m2m100_418M shape, {args.layers}+{args.layers} layers, vocabulary "
          f"{model.get_output_embeddings().weight.shape[0]:,} (markers added), random weights; batch {args.batch}, "
          f"{args.steps} steps, {args.repeats} runs per mode taking turns, {torch.get_num_threads()} threads")
    print("ms/step: median step of a run, least-disturbed run (min over runs); processor: its mean time per call; "
          "in-run: a constrained run's step over its step less the processor's time (median over runs)")
    others = modes[1:]
    print(f"{'decoding':10s}{'free ms/step':>14s}" + "".join(
        f"{mode:>13s}{'ratio':>8s}{'in-run':>8s}{'processor':>12s}" for mode in others))
    for beams, step, own in rows:
        name = "greedy" if beams == 1 else f"{beams} beams"
        free = min(step["free"])
        line = f"{name:10s}{1000 * free:14.1f}"
        for mode in others:
            in_run = statistics.median(s / (s - p) for s, p in zip(step[mode], own[mode], strict=True))
            line += (f"{1000 * min(step[mode]):13.1f}{min(step[mode]) / free:7.3f}x{in_run:7.3f}x"
                     f"{1000 * statistics.median(own[mode]):10.2f}ms")
        print(line)


if __name__ == "__main__":
    main()
