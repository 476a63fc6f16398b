"""The projection methods, one row each: what the ``projection`` pipeline and corpus synthesis both call.

A method takes a :class:`ProjectionExample` (the target sentence plus what the method reads:
translated entities for ``lexical``/``fuzzy``, labeled source words and an alignment for
``alignment`` and ``hybrid``, which matches the source words (or translated entities, when
given) lexically first) and options, and returns a :class:`~crop_hf.projection.ProjectionResult`.
:func:`project_examples` runs one method over a batch, aligning in one go the examples that
have no alignment yet (eflomal and embedding aligners both work best on many pairs at once).

Three methods score spans with a translation model, given to :func:`project_examples` as
``scorer=`` (a :class:`~crop_hf.translation.scoring.TranslationScorer`, the way ``aligner=`` is
given): ``insertion`` (a marker-trained model places each span's markers in the fixed target,
:mod:`crop_hf.projection.insertion`), ``rerank`` and ``hybrid_rerank`` (a plain model ranks
candidate spans, :mod:`crop_hf.projection.rerank`). Their rows say ``uses_scorer``; their
functions take the whole batch, so that model passes are batched across sentences. Each row may
also say how to check a scorer before any work (:func:`check_scorer`: insertion, a model with the
marker style's tokens; reranking, a model with the reverse direction), which every entry point
that loads a model calls right after loading it (``pipeline("projection")``, ``crop-hf
evaluate-projection``, synthesis, translate-and-align).

A new method is one :class:`ProjectionMethod` row in :data:`PROJECTION_METHODS`
(:func:`register_method`, from your own code too); callers never switch on method names. Wherever a
method is named (``method=`` of the pipeline, synthesis, translate-and-align, ``crop-hf
evaluate-projection --methods``) it may carry options the way a source spec does:
``"hybrid?trim_edges=true&one_word=true&threshold=80"`` (:func:`parse_method`), read by the method's
options dataclass (:mod:`crop_hf.projection.options`), which is what its function receives.

A run reads its spec once: :func:`resolve_method` gives a :class:`ResolvedMethod` (the spec as
written, the method's row and its checked options), which the synthesis and translate-and-align
configs build in ``__post_init__`` and keep as ``config.projection``; every step of the run asks
it (``uses_scorer``, ``check_scorer``, ``project``, ``placement``, ``foreign_rules``) instead of
parsing the string again. The functions that take a spec string (:func:`project_examples`,
:func:`check_scorer`, :func:`placement`, :func:`foreign_rules`, ...) resolve it on each call, for
callers that name a method once.

>>> from crop_hf.projection.methods import ProjectionExample, project_examples
>>> from crop_hf.projection import tokenize_target
>>> example = ProjectionExample(tokenize_target("Ich wohne in Göteborg ."), entities=[("Göteborg", "LOC")])
>>> project_examples("lexical", [example])[0].tags
['O', 'O', 'O', 'B-LOC', 'O']
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from crop_hf.data.sources import parse_query
from crop_hf.labels import Span
from crop_hf.projection.alignment import project_alignment
from crop_hf.projection.fuzzy import project_fuzzy
from crop_hf.projection.hybrid import project_hybrid
from crop_hf.projection.insertion import check_insertion, project_insertion
from crop_hf.projection.lexical import project_lexical
from crop_hf.projection.options import (
    AlignmentOptions,
    FuzzyOptions,
    HybridOptions,
    HybridRerankOptions,
    InsertionOptions,
    LexicalOptions,
    ProjectionOptions,
    RerankOptions,
)
from crop_hf.projection.rerank import check_rerank, project_hybrid_rerank, project_rerank
from crop_hf.projection.result import ProjectionResult
from crop_hf.projection.target import TargetSentence
from crop_hf.registry import Registry
from crop_hf.translation.scoring import require_scorer

__all__ = [
    "PROJECTION_METHODS",
    "ProjectionExample",
    "ProjectionMethod",
    "ResolvedMethod",
    "align_missing",
    "check_scorer",
    "foreign_rules",
    "get_method",
    "language_rules",
    "method_help",
    "method_options",
    "parse_method",
    "placement",
    "project_examples",
    "register_method",
    "resolve_method",
    "run_method",
    "word_spans",
]


@dataclass
class ProjectionExample:
    """One sentence to project onto: the tokenized target and what the method reads."""

    target: TargetSentence
    #: lexical/fuzzy: a labeled-translation output, its ``entities`` list, or ``(text, label)`` pairs
    entities: Any = None
    #: alignment: the source words, their entity spans, and ``(source, target)`` word links if known
    source_tokens: list[str] | None = None
    source_spans: list[Span] = field(default_factory=list)
    alignment: list[tuple[int, int]] | None = None


@dataclass(frozen=True)
class ProjectionMethod:
    """A projection method: its function, its options class, and what it needs."""

    name: str
    #: ``function(example, options)``: a :class:`ProjectionExample` and an instance of ``options_class``;
    #: with ``uses_scorer``, ``function(examples, options, scorer)``: the whole batch and the scorer
    function: Callable[..., Any]
    #: the method's options (a :class:`~crop_hf.projection.options.ProjectionOptions` dataclass)
    options_class: type[ProjectionOptions]
    #: whether it reads source spans through a word alignment (else translated entities)
    uses_alignment: bool
    #: CroP drops sentences whose entities are not all found; CSTOP keeps every translation
    drop_incomplete: bool
    #: whether it scores spans with a translation model (``project_examples(..., scorer=...)``)
    uses_scorer: bool = False
    #: ``check(options, scorer)``: raise the ``ValueError`` the method would raise on its first batch
    #: with ``scorer`` (a model without the markers it needs, a direction it lacks); see :func:`check_scorer`
    check: Callable[[Any, Any], None] | None = None

    @property
    def options(self) -> tuple[str, ...]:
        """The option names the method accepts (others are an error naming them)."""
        return self.options_class.names()


def _lexical(example: ProjectionExample, options: LexicalOptions) -> ProjectionResult:
    return project_lexical(example.target, example.entities, **options.arguments())


def _fuzzy(example: ProjectionExample, options: FuzzyOptions) -> ProjectionResult:
    return project_fuzzy(example.target, example.entities, **options.arguments())


def _aligned(example: ProjectionExample, method: str) -> tuple:
    """The source words, spans, target and links an alignment-based method reads."""
    if example.alignment is None:
        raise ValueError(f"{method} projection needs an alignment for every example (see align_missing)")
    return example.source_tokens, example.source_spans, example.target, example.alignment


def _alignment(example: ProjectionExample, options: AlignmentOptions) -> ProjectionResult:
    return project_alignment(*_aligned(example, "alignment"), **options.arguments())


def _hybrid(example: ProjectionExample, options: HybridOptions) -> ProjectionResult:
    return project_hybrid(*_aligned(example, "hybrid"), entities=example.entities, **options.arguments())


#: name -> method. ``method=`` everywhere (pipeline, synthesis, commands) is a name of this registry;
#: installed packages add methods through the ``crop_hf_projection_methods`` entry-point group.
PROJECTION_METHODS: Registry[ProjectionMethod] = Registry("projection method", group="crop_hf_projection_methods",
                                                          item_type=ProjectionMethod)


def register_method(name: str, function: Callable[..., Any] | None = None,
                    options: type[ProjectionOptions] = ProjectionOptions, *, uses_alignment: bool = False,
                    drop_incomplete: bool = True, uses_scorer: bool = False,
                    check: Callable[[Any, Any], None] | None = None, replace: bool = False) -> Any:
    """Add a projection method, usable by name wherever a method is named; without ``function``, a decorator.

    ``function(example, options)`` projects one :class:`ProjectionExample` with an instance of
    ``options``, a dataclass subclassing :class:`~crop_hf.projection.options.ProjectionOptions`
    (whose ``drop_incomplete`` arrives resolved: ``drop_incomplete`` here is the method's default).
    With ``uses_alignment`` the examples reach it with their word alignment (an aligner fills in
    missing ones); otherwise they carry translated ``entities``. With ``uses_scorer`` the method
    scores spans with a translation model: ``function(examples, options, scorer)`` projects a whole
    batch (a list of examples, a result each) with the :class:`~crop_hf.translation.scoring.TranslationScorer`
    given to :func:`project_examples`; ``check(options, scorer)``, if given, raises at once what the
    method would raise on its first batch with that scorer (:func:`check_scorer`). A taken name is
    an error unless ``replace=True``.
    """
    if not (isinstance(options, type) and issubclass(options, ProjectionOptions)):
        raise TypeError(f"the options of projection method {name!r} must subclass ProjectionOptions, got {options!r}")

    def register(function: Callable[..., Any]) -> Callable:
        method = ProjectionMethod(name, function, options, uses_alignment, drop_incomplete, uses_scorer, check)
        PROJECTION_METHODS.register(name, method, replace=replace)
        return function

    return register if function is None else register(function)


register_method("lexical", _lexical, LexicalOptions)
register_method("fuzzy", _fuzzy, FuzzyOptions)
register_method("alignment", _alignment, AlignmentOptions, uses_alignment=True, drop_incomplete=False)
register_method("hybrid", _hybrid, HybridOptions, uses_alignment=True, drop_incomplete=False)
register_method("insertion", project_insertion, InsertionOptions, uses_scorer=True, check=check_insertion)
register_method("rerank", project_rerank, RerankOptions, uses_scorer=True, drop_incomplete=False, check=check_rerank)
register_method("hybrid_rerank", project_hybrid_rerank, HybridRerankOptions, uses_alignment=True, uses_scorer=True,
                drop_incomplete=False, check=check_rerank)


def method_help(text: str, usable: Callable[[ProjectionMethod], bool] | None = None) -> Callable[[], str]:
    """A ``--method`` help text whose ``{methods}`` names the methods registered when ``--help`` is built.

    The option's ``metadata={"help": method_help(...)}``: :func:`crop_hf.arguments.build_parser`
    calls it, so an installed package's methods are listed beside the built-ins, never a list
    written once by hand. ``usable`` keeps only the methods a command can run.

    >>> method_help("one of {methods}", lambda method: method.uses_scorer)()
    'one of insertion, rerank, hybrid_rerank'
    """
    def render() -> str:
        names = [name for name, method in PROJECTION_METHODS.items() if usable is None or usable(method)]
        return text.format(methods=", ".join(names))

    return render


def parse_method(text: str) -> tuple[str, dict[str, Any]]:
    """``"hybrid?trim_edges=true&threshold=80"`` → ``("hybrid", {"trim_edges": True, "threshold": 80.0})``.

    A method name with options written as a source spec writes its ``?key=value&...``; the
    options given are read by the method's options class (``ValueError`` for an unknown method,
    an option it does not take or a value of the wrong type).
    """
    name, _, query = text.partition("?")
    options_class = PROJECTION_METHODS.get(name).options_class
    written = options_class.spelled_now(parse_query(query, f"method {text!r}", str), name)
    options = options_class.parse(written, name)
    return name, {key: getattr(options, key) for key in written}


def get_method(name: str) -> ProjectionMethod:
    """The method called ``name`` (``ValueError`` listing the known ones otherwise).

    ``name`` may carry options (``"hybrid?threshold=80"``): they are checked against the method's.
    """
    return PROJECTION_METHODS[parse_method(name)[0]]


def resolve_method(spec: str, **options) -> ResolvedMethod:
    """The method a spec names and the options it runs with (the spec's, overridden by ``options``), read once.

    ``drop_incomplete`` left unset is the method's own default. An option the method does not
    take is a ``TypeError``, as an unknown keyword argument is; a value its options refuse is a
    ``ValueError`` naming the method and the option.

    >>> resolved = resolve_method("hybrid?threshold=80", one_word=True)
    >>> resolved.name, resolved.options.threshold, resolved.options.one_word, resolved.drop_incomplete
    ('hybrid', 80.0, True, False)
    """
    name, written = parse_method(spec)
    chosen = PROJECTION_METHODS[name]
    check_options(chosen, options)
    return ResolvedMethod(spec, chosen, _default_drop(chosen, chosen.options_class.build({**written, **options},
                                                                                          chosen.name)))


def _default_drop(method: ProjectionMethod, options: ProjectionOptions) -> ProjectionOptions:
    """``options`` with ``drop_incomplete`` left unset filled with the method's rule."""
    if options.drop_incomplete is None:
        return dataclasses.replace(options, drop_incomplete=method.drop_incomplete)
    return options


def method_options(method: str, **options) -> tuple[ProjectionMethod, ProjectionOptions]:
    """The method a spec names and the options it runs with: :func:`resolve_method` as a pair."""
    resolved = resolve_method(method, **options)
    return resolved.method, resolved.options


#: Languages that capitalize every noun: where ``capitalized_nouns`` (alignment rule 7) holds.
CAPITALIZING_LANGUAGES = frozenset({"de", "lb"})


@dataclass(frozen=True)
class ResolvedMethod:
    """A method spec read once: what a run holds and passes down instead of the string.

    Built by :func:`resolve_method`; ``options`` is an instance of the method's options class,
    checked and with ``drop_incomplete`` filled in. Not a field of any config: the configs keep
    the spec string (what their fingerprint and card say) and this beside it.
    """

    #: the spec as written (``"hybrid?threshold=80"``)
    spec: str
    #: the method's row of :data:`PROJECTION_METHODS`
    method: ProjectionMethod
    #: the options it runs with
    options: ProjectionOptions

    @property
    def name(self) -> str:
        return self.method.name

    @property
    def uses_alignment(self) -> bool:
        return self.method.uses_alignment

    @property
    def uses_scorer(self) -> bool:
        return self.method.uses_scorer

    @property
    def drop_incomplete(self) -> bool:
        return bool(self.options.drop_incomplete)

    @property
    def marker_style(self) -> str | None:
        """The marker style of a method that writes markers (``insertion``); ``None`` for the others."""
        return getattr(self.options, "marker_style", None)

    def with_options(self, **options) -> ResolvedMethod:
        """The same method with ``options`` over its own (not read from the spec again)."""
        if not options:
            return self
        check_options(self.method, options)
        values = {item.name: getattr(self.options, item.name) for item in dataclasses.fields(self.options)
                  if item.init}
        resolved = self.method.options_class.build({**values, **options}, self.name)
        return dataclasses.replace(self, options=_default_drop(self.method, resolved))

    def project(self, examples: Sequence[ProjectionExample], *, aligner: Any = None,
                scorer: Any = None) -> list[ProjectionResult]:
        """Project every example (:func:`run_method` with this method and options)."""
        return run_method(self.method, self.options, examples, aligner=aligner, scorer=scorer)

    def check_scorer(self, scorer: Any) -> None:
        """Raise now the error the method would raise on its first batch with ``scorer`` (:func:`check_scorer`)."""
        if not self.uses_scorer:
            return
        require_scorer(scorer, self.name)
        if self.method.check is not None:
            self.method.check(self.options, scorer)

    def language_rules(self) -> list[tuple[str, frozenset[str]]]:
        """The options that hold for some languages only: ``(option as written, languages)`` (:func:`language_rules`)."""
        options = self.options
        rules = [("capitalized_nouns", CAPITALIZING_LANGUAGES)] if getattr(options, "capitalized_nouns", None) else []
        rules += [(f"{name}={getattr(options, name)}", frozenset({getattr(options, name).lower()}))
                  for name in ("function_words", "postpositions") if isinstance(getattr(options, name, None), str)]
        return rules

    def foreign_rules(self, tgt_langs: Sequence[str]) -> list[str]:
        """One line per language-tied option used for a target language it was not written for (:func:`foreign_rules`)."""
        lines = []
        for rule, languages in self.language_rules():
            for lang in tgt_langs:
                if re.split(r"[-_]", lang)[0].lower() not in languages:
                    lines.append(f"projection option {rule} is written for {', '.join(sorted(languages))}, not for "
                                 f"target language {lang}: it may cost F1 there; leave it out of the method for {lang}")
        return lines

    def placement(self) -> str | None:
        """How a model-scored method put the labels on the raw sentences (:func:`placement`); ``None`` otherwise."""
        if not self.uses_scorer:
            return None
        if self.marker_style is not None:
            how = (f"placed by insertion into the raw sentence: the translation model itself chose where the "
                   f"{self.marker_style} markers of each entity go in the raw sentence, given the tagged source "
                   "translation")
        else:
            how = ("placed by the translation model itself, which ranked candidate spans of the raw sentence against "
                   "each entity of the tagged source translation")
        return f"{how} ({self.name} projection; no labeled back-translation)"


def language_rules(method: str) -> list[tuple[str, frozenset[str]]]:
    """The options of a method spec that hold for some languages only: ``(option as written, languages)``.

    ``capitalized_nouns`` holds where every noun is capitalized (German, Luxembourgish); a
    ``function_words`` or ``postpositions`` list given by its language code holds for that language.

    >>> [(rule, sorted(languages)) for rule, languages in language_rules("hybrid?capitalized_nouns=true&postpositions=hi")]
    [('capitalized_nouns', ['de', 'lb']), ('postpositions=hi', ['hi'])]
    >>> language_rules("hybrid?threshold=80")
    []
    """
    return resolve_method(method).language_rules()


def foreign_rules(method: str, tgt_langs: Sequence[str]) -> list[str]:
    """One line per language-tied option of ``method`` used for a target language it was not written for.

    Such a rule costs F1 elsewhere: German's ``capitalized_nouns`` and ``function_words=de`` cost
    9 and 20 F1 on Spanish and Italian Europarl-NER (Romance names end in lowercase words). A
    code's region or script part is ignored (``hi_Latn`` is ``hi``). Corpus runs log these lines.

    >>> foreign_rules("hybrid?postpositions=hi", ["hi", "es"])  # doctest: +NORMALIZE_WHITESPACE
    ['projection option postpositions=hi is written for hi, not for target language es: it may cost F1
      there; leave it out of the method for es']
    """
    return resolve_method(method).foreign_rules(tgt_langs)


def align_missing(examples: Sequence[ProjectionExample], aligner: Any) -> None:
    """Fill in the alignment of every example that has none, aligning them all in one call.

    ``aligner`` is anything with ``align(source_words, target_words) -> list of (i, j) pairs``
    (:class:`~crop_hf.alignment.EmbeddingAligner`, :class:`~crop_hf.alignment.EflomalAligner`).
    """
    todo = [example for example in examples if example.alignment is None]
    if not todo:
        return
    if aligner is None:
        raise ValueError("alignment projection needs an 'alignment' in each input or an aligner: build the pipeline "
                         "with pipeline('projection', model=<encoder>) or aligner=...")
    if any(example.source_tokens is None for example in todo):
        raise ValueError("aligning needs 'source_tokens' in every input without an 'alignment'")
    links = aligner.align([example.source_tokens for example in todo], [example.target.tokens for example in todo])
    for example, pairs in zip(todo, links, strict=True):
        example.alignment = [tuple(pair) for pair in pairs]


def check_options(method: ProjectionMethod, options: Mapping[str, Any]) -> None:
    unknown = sorted(set(options) - set(method.options))
    if unknown:
        raise TypeError(f"projection method {method.name!r} takes no option(s) {unknown}; "
                        f"it takes {', '.join(method.options)}")


def project_examples(method: str, examples: Sequence[ProjectionExample], *, aligner: Any = None,
                     scorer: Any = None, **options) -> list[ProjectionResult]:
    """Project every example with ``method`` (aligning the ones without an alignment first, for ``alignment``).

    ``options`` given here win over those written in ``method`` (:func:`resolve_method`). A method
    that scores spans with a translation model (``insertion``, ``rerank``, ``hybrid_rerank``) needs
    ``scorer``, a :class:`~crop_hf.translation.scoring.TranslationScorer`; other methods ignore it.
    A caller holding a :class:`ResolvedMethod` calls its :meth:`~ResolvedMethod.project` instead.
    """
    return resolve_method(method, **options).project(examples, aligner=aligner, scorer=scorer)


def run_method(chosen: ProjectionMethod, options: ProjectionOptions, examples: Sequence[ProjectionExample], *,
               aligner: Any = None, scorer: Any = None) -> list[ProjectionResult]:
    """:func:`project_examples` with the method and its options already resolved (:func:`resolve_method`).

    For callers that project many batches with one spec (the ``projection`` pipeline): the spec
    is read once, not once per batch.
    """
    if chosen.uses_scorer:
        require_scorer(scorer, chosen.name)  # before aligning: the error costs nothing
    if chosen.uses_alignment:
        align_missing(examples, aligner)
    if chosen.uses_scorer:
        return list(chosen.function(list(examples), options, scorer))
    return [chosen.function(example, options) for example in examples]


def check_scorer(method: str, scorer: Any, **options) -> None:
    """Raise now the error a model-scored ``method`` (with ``options`` over its spec's) would raise on its first
    batch with ``scorer``.

    Nothing for a method that uses no scorer. For one that does: ``require_scorer``'s error
    without a scorer, and the method's own check (``insertion``: a model without the tokens of
    its ``marker_style``, naming the model and the style; ``rerank``/``hybrid_rerank``: a model
    without the reverse direction). Entry points call it right after loading a model, before
    anything long runs (a run, through its :class:`ResolvedMethod`).
    """
    resolve_method(method, **options).check_scorer(scorer)


def placement(method: str) -> str | None:
    """How a model-scored ``method`` put the labels on a corpus's raw sentences, for a synthesis card, report
    and printout to say; ``None`` for the other methods (CroP's labeled back-translation, word alignment).

    >>> placement("insertion")  # doctest: +NORMALIZE_WHITESPACE
    'placed by insertion into the raw sentence: the translation model itself chose where the crop markers of
     each entity go in the raw sentence, given the tagged source translation (insertion projection; no labeled
     back-translation)'
    >>> placement("lexical") is None
    True
    """
    try:
        resolved = resolve_method(method)
    except ValueError:  # a method registered by code this process did not import
        return None
    return resolved.placement()


def word_spans(sentence: TargetSentence, entities: Sequence[Mapping[str, Any]]) -> list[Span]:
    """Character-offset entities (``start``, ``end``, ``label``) as word spans of ``sentence``, overlaps dropped.

    A word belongs to an entity when their characters overlap; of overlapping spans the one
    starting first (then the shorter) is kept.

    >>> from crop_hf.projection import tokenize_target
    >>> word_spans(tokenize_target("I live in New York", None, "whitespace"), [{"start": 10, "end": 18, "label": "LOC"}])
    [Span(start=3, end=5, label='LOC')]
    """
    if sentence.offsets is None:
        raise ValueError("word_spans needs a sentence tokenized from text (with character offsets)")
    spans = []
    for entity in entities:
        words = [i for i, (a, b) in enumerate(sentence.offsets) if a < entity["end"] and b > entity["start"]]
        if words:
            spans.append(Span(words[0], words[-1] + 1, entity["label"]))
    kept: list[Span] = []
    for span in sorted(spans):
        if not kept or span.start >= kept[-1].end:
            kept.append(span)
    return kept
