"""One small registry type for every "a feature adds a row" table.

Commands (:data:`crop_hf.cli.COMMANDS`), pipeline tasks, corpus builders, projection methods,
marker styles and translation backends are each a :class:`Registry`: a name → item mapping in
registration order with one way to add a row (:meth:`Registry.register`, also a decorator) and
one error for a name it does not hold (:meth:`Registry.get`).

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

from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any, Generic, TypeVar

__all__ = ["Registry"]

T = TypeVar("T")
_MISSING: Any = object()


class Registry(MutableMapping[str, T], Generic[T]):
    """Items of one ``kind`` by name, in registration order.

    It is a mapping (``registry[name]``, ``name in registry``, iteration, ``items()``), so code
    that indexed the dictionary it replaces works unchanged; assigning ``registry[name] = item``
    replaces a row as a dictionary would, where :meth:`register` refuses a taken name.
    """

    def __init__(self, kind: str, items: Mapping[str, T] | None = None) -> None:
        #: what the items are, as the unknown-name error names them (``"projection method"``)
        self.kind = kind
        self._items: dict[str, T] = {}
        for name, item in (items or {}).items():
            self.register(name, item)

    def register(self, name: str, item: T = _MISSING, *, replace: bool = False) -> Any:
        """Add ``item`` as ``name`` and return it; without ``item``, a decorator that registers what it decorates.

        A name that is taken is a ``ValueError`` unless ``replace=True``.
        """
        if item is _MISSING:
            return lambda decorated: self.register(name, decorated, replace=replace)
        if name in self._items and not replace:
            raise ValueError(f"{self.kind} {name!r} is registered already; pass replace=True to replace it")
        self._items[name] = item
        return item

    def get(self, name: str, default: Any = _MISSING) -> Any:
        """The item called ``name``; an unknown name returns ``default`` if given, else raises
        ``ValueError`` naming the kind and every known name."""
        if name in self._items:
            return self._items[name]
        if default is not _MISSING:
            return default
        raise ValueError(f"unknown {self.kind} {name!r}: expected one of {', '.join(self._items)}")

    def names(self) -> tuple[str, ...]:
        """The registered names, in registration order."""
        return tuple(self._items)

    def __getitem__(self, name: str) -> T:
        return self._items[name]

    def __setitem__(self, name: str, item: T) -> None:
        self._items[name] = item

    def __delitem__(self, name: str) -> None:
        del self._items[name]

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self._items!r})"

