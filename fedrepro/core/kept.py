"""A few values kept for reuse, the least recently used dropped first: the data that the cells of one
Snakemake job share (:meth:`fedrepro.data.dataset.Dataset.load_shared`, softmax's decoded design)."""
from __future__ import annotations

from typing import Callable, Hashable

_MISSING = object()


class Kept:
    """Up to ``size`` values by key, the most recently used last.

    :meth:`get` returns the value kept under a key or makes it; before making one it drops the least
    recently used values until fewer than ``size`` remain, so no more than ``size`` are held while the
    new one is made (a job's memory is that of ``size`` values, not ``size + 1``)."""

    def __init__(self, size: int):
        if int(size) < 1:
            raise ValueError(f"Kept needs size >= 1, got {size}")
        self.size = int(size)
        self._values: dict = {}

    def get(self, key: Hashable, make: Callable[[], object], *, valid: Callable[[object], bool] | None = None,
            stale: Callable[[Hashable], bool] | None = None):
        """The value under ``key`` (if ``valid(value)``), else ``make()``, kept under ``key``. ``stale(k)``:
        kept keys to drop when a value is made (e.g. an older version of the same folder)."""
        value = self._values.pop(key, _MISSING)
        if value is _MISSING or (valid is not None and not valid(value)):
            for old in [k for k in self._values if stale is not None and stale(k)]:
                del self._values[old]
            while len(self._values) >= self.size:
                del self._values[next(iter(self._values))]
            value = make()
        self._values[key] = value
        return value

    def keys(self) -> list:
        return list(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def clear(self) -> None:
        self._values.clear()
