"""Suite-wide guards: no real model calls, no provider keys, no network beyond loopback."""

from __future__ import annotations

import ipaddress
import os
import socket

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ["GROUPCHAT_BLOCK_REMOTE_CALLS"] = "1"

_real_connect = socket.socket.connect


def _loopback_only(self: socket.socket, address: object) -> None:
    if isinstance(address, tuple) and address:
        host = str(address[0])
        try:
            allowed = ipaddress.ip_address(host).is_loopback
        except ValueError:
            allowed = host == "localhost"
        if not allowed:
            raise ConnectionRefusedError(f"tests may only connect to loopback, not {host!r}")
    _real_connect(self, address)


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    """Block non-local model calls and sockets, strip provider keys, keep data in tmp_path."""
    for name in list(os.environ):
        if name.endswith("_API_KEY"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("GROUPCHAT_BLOCK_REMOTE_CALLS", "1")
    monkeypatch.setenv("GROUPCHAT_DB", f"sqlite:///{tmp_path}/groupchat.db")
    monkeypatch.setattr(socket.socket, "connect", _loopback_only)
    from groupchat_core import _model_calls as models

    monkeypatch.setattr(models, "RETRY_BASE_DELAY", 0.01)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Browser tests last: Playwright's sync API leaves an event loop on the main thread for
    the rest of the session, which other tests (asyncio.run from a plain thread) must not see."""
    items.sort(key=lambda item: "/e2e/" in str(item.path).replace("\\", "/"))
