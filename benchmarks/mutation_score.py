"""Mutation testing of crop-hf's core: score per module, surviving mutants, documented equivalents.

Run from the repository root::

    python benchmarks/mutation_score.py                    # mutate and test every module below
    python benchmarks/mutation_score.py markers seqlogical # only these modules
    python benchmarks/mutation_score.py --report           # print the last run's scores, run nothing
    python benchmarks/mutation_score.py --retest           # after adding tests: rerun the last survivors
    python benchmarks/mutation_score.py --resume           # an interrupted run: only mutants without a verdict

It drives mutmut 3 (configured in ``setup.cfg``'s ``[mutmut]`` section): mutmut copies the package to
``mutants/``, runs the selected test files once to learn which tests call which function, then forks
one process per mutant from a warmed-up server and runs only the tests that reached the mutated
function (stopping at the first failure). A library was preferred over a home-made AST mutator:
mutmut's per-function test mapping is exactly the "run only the tests that cover it" this needs, and
forking after loading torch and the tests once is what makes ~4,000 mutants fit in a quarter of an hour.

Run time: mutmut first runs the selected test files once (about 1.5 minutes), then the mutants.
The scope of 2026-12-02 took about 15 minutes on an idle 2-core AMD EPYC (14 min 40 s wall, 4,090
mutants; 51 minutes before the savings below); the nine modules added on 2026-12-03 (issue 32) add
3,335 mutants, about 52 minutes on their own on 2 shared cores (mostly translation.backends, whose
mutants convert checkpoints; ``mutation_scores.md``). The two added on 2026-12-04 (issue 28's
nested parser: parsing.data and the joint model's losses and decoding) add 744 mutants, about two
hours: most reach tests that train tiny parsers, so each survivor costs 20-60 s. The four added on
2026-12-06 (issue 48: engine.shards, metrics.projection, commands.evaluate_projection, app.render)
add 1,881 mutants, 79 minutes on 2 cores shared with other work (engine.shards, whose tests run
synthesis end to end, takes most of it); mutmut copies ``README.md``, ``docs/``, ``.ci/`` and
``space/`` (``also_copy``) for the tests that read them. A mutant's process
costs about 0.1 s beyond its tests: pytest's unraisableexception plugin, whose ``gc.collect()``
calls walked the heap that torch and transformers fill (0.9 of the 1.1 s each mutant took), is off
under mutmut (``pytest_add_cli_args`` in ``setup.cfg``); ``tests/conftest.py`` runs a mutant's tests fastest
first; the tiny models of the test fixtures are built once by the unmutated stats run and reused
by every mutant's process (``tests/tiny_models.session_model``); and the documented equivalent
mutants are not run (each would run every test that reaches its function, and survive;
``--run-equivalents`` runs them). Naming modules runs their mutants again from scratch; ``--resume``
after an interruption runs only the mutants that have no verdict yet, and ``--retest`` after adding
tests reruns only the survivors (about a minute).

``MODULES`` below is the scope: each core module and the functions of it that are mutated (the
rest of a file, e.g. model loading or training loops, is wiring other tests check end to end).
A module's score is killed / (mutants - equivalents); a mutant whose function no test reaches
("no tests") counts as surviving. Equivalent mutants (no test could tell them from the original)
are listed in ``benchmarks/mutation_equivalents.json``, each keyed by its function and the exact
line it changes (stable while that line is unchanged, unlike mutmut's mutant numbers), with the
reason; the report prints them and flags entries that no longer match any mutant.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EQUIVALENTS_FILE = ROOT / "benchmarks" / "mutation_equivalents.json"
TARGET = 0.85


@dataclass(frozen=True)
class Module:
    path: str  # a file listed in setup.cfg's [mutmut] only_mutate
    functions: tuple[str, ...] = ("*",)  # fnmatch patterns over function names (methods: Class.method)
    note: str = ""

    @property
    def dotted(self) -> str:
        return self.path[:-3].replace("/", ".")


MODULES: dict[str, Module] = {
    "markers": Module("crop_hf/markers.py"),
    "projection.lexical": Module("crop_hf/projection/lexical.py"),
    "projection.fuzzy": Module("crop_hf/projection/fuzzy.py"),
    "projection.alignment": Module("crop_hf/projection/alignment.py"),
    "projection.hybrid": Module("crop_hf/projection/hybrid.py"),
    "alignment.symmetrize": Module("crop_hf/alignment/symmetrize.py"),
    "readers.conll": Module("crop_hf/data/readers/conll.py"),
    "labels (tag schemes)": Module("crop_hf/labels.py", (
        "split_tag", "_check_scheme", "tags_to_spans", "spans_to_tags", "convert_tags", "iob1_to_iob2",
        "iob2_to_iob1", "iob2_to_bioes", "bioes_to_iob2", "is_valid", "repair_tags")),
    "synthesis.rows": Module("crop_hf/synthesis/rows.py"),
    "synthesis.stages": Module("crop_hf/synthesis/stages.py", (
        "SentenceRecord.*", "synthesize_shard", "process_shard", "_apply", "_provenance", "_kept", "_dropped"),
        "stage logic; SynthesisModels.load only loads checkpoints"),
    "engine.records": Module("crop_hf/engine/records.py"),
    "engine.language": Module("crop_hf/engine/language.py"),
    "engine.jobs": Module("crop_hf/engine/jobs.py"),
    "engine.options": Module("crop_hf/engine/options.py"),
    "engine.processes": Module("crop_hf/engine/processes.py"),
    "self_training": Module("crop_hf/self_training.py", ("combine_labels", "_source_tag_strings"),
                            "label combination; training itself is tests/test_self_training's end-to-end run"),
    "ner.evaluate (scoring)": Module("crop_hf/ner/evaluate.py", ("score_tags", "average_scores")),
    "seqlogical": Module("crop_hf/seqlogical.py"),
    "translation.constraints": Module("crop_hf/translation/constraints.py"),
    "translation.marker_tokens": Module("crop_hf/translation/marker_tokens.py"),
    "modeling.crf": Module("crop_hf/modeling/crf.py"),
    "metrics.parsing": Module("crop_hf/metrics/parsing.py"),
    "parsing.pipeline": Module("crop_hf/parsing/pipeline.py"),
    "augment.translate_align": Module("crop_hf/augment/translate_align.py", (
        "ParseRecord.*", "align_batch", "process_batch", "_round_trip", "TranslateAlignConfig.*",
        "TranslateAlignResult.*", "TranslateAlignJob.*", "translate_align"),
        "the funnel, shards and merge; TranslateAlignModels.load only loads the models"),
    "augment.generate_filter": Module("crop_hf/augment/generate_filter.py", (
        "signature", "neighbour_pairs", "judge_generations", "filter_generations", "GenerateFilterConfig.*", "_read",
        "GenerationPlan.*", "read_plan", "generate", "GenerateFilterResult.*", "GenerateFilterJob.*",
        "_dataset", "generate_and_filter", "AugmentedParse.*"),
        "pairs, filter, generation and the run; fine_tune is the training engine's loop, which "
        "tests/test_generate_filter's tiny BART runs end to end"),
    "translation.backends": Module("crop_hf/translation/backends.py"),
    "translation.train (loss)": Module("crop_hf/translation/train.py", ("marker_weighted_loss", "_LabelledPositions.*"),
                                       "the loss and the labelled positions; train_translation is wiring "
                                       "tests/test_translation_training runs end to end"),
    "data.builder": Module("crop_hf/data/builder.py"),
    "data.hinglish_top": Module("crop_hf/data/hinglish_top.py"),
    "synthesis.runner": Module("crop_hf/synthesis/runner.py"),
    "synthesis.config": Module("crop_hf/synthesis/config.py"),
    "parsing.substitution": Module("crop_hf/parsing/substitution.py"),
    "parsing.data": Module("crop_hf/parsing/data.py", (
        "_tree_labels", "label_sets", "frame_targets", "frame_from_targets", "row_frames", "dev_split"),
        "rows, labels, nested targets and the dev split; load_parse_rows reads a source spec, encode_rows is "
        "wiring that the training tests run end to end"),
    "modeling.joint (losses)": Module("crop_hf/modeling/modeling_joint.py", (
        "JointIntentSlotModel._gather", "JointIntentSlotModel.span_logits", "JointIntentSlotModel.inner_emissions",
        "JointIntentSlotModel.nested_loss", "JointIntentSlotModel.slot_loss", "JointIntentSlotModel.top_emissions"),
        "losses and the span heads; forward, __init__, weight init and from_encoder are wiring that every parser "
        "test runs, decode and score delegate to modeling.search"),
    "modeling.search": Module("crop_hf/modeling/search.py", ("*",),
                              "decoding and scoring given trees, flat and hierarchical"),
    "modeling.tagger": Module("crop_hf/modeling/tagger.py", ("*",),
                              "one level's emissions, loss, Viterbi and path score; compact has a test of its own"),
    "parsing.predict (scoring)": Module("crop_hf/parsing/predict.py", ("_decoded_form", "score_parses"),
                                        "gold trees scored under a model; the rest of the file is the batching "
                                        "predict_parses shares with the pipeline, which its tests run"),
    "engine.shards": Module("crop_hf/engine/shards.py"),
    "metrics.projection": Module("crop_hf/metrics/projection.py"),
    "commands.evaluate_projection": Module("crop_hf/commands/evaluate_projection.py", (
        "EvaluateProjectionConfig.*", "load_tagged", "read_parallel", "build_aligners", "run")),
    "app.render": Module("crop_hf/app/render.py"),
    "projection.insertion": Module("crop_hf/projection/insertion.py", ("*",),
                                   "insertion's search, objective, conflicts, reranking and statuses"),
    "projection.rerank": Module("crop_hf/projection/rerank.py", ("*",),
                                "the symmetric score, shortlists, candidates, choices and statuses of rerank and "
                                "hybrid_rerank"),
    "translation.scoring": Module("crop_hf/translation/scoring.py", (
        "shared_prefix", "_resumed_length", "_stack_padded", "TranslationScorer._pairs", "TranslationScorer.score_rows",
        "TranslationScorer._score_chunk", "TranslationScorer.skip", "TranslationScorer._head", "log_softmax_at",
        "_slices", "_DecoderStates.*"),
        "teacher-forced rows, resumed states, rows read from longer ones and logits read in vocabulary slices; "
        "loading, directions and the encoder pass are wiring every scored-projection test runs"),
    "registry": Module("crop_hf/registry.py"),
    "translation.apertium": Module("crop_hf/translation/apertium.py", ("*",),
                                   "pairs and packages, the HTML both ways, batches, the pair digest and the checks; "
                                   "its engine tests need Debian's apertium and apertium-eng-spa (CI installs them)"),
    "errors": Module("crop_hf/errors.py", ("*",),
                     "the fail-fast checks (models, offline mode, output paths, devices, language codes) and "
                     "their one-line messages"),
    "engine.training (publish)": Module("crop_hf/engine/training.py", ("TrainingRun.publish", "write_all_results"),
                                        "what a finished run writes and pushes; the loop itself is every "
                                        "training test's end-to-end run"),
}

_NAME = re.compile(r"^(?P<module>.+?)\.x(?:ǁ(?P<cls>[^ǁ]+)ǁ|_)(?P<func>.+)__mutmut_(?P<n>\d+)$")


def function_of(mutant: str) -> tuple[str, str]:
    """``crop_hf.markers.xǁEntityǁas_dict__mutmut_3`` -> (``crop_hf.markers``, ``Entity.as_dict``)."""
    match = _NAME.match(mutant)
    if match is None:
        raise ValueError(f"not a mutmut mutant name: {mutant}")
    cls = match["cls"]
    return match["module"], f"{cls}.{match['func']}" if cls else match["func"]


def selected(module: Module, mutant: str) -> bool:
    dotted, function = function_of(mutant)
    return dotted == module.dotted and any(fnmatch.fnmatchcase(function, p) for p in module.functions)


def changed_lines(diff: str) -> tuple[str, str]:
    """The removed and added lines of a mutant's diff, stripped: its stable description."""
    minus = [line[1:].strip() for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")]
    plus = [line[1:].strip() for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    return "\n".join(minus), "\n".join(plus)


def load_equivalents(path: Path = EQUIVALENTS_FILE) -> list[dict]:
    entries = json.loads(path.read_text(encoding="utf-8"))
    for entry in entries:
        missing = {"function", "before", "after", "reason"} - entry.keys()
        if missing or not entry["reason"].strip():
            raise ValueError(f"{path.name}: entry {entry} lacks {sorted(missing) or ['a reason']}")
    return entries


@dataclass
class Score:
    killed: int = 0
    unchecked: int = 0  # not run yet (an interrupted run): not in the score
    survivors: list[tuple[str, str]] = field(default_factory=list)  # (name, diff)
    equivalent: list[tuple[str, str]] = field(default_factory=list)  # (name, reason)

    @property
    def counted(self) -> int:
        return self.killed + len(self.survivors)


KILLED = {1, 3, 36, 24, -24, 152, 255, 37}  # a failing test, pytest error, timeout (mutmut's meanings)


def verdicts(module: Module) -> dict[str, int | None]:
    """mutmut's exit code for each mutant of the module's scored functions (``None``: not run yet)."""
    meta = ROOT / "mutants" / (module.path + ".meta")
    if not meta.exists():
        return {}
    codes = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"]
    return {name: code for name, code in sorted(codes.items(), key=lambda kv: _order(kv[0])) if selected(module, name)}


def equivalent_entry(module: Module, name: str, equivalents: list[dict]) -> tuple[int | None, str]:
    """The index of the documented equivalent that ``name`` matches (or ``None``), and the mutant's diff."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    diff = get_diff_for_mutant(name, path=module.path)
    before, after = changed_lines(diff)
    function = ".".join(function_of(name))
    match = next((i for i, e in enumerate(equivalents)
                  if e["function"] == function and e["before"] == before and e["after"] == after), None)
    return match, diff


def score(modules: dict[str, Module], equivalents: list[dict]) -> tuple[dict[str, Score], list[dict]]:
    scores: dict[str, Score] = {}
    used: set[int] = set()
    for label, module in modules.items():
        result = scores[label] = Score()
        for name, code in verdicts(module).items():
            if code in KILLED:
                result.killed += 1
                continue
            match, diff = equivalent_entry(module, name, equivalents)
            if match is not None:  # run or not: a documented equivalent is not in the score
                used.add(match)
                result.equivalent.append((name, equivalents[match]["reason"]))
            elif code is None:
                result.unchecked += 1
            else:
                status = "no test reaches it" if code in (5, 33) else ("survived" if code == 0 else f"exit {code}")
                result.survivors.append((name, f"[{status}]\n{diff}"))
    stale = [e for i, e in enumerate(equivalents) if i not in used
             and any(e["function"].startswith(m.dotted + ".") for m in modules.values())]
    return scores, stale


def forget_survivors(modules: dict[str, Module]) -> list[str]:
    """Mark surviving mutants unchecked in mutmut's result files, so ``mutmut run`` tests them again; their names."""
    names = []
    for module in modules.values():
        meta = ROOT / "mutants" / (module.path + ".meta")
        if meta.exists():
            data = json.loads(meta.read_text(encoding="utf-8"))
            codes = data["exit_code_by_key"]
            for name, code in codes.items():
                if code is not None and code not in KILLED and selected(module, name):
                    codes[name] = None
                    names.append(name)
            meta.write_text(json.dumps(data), encoding="utf-8")
    return names


def mutants_to_run(modules: dict[str, Module], equivalents: list[dict], only_unchecked: bool = False) -> list[str]:
    """The scored mutants less the documented equivalents (only those without a verdict if ``only_unchecked``).

    An equivalent mutant survives whatever the tests do, and only after every test that reaches its
    function has run: skipping the documented ones saves that time on every run
    (``--run-equivalents`` runs them anyway, e.g. to check that they still survive)."""
    return [name for module in modules.values() for name, code in verdicts(module).items()
            if (code is None or not only_unchecked)
            and not (equivalents and equivalent_entry(module, name, equivalents)[0] is not None)]


def generate_mutants(env: dict[str, str]) -> None:
    """Let mutmut write ``mutants/`` (and collect its test statistics) without running a mutant.

    mutmut generates mutants only at the start of ``mutmut run``; given a pattern that matches no
    mutant it stops right after generating them and collecting the statistics, which the next
    ``mutmut run`` loads instead of collecting them again."""
    run = subprocess.run([sys.executable, "-m", "mutmut", "run", "crop_hf.__generate_only__"],
                         check=False, env=env, capture_output=True, text=True)
    if "nothing matches" not in run.stdout + run.stderr:
        sys.exit(f"mutmut could not generate the mutants (exit {run.returncode}):\n"
                 f"{run.stdout[-3000:]}{run.stderr[-3000:]}")


def _order(name: str) -> tuple[str, int]:
    head, _, n = name.rpartition("__mutmut_")
    return head, int(n)


def report(scores: dict[str, Score], stale: list[dict], show_survivors: bool = True) -> bool:
    ok = True
    rows = []
    for label, result in scores.items():
        ratio = result.killed / result.counted if result.counted else float("nan")
        ok &= not result.counted or ratio >= TARGET
        rows.append(f"{label:<26} {result.killed:>5}/{result.counted:<5} {ratio:7.1%}   "
                    f"equivalent {len(result.equivalent):>3}   survivors {len(result.survivors):>3}"
                    + (f"   NOT RUN {result.unchecked}" if result.unchecked else ""))
        ok &= not result.unchecked
    if show_survivors:
        for label, result in scores.items():
            for name, diff in result.survivors:
                print(f"\n## survivor ({label}) {name}\n{diff}")
        print("\n# Equivalent mutants (benchmarks/mutation_equivalents.json)")
        for result in scores.values():
            for name, reason in result.equivalent:
                print(f"  {name}: {reason}")
        for entry in stale:
            print(f"  STALE (matches no mutant now): {entry['function']}: {entry['before']!r} -> {entry['after']!r}")
    print("\n# Mutation score per module (killed / non-equivalent mutants)")
    print("\n".join(rows))
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help=f"module labels (default all): {', '.join(MODULES)}")
    parser.add_argument("--report", action="store_true", help="only print the last run's results")
    parser.add_argument("--max-children", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--retest", action="store_true",
                        help="forget the last run's verdicts on survivors and test them again (after new tests)")
    parser.add_argument("--resume", action="store_true",
                        help="run only the mutants the last run left without a verdict (after an interruption)")
    parser.add_argument("--run-equivalents", action="store_true",
                        help="also run the documented equivalent mutants (skipped by default: they survive anyway)")
    parser.add_argument("--quiet", action="store_true", help="scores only, no survivor diffs")
    args = parser.parse_args(argv)
    unknown = [m for m in args.modules if m not in MODULES]
    if unknown:
        parser.error(f"unknown modules {unknown}; choose from {list(MODULES)}")
    modules = {label: MODULES[label] for label in (args.modules or MODULES)}
    os.chdir(ROOT)
    equivalents = load_equivalents()
    if args.retest and args.resume:
        parser.error("--retest and --resume are alternatives")
    if not args.report:
        started = time.monotonic()
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # mutmut puts mutants/ first
        # Naming mutants makes mutmut run them even when it holds a verdict: a plain run starts afresh,
        # --resume names only the mutants without one, --retest only the last survivors.
        if args.retest:
            names = forget_survivors(modules)
        else:
            generate_mutants(env)
            names = mutants_to_run(modules, [] if args.run_equivalents else equivalents, only_unchecked=args.resume)
        if names:
            subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", str(args.max_children), *names],
                           check=False, env=env, stdout=subprocess.DEVNULL)
        print(f"mutmut ran {len(names)} mutants in {time.monotonic() - started:.0f} s")
    scores, stale = score(modules, equivalents)
    return 0 if report(scores, stale, not args.quiet) else 1


if __name__ == "__main__":
    sys.exit(main())
