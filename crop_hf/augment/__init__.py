"""CSTOP's two augmentations of semantic-parsing data (Einolghozati et al., 2021, sections 6.1 and 6.2).

* :mod:`crop_hf.augment.translate_align` — English bracket parses become target-language parses:
  translate the utterance, align words, project the slots (``crop-hf translate-align``);
* :mod:`crop_hf.augment.generate_filter` — a seq2seq model fine-tuned on a few code-switched
  parses turns English parses into new code-switched ones, filtered (``crop-hf generate-filter``).

Both read English parses with :func:`crop_hf.augment.inputs.iter_parse_inputs` and count every
dropped input with a reason and the line it came from. Both are corpus jobs
(:class:`~crop_hf.engine.jobs.CorpusJob`: ``TranslateAlignJob``, ``GenerateFilterJob``): resumable
shards, typed kept and dropped rows, ``dataset/``, ``discarded/``, ``statistics.json`` and a card
(:func:`crop_hf.augment.card.augmentation_card`).
"""

from __future__ import annotations

__all__: list[str] = []
