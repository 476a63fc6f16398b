"""One small registry type for every "a feature adds a row" table.

Commands (:data:`crop_hf.cli.COMMANDS`), pipeline tasks, corpus builders, projection methods,
marker styles and translation backends are each a :class:`Registry`: a name → item mapping in
registration order with one way to add a row (:meth:`Registry.register`, also a decorator) and
one error for a name it does not hold (:meth:`Registry.get`). A registry given an entry-point
``group`` is open to installed packages: on its first lookup it reads that group of the installed
distributions' entry points (as spaCy's registries do through catalogue), so a package that declares
``[project.entry-points."crop_hf_projection_methods"] mine = "my_package.methods"`` is found by
``crop-hf synthesize --method mine`` with no import in the user's code.

>>> shapes = Registry("shape", {"circle": 0})
>>> @shapes.register("square")
... def square(side):
...     return side * side
>>> shapes.names()
('circle', 'square')
>>> shapes.get("sqaure")
Traceback (most recent call last):
...
ValueError: unknown shape 'sqaure' (did you mean square?): expected one of circle, square

One broken package stops only itself: an entry point that fails to load is one logged warning
naming its package and the error, the other names work, and only looking up its own name is an
error (:class:`EntryPointError`, naming the package and the load error).
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Iterator, Mapping, MutableMapping
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any, Generic, TypeVar

__all__ = ["EntryPointError", "Registry"]

T = TypeVar("T")
_MISSING: Any = object()
logger = logging.getLogger("crop-hf")


class EntryPointError(ImportError, ValueError):
    """A name an installed package declared whose entry point failed to load, looked up by that name.

    An ``ImportError``, as the package's failed import was; a ``ValueError``, as any name a
    registry cannot give is (``crop-hf`` prints either as one line).
    """


class Registry(MutableMapping[str, T], Generic[T]):
    """Items of one ``kind`` by name, in registration order.

    It is a mapping (``registry[name]``, ``name in registry``, iteration, ``items()``), so code
    that indexed the dictionary it replaces works unchanged; assigning ``registry[name] = item``
    replaces a row as a dictionary would, where :meth:`register` refuses a taken name.

    With ``group``, the first lookup (any read: :meth:`get`, ``in``, iteration, :meth:`names`)
    also loads that entry-point group: each entry point ``name = module:object`` adds ``object`` as
    ``name``, or, when it names a module (``name = module``), importing it must register ``name``
    itself (``register_method(name, ...)`` at the module's top level). An entry point whose name is
    taken, by a built-in or an earlier package, is refused with one logged line naming its package.
    One that fails to load, loads without registering its name, or loads an object of the wrong
    type is one logged warning naming the package and the error: every other name still works, and
    only a lookup of that name (:meth:`get`, ``registry[name]``) is an :class:`EntryPointError`
    saying why. Reading the entry points never raises, so ``len()``, iteration and :meth:`names`
    always answer, with the installed packages' names included.
    """

    def __init__(self, kind: str, items: Mapping[str, T] | None = None, *, group: str | None = None,
                 item_type: type | None = None) -> None:
        #: what the items are, as the unknown-name error names them (``"projection method"``)
        self.kind = kind
        #: the entry-point group installed packages add items through (``None``: closed)
        self.group = group
        #: what an entry point's object must be, when the group names objects (``None``: unchecked)
        self.item_type = item_type
        self._items: dict[str, T] = {}
        #: name -> why an installed package's entry point of that name is unusable (package and load error)
        self._failed: dict[str, str] = {}
        #: name -> the installed package (``"name version"``) whose entry point added it
        self._packages: dict[str, str] = {}
        self._opened = group is None
        for name, item in (items or {}).items():
            self.register(name, item)

    def _open(self) -> None:
        """Load the entry-point group once, on the first lookup (importing a package costs only then).

        Nothing here raises: a package whose entry point cannot be used is one warning, and its name
        is remembered with the reason (:meth:`get` raises it for that name only).
        """
        if self._opened:
            return
        self._opened = True  # first: a module the group names may register (and look up) while it loads
        try:
            points = list(entry_points(group=self.group))
        except Exception as error:  # unreadable distribution metadata: the built-ins still work
            logger.warning("cannot read the installed packages' %s entry points (group %s): %s", self.kind,
                           self.group, error)
            return
        for point in points:
            package = point.dist.name if point.dist is not None else "an unknown package"
            where = f"entry point {point.name!r} = {point.value!r} of package {package} (group {self.group})"
            if point.name in self._items:
                logger.warning("%s %r is registered already: %s is ignored", self.kind, point.name, where)
                continue
            problem = self._load(point, where)
            if problem is None:
                version = getattr(point.dist, "version", None)
                self._packages[point.name] = f"{package} {version}" if version else package
                continue
            self._failed[point.name] = problem
            logger.warning("%s %r is not available: %s", self.kind, point.name, problem)

    def _load(self, point: Any, where: str) -> str | None:
        """Add what one entry point names; ``None`` when it did, else why it cannot be used (naming ``where``)."""
        try:
            loaded = point.load()
        except Exception as error:  # any error of the package's import: only its own name fails
            return f"cannot load {where}: {type(error).__name__}: {error}"
        if isinstance(loaded, ModuleType):
            if point.name not in self._items:
                return (f"{where} names a module, and importing it did not register {self.kind} {point.name!r}: "
                        "name an object (module:object) or register the name there")
        elif self.item_type is not None and not isinstance(loaded, self.item_type):
            return (f"{where} is of type {type(loaded).__name__}, not {self.item_type.__name__}; name a module "
                    f"that registers {point.name!r} instead")
        elif point.name not in self._items:
            self._items[point.name] = loaded
        return None

    def register(self, name: str, item: T = _MISSING, *, replace: bool = False) -> Any:
        """Add ``item`` as ``name`` and return it; without ``item``, a decorator that registers what it decorates.

        A name that is taken is a ``ValueError`` unless ``replace=True``.
        """
        if item is _MISSING:
            return lambda decorated: self.register(name, decorated, replace=replace)
        # no _open() here: the built-ins register while their module loads, before any package may
        if name in self._items and not replace:
            raise ValueError(f"{self.kind} {name!r} is registered already; pass replace=True to replace it")
        self[name] = item
        return item

    def get(self, name: str, default: Any = _MISSING) -> Any:
        """The item called ``name``; an unknown name returns ``default`` if given, else raises
        ``ValueError`` naming the kind, the closest names ("did you mean") and every known name.

        A name whose installed package failed to load is an :class:`EntryPointError` naming the
        package and its load error (``default``, if given, is returned instead, as for any name
        the registry cannot give).
        """
        self._open()
        if name in self._items:
            return self._items[name]
        if default is not _MISSING:
            return default
        if name in self._failed:
            raise EntryPointError(f"{self.kind} {name!r} is not available: {self._failed[name]}")
        close = difflib.get_close_matches(str(name), list(self._items), n=3)
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        raise ValueError(f"unknown {self.kind} {name!r}{hint}: expected one of {', '.join(self._items)}")

    def package(self, name: str) -> str | None:
        """The installed package (``"name version"``) whose entry point added ``name``; ``None`` for a
        name registered in code (a built-in, or a user's own ``register``), so that a card can say
        where a plugin's item came from."""
        self._open()
        return self._packages.get(name)

    def names(self) -> tuple[str, ...]:
        """The registered names, in registration order (an installed package's after the built-ins)."""
        self._open()
        return tuple(self._items)

    def __getitem__(self, name: str) -> T:
        self._open()
        if name not in self._items and name in self._failed:
            raise EntryPointError(f"{self.kind} {name!r} is not available: {self._failed[name]}")
        return self._items[name]

    def __setitem__(self, name: str, item: T) -> None:
        self._items[name] = item
        self._packages.pop(name, None)  # replaced in code: no longer the package's

    def __delitem__(self, name: str) -> None:
        del self._items[name]
        self._packages.pop(name, None)

    def __contains__(self, name: object) -> bool:
        self._open()
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        self._open()
        return iter(self._items)

    def __len__(self) -> int:
        self._open()
        return len(self._items)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self._items!r})"

