"""Corpora of the CroP and CSTOP papers as Hugging Face datasets, and readers for their original releases.

>>> from crop_hf.data import load_dataset  # doctest: +SKIP
>>> ds = load_dataset("conll5", "es", data_dir="conll2002")  # doctest: +SKIP

Builders (``datasets.GeneratorBasedBuilder`` subclasses) load on first use, so importing this
package does not import ``datasets``.
"""

from __future__ import annotations

from crop_hf.data.loading import BUILDERS, builder_class, load_dataset

__all__ = ["BUILDERS", "builder_class", "load_dataset"]
