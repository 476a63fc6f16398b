"""Language identification beside translation: is langid a measurable part of synthesis?

Synthesis checks two texts per sentence with :class:`crop_hf.engine.language.LanguageIdFilter`
(langid restricted to the run's two languages): the translation into the source language and the
labeled back-translation. This times that filter on ``--sentences`` real sentences (the first
lines of Multi30k's training captions, ``../shared/data/multi30k``: English checked as ``en``,
German as ``de``, with the languages ``{en, de}``, as a German run with English as source does),
and beside it the translation stage: ``facebook/m2m100_418M``'s architecture with random weights
(``bench_constrained_decoding.build_m2m100_418m``, real-size tokenizer) translating the first
``--translate`` of the German sentences to English, greedy, batch ``--batch``, inputs cut to
``--src-tokens`` tokens and exactly ``--new-tokens`` new tokens each (``min_new_tokens =
max_new_tokens``; random weights would never stop by themselves), encoder included.

    nice -n 10 python benchmarks/bench_language_filter.py        # about 2 minutes on 2 cores

Latest (2026-12-03, 2 threads of an Intel Xeon heavily shared with other work; 10,000 sentences
per language, 32 translated)::

    stage                              sentences/s  ms/sentence
    langid (one check)                       8,417        0.119
    translation (greedy, batch)               0.52       1937.8
    langid's share (2 checks vs 2 checks + 1 greedy translation per sentence): 0.012%

Results, settings and history: docs/benchmarks/bench-language-filter.md
"""

from __future__ import annotations

import argparse
import gzip
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_constrained_decoding import build_m2m100_418m  # noqa: E402

MULTI30K = ROOT.parent / "shared" / "data" / "multi30k"


def captions(lang: str, count: int) -> list[str]:
    """The first ``count`` Multi30k training captions in ``lang``."""
    with gzip.open(MULTI30K / f"train.{lang}.gz", "rt", encoding="utf-8") as lines:
        return [line.strip() for line, _ in zip(lines, range(count), strict=False)]


def time_language_filter(sentences: dict[str, list[str]]) -> tuple[float, dict[str, float]]:
    """Seconds per check over all sentences, and the share each language's sentences pass."""
    from crop_hf.engine.language import LanguageIdFilter

    language_filter = LanguageIdFilter(sorted(sentences))
    language_filter.accepts("warm-up", "en")
    start = time.perf_counter()
    accepted = {lang: sum(language_filter.accepts(text, lang) for text in texts) / len(texts)
                for lang, texts in sentences.items()}
    return (time.perf_counter() - start) / sum(len(t) for t in sentences.values()), accepted


def time_translation(sentences: list[str], batch: int, src_tokens: int, new_tokens: int) -> float:
    """Seconds per sentence of greedy translation at m2m100_418M's shape (encoder included)."""
    import torch

    model, tokenizer = build_m2m100_418m()
    tokenizer.src_lang = "de"
    english = tokenizer.get_lang_id("en")

    def translate(texts: list[str]) -> None:
        inputs = tokenizer(texts, return_tensors="pt", padding=True, truncation=True, max_length=src_tokens)
        with torch.inference_mode():
            model.generate(**inputs, num_beams=1, do_sample=False, max_new_tokens=new_tokens,
                           min_new_tokens=new_tokens, forced_bos_token_id=english)

    translate(sentences[:batch][:2])  # warm-up
    start = time.perf_counter()
    for i in range(0, len(sentences), batch):
        translate(sentences[i : i + batch])
    return (time.perf_counter() - start) / len(sentences)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=10_000, help="sentences per language for langid")
    parser.add_argument("--translate", type=int, default=32, help="sentences translated")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--src-tokens", type=int, default=24)
    parser.add_argument("--new-tokens", type=int, default=20)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    texts = {lang: captions(lang, args.sentences) for lang in ("de", "en")}
    langid_s, accepted = time_language_filter(texts)
    translate_s = time_translation(texts["de"][: args.translate], args.batch, args.src_tokens, args.new_tokens)
    share = 2 * langid_s / (2 * langid_s + translate_s)
    print(f"\nlangid restricted to {{de, en}}, {args.sentences:,} Multi30k captions per language; translation: "
          f"m2m100_418M shape (random weights), {args.translate} sentences, batch {args.batch}, greedy, "
          f"{args.src_tokens} source / {args.new_tokens} new tokens; {torch.get_num_threads()} threads")
    print(f"{'stage':34s}{'sentences/s':>12s}{'ms/sentence':>13s}")
    print(f"{'langid (one check)':34s}{1 / langid_s:12,.0f}{1000 * langid_s:13.3f}")
    print(f"{'translation (greedy, batch)':34s}{1 / translate_s:12,.2f}{1000 * translate_s:13.1f}")
    print("accepted as their own language: " + ", ".join(f"{lang} {100 * a:.2f}%" for lang, a in accepted.items()))
    print(f"langid's share (2 checks vs 2 checks + 1 greedy translation per sentence): {100 * share:.3f}%")


if __name__ == "__main__":
    main()
