"""The machinery every long job shares: one training loop, one shard runner.

* :mod:`crop_hf.engine.training` — the Accelerate training loop every trainer runs (NER, parser,
  marker MT, the generate-and-filter generator), with :mod:`~crop_hf.engine.arguments` (the
  optimisation, checkpoint and Hub options every family shares) and
  :mod:`~crop_hf.engine.checkpoints` (AdamW groups, ``step_N``/``epoch_N`` checkpoints, resume).
* :mod:`crop_hf.engine.shards` — long corpus runs in resumable, atomically written shards shared
  between processes, merged into a ``datasets.DatasetDict`` (synthesis, translate-and-align).

Nothing here knows a task: a family supplies its batches, its loss and its evaluation.
"""
