"""eflomal (Östling and Tiedemann, 2016): a statistical word aligner that needs no pretrained model.

eflomal fits a Bayesian IBM/HMM/fertility model to the parallel corpus it is given by Gibbs
sampling, in both directions, so it aligns best when given a whole corpus at once (thousands
of sentence pairs), not one pair at a time. This wrapper takes token lists, runs the
``eflomal`` package, reads its Pharaoh files back and symmetrizes the two directions
(grow-diag-final-and by default, as CSTOP does after fast_align).

Empty sentences are not sent to eflomal; their pairs get an empty alignment. eflomal
lower-cases tokens itself. It samples randomly, so two runs on a tiny corpus can differ
where the corpus leaves a link ambiguous.

>>> aligner = EflomalAligner()
>>> source = ["the house is small", "the car is big"] * 50  # doctest: +SKIP
>>> target = ["das Haus ist klein", "das Auto ist groß"] * 50  # doctest: +SKIP
>>> aligner.align(source, target)[0]  # doctest: +SKIP
[(0, 0), (1, 1), (2, 2), (3, 3)]
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Sequence
from pathlib import Path

from crop_hf.alignment.symmetrize import (
    Alignment,
    SymmetrizationMethod,
    check_symmetrization,
    parse_pharaoh,
    symmetrize,
)

__all__ = ["EflomalAligner"]

logger = logging.getLogger(__name__)

Words = Sequence[str] | str


def _line(sentence: Words, side: str, index: int) -> str:
    tokens = sentence.split() if isinstance(sentence, str) else list(sentence)
    for token in tokens:
        if not token or any(ch.isspace() for ch in token):
            raise ValueError(f"{side} sentence {index}: token {token!r} is empty or contains whitespace")
    return " ".join(tokens)


class EflomalAligner:
    """Aligns a parallel corpus with eflomal, in both directions, and symmetrizes.

    Args:
        model: 1 = IBM1, 2 = + HMM, 3 = + fertility (eflomal's default and best).
        n_iterations: iterations per model stage; eflomal picks them from the corpus size by default.
        n_samplers: independent samplers averaged by eflomal.
        rel_iterations: scales eflomal's default iteration counts.
        null_prior: prior probability of a NULL link.
        symmetrization: how :meth:`align` joins the two directions (default grow-diag-final-and, as CSTOP).
        extra_corpus: more parallel text, ``(source sentences, target sentences)``, aligned together with
            every corpus given to :meth:`align` (after it) and then left out of the result: eflomal learns
            its word translations from every pair it sees, so a shard of a few thousand sentences aligns
            better beside tens of thousands of others of the same language pair.
    """

    def __init__(
        self,
        *,
        model: int = 3,
        n_iterations: tuple[int, int, int] | None = None,
        n_samplers: int = 3,
        rel_iterations: float = 1.0,
        null_prior: float = 0.2,
        symmetrization: SymmetrizationMethod = "grow-diag-final-and",
        extra_corpus: tuple[Sequence[Words], Sequence[Words]] | None = None,
    ) -> None:
        if model not in {1, 2, 3}:
            raise ValueError(f"eflomal model must be 1 (IBM1), 2 (HMM) or 3 (HMM + fertility), got {model}")
        check_symmetrization(symmetrization)
        self.symmetrization = symmetrization
        self.options = {
            "model": model,
            "n_iterations": n_iterations,
            "n_samplers": n_samplers,
            "rel_iterations": rel_iterations,
            "null_prior": null_prior,
        }
        self.extra_source, self.extra_target = ([], []) if extra_corpus is None else map(list, extra_corpus)
        if len(self.extra_source) != len(self.extra_target):
            raise ValueError(f"extra_corpus: {len(self.extra_source)} source sentences but {len(self.extra_target)} "
                             "target sentences")

    def align_directions(self, source: Sequence[Words], target: Sequence[Words]) -> tuple[list[Alignment], list[Alignment]]:
        """The forward (source→target) and reverse (target→source) alignments, both as ``(source, target)`` pairs."""
        try:
            import eflomal
        except ImportError as err:  # pragma: no cover - eflomal ships with the [align] extra
            raise ImportError("EflomalAligner needs eflomal: pip install 'crop-hf[align]'") from err

        if len(source) != len(target):
            raise ValueError(f"{len(source)} source sentences but {len(target)} target sentences")
        given = len(source)
        source, target = [*source, *self.extra_source], [*target, *self.extra_target]
        source_lines = [_line(sentence, "source", k) for k, sentence in enumerate(source)]
        target_lines = [_line(sentence, "target", k) for k, sentence in enumerate(target)]
        kept = [k for k, (s, t) in enumerate(zip(source_lines, target_lines, strict=True)) if s and t]
        forward: list[Alignment] = [[] for _ in source_lines]
        reverse: list[Alignment] = [[] for _ in source_lines]
        if not kept:
            return forward[:given], reverse[:given]
        with tempfile.TemporaryDirectory(prefix="crop-hf-eflomal-") as folder:
            fwd_path, rev_path = Path(folder, "forward.links"), Path(folder, "reverse.links")
            eflomal.Aligner(**self.options).align(
                [source_lines[k] for k in kept], [target_lines[k] for k in kept],
                links_filename_fwd=str(fwd_path), links_filename_rev=str(rev_path),
            )
            for result, path in ((forward, fwd_path), (reverse, rev_path)):
                lines = path.read_text(encoding="utf-8").splitlines()
                if len(lines) != len(kept):
                    raise RuntimeError(f"eflomal wrote {len(lines)} lines to {path.name} for {len(kept)} sentence pairs")
                for number, (k, line) in enumerate(zip(kept, lines, strict=True), start=1):
                    result[k] = parse_pharaoh(line, where=f"eflomal {path.name} line {number}")
        logger.info("eflomal aligned %d sentence pairs (%d empty skipped)", len(kept), len(source_lines) - len(kept))
        return forward[:given], reverse[:given]

    def align(self, source: Sequence[Words], target: Sequence[Words]) -> list[Alignment]:
        """Align ``source[k]`` with ``target[k]`` for every k and symmetrize the two directions."""
        forward, reverse = self.align_directions(source, target)
        return [symmetrize(f, r, self.symmetrization) for f, r in zip(forward, reverse, strict=True)]
