"""The demo app (``crop-hf app``, and the Space in ``space/``): a Gradio page with three tabs.

* **Labeled translation** — a sentence (or a sample) translated with its entities in markers;
  the marked translation with the entities highlighted, every hypothesis tried and why its
  markers failed;
* **Projection** — source tokens and tags put on a raw target sentence by a chosen method; the
  projected spans and, for alignment methods, the alignment links;
* **Semantic parsing** — an utterance (or a bracket parse) in, the tree drawn.

>>> from crop_hf.app import AppModels, build_app
>>> demo = build_app(AppModels(mt_model="facebook/m2m100_418M"))  # doctest: +SKIP
>>> demo.launch()  # doctest: +SKIP

Models left unset are tiny random-weight ones built offline (:mod:`crop_hf.demo_models`), and the
page says their output is meaningless. The tabs' logic is in :mod:`crop_hf.app.tabs` (plain
functions), the HTML in :mod:`crop_hf.app.render`; Gradio (``pip install 'crop-hf[app]'``) is
imported only by :func:`build_app`.
"""

from crop_hf.app.models import AppModels
from crop_hf.app.tabs import MAX_WORDS, InputError, parse_utterance, project_labels, translate_labeled
from crop_hf.app.ui import SAMPLES, build_app, launch

__all__ = [
    "MAX_WORDS",
    "SAMPLES",
    "AppModels",
    "InputError",
    "build_app",
    "launch",
    "parse_utterance",
    "project_labels",
    "translate_labeled",
]
