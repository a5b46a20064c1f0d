"""`delete RUN ...`: the owner rules of `sweep delete` for runs; asks unless `--yes`; one refused
run deletes nothing."""

from __future__ import annotations

import pytest

from groupchat_core.store import RunStore
from tests.helpers.cli import DEBATE, run_cli

pytestmark = pytest.mark.usefixtures("fresh_engines")


@pytest.fixture(autouse=True)
def _os_user_is_ada(monkeypatch):
    for name in ("LOGNAME", "USER", "LNAME", "USERNAME"):  # what getpass.getuser() reads first
        monkeypatch.setenv(name, "ada")


def recorded(capsys, task: str, *flags: str) -> str:
    code, _, err = run_cli(capsys, "run", DEBATE, "--task", task, "--quiet", *flags)
    assert code == 0, err
    return err.strip().splitlines()[-1].removeprefix("run ")


def test_the_owner_deletes_her_runs_with_yes_and_others_runs_are_refused(capsys, monkeypatch):
    mine, other = recorded(capsys, "Mine."), recorded(capsys, "Theirs.", "--owner", "bob")
    store = RunStore()
    code, out, err = run_cli(capsys, "delete", mine[:10], other, "--yes")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"run {other[:12]} (Theirs.) belongs to bob, not to ada: only its owner" in err
    assert len(store.list_runs()) == 2  # one refused run: nothing deleted

    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    code, _, err = run_cli(capsys, "delete", mine)
    assert code == 2 and "needs a confirmation: add --yes" in err and err.count("\n") == 1
    assert len(store.list_runs()) == 2

    code, out, err = run_cli(capsys, "delete", mine[:10], "--yes")
    assert code == 0 and out == "" and err.strip() == f"deleted run {mine[:12]} (Mine.)"
    assert list(store.list_runs()["run_id"]) == [other]
    assert store.bids(mine).empty
    code, _, err = run_cli(capsys, "delete", other, "--yes", "--owner", "bob")
    assert code == 0 and store.list_runs().empty
    code, _, err = run_cli(capsys, "delete", mine, "--yes")
    assert code == 2 and err.startswith(f"error: no run '{mine}'")


def test_a_terminal_confirmation_names_the_runs_and_no_keeps_them(capsys, monkeypatch):
    first, second = recorded(capsys, "One."), recorded(capsys, "Two.")
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("sys.stdin.readline", lambda: "n\n")
    code, _, err = run_cli(capsys, "delete", first, second)
    assert code == 1 and "Delete 2 runs? This cannot be undone. [y/N]" in err
    assert "nothing deleted" in err and len(RunStore().list_runs()) == 2
    monkeypatch.setattr("sys.stdin.readline", lambda: "y\n")
    code, _, err = run_cli(capsys, "delete", first)
    assert code == 0 and f"Delete run {first[:12]} (One.)?" in err
    assert list(RunStore().list_runs()["run_id"]) == [second]


def test_a_running_run_is_not_deleted(capsys):
    run_id = recorded(capsys, "Live.")
    store = RunStore()
    store._update_run(run_id, "mark running", status="running")  # as a live process leaves it
    code, _, err = run_cli(capsys, "delete", run_id, "--yes")
    assert code == 2 and "is still running: stop it" in err and err.count("\n") == 1
    assert len(store.list_runs()) == 1


def test_delete_on_a_path_with_no_store_creates_none(capsys, tmp_path):
    url = f"sqlite:///{tmp_path}/none/groupchat.db"
    code, _, err = run_cli(capsys, "--db", url, "delete", "abc", "--yes")
    assert code == 2 and err.count("\n") == 1
    assert not (tmp_path / "none").exists()
