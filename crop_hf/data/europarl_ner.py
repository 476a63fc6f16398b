"""Europarl-NER: the same 799 Europarl sentences in English, German, Spanish and Italian, each tagged by hand.

The gold standard of label-projection papers (Agerri et al., LREC 2018,
``ixa-ehu/ner-evaluation-corpus-europarl``): project the English tags onto the human translation
and score them against that translation's own tags (``crop-hf evaluate-projection``). One config
per language (``en``, ``de``, ``es``, ``it``), one split, ``test``, read from the release file
``{lang}-europarl.test.conll02`` as it is: ``token<TAB>tag``, UTF-8, IOB2 over PER ORG LOC MISC
(CoNLL-2002/2003 guidelines), a blank line between sentences. Row *k* of one config is the
translation of row *k* of every other (sentence-aligned, not word-aligned): 799 rows each, 702
English and 693 German entities.

Features: ``id``, ``tokens``, ``ner_tags`` (``ClassLabel`` in CoNLL order, as ``conll5``) and ``lang``.

Example (``data_dir`` holding ``en-europarl.test.conll02`` and ``de-europarl.test.conll02``)::

    >>> import crop_hf  # doctest: +SKIP
    >>> crop_hf.load_dataset("europarl_ner", "de", data_dir="europarl-ner", split="test").num_rows  # doctest: +SKIP
    799
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import datasets

from crop_hf.data.builder import CropBuilderConfig, NerBuilder, find_split_files
from crop_hf.data.readers import read_europarl_ner
from crop_hf.labels import CONLL_LABELS

__all__ = ["EUROPARL_NER_LANGUAGES", "EUROPARL_NER_URL", "EuroparlNer", "EuroparlNerConfig"]

#: The release's files; ``{lang}`` is en, de, es or it.
EUROPARL_NER_URL = "https://raw.githubusercontent.com/ixa-ehu/ner-evaluation-corpus-europarl/master/{lang}-europarl.test.conll02"
EUROPARL_NER_LANGUAGES = ("en", "de", "es", "it")

_CITATION = """\
@inproceedings{agerri-etal-2018-building,
  title = "Building Named Entity Recognition Taggers via Parallel Corpora",
  author = "Agerri, Rodrigo and Chung, Yiling and Aldabe, Itziar and Aranberri, Nora and Labaka, Gorka and Rigau, German",
  booktitle = "Proceedings of the Eleventh International Conference on Language Resources and Evaluation (LREC 2018)",
  year = "2018"}
"""


@dataclass
class EuroparlNerConfig(CropBuilderConfig):
    """A Europarl-NER language.

    Args:
        lang: ISO code of the language (the config name).
        label_map: entity type renaming applied after reading (``None``: keep PER ORG LOC MISC).
    """

    lang: str = "en"
    label_map: Mapping[str, str | None] | None = None


class EuroparlNer(NerBuilder):
    """Europarl-NER's hand-tagged test sentences, one config per language, sentence-aligned across configs."""

    BUILDER_CONFIG_CLASS = EuroparlNerConfig
    LABELS = CONLL_LABELS
    CITATION = _CITATION
    HOMEPAGE = "https://github.com/ixa-ehu/ner-evaluation-corpus-europarl"
    BUILDER_CONFIGS: ClassVar[list] = [
        EuroparlNerConfig(name=lang, lang=lang, description=f"Europarl-NER {lang}") for lang in EUROPARL_NER_LANGUAGES
    ]

    def _split_generators(self, dl_manager) -> list[datasets.SplitGenerator]:
        lang = self.config.lang
        names = self._only({"test": (f"{lang}-europarl.test.conll02",)})
        if self.config.data_dir:
            files = find_split_files(self.config.data_dir, names, f"europarl_ner/{self.config.name}")
        else:
            files = dl_manager.download({split: EUROPARL_NER_URL.format(lang=lang) for split in names})
        return [datasets.SplitGenerator(name=split, gen_kwargs={"path": path, "split": split})
                for split, path in files.items()]

    def _generate_examples(self, path: str, split: str):
        sentences = read_europarl_ner(path, label_map=self.config.label_map, errors=self._errors,
                                      skipped=self._skipped_for(split))
        yield from self._examples(sentences, self.config.lang)
        self._report_skipped(split)
