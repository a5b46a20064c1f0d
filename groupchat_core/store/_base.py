"""What the RunStore mixins (saved library, sweeps, bid cache) need from RunStore itself.

Why mixins: each part of the store keeps its SQL in its own module, while callers see one
object with one public API (`RunStore`), so nothing outside `store/` touches tables or SQL.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TypeVar

from sqlalchemy import Connection, Engine

from ._writer import TurnWriter

T = TypeVar("T")


class StoreBase:
    """The store's URL, engines and transaction contexts, implemented by RunStore (the
    recorder is typed against this too, so it never imports RunStore back)."""

    url: str
    engine: Engine
    write_engine: Engine
    reconnect_for: float
    turn_writer: TurnWriter

    def write(self, what: str) -> AbstractContextManager[Connection]:
        raise NotImplementedError

    def read(self, what: str) -> AbstractContextManager[Connection]:
        raise NotImplementedError

    def retrying(self, what: str, work: Callable[[Connection], T], *, write: bool = True,
                 for_s: float | None = None) -> T:
        raise NotImplementedError
