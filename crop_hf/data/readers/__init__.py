"""Streaming readers for the original releases of the corpora crop-hf builds.

Each reader takes a path (or a ``(name, binary file)`` pair, as ``datasets``' ``iter_archive``
yields them), reads it line by line and yields one record per sentence or utterance; no reader
holds a whole file in memory. Tags come out in IOB2 whatever the release used.

The readers are grouped by format family: :mod:`~crop_hf.data.readers.io` (lines, errors and
skip counts), :mod:`~crop_hf.data.readers.conll` (CoNLL columns, BIOES, CoNLL-U, PAN-X) and
:mod:`~crop_hf.data.readers.parses` (bracket parses). Everything is importable from here.

Malformed input raises :class:`FormatError`, which names the file, the line and what was expected.
With ``errors="skip"`` the broken record (the whole sentence or row) is dropped instead, counted by
reason in a :class:`SkippedRecords` (pass one to read the counts) and logged as a warning at the end:
nothing is dropped silently.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "eng.train"
>>> _ = path.write_text("-DOCSTART- -X- O O\\n\\nEU NNP I-NP I-ORG\\nrejects VBZ I-VP O\\n")
>>> next(read_conll(path, scheme="IOB1"))
TaggedSentence(tokens=['EU', 'rejects'], tags=['B-ORG', 'O'], line=3, lang=None)
"""

from crop_hf.data.readers.conll import (
    NODALIDA_TYPE_MAP,
    NORNE_TYPE_MAP,
    TaggedSentence,
    read_bioes,
    read_conll,
    read_conllu_ner,
    read_europarl_ner,
    read_panx,
)
from crop_hf.data.readers.io import Errors, FormatError, SkippedRecords, Source, iter_lines, source_name
from crop_hf.data.readers.parses import ParseRecord, infer_domain, read_semantic_parses
from crop_hf.data.readers.words import builtin_adpositions, builtin_function_words, read_function_words

__all__ = [
    "NODALIDA_TYPE_MAP",
    "NORNE_TYPE_MAP",
    "Errors",
    "FormatError",
    "ParseRecord",
    "SkippedRecords",
    "Source",
    "TaggedSentence",
    "builtin_adpositions",
    "builtin_function_words",
    "infer_domain",
    "iter_lines",
    "read_bioes",
    "read_conll",
    "read_conllu_ner",
    "read_europarl_ner",
    "read_function_words",
    "read_panx",
    "read_semantic_parses",
    "source_name",
]
