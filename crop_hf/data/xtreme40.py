"""XTREME-40: PAN-X / WikiANN NER in the 40 languages of the XTREME benchmark.

One config per language (``de``, ``sw``, ...) and ``all`` (every language, or those in
``languages=(...)``, concatenated; ``lang`` tells them apart). Features: ``id``, ``tokens``,
``ner_tags`` (``ClassLabel`` in Hugging Face ``xtreme``'s PAN-X order: ``O B-PER I-PER B-ORG I-ORG
B-LOC I-LOC``) and ``lang``; splits train / validation (the release's ``dev``) / test.

Without ``data_dir`` the builder downloads the PAN-X archive Hugging Face's ``xtreme`` builder used
(``panx_dataset.zip``, holding ``{lang}.tar.gz`` with ``train``, ``dev``, ``test``). A ``data_dir``
may hold any of: ``{lang}/train``, ``{lang}/dev``, ``{lang}/test`` (extracted); ``{lang}.tar.gz``;
or ``panx_dataset.zip`` itself.

Example (``data_dir`` holding ``de/train``, ``de/dev``, ``de/test``)::

    from crop_hf.data.xtreme40 import Xtreme40

    builder = Xtreme40(config_name="de", data_dir="wikiann", cache_dir="/tmp/hf")
    builder.download_and_prepare()
    builder.as_dataset(split="validation").num_rows  # 10000
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar

import datasets

from crop_hf.data.builder import DATA_DIR_HINT, CropBuilderConfig, NerBuilder
from crop_hf.data.readers import read_panx
from crop_hf.errors import MissingFilesError
from crop_hf.labels import PANX_LABELS

__all__ = ["PANX_URL", "XTREME40_LANGUAGES", "Xtreme40", "Xtreme40Config"]

PANX_URL = "https://s3.amazonaws.com/datasets.huggingface.co/wikiann/1.1.0/panx_dataset.zip"

#: The 40 PAN-X languages of XTREME, in the benchmark's order.
XTREME40_LANGUAGES: tuple[str, ...] = (
    "ar", "he", "vi", "id", "jv", "ms", "tl", "eu", "ml", "ta", "te", "af", "nl", "en", "de", "el",
    "bn", "hi", "mr", "ur", "fa", "fr", "it", "pt", "es", "bg", "ru", "ja", "ka", "ko", "th", "sw",
    "yo", "my", "zh", "kk", "tr", "et", "fi", "hu",
)

_CITATION = """\
@inproceedings{pan-etal-2017-cross,
  title = "Cross-lingual Name Tagging and Linking for 282 Languages",
  author = "Pan, Xiaoman and Zhang, Boliang and May, Jonathan and Nothman, Joel and Knight, Kevin and Ji, Heng",
  booktitle = "ACL 2017", year = "2017"}
@inproceedings{hu2020xtreme,
  title = "{XTREME}: A Massively Multilingual Multi-task Benchmark for Evaluating Cross-lingual Generalisation",
  author = "Hu, Junjie and Ruder, Sebastian and Siddhant, Aditya and Neubig, Graham and Firat, Orhan and Johnson, Melvin",
  booktitle = "ICML 2020", year = "2020"}
"""

_RELEASE_SPLITS = {"train": "train", "validation": "dev", "test": "test"}


@dataclass
class Xtreme40Config(CropBuilderConfig):
    """A PAN-X language, or ``all``.

    Args:
        languages: languages of the config (one for a language config; ``all`` defaults to the 40).
    """

    languages: Sequence[str] = ()


class Xtreme40(NerBuilder):
    """PAN-X NER for XTREME's 40 languages with Hugging Face's label ids."""

    BUILDER_CONFIG_CLASS = Xtreme40Config
    LABELS = PANX_LABELS
    CITATION = _CITATION
    HOMEPAGE = "https://github.com/google-research/xtreme"
    BUILDER_CONFIGS: ClassVar[list] = [Xtreme40Config(name=lang, languages=(lang,), description=f"PAN-X {lang}")
                       for lang in XTREME40_LANGUAGES] + [
        Xtreme40Config(name="all", languages=XTREME40_LANGUAGES, description="PAN-X, the 40 XTREME languages")
    ]

    def _split_generators(self, dl_manager) -> list[datasets.SplitGenerator]:
        languages = tuple(self.config.languages)
        if not languages:
            raise ValueError(f"xtreme40/{self.config.name}: no languages")
        unknown = [lang for lang in languages if lang not in XTREME40_LANGUAGES]
        if unknown:
            raise ValueError(f"xtreme40: {unknown} are not XTREME-40 languages; expected among {XTREME40_LANGUAGES}")
        if self.config.data_dir:
            sources = {lang: self._local_source(dl_manager, lang) for lang in languages}
        else:
            folder = dl_manager.download_and_extract(PANX_URL)
            sources = {lang: dl_manager.iter_archive(os.path.join(folder, f"{lang}.tar.gz")) for lang in languages}
        return [
            datasets.SplitGenerator(name=split, gen_kwargs={"sources": sources, "split": split})
            for split in self._only(_RELEASE_SPLITS)
        ]

    def _local_source(self, dl_manager, lang: str):
        """``{lang}/`` folder -> its path; ``{lang}.tar.gz`` or ``panx_dataset.zip`` -> an archive iterable."""
        root = self.config.data_dir
        folder = os.path.join(root, lang)
        if all(os.path.isfile(os.path.join(folder, name)) for name in self._only(_RELEASE_SPLITS).values()):
            return folder
        archive = os.path.join(root, f"{lang}.tar.gz")
        if os.path.isfile(archive):
            return dl_manager.iter_archive(archive)
        bundle = os.path.join(root, "panx_dataset.zip")
        if os.path.isfile(bundle):
            return dl_manager.iter_archive(os.path.join(dl_manager.extract(bundle), f"{lang}.tar.gz"))
        raise MissingFilesError(
            f"xtreme40/{self.config.name}", root,
            {split: (f"{lang}/{name}", f"{lang}.tar.gz", "panx_dataset.zip")
             for split, name in self._only(_RELEASE_SPLITS).items()},
            hint="" if os.path.isdir(root) else DATA_DIR_HINT)

    def _split_files(self, lang: str, source, split: str) -> Iterator:
        """The release file of ``split`` for ``lang``: a path, or ``(name, handle)`` out of an archive."""
        name = _RELEASE_SPLITS[split]
        if isinstance(source, str):
            yield os.path.join(source, name)
            return
        for member, handle in source:
            if posixpath.basename(member) == name:
                yield (f"{lang}.tar.gz/{member}", handle)
                return
        raise FileNotFoundError(f"xtreme40: the PAN-X archive of {lang!r} has no {name!r} file")

    def _generate_examples(self, sources: dict, split: str):
        def sentences():
            for lang, source in sources.items():
                for file in self._split_files(lang, source, split):
                    yield from read_panx(file, errors=self._errors, skipped=self._skipped_for(split))

        # read_panx sets each sentence's language from its "lang:" prefixes.
        yield from self._examples(sentences(), lang="")
        self._report_skipped(split)
