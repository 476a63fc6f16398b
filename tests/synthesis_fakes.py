"""Deterministic stand-ins for the translation and NER pipelines, to test synthesis orchestration.

They return exactly what ``labeled-translation`` and ``token-classification`` return, built with
the real marker code, so the runner's sharding, resumption, filters, merging and multi-process
splitting can be checked on outputs whose right answer is known. (The real pipelines are
exercised end to end with tiny models in tests/test_synthesis.py.)

Rules: translation is the identity, except that a sentence containing "broken" loses its last
marker and one containing "explode" makes the whole call raise ValueError; the tagger labels capitalised words after the first one, LOC if they end in "burg",
ORG if they end in "AG", PER otherwise. The ``Recording*`` variants also keep every call's
arguments, to check how synthesis calls the models; :class:`ScriptedLanguageFilter` stands in for
langid.

Run as a script it synthesizes with these fakes (for the SIGKILL and torchrun tests):
``python synthesis_fakes.py INPUT_TEMPLATE OUTPUT_DIR [SECONDS_PER_CALL]``.
"""

from __future__ import annotations

import dataclasses
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import ClassVar

from crop_hf.engine.jobs import CorpusJob, ShardResult
from crop_hf.engine.options import RunOptions
from crop_hf.labels import CONLL_LABELS
from crop_hf.markers import extract, get_marker_style, mark_text
from crop_hf.synthesis import SynthesisConfig, SynthesisModels, synthesize


class FakeTranslator:
    #: what every output reports as ``hypotheses_tried`` (None: the ``num_return_sequences`` asked for)
    hypotheses_tried: int | None = None

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.calls = 0
        self.marker_style = get_marker_style("crop")

    def __call__(self, records, src_lang, tgt_lang, num_return_sequences=1, **kwargs):
        self.calls += 1
        time.sleep(self.delay)
        outputs = []
        for record in records:
            text = record if isinstance(record, str) else record["text"]
            if "explode" in text:
                raise ValueError(f"sentence {len(outputs)}: cannot translate {text!r}")
            marked = mark_text(text, [] if isinstance(record, str) else record["entities"])
            result = extract(marked, self.rewrite(marked, src_lang, tgt_lang)).as_dict()
            tried = num_return_sequences if self.hypotheses_tried is None else self.hypotheses_tried
            result.update(hypotheses_tried=tried, source=marked.source, marked_source=marked.text)
            outputs.append(result)
        return outputs

    def rewrite(self, marked, src_lang, tgt_lang) -> str:
        """The "translation" of a marked sentence: itself, less its last marker when it says "broken"."""
        translation = marked.text
        if "broken" in translation and marked.entities:
            cut = translation.rindex("__SLOT")
            translation = translation[:cut] + translation[cut + len(f"__SLOT{marked.entities[-1].slot}__"):]
        return translation


class WordByWordTranslator(FakeTranslator):
    """Translates word by word with ``words[(src_lang, tgt_lang)]``; unknown words (names) stay as they are.

    Markers pass through untouched, so labeled back-translation keeps every entity; a sentence whose
    words are not in the dictionary stays in its own language, which the language filter can catch.
    Every text it is asked to translate is recorded in ``seen``.
    """

    hypotheses_tried = 1

    def __init__(self, words: dict[tuple[str, str], dict[str, str]]) -> None:
        super().__init__()
        self.words = words
        self.seen: list[str] = []

    def __call__(self, records, src_lang, tgt_lang, num_return_sequences=1, **kwargs):
        self.seen += [record if isinstance(record, str) else record["text"] for record in records]
        return super().__call__(records, src_lang, tgt_lang, num_return_sequences, **kwargs)

    def rewrite(self, marked, src_lang, tgt_lang) -> str:
        table = self.words.get((src_lang, tgt_lang), {})
        return " ".join(table.get(word, word) for word in marked.text.split())


class RecordingTranslator(WordByWordTranslator):
    """A :class:`WordByWordTranslator` that records every call in ``requests`` as ``(inputs, keyword arguments)``.

    Only the keywords the caller passed are recorded: an option left out shows as absent, not as
    the default it would get. A labeled text containing "forgets" comes back complete but with no
    entities (an engine that reports success and loses every label).
    """

    def __init__(self, words: dict[tuple[str, str], dict[str, str]] | None = None) -> None:
        super().__init__(words or {})
        self.requests: list[tuple[list, dict]] = []

    def __call__(self, records, **kwargs):
        self.requests.append((list(records), dict(kwargs)))
        outputs = super().__call__(records, **kwargs)
        for record, output in zip(records, outputs, strict=True):
            if not isinstance(record, str) and "forgets" in record["text"]:
                output["entities"] = []
        return outputs


class FakeTagger:
    def __call__(self, texts, batch_size=None):
        results = []
        for text in texts:
            entities = []
            for k, match in enumerate(re.finditer(r"\S+", text)):
                word = match.group()
                if k and word[:1].isupper():
                    label = "LOC" if word.endswith("burg") else "ORG" if word.endswith("AG") else "PER"
                    entities.append({"entity_group": label, "score": 0.9, "word": word,
                                     "start": match.start(), "end": match.end()})
            results.append(entities)
        return results


class RecordingTagger(FakeTagger):
    """A :class:`FakeTagger` that records every call in ``requests`` as ``(texts, keyword arguments)``.

    A batch holding a text that contains "unreadable" is refused with ``ValueError``.
    """

    def __init__(self) -> None:
        self.requests: list[tuple[list[str], dict]] = []

    def __call__(self, texts, **kwargs):
        self.requests.append((list(texts), dict(kwargs)))
        if any("unreadable" in text for text in texts):
            raise ValueError("cannot tag an unreadable text")
        return super().__call__(texts, **kwargs)


class LimitedTagger(FakeTagger):
    """A :class:`FakeTagger` whose model, like a real one, declares how many tokens it takes:
    ``limit`` (a word is one token, plus ``<s>`` and ``</s>``). It tags longer texts anyway, so only
    the caller's length check can refuse them."""

    def __init__(self, limit: int) -> None:
        from types import SimpleNamespace

        config = SimpleNamespace(max_position_embeddings=limit, model_type="bert", pad_token_id=0)
        self.model = SimpleNamespace(config=config)
        self.tokenizer = _WordTokenizer()


class _WordTokenizer:
    model_max_length = None

    def __call__(self, texts):
        return {"input_ids": [[0, *range(len(text.split())), 2] for text in texts]}


class ScriptedLanguageFilter:
    """Stands in for :class:`~crop_hf.synthesis.LanguageIdFilter`: ``identified`` maps a text to the
    language it is taken for (any other text is taken for the language expected of it); every
    ``(text, expected)`` question is recorded in ``asked``."""

    def __init__(self, identified: dict[str, str]) -> None:
        self.identified = identified
        self.asked: list[tuple[str, str]] = []

    def accepts(self, text: str, expected: str) -> bool:
        self.asked.append((text, expected))
        return self.identified.get(text, expected) == expected


class FakeAligner:
    """Links word i to word i: right for the identity translation."""

    def align(self, sources, targets):
        return [[(i, i) for i in range(min(len(s), len(t)))] for s, t in zip(sources, targets, strict=True)]


class RecordingAligner(FakeAligner):
    """A :class:`FakeAligner` that records the ``(source words, target words)`` of every call in ``requests``."""

    def __init__(self) -> None:
        self.requests: list[tuple[list[list[str]], list[list[str]]]] = []

    def align(self, sources, targets):
        self.requests.append(([list(s) for s in sources], [list(t) for t in targets]))
        return super().align(sources, targets)


class FakeState:
    """Accelerate's ``PartialState`` as the shard engine uses it: process ``index`` of ``count``, barriers that pass."""

    def __init__(self, index: int, count: int) -> None:
        self.process_index, self.num_processes = index, count
        self.is_main_process = index == 0
        self.device = "cpu"

    def wait_for_everyone(self) -> None:
        pass


def record_bars(monkeypatch) -> list[dict]:
    """Spy on the progress bars the driver opens (one per key): each one's options are appended to the list returned."""
    import tqdm.auto

    seen: list[dict] = []
    real = tqdm.auto.tqdm
    monkeypatch.setattr(tqdm.auto, "tqdm", lambda **options: seen.append(options) or real(**options))
    return seen


def as_rows(result: ShardResult) -> tuple[list[dict], list[dict], Counter]:
    """A step's :class:`ShardResult` as a shard file holds it: ``(kept rows, dropped rows, counts per reason)``."""
    return ([dataclasses.asdict(row) for row in result.kept], [dataclasses.asdict(row) for row in result.dropped],
            result.reasons())


@dataclass
class ListConfig(RunOptions):
    run_only = ("keys",)

    keys: list[str] = field(default_factory=lambda: ["xx"], metadata={"help": "the run's keys"})
    show_progress: bool = field(default=False, kw_only=True, metadata={"help": "bars"})


@dataclass
class TextRow:
    text: str = field(metadata={"help": "an item"})


@dataclass
class OddRow:
    text: str = field(metadata={"help": "an item"})
    reason: str = field(default="odd", metadata={"help": "why"})


class ListJob(CorpusJob[TextRow, OddRow]):
    """A toy corpus job: each key's shards are given as ``(index, items)`` lists; ``process(key, index, items)``
    (default :func:`keep_even`) is the step; every step is recorded in ``processed``."""

    name = "list"
    reasons: ClassVar[dict[str, str]] = {"odd": "an odd number"}
    kept_type, dropped_type = TextRow, OddRow
    keys_field = "keys"

    def __init__(self, config: ListConfig, shards: dict, process=None) -> None:
        super().__init__(config)
        self.given, self.step = shards, process or (lambda key, index, items: keep_even(items))
        self.processed: list[tuple[str, int]] = []

    def shards(self, key):
        return self.given[key]

    def process(self, key, index, items, status):
        self.processed.append((key, index))
        return self.step(key, index, items)

    def card(self, statistics, *, command_line):
        return "# list\n"


def run_as(monkeypatch, index: int, count: int, job: CorpusJob):
    """Run ``job`` as process ``index`` of ``count`` (Accelerate's state replaced by a :class:`FakeState`)."""
    from crop_hf.engine import processes
    from crop_hf.engine.jobs import run_job

    monkeypatch.setattr(processes, "process_state", lambda: FakeState(index, count))
    return run_job(job)


def numbered(count: int, size: int) -> list[tuple[int, list[str]]]:
    """``count`` items ``s0, s1, ...`` in shards of ``size``."""
    items = [f"s{i}" for i in range(count)]
    return [(k, items[k * size:(k + 1) * size]) for k in range((count + size - 1) // size)]


def keep_even(items) -> ShardResult:
    """Keeps the even-numbered items (``s0``, ``s2``, ...) and drops the odd ones as ``odd``."""
    return ShardResult([TextRow(item) for item in items if int(item[1:]) % 2 == 0],
                       [OddRow(item) for item in items if int(item[1:]) % 2])


def fake_models(delay: float = 0.0) -> SynthesisModels:
    return SynthesisModels(translator=FakeTranslator(delay), tagger=FakeTagger(), labels=CONLL_LABELS,
                           aligner=FakeAligner())


def fake_config(input_template: str, output_dir: str, **overrides) -> SynthesisConfig:
    settings = dict(tgt_langs=["de", "nl"], input=input_template, output_dir=output_dir, mt_model="fake-mt",
                    ner_model="fake-ner", shard_size=3, language_filter=False, show_progress=False, max_words=12)
    settings.update(overrides)
    return SynthesisConfig(**settings)


if __name__ == "__main__":
    input_template, output_dir = sys.argv[1], sys.argv[2]
    delay = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    result = synthesize(fake_config(input_template, output_dir), models=fake_models(delay))
    if result.statistics:
        print(result.table())
