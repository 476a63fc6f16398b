"""Training-step speed of the marker-MT model on CPU: what each choice of the training loop costs.

    python benchmarks/bench_translation_step.py                 # about 4 minutes on 2 cores
    python benchmarks/bench_translation_step.py --d_model 192 --layers 2 --steps 30

The model is bench_marker_mt.py's tiny M2M100 (random weights, SentencePiece trained on Multi30k
train, ``--layers``/``--d_model``), the batches are Multi30k en→de pairs with up to three marked
phrase pairs each (eflomal, the content recipe's marking), 48 pairs a batch. Every configuration
runs the same batches through the step of :func:`crop_hf.translation.train.train_translation`
(bf16 autocast where the CPU has it, the marker-weighted label-smoothed loss, AdamW, clipping):
forward, loss, backward and optimizer step, timed after two warm-up steps. Configurations take
turns batch by batch, so a machine shared with other work slows them alike; ratios are against
the first row, the loop as it was before (sdpa attention, logits at every padded position, the
unfused loss, random batches, dropout 0.1).

Latest (2026-12-02, 2 idle cores of an AMD EPYC with AVX512-BF16, defaults):

    configuration                               s/step  target tok/s  vs before
    before (sdpa, all positions, eager loss)     1.019          1136      1.00x
    + no dropout                                 0.240          4918      4.33x

Results, settings and history: docs/benchmarks/bench-translation-step.md
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

#: name -> (attention, labelled positions only, fused loss, batches grouped by length, dropout)
CONFIGURATIONS = {
    "before (sdpa, all positions, eager loss)": ("sdpa", False, False, False, 0.1),
    "+ eager attention": ("eager", False, False, False, 0.1),
    "+ labelled positions only": ("eager", True, False, False, 0.1),
    "+ fused loss (compile_loss)": ("eager", True, True, False, 0.1),
    "+ batches grouped by length": ("eager", True, True, True, 0.1),
    "+ no dropout": ("eager", True, True, True, 0.0),
}


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data_dir", default=str(Path(__file__).resolve().parents[1].parent / "shared/data/multi30k"))
    parser.add_argument("--work_dir", default="bench-translation-step")
    parser.add_argument("--pairs", type=int, default=4000, help="Multi30k train pairs to mark and batch")
    parser.add_argument("--steps", type=int, default=20, help="timed steps per configuration")
    parser.add_argument("--batch_size", type=int, default=48)
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--d_model", type=int, default=256)
    parser.add_argument("--vocab_size", type=int, default=8000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    from itertools import islice

    import torch
    from bench_marker_mt import _fast_bf16, build_model
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    from crop_hf.translation.data import EpochSampler, collate_pairs, tokenize_pairs
    from crop_hf.translation.mark_parallel import mark_parallel, pairs_from_files
    from crop_hf.translation.marker_tokens import MarkerVocabulary, add_marker_tokens
    from crop_hf.translation.parallel import MarkingConfig
    from crop_hf.translation.train import _LabelledPositions, marker_weighted_loss

    torch.set_num_threads(args.threads)
    data, work = Path(args.data_dir), Path(args.work_dir)
    pairs = list(islice(pairs_from_files(data / "train.en.gz", data / "train.de.gz", "en", "de"), args.pairs))
    marked = mark_parallel(pairs, MarkingConfig(max_slots=3, max_phrase_length=2, random_slot_numbers=False,
                                                seed=args.seed), output_dir=work / "marked",
                           overwrite_output_dir=True).dataset
    model_args = argparse.Namespace(vocab_size=args.vocab_size, d_model=args.d_model, layers=args.layers,
                                    seed=args.seed, dropout=0.1)
    path = build_model(work / "model", list(marked["source_text"]) + list(marked["target_text"]), model_args)
    tokenizer = AutoTokenizer.from_pretrained(path)
    bf16 = _fast_bf16()
    rows = tokenize_pairs(marked, tokenizer, {}, 128, 128)
    lengths = [len(a) + len(b) for a, b in zip(rows["input_ids"], rows["labels"], strict=True)]
    rows = list(rows)
    needed = (args.steps + 2) * args.batch_size

    def batches(grouped: bool):
        sampler = EpochSampler(len(rows), args.seed, args.batch_size, lengths if grouped else None)
        order = list(sampler)[:needed]
        return [collate_pairs([rows[i] for i in order[k:k + args.batch_size]], tokenizer.pad_token_id, 2, 8 if bf16 else None)
                for k in range(0, len(order), args.batch_size)]

    runs = {}
    for name, (attention, selected, fused, grouped, dropout) in CONFIGURATIONS.items():
        model = AutoModelForSeq2SeqLM.from_pretrained(path, attn_implementation=attention, dropout=dropout)
        add_marker_tokens(tokenizer, model, "crop", 16, seed=args.seed)
        labelled = _LabelledPositions(model) if selected else None
        loss_function = torch.compile(marker_weighted_loss, dynamic=True) if fused else marker_weighted_loss
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        runs[name] = {"model": model.train(), "labelled": labelled, "loss": loss_function, "optimizer": optimizer,
                      "batches": batches(grouped), "seconds": 0.0, "tokens": 0}

    marker_ids = torch.tensor(MarkerVocabulary(tokenizer, "crop").marker_ids)  # as training weights them

    def step(run, batch) -> None:
        model, labelled = run["model"], run["labelled"]
        inputs = {k: batch[k] for k in ("input_ids", "attention_mask", "decoder_input_ids")}
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            if labelled is None:
                logits, labels = model(**inputs).logits, batch["labels"]
            else:
                with labelled.only(batch["labels"]) as labels:
                    logits = model(**inputs).logits
        loss = run["loss"](logits, labels, marker_ids, label_smoothing=0.1, marker_weight=3.0)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        run["optimizer"].step()
        run["optimizer"].zero_grad()

    for index in range(args.steps + 2):
        for run in runs.values():  # taking turns: a busy machine slows every configuration alike
            batch = run["batches"][index]
            tick = time.perf_counter()
            step(run, batch)
            if index >= 2:  # two warm-up steps (the fused loss compiles in its first)
                run["seconds"] += time.perf_counter() - tick
                run["tokens"] += int((batch["labels"] != -100).sum())

    base = next(iter(runs.values()))
    base_rate = base["tokens"] / base["seconds"]
    print(f"\n{args.layers} layers, d_model {args.d_model}, batch {args.batch_size}, {args.steps} steps each, "
          f"{'bf16 autocast' if bf16 else 'float32'}")
    print(f"{'configuration':<42} {'s/step':>7} {'target tok/s':>13} {'vs before':>10}")
    for name, run in runs.items():
        rate = run["tokens"] / run["seconds"]
        print(f"{name:<42} {run['seconds'] / args.steps:7.3f} {rate:13.0f} {rate / base_rate:9.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
