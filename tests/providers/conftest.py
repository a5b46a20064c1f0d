"""Fixtures and helpers the provider tests share: a fake OpenAI server, an agent on it, a delta
observer, and the SQLite-only store."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from groupchat_core import Agent, forget_remembered_modes
from groupchat_core.store import RunStore
from groupchat_core.testing import FakeOpenAIServer

KEY = "sk-test-never-leak-0123456789abcdef"


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    """A fake OpenAI server, no tool-choice modes remembered around it, and no call unscripted."""
    forget_remembered_modes()
    with FakeOpenAIServer() as srv:
        yield srv
    forget_remembered_modes()
    assert srv.unexpected == [], f"unexpected calls: {srv.unexpected}"


@pytest.fixture
def store(sqlite_store: RunStore) -> RunStore:
    """SQLite only (tests/conftest.py's sqlite_store)."""
    return sqlite_store


def http_agent(srv: FakeOpenAIServer | str, name: str, model: str | None = None,
               **kw: Any) -> Agent:
    """Agent `name` on `openai/<model>` (default: its name in lower case) at the server."""
    base = srv if isinstance(srv, str) else srv.base_url
    kw.setdefault("api_key", KEY)
    return Agent(agent_name=name, model_name=f"openai/{model or name.lower()}", api_base=base,
                 **kw)


class Deltas(list):
    """An observer of bid deltas: the list of those it saw."""

    wants = frozenset({"bid_delta"})
    thread_safe = True

    def __call__(self, event: Any) -> None:
        self.append(event)

    def of(self, agent: str) -> list[tuple[float | None, str]]:
        return [(e.score, e.message) for e in self if e.agent == agent]
