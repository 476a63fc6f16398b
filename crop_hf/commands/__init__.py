"""Subcommands of the ``crop-hf`` command; see :mod:`crop_hf.cli`."""
