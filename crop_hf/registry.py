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
ValueError: unknown shape 'sqaure': expected one of circle, square
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, MutableMapping
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any, Generic, TypeVar

__all__ = ["Registry"]

T = TypeVar("T")
_MISSING: Any = object()
logger = logging.getLogger("crop-hf")


class Registry(MutableMapping[str, T], Generic[T]):
    """Items of one ``kind`` by name, in registration order.

    It is a mapping (``registry[name]``, ``name in registry``, iteration, ``items()``), so code
    that indexed the dictionary it replaces works unchanged; assigning ``registry[name] = item``
    replaces a row as a dictionary would, where :meth:`register` refuses a taken name.

    With ``group``, the first lookup (any read: :meth:`get`, ``in``, iteration, :meth:`names`)
    also loads that entry-point group: each entry point ``name = module:object`` adds ``object`` as
    ``name``, or, when it names a module (``name = module``), importing it must register ``name``
    itself (``register_method(name, ...)`` at the module's top level). An entry point whose name is
    taken, by a built-in or an earlier package, is refused with one logged line naming its package;
    one that fails to load, or loads without registering its name, is an error naming the package.
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
        self._opened = group is None
        for name, item in (items or {}).items():
            self.register(name, item)

    def _open(self) -> None:
        """Load the entry-point group once, on the first lookup (importing a package costs only then)."""
        if self._opened:
            return
        self._opened = True  # first: a module the group names may register (and look up) while it loads
        for point in entry_points(group=self.group):
            package = point.dist.name if point.dist is not None else "an unknown package"
            where = f"entry point {point.name!r} = {point.value!r} of package {package} (group {self.group})"
            if point.name in self._items:
                logger.warning("%s %r is registered already: %s is ignored", self.kind, point.name, where)
                continue
            try:
                loaded = point.load()
            except Exception as error:
                raise ImportError(f"cannot load {self.kind} {point.name!r} from {where}: {error}") from error
            if isinstance(loaded, ModuleType):
                if point.name not in self._items:
                    raise ValueError(f"{where} names a module, and importing it did not register {self.kind} "
                                     f"{point.name!r}: name an object (module:object) or register the name there")
            elif self.item_type is not None and not isinstance(loaded, self.item_type):
                raise TypeError(f"{where} is of type {type(loaded).__name__}, not {self.item_type.__name__}; "
                                f"name a module that registers {point.name!r} instead")
            elif point.name not in self._items:
                self._items[point.name] = loaded

    def register(self, name: str, item: T = _MISSING, *, replace: bool = False) -> Any:
        """Add ``item`` as ``name`` and return it; without ``item``, a decorator that registers what it decorates.

        A name that is taken is a ``ValueError`` unless ``replace=True``.
        """
        if item is _MISSING:
            return lambda decorated: self.register(name, decorated, replace=replace)
        # no _open() here: the built-ins register while their module loads, before any package may
        if name in self._items and not replace:
            raise ValueError(f"{self.kind} {name!r} is registered already; pass replace=True to replace it")
        self._items[name] = item
        return item

    def get(self, name: str, default: Any = _MISSING) -> Any:
        """The item called ``name``; an unknown name returns ``default`` if given, else raises
        ``ValueError`` naming the kind and every known name."""
        self._open()
        if name in self._items:
            return self._items[name]
        if default is not _MISSING:
            return default
        raise ValueError(f"unknown {self.kind} {name!r}: expected one of {', '.join(self._items)}")

    def names(self) -> tuple[str, ...]:
        """The registered names, in registration order (an installed package's after the built-ins)."""
        self._open()
        return tuple(self._items)

    def __getitem__(self, name: str) -> T:
        self._open()
        return self._items[name]

    def __setitem__(self, name: str, item: T) -> None:
        self._items[name] = item

    def __delitem__(self, name: str) -> None:
        del self._items[name]

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

