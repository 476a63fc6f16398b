"""Which packages crop-hf installs; everything else is in setup.cfg.

The card templates live in the top-level ``model_cards/`` folder (the project's layout) and are
installed as the package ``crop_hf.model_cards``, so wheels and sdists carry them without a
symlink (which breaks on Windows checkouts). setup.cfg cannot add a mapped package to ``find:``.
"""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["crop_hf", "crop_hf.*"]), "crop_hf.model_cards"],
    package_dir={"crop_hf.model_cards": "model_cards"},
)
