"""Shared fixtures: tiny models built offline, and the real corpora in ``../shared/data``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings

# Machines here are small and shared: example timing is noise, not a property of the code.
settings.register_profile("crop-hf", deadline=None, suppress_health_check=[HealthCheck.too_slow])
# Under mutation testing a failing property only has to fail: shrinking its example to the smallest
# one (seconds per killed mutant) tells mutmut nothing. Same examples, same verdicts.
settings.register_profile("crop-hf-mutation", parent=settings.get_profile("crop-hf"),
                          phases=[Phase.explicit, Phase.reuse, Phase.generate])
settings.load_profile("crop-hf-mutation" if "MUTANT_UNDER_TEST" in os.environ else "crop-hf")

# Tests never reach the Hub: fail fast instead of retrying for ~20 s per call.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Tiny models gain nothing from intra-op threads; on 2 shared cores extra threads spin against each
# other and make training steps several times slower (46 ms vs 6 ms a step, measured). Set before
# torch is imported, so torch starts with one thread; subprocesses (torchrun tests) inherit it.
os.environ["OMP_NUM_THREADS"] = "1"

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("CROP_HF_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


REAL_DATA_SKIP = "real corpora not found at"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` (or ``$CROP_HF_SHARED_DATA``); tests using it skip when it is absent.

    Every real-data test takes this fixture, so the summary below can count the ones that did not run."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"{REAL_DATA_SKIP} {SHARED_DATA}")
    return SHARED_DATA


def pytest_terminal_summary(terminalreporter) -> None:
    """Say once how many real-data tests skipped: a clone without ``../shared/data`` should notice."""
    skipped = [report for report in terminalreporter.stats.get("skipped", [])
               if REAL_DATA_SKIP in str(getattr(report, "longrepr", ""))]
    if skipped:
        terminalreporter.write_sep("=", "real corpora", yellow=True)
        terminalreporter.write_line(
            f"{len(skipped)} real-data tests did not run: {REAL_DATA_SKIP} {SHARED_DATA} "
            "(put the corpora there or set CROP_HF_SHARED_DATA)")


def pytest_collection_modifyitems(config, items) -> None:
    """Under mutation testing, run a mutant's tests fastest first: the first failure ends its run.

    mutmut (benchmarks/mutation_score.py) runs each mutant's covering tests with ``-x`` in file
    order; ordering them by the durations mutmut recorded lets the cheapest killing test come first.
    Outside mutmut (no ``MUTANT_UNDER_TEST``) the order is untouched.
    """
    if "MUTANT_UNDER_TEST" not in os.environ:
        return
    stats = Path.cwd() / "mutmut-stats.json"
    if not stats.is_file():
        return
    import json

    durations = json.loads(stats.read_text(encoding="utf-8")).get("duration_by_test", {})
    items.sort(key=lambda item: durations.get(item.nodeid, float("inf")))


@pytest.fixture(scope="session")
def tiny_m2m100(tmp_path_factory) -> Path:
    """Folder of a random-weight M2M100 with a trained SentencePiece tokenizer and __SLOT{i}__ tokens."""
    from tiny_models import session_model

    from crop_hf.demo_models import build_tiny_m2m100

    return session_model(tmp_path_factory, "tiny-m2m100", build_tiny_m2m100)


@pytest.fixture(scope="session")
def tiny_xlmr_ner(tmp_path_factory) -> Path:
    """Folder of a random-weight XLM-R token classifier over the CoNLL labels."""
    from tiny_models import session_model

    from crop_hf.demo_models import build_tiny_xlmr_ner

    return session_model(tmp_path_factory, "tiny-xlmr-ner", build_tiny_xlmr_ner)


@pytest.fixture(scope="session")
def tiny_bart(tmp_path_factory) -> Path:
    """Folder of a random-weight BART with a byte-level BPE tokenizer."""
    from tiny_models import build_tiny_bart, session_model

    return session_model(tmp_path_factory, "tiny-bart", build_tiny_bart)


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> Path:
    """Folder of a random-weight BERT encoder with a small WordPiece vocabulary (words split into subwords)."""
    from tiny_models import session_model

    from crop_hf.demo_models import build_tiny_bert

    return session_model(tmp_path_factory, "tiny-bert", build_tiny_bert)
