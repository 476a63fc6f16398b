"""One entry point for every corpus: ``crop_hf.load_dataset``.

``datasets`` 5 no longer runs loading scripts and has no registry for third-party builders, so
:func:`load_dataset` takes ``datasets.load_dataset``'s arguments, builds our corpora (``conll5``,
``xtreme40``, ``cstop``, ``top``) with our builders and hands any other name to
``datasets.load_dataset`` unchanged. Plain ``datasets.load_dataset("cstop")`` is deliberately not
patched to reach our builders: the only hook (a private dict) makes ``datasets`` scan the current
directory for data files, which could silently pick up unrelated files.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from crop_hf.errors import UnknownOptionError, UnreachableError, offline_mode
from crop_hf.registry import Registry

if TYPE_CHECKING:
    import datasets

__all__ = ["BUILDERS", "builder_class", "check_options", "load_dataset", "split_names"]

#: Our dataset names -> (module, builder class).
BUILDERS: Registry[tuple[str, str]] = Registry("crop-hf dataset", {
    "conll5": ("crop_hf.data.conll5", "Conll5"),
    "xtreme40": ("crop_hf.data.xtreme40", "Xtreme40"),
    "cstop": ("crop_hf.data.cstop", "Cstop"),
    "top": ("crop_hf.data.top", "Top"),
    "hinglish_top": ("crop_hf.data.hinglish_top", "HinglishTop"),
    "europarl_ner": ("crop_hf.data.europarl_ner", "EuroparlNer"),
})


def builder_class(name: str) -> type[datasets.DatasetBuilder]:
    """The builder class of one of our dataset names (``ValueError`` listing them otherwise)."""
    module, cls = BUILDERS.get(name)
    return getattr(importlib.import_module(module), cls)


def split_names(split: str) -> tuple[str, ...]:
    """The split names in a ``datasets`` split expression.

    >>> split_names("train[:10%]+validation")
    ('train', 'validation')
    """
    names = (re.sub(r"\[.*\]$", "", part.strip()) for part in str(split).split("+"))
    return tuple(dict.fromkeys(name for name in names if name))


def check_options(path: str, name: str | None, options: Mapping[str, Any]) -> None:
    """Refuse builder options (a source spec's ``?key=value``) that neither the builder config nor
    :func:`load_dataset` takes, listing the valid ones (``datasets`` would raise a traceback
    naming only the config's repr)."""
    import dataclasses

    config_class = builder_class(path).BUILDER_CONFIG_CLASS
    fields = {f.name for f in dataclasses.fields(config_class) if f.init} - {"name", "version", "description"}
    arguments = set(inspect.signature(load_dataset).parameters) - {"path", "name", "config_kwargs"}
    unknown = [key for key in options if key not in fields | arguments]
    if unknown:
        raise UnknownOptionError(f"{path}" + (f"/{name}" if name else ""), unknown, fields | arguments)


def load_dataset(
    path: str,
    name: str | None = None,
    data_dir: str | None = None,
    data_files: str | Sequence[str] | Mapping[str, str | Sequence[str]] | None = None,
    split: str | Sequence[str] | None = None,
    cache_dir: str | None = None,
    features: datasets.Features | None = None,
    download_config: datasets.DownloadConfig | None = None,
    download_mode: datasets.DownloadMode | str | None = None,
    verification_mode: datasets.VerificationMode | str | None = None,
    keep_in_memory: bool | None = None,
    save_infos: bool = False,
    revision: str | None = None,
    token: bool | str | None = None,
    streaming: bool = False,
    num_proc: int | None = None,
    storage_options: dict | None = None,
    **config_kwargs: Any,
) -> datasets.DatasetDict | datasets.Dataset | datasets.IterableDatasetDict | datasets.IterableDataset:
    """Load a dataset exactly as ``datasets.load_dataset`` does, with crop-hf's corpora by name.

    ``path`` is ``"conll5"``, ``"xtreme40"``, ``"cstop"`` or ``"top"`` for our builders (their
    options, such as ``source="norne"`` or ``domains=("weather",)``, go in ``config_kwargs``), or
    anything ``datasets.load_dataset`` accepts. Return types follow ``datasets``: a ``DatasetDict``
    when ``split`` is ``None``, a ``Dataset`` for one split, their ``Iterable`` versions with
    ``streaming=True``. Built data is cached in the Hugging Face cache (``HF_DATASETS_CACHE``)
    unless ``cache_dir`` is given.

    Example (``conll2002/`` holding ``esp.train``, ``esp.testa``, ``esp.testb``)::

        >>> from crop_hf import load_dataset  # doctest: +SKIP
        >>> ds = load_dataset("conll5", "es", data_dir="conll2002")  # doctest: +SKIP
        >>> ds["train"].num_rows  # doctest: +SKIP
        8323
    """
    import datasets

    if path not in BUILDERS:
        return datasets.load_dataset(
            path,
            name,
            data_dir=data_dir,
            data_files=data_files,
            split=split,
            cache_dir=cache_dir,
            features=features,
            download_config=download_config,
            download_mode=download_mode,
            verification_mode=verification_mode,
            keep_in_memory=keep_in_memory,
            save_infos=save_infos,
            revision=revision,
            token=token,
            streaming=streaming,
            num_proc=num_proc,
            storage_options=storage_options,
            **config_kwargs,
        )
    if revision is not None:
        raise ValueError(f"{path!r} is built by crop-hf's builder; `revision` applies to Hub datasets only")
    check_options(path, name, config_kwargs)
    if isinstance(split, str) and "splits" not in config_kwargs:
        config_kwargs["splits"] = split_names(split)  # build only what is asked for: only its files are needed
    if streaming and num_proc is not None:
        raise NotImplementedError("streaming with num_proc is not supported (as in datasets.load_dataset)")
    # Same defaults as datasets.load_dataset, so both entry points cache and verify alike.
    download_mode = datasets.DownloadMode(download_mode or datasets.DownloadMode.REUSE_DATASET_IF_EXISTS)
    verification_mode = datasets.VerificationMode(
        (verification_mode or datasets.VerificationMode.BASIC_CHECKS)
        if not save_infos
        else datasets.VerificationMode.ALL_CHECKS
    )
    builder = builder_class(path)(
        cache_dir=cache_dir,
        config_name=name,
        data_dir=data_dir,
        data_files=data_files,
        features=features,
        token=token,
        storage_options=storage_options,
        **config_kwargs,
    )
    if streaming:
        return builder.as_streaming_dataset(split=split)
    try:
        builder.download_and_prepare(
            download_config=download_config,
            download_mode=download_mode,
            verification_mode=verification_mode,
            num_proc=num_proc,
            storage_options=storage_options,
        )
    except ConnectionError as error:  # a default download: name the corpus, say whether offline mode is on
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise UnreachableError(f"{path}/{builder.config.name}: cannot download the release ({first}); "
                               f"{offline_mode()}; pass data_dir=<a folder with the release files> to "
                               "build it from local files") from error
    except datasets.exceptions.DatasetGenerationError as error:
        # datasets wraps our bad-input errors ("file:line: expected ...") in a generic "An error
        # occurred while generating the dataset"; the user needs ours, so it is raised instead.
        if isinstance(error.__cause__, ValueError):
            raise error.__cause__ from None
        raise
    from datasets.utils.info_utils import is_small_dataset

    if keep_in_memory is None:
        keep_in_memory = is_small_dataset(builder.info.dataset_size)
    return builder.as_dataset(split=split, in_memory=keep_in_memory)
