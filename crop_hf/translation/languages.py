"""Language codes per translation-model family, resolved through the model's own tokenizer.

Every multilingual family names and signals languages differently:

=========  ====================  ======================================================
family     codes                 how the languages reach the model
=========  ====================  ======================================================
M2M100     ``de``, ``en``        ``tokenizer.src_lang``; ``forced_bos_token_id = get_lang_id(tgt)``
NLLB       ``deu_Latn``          ``tokenizer.src_lang``; the target code token as forced BOS
mBART-50   ``de_DE``, ``en_XX``  ``tokenizer.src_lang``; ``lang_code_to_id[tgt]`` as forced BOS
MarianMT   none                  one model per direction; multi-target models read a
                                 ``>>deu<<`` prefix on the source text
=========  ====================  ======================================================

:func:`resolve_languages` returns a :class:`LanguageSetup` that the pipeline applies; a code the
tokenizer does not know raises ``ValueError`` naming the family, close matches and the format.
"""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["LanguageSetup", "parse_language_codes", "resolve_languages"]

logger = logging.getLogger(__name__)

_MARIAN_TARGET = re.compile(r"^>>(.+)<<$")


@dataclass(frozen=True)
class LanguageSetup:
    """How to tell one model which languages to translate between."""

    family: str
    src_lang: str | None = None
    tgt_lang: str | None = None
    #: Token id the decoder is forced to start with (the target language), if the family uses one.
    forced_bos_token_id: int | None = None
    #: Text put before every source sentence (MarianMT multi-target models: ``">>deu<< "``).
    prefix: str = ""

    def apply(self, tokenizer: Any) -> None:
        """Set the tokenizer's source language (families that read it from ``src_lang``)."""
        if self.src_lang is not None and self.family in {"m2m100", "nllb", "mbart"}:
            tokenizer.src_lang = self.src_lang

    def generate_kwargs(self) -> dict[str, int]:
        return {} if self.forced_bos_token_id is None else {"forced_bos_token_id": self.forced_bos_token_id}


def _family(tokenizer: Any) -> str:
    name = type(tokenizer).__name__
    if hasattr(tokenizer, "get_lang_id"):
        return "m2m100"
    if name.startswith("Nllb"):
        return "nllb"
    if name.startswith("MBart"):
        return "mbart"
    if name.startswith("Marian"):
        return "marian"
    return "other"


def _known_codes(tokenizer: Any, family: str) -> list[str]:
    if family in {"m2m100", "mbart"}:
        return list(getattr(tokenizer, "lang_code_to_id", {}) or {})
    if family == "nllb":
        from transformers.models.nllb.tokenization_nllb import FAIRSEQ_LANGUAGE_CODES

        vocab = tokenizer.get_vocab()
        extra = [str(t) for t in getattr(tokenizer, "additional_special_tokens", None) or []]
        return [code for code in dict.fromkeys([*FAIRSEQ_LANGUAGE_CODES, *extra]) if code in vocab]
    if family == "marian":
        return [m.group(1) for token in tokenizer.get_vocab() if (m := _MARIAN_TARGET.match(token))]
    return []


def _check(code: str, known: list[str], family: str, role: str, tokenizer: Any) -> None:
    if code in known:
        return
    # Users often pass M2M100-style ISO codes to NLLB/mBART: suggest the codes that start with them.
    close = [k for k in known if k.lower().startswith(code.lower()[:2])][:3]
    close += [k for k in difflib.get_close_matches(code, known, n=3, cutoff=0.5) if k not in close]
    hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
    examples = ", ".join(known[:4])
    raise ValueError(
        f"unknown {role} language {code!r} for the {family} tokenizer {type(tokenizer).__name__}{hint} "
        f"It knows {len(known)} codes such as {examples}."
    )


def resolve_languages(tokenizer: Any, src_lang: str | None, tgt_lang: str | None) -> LanguageSetup:
    """Work out how ``tokenizer``'s model family takes ``src_lang`` and ``tgt_lang``.

    >>> from transformers import NllbTokenizer
    >>> resolve_languages(NllbTokenizer(), "eng_Latn", "deu_Latn").family
    'nllb'
    """
    family = _family(tokenizer)
    if family in {"m2m100", "nllb", "mbart"}:
        if src_lang is None or tgt_lang is None:
            raise ValueError(
                f"a {family} model translates between many languages: pass both src_lang and tgt_lang "
                f"(codes such as {', '.join(_known_codes(tokenizer, family)[:3])})"
            )
        known = _known_codes(tokenizer, family)
        _check(src_lang, known, family, "source", tokenizer)
        _check(tgt_lang, known, family, "target", tokenizer)
        if family == "m2m100":
            bos = tokenizer.get_lang_id(tgt_lang)
        elif family == "mbart":
            bos = tokenizer.lang_code_to_id[tgt_lang]
        else:
            bos = tokenizer.convert_tokens_to_ids(tgt_lang)
        return LanguageSetup(family, src_lang, tgt_lang, int(bos))

    if family == "marian":
        targets = _known_codes(tokenizer, family)
        if not targets:  # one model per direction: the languages are fixed by the checkpoint
            if src_lang or tgt_lang:
                logger.info("MarianMT models translate one fixed direction; src_lang/tgt_lang are not used")
            return LanguageSetup(family, src_lang, tgt_lang)
        if tgt_lang is None:
            raise ValueError(f"this multi-target MarianMT model needs tgt_lang, one of {', '.join(targets[:8])} ...")
        _check(tgt_lang, targets, family, "target", tokenizer)
        return LanguageSetup(family, src_lang, tgt_lang, prefix=f">>{tgt_lang}<< ")

    if src_lang or tgt_lang:
        logger.warning(
            "%s has no known language-code convention; src_lang=%r and tgt_lang=%r are ignored",
            type(tokenizer).__name__, src_lang, tgt_lang,
        )
    return LanguageSetup(family, src_lang, tgt_lang)


def parse_language_codes(language_codes: Sequence[str] | None) -> dict[str, str]:
    """``CODE=MODEL_CODE`` items (the ``language_codes`` option) as a mapping from the data's codes to the model's.

    >>> parse_language_codes(["en=eng_Latn", "de=deu_Latn"])
    {'en': 'eng_Latn', 'de': 'deu_Latn'}
    """
    out = {}
    for item in language_codes or ():
        code, sep, model_code = item.partition("=")
        if not sep or not code or not model_code:
            raise ValueError(f"language_codes entries are CODE=MODEL_CODE (e.g. en=eng_Latn), got {item!r}")
        out[code] = model_code
    return out
