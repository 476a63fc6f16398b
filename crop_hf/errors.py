"""Errors that mean a user mistake, worded so that one line tells what to change.

``crop-hf`` prints any of these as ``crop-hf <command>: error: <message>`` (no traceback unless
``--debug`` or ``CROP_HF_DEBUG=1``). Each subclasses the built-in error that code catching it
already expects (``ValueError``, ``FileNotFoundError``, ``ConnectionError``), so library callers
are unaffected.

>>> offline_mode({"HF_HUB_OFFLINE": "1"})
'offline mode is on (HF_HUB_OFFLINE=1): only local folders and the local cache are read'
>>> raise UnknownOptionError("conll5/es", ["datadir"], ["data_dir", "skip_bad_records"])
Traceback (most recent call last):
...
crop_hf.errors.UnknownOptionError: conll5/es: unknown option 'datadir' (did you mean data_dir?); valid options: data_dir, skip_bad_records
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

__all__ = [
    "LANGUAGE_CODE",
    "DeviceError",
    "EmptyInputError",
    "LanguageCodeError",
    "MissingFilesError",
    "MissingModelError",
    "OutputExistsError",
    "OutputPathError",
    "UnknownOptionError",
    "UnreachableError",
    "UserError",
    "available_devices",
    "check_device",
    "check_language_code",
    "check_model",
    "check_output_path",
    "looks_local",
    "naming",
    "offline_mode",
    "reaching",
]

#: Environment variables that put the Hugging Face libraries offline.
OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")


class UserError(Exception):
    """Base of the errors a user fixes by changing an option, a path or the environment."""


class DeviceError(UserError, ValueError):
    """A torch device that does not exist on this machine."""


class MissingFilesError(UserError, FileNotFoundError):
    """A release folder that does not exist, or lacks the files of a requested split.

    One message shape for every builder: ``<corpus>: <problem> '<folder>'; looked for <split>: <names>; ...``.
    """

    def __init__(self, what: str, folder: str | os.PathLike, expected: Mapping[str, Sequence[str]], hint: str = ""):
        self.what, self.folder, self.expected = what, str(folder), dict(expected)
        if Path(folder).is_dir():
            problem = f"files not found in {self.folder!r} (nor in its subfolders)"
        else:
            problem = f"no folder {self.folder!r}"
        looked = "; ".join(f"{split}: {' or '.join(names)}" for split, names in expected.items())
        super().__init__(f"{what}: {problem}; looked for {looked}" + (f". {hint}" if hint else ""))


class UnknownOptionError(UserError, ValueError):
    """An option (a source spec's ``?key=value``, a builder option) that the loader does not take."""

    def __init__(self, what: str, unknown: Sequence[str], valid: Sequence[str]):
        self.unknown, self.valid = list(unknown), sorted(valid)
        guesses = [f"{key!r}" + (f" (did you mean {close[0]}?)" if (close := difflib.get_close_matches(key, self.valid, 1))
                                 else "") for key in self.unknown]
        plural = "s" if len(self.unknown) > 1 else ""
        super().__init__(f"{what}: unknown option{plural} {', '.join(guesses)}; valid options: {', '.join(self.valid)}")


class LanguageCodeError(UserError, ValueError):
    """A language option whose value is not a language code (a path, a typo)."""


#: A language code: ISO 639-1/-3 letters, optionally with region or script parts (de, ast, pt-BR,
#: zh_Hans, deu_Latn, de_DE), as M2M100, NLLB and mBART-50 spell them.
LANGUAGE_CODE = re.compile(r"[a-z]{2,3}(?:[-_][A-Za-z0-9]{2,8})*")


def check_language_code(code: str, option: str, hint: str = "") -> str:
    """Return ``code`` if it looks like a language code; otherwise :class:`LanguageCodeError` naming ``option``.

    >>> check_language_code("pt-BR", "--tgt_langs")
    'pt-BR'
    >>> check_language_code("raw/{lang}.txt", "--tgt_langs", "raw sentences go in --input")
    Traceback (most recent call last):
    ...
    crop_hf.errors.LanguageCodeError: --tgt_langs: 'raw/{lang}.txt' is not a language code (such as de, es, pt-BR or deu_Latn): it looks like a path; raw sentences go in --input
    """
    if isinstance(code, str) and LANGUAGE_CODE.fullmatch(code):
        return code
    looks = ("it looks like a path" if any(sign in str(code) for sign in "/\\.{}") else
             "a typo?" if str(code).isalpha() else "")
    detail = "; ".join(part for part in (looks, hint) if part)
    raise LanguageCodeError(f"{option}: {code!r} is not a language code (such as de, es, pt-BR or deu_Latn)"
                            + (f": {detail}" if detail else ""))


class OutputExistsError(UserError, FileExistsError):
    """An output folder holds a finished result of other settings (``--overwrite_output_dir`` replaces it)."""


class OutputPathError(UserError, OSError):
    """An output that could only fail once the work is done: a file where a folder goes, no folder to hold a file."""


def check_output_path(path: str | os.PathLike, option: str, *, file: bool = False) -> None:
    """Fail now, before any work, for an output the work could not be written to; nothing is created.

    A folder (``file=False``) must not be a file, nor lie under one; a file (``file=True``) must not
    be a folder, and its folder must exist. ``option`` names the option (``"--output_dir"``).

    >>> check_output_path("/dev/null/out", "--output_dir")
    Traceback (most recent call last):
    ...
    crop_hf.errors.OutputPathError: --output_dir /dev/null/out: /dev/null is a file, not a folder
    """
    target = Path(path).expanduser()
    if file:
        if target.is_dir():
            raise OutputPathError(f"{option} {path}: a folder is there, not a file")
        if not target.parent.is_dir():
            raise OutputPathError(f"{option} {path}: no folder {target.parent} to write it in")
        return
    for folder in (target, *target.parents):  # the nearest one that exists must be a folder
        if folder.exists():
            if not folder.is_dir():
                where = "a file is there" if folder == target else f"{folder} is a file"
                raise OutputPathError(f"{option} {path}: {where}, not a folder")
            return


class UnreachableError(UserError, ConnectionError):
    """A model or dataset that could be neither downloaded nor found locally."""


class EmptyInputError(UserError, ValueError):
    """An input file, a training or evaluation source, or a corpus to publish with no sentences (blank lines skipped)."""


class MissingModelError(UserError, FileNotFoundError):
    """A model given as a local path (``/``, ``./``, ``../``, ``~``) that does not exist."""


def looks_local(name: str | os.PathLike) -> bool:
    """Whether ``name`` is written as a local path (absolute, ``./``, ``../``, ``~``), never a Hub id.

    >>> looks_local("./models/ner"), looks_local("~/ner"), looks_local("FacebookAI/xlm-roberta-base")
    (True, True, False)
    """
    text = str(name)
    return (isinstance(name, os.PathLike) or text.startswith(("/", "./", "../", "~", ".\\", "..\\"))
            or Path(text).is_absolute())


def check_model(name: str | os.PathLike, what: str = "model") -> None:
    """Fail now, before anything is loaded, for a model that cannot be had.

    A local-looking path (:func:`looks_local`) that does not exist is a :class:`MissingModelError`,
    "no model folder at PATH" (huggingface_hub would read it as a malformed repository id); offline,
    a Hub id that is neither a folder here nor in the local cache is an :class:`UnreachableError`.
    ``what`` names the option (``"NER model (--ner_model)"``).

    >>> check_model("./no/such/model", "NER model (--ner_model)")
    Traceback (most recent call last):
    ...
    crop_hf.errors.MissingModelError: no model folder at ./no/such/model (NER model (--ner_model))
    """
    text = str(name)
    detail = "" if what == "model" else f" ({what})"
    if looks_local(name):
        if not Path(text).expanduser().exists():
            raise MissingModelError(f"no model folder at {text}{detail}")
        return
    models_offline = any(os.environ.get(name, "").upper() in {"1", "ON", "YES", "TRUE"}
                         for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))
    if Path(text).exists() or not models_offline:
        return
    from huggingface_hub import try_to_load_from_cache

    if not isinstance(try_to_load_from_cache(text, "config.json"), str):
        raise UnreachableError(f"cannot load the {what} {text!r}: it is neither a folder here nor in the local "
                               f"Hugging Face cache ({offline_mode()})")


@contextmanager
def naming(option: str) -> Iterator[None]:
    """Put ``option`` (as the command line spells it) before the message of a :class:`UserError` raised
    inside: for a loader shared by several commands, which cannot know which option named its input.

    >>> with naming("--encoder"):
    ...     check_model("./no/encoder")
    Traceback (most recent call last):
    ...
    crop_hf.errors.MissingModelError: --encoder: no model folder at ./no/encoder
    """
    try:
        yield
    except UserError as error:
        if error.args and isinstance(error.args[0], str) and not error.args[0].startswith(option):
            error.args = (f"{option}: {error.args[0]}", *error.args[1:])
        raise


def offline_mode(environ: Mapping[str, str] | None = None) -> str:
    """Whether the Hugging Face libraries are offline, as a phrase for an error message."""
    environ = os.environ if environ is None else environ
    on = [name for name in OFFLINE_VARIABLES if environ.get(name, "").upper() in {"1", "ON", "YES", "TRUE"}]
    if on:
        return f"offline mode is on ({', '.join(f'{name}=1' for name in on)}): only local folders and the local cache are read"
    return "offline mode is off (HF_HUB_OFFLINE is not set): the Hub could not be reached or has no such repository"


@contextmanager
def reaching(name: str | os.PathLike, what: str = "model") -> Iterator[None]:
    """Turn an ``OSError`` raised while loading ``name`` into an :class:`UnreachableError` that names it.

    ``transformers`` says "We couldn't connect to 'https://huggingface.co'" without naming the
    repository; this names it and says whether offline mode is on. Errors that already say what
    to change (:class:`UserError`) and ``OSError``\\ s about a local folder pass unchanged.
    """
    if looks_local(name) and not Path(str(name)).expanduser().exists():
        kind = "dataset" if what.startswith("dataset") else "model"
        raise MissingModelError(f"no {kind} folder at {name}" + ("" if what in ("model", "dataset") else f" ({what})"))
    try:
        yield
    except UserError:
        raise
    except OSError as error:
        if Path(str(name)).exists():
            raise
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise UnreachableError(f"cannot load the {what} {str(name)!r}: {first} ({offline_mode()})") from error


def available_devices() -> list[str]:
    """The torch devices of this machine: ``cpu``, ``cuda:N``, ``mps``, ``xpu:N``."""
    import torch

    devices = ["cpu"]
    if torch.cuda.is_available():
        devices += [f"cuda:{index}" for index in range(torch.cuda.device_count())]
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        devices.append("mps")
    xpu = getattr(torch, "xpu", None)
    if xpu is not None and xpu.is_available():
        devices += [f"xpu:{index}" for index in range(xpu.device_count())]
    return devices


def check_device(device: str) -> str:
    """Return ``device`` if torch can use it here; otherwise :class:`DeviceError` listing the devices that exist."""
    import torch

    available = available_devices()
    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError) as error:
        raise DeviceError(f"{device!r} is not a torch device ({error}); devices here: {', '.join(available)}") from None
    if parsed.type == "cpu":
        return device
    family = [name for name in available if name.split(":")[0] == parsed.type]
    if not family or (parsed.index is not None and f"{parsed.type}:{parsed.index}" not in family):
        built = ""
        if parsed.type == "cuda" and torch.version.cuda is None:
            built = f" (this torch {torch.__version__} is built without CUDA)"
        raise DeviceError(f"device {device!r} is not available{built}; devices here: {', '.join(available)}")
    return device
