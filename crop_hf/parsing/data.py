"""Parser training data: corpora of semantic parses read as rows, their label sets, and their encoding.

A source spec as NER training reads it (``hinglish_top?data_dir=...``, ``cstop``,
``top:v2?domains=weather``, ``hub:NAME[:CONFIG]``, ``disk:PATH``; see
:func:`crop_hf.data.sources.parse_source_spec`) names a corpus with ``tokens``, ``intent`` and
``slot_tags`` columns; ``#en`` after it reads the English side of a parallel corpus instead
(``en_tokens``, ``en_intent``, ``en_slot_tags``, as Hinglish-TOP has them).

>>> split_side("hinglish_top#en")
('hinglish_top', 'en')
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

logger = logging.getLogger(__name__)

__all__ = ["COLUMNS", "encode_rows", "label_sets", "load_parse_rows", "split_side"]

COLUMNS = ("tokens", "intent", "slot_tags")


def split_side(spec: str) -> tuple[str, str | None]:
    """``"spec#en"`` → ``("spec", "en")``: the column prefix of the side to read, or ``None``."""
    body, _, side = spec.partition("#")
    return body, side or None


def load_parse_rows(spec: str, split: str, *, dataset=None):
    """One split of a source as a ``Dataset`` with ``tokens``, ``intent``, ``slot_tags`` (and its other columns).

    ``#en`` reads the ``en_*`` columns into those names. Raises ``KeyError`` naming the missing
    columns or split.
    """
    import datasets

    from crop_hf.data.sources import load_spec

    body, side = split_side(spec)
    loaded = dataset if dataset is not None else load_spec(body)
    if isinstance(loaded, datasets.Dataset):
        loaded = datasets.DatasetDict({"train": loaded})
    if split not in loaded:
        raise KeyError(f"{spec}: no {split!r} split (has {', '.join(loaded)})")
    rows = loaded[split]
    prefix = f"{side}_" if side else ""
    wanted = [prefix + c for c in COLUMNS]
    missing = [c for c in wanted if c not in rows.column_names]
    if missing:
        raise KeyError(f"{spec}: no column(s) {missing} (columns: {rows.column_names})")
    if side:  # the side's columns take the standard names
        swapped = [c for c in (*COLUMNS, "parse", "nested", "utterance") if prefix + c in rows.column_names]
        rows = rows.remove_columns([c for c in swapped if c in rows.column_names])
        rows = rows.rename_columns({prefix + c: c for c in swapped})
    return rows


def label_sets(parts: Sequence[Any], model_config=None) -> tuple[list[str], list[str]]:
    """Intents and IOB2 tags: a trained model's own first (same ids), then new names sorted."""
    intents = list(model_config.intent_labels) if model_config else []
    tags = list(model_config.slot_labels) if model_config else ["O"]
    intents += sorted({i for p in parts for i in p.unique("intent")} - set(intents))
    strange = sorted({t for p in parts for row in p["slot_tags"] for t in row
                      if t != "O" and not (t[:2] in ("B-", "I-") and len(t) > 2)})
    if strange:
        raise ValueError(f"slot tags must be IOB2 (O, B-NAME, I-NAME); found {strange[:5]} "
                         "(convert BIOES or other schemes with crop_hf.labels first)")
    known = {t[2:] for t in tags if t != "O"}
    for name in sorted({t[2:] for p in parts for row in p["slot_tags"] for t in row if t != "O"} - known):
        tags += [f"B-{name}", f"I-{name}"]
    return intents, tags


def encode_rows(rows, tokenizer, model, max_length: int):
    """``rows`` as ``input_ids``, ``attention_mask``, ``word_ids`` and ``intent_labels``/``slot_labels`` of ``model``'s labels."""
    from crop_hf.labels import iob1_to_iob2
    from crop_hf.modeling.crf import is_valid_bio
    from crop_hf.parsing.predict import encode_words

    intent_ids = {name: i for i, name in enumerate(model.config.intent_labels)}
    tag_ids = {name: i for i, name in enumerate(model.config.slot_labels)}

    def encode(batch):
        out = encode_words(tokenizer, batch["tokens"], max_length)
        out["intent_labels"] = [intent_ids[i] for i in batch["intent"]]
        # An I-X that starts a slot (IOB1 habits of some corpora) would score as impossible under the
        # BIO-constrained CRF: it is read as B-X, which is what it means.
        out["slot_labels"] = [[tag_ids[t] for t in (tags if is_valid_bio(tags) else iob1_to_iob2(tags))]
                              for tags in batch["slot_tags"]]
        return out

    return rows.map(encode, batched=True, remove_columns=rows.column_names, desc="encoding")
