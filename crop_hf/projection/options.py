"""The options of each projection method: one dataclass per method, read from a method spec by declared type.

Wherever a method is named it may carry options, ``"hybrid?threshold=80&one_word=true"``; the
method's options class reads the part after ``?`` (:meth:`ProjectionOptions.parse`). Each value
is converted to its field's declared type: ``true``/``false`` for a bool, an integer, a number,
one of a ``Literal``'s words, ``none`` where ``None`` is allowed. An option the method does not
take, or a value of the wrong type, is a ``ValueError`` that names the method, the option and
what it accepts. ``hybrid``'s options are ``alignment``'s (with its own defaults for
``fill_gaps`` and ``pieces``) plus the lexical passes' comparison and fuzzy's ``threshold``.
A renamed option (hybrid's former ``fuzzy=``) still reads, with a deprecation line (:func:`crop_hf.arguments.say_deprecated`).

Each options class checks its own values when it is built (``__post_init__``, as peft's
``LoraConfig`` does), read from a spec or built directly: a value of the right type that the method
cannot take (``max_span_words=0``, a word list crop-hf does not ship, a ``Literal`` field given
another word) is a one-line :class:`OptionValueError` naming the method and the option, raised
where the spec is read, before any model loads. The marker style, and what only a model can tell
(its marker tokens, a translation direction), are checked against the scorer
(:func:`crop_hf.projection.methods.check_scorer`).

>>> options = HybridOptions.parse("threshold=80&one_word=true", "hybrid")
>>> options.threshold, options.one_word, options.fill_gaps
(80.0, True, 1)
>>> HybridOptions.parse("threshold=abc", "hybrid")
Traceback (most recent call last):
...
ValueError: projection method 'hybrid': threshold='abc' is not a number or none
>>> InsertionOptions(nbest=0)
Traceback (most recent call last):
...
crop_hf.projection.options.OptionValueError: projection method 'insertion': max_span_words, width and nbest must be at least 1, got 4, 1, 0
"""

from __future__ import annotations

import functools
import types
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

from crop_hf.arguments import say_deprecated
from crop_hf.data.readers.words import builtin_adpositions, builtin_function_words
from crop_hf.data.sources import parse_query
from crop_hf.errors import UnknownOptionError
from crop_hf.projection.target import Normalizer

__all__ = ["AlignmentOptions", "FuzzyOptions", "HybridOptions", "HybridRerankOptions", "InsertionOptions",
           "LexicalOptions", "MatchingOptions", "OptionValueError", "ProjectionOptions", "RerankOptions"]

Options = TypeVar("Options", bound="ProjectionOptions")


def _read(text: str, kind: Any) -> Any:
    """``text`` as a value of ``kind`` (bool, int, float, str or a ``Literal``); ``ValueError`` if it is none."""
    if kind is bool and text.lower() in ("true", "false"):
        return text.lower() == "true"
    if get_origin(kind) is Literal and text in get_args(kind):
        return text
    if kind in (int, float, str):
        return kind(text)
    raise ValueError(text)


def _accepts(kind: Any) -> str:
    if get_origin(kind) is Literal:
        return "one of " + ", ".join(map(repr, get_args(kind)))
    names = {bool: "true or false", int: "an integer", float: "a number", str: "text", type(None): "none"}
    return names.get(kind, str(kind))


def _value(text: str, annotation: Any) -> Any:
    """``text`` read by ``annotation``, a type or a union of types; ``ValueError`` saying what it accepts."""
    kinds = get_args(annotation) if get_origin(annotation) in (Union, types.UnionType) else (annotation,)
    if type(None) in kinds and text.lower() == "none":
        return None
    for kind in kinds:
        try:
            return _read(text, kind)
        except ValueError:
            continue
    raise ValueError(" or ".join(map(_accepts, kinds)))


class OptionValueError(ValueError):
    """A value of the right type that a method's options refuse: ``str()`` names the method, ``detail`` does not."""

    def __init__(self, method: str | None, detail: str) -> None:
        self.method, self.detail = method, detail
        super().__init__(f"projection method {method!r}: {detail}" if method else detail)


@functools.cache
def _hints(options: type) -> dict[str, Any]:
    """The resolved annotations of an options class (none when one cannot be resolved: nothing checked by type)."""
    try:
        return get_type_hints(options)
    except NameError:
        return {}


@dataclass
class ProjectionOptions:
    """What every projection method takes; a method's options class adds its fields (type, default, ``help``).

    A subclass checks its values in ``__post_init__`` (calling this one's, which checks every
    ``Literal`` field), raising :meth:`refuse`'s error.
    """

    #: ``{former spelling: option}`` of renamed options: a spec may still use the former, with a deprecation line (:func:`crop_hf.arguments.say_deprecated`)
    renamed: ClassVar[Mapping[str, str]] = {}
    #: the method these options are of, named by the errors of a class built directly (a spec names its own)
    method_name: ClassVar[str | None] = None

    drop_incomplete: bool | None = field(default=None, metadata={
        "help": "Mark a sentence with an entity left unprojected as not kept; by default the method's rule "
                "(CroP drops such sentences: lexical, fuzzy; CSTOP keeps them: alignment, hybrid)."})

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The option names, in field order."""
        return tuple(option.name for option in fields(cls) if option.init)

    @classmethod
    def parse(cls: type[Options], written: str | Mapping[str, str], method: str) -> Options:
        """The options written after ``method``'s ``?`` (``"threshold=80&one_word=true"``, or already split into a dict)."""
        what = f"projection method {method!r}"
        if isinstance(written, str):
            written = parse_query(written, what, str)
        written = cls.spelled_now(written, method)
        unknown = [name for name in written if name not in cls.names()]
        if unknown:
            raise UnknownOptionError(what, unknown, cls.names())
        hints = get_type_hints(cls)
        values = {}
        for name, text in written.items():
            try:
                values[name] = _value(text, hints[name])
            except ValueError as error:
                raise ValueError(f"{what}: {name}={text!r} is not {error}") from None
        return cls.build(values, method)

    @classmethod
    def build(cls: type[Options], values: Mapping[str, Any], method: str) -> Options:
        """``cls(**values)``, a value the options refuse (``__post_init__``) named as ``method``'s."""
        try:
            return cls(**values)
        except ValueError as error:
            raise OptionValueError(method, getattr(error, "detail", str(error))) from None

    @classmethod
    def spelled_now(cls, written: Mapping[str, Any], method: str) -> dict[str, Any]:
        """``written`` with each renamed option under its current name (a deprecation line says so)."""
        out = {}
        for name, value in written.items():
            if name in cls.renamed:
                say_deprecated(f"projection method {method!r}: {name}= is renamed {cls.renamed[name]}=; the former "
                               "spelling will stop working in a later release")
                name = cls.renamed[name]
            out[name] = value
        return out

    def __post_init__(self) -> None:
        hints = _hints(type(self))
        for option in fields(self):
            words = get_args(hints.get(option.name)) if get_origin(hints.get(option.name)) is Literal else ()
            value = getattr(self, option.name)
            if words and value not in words:
                raise self.refuse(f"{option.name}={value!r} is not {_accepts(hints[option.name])}")

    def refuse(self, detail: str) -> OptionValueError:
        """The error for a value these options cannot take: ``detail``, named as :attr:`method_name`'s."""
        return OptionValueError(self.method_name, detail)

    def arguments(self) -> dict[str, Any]:
        """The keyword arguments of the method's function (``project_alignment``'s, ...)."""
        return {option.name: getattr(self, option.name) for option in fields(self)}


@dataclass
class MatchingOptions(ProjectionOptions):
    """How lexical matching compares words (a :class:`~crop_hf.projection.Normalizer`'s switches)."""

    nfkc: bool = field(default=True, metadata={"help": "Compare NFKC-normalized words (Unicode variants match)."})
    strip_punctuation: bool = field(default=True, metadata={
        "help": "Ignore punctuation at the edges of words and entities."})

    def arguments(self) -> dict[str, Any]:
        arguments = super().arguments()
        switches = {name: arguments.pop(name) for name in ("nfkc", "ignore_case", "strip_punctuation")
                    if name in arguments}
        return {**arguments, "normalizer": Normalizer(**switches)}


@dataclass
class LexicalOptions(MatchingOptions):
    """``lexical``: :func:`~crop_hf.projection.project_lexical`'s options."""

    method_name: ClassVar[str | None] = "lexical"

    ignore_case: bool = field(default=False, metadata={"help": "Compare case-folded words."})
    repeated: Literal["all", "once"] = field(default="all", metadata={
        "help": "all: also label further occurrences of a found entity; once: one occurrence per entity."})


@dataclass
class FuzzyOptions(LexicalOptions):
    """``fuzzy``: :func:`~crop_hf.projection.project_fuzzy`'s options, lexical's and a similarity threshold."""

    method_name: ClassVar[str | None] = "fuzzy"

    threshold: float = field(default=80.0, metadata={"help": "Minimum fuzz.ratio (0-100) of a fuzzy match."})

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0 < self.threshold <= 100:
            raise self.refuse(f"threshold is a similarity in (0, 100], got {self.threshold}")


@dataclass
class AlignmentOptions(ProjectionOptions):
    """``alignment``: the rules of :func:`~crop_hf.projection.project_alignment` (numbered as in its module)."""

    method_name: ClassVar[str | None] = "alignment"

    fill_gaps: int = field(default=0, metadata={"help": "Join pieces of one span at most this many words apart."})
    pieces: Literal["split", "largest"] = field(default="split", metadata={
        "help": "Of a discontinuous span, split: every piece is a span (CSTOP); largest: the best-linked piece."})
    trim_edges: bool = field(default=False, metadata={
        "help": "Rule 5: trim edge words linked at least as much to words outside every span."})
    one_word: bool = field(default=False, metadata={
        "help": "Rule 6: a one-word source span keeps only its best-linked target word."})
    capitalized_nouns: bool = field(default=False, metadata={
        "help": "Rule 7: trim trailing lowercase words (targets that capitalize every noun: de, lb)."})
    function_words: str | None = field(default=None, metadata={
        "help": "Rule 8: trim these closed-class words from span edges: a list crop-hf ships (de, en)."})
    postpositions: str | None = field(default=None, metadata={
        "help": "Rule 9: the target's postpositions, a list crop-hf ships (hi): none starts a span, and a "
                "span whose source starts with a preposition takes those after it."})
    prepositions: str = field(default="en", metadata={"help": "Rule 9: the source language's prepositions."})

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.fill_gaps < 0:
            raise self.refuse(f"fill_gaps must be >= 0, got {self.fill_gaps}")
        # a list code crop-hf does not ship fails here, where the spec is read, not after the first shard
        for name, read in (("function_words", builtin_function_words), ("postpositions", builtin_adpositions),
                           ("prepositions", builtin_adpositions)):
            code = getattr(self, name)
            if code is not None:
                try:
                    read(code)
                except ValueError as error:
                    raise self.refuse(f"{name}={code!r}: {error}") from None


def _default(options: type[ProjectionOptions], name: str, default: Any) -> Any:
    """The field ``name`` of ``options`` with another default (its help kept)."""
    (inherited,) = (option for option in fields(options) if option.name == name)
    return field(default=default, metadata=inherited.metadata)


@dataclass
class HybridOptions(AlignmentOptions, MatchingOptions):
    """``hybrid``: alignment's options (gaps of one word filled, the largest piece kept) and the lexical passes'."""

    renamed: ClassVar[Mapping[str, str]] = {"fuzzy": "threshold"}  # fuzzy's word for the same idea
    method_name: ClassVar[str | None] = "hybrid"

    fill_gaps: int = _default(AlignmentOptions, "fill_gaps", 1)
    pieces: Literal["split", "largest"] = _default(AlignmentOptions, "pieces", "largest")
    threshold: float | None = field(default=None, metadata={
        "help": "A fuzz.ratio threshold (0-100) for a similarity pass before alignment (fuzzy's threshold; "
                "formerly fuzzy=); none skips it."})


# -- the model-scored methods (crop_hf.projection.insertion and .rerank) ------------------------------


@dataclass
class InsertionOptions(ProjectionOptions):
    """``insertion``: :func:`~crop_hf.projection.insertion.project_insertion`'s options (a marker-trained model's markers)."""

    method_name: ClassVar[str | None] = "insertion"

    max_span_words: int = field(default=4, metadata={
        "help": "Longest span (target words; characters for targets split into characters) a slot may take."})
    min_score: float = field(default=0.0, metadata={
        "help": "Minimum score (0-1: the geometric-mean probability of the span's marker tokens); a span under it "
                "is left out with status below_threshold."})
    marker_style: str = field(default="crop", metadata={
        "help": "The markers the model was trained with: crop (__SLOT0__) or easyproject ([ ]), or a registered style."})
    source_markers: Literal["one", "all"] = field(default="one", metadata={
        "help": "one: the source carries only the slot being placed, as slot 0; all: every slot, numbered in "
                "sentence order (a sentence with more slots than the model has marker tokens is dropped)."})
    exhaustive: bool = field(default=False, metadata={
        "help": "Score every candidate span in full (the reference search; same spans, several times slower)."})
    width: int = field(default=1, metadata={
        "help": "Candidates per slot taken into each batched round of the search, doubling once one is fully "
                "scored (speed only, never the result)."})
    nbest: int = field(default=1, metadata={
        "help": "How many of a slot's most probable placements are reranked by the reverse translation "
                "probability of the entity given the span (CODEC's reranking; 1: none). Needs the model's "
                "target→source direction."})
    reverse_weight: float = field(default=1.0, metadata={
        "help": "Weight of the reverse score (mean log-probability per entity token) added to a placement's "
                "log-probability when nbest > 1."})
    tail_tokens: int | None = field(default=None, metadata={
        "help": "Model tokens after a span's closing marker scored with the markers in place; the rest of the "
                "sentence is scored as in the unmarked target (fewer decoder tokens; none: the whole marked "
                "target, the exact objective)."})

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.max_span_words < 1 or self.width < 1 or self.nbest < 1:
            raise self.refuse(f"max_span_words, width and nbest must be at least 1, got {self.max_span_words}, "
                              f"{self.width}, {self.nbest}")
        if self.tail_tokens is not None and self.tail_tokens < 0:
            raise self.refuse(f"tail_tokens must be none or at least 0, got {self.tail_tokens}")


@dataclass
class RerankOptions(ProjectionOptions):
    """``rerank``: :func:`~crop_hf.projection.rerank.project_rerank`'s options (T-Projection's score, a plain model)."""

    method_name: ClassVar[str | None] = "rerank"

    max_span_words: int = field(default=4, metadata={
        "help": "Word n-grams up to this length are candidates (characters for targets split into characters)."})
    min_score: float = field(default=0.0, metadata={
        "help": "Minimum symmetric translation score of a taken candidate; below it the entity is left out with "
                "status below_threshold."})
    candidates: Literal["all", "ngrams"] = field(default="all", metadata={
        "help": "all: n-grams plus the spans hybrid (given an alignment) and fuzzy (given translated entities) "
                "find; ngrams: word n-grams only."})
    shortlist: int | None = field(default=None, metadata={
        "help": "Score P(entity | candidate) only for each entity's this many n-grams that score best on "
                "P(candidate | entity) / P(candidate | candidate), and for the spans other methods propose; the "
                "other n-grams are not taken (faster, approximate; none: every candidate scored in full)."})

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_reranking(self)


def _check_reranking(options: RerankOptions | HybridRerankOptions) -> None:
    """The reranking options' own check: at least one word per candidate, at least one shortlisted n-gram."""
    if options.max_span_words < 1 or (options.shortlist is not None and options.shortlist < 1):
        raise options.refuse(f"max_span_words and shortlist must be at least 1, got {options.max_span_words} and "
                             f"{options.shortlist}")


@dataclass
class HybridRerankOptions(HybridOptions):
    """``hybrid_rerank``: hybrid's options, and reranking's, with the ``margin`` by which the model must prefer another span."""

    method_name: ClassVar[str | None] = "hybrid_rerank"

    max_span_words: int = _default(RerankOptions, "max_span_words", 4)
    min_score: float = _default(RerankOptions, "min_score", 0.0)
    shortlist: int | None = _default(RerankOptions, "shortlist", 4)  # hybrid's spans are always scored in full
    margin: float = field(default=0.1, metadata={
        "help": "Hybrid's span is replaced only by a candidate scoring at least this much more (symmetric score)."})

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_reranking(self)

    def hybrid_arguments(self) -> dict[str, Any]:
        """The keyword arguments of :func:`~crop_hf.projection.project_hybrid` (the reranking fields left out)."""
        own = {"max_span_words", "min_score", "shortlist", "margin"}
        return {name: value for name, value in self.arguments().items() if name not in own}
