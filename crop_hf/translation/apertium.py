"""Apertium, the rule-based translation engine, as a labeled translator (``--mt_model apertium``).

Apertium (https://apertium.org, in Debian: ``apt-get install apertium apertium-eng-spa``) is the
strongest translator there is for several languages (Catalan, Galician, Basque, Occitan, Breton,
Aragonese...), needs no GPU and translates thousands of sentences a second. Its *format handling*
carries inline HTML tags through translation, attached to the words they wrap, reordering
included. :class:`Apertium` uses that to translate marked sentences:

1. each entity's markers (in any marker style) become an inline tag ``<b id="K">...</b>`` around
   the entity, the rest of the sentence is HTML-escaped, and each sentence is one ``<p>``;
2. a batch of sentences goes to one ``apertium -u -f html PAIR`` process (its start-up, about
   0.3 s, costs as much as a few hundred sentences, so a batch is many sentences: ``batch_size``);
3. the tags that come back become the marker style's markers again. Apertium writes an inline tag
   around every word of a phrase and may put words between them (``Microsoft Corporation`` →
   ``<b id="1">Empresa</b> de <b id="1">Microsoft</b>``): the pieces of one tag with nothing of
   another tag between them are one entity again. A tag Apertium drops, splits around another
   one or leaves empty comes back as a broken marker, so the record is not complete and is
   dropped as ``markers_incomplete``, as with any translator.

The pair is chosen from the run's languages (``en`` → ``es`` is ``eng-spa``; two- and three-letter
codes both work); a pair that is not installed, or a missing ``apertium`` binary, is a one-line
:class:`ApertiumNotInstalledError` naming the Debian packages to install.

Apertium gives one translation per sentence and no scores: beams, n-best lists, constrained
decoding, the CTranslate2 backend and the projection methods that score with the translation model
(``insertion``, ``rerank``, ``hybrid_rerank``) do not apply (:func:`not_applicable`).

>>> pair_candidates("en", "es")
['en-es', 'en-spa', 'eng-es', 'eng-spa']
>>> debian_package("es", "en"), debian_package("gl", "en")
('apertium-eng-spa', 'apertium-en-gl')
>>> from crop_hf.markers import mark_text
>>> apertium_html(mark_text("I met Anna .", [{"start": 6, "end": 10, "label": "PER"}]))
'I met <b id="0">Anna</b> .'
>>> read_html(mark_text("I met Anna .", [{"start": 6, "end": 10, "label": "PER"}]), 'Conocí a <b id="0">Ana</b> .')
'Conocí a __SLOT0__ Ana __SLOT0__ .'
"""

from __future__ import annotations

import hashlib
import html
import logging
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from crop_hf.errors import UserError
from crop_hf.markers import MarkedSentence, MarkerStyle, get_marker_style

__all__ = [
    "APERTIUM",
    "DEFAULT_BATCH_SIZE",
    "Apertium",
    "ApertiumNotInstalledError",
    "apertium_html",
    "check_apertium",
    "debian_package",
    "describe_translator",
    "is_apertium",
    "not_applicable",
    "pair_candidates",
    "read_html",
]

logger = logging.getLogger(__name__)

#: The translation-model name that selects Apertium (``--mt_model apertium``).
APERTIUM = "apertium"

#: Sentences per Apertium process: one start-up (about 0.3 s) costs as much as a few hundred sentences.
DEFAULT_BATCH_SIZE = 1000

#: ISO 639-1 codes (as M2M100 spells languages) and the ISO 639-3 codes Apertium's newer pairs use.
ISO_639_3: dict[str, str] = {
    "af": "afr", "an": "arg", "ast": "ast", "be": "bel", "bg": "bul", "br": "bre", "ca": "cat", "cy": "cym",
    "da": "dan", "de": "deu", "en": "eng", "eo": "epo", "es": "spa", "eu": "eus", "fr": "fra", "frp": "frp",
    "gl": "glg", "hi": "hin", "hr": "hbs", "bs": "hbs", "sr": "hbs", "sh": "hbs", "id": "ind", "is": "isl",
    "it": "ita", "mk": "mkd", "ms": "zlm", "nb": "nob", "nl": "nld", "nn": "nno", "no": "nor", "oc": "oci",
    "pl": "pol", "pt": "por", "ro": "ron", "ru": "rus", "sc": "srd", "sl": "slv", "sv": "swe", "szl": "szl",
    "uk": "ukr", "ur": "urd",
}

#: Debian's Apertium pair packages (``apt-cache search apertium``, Debian 12), by the pair in their name;
#: each translates at least one way between its two languages.
DEBIAN_PAIRS: tuple[str, ...] = (
    "afr-nld", "arg-cat", "bel-rus", "br-fr", "cat-ita", "cat-srd", "dan-nor", "en-gl", "eng-cat", "eng-spa",
    "eo-ca", "eo-en", "eo-es", "eo-fr", "es-gl", "es-pt", "es-ro", "eu-en", "eu-es", "fr-es", "fra-cat", "fra-frp",
    "hbs-eng", "hbs-mkd", "hbs-slv", "ind-zlm", "isl-eng", "isl-swe", "mkd-bul", "mkd-eng", "nno-nob", "oc-ca",
    "oc-es", "oci-fra", "pol-szl", "por-cat", "pt-gl", "rus-ukr", "spa-arg", "spa-ast", "spa-cat", "spa-ita",
    "srd-ita", "swe-dan", "swe-nor", "urd-hin",
)

# An inline tag of ours (any attribute order Apertium may write back), any other tag, a closing tag.
_TAG = re.compile(r'<b\s+id="(?P<slot>\d+)"\s*>|(?P<close></b\s*>)|<[^>]*>')
_PARAGRAPH = re.compile(r"<p>(.*?)</p>", re.DOTALL)
_VERSION = re.compile(r"(\d+(?:\.\d+)+)")


class ApertiumNotInstalledError(UserError, FileNotFoundError):
    """No ``apertium`` binary, or no installed pair for the languages asked: the message names the packages."""


def is_apertium(mt_model: Any) -> bool:
    """Whether ``mt_model`` (a model name, or an engine) selects Apertium."""
    return isinstance(mt_model, Apertium) or (isinstance(mt_model, str) and mt_model.strip().lower() == APERTIUM)


def _codes(lang: str) -> list[str]:
    """The codes Apertium may spell ``lang`` with: as given (``eng_Latn`` read as ``eng``), then its ISO 639-3."""
    base = re.split(r"[-_]", lang.strip())[0].lower()
    return list(dict.fromkeys([base, ISO_639_3.get(base, base)]))


def pair_candidates(src_lang: str, tgt_lang: str) -> list[str]:
    """The names Apertium may give the ``src_lang`` → ``tgt_lang`` pair, in the order they are tried."""
    return [f"{a}-{b}" for a in _codes(src_lang) for b in _codes(tgt_lang)]


def debian_package(src_lang: str, tgt_lang: str) -> str | None:
    """The Debian package of Apertium's pair between the two languages (either way), if Debian has one."""
    wanted = {frozenset((a, b)) for a in _codes(src_lang) for b in _codes(tgt_lang)}
    for pair in DEBIAN_PAIRS:
        if frozenset(pair.split("-")) in wanted:
            return f"apertium-{pair}"
    return None


def not_applicable(*, num_beams: int | None = 1, num_return_sequences: int | None = 1,
                   constrain_markers: bool = False, backend: str | None = "transformers",
                   compute_type: str | None = None, scoring_method: str | None = None) -> tuple[list[str], list[str]]:
    """What a run asked of the translator that Apertium cannot do, in CLI spelling: ``(ignored, refused)``.

    Beams and n-best lists are ignored (Apertium gives its one translation, which is what a beam of
    one gives); constrained decoding, another backend, a compute type and a method that scores with
    the translation model are refused, since the run cannot do what they ask.

    >>> not_applicable(num_beams=5, num_return_sequences=3)
    (['--num_beams 5', '--num_return_sequences 3'], [])
    >>> not_applicable(constrain_markers=True, scoring_method="insertion")[1]
    ['--constrain_markers', '--method insertion (it scores with the translation model)']
    """
    ignored = [f"--{name} {value}" for name, value in (("num_beams", num_beams),
                                                         ("num_return_sequences", num_return_sequences))
               if value not in (None, 1)]
    refused = []
    if constrain_markers:
        refused.append("--constrain_markers")
    if backend not in (None, "transformers"):
        refused.append(f"--backend {backend}")
    if compute_type is not None:
        refused.append(f"--compute_type {compute_type}")
    if scoring_method:
        refused.append(f"--method {scoring_method} (it scores with the translation model)")
    return ignored, refused


def apertium_html(marked: MarkedSentence, style: MarkerStyle | None = None) -> str:
    """``marked`` as Apertium's HTML input: entity *k* (in sentence order) inside ``<b id="k">``, the rest escaped."""
    style = style or get_marker_style(marked.style)
    markers = style.find(marked.text)
    if len(markers) != 2 * len(marked.entities):
        raise ValueError(f"{marked.text!r} has {len(markers)} markers for {len(marked.entities)} entities")
    parts, cursor = [], 0
    for k in range(len(marked.entities)):
        opening, closing = markers[2 * k], markers[2 * k + 1]
        parts.append(html.escape(marked.text[cursor:opening.start].strip(), quote=False))
        # no space inside the tag: Apertium attaches it to the words it wraps
        parts.append(f'<b id="{k}">{html.escape(marked.text[opening.end:closing.start].strip(), quote=False)}</b>')
        cursor = closing.end
    parts.append(html.escape(marked.text[cursor:].strip(), quote=False))
    return " ".join(part for part in parts if part)


def read_html(marked: MarkedSentence, output: str, style: MarkerStyle | None = None) -> str:
    """One translated paragraph of Apertium's HTML back as a translation marked in ``marked``'s style.

    Pieces of one tag with no other tag between them become one entity (Apertium tags every word
    of a phrase); a tag split around another one, opened and never closed, or emptied keeps its
    pieces as separate markers, which extraction reports as broken.
    """
    style = style or get_marker_style(marked.style)
    slots = [entity.slot for entity in marked.entities]
    markers = style.find(marked.text)
    if style.typed and len(markers) == 2 * len(slots):  # each entity's slot as its own markers say
        slots = [markers[2 * k].slot for k in range(len(slots))]
    text, open_tags, pieces, lone = "", [], [], []  # pieces: (entity, start, end) in ``text``
    cursor = 0
    for match in _TAG.finditer(output):
        text += html.unescape(output[cursor:match.start()])
        cursor = match.end()
        if match.group("slot") is not None:
            open_tags.append((int(match.group("slot")), len(text)))
        elif match.group("close") is not None and open_tags:
            entity, start = open_tags.pop()
            pieces.append((entity, start, len(text)))
    text += html.unescape(output[cursor:])
    lone = [(entity, start) for entity, start in open_tags]
    spans = []
    for entity in sorted({piece[0] for piece in pieces}):
        own = sorted((s, e) for k, s, e in pieces if k == entity)
        first, last = own[0][0], own[-1][1]
        foreign = [s for k, s, _ in pieces if k != entity and first <= s < last]
        spans += [(entity, first, last)] if not foreign else [(entity, s, e) for s, e in own]
    events = []  # (position, order, marker): closings before openings at one position, an empty span whole
    for entity, start, end in spans:
        if entity >= len(slots):
            continue  # a tag Apertium invented: its words stay, unmarked
        opening, closing = style.markers(slots[entity])
        if start == end:
            events.append((start, 1, f"{opening} {closing}"))
        else:
            events += [(start, 1, opening), (end, 0, closing)]
    events += [(start, 1, style.markers(slots[entity])[0]) for entity, start in lone if entity < len(slots)]
    result, cursor = [], 0
    for position, _, marker in sorted(events, key=lambda event: (event[0], event[1])):
        result += [text[cursor:position], f" {marker} "]
        cursor = position
    result.append(text[cursor:])
    return " ".join("".join(result).split())


class Apertium:
    """The ``apertium`` command as a labeled translator: marked sentences in, marked translations out.

    Args:
        binary: the ``apertium`` command (default: the one on ``PATH``).
        batch_size: sentences per Apertium process (default :data:`DEFAULT_BATCH_SIZE`).
        timeout: seconds one process may take (default: none).

    Use it where crop-hf takes a translator: ``mt_model="apertium"`` in synthesis and
    translate-and-align (``crop-hf synthesize --mt_model apertium``), or
    ``pipeline("labeled-translation", model=Apertium())``
    (:class:`~crop_hf.translation.pipeline.TextEngineTranslationPipeline`).
    """

    name = APERTIUM

    def __init__(self, binary: str | None = None, *, batch_size: int = DEFAULT_BATCH_SIZE,
                 timeout: float | None = None) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self._binary = binary
        self.batch_size = batch_size
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"Apertium({self.binary!r})"

    @cached_property
    def binary(self) -> str:
        """The ``apertium`` command; :class:`ApertiumNotInstalledError` naming the package when there is none."""
        found = shutil.which(self._binary or APERTIUM)
        if found is None:
            raise ApertiumNotInstalledError(
                f"Apertium is not installed (no {self._binary or APERTIUM!r} command): install it with "
                f"'apt-get install apertium' and a language pair, e.g. 'apt-get install apertium-eng-spa'")
        return found

    def _run(self, *arguments: str, text: str = "") -> str:
        done = subprocess.run([self.binary, *arguments], input=text, capture_output=True, text=True,
                              encoding="utf-8", timeout=self.timeout, check=False)
        if done.returncode != 0:
            detail = (done.stderr or done.stdout).strip().splitlines()
            raise RuntimeError(f"'apertium {' '.join(arguments)}' failed (exit {done.returncode})"
                               + (f": {detail[-1]}" if detail else ""))
        return done.stdout

    @cached_property
    def version(self) -> str:
        """Apertium's version (``apertium -V``), e.g. ``"3.8.3"``."""
        printed = self._run("-V")
        found = _VERSION.search(printed)
        return found.group(1) if found else printed.strip()

    @cached_property
    def installed_pairs(self) -> list[str]:
        """The translation directions installed (``apertium -l``), e.g. ``["eng-spa", "spa-eng"]``."""
        return sorted(line.strip() for line in self._run("-l").splitlines() if line.strip())

    def pair(self, src_lang: str, tgt_lang: str) -> str:
        """The installed pair translating ``src_lang`` into ``tgt_lang``; a one-line error naming the package otherwise."""
        installed = self.installed_pairs
        for name in pair_candidates(src_lang, tgt_lang):
            if name in installed:
                return name
        package = debian_package(src_lang, tgt_lang)
        install = (f"install it with 'apt-get install {package}'" if package else
                   "look for its package with 'apt-cache search apertium'")
        raise ApertiumNotInstalledError(
            f"Apertium has no {src_lang}->{tgt_lang} pair installed (installed: {', '.join(installed) or 'none'}): "
            f"{install}")

    def pair_digest(self, pair: str) -> str:
        """A digest of the pair's linguistic data (its mode file and every file the mode reads).

        A pair's translations change with its data as much as with the engine, and Debian updates
        them separately; this digest goes into a run's fingerprint with :attr:`version`.
        """
        mode = Path(self.binary).resolve().parent.parent / "share" / "apertium" / "modes" / f"{pair}.mode"
        if not mode.is_file():
            return "unknown"
        digest = hashlib.sha256(mode.read_bytes())
        for path in sorted(set(re.findall(r"'(/[^']+)'", mode.read_text(encoding="utf-8", errors="replace")))):
            if Path(path).is_file():
                digest.update(Path(path).read_bytes())
        return digest.hexdigest()[:16]

    def describe(self, directions: Iterable[tuple[str, str]]) -> dict[str, Any]:
        """The engine, its version and each pair's data digest: what a run's fingerprint and card say of it."""
        pairs = sorted({self.pair(src, tgt) for src, tgt in directions})
        return {"engine": APERTIUM, "version": self.version, "pairs": {pair: self.pair_digest(pair) for pair in pairs}}

    def translate_html(self, paragraphs: Sequence[str], src_lang: str, tgt_lang: str) -> list[str]:
        """Translate HTML fragments, ``batch_size`` per Apertium process; one output fragment per input."""
        pair = self.pair(src_lang, tgt_lang)
        outputs: list[str] = []
        for start in range(0, len(paragraphs), self.batch_size):
            batch = [" ".join(paragraph.split()) for paragraph in paragraphs[start : start + self.batch_size]]
            wanted = [k for k, paragraph in enumerate(batch) if paragraph]  # an empty paragraph stays empty
            text = "".join(f"<p>{batch[k]}</p>\n" for k in wanted)
            found = _PARAGRAPH.findall(self._run("-u", "-f", "html", pair, text=text)) if wanted else []
            if len(found) != len(wanted):
                raise RuntimeError(f"apertium {pair} returned {len(found)} paragraphs for {len(wanted)} sentences")
            translated = dict(zip(wanted, found, strict=True))
            outputs += [translated.get(k, "").strip() for k in range(len(batch))]
        return outputs

    def translate(self, texts: Sequence[str], src_lang: str, tgt_lang: str) -> list[str]:
        """Translate plain sentences."""
        paragraphs = [html.escape(text, quote=False) for text in texts]
        return [" ".join(html.unescape(_TAG.sub(" ", output)).split())
                for output in self.translate_html(paragraphs, src_lang, tgt_lang)]

    def translate_marked(self, sentences: Sequence[MarkedSentence], src_lang: str, tgt_lang: str,
                         style: MarkerStyle | None = None) -> tuple[list[str], list[dict[int, str]]]:
        """Translate marked sentences: ``(marked translations, entity translations)``, one of each per sentence.

        The translations carry the markers of ``style`` (the sentences' own by default); the entity
        translations (slot → the entity translated on its own) are made for the sentences whose
        untyped style needs them to restore labels, in the same Apertium process, and are empty
        for the others.
        """
        styles = [style or get_marker_style(sentence.style) for sentence in sentences]
        wanted = [(i, entity) for i, (sentence, own) in enumerate(zip(sentences, styles, strict=True))
                  if own.needs_entity_translations(sentence) for entity in sentence.entities]
        paragraphs = [apertium_html(sentence, own) for sentence, own in zip(sentences, styles, strict=True)]
        paragraphs += [html.escape(entity.text, quote=False) for _, entity in wanted]
        outputs = self.translate_html(paragraphs, src_lang, tgt_lang)
        marked = [read_html(sentence, output, own)
                  for sentence, output, own in zip(sentences, outputs[: len(sentences)], styles, strict=True)]
        entity_translations: list[dict[int, str]] = [{} for _ in sentences]
        for (i, entity), output in zip(wanted, outputs[len(sentences):], strict=True):
            entity_translations[i][entity.slot] = " ".join(html.unescape(_TAG.sub(" ", output)).split())
        return marked, entity_translations


def check_apertium(directions: Iterable[tuple[str, str]], engine: Apertium | None = None) -> Apertium:
    """An :class:`Apertium` with every direction installed (checked now, before any work); one-line errors otherwise."""
    engine, directions = engine or Apertium(), list(directions)
    try:
        _ = engine.binary  # found, or the packages of these directions named
    except ApertiumNotInstalledError:
        packages = sorted({package for src, tgt in directions if (package := debian_package(src, tgt))})
        raise ApertiumNotInstalledError(
            f"Apertium is not installed (no {engine._binary or APERTIUM!r} command): install it with "
            f"'apt-get install {' '.join(['apertium', *packages])}'") from None
    for src, tgt in directions:
        engine.pair(src, tgt)
    return engine


def describe_translator(mt_model: str, directions: Iterable[tuple[str, str]]) -> Mapping[str, Any]:
    """What a run's fingerprint adds for its translator: Apertium's version and pairs; nothing for a model
    (its name and revision are config fields already, and earlier runs keep their fingerprints)."""
    return {"translator": Apertium().describe(directions)} if is_apertium(mt_model) else {}


