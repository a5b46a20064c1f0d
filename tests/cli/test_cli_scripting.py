"""The command line for scripts and habits: --json with stable fields, chat parameters as run
flags (checked by ChatConfig's rules), quiet ends of closed pipes, --log-level / -v, --version,
help and choices on every option.

Private imports (`cli._store`): units or test hooks with no public name; everything public comes
from the public API.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from groupchat_core.cli import build_parser, main
from groupchat_core.cli._store import LIST_FIELDS
from groupchat_core.store import SCHEMA_VERSION, RunStore
from tests.helpers import ROOT
from tests.helpers.cli import DEBATE, run_cli

pytestmark = pytest.mark.usefixtures("fresh_engines")



def recorded(capsys, *extra: str, task: str = "Should we adopt AI?") -> str:
    code, _, err = run_cli(capsys, "run", DEBATE, "--task", task, "--quiet", *extra)
    assert code == 0, err
    return err.strip().splitlines()[-1].removeprefix("run ")


def test_run_flags_override_the_spec(capsys):
    run_id = recorded(capsys, "--threshold", "0.05", "--recency-penalty", "0.1",
                      "--recency-window", "2", "--max-loops", "3", "--seed", "7",
                      "--output-type", "json")
    config = RunStore().load_run(run_id).config
    assert (config["threshold"], config["recency_penalty"], config["recency_window"],
            config["max_loops"], config["seed"], config["output_type"]) == (
        0.05, 0.1, 2, 3, 7, "json")


@pytest.mark.parametrize(("argv", "message"), [
    (["--max-loops", "0"], "error: --max-loops: max_loops must be an integer >= 1, got 0"),
    (["--recency-window", "-1"], "error: --recency-window: recency_window must be an integer"),
    (["--recency-penalty", "nan"], "error: --recency-penalty: recency_penalty must be a finite"),
    (["--seed", "x"], "error: argument --seed: must be an integer, got 'x'"),
    (["--threshold", "high"], "error: argument --threshold: must be a number, got 'high'"),
])
def test_bad_run_flags_are_one_line_and_record_nothing(capsys, argv, message):
    code, out, err = run_cli(capsys, "run", DEBATE, "--task", "t", *argv)
    assert code == 2 and out == ""
    assert err.startswith(message) and err.count("\n") == 1, err
    assert RunStore().list_runs().empty


def test_list_and_show_json_have_the_documented_fields_and_escape_every_control(capsys):
    evil = "evil \x1b]52;c;aGk=\x07 task \u202e"
    first = recorded(capsys, task="one")
    second = recorded(capsys, "--max-loops", "2", task=evil)
    code, out, _ = run_cli(capsys, "list", "--json")
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    rows = json.loads(out)
    assert code == 0 and [r["run_id"] for r in rows] == [second, first]
    assert all(list(r) == list(LIST_FIELDS) for r in rows)
    assert rows[0]["max_loops"] == 2 and rows[0]["task"] == evil
    assert rows[0]["status"] == "finished" and isinstance(rows[0]["turns"], int)
    code, out, _ = run_cli(capsys, "list", "--json", "--status", "error")
    assert json.loads(out) == []  # an empty list, not a message
    code, out, _ = run_cli(capsys, "show", first[:8], "--json")  # the bundle's run, messages
    data = json.loads(out)
    assert code == 0 and list(data) == ["run", "written_by", "messages", "turns", "simulated",
                                        "outcome"]
    assert data["simulated"] is True and data["outcome"] is None  # sims, a plain task
    assert data["run"]["run_id"] == first and data["messages"][0]["content"] == "one"
    assert data["written_by"]["store_schema_version"] == SCHEMA_VERSION
    code, out, _ = run_cli(capsys, "show", first, "--json", "--bids")
    bids = json.loads(out)["bids"]
    assert bids and {"agent", "score", "turn"} <= set(bids[0])
    _, out, _ = run_cli(capsys, "show", second, "--json")
    assert "\x1b" not in out and json.loads(out)["messages"][0]["content"] == evil


def _cli(tmp_path: Path, shell: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GROUPCHAT_DB": f"sqlite:///{tmp_path}/pipe.db",
           "PYTHONPATH": str(ROOT)}
    return subprocess.run(["bash", "-c", f"set -o pipefail; {shell}"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)


def test_output_piped_into_head_ends_quietly(tmp_path):
    gc = f"{sys.executable} -m groupchat_core"
    done = _cli(tmp_path, f"{gc} run {DEBATE} --task t --quiet --max-loops 12 2>/dev/null "
                          f"| tail -1 >/dev/null && id=$({gc} list --json | {sys.executable} "
                          "-c 'import json,sys; print(json.load(sys.stdin)[0][\"run_id\"])') && "
                          f"{gc} show $id --bids | head -1")
    assert done.stdout.startswith("# ") and done.stdout.count("\n") == 1
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
    assert done.returncode == 141  # the shell's code for "its reader went away" (pipefail)
    spec = tmp_path / "sweep.json"
    spec.write_text(json.dumps({
        "name": "pipe", "base": {"max_loops": 3, "agents": [
            {"agent_name": "A", "system_prompt": "For.", "model_name": "sim/balanced"},
            {"agent_name": "B", "system_prompt": "Against.", "model_name": "sim/balanced"}]},
        "grid": {"threshold": [0.3, 0.4]}, "tasks": ["Q?"], "repeats": 2}))
    done = _cli(tmp_path, f"{gc} sweep {spec} --estimate | head -c 10")
    assert done.stdout == "4 cells to" and done.stderr == "", done.stderr


def test_version_names_app_litellm_schema_and_the_data(capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    out = capsys.readouterr().out.splitlines()
    assert exit_.value.code == 0
    assert out[:4] == ["groupchat-lab 0.2.0", "litellm 1.106.2",
                       f"store schema {SCHEMA_VERSION}",
                       f"data: sqlite:///{tmp_path}/groupchat.db (from GROUPCHAT_DB)"]


def test_log_level_and_verbose_show_the_engine_log_on_stderr(tmp_path):
    env = {**os.environ, "GROUPCHAT_DB": f"sqlite:///{tmp_path}/log.db",
           "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "sk-test-must-not-show-1234567890"}
    base = [sys.executable, "-m", "groupchat_core"]
    quiet = subprocess.run([*base, "list"], env=env, capture_output=True, text=True,
                           timeout=120)
    assert "DEBUG" not in quiet.stderr and "INFO" not in quiet.stderr
    for flags in (["--log-level", "debug"], ["-vv"]):
        loud = subprocess.run([*base, *flags, "run", DEBATE, "--task", "t", "--quiet"],
                              env=env, capture_output=True, text=True, timeout=120)
        assert loud.returncode == 0, loud.stderr
        assert "DEBUG groupchat_core" in loud.stderr, loud.stderr
        assert "sk-test-must-not-show" not in loud.stderr
    code = subprocess.run([*base, "--log-level", "loud", "list"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert code.returncode == 2 and "invalid choice: 'loud'" in code.stderr


def _actions(parser: argparse.ArgumentParser, path: str = "groupchat-lab"):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _actions(sub, f"{path} {name}")
        elif not isinstance(action, argparse._HelpAction):
            yield path, action


def test_every_option_has_help_and_status_has_choices():
    missing = [f"{path} {action.option_strings or action.dest}"
               for path, action in _actions(build_parser()) if not action.help]
    assert missing == []
    status = next(a for p, a in _actions(build_parser())
                  if p == "groupchat-lab list" and "--status" in a.option_strings)
    assert tuple(status.choices) == ("running", "finished", "cancelled", "error",
                                     "interrupted")
