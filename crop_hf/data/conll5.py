"""CoNLL-5: the five CoNLL-style NER corpora of CroP's experiments, one config per language.

============  ====================================================================================
config        source
============  ====================================================================================
``en``        CoNLL-2003 English (public copy, ``train.txt``/``valid.txt``/``test.txt``; the
              original ``eng.train``/``eng.testa``/``eng.testb`` in ``data_dir`` work too). IOB1 in
              the original files, converted to IOB2.
``de``        CoNLL-2003 German: licensed (ECI/LDC), never downloaded. Pass ``data_dir`` holding
              ``deu.train``, ``deu.testa``, ``deu.testb`` (5 columns, IOB1, Latin-1 or UTF-8).
``es``        CoNLL-2002 Spanish ``esp.train``/``esp.testa``/``esp.testb``.
``nl``        CoNLL-2002 Dutch ``ned.train``/``ned.testa``/``ned.testb``.
``no``        Norwegian Bokmål. ``source="nodalida"`` (default, what CroP used): the NoDaLiDa-2019
              release ``no_bokmaal-ud-{train,dev,test}.bioes`` (BIOES over GEO ORG OTH PRS).
              ``source="norne"``: NorNE's CoNLL-U ``no_bokmaal-ud-{train,dev,test}.conllu``.
============  ====================================================================================

Every config has the features ``id``, ``tokens``, ``ner_tags`` (``ClassLabel`` in Hugging Face's
``conll2002``/``conll2003`` order: ``O B-PER I-PER B-ORG I-ORG B-LOC I-LOC B-MISC I-MISC``) and
``lang``, and the splits train / validation / test.

Norwegian types map onto the four CoNLL types. NoDaLiDa: ``PRS→PER, ORG→ORG, GEO→LOC,
OTH→MISC``. NorNE: ``PER→PER, ORG→ORG, LOC→LOC, GPE_LOC→LOC, GPE_ORG→ORG, PROD→MISC,
EVT→MISC, DRV→MISC, MISC→MISC`` (GPE keeps its annotated sense; products, events and derived
names such as "norsk" are what CoNLL calls MISC). Override with ``label_map={...}``; a type mapped to
``None`` becomes ``O``.

Example (``data_dir`` holding ``esp.train``, ``esp.testa``, ``esp.testb``)::

    from crop_hf.data.conll5 import Conll5

    builder = Conll5(config_name="es", data_dir="conll2002", cache_dir="/tmp/hf")
    builder.download_and_prepare()
    ds = builder.as_dataset()
    ds["train"].features["ner_tags"].feature.names[:3]  # ['O', 'B-PER', 'I-PER']
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import datasets

from crop_hf.data.builder import CropBuilderConfig, NerBuilder, find_split_files
from crop_hf.data.readers import (
    NODALIDA_TYPE_MAP,
    NORNE_TYPE_MAP,
    read_bioes,
    read_conll,
    read_conllu_ner,
)
from crop_hf.labels import CONLL_LABELS

__all__ = ["CONLL2002_URL", "CONLL2003_EN_URL", "NODALIDA_URL", "NORNE_URL", "Conll5", "Conll5Config"]

#: NLTK's UTF-8 copy of CoNLL-2002 (what Hugging Face's ``conll2002`` used); ``{file}`` is e.g. ``esp.train``.
CONLL2002_URL = "https://raw.githubusercontent.com/teropa/nlp/master/resources/corpora/conll2002/{file}"
#: Public copy of CoNLL-2003 English (what Hugging Face's ``conll2003`` used).
CONLL2003_EN_URL = "https://data.deepai.org/conll2003.zip"
#: NoDaLiDa-2019 Norwegian Bokmål (Johansen), Git LFS files; ``{split}`` is train, dev or test.
NODALIDA_URL = "https://github.com/ljos/navnkjenner/raw/master/data/bokmaal/no_bokmaal-ud-{split}.bioes"
#: NorNE Bokmål in CoNLL-U.
NORNE_URL = "https://raw.githubusercontent.com/ltgoslo/norne/master/ud/nob/no_bokmaal-ud-{split}.conllu"

_CITATION = """\
@inproceedings{tjong-kim-sang-2002-introduction,
  title = "Introduction to the {C}o{NLL}-2002 Shared Task: Language-Independent Named Entity Recognition",
  author = "Tjong Kim Sang, Erik F.", booktitle = "{COLING}-02", year = "2002"}
@inproceedings{tjong-kim-sang-de-meulder-2003-introduction,
  title = "Introduction to the {C}o{NLL}-2003 Shared Task: Language-Independent Named Entity Recognition",
  author = "Tjong Kim Sang, Erik F. and De Meulder, Fien", booktitle = "{CoNLL}-2003", year = "2003"}
@inproceedings{johansen-2019-named,
  title = "Named-Entity Recognition for {N}orwegian", author = "Johansen, Bjarte",
  booktitle = "NoDaLiDa 2019", year = "2019"}
"""

# split -> file names a release uses for it, first match wins.
_FILES: dict[str, dict[str, tuple[str, ...]]] = {
    "en": {"train": ("eng.train", "train.txt"), "validation": ("eng.testa", "valid.txt"), "test": ("eng.testb", "test.txt")},
    "de": {
        "train": ("deu.train", "deuutf.train"),
        "validation": ("deu.testa", "deuutf.testa"),
        "test": ("deu.testb", "deuutf.testb"),
    },
    "es": {"train": ("esp.train",), "validation": ("esp.testa",), "test": ("esp.testb",)},
    "nl": {"train": ("ned.train",), "validation": ("ned.testa",), "test": ("ned.testb",)},
    "nodalida": {split: (f"no_bokmaal-ud-{name}.bioes",) for split, name in
                 (("train", "train"), ("validation", "dev"), ("test", "test"))},
    "norne": {split: (f"no_bokmaal-ud-{name}.conllu",) for split, name in
              (("train", "train"), ("validation", "dev"), ("test", "test"))},
}
_RELEASE_SPLITS = {"train": "train", "validation": "dev", "test": "test"}


@dataclass
class Conll5Config(CropBuilderConfig):
    """A CoNLL-5 language.

    Args:
        lang: ISO code of the language (the config name).
        source: for ``no`` only: ``"nodalida"`` (default) or ``"norne"``.
        label_map: entity type renaming applied after reading (``None``: the documented default).
        encoding: ``"auto"`` (UTF-8, falling back to ISO-8859-1 per line) or a codec name.
    """

    lang: str = "en"
    source: str = "conll"
    label_map: Mapping[str, str | None] | None = None
    encoding: str = "auto"


class Conll5(NerBuilder):
    """CoNLL-2002/2003 English, German, Spanish, Dutch and Norwegian NER with Hugging Face's label ids."""

    BUILDER_CONFIG_CLASS = Conll5Config
    LABELS = CONLL_LABELS
    CITATION = _CITATION
    BUILDER_CONFIGS: ClassVar[list] = [
        Conll5Config(name="en", lang="en", source="conll", description="CoNLL-2003 English"),
        Conll5Config(name="de", lang="de", source="conll", description="CoNLL-2003 German (licensed; data_dir)"),
        Conll5Config(name="es", lang="es", source="conll", description="CoNLL-2002 Spanish"),
        Conll5Config(name="nl", lang="nl", source="conll", description="CoNLL-2002 Dutch"),
        Conll5Config(name="no", lang="no", source="nodalida", description="Norwegian Bokmål (NoDaLiDa-2019 or NorNE)"),
    ]

    @property
    def _layout(self) -> str:
        if self.config.lang != "no":
            return self.config.lang
        if self.config.source not in ("nodalida", "norne"):
            raise ValueError(f"conll5/no: source must be 'nodalida' or 'norne', got {self.config.source!r}")
        return self.config.source

    def _split_generators(self, dl_manager) -> list[datasets.SplitGenerator]:
        layout = self._layout
        if self.config.data_dir:
            files = find_split_files(self.config.data_dir, self._only(_FILES[layout]), f"conll5/{self.config.name}")
        elif layout == "de":
            raise FileNotFoundError(
                "conll5/de: CoNLL-2003 German is licensed (ECI/LDC) and is never downloaded. Pass "
                "data_dir=<folder holding deu.train, deu.testa and deu.testb> (the 5-column files of the "
                "CoNLL-2003 release, built with its ECI Multilingual Text CD)."
            )
        elif layout == "en":
            folder = dl_manager.download_and_extract(CONLL2003_EN_URL)
            files = {split: os.path.join(folder, names[-1]) for split, names in self._only(_FILES["en"]).items()}
        elif layout in ("es", "nl"):
            files = dl_manager.download({split: CONLL2002_URL.format(file=names[0])
                                         for split, names in self._only(_FILES[layout]).items()})
        else:
            url = NODALIDA_URL if layout == "nodalida" else NORNE_URL
            files = dl_manager.download({split: url.format(split=name)
                                         for split, name in self._only(_RELEASE_SPLITS).items()})
        return [datasets.SplitGenerator(name=split, gen_kwargs={"path": path, "split": split})
                for split, path in files.items()]

    def _read(self, path: str, split: str):
        layout = self._layout
        options = {"errors": self._errors, "skipped": self._skipped_for(split)}
        if layout == "nodalida":
            return read_bioes(path, label_map=self.config.label_map or NODALIDA_TYPE_MAP, **options)
        if layout == "norne":
            return read_conllu_ner(path, label_map=self.config.label_map or NORNE_TYPE_MAP, **options)
        # CoNLL-2003 ships IOB1; reading IOB2 as IOB1 changes nothing, so the public IOB2 copy is safe too.
        scheme = "IOB1" if layout in ("en", "de") else "IOB2"
        return read_conll(path, scheme=scheme, label_map=self.config.label_map, encoding=self.config.encoding, **options)

    def _generate_examples(self, path: str, split: str):
        yield from self._examples(self._read(path, split), self.config.lang)
        self._report_skipped(split)
