"""Where the data lives (groupchat_core/_home.py): GROUPCHAT_DB, else GROUPCHAT_HOME, else a
clone's data/, else the platform's user data directory, never inside the installed package; an
older store left next to the working directory gets a notice saying how to use it.

Private imports (`groupchat_core._home`): units or test hooks with no public name; everything public
comes from the public API.
"""

from __future__ import annotations

import pytest

from groupchat_core import _home
from groupchat_core.cli import main
from groupchat_core.store import data_location, default_url, stray_databases
from tests.helpers import ROOT


@pytest.fixture
def installed_copy(monkeypatch, tmp_path):
    """The code as it runs from site-packages: not a checkout, user data under tmp_path."""
    monkeypatch.delenv("GROUPCHAT_DB")
    monkeypatch.delenv("GROUPCHAT_HOME", raising=False)
    monkeypatch.setattr(_home, "is_checkout", lambda root=_home.CHECKOUT_ROOT: False)
    monkeypatch.setattr(_home, "CHECKOUT_ROOT", tmp_path / "site-packages")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "groupchat-lab" / "groupchat.db"


def test_groupchat_db_wins_over_everything(monkeypatch, tmp_path):
    monkeypatch.setenv("GROUPCHAT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GROUPCHAT_DB", "postgresql+psycopg://u:p@db/lab")
    location = data_location()
    assert (location.url, location.source, location.path) == (
        "postgresql+psycopg://u:p@db/lab", "GROUPCHAT_DB", None)
    assert default_url() == "postgresql+psycopg://u:p@db/lab"


def test_groupchat_home_is_a_folder_holding_the_store(monkeypatch, tmp_path):
    monkeypatch.delenv("GROUPCHAT_DB")
    monkeypatch.setenv("GROUPCHAT_HOME", str(tmp_path / "lab-home"))
    location = data_location()
    assert location.source == "GROUPCHAT_HOME"
    assert location.path == tmp_path / "lab-home" / "groupchat.db"
    assert default_url() == f"sqlite:///{tmp_path / 'lab-home' / 'groupchat.db'}"


def test_a_clone_keeps_the_repos_data_folder(monkeypatch):
    monkeypatch.delenv("GROUPCHAT_DB")
    monkeypatch.delenv("GROUPCHAT_HOME", raising=False)
    assert _home.is_checkout()
    assert data_location().source == "checkout"
    assert default_url() == f"sqlite:///{ROOT / 'data' / 'groupchat.db'}"


def test_an_installed_copy_uses_the_user_data_directory_never_the_package(installed_copy):
    location = data_location()
    assert location.source == "user data directory"
    assert location.path == installed_copy
    assert not location.path.is_relative_to(_home.PACKAGE_DIR.parent)


def test_site_packages_is_not_taken_for_a_checkout(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\n")
    assert not _home.is_checkout(tmp_path)  # a stray pyproject alone is not a clone
    (tmp_path / "streamlit_app.py").write_text("")
    assert _home.is_checkout(tmp_path)


def test_an_older_store_next_to_the_working_directory_gets_a_notice(installed_copy, tmp_path,
                                                                    monkeypatch, capsys):
    old = tmp_path / "project" / "data" / "groupchat.db"
    old.parent.mkdir(parents=True)
    old.write_bytes(b"")
    monkeypatch.chdir(tmp_path / "project")
    assert stray_databases() == [old.resolve()]
    notice = _home.stray_notice()
    assert notice == (f"note: {old.resolve()} holds an existing store that is not in use (the "
                      f"data lives in {installed_copy}); to use it, set "
                      f"GROUPCHAT_DB=sqlite:///{old.resolve()} or move it to {installed_copy}")
    with pytest.raises(SystemExit):
        main(["--version"])
    assert notice in capsys.readouterr().out

    monkeypatch.setenv("GROUPCHAT_DB", f"sqlite:///{old}")  # pointed at it: no notice
    assert stray_databases() == [] and _home.stray_notice() is None


def test_no_notice_without_an_older_store(installed_copy, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert _home.stray_notice() is None


def test_the_old_default_inside_site_packages_is_found_too(installed_copy, tmp_path,
                                                          monkeypatch):
    """Before the data home, an installed copy wrote `<site-packages>/data/groupchat.db`."""
    old = tmp_path / "site-packages" / "data" / "groupchat.db"
    old.parent.mkdir(parents=True)
    old.write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    assert stray_databases() == [old.resolve()]
