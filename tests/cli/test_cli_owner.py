"""Ownership on the command line: what the CLI starts or imports is recorded for `--owner`, else
the OS user; `list --json`, `show` and exports say who; `delete` and `sweep delete` follow the
owner rule, ask unless `--yes`, and one refused run deletes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groupchat_core import StoreError
from groupchat_core.store import RunStore, SweepBusy
from tests.helpers.cli import DEBATE, run_cli


@pytest.fixture(autouse=True)
def _os_user_is_ada(monkeypatch):
    for name in ("LOGNAME", "USER", "LNAME", "USERNAME"):  # what getpass.getuser() reads first
        monkeypatch.setenv(name, "ada")


pytestmark = pytest.mark.usefixtures("fresh_engines")


def recorded(capsys, task: str, *flags: str) -> str:
    code, _, err = run_cli(capsys, "run", DEBATE, "--task", task, "--quiet", *flags)
    assert code == 0, err
    return err.strip().splitlines()[-1].removeprefix("run ")


def run_id_of(err: str) -> str:
    return err.strip().splitlines()[-1].removeprefix("run ")


def test_runs_are_recorded_for_the_os_user_or_the_owner_flag_and_every_output_says_so(capsys):
    code, _, err = run_cli(capsys, "run", DEBATE, "--task", "Mine by default.", "--quiet")
    assert code == 0, err
    default = run_id_of(err)
    code, _, err = run_cli(capsys, "run", DEBATE, "--task", "Flagged.", "--quiet",
                       "--owner", "grace@example.org")
    assert code == 0, err
    flagged = run_id_of(err)
    info = RunStore().run_info(default)
    assert (info["owner"], info["owner_name"]) == ("ada", "ada")
    assert RunStore().run_info(flagged)["owner"] == "grace@example.org"

    _, out, _ = run_cli(capsys, "list", "--json")
    owners = {r["run_id"]: (r["owner"], r["owner_name"]) for r in json.loads(out)}
    assert owners == {default: ("ada", "ada"),
                      flagged: ("grace@example.org", "grace@example.org")}
    _, out, _ = run_cli(capsys, "show", flagged)
    assert "- Owner: grace@example.org" in out
    _, out, _ = run_cli(capsys, "show", default, "--json")
    assert json.loads(out)["run"]["owner"] == "ada"
    _, out, _ = run_cli(capsys, "export", flagged, "--format", "md")
    assert "- Owner: grace@example.org" in out
    _, bundle, _ = run_cli(capsys, "export", flagged)
    assert json.loads(bundle)["run"]["owner"] == "grace@example.org"

    # Imported elsewhere, the run belongs to whoever imports it, never to what the file says.
    other = f"sqlite:///{Path(RunStore().url.removeprefix('sqlite:///')).parent}/other.db"
    path = Path(RunStore().url.removeprefix("sqlite:///")).parent / "b.json"
    path.write_text(bundle)
    code, _, err = run_cli(capsys, "--db", other, "import", str(path), "--owner", "lin")
    assert code == 0, err
    assert RunStore(other).run_info(flagged)["owner"] == "lin"


def test_a_bad_owner_flag_is_one_line(capsys):
    code, out, err = run_cli(capsys, "run", DEBATE, "--task", "t", "--quiet", "--owner", "a\x1bb")
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("error: --owner")
    assert RunStore().list_runs().empty


def write_spec(path: Path) -> str:
    agents = [{"agent_name": n, "system_prompt": p, "model_name": "sim/balanced"}
              for n, p in (("Pro", "You argue for."), ("Con", "You argue against."))]
    path.write_text(json.dumps({
        "name": "owned-sweep", "base": {"max_loops": 4, "agents": agents},
        "grid": {"threshold": [0.3, 0.5]}, "tasks": ["Q?"], "repeats": 2}))
    return str(path)


def test_sweeps_carry_their_owner_and_only_the_owner_deletes_one(capsys, tmp_path, monkeypatch):
    code, out, err = run_cli(capsys, "sweep", write_spec(tmp_path / "s.json"), "--quiet", "--json")
    assert code == 0, err
    sweep = json.loads(out)["sweep_id"]
    store = RunStore()
    assert store.get_sweep(sweep)["owner"] == "ada"
    assert set(store.list_runs(sweep_id=sweep)["owner"]) == {"ada"}  # its runs inherit it
    _, out, _ = run_cli(capsys, "sweep", "list", "--json")
    assert [(s["owner"], s["owner_name"]) for s in json.loads(out)] == [("ada", "ada")]
    _, out, _ = run_cli(capsys, "sweep", "show", sweep, "--json")
    assert json.loads(out)["sweep"]["owner"] == "ada"
    _, out, _ = run_cli(capsys, "sweep", "export", sweep, "--format", "json")
    assert json.loads(out)["sweep"]["owner"] == "ada"

    code, out, err = run_cli(capsys, "sweep", "delete", sweep[:10], "--yes", "--owner", "bob")
    assert code == 2 and err.count("\n") == 1
    assert "belongs to ada, not to bob: only its owner deletes it" in err
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    code, out, err = run_cli(capsys, "sweep", "delete", sweep[:10])
    assert code == 2 and "needs a confirmation: add --yes" in err and err.count("\n") == 1
    assert len(store.list_runs(sweep_id=sweep)) == 4  # nothing deleted so far

    code, out, err = run_cli(capsys, "sweep", "delete", sweep[:10], "--yes")
    assert code == 0 and out == ""
    assert err.strip() == f"deleted sweep {sweep[:12]} (owned-sweep) and its 4 runs"
    assert store.list_sweeps().empty and store.list_runs().empty
    assert store.cell_claims(sweep).empty
    code, _, err = run_cli(capsys, "sweep", "delete", sweep, "--yes")
    assert code == 2 and err.startswith(f"error: no sweep '{sweep}'")


def test_a_sweep_is_deleted_after_a_terminal_confirmation_never_while_running(capsys,
                                                                              monkeypatch):
    store = RunStore()
    sweep = store.create_sweep("asked", {"threshold": [0.5]}, owner="ada")  # running here
    with pytest.raises(SweepBusy, match="already running in this process"):
        store.delete_sweep(sweep)
    code, _, err = run_cli(capsys, "sweep", "delete", sweep, "--yes")
    assert code == 2 and "already running" in err and err.count("\n") == 1
    store.finish_sweep(sweep, "cancelled")
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("sys.stdin.readline", lambda: "n\n")
    code, _, err = run_cli(capsys, "sweep", "delete", sweep)
    assert code == 1 and f"Delete sweep {sweep[:12]} (asked) and its 0 runs?" in err
    assert "nothing deleted" in err and len(store.list_sweeps()) == 1
    monkeypatch.setattr("sys.stdin.readline", lambda: "y\n")
    code, _, err = run_cli(capsys, "sweep", "delete", sweep)
    assert code == 0 and store.list_sweeps().empty
    with pytest.raises(StoreError, match="no sweep"):
        store.delete_sweep(sweep)


# --- `delete RUN ...` ---------------------------------------------------------------------------


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


def test_a_terminal_confirmation_names_the_runs_and_a_running_run_is_not_deleted(capsys,
                                                                                 monkeypatch):
    first, second = recorded(capsys, "One."), recorded(capsys, "Two.")
    store = RunStore()
    store._update_run(second, "mark running", status="running")  # as a live process leaves it
    code, _, err = run_cli(capsys, "delete", second, "--yes")
    assert code == 2 and "is still running: stop it" in err and err.count("\n") == 1
    store._update_run(second, "mark finished", status="finished")
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("sys.stdin.readline", lambda: "n\n")
    code, _, err = run_cli(capsys, "delete", first, second)
    assert code == 1 and "Delete 2 runs? This cannot be undone. [y/N]" in err
    assert "nothing deleted" in err and len(store.list_runs()) == 2
    monkeypatch.setattr("sys.stdin.readline", lambda: "y\n")
    code, _, err = run_cli(capsys, "delete", first)
    assert code == 0 and f"Delete run {first[:12]} (One.)?" in err
    assert list(store.list_runs()["run_id"]) == [second]


def test_delete_on_a_path_with_no_store_creates_none(capsys, tmp_path):
    url = f"sqlite:///{tmp_path}/none/groupchat.db"
    code, _, err = run_cli(capsys, "--db", url, "delete", "abc", "--yes")
    assert code == 2 and err.count("\n") == 1
    assert not (tmp_path / "none").exists()
