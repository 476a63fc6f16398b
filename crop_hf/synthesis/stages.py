"""The model-driven stages of CroP synthesis, applied to one shard of raw sentences.

For each raw target sentence (CroP, Figure 1):

1. translate it into the source language (``labeled-translation`` with no entities);
2. tag the translation with the source NER model (first-subword aggregation, as the
   ``token-classification`` pipeline's, computed over whole batches:
   :class:`~crop_hf.synthesis.tagging.EntityTagger`), giving labeled source entities as character spans;
3. translate the labeled translation back into the target language with boundary markers,
   trying further beam hypotheses when markers break;
4. project the translated entities onto the raw sentence (lexical, fuzzy) — or, with
   ``method="alignment"``, project the source spans directly through a word alignment of the
   source translation and the raw sentence (CSTOP's translate-and-align), skipping step 3 — or,
   with a model-scored method (``method="insertion"``), place the source spans on the raw
   sentence with the translation model itself, skipping step 3: the marker-trained model scores
   where each span's markers go in the raw sentence, teacher-forced on the marked source
   translation (:mod:`crop_hf.projection.insertion`; ``rerank`` ranks candidate spans instead);
   a span it cannot place drops the sentence as ``projection_incomplete``;
5. filter (see :mod:`crop_hf.synthesis.rows`): cheap filters run before expensive stages, so
   a sentence that is too long is never translated.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from crop_hf.alignment import EflomalAligner, EmbeddingAligner
from crop_hf.engine.jobs import ShardResult
from crop_hf.engine.language import LanguageIdFilter
from crop_hf.engine.records import DropTally, each_or_none, entity_spans
from crop_hf.errors import check_model, reaching
from crop_hf.labels import LabelSet
from crop_hf.markers import get_marker_style
from crop_hf.projection import tokenize_target
from crop_hf.projection.loading import load_method_models, load_method_scorer, method_scorer
from crop_hf.projection.methods import ProjectionExample, align_missing, word_spans
from crop_hf.projection.result import ProjectionResult
from crop_hf.synthesis.config import EFLOMAL, SynthesisConfig
from crop_hf.synthesis.inputs import UndecodableLine
from crop_hf.synthesis.rows import DiscardedSentence, KeptSentence
from crop_hf.synthesis.tagging import EntityTagger, refuse_overlong, tagger_token_limit
from crop_hf.translation.apertium import is_apertium
from crop_hf.translation.text_engine import TextEngineTranslationPipeline

logger = logging.getLogger(__name__)

__all__ = ["SentenceRecord", "SynthesisModels", "load_scorer", "shard_scorer", "synthesize_shard"]


@dataclass
class SynthesisModels:
    """The pipelines one process uses, loaded once per run.

    Build it with :meth:`load` from a :class:`~crop_hf.synthesis.config.SynthesisConfig`, or pass
    already constructed pipelines (``translator``: ``labeled-translation``; ``tagger``: an
    :class:`~crop_hf.synthesis.tagging.EntityTagger`, or any callable ``tagger(texts, batch_size=...)``
    returning the entities of each text as a ``token-classification`` pipeline with an aggregation
    strategy does, the pipeline itself included; ``aligner``: an
    :class:`~crop_hf.alignment.EmbeddingAligner`, or an :class:`~crop_hf.alignment.EflomalAligner`
    when ``alignment_model="eflomal"``, for ``method="alignment"`` or ``"hybrid"``; ``scorer``: a
    :class:`~crop_hf.projection.TranslationScorer` over the translation model, for a model-scored
    method such as ``"insertion"``; any direction, the shards take ``src_lang`` → their language).

    For a model-scored method, :meth:`load` loads the translation model once, as the scorer,
    checks it (a model without the marker style's tokens asked to insert fails here, naming the
    model and the style, before the NER model is loaded) and builds the translator on the same
    weights: it only translates plain text (the raw sentence into the source language), so no
    marker token is added to the checkpoint (:func:`~crop_hf.projection.loading.load_method_models`,
    which translate-and-align shares).
    """

    translator: Any
    tagger: Any
    labels: LabelSet
    aligner: Any = None
    scorer: Any = None

    @classmethod
    def load(cls, config: SynthesisConfig, device: Any = None) -> SynthesisModels:
        chosen = config.projection
        # every model the run needs exists (a folder, or offline a cached Hub id) before any is loaded
        if not is_apertium(config.mt_model):
            check_model(config.mt_model, "translation model (--mt_model)")
        check_model(config.ner_model, "NER model (--ner_model)")
        if chosen.uses_alignment and config.alignment_model not in (None, EFLOMAL):
            check_model(config.alignment_model, "word aligner (--alignment_model)")
        # the scorer (checked for every target language) before the NER model, so a model that cannot do the
        # method fails before anything else loads
        translator, scorer = load_method_models(
            chosen, config.mt_model, src_lang=config.src_lang, tgt_langs=config.tgt_langs, revision=config.mt_revision,
            device=device, batch_size=config.batch_size, backend=config.backend, compute_type=config.compute_type,
            constrain_markers=config.constrain_markers)
        with reaching(config.ner_model, "NER model (--ner_model)"):
            tagger = EntityTagger.from_pretrained(config.ner_model, revision=config.ner_revision, device=device,
                                                  batch_size=config.batch_size)
        aligner = None
        if chosen.uses_alignment:
            if config.alignment_model == EFLOMAL:  # the pairs of one shard are aligned together
                aligner = EflomalAligner()
            else:
                aligner = EmbeddingAligner(config.alignment_model, batch_size=config.batch_size, device=device)
        return cls(translator, tagger, LabelSet.of_model(tagger.model.config.id2label), aligner, scorer)


def load_scorer(config: SynthesisConfig, device: Any = None) -> Any:
    """``config.mt_model`` (at ``mt_revision``) as a :class:`~crop_hf.projection.TranslationScorer`, checked
    for every target language (:func:`shard_scorer`) before anything else is loaded
    (:func:`~crop_hf.projection.loading.load_method_scorer`)."""
    return load_method_scorer(config.projection, config.mt_model, src_lang=config.src_lang,
                              tgt_langs=config.tgt_langs, revision=config.mt_revision, device=device,
                              batch_size=config.batch_size)


def shard_scorer(config: SynthesisConfig, scorer: Any, lang: str) -> Any:
    """The scorer of ``config.src_lang`` → ``lang`` (the source translation, marked, scores the raw sentence),
    checked for ``config.method``: a ``ValueError`` naming the model when it lacks the markers or a direction."""
    return method_scorer(config.projection, scorer, config.src_lang, lang)


@dataclass
class SentenceRecord:
    """One raw sentence on its way through the stages: each stage fills its fields, a filter sets ``reason``."""

    text: str
    lang: str
    #: its index in the shard (a refusal names it, counted from the shard's first sentence in the input)
    number: int = 0
    source_translation: str = ""
    #: what the source NER model found in ``source_translation``, as character spans
    source_entities: list[dict] = field(default_factory=list)
    labeled_translation: str = ""
    back_translation: str = ""
    #: the entities of the labeled back-translation (lexical and fuzzy projection read them)
    translated_entities: list = field(default_factory=list)
    projection: ProjectionResult | None = None
    #: the first filter that failed (``None``: still alive)
    reason: str | None = None

    def drop(self, reason: str) -> None:
        """Drop the sentence with ``reason``, unless an earlier filter already did."""
        if self.reason is None:
            self.reason = reason


def synthesize_shard(
    sentences: Sequence[str],
    lang: str,
    config: SynthesisConfig,
    models: SynthesisModels,
    language_filter: LanguageIdFilter | None,
    on_stage: Callable[[str], None] | None = None,
    drops: DropTally | None = None,
) -> ShardResult[KeptSentence, DiscardedSentence]:
    """Run every stage on one shard: each sentence comes back kept or dropped with its first reason.

    Kept sentences carry ``tokens``, ``ner_tags`` (ids of ``models.labels``), ``lang`` and
    provenance; dropped ones carry the sentence, its tokens, the reason and whatever stages
    produced, in the schema :func:`crop_hf.self_training.self_train` reads (``tokens``, ``lang``,
    ``projected_tags``). ``on_stage`` is called with each stage's name as it starts (progress display).

    A sentence a pipeline refuses (``pipeline_error``) is counted in ``drops`` with its error (a
    new tally named after ``lang`` when none is given; the job names the shard), and the tally is
    logged once at the end of the shard: one warning per reason, not one per sentence.
    """
    stage = on_stage or (lambda name: None)
    drops = drops if drops is not None else DropTally(lang, noun="sentence")
    src = config.src_lang
    records = [SentenceRecord(text, lang, number) for number, text in enumerate(sentences)]
    # the run's method, read once with its config; CroP drops incomplete sentences, whatever the spec says
    method = config.projection.with_options(drop_incomplete=True)
    # a model-scored method: its model is checked before any stage (a missing marker token fails here)
    scorer = shard_scorer(config, models.scorer, lang) if method.uses_scorer else None

    marker_styles = [style for style in (getattr(models.translator, "marker_style", None),) if style is not None]
    if method.marker_style is not None:  # insertion writes its own markers into the raw sentence
        marker_styles.append(get_marker_style(method.marker_style))
    for record in records:
        if isinstance(record.text, UndecodableLine):
            record.drop("undecodable")
        elif len(record.text.split()) > config.max_words:
            record.drop("too_long")
        elif any(style.find(record.text) for style in marker_styles):
            record.drop("contains_marker")  # the translator would refuse it, and its labels could not be trusted
    alive = [r for r in records if r.reason is None]

    # 1. translate into the source language
    stage("translate")
    # a text engine (Apertium) decodes nothing: the run said once, before any work, that these do not apply
    engine = isinstance(models.translator, TextEngineTranslationPipeline)
    generation = {} if engine else {"num_beams": config.num_beams, "max_new_tokens": config.max_new_tokens}
    translate_to_source = partial(models.translator, src_lang=lang, tgt_lang=src,
                                  **({} if engine else {"num_return_sequences": 1}), **generation)
    for record, output in _apply(translate_to_source, alive, [r.text for r in alive], drops):
        translation = record.source_translation = output["translation"]
        if not translation or (language_filter and not language_filter.accepts(translation, src)):
            record.drop("wrong_language_source")
    alive = [r for r in alive if r.reason is None]

    # 2. tag the translations with the source NER model
    stage("tag")
    tag = partial(_tag, models.tagger, batch_size=config.batch_size)
    for record, entities in _apply(tag, alive, [r.source_translation for r in alive], drops):
        record.source_entities = entity_spans(record.source_translation, entities)
        if not record.source_entities:
            record.drop("all_o")
    alive = [r for r in alive if r.reason is None]

    if method.uses_alignment or method.uses_scorer:
        # The source spans reach the raw sentence directly, with no back-translation: through word links
        # (CSTOP's translate-and-align), or placed by the translation model itself (insertion, reranking).
        if method.uses_alignment:
            stage("align")
        examples = []
        for record in alive:
            source = tokenize_target(record.source_translation, src)
            examples.append(ProjectionExample(tokenize_target(record.text, lang), source_tokens=source.tokens,
                                              source_spans=word_spans(source, record.source_entities)))
    else:
        # 3. back-translate with markers
        stage("back-translate")
        translate_back = partial(models.translator, src_lang=src, tgt_lang=lang, **generation,
                                 **({} if engine else {"num_return_sequences": config.num_return_sequences}))
        labeled = [{"text": r.source_translation, "entities": r.source_entities} for r in alive]
        for record, output in _apply(translate_back, alive, labeled, drops):
            record.labeled_translation = output["marked_translation"]
            record.back_translation = output["translation"]
            record.translated_entities = output["entities"]
            if not output["complete"]:
                record.drop("markers_incomplete")
            elif language_filter and not language_filter.accepts(output["translation"], lang):
                record.drop("wrong_language_target")
        alive = [r for r in alive if r.reason is None]
        examples = [ProjectionExample(tokenize_target(r.text, lang), entities=r.translated_entities) for r in alive]
    # 4. project onto the raw sentence (the registry's method; CroP drops incomplete sentences)
    stage("project")
    if method.uses_scorer:
        if method.uses_alignment:
            align_missing(examples, models.aligner)  # the shard's pairs in one call, even if a sentence is refused
        place = partial(method.project, aligner=models.aligner, scorer=scorer)
        projected = list(_apply(place, alive, examples, drops))  # a sentence the method refuses: a pipeline_error
    else:
        results = method.project(examples, aligner=models.aligner)
        projected = list(zip(alive, results, strict=True))
    for record, result in projected:
        record.projection = result
        # 5. the projection filters
        if not result.complete:
            record.drop("projection_incomplete")
        elif all(tag == "O" for tag in result.tags):
            record.drop("all_o")
    drops.log(logger)
    return ShardResult([_kept(r, models.labels) for r in records if r.reason is None],
                       [_dropped(r) for r in records if r.reason is not None])


def _tag(tagger: Any, texts: list[str], batch_size: int) -> list:
    """Tag ``texts``; a text longer than the model takes is refused (``ValueError``) instead of crashing it.

    A degenerate translation (an untrained or public model looping) can exceed the tagger's
    positions, which makes the model raise an index error for the whole batch; refused, it is
    dropped alone as ``pipeline_error``. An :class:`~crop_hf.synthesis.tagging.EntityTagger`
    refuses it from its own tokens; any other tagger (a ``token-classification`` pipeline) is
    checked here first.
    """
    limit = None if isinstance(tagger, EntityTagger) else tagger_token_limit(tagger)
    if limit is not None:  # one batched call, not one per text
        refuse_overlong((len(ids) for ids in tagger.tokenizer(texts)["input_ids"]), limit)
    return tagger(texts, batch_size=batch_size)


def _apply(call: Callable[[list], list], records: list[SentenceRecord], inputs: list, drops: DropTally
           ) -> Iterator[tuple[SentenceRecord, Any]]:
    """``(record, output)`` for each record the stage handled; the others are dropped as ``pipeline_error``
    (counted in ``drops`` with the pipeline's error)."""
    def refused(index: int, error: Exception) -> None:
        drops.add("pipeline_error", records[index].number, error)

    for record, output in zip(records, each_or_none(call, inputs, refused), strict=True):
        if output is None:
            record.drop("pipeline_error")
        else:
            yield record, output


def _provenance(record: SentenceRecord) -> dict[str, Any]:
    return {"source_translation": record.source_translation, "labeled_translation": record.labeled_translation,
            "back_translation": record.back_translation,
            "source_labels": [entity["label"] for entity in record.source_entities]}


def _kept(record: SentenceRecord, labels: LabelSet) -> KeptSentence:
    projection = record.projection
    return KeptSentence(tokens=projection.tokens, ner_tags=labels.encode(projection.tags), lang=record.lang,
                        **_provenance(record), projection_status=[s.status for s in projection.statuses],
                        tokenization=projection.tokenization)


def _dropped(record: SentenceRecord) -> DiscardedSentence:
    projection = record.projection
    return DiscardedSentence(
        text=record.text,
        tokens=projection.tokens if projection else tokenize_target(record.text, record.lang).tokens,
        projected_tags=projection.tags if projection else None, lang=record.lang, reason=record.reason,
        **_provenance(record), projection_status=[s.status for s in projection.statuses] if projection else [])
