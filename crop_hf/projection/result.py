"""What every projection method returns: target tokens, IOB2 tags, projected entities, statuses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from crop_hf.labels import Span, spans_to_tags
from crop_hf.projection.target import TargetSentence, is_punctuation, strip_punctuation

__all__ = ["EntityStatus", "ProjectedEntity", "ProjectionResult"]


class ProjectedEntity(NamedTuple):
    """An entity placed on the target sentence.

    ``token_start``/``token_end`` index the target tokens (end exclusive); ``start``/``end`` are
    character offsets into the target text, ``None`` when the target came as tokens. ``source``
    is the index of the entity it came from (translated or source entity); ``match`` says how it
    was found: ``"exact"``, ``"repeat"`` (a further occurrence of an exactly matched entity),
    ``"fuzzy"`` or ``"alignment"``.
    """

    text: str
    label: str
    token_start: int
    token_end: int
    start: int | None
    end: int | None
    source: int
    match: str
    score: float | None = None

    @classmethod
    def over(
        cls,
        sentence: TargetSentence,
        start: int,
        end: int,
        label: str,
        source: int,
        match: str,
        score: float | None = None,
        *,
        trim_punctuation: bool = True,
    ) -> ProjectedEntity:
        """The entity over tokens ``[start, end)`` of ``sentence``.

        With ``trim_punctuation`` its text and character offsets leave out punctuation glued to
        the outer tokens (``Göteborg.`` gives ``Göteborg``); tags always cover whole tokens.
        """
        text = sentence.span_text(start, end)
        char_start, char_end = sentence.char_span(start, end)
        first, last = sentence.tokens[start], sentence.tokens[end - 1]
        if trim_punctuation and not (first[:1].isalnum() and last[-1:].isalnum()):
            lead = 0 if is_punctuation(first) else len(first) - len(strip_punctuation(first, trailing=False))
            trail = 0 if is_punctuation(last) else len(last) - len(strip_punctuation(last, leading=False))
            if lead or trail:
                text = text[lead: len(text) - trail]
                if char_start is not None and char_end is not None:
                    char_start, char_end = char_start + lead, char_end - trail
        if score is not None:
            score = round(float(score), 2)
        return cls(text, label, start, end, char_start, char_end, source, match, score)


class EntityStatus(NamedTuple):
    """What became of one input entity.

    ``status`` is one of ``"found"`` (exact match), ``"fuzzy"`` (similarity match), ``"missing"``
    (not in the target), ``"empty"`` (nothing left after normalization), ``"projected"``
    (alignment), ``"split"`` (alignment gave several pieces), ``"unaligned"`` (no alignment link),
    ``"punctuation"`` (aligned only to punctuation) or ``"conflict"`` (its words went to other
    entities).
    """

    text: str
    label: str
    status: str

    @property
    def reached(self) -> bool:
        """Whether the entity reached the target (found, fuzzy, projected or split)."""
        return self.status in _OK


_OK = {"found", "fuzzy", "projected", "split"}


@dataclass
class ProjectionResult:
    """The projection of one sentence.

    ``complete`` is true when every input entity reached the target; ``kept`` says whether the
    sentence belongs in the projected corpus (incomplete sentences are dropped unless the caller
    asked to keep them). ``tokenization`` is ``"given"``, ``"words"``, ``"whitespace"`` or ``"characters"``.
    """

    tokens: list[str]
    tags: list[str]
    entities: list[ProjectedEntity]
    statuses: list[EntityStatus]
    tokenization: str
    method: str
    complete: bool
    kept: bool
    reason: str | None = None

    @classmethod
    def build(
        cls,
        sentence: TargetSentence,
        entities: list[ProjectedEntity],
        statuses: list[EntityStatus],
        method: str,
        *,
        drop_incomplete: bool,
        reason: str | None = None,
    ) -> ProjectionResult:
        entities = sorted(entities, key=lambda e: e.token_start)
        spans = [Span(e.token_start, e.token_end, e.label) for e in entities]
        complete = reason is None and all(s.status in _OK for s in statuses)
        if reason is None and not complete:
            reason = "entity_not_projected"
        return cls(
            tokens=list(sentence.tokens),
            tags=spans_to_tags(spans, len(sentence.tokens)),
            entities=entities,
            statuses=statuses,
            tokenization=sentence.tokenization,
            method=method,
            complete=complete,
            kept=complete or not drop_incomplete,
            reason=reason,
        )

    def to_dict(self) -> dict:
        """Plain lists and dicts (what the pipeline returns, ready for ``datasets.Dataset.from_list``)."""
        return {
            "tokens": self.tokens,
            "tags": self.tags,
            "entities": [e._asdict() for e in self.entities],
            "entity_status": [s._asdict() for s in self.statuses],
            "tokenization": self.tokenization,
            "method": self.method,
            "complete": self.complete,
            "kept": self.kept,
            "reason": self.reason,
        }
