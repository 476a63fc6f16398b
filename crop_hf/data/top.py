"""TOP: English task-oriented parsing (Gupta et al., 2018) and TOPv2 (Chen et al., 2020).

Configs: ``v1`` (default), the original release ``top-dataset-semantic-parsing/{train,eval,test}.tsv``
with columns raw utterance, tokenized utterance, parse, over navigation and event intents; ``v2``,
TOPv2's ``{domain}_{train,eval,test}.tsv`` files (header ``domain utterance semantic_parse``), whose
domains include ``weather`` (the one CSTOP's zero-shot experiments use).

``domains=("weather",)`` keeps only those domains (v2 reads only their files; v1 has no domain column
and takes the domain from the intent name, see :func:`crop_hf.data.readers.infer_domain`).
Features are those of :mod:`crop_hf.data.cstop`, so ``concatenate_datasets`` joins the two. TOP's
parses may nest intents inside slots: by default (``nested="flatten"``) each top-level slot is tagged
over all its words and ``parse`` keeps the whole tree; ``nested="skip"`` drops such rows (counted).

Example (``data_dir`` holding TOPv2's files)::

    from crop_hf.data.top import Top

    builder = Top(config_name="v2", data_dir="TOPv2_Dataset", domains=("weather",), cache_dir="/tmp/hf")
    builder.download_and_prepare()
"""

from __future__ import annotations

import glob
import os
from typing import ClassVar

import datasets

from crop_hf.data.builder import DATA_DIR_HINT, SemanticParseBuilder, SemanticParseConfig, find_split_files
from crop_hf.errors import MissingFilesError

__all__ = ["TOPV2_URL", "TOP_URL", "Top"]

#: The English TOP release (``top-dataset-semantic-parsing/{train,eval,test}.tsv``).
TOP_URL = "https://fb.me/semanticparsingdialog"
#: TOPv2 (``TOPv2_Dataset/{domain}_{train,eval,test}.tsv``).
TOPV2_URL = "https://fb.me/TOPv2Dataset"

_V1_FILES = {"train": ("train.tsv",), "validation": ("eval.tsv",), "test": ("test.tsv",)}
_RELEASE_SPLITS = {"train": "train", "validation": "eval", "test": "test"}

_CITATION = """\
@inproceedings{gupta-etal-2018-semantic,
  title = "Semantic Parsing for Task Oriented Dialog using Hierarchical Representations",
  author = "Gupta, Sonal and Shah, Rushin and Mohit, Mrinal and Kumar, Anuj and Lewis, Mike",
  booktitle = "EMNLP 2018", year = "2018"}
@inproceedings{chen-etal-2020-low,
  title = "Low-Resource Domain Adaptation for Compositional Task-Oriented Semantic Parsing",
  author = "Chen, Xilun and Ghoshal, Asish and Mehdad, Yashar and Zettlemoyer, Luke and Gupta, Sonal",
  booktitle = "EMNLP 2020", year = "2020"}
"""


class Top(SemanticParseBuilder):
    """English TOP / TOPv2 in CSTOP's features, with a domain filter."""

    CITATION = _CITATION
    BUILDER_CONFIGS: ClassVar[list] = [
        SemanticParseConfig(name="v1", description="TOP (navigation and events)"),
        SemanticParseConfig(name="v2", description="TOPv2 (eight domains, weather among them)"),
    ]
    DEFAULT_CONFIG_NAME = "v1"

    def _split_generators(self, dl_manager) -> list[datasets.SplitGenerator]:
        folder = self.config.data_dir or dl_manager.download_and_extract(TOP_URL if self.config.name == "v1" else TOPV2_URL)
        if self.config.name == "v1":
            files = {split: [path] for split, path in find_split_files(folder, self._only(_V1_FILES), "top/v1").items()}
        else:
            files = {split: self._v2_files(folder, name) for split, name in self._only(_RELEASE_SPLITS).items()}
        return [datasets.SplitGenerator(name=split, gen_kwargs={"files": paths, "split": split})
                for split, paths in files.items()]

    def _v2_files(self, folder: str, split: str) -> list[str]:
        """``{domain}_{split}.tsv`` in ``folder`` or one level below, for the requested domains."""
        paths = sorted(glob.glob(os.path.join(folder, f"*_{split}.tsv")) +
                       glob.glob(os.path.join(folder, "*", f"*_{split}.tsv")))
        by_domain = {os.path.basename(p)[: -len(f"_{split}.tsv")]: p for p in paths}
        wanted = [d.lower() for d in self.config.domains] if self.config.domains else sorted(by_domain)
        missing = [d for d in wanted if d not in by_domain]
        if missing or not wanted:
            looked = [f"{d}_{split}.tsv" for d in missing] or [f"<domain>_{split}.tsv"]
            release_split = {name: key for key, name in _RELEASE_SPLITS.items()}[split]
            raise MissingFilesError("top/v2", folder, {release_split: looked},
                                    hint=f"Found domains: {', '.join(sorted(by_domain)) or 'none'}"
                                    if os.path.isdir(folder) else DATA_DIR_HINT)
        return [by_domain[d] for d in wanted]
