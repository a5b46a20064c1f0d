"""A damaged SQLite store is refused, unchanged; read-only commands never create a store.

A real store file (recorded runs) gets one page overwritten with garbage, as a bad disk sector
or a torn copy would leave it: opening it (RunStore, the CLI's reading and writing commands) is
refused with one line naming the file and the fix, and the file stays byte for byte the same.
Read-only commands pointed at a path where no store exists say so and create no file or folder.

Private imports (`store._sqlite_check`): units or test hooks with no public name; everything public
comes from the public API.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from groupchat_core import Agent, GroupChat, StoreError
from groupchat_core.cli import main
from groupchat_core.store import RunStore
from tests.helpers import ROOT
from tests.helpers.cli import DEBATE
from tests.helpers.stores import release_store_engines

pytestmark = pytest.mark.usefixtures("fresh_engines")


def recorded_store(path: Path, runs: int = 3) -> str:
    url = f"sqlite:///{path}"
    store = RunStore(url)
    for i in range(runs):
        chat = GroupChat(agents=[Agent(agent_name=n, model_name="sim/balanced")
                                 for n in ("Ann", "Ben", "Cy")], max_loops=12)
        store.attach(chat)
        chat.run(f"Plan offsite number {i}. " + "Context. " * 200)
    store.flush()
    release_store_engines()  # the last close checkpoints the WAL into the file
    return url


def corrupt_one_page(path: Path) -> int:
    """Overwrite one page of the messages table's b-tree with garbage; which page it was."""
    with sqlite3.connect(path) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'messages'"
                            ).fetchone()[0]
    conn.close()
    with open(path, "r+b") as handle:
        handle.seek((root - 1) * page_size)
        handle.write(bytes(range(256)) * (page_size // 256))
    return int(root)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_store_with_one_corrupt_page_is_refused_with_one_line_and_left_unchanged(
        tmp_path, capsys):
    path = tmp_path / "damaged.db"
    url = recorded_store(path)
    corrupt_one_page(path)
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:  # the damage is real
        with pytest.raises(sqlite3.DatabaseError):
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] != "ok"
            conn.execute("SELECT count(*), sum(length(content)) FROM messages").fetchall()
    conn.close()
    before = digest(path)

    with pytest.raises(StoreError) as refused:
        RunStore(url)
    message = str(refused.value)
    assert "\n" not in message and str(path) in message
    assert "damaged" in message and "backup" in message and ".recover" in message
    assert digest(path) == before

    for argv in (["list"], ["list", "--json"], ["show", "abc"], ["sweep", "list"],
                 ["run", DEBATE, "--task", "Write into it.", "--quiet"]):
        code = main(["--db", url, *argv])
        out, err = capsys.readouterr()
        assert code == 2 and out == "", (argv, out, err)
        assert err.count("\n") == 1 and err.startswith("error: the store ") and str(path) in err
        assert "Traceback" not in err
        assert digest(path) == before, argv  # never written, not even by `run`


def test_a_healthy_store_is_checked_once_per_process(tmp_path, monkeypatch):
    from groupchat_core.store import _sqlite_check as check_module

    url = recorded_store(tmp_path / "fine.db", runs=1)
    checks: list[Path] = []
    real = check_module._quick_check
    monkeypatch.setattr(check_module, "_quick_check", lambda p: checks.append(p) or real(p))
    for _ in range(3):
        assert len(RunStore(url).list_runs()) == 1
    assert checks == [tmp_path / "fine.db"]


READ_ONLY = (["list"], ["list", "--json"], ["show", "abc"], ["show", "abc", "--json"],
             ["export", "abc"], ["export", "abc", "--format", "md"], ["agents", "list"],
             ["agents", "export"], ["sweep", "list"], ["sweep", "list", "--json"],
             ["sweep", "show", "abc"], ["sweep", "export", "abc"], ["sweep", "stop", "abc"])


@pytest.mark.parametrize("argv", READ_ONLY, ids=" ".join)
def test_read_only_commands_on_a_new_path_create_no_store_and_no_folder(tmp_path, capsys, argv):
    folder = tmp_path / "not" / "there"
    path = folder / "groupchat.db"
    code = main(["--db", f"sqlite:///{path}", *argv])
    out, err = capsys.readouterr()
    assert not folder.exists() and not (tmp_path / "not").exists()
    assert "Traceback" not in err and err.count("\n") <= 1
    if argv[-2:] == ["list", "--json"]:  # a script listing a fresh machine gets []
        assert code == 0 and json.loads(out) == []
    elif argv[-1] == "list":
        assert code == 0 and out == ""
        assert argv[0] == "agents" or err.startswith(f"no store at {path}")
    else:
        assert code == 2 and out == "" and err.startswith(f"error: no store at {path}")


def test_a_store_that_does_not_exist_is_refused_by_runstore_create_false(tmp_path):
    path = tmp_path / "new" / "x.db"
    with pytest.raises(StoreError, match="no store at .*nothing is recorded there yet"):
        RunStore(f"sqlite:///{path}", create=False)
    assert not path.parent.exists()
    RunStore(f"sqlite:///{path}")  # the default still creates it (and its folder)
    assert path.exists()


def test_the_dashboard_shows_a_damaged_store_as_one_error_and_leaves_it_unchanged(
        tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    path = tmp_path / "damaged.db"
    url = recorded_store(path, runs=1)
    corrupt_one_page(path)
    before = digest(path)
    monkeypatch.setenv("GROUPCHAT_DB", url)
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    at.run()
    assert not at.exception, [e.value for e in at.exception]  # no traceback on the page
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and errors[0].startswith("The store cannot be opened: the store ")
    assert "damaged" in errors[0] and ".recover" in errors[0]
    assert digest(path) == before
