"""Projection quality against gold translations: Hinglish-TOP slots and Europarl-NER entities (en→de).

``--corpus hinglish`` (default, below) and ``--corpus europarl`` (further below) or ``both``.

Hinglish-TOP pairs every human code-switched (Hindi-English) parse with the English parse it was
written from, so projecting the English slots onto the code-switched words can be scored against
the human slots. All English/code-switched pairs (train and validation) are aligned together
with eflomal + grow-diag-final-and, as CSTOP does with fast_align; scores are on the validation
rows whose two parses are both flat (no intent inside a slot).

Methods, all through ``crop_hf.projection``:

* ``split``        alignment projection, each discontinuous piece a separate slot (CSTOP's rule)
* ``gap-fill 1``   alignment projection joining pieces separated by one word (``fill_gaps=1``)
* ``lexical-only`` lexical matching of the English slot words (exact, then case-folded), no alignment
* ``hybrid split`` lexical matching first, alignment with CSTOP's split rule for the slots it cannot place
* ``hybrid``       the package's defaults: lexical first, alignment filling one-word gaps and keeping
                   the piece with the most links (``fill_gaps=1, pieces="largest"``)
* ``hybrid hindi`` ``postpositions="hi"``: rule 9 of :mod:`crop_hf.projection.alignment` (no slot
                   starts with a Hindi postposition; a slot whose English words start with a
                   preposition takes the postpositions after it) and no lexical match on postpositions alone
* ``... gdf``      the same row over the same eflomal run's two directions joined with grow-diag-final
                   (every other row: grow-diag-final-and, CSTOP's)

eflomal samples from /dev/urandom (it takes no seed), so the alignment is run ``--runs`` times
(default 3) and every run is reported; ``--samplers 8`` (default here) averages more samplers per
run, which steadies the runs (measured: hybrid F1 0.903-0.910 with 8 samplers, 0.896-0.908 with
eflomal's default 3). Slot P/R/F1 are seqeval's (exact span and label); the
exact slot-set rate is the share of sentences whose projected slot set equals the gold one.

    python benchmarks/bench_projection_quality.py [--data ../shared/data/hinglish-top] [--runs 3]

Europarl-NER (``--corpus europarl``): the 799 English sentences' tags are projected onto the human
German translations and scored against the German gold tags, through
:func:`crop_hf.metrics.projection.evaluate_projection` (the code of ``crop-hf evaluate-projection``).
All 799 pairs are aligned together (eflomal sees no tags), then split with a seeded shuffle
(``--seed 0``) into a **dev part of 400 pairs, the only data on which a setting may be chosen**,
and a **test part of 399 pairs, reported and never used to choose**. Rows (the first two are the
issue's baseline; the others are candidate settings, each a measured row):

* ``alignment``         CSTOP's rule, package defaults
* ``hybrid``            package defaults (``fill_gaps=1, pieces="largest"``: chosen on Hinglish-TOP, see above)
* ``hybrid gap 0`` / ``hybrid gap 2``  other gap filling
* ``hybrid split``      every discontinuous piece a span
* ``hybrid trim``       ``trim_edges=True``: edge words linked as much outside every span are trimmed
* ``hybrid one word``   ``one_word=True``: a one-word source span keeps one target word
* ``hybrid fuzzy 80``   ``fuzzy=80``: fuzzy matching of the source words between the lexical passes and alignment
* ``hybrid trim+one word`` and ``hybrid entities`` (all three)
* ``hybrid german``    ``capitalized_nouns=True, function_words="de"``: trailing lowercase words are trimmed
  (German names end in a capitalized noun) and German function words are trimmed from the edges,
  a piece of only them dropped (rules 7 and 8 of :mod:`crop_hf.projection.alignment`)
* ``hybrid german+one word`` and ``hybrid german+one word+fuzzy 80``
* every row again over ``eflomal gdf``: the same eflomal run's directions joined with grow-diag-final
  instead of grow-diag-final-and (one run, dev part: every row 1.2-1.9 F1 lower; German's chosen row
  0.887 against 0.901), so German keeps grow-diag-final-and
* with ``--extra_parallel multi30k``: the same rows over eflomal links learnt with Multi30k's 29,000
  en-de training captions added as unlabelled bitext (``../shared/data/multi30k``), marked ``+m30k``.

The Hinglish-TOP part prints the same candidate rows on validation (reported) and on the flat
train rows, **its dev data**: a setting is chosen on train, never on validation.

Hindi rows (2026-12-03, ``--corpus both --runs 3 --samplers 8``; slot F1, min / mean / max of the
three runs; each run's rows share one eflomal run):

| row | Hinglish train (dev: chooses) | Hinglish validation (reported) |
| --- | ---: | ---: |
| hybrid (defaults, grow-diag-final-and) | 0.888 / 0.891 / 0.892 | 0.906 / 0.912 / 0.915 |
| hybrid gdf | 0.892 / 0.898 / 0.902 | 0.915 / 0.918 / 0.920 |
| hybrid hindi | 0.905 / 0.909 / 0.912 | 0.923 / 0.927 / 0.930 |
| **hybrid hindi gdf** | **0.908 / 0.914 / 0.918** | **0.933 / 0.934 / 0.935** |

How they were found, on the train rows only (a scratch analysis over eight cached eflomal runs,
then this script): of hybrid's errors there, most are slot boundaries at Hindi postpositions
(``3 pm`` for gold ``3 pm ka``, ``ko Tuesday`` for ``Tuesday``) and English ``me`` matched lexically
onto Hindi ``me`` ("in"). Trimming leading postpositions measured +0.4 F1 (dev), taking them after a
slot whose English words start with a preposition +0.5, refusing lexical matches on postpositions
alone +0.2, and grow-diag-final over grow-diag-final-and +1.0 (union: the same; grow-diag and
intersection: -2 and -7). Measured and not kept (dev): extending a slot over the light verb
``karne`` (±0: the annotators include or leave out ``karne ke liye`` from row to row), romanized
spelling folding or 4-6 character prefixes before eflomal (±0.3, within the runs' spread), eflomal's
NULL prior 0.05 / 0.5 and 3x iterations (-1 to -2), 16 samplers (as 8). **Hinglish-TOP's best
measured setting is ``method="hybrid?postpositions=hi"`` with eflomal's grow-diag-final links
(validation 0.934, issue 29's target 0.92)**; it is Hindi's rule and grow-diag-final costs German
about 1.4 F1 on Europarl-NER's dev part (every row of the ``eflomal gdf`` aligner there), so both
are options (``--method 'hybrid?postpositions=hi' --symmetrization grow-diag-final`` of
``crop-hf translate-align`` and ``crop-hf evaluate-projection``), not defaults. (The older
defaults ``fill_gaps=1, pieces="largest"`` were chosen on validation before this split existed; on
train they are still the best of the rows above.)

Measured, F1 (2 shared CPU cores; eflomal takes no seed, so runs differ by about ±0.01):

| row | Europarl dev | Europarl test | Hinglish train (dev) | Hinglish validation |
| --- | ---: | ---: | ---: | ---: |
| alignment / split | 0.769 | 0.779 | 0.792 | 0.804 |
| hybrid (defaults) | 0.821 | 0.821 | 0.886 | 0.905 |
| hybrid gap 0 | 0.829 | 0.818 | – | – |
| hybrid gap 2 | 0.823 | 0.824 | – | – |
| hybrid split | 0.810 | 0.814 | 0.809 | 0.827 |
| hybrid trim | 0.831 | 0.827 | 0.884 | 0.903 |
| hybrid one word | 0.837 | 0.824 | 0.885 | 0.902 |
| hybrid fuzzy 80 | 0.824 | 0.830 | 0.844 | 0.866 |
| hybrid entities (all three) | 0.843 | 0.840 | 0.839 | 0.861 |
| hybrid german | 0.878 | – | – | – |
| hybrid german+one word | 0.884 | – | – | – |
| hybrid german+one word+fuzzy 80 | **0.883** | **0.885** | – | – |

(one run of this script, ``--corpus both --runs 2 --samplers 8``: Europarl one eflomal run,
Hinglish the mean of two.) Over four further eflomal runs (3 samplers) on Europarl, hybrid /
trim+one word / all three averaged 0.819 / 0.838 / 0.841 on dev and 0.807 / 0.817 / 0.828 on test;
over two on Hinglish train, 0.884 / 0.871 / 0.831. Image captions as extra bitext (Multi30k, one
run) did not help parliament text: hybrid dev 0.821 with them against 0.831 without, same settings.

The German rows (2026-12-03, one eflomal run with 8 samplers, shared by all rows; the other rows of
that run: hybrid 0.817 dev / 0.806 test, hybrid entities 0.824 / 0.838): per type on dev, german
LOC 0.800 MISC 0.787 ORG 0.923 PER 0.980; german+one word 0.800 / 0.809 / 0.923 / 0.980;
german+one word+fuzzy 80 0.836 / 0.804 / 0.911 / 0.980, the only row with every type at 0.80 or
more on dev, so it is the one chosen, and the only one reported on test: **F1 0.885, LOC 0.846,
MISC 0.843, ORG 0.906, PER 0.944** (issue 29's targets: 0.87, every type 0.80). The rules are
German's: Hinglish-TOP's romanized slots are lowercase and have no such list, so they are not
rows there. A second eflomal run (``--corpus europarl --runs 1``) gave dev 0.882 / 0.887 / 0.890
and test 0.882 / 0.882 / **0.888** for the three German rows (the chosen one: test LOC 0.872,
MISC 0.831, ORG 0.912, PER 0.944), against hybrid 0.821 / 0.810 and hybrid entities 0.849 / 0.832
in the same run. ``crop-hf evaluate-projection --methods
'hybrid?one_word=true&fuzzy=80&capitalized_nouns=true&function_words=de'`` scores it.

Decisions, on dev only: for names in translated text (Europarl) ``trim_edges=True, one_word=True,
fuzzy=80`` is the best measured setting (+2 F1 on dev, and +2 on test); for slots (Hinglish-TOP)
it is the worst of the hybrid rows (fuzzy matching mistakes romanized Hindi for English slot
words) and the defaults stay best. One default cannot be both, so the defaults keep the
Hinglish-TOP choice and the entity setting is the option ``crop-hf evaluate-projection
--methods hybrid 'hybrid?trim_edges=true&one_word=true&fuzzy=80'`` scores. Neither reaches issue
29's Europarl target (0.87); the German rows above do, for German. The errors left there are long
MISC titles, German compounds against several English words, nationality adjectives annotated
MISC where the English has a LOC, and wrong links that no span rule can repair.

    python benchmarks/bench_projection_quality.py --corpus europarl [--extra_parallel multi30k]
"""

from __future__ import annotations

import argparse
import csv
import statistics
import time
from pathlib import Path

from crop_hf.alignment import EflomalAligner
from crop_hf.alignment.symmetrize import symmetrize
from crop_hf.labels import spans_to_tags, tags_to_spans
from crop_hf.metrics import projection_scores
from crop_hf.projection import project_alignment, project_hybrid
from crop_hf.seqlogical import TreeTooDeepError, parse, to_flat

METHODS = ("split", "gap-fill 1", "lexical-only", "hybrid split", "hybrid", "hybrid trim", "hybrid one word",
           "hybrid fuzzy 80", "hybrid trim+one word", "hybrid entities", "hybrid hindi")
#: Hinglish-TOP rows also scored over eflomal's grow-diag-final links (every row: grow-diag-final-and, CSTOP's)
GDF_ROWS = ("hybrid", "hybrid hindi")
#: the target language's rules for Hindi (rule 9 of crop_hf.projection.alignment), Hinglish-TOP rows only
HINDI = {"postpositions": "hi"}
#: issue 29's candidates, as hybrid options (rows of both data sets)
CANDIDATES = {
    "hybrid trim": {"trim_edges": True},
    "hybrid one word": {"one_word": True},
    "hybrid fuzzy 80": {"fuzzy": 80},
    "hybrid trim+one word": {"trim_edges": True, "one_word": True},
    "hybrid entities": {"trim_edges": True, "one_word": True, "fuzzy": 80},
}


def read_pairs(path: Path) -> list[dict]:
    """Rows of a Hinglish-TOP TSV: tokens of both parses, flat slot tags where the parse is flat."""
    rows = []
    with path.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE):
            pair = {}
            for side in ("en", "cs"):
                tree = parse(row[f"{side}_parse"])
                try:
                    flat = to_flat(tree)
                    pair[side] = (flat.tokens, spans_to_tags(flat.slots, len(flat.tokens)))
                except TreeTooDeepError:
                    pair[side] = (tree.tokens, None)
            rows.append(pair)
    return rows


def project(method: str, en_tokens, en_tags, cs_tokens, links):
    if method == "split":
        return project_alignment(en_tokens, en_tags, cs_tokens, links)
    if method == "gap-fill 1":
        return project_alignment(en_tokens, en_tags, cs_tokens, links, fill_gaps=1)
    if method == "lexical-only":
        return project_hybrid(en_tokens, en_tags, cs_tokens, [])
    if method == "hybrid split":
        return project_hybrid(en_tokens, en_tags, cs_tokens, links, fill_gaps=0, pieces="split")
    options = HINDI if method == "hybrid hindi" else CANDIDATES.get(method, {})
    return project_hybrid(en_tokens, en_tags, cs_tokens, links, **options)


def score(method: str, rows: list[dict], alignments: list) -> dict:
    predicted, gold, exact_sets = [], [], 0
    for row, links in zip(rows, alignments, strict=True):
        (en_tokens, en_tags), (cs_tokens, cs_tags) = row["en"], row["cs"]
        tags = project(method, en_tokens, en_tags, cs_tokens, links).tags
        predicted.append(tags)
        gold.append(cs_tags)
        exact_sets += set(tags_to_spans(tags)) == set(tags_to_spans(cs_tags))
    scores = projection_scores(predicted, gold)
    return {"precision": scores["precision"], "recall": scores["recall"], "f1": scores["f1"],
            "exact_set": exact_sets / len(rows)}


EUROPARL_ROWS = {
    "alignment": ("alignment", {}),
    "hybrid": ("hybrid", {}),
    "hybrid gap 0": ("hybrid", {"fill_gaps": 0}),
    "hybrid gap 2": ("hybrid", {"fill_gaps": 2}),
    "hybrid split": ("hybrid", {"pieces": "split"}),
    **{name: ("hybrid", options) for name, options in CANDIDATES.items()},
    # German writes every noun capitalized (rule 7) and has closed-class words to trim (rule 8):
    # rows for this target language only, chosen on the dev part below
    "hybrid german": ("hybrid", {"capitalized_nouns": True, "function_words": "de"}),
    "hybrid german+one word": ("hybrid", {"capitalized_nouns": True, "function_words": "de", "one_word": True}),
    "hybrid german+one word+fuzzy 80": ("hybrid", {"capitalized_nouns": True, "function_words": "de",
                                                   "one_word": True, "fuzzy": 80}),
}


def europarl(args) -> None:
    """Europarl-NER en→de: align all 799 pairs, choose on the seeded dev part, report the test part."""
    import gzip
    import random

    from crop_hf.data.readers import read_europarl_ner
    from crop_hf.metrics.projection import evaluate_projection, format_projection_table
    from crop_hf.projection import tokenize_target

    shared = Path(__file__).resolve().parents[2] / "shared/data"
    en = list(read_europarl_ner(shared / "europarl-ner/en-europarl.test.conll02"))
    de = list(read_europarl_ner(shared / "europarl-ner/de-europarl.test.conll02"))
    order = list(range(len(en)))
    random.Random(args.seed).shuffle(order)
    parts = {"dev": sorted(order[:400]), "test": sorted(order[400:])}
    aligners = {"eflomal": None}
    extra = None
    if args.extra_parallel == "multi30k":
        def read(name):
            with gzip.open(shared / f"multi30k/train.{name}.gz", "rt", encoding="utf-8") as handle:
                return [tokenize_target(line.strip()).tokens for line in handle]
        extra = (read("en"), read("de"))
        aligners["eflomal+m30k"] = extra
    links = {}
    for name, bitext in aligners.items():
        started = time.perf_counter()
        source, target = [s.tokens for s in en], [s.tokens for s in de]
        if bitext is not None:
            source, target = source + bitext[0], target + bitext[1]
        forward, reverse = EflomalAligner(n_samplers=args.samplers).align_directions(source, target)
        links[name] = [symmetrize(f, r) for f, r in zip(forward[:len(en)], reverse[:len(en)], strict=True)]
        links[f"{name} gdf"] = [symmetrize(f, r, "grow-diag-final")
                                for f, r in zip(forward[:len(en)], reverse[:len(en)], strict=True)]
        print(f"{name}: {len(source)} pairs aligned in {time.perf_counter() - started:.1f} s (both directions, "
              f"symmetrized with grow-diag-final-and and, as '{name} gdf', grow-diag-final)")
    for part, chosen in parts.items():
        evaluation = evaluate_projection([en[k] for k in chosen], [de[k] for k in chosen], methods=EUROPARL_ROWS,
                                         alignments={name: [pairs[k] for k in chosen] for name, pairs in links.items()})
        print(f"\nEuroparl-NER en→de, {part} part ({len(chosen)} pairs, seed {args.seed})")
        print(format_projection_table(evaluation))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", choices=("hinglish", "europarl", "both"), default="hinglish")
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared/data/hinglish-top"))
    parser.add_argument("--runs", type=int, default=3, help="independent eflomal runs (it has no seed)")
    parser.add_argument("--samplers", type=int, default=8,
                        help="eflomal's independent samplers per run (its default, 3, varies more between runs)")
    parser.add_argument("--seed", type=int, default=0, help="Europarl-NER: the shuffle that carves dev and test")
    parser.add_argument("--extra_parallel", choices=("none", "multi30k"), default="none",
                        help="Europarl-NER: also align with Multi30k's en-de training captions as unlabelled bitext")
    args = parser.parse_args()
    if args.corpus in ("europarl", "both"):
        europarl(args)
    if args.corpus == "europarl":
        return
    data = Path(args.data)
    train, validation = read_pairs(data / "train.tsv"), read_pairs(data / "validation.tsv")
    pairs = train + validation
    scored = [k for k, row in enumerate(validation) if row["en"][1] is not None and row["cs"][1] is not None]
    print(f"Hinglish-TOP: {len(train)} train + {len(validation)} validation pairs aligned together; "
          f"{len(scored)} validation rows with both parses flat are scored")
    dev_rows = [k for k, row in enumerate(train) if row["en"][1] is not None and row["cs"][1] is not None]
    names = [*METHODS, *(f"{method} gdf" for method in GDF_ROWS)]
    results = {name: [] for name in names}
    dev_results = {name: [] for name in names}
    for run in range(args.runs):
        started = time.perf_counter()
        forward, reverse = EflomalAligner(n_samplers=args.samplers).align_directions(
            [p["en"][0] for p in pairs], [p["cs"][0] for p in pairs])
        seconds = time.perf_counter() - started
        # one eflomal run, two symmetrizations of it: the rows compare on the same samples
        by_method = {"grow-diag-final-and": [symmetrize(f, r) for f, r in zip(forward, reverse, strict=True)],
                     "grow-diag-final": [symmetrize(f, r, "grow-diag-final") for f, r in zip(forward, reverse,
                                                                                            strict=True)]}
        rows = [validation[k] for k in scored]
        print(f"\nrun {run + 1}: eflomal over {len(pairs)} pairs in {seconds:.1f} s; rows ending in 'gdf' over "
              "grow-diag-final links, the others over grow-diag-final-and")
        print(f"{'method':<20} {'P':>6} {'R':>6} {'F1':>6} {'exact set':>10}")
        for name in names:
            method, gdf = (name[:-4], True) if name.endswith(" gdf") else (name, False)
            links = by_method["grow-diag-final" if gdf else "grow-diag-final-and"]
            result = score(method, rows, [links[len(train) + k] for k in scored])
            results[name].append(result)
            print(f"{name:<20} {result['precision']:6.3f} {result['recall']:6.3f} {result['f1']:6.3f} "
                  f"{result['exact_set']:10.3f}")
            # the train rows: the dev data on which a setting is chosen
            dev_results[name].append(score(method, [train[k] for k in dev_rows], [links[k] for k in dev_rows]))
    for title, table in (("validation (reported)", results), (f"train, {len(dev_rows)} flat rows (dev: chooses)",
                                                               dev_results)):
        print(f"\nslot F1 over the runs on {title} (min / mean / max, spread):")
        for name in names:
            f1 = [r["f1"] for r in table[name]]
            print(f"{name:<20} {min(f1):.3f} / {statistics.mean(f1):.3f} / {max(f1):.3f}   "
                  f"±{(max(f1) - min(f1)) / 2:.3f}")
    hybrid, split = results["hybrid"], results["split"]
    ratio = statistics.mean(r["f1"] for r in hybrid) / statistics.mean(r["f1"] for r in split)
    print(f"\nhybrid / split slot F1: {ratio:.3f}x (target: hybrid F1 >= 0.90, runs within ±0.01)")


if __name__ == "__main__":
    main()
