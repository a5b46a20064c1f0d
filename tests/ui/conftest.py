"""Fixtures of the dashboard's AppTests: one `app` (the whole app, as a browser session sees
it), whose background jobs stop when the test ends, `signed_in`, a server with login on, and
`store`, the SQLite store the app opens too."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from streamlit.testing.v1 import AppTest

from groupchat_core.store import RunStore
from groupchat_ui.kit import jobs as job_registry
from groupchat_ui.kit import store_access
from tests.helpers.app_helpers import new_app, signed_in_sessions

USERS = {"alice": ("alice@example.org", "Alice Liddell"), "bob": ("bob@example.org", "Bob"),
         "root": ("root@example.org", "Root")}


@pytest.fixture
def app() -> Iterator[AppTest]:
    yield new_app()
    job_registry.registry().shutdown()


@pytest.fixture
def signed_in(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], AppTest]]:
    """`signed_in(name)` opens the dashboard in a new session signed in as USERS[name]."""
    open_as = signed_in_sessions(monkeypatch, USERS)
    monkeypatch.setenv("GROUPCHAT_ADMINS", "root@example.org")  # docs/engine.md, Security
    store_access.invalidate()
    yield open_as
    job_registry.registry().shutdown()


@pytest.fixture
def store() -> RunStore:
    """The SQLite file GROUPCHAT_DB names (tests/conftest.py), which the app opens too: these
    tests run once, not on each backend as tests/conftest.py's `store` does."""
    return RunStore()
