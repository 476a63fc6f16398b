"""What each tab of the demo app does, as plain functions: input in, a result dataclass out.

Nothing here imports Gradio, so each tab's behaviour is tested without a browser. Every function
checks its input first; a mistake the user can fix (empty text, a paste over the word limit,
boundary markers typed in, an unknown language code, tags that do not match the tokens, a
malformed bracket parse) raises :class:`InputError`, whose message the page shows.

* :func:`translate_labeled` — CroP's labeled sequence translation of one sentence: its entities
  written inline (``[Angela Merkel|PER] visited [Paris|LOC]``) or tagged by the NER model, every
  hypothesis tried with what went wrong with its markers;
* :func:`project_labels` — source tokens and tags onto a raw target sentence by any projection
  method, with the word alignment where the method uses one;
* :func:`parse_utterance` — an utterance through the semantic parser (or a bracket parse typed
  in), as a :class:`~crop_hf.seqlogical.Tree`.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

from crop_hf import seqlogical
from crop_hf.alignment import parse_pharaoh
from crop_hf.console import without_subword_heuristic_warning
from crop_hf.engine.records import entity_spans
from crop_hf.labels import Span, tags_to_spans
from crop_hf.markers import SlotMarkers
from crop_hf.projection import tokenize_target
from crop_hf.projection.methods import PROJECTION_METHODS, ProjectionExample, project_examples
from crop_hf.translation.languages import resolve_languages

__all__ = [
    "ANNOTATION",
    "MAX_WORDS",
    "InputError",
    "LabeledTranslation",
    "ParsedUtterance",
    "Projection",
    "check_language",
    "check_markers",
    "check_text",
    "parse_utterance",
    "project_labels",
    "read_annotations",
    "translate_labeled",
]

#: Longest input (in whitespace-separated words) a tab takes; one sentence is what the models expect.
MAX_WORDS = 200
#: Characters per allowed word: text without spaces (Chinese, Japanese, Thai) is limited by length.
_CHARS_PER_WORD = 12

#: An entity written inline in the labeled-translation tab: ``[text|LABEL]``.
ANNOTATION = re.compile(r"\[([^\[\]|]+)\|\s*([A-Za-z][\w-]*)\s*\]")
_TAG = re.compile(r"^(O|[BI]-\S+)$")


class InputError(ValueError):
    """Input the user should change; the message is shown in the page as it is."""


# --- checks shared by the tabs ---------------------------------------------------------------


def check_text(text: str | None, what: str, max_words: int = MAX_WORDS) -> str:
    """``text`` stripped; :class:`InputError` when it is empty or longer than ``max_words`` words.

    >>> check_text("  Hola  ", "the sentence")
    'Hola'
    """
    text = (text or "").strip()
    if not text:
        raise InputError(f"The box for {what} is empty: type something first.")
    words = len(text.split())
    if words > max_words or len(text) > max_words * _CHARS_PER_WORD:
        size = f"{words} words" if words > max_words else f"{len(text)} characters"
        raise InputError(f"{what.capitalize()} is too long ({size}): this demo takes at most {max_words} words "
                         f"({max_words * _CHARS_PER_WORD} characters). Paste one sentence.")
    return text


def check_markers(text: str, what: str) -> None:
    """:class:`InputError` when ``text`` holds a boundary marker (``__SLOT0__``), whole or broken."""
    found = SlotMarkers().find(text)
    if found:
        marker = text[found[0].start:found[0].end].strip()
        raise InputError(f"{what.capitalize()} contains the boundary marker {marker!r}. Markers are what labeled "
                         "translation puts around entities itself; remove it from the input.")


def _m2m100_codes() -> list[str]:
    from transformers.models.m2m_100.tokenization_m2m_100 import FAIRSEQ_LANGUAGE_CODES

    return list(FAIRSEQ_LANGUAGE_CODES["m2m100"])


def check_language(code: str | None, role: str, known: list[str] | None = None) -> str | None:
    """``code`` stripped (``None`` if empty); :class:`InputError` if it is not among ``known``.

    ``known`` defaults to the 100 ISO 639 codes of M2M100 (``en``, ``de``, ``zh``, ...).
    """
    code = (code or "").strip()
    if not code:
        return None
    known = _m2m100_codes() if known is None else known
    if code not in known:
        close = difflib.get_close_matches(code, known, n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise InputError(f"Unknown {role} language code {code!r}.{hint} Use an ISO 639-1 code such as en, de or zh.")
    return code


# --- labeled translation ---------------------------------------------------------------------


def read_annotations(text: str) -> tuple[str, list[dict[str, Any]] | None]:
    """The plain text and its ``[text|LABEL]`` entities as character spans (``None`` when none are written).

    >>> read_annotations("[Angela Merkel|PER] visited [Paris|LOC] .")
    ('Angela Merkel visited Paris .', [{'start': 0, 'end': 13, 'label': 'PER'}, {'start': 22, 'end': 27, 'label': 'LOC'}])
    """
    pieces: list[str] = []
    entities: list[dict[str, Any]] = []
    cursor = length = 0
    for match in ANNOTATION.finditer(text):
        before = text[cursor:match.start()]
        pieces.append(before)
        length += len(before)
        inner = match.group(1).strip()
        entities.append({"start": length, "end": length + len(inner), "label": match.group(2)})
        pieces.append(inner)
        length += len(inner)
        cursor = match.end()
    pieces.append(text[cursor:])
    return "".join(pieces), (entities or None)


@dataclass
class Hypothesis:
    """One translation the model returned, read for its markers."""

    marked: str
    translation: str
    entities: list[dict[str, Any]]
    failures: list[dict[str, Any]]
    tried: bool
    chosen: bool

    @property
    def complete(self) -> bool:
        return not self.failures


@dataclass
class LabeledTranslation:
    """A labeled translation: the source and its entities, the pipeline's result, every hypothesis."""

    source: str
    source_entities: list[dict[str, Any]]
    #: ``"written"`` (``[text|LABEL]`` in the input) or ``"ner model"``
    entities_from: str
    marked_source: str
    result: dict[str, Any]
    hypotheses: list[Hypothesis] = field(default_factory=list)


def translate_labeled(models, text: str | None, src_lang: str | None, tgt_lang: str | None,
                      num_hypotheses: int = 4, max_words: int = MAX_WORDS) -> LabeledTranslation:
    """Translate one sentence with its entities in markers, as ``pipeline("labeled-translation")`` does.

    Entities are the ``[text|LABEL]`` annotations of ``text`` or, without any, what the NER
    model tags. Every one of ``num_hypotheses`` beam hypotheses is read; the pipeline's result
    is the first whose markers all come back (``hypotheses_tried`` stops there), or the one with
    most entities.
    """
    text = check_text(text, "the sentence", max_words)
    plain, entities = read_annotations(text)
    check_markers(plain, "the sentence")
    if not plain.strip():
        raise InputError("The sentence has no words outside its annotations.")
    src, tgt = (src_lang or "").strip(), (tgt_lang or "").strip()
    if not src or not tgt:
        raise InputError("Type both a source and a target language code (e.g. en and de).")
    translator = models.translator
    try:
        languages = resolve_languages(translator.tokenizer, src, tgt)
    except ValueError as error:
        text = str(error)
        raise InputError(text[:1].upper() + text[1:]) from None
    entities_from = "written"
    if entities is None:
        entities_from = "ner model"
        with without_subword_heuristic_warning():  # said on every call with a SentencePiece tokenizer
            entities = entity_spans(plain, models.tagger(plain))
    marked = translator.mark({"text": plain, "entities": entities})
    num_hypotheses = max(1, int(num_hypotheses))
    inputs = translator.preprocess(marked, languages=languages)
    budget = min(256, 2 * int(inputs["input_ids"].shape[-1]) + 16)
    outputs = translator.forward(inputs, languages=languages, generate_kwargs={
        "num_beams": num_hypotheses, "num_return_sequences": num_hypotheses, "max_new_tokens": budget})
    ids = outputs["output_ids"]
    texts = translator.marker_vocabulary.decode(translator.tokenizer, ids.reshape(-1, ids.shape[-1]).tolist())
    entity_translations = outputs["entity_translations"]
    entity_translations = entity_translations[0] if isinstance(entity_translations, list) else entity_translations
    result = translator.postprocess(outputs)
    hypotheses = []
    chosen_found = False
    for index, hypothesis in enumerate(texts):
        extraction = translator.marker_style.extract(marked, hypothesis, entity_translations).as_dict()
        tried = index < result["hypotheses_tried"]
        chosen = tried and not chosen_found and extraction["marked_translation"] == result["marked_translation"]
        chosen_found = chosen_found or chosen
        hypotheses.append(Hypothesis(extraction["marked_translation"], extraction["translation"],
                                     extraction["entities"], extraction["failures"], tried, chosen))
    source_entities = [{"text": e.text, "label": e.label, "slot": e.slot} for e in marked.entities]
    for entity, span in zip(source_entities, sorted(entities, key=lambda e: e["start"]), strict=True):
        entity.update(start=int(span["start"]), end=int(span["end"]))
    return LabeledTranslation(plain, source_entities, entities_from, marked.text, result, hypotheses)


# --- projection ------------------------------------------------------------------------------


@dataclass
class Projection:
    """Source tokens and spans projected onto a target sentence; ``alignment`` when the method used one."""

    source_tokens: list[str]
    source_spans: list[Span]
    result: dict[str, Any]
    alignment: list[tuple[int, int]] | None
    #: ``"given"`` (typed in), ``"embedding"``, ``"eflomal"`` or ``None`` (the method uses no alignment)
    aligned_by: str | None


def _source(tokens_text: str | None, tags_text: str | None, max_words: int) -> tuple[list[str], list[str]]:
    tokens = check_text(tokens_text, "the source tokens", max_words).split()
    tags = (tags_text or "").split()
    if not tags:
        raise InputError("The box for the source tags is empty: give one tag per source token (O, B-PER, I-PER, ...).")
    if len(tags) != len(tokens):
        raise InputError(f"{len(tokens)} source tokens but {len(tags)} tags: give exactly one tag per token.")
    for position, tag in enumerate(tags, start=1):
        if not _TAG.match(tag):
            raise InputError(f"Tag {tag!r} (token {position}, {tokens[position - 1]!r}) is not an IOB2 tag: "
                             "use O, B-TYPE or I-TYPE.")
    return tokens, tags


def _given_alignment(text: str, source_length: int, target_length: int) -> list[tuple[int, int]]:
    try:
        pairs = [tuple(pair) for pair in parse_pharaoh(text)]
    except ValueError as error:
        raise InputError(f"The alignment is not Pharaoh text ('0-0 1-2 ...', source-target word indices from 0): "
                         f"{error}") from None
    for i, j in pairs:
        if not (0 <= i < source_length and 0 <= j < target_length):
            raise InputError(f"The alignment link {i}-{j} points outside the sentences ({source_length} source "
                             f"and {target_length} target words, counted from 0).")
    return pairs


def project_labels(models, source_tokens: str | None, source_tags: str | None, target: str | None,
                   method: str = "lexical", lang: str | None = None, aligner: str = "embedding",
                   alignment: str | None = None, max_words: int = MAX_WORDS) -> Projection:
    """Project the entities of whitespace-separated ``source_tokens``/``source_tags`` onto ``target``.

    ``lexical`` and ``fuzzy`` look for each source entity's own words in the target (names often
    stay the same); ``alignment`` and ``hybrid`` copy the spans over a word alignment: the one
    typed in ``alignment`` (Pharaoh ``i-j`` pairs) or one computed by ``aligner`` (``embedding``:
    SimAlign over the alignment encoder; ``eflomal``).
    """
    tokens, tags = _source(source_tokens, source_tags, max_words)
    target = check_text(target, "the target sentence", max_words)
    check_markers(" ".join(tokens), "the source tokens")
    check_markers(target, "the target sentence")
    lang = check_language(lang, "target")
    if method not in PROJECTION_METHODS:
        raise InputError(f"Unknown projection method {method!r}: choose one of {', '.join(PROJECTION_METHODS)}.")
    spans = tags_to_spans(tags)
    sentence = tokenize_target(target, lang)
    chosen = PROJECTION_METHODS[method]
    aligned_by = None
    if not chosen.uses_alignment:
        example = ProjectionExample(sentence, entities=[(" ".join(tokens[s.start:s.end]), s.label) for s in spans])
        found = project_examples(method, [example])[0]
    else:
        example = ProjectionExample(sentence, source_tokens=tokens, source_spans=spans)
        if (alignment or "").strip():
            example.alignment = _given_alignment(alignment, len(tokens), len(sentence.tokens))
            aligned_by = "given"
            found = project_examples(method, [example])[0]
        else:
            found = project_examples(method, [example], aligner=models.aligner(aligner))[0]
            aligned_by = aligner
    links = sorted(example.alignment) if example.alignment is not None else None
    return Projection(tokens, spans, found.to_dict(), links, aligned_by)


# --- semantic parsing ------------------------------------------------------------------------


@dataclass
class ParsedUtterance:
    """An utterance's tree, from the parser (``intent``, ``score``) or typed in as a bracket parse."""

    text: str
    tree: seqlogical.Tree
    parse: str
    score: float | None
    from_model: bool


def parse_utterance(models, text: str | None, max_words: int = MAX_WORDS) -> ParsedUtterance:
    """Parse ``text`` with the semantic parser; a ``[IN:...`` bracket parse typed in is read as it is."""
    text = check_text(text, "the utterance", max_words)
    if text.startswith("["):
        try:
            tree = seqlogical.parse(text)
        except seqlogical.ParseError as error:
            raise InputError(f"That bracket parse is not a valid tree: {error}") from None
        return ParsedUtterance(" ".join(tree.tokens), tree, tree.to_string(), None, from_model=False)
    check_markers(text, "the utterance")
    out = models.parser(text)
    return ParsedUtterance(text, seqlogical.parse(out["parse"]), out["parse"], float(out["score"]), from_model=True)
