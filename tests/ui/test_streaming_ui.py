"""Streaming as the dashboard and the CLI use it: the Run page's forming candidates (logic, no
streamlit) and `run --stream/--no-stream`, over real HTTP to the fake server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groupchat_core import Agent, Bid, BidDelta, BidReceived, TurnStarted, forget_remembered_modes
from groupchat_core.cli import main
from groupchat_core.store import RunStore, dispose_engines
from groupchat_core.testing import FakeOpenAIServer, tool_call
from groupchat_ui.kit.jobs import JobRegistry
from groupchat_ui.run import logic
from tests.helpers.app_helpers import wait_for


@pytest.fixture
def server():
    forget_remembered_modes()
    with FakeOpenAIServer() as srv:
        yield srv
    assert srv.unexpected == []


def test_forming_bids_follow_the_current_turn_and_redact_keys():
    forming = logic.FormingBids(["sk-secret-123"])
    forming(TurnStarted(run_id="r", turn=1))
    forming(BidDelta(run_id="r", turn=1, agent="A", score=None, message="Hi sk-secret-123"))
    assert forming.snapshot() == (1, {"A": (None, "Hi ***", False)})
    forming(BidDelta(run_id="r", turn=1, agent="A", score=0.7, message="Hi there"))
    forming(BidReceived(run_id="r", bid=Bid(turn=1, agent="A", position=0, score=0.7,
                                            message="Hi there!")))
    assert forming.snapshot() == (1, {"A": (0.7, "Hi there!", True)})
    forming(BidDelta(run_id="r", turn=0, agent="B", message="stale turn"))  # ignored
    forming(TurnStarted(run_id="r", turn=2))
    assert forming.snapshot() == (2, {})


def test_candidate_rows_say_who_is_typing_who_is_in_and_who_has_not_started():
    rows = logic.candidate_rows(["A", "B", "C"], {"A": (None, "Hel", False),
                                                  "B": (0.4, "Done.", True)})
    assert rows == [("A", "score … · typing…", "Hel", True),
                    ("B", "score 0.40 · bid in", "Done.", False),
                    ("C", "waiting for the first token…", "", False)]


def test_only_runs_with_a_real_model_show_candidates_forming():
    """`may_stream` decides at Start whether to declare the forming fragment; the run's config
    comes with its first event, so an empty config must not mean "no stream" (the panel then
    never showed: tests/e2e/test_streaming.py failed)."""
    sims = {"A": ("sim/eager", None), "B": ("sim/reserved", None)}
    mixed = {**sims, "C": ("openai/x", "http://127.0.0.1:1/v1")}
    assert logic.streams({"stream_bids": True}, mixed) and logic.may_stream({}, mixed)
    assert not logic.streams({"stream_bids": True}, sims) and not logic.may_stream({}, sims)
    assert not logic.streams({"stream_bids": False}, mixed)
    assert not logic.may_stream({"stream_bids": False}, mixed)


def test_losing_bids_are_the_unposted_candidates_with_a_message():
    bids = [Bid(turn=1, agent="A", position=0, message="won", winner=True),
            Bid(turn=1, agent="B", position=1, message="lost"),
            Bid(turn=1, agent="C", position=2, message="")]
    assert [b.agent for b in logic.losing_bids(bids)] == ["B"]


@pytest.mark.parametrize("stream", [True, False])
def test_a_dashboard_run_streams_by_default_and_keeps_the_candidates(server, tmp_path, stream):
    server.script("a", [tool_call(fragments=['{"score": 0.8, "message": "Hel', 'lo"}'],
                                  score=None, message=None), tool_call(0.0, "")])
    server.script("b", [tool_call(0.1, ""), tool_call(0.0, "")])
    agents = [Agent(agent_name=n, model_name=f"openai/{n.lower()}", api_base=server.base_url)
              for n in ("A", "B")]
    registry = JobRegistry()
    store = RunStore(f"sqlite:///{tmp_path}/runs.db")
    job = logic.start_run(store, registry, "me", agents, "t", {"max_loops": 2}, {},
                          stream=stream)
    wait_for(lambda: registry.snapshot(job).done, "the run")
    snap = registry.snapshot(job)
    registry.shutdown()
    dispose_engines()
    assert snap.status == "finished" and snap.config["stream_bids"] is stream
    assert ("stream" in server.requests_for("a")[0].body) is stream
    if stream:
        assert server.requests_for("a")[0].body["stream"] is True
        assert snap.forming is not None and snap.forming.deltas >= 2
        assert snap.forming.snapshot()[1]["A"] == (0.8, "Hello", True)
    else:
        assert snap.forming.deltas == 0


def _spec(srv: FakeOpenAIServer, tmp_path: Path) -> str:
    path = tmp_path / "room.json"
    path.write_text(json.dumps({"max_loops": 2, "agents": [
        {"agent_name": n, "model_name": f"openai/{n.lower()}", "api_base": srv.base_url}
        for n in ("A", "B")]}))
    return str(path)


@pytest.mark.parametrize("stream", [True, False])
def test_cli_run_stream_prints_candidates_forming(server, tmp_path, capsys, stream):
    server.script("a", [tool_call(fragments=['{"score": 0.8, "message": "Hel', 'lo"}'],
                                  score=None, message=None)])
    server.script("b", [tool_call(0.1, "")])
    flag = "--stream" if stream else "--no-stream"
    assert main(["run", _spec(server, tmp_path), "--task", "t", flag, "--no-store"]) == 0
    err = capsys.readouterr().err
    if stream:  # a trailing word is held back until whole (it may be a key's beginning)
        assert "turn 1 A (0.80): Hello\n" in err and "turn 1 A (0.80): Hel\n" not in err
    else:
        assert "(0.80)" not in err
    assert server.requests_for("a")[0].body.get("stream") is (True if stream else None)
