"""``crop-hf evaluate-projection``: every projection method and aligner scored against a gold-tagged translation.

    crop-hf evaluate-projection --source "europarl_ner:en?data_dir=data/europarl-ner" \\
        --target "europarl_ner:de?data_dir=data/europarl-ner" --output_dir out/projection-en-de
    crop-hf evaluate-projection --source "hinglish_top?data_dir=data/hinglish-top#en" \\
        --target "hinglish_top?data_dir=data/hinglish-top" --split validation \\
        --extra_parallel "hinglish_top?data_dir=data/hinglish-top#en" "hinglish_top?data_dir=data/hinglish-top" \\
        --extra_split train --output_dir out/projection-hinglish
    # the Hindi postposition rule beside the defaults, over both symmetrizations
    crop-hf evaluate-projection --source "hinglish_top?data_dir=data/hinglish-top#en" \\
        --target "hinglish_top?data_dir=data/hinglish-top" --split validation --flat_only \\
        --methods hybrid "hybrid?postpositions=hi" --symmetrization grow-diag-final-and grow-diag-final
    # methods scored by translation models: one row per method and model (each with its sentences/s)
    crop-hf evaluate-projection --source "europarl_ner:en?data_dir=data/europarl-ner" \\
        --target "europarl_ner:de?data_dir=data/europarl-ner" --methods hybrid insertion rerank hybrid_rerank \\
        --scorer_models markers=out/m2m100-markers m2m=facebook/m2m100_418M --src_lang en --tgt_lang de

Sentence k of ``--target`` must be the translation of sentence k of ``--source``; both need tokens
and gold tags (``ner_tags``, or ``slot_tags`` for semantic parses; ``#en`` after a spec reads a
parallel corpus's ``en_*`` columns). The pairs are aligned once per aligner (eflomal with
grow-diag-final-and; ``--symmetrization grow-diag-final-and grow-diag-final`` scores eflomal rows for
both; ``--aligners eflomal embedding --encoder NAME`` adds SimAlign over that encoder), every
method of the projection registry projects the source tags onto the target's tokens, and the
table of P/R/F1 (all sentences and kept ones), shares kept and projected, F1 per type, errors and
speed is printed and written to ``OUTPUT_DIR`` as ``projection.txt``,
``projection.md`` and ``projection.json``, with ``projection.png`` when matplotlib is installed
(``pip install 'crop-hf[report]'``). Lexical and fuzzy methods look for each source entity's own
words (no translation of the entity is known): see :mod:`crop_hf.metrics.projection`.

``--scorer_models`` adds the methods scored by a translation model (``insertion`` needs a
marker-trained model, ``rerank``/``hybrid_rerank`` any multilingual one), one row per method and
model, a ``model`` column in the table; each method is scored with the models that suit it, and
the table is followed by a ``skipped:`` line per other pair saying why (a method no model suits is
an error). Each is loaded on ``--device`` and scores
``--src_lang`` → ``--tgt_lang`` (codes of its family).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from crop_hf.alignment import EflomalAligner, EmbeddingAligner
from crop_hf.alignment.symmetrize import DEFAULT_SYMMETRIZATION
from crop_hf.console import setup_logging
from crop_hf.data.features import tag_strings
from crop_hf.data.readers import iter_lines
from crop_hf.data.sources import load_spec, names_a_file, split_side
from crop_hf.errors import EmptyInputError, check_device, check_model, check_output_path, naming, reaching
from crop_hf.metrics.projection import evaluate_projection, format_projection_table
from crop_hf.projection.methods import get_method
from crop_hf.report import plots
from crop_hf.translation.scoring import TranslationScorer

#: Tag columns read from a corpus, first found wins (after a ``#side`` prefix).
TAG_COLUMNS = ("ner_tags", "slot_tags", "tags")


@dataclass
class EvaluateProjectionConfig:
    """Options of ``crop-hf evaluate-projection``."""

    source: str = field(metadata={"help": "Source spec of the labeled source sentences: "
                                          "'europarl_ner:en?data_dir=...', 'hinglish_top?data_dir=...#en', "
                                          "conll5:en, disk:PATH, a datasets folder (see crop_hf.data.sources)."})
    target: str = field(metadata={"help": "Source spec of the gold-tagged target sentences, row k the translation "
                                          "of source row k."})
    split: str | None = field(default=None, metadata={"help": "Split of both corpora to score (by default the "
                                                               "only split, or 'test')."})
    methods: list[str] | None = field(default=None, metadata={
        "help": "Projection methods to score (by default every registered one), each optionally with options, "
                "one row each: hybrid 'hybrid?trim_edges=true&one_word=true&threshold=80' 'alignment?fill_gaps=1'."})
    aligners: list[str] = field(default_factory=lambda: ["eflomal"], metadata={
        "help": "Aligners: eflomal (grow-diag-final-and) and/or embedding (SimAlign over --encoder)."})
    encoder: str = field(default="google-bert/bert-base-multilingual-cased",
                         metadata={"help": "Encoder of the embedding aligner (a folder or Hub id)."})
    layer: int = field(default=8, metadata={"help": "Encoder layer of the embedding aligner."})
    device: str | None = field(default=None, metadata={"help": "Device of the embedding aligner and the scorer "
                                                                "models (cpu, cuda:0; by default cuda when there is "
                                                                "one)."})
    scorer_models: list[str] | None = field(default=None, metadata={
        "help": "Translation models for the model-scored methods (insertion, rerank, hybrid_rerank), one row per "
                "method and model: NAME=PATH_OR_HUB_ID, or just the path (named by its last part)."})
    src_lang: str | None = field(default=None, metadata={
        "help": "Language of --source as the scorer models' family writes it (en; eng_Latn for NLLB)."})
    tgt_lang: str | None = field(default=None, metadata={
        "help": "Language of --target as the scorer models' family writes it (de; deu_Latn for NLLB)."})
    symmetrization: list[str] = field(default_factory=lambda: ["grow-diag-final-and"], metadata={
        "help": "How eflomal's two directions are joined; several give one eflomal row each, named "
                "'eflomal (METHOD)' (grow-diag-final-and, CSTOP's, is plain 'eflomal'): grow-diag-final "
                "projects better onto Hinglish, grow-diag-final-and onto German."})
    samplers: int = field(default=3, metadata={"help": "eflomal's independent samplers (more vary less between "
                                                        "runs; eflomal takes no seed)."})
    extra_parallel: list[str] | None = field(default=None, metadata={
        "help": "Unlabelled bitext aligned with the pairs by eflomal (better priors), not scored: two source "
                "specs (source side, target side) or two text files of one tokenized sentence a line."})
    extra_split: str = field(default="train", metadata={"help": "Split of --extra_parallel source specs."})
    flat_only: bool = field(default=False, metadata={"help": "Skip rows whose parse nests an intent in a slot on "
                                                              "either side (the corpus's 'nested' columns)."})
    max_samples: int | None = field(default=None, metadata={"help": "Score only the first N sentence pairs."})
    output_dir: str | None = field(default=None, metadata={"help": "Write projection.txt, .md, .json "
                                                                    "(and .png with matplotlib) here."})
    show_progress: bool = field(default=True, metadata={"help": "Show progress bars "
                                                                 "(--no_show_progress hides every bar)."})


    def __post_init__(self) -> None:
        scored = [method for method in self.methods or () if get_method(method).uses_scorer]
        if scored and not self.scorer_models:  # said before any corpus is read
            raise ValueError(f"--methods {' '.join(scored)} score spans with a translation model: give "
                             "--scorer_models NAME=PATH (with --src_lang and --tgt_lang)")
        if (self.src_lang or self.tgt_lang) and not self.scorer_models:
            raise ValueError("--src_lang and --tgt_lang are the direction of --scorer_models, which is not given")


CONFIG_CLASSES = (EvaluateProjectionConfig,)


def load_tagged(spec: str, split: str | None = None,
                option: str | None = None) -> tuple[list[tuple[list[str], list[str]]], list[bool] | None]:
    """``(tokens, IOB2 tags)`` of every row of one split of a source spec, and each row's ``nested`` flag if any.

    ``#side`` after the spec reads that side's columns (``en_tokens``, ``en_slot_tags``, ...). With
    ``option`` (``"--source"``), the errors name it, and a split without a sentence is an
    :class:`~crop_hf.errors.EmptyInputError`.
    """
    import datasets

    where = f"{option} {spec}" if option else spec
    body, side = split_side(spec)
    loaded = load_spec(body, splits=[split] if split else None)
    if isinstance(loaded, datasets.DatasetDict):
        if split is None:
            split = next(iter(loaded)) if len(loaded) == 1 else "test" if "test" in loaded else None
            if split is None:
                raise KeyError(f"{where}: several splits ({', '.join(loaded)}); choose one with --split")
        if split not in loaded:
            raise KeyError(f"{where}: no {split!r} split (has {', '.join(loaded)})")
        loaded = loaded[split]
    prefix = f"{side}_" if side else ""
    tokens_column = prefix + "tokens"
    tag_column = next((prefix + c for c in TAG_COLUMNS if prefix + c in loaded.column_names), None)
    if tokens_column not in loaded.column_names or tag_column is None:
        raise KeyError(f"{where}: needs {tokens_column!r} and one of {[prefix + c for c in TAG_COLUMNS]} "
                       f"(columns: {loaded.column_names})")
    if option and not len(loaded):
        raise EmptyInputError(f"{where}: no sentences" + (f" in its {split!r} split" if split else ""))
    rows = list(zip(loaded[tokens_column], tag_strings(loaded, column=tag_column), strict=True))
    nested = loaded[prefix + "nested"] if prefix + "nested" in loaded.column_names else None
    return [(list(tokens), list(tags)) for tokens, tags in rows], nested


def read_parallel(items: list[str], split: str) -> tuple[list[list[str]], list[list[str]]]:
    """``--extra_parallel``: two source specs (their token columns) or two text files (whitespace tokens)."""
    from pathlib import Path

    if len(items) != 2:
        raise ValueError(f"--extra_parallel takes two items (source side, target side), got {len(items)}")
    sides = []
    for item in items:
        if Path(item).is_file():
            sides.append([text.split() for _, text in iter_lines(item, "utf-8") if text is not None])
            if not any(sides[-1]):
                raise EmptyInputError(f"--extra_parallel {item}: no sentences (blank lines are skipped)")
        elif names_a_file(item) and not Path(item).exists():
            raise FileNotFoundError(f"--extra_parallel: no file {item}")
        else:
            sides.append([tokens for tokens, _ in load_tagged(item, split, "--extra_parallel")[0]])
    if len(sides[0]) != len(sides[1]):
        raise ValueError(f"--extra_parallel: {len(sides[0])} source but {len(sides[1])} target sentences")
    return sides[0], sides[1]


def build_aligners(config: EvaluateProjectionConfig) -> dict:
    unknown = [name for name in config.aligners if name not in ("eflomal", "embedding")]
    if unknown:  # before the encoder of an embedding aligner named first loads
        raise ValueError(f"unknown aligner {unknown[0]!r}; expected eflomal or embedding")
    aligners = {}
    for name in config.aligners:
        if name == "eflomal":
            for method in config.symmetrization:
                named = name if method == DEFAULT_SYMMETRIZATION else f"{name} ({method})"
                aligners[named] = EflomalAligner(n_samplers=config.samplers, symmetrization=method)
        elif name == "embedding":
            options = {"layer": config.layer}
            if config.device is not None:
                options["device"] = config.device
            with naming("--encoder"):  # the aligner's loader checks the encoder, as every command's
                aligners[f"embedding ({config.encoder.rsplit('/', 1)[-1]})"] = EmbeddingAligner.from_pretrained(
                    config.encoder, **options)
    return aligners


def scorer_names(items: list[str]) -> dict[str, str]:
    """``--scorer_models``: ``NAME=PATH`` items (or a bare path, named by its last part) as ``{name: path}``.

    >>> scorer_names(["markers=out/m2m-markers", "facebook/m2m100_418M"])
    {'markers': 'out/m2m-markers', 'm2m100_418M': 'facebook/m2m100_418M'}
    """
    named: dict[str, str] = {}
    for item in items:
        name, found, path = item.partition("=")
        name, path = (name, path) if found else (item.rstrip("/\\").rsplit("/", 1)[-1], item)
        if not name or not path:
            raise ValueError(f"--scorer_models: {item!r} is not NAME=PATH or a path")
        if name in named:
            raise ValueError(f"--scorer_models: two models are named {name!r}; name them NAME=PATH")
        named[name] = path
    return named


def build_scorers(config: EvaluateProjectionConfig) -> dict:
    """The translation models of ``--scorer_models`` as scorers of ``--src_lang`` → ``--tgt_lang``, by name."""
    if not config.scorer_models:
        return {}
    scorers = {}
    for name, path in scorer_names(config.scorer_models).items():
        with reaching(path, f"scorer model {name!r}"):
            scorers[name] = TranslationScorer.from_pretrained(path, config.src_lang, config.tgt_lang,
                                                              device=config.device)
    return scorers


def run(config: EvaluateProjectionConfig) -> int:
    import json
    import logging
    from pathlib import Path

    setup_logging()
    logger = logging.getLogger("crop_hf.commands.evaluate_projection")
    # every mistake before the first model loads or alignment runs: the output folder, the device, the
    # scorer models, every corpus (the encoder is checked as it loads, first of the models)
    if config.output_dir:
        check_output_path(config.output_dir, "--output_dir")
    if config.device:
        check_device(config.device)
    for name, path in scorer_names(config.scorer_models or []).items():
        check_model(path, f"scorer model {name!r} (--scorer_models)")
    source, source_nested = load_tagged(config.source, config.split, "--source")
    target, target_nested = load_tagged(config.target, config.split, "--target")
    if len(source) != len(target):
        raise ValueError(f"{config.source} has {len(source)} rows but {config.target} has {len(target)}: row k of the "
                         "target must be the translation of row k of the source")
    keep = list(range(len(source)))
    if config.flat_only:
        keep = [k for k in keep if not (source_nested and source_nested[k]) and not (target_nested and target_nested[k])]
    if config.max_samples is not None:
        keep = keep[:config.max_samples]
    source, target = [source[k] for k in keep], [target[k] for k in keep]
    extra = read_parallel(config.extra_parallel, config.extra_split) if config.extra_parallel else None
    evaluation = evaluate_projection(source, target, methods=config.methods, aligners=build_aligners(config),
                                     extra_parallel=extra, scorers=build_scorers(config))
    table = format_projection_table(evaluation)
    aligned = "; ".join(f"{name}: {info['pairs']} pairs in {info['seconds']:.1f} s"
                        for name, info in evaluation.aligners.items())
    print(f"{evaluation.sentences} sentence pairs, {evaluation.source_entities} source and "
          f"{evaluation.gold_entities} gold target entities" + (f" ({aligned})" if aligned else ""))
    print(table)
    for method, model, why in evaluation.skipped:
        print(f"skipped: {method} with {model}: {why}")
    if config.output_dir:
        folder = Path(config.output_dir)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "projection.txt").write_text(table + "\n", encoding="utf-8")
        (folder / "projection.md").write_text(format_projection_table(evaluation, style="markdown") + "\n",
                                              encoding="utf-8")
        payload = {"source": config.source, "target": config.target, "split": config.split, **evaluation.to_dict()}
        (folder / "projection.json").write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
        try:
            plots.require_matplotlib()
        except ImportError as error:
            logger.warning("no plot: %s", error)
            print(f"no plot: {error}")
        else:
            plots.draw_projection_evaluation(evaluation, folder / "projection.png")
        print(f"written to {folder}")
    return 0
