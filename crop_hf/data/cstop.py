"""CSTOP: Spanglish (Spanish + English code-switched) task-oriented semantic parsing.

About 5800 utterances over the Weather and Device domains, with bracket parses such as
``[IN:GET_WEATHER Dime el clima [SL:DATE_TIME para next Friday ] ]`` (Einolghozati et al., 2021).
Splits as in the paper: train 4077, validation 559, test 1167.

Features (shared with :mod:`crop_hf.data.top`, so the two concatenate): ``id``, ``utterance``,
``tokens`` (the words of the parse), ``intent`` (without ``IN:``), ``slot_tags`` (IOB2 over slot
names, one per token), ``parse`` and ``domain``.

The paper does not document the release's file layout, so the reader recognises columns by content
(see :func:`crop_hf.data.readers.read_semantic_parses`); character slot spans, where the release has
them, are checked against the parse. ``data_dir`` may hold ``train.tsv``, ``eval.tsv`` (or
``dev.tsv``/``valid.tsv``/``validation.tsv``) and ``test.tsv``, directly or in one subfolder.
Without it, the release archive is downloaded from :data:`CSTOP_URL` (the short link of the
paper's release, not verified from these machines).

Example::

    from crop_hf.data.cstop import Cstop

    builder = Cstop(data_dir="CSTOP", cache_dir="/tmp/hf")
    builder.download_and_prepare()
    builder.as_dataset(split="train")[0]["intent"]
"""

from __future__ import annotations

from typing import ClassVar

import datasets

from crop_hf.data.builder import SemanticParseBuilder, SemanticParseConfig, find_split_files

__all__ = ["CSTOP_FILES", "CSTOP_URL", "Cstop"]

#: The CSTOP release (short link used by the paper's authors; unverified here).
CSTOP_URL = "https://fb.me/cstop_data"

#: split -> file names a CSTOP release may use, first match wins.
CSTOP_FILES: dict[str, tuple[str, ...]] = {
    "train": ("train.tsv", "cstop_train.tsv", "CSTOP_train.tsv"),
    "validation": ("eval.tsv", "dev.tsv", "valid.tsv", "validation.tsv", "cstop_eval.tsv", "CSTOP_eval.tsv"),
    "test": ("test.tsv", "cstop_test.tsv", "CSTOP_test.tsv"),
}

_CITATION = """\
@inproceedings{einolghozati-etal-2021-el,
  title = "El Volumen Louder Por Favor: Code-switching in Task-oriented Semantic Parsing",
  author = "Einolghozati, Arash and Arora, Abhinav and Lecanda, Lorena Sainz-Maza and Kumar, Anuj and Gupta, Sonal",
  booktitle = "EACL 2021", year = "2021"}
"""


class Cstop(SemanticParseBuilder):
    """CSTOP code-switched semantic parsing, flattened for joint intent + slot tagging."""

    CITATION = _CITATION
    BUILDER_CONFIGS: ClassVar[list] = [SemanticParseConfig(name="default", description="CSTOP, Weather and Device domains")]
    DEFAULT_CONFIG_NAME = "default"

    def _split_generators(self, dl_manager) -> list[datasets.SplitGenerator]:
        folder = self.config.data_dir or dl_manager.download_and_extract(CSTOP_URL)
        files = find_split_files(folder, self._only(CSTOP_FILES), "cstop")
        return [datasets.SplitGenerator(name=split, gen_kwargs={"files": [path], "split": split})
                for split, path in files.items()]
