"""What a run's local inputs hold: content digests of the files and folders it reads, for its fingerprint.

A run's fingerprint names its shard folder, and a rerun resumes the shards of the same
fingerprint. Options that name local files or folders (``--input raw/{lang}.txt``, ``--ner_model
ner-en``) would resume old shards after the file's contents changed or the model was retrained
in place if the fingerprint held only their names. So each job declares which of its options
name local inputs (:attr:`crop_hf.engine.options.RunOptions.local_inputs`), and the digest of
what each one names enters the fingerprint beside its name (:func:`content_digests`). A Hub id,
a builder name or a path that does not exist has no digest: it stays in the fingerprint as the
name (and revision) it is.

Reading a 1 GB corpus on every start would be slow, so a file's digest is kept in a small cache
(``$CROP_HF_CACHE/digests.json``) under its resolved path, size, modification and status-change
times and inode: the file is read again only when one of them changes (the status-change time
catches a same-size copy that keeps the old modification time, ``cp -p``).

>>> import tempfile
>>> folder = Path(tempfile.mkdtemp())
>>> _ = (folder / "es.txt").write_text("Hola .\\n")
>>> first = content_digest(folder / "es.txt")
>>> _ = (folder / "es.txt").write_text("Hola !\\n")
>>> first == content_digest(folder / "es.txt")
False
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from urllib.parse import parse_qsl

logger = logging.getLogger(__name__)

__all__ = ["DATA", "MODEL", "content_digest", "content_digests", "local_paths"]

#: a local input read whole (a text file, a data folder and everything under it)
DATA = "data"
#: a local model folder: its top-level files (weights, config, tokenizer), as ``from_pretrained`` reads them
MODEL = "model"
#: files of a model folder that never change what it computes (its card, hidden files)
_NOT_MODEL = frozenset({"README.md"})
#: the most entries the digest cache keeps (the oldest are dropped first)
_CACHE_SIZE = 20_000
_CHUNK = 1 << 20
_lock = threading.Lock()
_memory: dict[str, str] = {}


def _cache_path() -> Path:
    from crop_hf.hub import crop_hf_cache_dir

    return crop_hf_cache_dir() / "digests.json"


def _load_cache() -> dict[str, str]:
    if not _memory:
        with contextlib.suppress(OSError, ValueError):  # no cache yet, or a broken one: digests are read again
            _memory.update(json.loads(_cache_path().read_text(encoding="utf-8")))
    return _memory


def _save_cache(cache: Mapping[str, str]) -> None:
    from crop_hf.engine.shards import atomic_write_bytes

    items = list(cache.items())[-_CACHE_SIZE:]
    try:
        atomic_write_bytes(_cache_path(), json.dumps(dict(items)).encode("utf-8"))
    except OSError as error:  # a read-only cache costs time, never a run
        logger.debug("could not write the digest cache %s: %s", _cache_path(), error)


def _file_digest(path: Path, cache: dict[str, str]) -> tuple[str, bool]:
    """``(sha256 of the file's bytes, whether it was read now)``, from ``cache`` when its stamp is unchanged."""
    stat = path.stat()
    # ctime too: a same-size copy that keeps the old modification time (cp -p, rsync -a) still changes it
    key = f"{path.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}\0{stat.st_ctime_ns}\0{stat.st_ino}"
    if key in cache:
        return cache[key], False
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    cache[key] = digest.hexdigest()
    return cache[key], True


def _files(path: Path, kind: str) -> list[Path]:
    """The files whose bytes make ``path``'s digest, in a fixed order."""
    if path.is_file():
        return [path]
    if kind == MODEL:  # from_pretrained reads the folder's own files, not its checkpoints or runs
        return sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith(".")
                      and p.name not in _NOT_MODEL)
    return sorted(p for p in path.rglob("*") if p.is_file()
                  and not any(part.startswith(".") for part in p.relative_to(path).parts))


def content_digest(path: str | os.PathLike, kind: str = DATA) -> str:
    """A 16-hex-digit digest of what ``path`` holds: a file's bytes, or a folder's files (names and bytes).

    ``kind`` is :data:`DATA` (a folder's every file, at any depth) or :data:`MODEL` (a model folder's
    top-level files, less its ``README.md``). Hidden files never count. Digests of files whose
    size, modification and status-change times and inode are unchanged come from the cache.
    """
    path = Path(path)
    with _lock:
        cache = _load_cache()
        digest, read = hashlib.sha256(), False
        for file in _files(path, kind):
            file_digest, fresh = _file_digest(file, cache)
            read |= fresh
            name = "" if file == path else file.relative_to(path).as_posix()
            digest.update(f"{name}\0{file_digest}\n".encode())
        if read:
            _save_cache(cache)
    return digest.hexdigest()[:16]


def local_paths(value: object, keys: Sequence[str] = ()) -> list[Path]:
    """The local files or folders an option's value names, in order; ``[]`` when it names none.

    ``value`` may be a path (file or folder); a template with ``{lang}`` (one path per key that
    exists); or a source spec whose ``disk:`` path or ``?data_dir=``/``path=``/``data_files=``
    option is local (``conll5:es?data_dir=/data/conll2002``); a ``#en`` side suffix is left out. A
    Hub id, a builder name alone or a path that does not exist names nothing local.

    >>> local_paths("facebook/m2m100_418M"), local_paths(None)
    ([], [])
    """
    if not isinstance(value, (str, os.PathLike)) or not str(value):
        return []
    text = os.path.expanduser(str(value))
    base, sep, side = text.rpartition("#")
    if sep and side.isalpha() and len(side) <= 8 and not Path(text).exists():
        text = base  # a side suffix (``parses.tsv#en``: read the English side) names no file of its own
    if "{lang}" in text:
        return [path for key in keys if (path := Path(text.replace("{lang}", key))).exists()]
    if Path(text).exists():
        return [Path(text)]
    base, _, query = text.partition("?")
    found = []
    if base.startswith("disk:") and Path(base[len("disk:"):]).exists():
        found.append(Path(base[len("disk:"):]))
    # a spec's options are read as the loaders read them (key=value&...); a value naming a local path is an input
    for name, option in parse_qsl(query, keep_blank_values=True):
        option = os.path.expanduser(option)
        if name in ("data_dir", "path", "data_files") and option and Path(option).exists():
            found.append(Path(option))
    return found


def content_digests(options: Mapping[str, object], kinds: Mapping[str, str],
                    keys: Iterable[str] = ()) -> dict[str, str]:
    """``{"<option> content": digest}`` for each option of ``kinds`` whose value names local files or folders.

    ``options`` maps an option's name to its value, ``kinds`` an option's name to :data:`DATA` or
    :data:`MODEL`; ``keys`` fill a ``{lang}`` template. An option naming nothing local is left out,
    so a run on Hub ids keeps the fingerprint it had before digests existed.
    """
    keys = list(keys)
    digests = {}
    for name, kind in kinds.items():
        paths = local_paths(options.get(name), keys)
        if not paths:
            continue
        parts = [content_digest(path, kind) for path in paths]
        digests[f"{name} content"] = parts[0] if len(parts) == 1 else hashlib.sha256(
            "\n".join(parts).encode()).hexdigest()[:16]
    return digests
