"""What the RunStore mixins (saved library, sweeps, bid cache) need from RunStore itself.

Why mixins: each part of the store keeps its SQL in its own module, while callers see one
object with one public API (`RunStore`), so nothing outside `store/` touches tables or SQL.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TypeVar

from sqlalchemy import Connection, Engine

T = TypeVar("T")


class StoreBase:
    """The store's URL, engine and transaction contexts, implemented by RunStore."""

    url: str
    engine: Engine

    def write(self, what: str) -> AbstractContextManager[Connection]:
        raise NotImplementedError

    def read(self, what: str) -> AbstractContextManager[Connection]:
        raise NotImplementedError

    def retrying(self, what: str, work: Callable[[Connection], T], *, write: bool = True,
                 for_s: float | None = None) -> T:
        raise NotImplementedError
