"""Reading release files line by line, and the errors readers raise or count.

:class:`FormatError` names the file, the line and what was expected; :class:`SkippedRecords`
counts what ``errors="skip"`` dropped, by reason. :func:`iter_lines` decodes one line at a time
(UTF-8, or per line with a Latin-1 fallback), so no reader holds a whole file in memory.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import BinaryIO, Literal

__all__ = ["Errors", "FormatError", "SkippedRecords", "Source", "iter_lines", "source_name"]

logger = logging.getLogger(__name__)

#: A file on disk, or ``(name, binary file object)`` as yielded by ``dl_manager.iter_archive``.
Source = str | os.PathLike | tuple[str, BinaryIO]
Errors = Literal["strict", "skip"]


class FormatError(ValueError):
    """Malformed input: ``path``, 1-based ``line``, what was ``expected`` and what was ``found``.

    ``reason`` is a short key (``"columns"``, ``"tag"``, ``"parse"``, ...) under which
    :class:`SkippedRecords` counts the record when errors are skipped.
    """

    def __init__(self, path: str, line: int, expected: str, found: str | None = None, reason: str = "format") -> None:
        self.path = path
        self.line = line
        self.expected = expected
        self.found = found
        self.reason = reason
        message = f"{path}:{line}: expected {expected}"
        if found is not None:
            message += f", found {found!r}"
        super().__init__(message)


@dataclass
class SkippedRecords:
    """Counts of records dropped by ``errors="skip"``, by reason, with the first few errors.

    >>> skipped = SkippedRecords()
    >>> skipped.add(FormatError("a.tsv", 3, "3 columns", "x", reason="columns"))
    >>> skipped.total, dict(skipped.counts)
    (1, {'columns': 1})
    """

    counts: Counter = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)
    max_examples: int = 5
    #: the files the skipped records came from
    files: set[str] = field(default_factory=set)

    def add(self, error: FormatError) -> None:
        self.counts[error.reason] += 1
        self.files.add(error.path)
        if len(self.examples) < self.max_examples:
            self.examples.append(str(error))

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def __str__(self) -> str:
        if not self.total:
            return "no records skipped"
        reasons = ", ".join(f"{count} {reason}" for reason, count in self.counts.most_common())
        return f"{self.total} skipped ({reasons}); first: " + " | ".join(self.examples)


def source_name(source: Source) -> str:
    """The name errors use for ``source``."""
    if isinstance(source, tuple):
        return str(source[0])
    return os.fspath(source)


def iter_lines(source: Source, encoding: str = "auto") -> Iterator[tuple[int, str | None]]:
    """Yield ``(line_number, text)`` for each line, without its line end.

    ``text`` is ``None`` for a line that cannot be decoded with ``encoding``; readers turn it into
    a :class:`FormatError` (reason ``"encoding"``) naming the file and line, never a raw
    ``UnicodeDecodeError``.

    Reads bytes and decodes line by line, so a file's encoding may be decided per line:
    ``encoding="auto"`` decodes UTF-8 and falls back to ISO-8859-1 for a line that is not valid
    UTF-8 (CoNLL-2002 circulates in both; Latin-1 text is valid UTF-8 only by accident, as in
    ``"Ã©"``). A UTF-8 byte-order mark on the first line is dropped; ``\\r\\n`` ends are accepted.
    Splitting on ``\\n`` only (not ``str.splitlines``) keeps U+0085 and other separators inside tokens.
    """
    if isinstance(source, tuple):
        yield from _decode_lines(source[1], encoding)
        return
    path = os.fspath(source)
    if "://" in path:
        # URLs and chained paths (zip://...::https://...) in streaming mode.
        from datasets.utils.file_utils import xopen

        with xopen(path, "rb") as handle:
            yield from _decode_lines(handle, encoding)
    else:
        with open(path, "rb") as handle:
            yield from _decode_lines(handle, encoding)


def _decode_lines(handle: BinaryIO, encoding: str) -> Iterator[tuple[int, str | None]]:
    for number, raw in enumerate(handle, start=1):
        if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        raw = raw.rstrip(b"\r\n")
        if encoding == "auto":
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                text = raw.decode("iso-8859-1")
        else:
            try:
                text = raw.decode(encoding)
            except UnicodeDecodeError:
                text = None  # the reader reports it as a FormatError naming file and line
        yield number, text


def undecodable_error(name: str, number: int, encoding: str) -> FormatError:
    """The error of line ``number`` of ``name``, which is not valid ``encoding`` (every reader words it alike)."""
    return FormatError(name, number, f"text in {encoding}", reason="encoding")


class Skipper:
    """Raises or counts a :class:`FormatError` according to ``errors``; logs the total at the end."""

    def __init__(self, name: str, errors: Errors, skipped: SkippedRecords | None) -> None:
        if errors not in ("strict", "skip"):
            raise ValueError(f"errors must be 'strict' or 'skip', got {errors!r}")
        self.name = name
        self.errors = errors
        self.skipped = skipped if skipped is not None else SkippedRecords()
        self.start_total = self.skipped.total

    def handle(self, error: FormatError) -> None:
        """Raise ``error`` (``errors="strict"``) or count it and go on (``"skip"``)."""
        if self.errors == "strict":
            raise error
        self.skipped.add(error)

    def defer(self, error: FormatError) -> FormatError:
        """Raise now in strict mode; otherwise return ``error`` to count once the record ends."""
        if self.errors == "strict":
            raise error
        return error

    def finish(self) -> None:
        dropped = self.skipped.total - self.start_total
        if dropped:
            logger.warning("%s: skipped %d malformed records; so far %s", self.name, dropped, self.skipped)

