"""Sentences per second of lexical projection, against a per-entity scan and against tokenizing alone.

    python benchmarks/bench_projection.py                         # WikiANN de train from ../shared/data
    python benchmarks/bench_projection.py --sentences 5000 --data ../shared/data/wikiann/nl/train
    python benchmarks/bench_projection.py --join 8     # 8 sentences per input: long inputs, many entities

Input: real target sentences (WikiANN / PAN-X, the corpora CroP projects onto) as text, each with
its gold entities as the "translated entities" to find — the case where every entity is present,
so every method does all of its work. Without the data folder a synthetic corpus is used.

Measured in one run, on the same sentences:

* ``project_lexical`` (this package): normalize each token once, concatenate, ``str.find`` each
  entity on token boundaries, claim tokens, write tags and entity records;
* baseline *per-entity scan*: the straightforward implementation — for each entity (longest
  first) tokenize and normalize it, then compare it with the token slice at every start position
  of the sentence (normalizing as it goes), claim the first free match, write tags;
* floor *tokenize only*: ``tokenize_target`` on the sentence and ``str.split`` on its entities,
  the part of the work no matcher can skip; and bare ``str.split`` of the sentence.

Both matchers' tags are compared, so the ratio is between equal outputs. A speed ratio > 1 means
project_lexical is faster; the time ratio says how many times the tokenizing floor it takes.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

from crop_hf.labels import spans_to_tags, tags_to_spans
from crop_hf.projection import Normalizer, project_lexical, tokenize_target

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "wikiann" / "de" / "train"


def read_wikiann(path: Path, limit: int) -> list[tuple[str, list[tuple[str, str]]]]:
    sentences, tokens, tags = [], [], []
    for line in [*path.read_text(encoding="utf-8").splitlines(), ""]:
        if line.strip():
            token, tag = line.rsplit("\t", 1)
            tokens.append(token.split(":", 1)[1])
            tags.append(tag)
        elif tokens:
            entities = [(" ".join(tokens[s.start:s.end]), s.label) for s in tags_to_spans(tags)]
            sentences.append((" ".join(tokens), entities))
            tokens, tags = [], []
            if len(sentences) >= limit:
                break
    return sentences


def synthetic(limit: int, seed: int = 0) -> list[tuple[str, list[tuple[str, str]]]]:
    rng = random.Random(seed)
    filler = ["der", "die", "das", "und", "in", "am", "im", "ist", "war", "nach", "von", "mit", "für", "auf", ",", "."]
    names = ["Göteborg", "Volvo", "Angela Merkel", "New York City", "Paris", "Real Madrid", "Jean-Pierre"]
    sentences = []
    for _ in range(limit):
        words, entities = [], []
        for _ in range(rng.randint(1, 3)):
            words += rng.choices(filler, k=rng.randint(2, 8))
            name = rng.choice(names)
            words.append(name)
            entities.append((name, "X"))
        sentences.append((" ".join(words), entities))
    return sentences


def per_entity_scan(text: str, entities: list[tuple[str, str]], normalizer: Normalizer) -> list[str]:
    """The straightforward matcher: every entity against every start position, token by token."""
    tokens = text.split()
    claimed = [False] * len(tokens)
    spans = []
    for entity, label in sorted(entities, key=lambda e: -len(e[0])):
        words = [normalizer.token(w) for w in entity.split()]
        for start in range(len(tokens) - len(words) + 1):
            end = start + len(words)
            if any(claimed[start:end]):
                continue
            if all(normalizer.token(tokens[start + k]) == words[k] for k in range(len(words))):
                claimed[start:end] = [True] * len(words)
                spans.append((start, end, label))
                break
    return spans_to_tags(spans, len(tokens))


def timed(function, sentences) -> tuple[float, list]:
    start = time.perf_counter()
    outputs = [function(text, entities) for text, entities in sentences]
    return time.perf_counter() - start, outputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="a WikiANN/PAN-X file (lang:token<TAB>tag)")
    parser.add_argument("--sentences", type=int, default=20000)
    parser.add_argument("--join", type=int, default=1,
                        help="concatenate this many consecutive sentences into one input (longer inputs, more entities)")
    args = parser.parse_args()
    if args.data.is_file():
        sentences = read_wikiann(args.data, args.sentences)
        source = str(args.data)
    else:
        sentences = synthetic(args.sentences)
        source = "synthetic corpus"
    if args.join > 1:
        sentences = [(" ".join(t for t, _ in sentences[i:i + args.join]),
                      [e for _, es in sentences[i:i + args.join] for e in es])
                     for i in range(0, len(sentences), args.join)]
    normalizer = Normalizer()
    n_entities = sum(len(e) for _, e in sentences)
    n_tokens = sum(len(t.split()) for t, _ in sentences)
    print(f"{len(sentences)} inputs, {n_tokens / len(sentences):.1f} tokens and {n_entities / len(sentences):.1f} "
          f"entities each ({source}); Python {sys.version.split()[0]}")

    ours_time, ours = timed(lambda t, e: project_lexical(t, e, repeated="once", tokenization="whitespace").tags,
                            sentences)
    scan_time, scan = timed(lambda t, e: per_entity_scan(t, e, normalizer), sentences)
    floor_time, _ = timed(lambda t, e: (tokenize_target(t, tokenization="whitespace"), [x.split() for x, _ in e]),
                          sentences)
    split_time, _ = timed(lambda t, e: t.split(), sentences)
    agree = sum(a == b for a, b in zip(ours, scan, strict=True)) / len(sentences)

    def rate(seconds: float) -> str:
        return f"{len(sentences) / seconds:>10,.0f} sentences/s"

    print(f"project_lexical            {rate(ours_time)}")
    print(f"per-entity scan (baseline) {rate(scan_time)}   tags identical for {agree:.1%} of sentences")
    print(f"tokenize only (floor)      {rate(floor_time)}")
    print(f"str.split only             {rate(split_time)}")
    print(f"speed ratio vs per-entity scan (ours / baseline sentences/s): {scan_time / ours_time:.2f}")
    print(f"time ratio vs tokenize only (ours / floor seconds):           {ours_time / floor_time:.2f}")


if __name__ == "__main__":
    main()
