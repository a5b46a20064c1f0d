"""The command line: runs recorded, listed, shown, exported and imported; errors are one line."""

from __future__ import annotations

import json

import pytest

from groupchat_core import CliError, GroupChatError, load_agents_text
from groupchat_core.cli import COMMANDS, build_parser
from groupchat_core.store import RunStore
from tests.helpers.cli import DEBATE, run_cli

pytestmark = pytest.mark.usefixtures("fresh_engines")


def recorded(capsys, task: str = "Should we adopt AI?") -> str:
    code, _, err = run_cli(capsys, "run", DEBATE, "--task", task, "--quiet")
    assert code == 0, err
    return err.strip().splitlines()[-1].removeprefix("run ")


def test_run_records_the_chat_prints_it_and_ends_with_the_run_id(capsys):
    code, out, err = run_cli(capsys, "run", DEBATE, "--task", "Should we adopt AI?")
    assert code == 0
    lines = err.strip().splitlines()
    assert lines[0].startswith("note: sim/ agents are offline simulations")
    assert lines[1].startswith("run ") and "started: 3 agents" in lines[1]
    assert lines[2].startswith("turn 1: ")
    run_id = lines[-1].removeprefix("run ")
    record = RunStore().load_run(run_id)
    assert out.strip() == "\n\n".join(f"{m.role}: {m.content}" for m in record.messages[1:])
    assert RunStore().run_info(run_id)["status"] == "finished"


def test_no_store_records_nothing(capsys):
    code, _, err = run_cli(capsys, "run", DEBATE, "--task", "t", "--quiet", "--no-store")
    assert code == 0 and err.startswith("run ")
    assert RunStore().list_runs().empty


def test_list_show_export_and_import_one_recorded_run(capsys, tmp_path):
    run_id = recorded(capsys)
    code, out, _ = run_cli(capsys, "list")
    header, row = out.strip().splitlines()
    assert header.split() == ["run_id", "started_at", "status", "stop_reason", "turns", "agents",
                              "task", "simulated"]
    assert row.startswith(run_id[:12]) and "finished" in row and "Optimist" in row
    code, out, err = run_cli(capsys, "list", "--status", "interrupted")
    assert code == 0 and out == "" and err.startswith("no runs in sqlite:///")
    code, out, _ = run_cli(capsys, "show", run_id[:8], "--bids")  # an id prefix
    assert code == 0
    assert out.startswith("# ai-diagnosis-debate") and "### Turn 1: " in out
    assert "runner-up" in out and "latency_ms" in out
    for fmt, start in (("json", "{"), ("csv", "run_id,turn,agent,"),
                       ("md", "# ai-diagnosis-debate")):  # to stdout and to a file
        code, out, _ = run_cli(capsys, "export", run_id, "--format", fmt)
        assert code == 0 and out.startswith(start)
        target = tmp_path / f"run.{fmt}"
        code, _, err = run_cli(capsys, "export", run_id, "--format", fmt, "-o", str(target))
        assert code == 0 and err.strip() == f"wrote {target}"
        written = target.read_text()
        if fmt == "json":  # the export time differs between the two exports
            written, out = ({**json.loads(t), "exported_at": None} for t in (written, out))
        assert written == out
    other = f"sqlite:///{tmp_path}/other.db"  # import into another store reproduces the run
    code, out, _ = run_cli(capsys, "--db", other, "import", str(tmp_path / "run.json"))
    assert code == 0 and out.strip() == f"imported run {run_id}"
    assert RunStore(other).load_run(run_id) == RunStore().load_run(run_id)


def test_agents_import_list_export(capsys, tmp_path):
    source = tmp_path / "agents.yaml"
    source.write_text("schema_version: 1\nagents:\n"
                      "- {agent_name: Critic, model_name: sim/contrarian, system_prompt: Doubt.}\n"
                      "- {agent_name: Fan, model_name: sim/eager}\n")
    code, out, _ = run_cli(capsys, "agents", "import", str(source))
    assert code == 0 and out.strip() == "saved 2 agent(s): Critic, Fan"
    code, out, _ = run_cli(capsys, "agents", "list")
    assert [line.split("\t")[:2] for line in out.strip().splitlines()] == [
        ["Critic", "sim/contrarian"], ["Fan", "sim/eager"]]
    target = tmp_path / "out.json"
    code, _, _ = run_cli(capsys, "agents", "export", "Fan", "--format", "json", "-o", str(target))
    assert code == 0
    assert [a.agent_name for a in load_agents_text(target.read_text())] == ["Fan"]
    assert json.loads(target.read_text())["schema_version"] == 1


@pytest.mark.parametrize("argv", [
    ["run", "missing.yaml", "--task", "t"],
    ["run", DEBATE, "--task", "  "],
    ["run", DEBATE],
    ["show", "nope"],
    ["export", "nope", "--format", "pdf"],
    ["list", "--limit", "many"],
    ["list", "--status", "done"],
    ["import", "missing.json"],
    ["agents", "export", "Nobody"],
    ["frobnicate"],
    ["--db", "not a url", "list"],
])
def test_every_error_is_one_line_and_exit_2(capsys, argv):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1, err


@pytest.mark.parametrize("argv", [["frobnicate"], ["run", DEBATE], ["sweep"],
                                  ["sweep", "x.yaml", "--max-calls", "0"]])
def test_usage_errors_are_cli_errors_in_the_tree(argv):
    with pytest.raises(CliError) as caught:
        args = build_parser().parse_args(argv)
        COMMANDS[args.command](args)
    assert isinstance(caught.value, GroupChatError) and not isinstance(caught.value, ValueError)


def test_hostile_files_are_refused_with_one_line(capsys, tmp_path):
    spec = tmp_path / "keyed.yaml"
    spec.write_text("agents:\n- {agent_name: A, api_key: sk-leak-me}\n- {agent_name: B}\n")
    tagged = tmp_path / "tagged.yaml"
    tagged.write_text("schema_version: 1\nagents: !!python/object/apply:os.getcwd []\n")
    for argv in (["run", str(spec), "--task", "t"], ["agents", "import", str(tagged)],
                 ["import", str(tagged)]):
        code, out, err = run_cli(capsys, *argv)
        assert code == 2 and err.count("\n") == 1 and "sk-leak-me" not in err, err
    assert RunStore().list_runs().empty and RunStore().list_agents() == []


def test_a_yaml_alias_bomb_spec_is_refused_before_it_expands(capsys, tmp_path):
    levels = ["x0: &a0 [x, x, x, x, x, x, x, x, x, x]"] + [
        f"x{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    spec = tmp_path / "bomb.yaml"
    spec.write_text("agents:\n- agent_name: A\n  litellm_kwargs:\n    extra:\n"
                    + "".join(f"      {line}\n" for line in levels) + "- agent_name: B\n")
    code, _, err = run_cli(capsys, "run", str(spec), "--task", "t")
    assert code == 2 and "aliases are not allowed" in err and err.count("\n") == 1
    assert RunStore().list_runs().empty
