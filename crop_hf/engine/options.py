"""One base for the options every corpus job runs with, and the one rule that makes a run's fingerprint.

Every job's config (synthesis, translate-and-align, generate-and-filter, mark-parallel) extends
:class:`RunOptions`. The shared fields are declared here once; a job's class declares, once each,
which of its own fields never change what the run writes (``run_only``), which were added after
runs were written (``added_later``: left out of the fingerprint at their default, so those runs
keep their name) and which were renamed (``renamed``: the former spelling still reads, with a
deprecation line, and the fingerprint keeps it). Every other field changes results: that is the
one rule, :meth:`RunOptions.result_arguments`, and it makes the run's fingerprint (the name of its
shard folder, :class:`~crop_hf.engine.shards.ShardStore`).

>>> from dataclasses import dataclass, field
>>> @dataclass
... class Options(RunOptions):
...     run_only = ("batch_size",)
...     added_later = ("symmetrization",)
...     max_words: int = field(default=128, metadata={"help": "longest sentence"})
...     batch_size: int = field(default=8, metadata={"help": "per call"})
...     symmetrization: str = field(default="gdfa", metadata={"help": "how"})
>>> Options(output_dir="out").result_arguments()
{'shard_size': 1000, 'max_words': 128}
>>> Options(output_dir="out", symmetrization="union").result_arguments()["symmetrization"]
'union'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

__all__ = ["RunOptions"]


@dataclass(kw_only=True)
class RunOptions:
    """What every corpus job runs with: where it writes, whether it may replace, how it cuts its input, its bar.

    The fields are keyword-only, so a job's own fields (required ones included) come first in its
    constructor; a job that needs another default or help text for one of them declares it again
    (``shard_size: int = field(default=5000, kw_only=True, metadata=...)``).
    """

    #: the shared fields that never change results (``device``: where a job has one)
    RUN_FIELDS: ClassVar[frozenset[str]] = frozenset({"output_dir", "overwrite_output_dir", "device", "show_progress"})
    #: the job's own fields that never change results (how many items a call takes, where it reports)
    run_only: ClassVar[tuple[str, ...]] = ()
    #: fields added after runs were written: in the fingerprint only away from their default
    added_later: ClassVar[tuple[str, ...]] = ()
    #: ``{former spelling: field}``: the former still reads (one deprecation line); the fingerprint keeps the former
    renamed: ClassVar[Mapping[str, str]] = {}
    #: ``{field: kind}``: fields naming local files or folders (``"data"``) or model folders (``"model"``) whose
    #: content changes results; the digest of what they name joins the fingerprint (:meth:`content_digests`)
    local_inputs: ClassVar[Mapping[str, str]] = {}

    output_dir: str = field(metadata={"help": "Folder for shards, dataset/, discarded/, statistics.json and README.md."})
    overwrite_output_dir: bool = field(
        default=False, metadata={"help": "Replace a finished result of other settings in output_dir (without it, "
                                         "such a folder is an error; the same settings resume)."})
    shard_size: int = field(default=1000, metadata={"help": "Inputs per resumable shard."})
    show_progress: bool = field(default=True, metadata={"help": "Show a progress bar on the main process."})

    def __post_init__(self) -> None:
        if self.shard_size < 1:
            raise ValueError(f"shard_size must be at least 1, got {self.shard_size}")

    def fingerprint_name(self, name: str) -> str:
        """The name field ``name`` has in the fingerprint: its former spelling if it was renamed, else its own."""
        return next((old for old, new in self.renamed.items() if new == name), name)

    def _result_fields(self) -> Iterator[tuple[str, Any]]:
        """``(field, value)`` of each field that changes results, in field order (``added_later`` ones only away
        from their default)."""
        never = self.RUN_FIELDS | set(self.run_only)
        for item in dataclasses.fields(self):
            value = getattr(self, item.name)
            if not (item.name in never or (item.name in self.added_later and value == item.default)):
                yield item.name, value

    def result_arguments(self) -> dict[str, Any]:
        """The values of the fields that change results: what the run's fingerprint is made of (less its inputs).

        A field in ``added_later`` is left out at its default; a renamed field appears under its former name.
        """
        return {self.fingerprint_name(name): value for name, value in self._result_fields()}

    def card_settings(self) -> dict[str, Any]:
        """The fields that change results as a card's settings table shows them: by the option's name on the
        command line (``max_examples``, never a former spelling the fingerprint keeps), in field order."""
        return dict(self._result_fields())

    def content_digests(self, keys: Sequence[str] = ()) -> dict[str, str]:
        """``{"<field> content": digest}`` of each :attr:`local_inputs` field that names local files or folders
        (:func:`crop_hf.engine.contents.content_digests`; ``keys`` fill a ``{lang}`` template): a rerun after
        the file changed, or the model folder was trained again, is another run."""
        from crop_hf.engine.contents import content_digests

        return content_digests({name: getattr(self, name) for name in self.local_inputs}, self.local_inputs, keys)

    def option_spellings(self) -> dict[str, str]:
        """How the user spells each fingerprint name, as ``--help`` does (``{"max_sentences": "--max_examples"}``):
        what a refusal of other settings names (a content digest as ``the content of --input``)."""
        spellings = {self.fingerprint_name(item.name): f"--{item.name}" for item in dataclasses.fields(self)}
        return {**spellings, **{f"{name} content": f"the content of --{name}" for name in self.local_inputs}}
