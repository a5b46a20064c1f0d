"""The Settings page says where the data lives and why, and names an older store that is not
in use with the line that points at it. Private imports (`groupchat_core._home`): a test hook."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from streamlit.testing.v1 import AppTest

from groupchat_core import _home as home
from groupchat_ui.kit import jobs as job_registry
from tests.helpers import ROOT


@pytest.fixture
def settings(monkeypatch, tmp_path) -> Iterator[Callable[[], AppTest]]:
    monkeypatch.chdir(tmp_path)
    # The page also looks in the checkout's own data/ folder, where `make run` keeps the
    # developer's store: the test must see only its own files.
    monkeypatch.setattr(home, "CHECKOUT_ROOT", tmp_path / "checkout")

    def open_page() -> AppTest:
        at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
        at.run()
        at.switch_page("app_pages/settings.py").run()
        assert not at.exception, [e.value for e in at.exception]
        return at

    yield open_page
    job_registry.registry().shutdown()


def test_settings_names_the_store_and_why(settings, tmp_path, monkeypatch):
    at = settings()
    data = next(m.value for m in at.markdown if "are stored at" in m.value)
    assert f"`sqlite:///{tmp_path}/groupchat.db`" in data
    assert "set by the `GROUPCHAT_DB` environment variable" in data
    assert not at.warning and not at.code

    monkeypatch.delenv("GROUPCHAT_DB")
    monkeypatch.setenv("GROUPCHAT_HOME", str(tmp_path / "home"))
    at = settings()
    data = next(m.value for m in at.markdown if "are stored at" in m.value)
    assert f"`sqlite:///{tmp_path / 'home' / 'groupchat.db'}`" in data
    assert "`GROUPCHAT_HOME` environment variable" in data


def test_settings_names_an_older_store_that_is_not_in_use(settings, tmp_path):
    old = tmp_path / "data" / "groupchat.db"
    old.parent.mkdir()
    old.write_bytes(b"")
    at = settings()
    assert [w.value for w in at.warning if "not in use" in w.value]
    assert [c.value for c in at.code] == [f"GROUPCHAT_DB=sqlite:///{old.resolve()}"]
