"""Fixtures the provider tests share: a fake OpenAI server, and the SQLite-only store."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from groupchat_core import forget_remembered_modes
from groupchat_core.store import RunStore
from groupchat_core.testing import FakeOpenAIServer


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
