"""Parser training data: corpora of semantic parses read as rows, their label sets, and their encoding.

A source spec as NER training reads it (``hinglish_top?data_dir=...``, ``cstop``,
``top:v2?domains=weather``, ``hub:NAME[:CONFIG]``, ``disk:PATH``; see
:func:`crop_hf.data.sources.parse_source_spec`) names a corpus with ``tokens``, ``intent`` and
``slot_tags`` columns; ``#en`` after it reads the English side of a parallel corpus instead
(``en_tokens``, ``en_intent``, ``en_slot_tags``, as Hinglish-TOP has them;
:func:`crop_hf.data.sources.split_side`).

A hierarchical model (``max_intent_depth`` above 1) trains on the whole tree of each row (its
``parse`` column): :func:`frame_targets` turns a tree's :class:`~crop_hf.seqlogical.IntentFrame`
stack into the model's ``span_targets``/``inner_targets``/``inner_labels`` and
:func:`frame_from_targets` reads them back. A tree the model cannot represent (deeper than
``max_intent_depth``, a slot without words, a slot holding words beside an intent) is left out of
training, counted by reason and logged with its file and line (the ``source`` column, which
Hinglish-TOP has) or its source spec and row.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import crop_hf.data.sources
from crop_hf.data.readers import FormatError, SkippedRecords
from crop_hf.errors import EmptyInputError
from crop_hf.labels import iob1_to_iob2, tags_to_spans
from crop_hf.parsing.predict import encode_words, nested_frame
from crop_hf.seqlogical import ParseError, UnrepresentableParse, from_flat, parse, to_frame

logger = logging.getLogger(__name__)

__all__ = ["COLUMNS", "dev_split", "encode_rows", "frame_from_targets", "frame_targets", "label_sets",
           "load_parse_rows", "row_frames"]

COLUMNS = ("tokens", "intent", "slot_tags")


def load_parse_rows(spec: str, split: str, *, dataset=None, option: str | None = None):
    """One split of a source as a ``Dataset`` with ``tokens``, ``intent``, ``slot_tags`` (and its other columns).

    ``#en`` reads the ``en_*`` columns into those names. Raises ``KeyError`` naming the missing
    columns or split. With ``option`` (``"--sources"``, as the command line spells it), the errors
    name it too, and a split without an utterance is an :class:`~crop_hf.errors.EmptyInputError`.
    """
    import datasets

    where = f"{option} {spec}" if option else spec
    body, side = crop_hf.data.sources.split_side(spec)
    loaded = dataset if dataset is not None else crop_hf.data.sources.load_spec(body)
    if isinstance(loaded, datasets.Dataset):
        loaded = datasets.DatasetDict({"train": loaded})
    if split not in loaded:
        raise KeyError(f"{where}: no {split!r} split (has {', '.join(loaded)})")
    rows = loaded[split]
    prefix = f"{side}_" if side else ""
    wanted = [prefix + c for c in COLUMNS]
    missing = [c for c in wanted if c not in rows.column_names]
    if missing:
        raise KeyError(f"{where}: no column(s) {missing} (columns: {rows.column_names})")
    if option and not len(rows):
        raise EmptyInputError(f"{where}: no utterances in its {split!r} split")
    if side:  # the side's columns take the standard names
        swapped = [c for c in (*COLUMNS, "parse", "nested", "utterance", "source") if prefix + c in rows.column_names]
        rows = rows.remove_columns([c for c in swapped if c in rows.column_names])
        rows = rows.rename_columns({prefix + c: c for c in swapped})
    return rows


def _tree_labels(parts: Sequence[Any]) -> tuple[set[str], set[str]]:
    """Every intent and slot name in the ``parse`` trees of ``parts`` (unreadable parses are skipped here)."""
    intents: set[str] = set()
    slots: set[str] = set()
    for part in parts:
        if "parse" not in part.column_names:
            continue
        for text in part["parse"]:
            try:
                tree = parse(text)
            except ParseError:
                continue
            for node in tree.subtrees():
                (intents if node.kind == "IN" else slots).add(node.name)
    return intents, slots


def label_sets(parts: Sequence[Any], model_config=None, nested: bool = False) -> tuple[list[str], list[str]]:
    """Intents and IOB2 tags: a trained model's own first (same ids), then new names sorted.

    ``nested``: also the intents and slots inside nested trees (the ``parse`` column), which a
    hierarchical model predicts.
    """
    intents = list(model_config.intent_labels) if model_config else []
    tags = list(model_config.slot_labels) if model_config else ["O"]
    inner_intents, inner_slots = _tree_labels(parts) if nested else (set(), set())
    intents += sorted(({i for p in parts for i in p.unique("intent")} | inner_intents) - set(intents))
    strange = sorted({t for p in parts for row in p["slot_tags"] for t in row
                      if t != "O" and not (t[:2] in ("B-", "I-") and len(t) > 2)})
    if strange:
        raise ValueError(f"slot tags must be IOB2 (O, B-NAME, I-NAME); found {strange[:5]} "
                         "(convert BIOES or other schemes with crop_hf.labels first)")
    known = {t[2:] for t in tags if t != "O"}
    for name in sorted(({t[2:] for p in parts for row in p["slot_tags"] for t in row if t != "O"} | inner_slots)
                       - known):
        tags += [f"B-{name}", f"I-{name}"]
    return intents, tags


def frame_targets(frame, intent_ids: dict[str, int], tag_ids: dict[str, int], slot_name_ids: dict[str, int],
                  offset: int = 0) -> dict[str, list]:
    """The hierarchical decoder's targets of an :class:`~crop_hf.seqlogical.IntentFrame` (word positions from ``offset``).

    ``span_targets``: ``[start, end, slot name id, 0 or 1 + id of the intent filling it]`` per slot of
    every level; ``inner_targets``: ``[start, end, intent id]`` per nested intent and ``inner_labels``
    the tag ids of its words. The top frame's own intent and tags are the model's usual labels.

    >>> from crop_hf.seqlogical import to_frame
    >>> _, frame = to_frame("[IN:A x [SL:B [IN:C y [SL:D z ] ] ] ]")
    >>> frame_targets(frame, {"A": 0, "C": 1}, {"O": 0, "B-B": 1, "I-B": 2, "B-D": 3, "I-D": 4}, {"B": 0, "D": 1})
    {'span_targets': [[1, 3, 0, 2], [2, 3, 1, 0]], 'inner_targets': [[1, 3, 1]], 'inner_labels': [[0, 3]]}
    """
    out: dict[str, list] = {"span_targets": [], "inner_targets": [], "inner_labels": []}
    pending = [(frame, offset)]
    while pending:
        current, base = pending.pop(0)
        for span in tags_to_spans(current.slot_tags):
            child = current.nested.get(span.start)
            start, end = base + span.start, base + span.end
            out["span_targets"].append([start, end, slot_name_ids[span.label],
                                        0 if child is None else 1 + intent_ids[child.intent]])
            if child is not None:
                out["inner_targets"].append([start, end, intent_ids[child.intent]])
                out["inner_labels"].append([tag_ids[t] for t in child.slot_tags])
                pending.append((child, start))
    return out


def frame_from_targets(intent: str, slot_tags: Sequence[str], inner_targets: Sequence[Sequence[int]],
                       inner_labels: Sequence[Sequence[int]], intent_labels: Sequence[str],
                       slot_labels: Sequence[str]):
    """The :class:`~crop_hf.seqlogical.IntentFrame` that :func:`frame_targets` encoded (its inverse).

    Nested intents are placed by their word positions, as the model's decoder places them
    (:func:`crop_hf.parsing.predict.nested_frame`).
    """
    from crop_hf.modeling.modeling_joint import NestedParse  # heavy (torch): loaded on first use

    nodes = [NestedParse(start, end, intent_id, list(labels))
             for (start, end, intent_id), labels in zip(inner_targets, inner_labels, strict=True)]
    roots: list[NestedParse] = []
    for node in sorted(nodes, key=lambda n: (n.start, -(n.end - n.start))):  # outer before inner
        siblings = roots
        while True:
            holder = next((n for n in siblings if n.start <= node.start and node.end <= n.end), None)
            if holder is None:
                break
            siblings = holder.nested
        siblings.append(node)
    return nested_frame(intent, list(slot_tags), roots, intent_labels, slot_labels)


def row_frames(rows, max_intent_depth: int, where: str = "rows", skipped=None) -> list:
    """The :class:`~crop_hf.seqlogical.IntentFrame` of each row's tree, ``None`` where the model cannot represent it.

    Trees come from the ``parse`` column (else from ``tokens``/``intent``/``slot_tags``). Each
    unrepresentable or unreadable tree is counted in ``skipped`` (a
    :class:`~crop_hf.data.readers.SkippedRecords`, by reason) with its ``source`` (``file:line``)
    when rows have one, else ``where`` and the row number.
    """
    skipped = skipped if skipped is not None else SkippedRecords()
    columns = rows.column_names
    # lists, not datasets' lazy columns: indexing one of those queries the table (and fingerprints) per row
    sources = list(rows["source"]) if "source" in columns else None
    texts = list(rows["parse"]) if "parse" in columns else None
    flat = None if texts is not None else (list(rows["intent"]), list(rows["slot_tags"]))
    frames = []
    for index, tokens in enumerate(rows["tokens"]):
        if sources is not None and sources[index]:
            path, _, line = sources[index].rpartition(":")
            location = (path, int(line)) if line.isdigit() else (sources[index], 0)
        else:
            location = (where, index + 1)
        try:
            tree = texts[index] if flat is None else str(from_flat(tokens, flat[0][index], slot_tags=flat[1][index]))
            words, frame = to_frame(tree, max_intent_depth)
            if words != list(tokens):
                raise UnrepresentableParse("tokens", f"the parse's words differ from the row's tokens: {tree}")
        except UnrepresentableParse as error:
            skipped.add(FormatError(*location, "a tree the model can represent", str(error), error.reason))
            frame = None
        except (ParseError, ValueError) as error:
            skipped.add(FormatError(*location, "a well-formed bracket parse", str(error), "parse"))
            frame = None
        frames.append(frame)
    return frames


def dev_split(rows, size: float, seed: int) -> tuple[list[int], list[int]]:
    """``(train, dev)`` row indices: a seeded dev sample stratified by ``intent``, disjoint from train.

    ``size`` is a fraction (below 1) or a number of rows. Every intent gives its share (rounded, and
    never its last row, so each intent stays in training); the draw depends on ``seed`` alone.

    >>> import datasets
    >>> rows = datasets.Dataset.from_dict({"intent": ["A"] * 8 + ["B"] * 2})
    >>> train, dev = dev_split(rows, 0.5, seed=0)
    >>> sorted(rows.select(dev)["intent"]), len(train)
    (['A', 'A', 'A', 'A', 'B'], 5)
    """
    import random
    from collections import defaultdict

    if size <= 0:
        raise ValueError(f"dev_size must be positive, got {size}")
    fraction = size if size < 1 else size / max(len(rows), 1)
    by_intent: dict[str, list[int]] = defaultdict(list)
    for index, intent in enumerate(rows["intent"]):
        by_intent[intent].append(index)
    generator = random.Random(seed)
    dev: list[int] = []
    for intent in sorted(by_intent):
        members = by_intent[intent]
        take = min(round(len(members) * fraction), len(members) - 1)
        dev += generator.sample(members, take) if take > 0 else []
    chosen = set(dev)
    return [i for i in range(len(rows)) if i not in chosen], sorted(dev)


def encode_rows(rows, tokenizer, model, max_length: int, *, where: str = "rows", skipped=None):
    """``rows`` as ``input_ids``, ``attention_mask``, ``word_ids`` and ``intent_labels``/``slot_labels`` of ``model``'s labels.

    For a hierarchical model also the nested targets (:func:`frame_targets`) of each row's tree;
    rows whose tree it cannot represent are left out, counted in ``skipped`` (:func:`row_frames`).
    """
    from crop_hf.modeling.crf import is_valid_bio  # heavy (torch): loaded on first use

    intent_ids = {name: i for i, name in enumerate(model.config.intent_labels)}
    tag_ids = {name: i for i, name in enumerate(model.config.slot_labels)}
    hierarchical = model.config.max_intent_depth > 1
    frames = None
    if hierarchical:
        skipped = skipped if skipped is not None else SkippedRecords()
        before = skipped.total
        frames = row_frames(rows, model.config.max_intent_depth, where, skipped)
        if skipped.total > before:
            logger.warning("%s: %d trees the model cannot represent, left out of training: %s", where,
                           skipped.total - before, skipped)
        kept = [i for i, frame in enumerate(frames) if frame is not None]
        rows, frames = rows.select(kept), [frames[i] for i in kept]
        names = [t[2:] for t in model.config.slot_labels if t.startswith("B-")]
        name_ids = {name: i for i, name in enumerate(names)}

    def encode(batch, indices):
        out = encode_words(tokenizer, batch["tokens"], max_length)
        out["intent_labels"] = [intent_ids[i] for i in batch["intent"]]
        # An I-X that starts a slot (IOB1 habits of some corpora) would score as impossible under the
        # BIO-constrained CRF: it is read as B-X, which is what it means.
        if frames is None:
            out["slot_labels"] = [[tag_ids[t] for t in (tags if is_valid_bio(tags) else iob1_to_iob2(tags))]
                                  for tags in batch["slot_tags"]]
            return out
        targets = [frame_targets(frames[i], intent_ids, tag_ids, name_ids) for i in indices]
        out["slot_labels"] = [[tag_ids[t] for t in frames[i].slot_tags] for i in indices]
        for key in ("span_targets", "inner_targets", "inner_labels"):
            out[key] = [t[key] for t in targets]
        return out

    features = None
    if frames is not None:  # typed, so that batches without any nested slot still concatenate
        import datasets

        ints = datasets.Sequence(datasets.Value("int64"))
        features = datasets.Features({"input_ids": ints, "attention_mask": ints, "word_index": ints,
                                      "intent_labels": datasets.Value("int64"), "slot_labels": ints,
                                      "span_targets": datasets.Sequence(ints), "inner_targets": datasets.Sequence(ints),
                                      "inner_labels": datasets.Sequence(ints)})
    return rows.map(encode, batched=True, with_indices=True, remove_columns=rows.column_names, desc="encoding",
                    features=features)
