"""The machinery every long job shares: one training loop, one corpus-job driver.

* :mod:`crop_hf.engine.training` — the Accelerate training loop every trainer runs (NER, parser,
  marker MT, the generate-and-filter generator), with :mod:`~crop_hf.engine.arguments` (the
  optimisation, checkpoint and Hub options every family shares) and
  :mod:`~crop_hf.engine.checkpoints` (AdamW groups, ``step_N``/``epoch_N`` checkpoints, resume).
* :mod:`crop_hf.engine.jobs` — the contract of every long corpus job (synthesis, translate-and-align,
  generate-and-filter, mark-parallel) and :func:`~crop_hf.engine.jobs.run_job`, the one driver,
  with :mod:`~crop_hf.engine.options` (the base of every job's config and its fingerprint rule),
  :mod:`~crop_hf.engine.shards` (resumable, atomically written shards and their merge) and
  :mod:`~crop_hf.engine.processes` (which process this is, shared with training).

Nothing here knows a task: a family supplies its batches, its loss and its evaluation.
"""
