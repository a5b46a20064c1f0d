"""Streaming as the dashboard and the CLI use it, over real HTTP to the fake server: the Run page's
forming candidates (issue 24.2: a streamed reply grows on screen, prefix by prefix, while the
turn is open) and `run --stream/--no-stream`."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from groupchat_core import Agent, Bid, forget_remembered_modes
from groupchat_core.cli import main
from groupchat_core.store import RunStore, dispose_engines
from groupchat_core.testing import FakeOpenAIServer, tool_call
from groupchat_ui.kit.jobs import JobRegistry
from groupchat_ui.run import logic
from tests.helpers.app_helpers import wait_for

pytestmark = pytest.mark.usefixtures("fresh_engines")

WORDS = ["Every", "word", "of", "this", "reply", "reaches", "the", "screen."]
REGISTRY: list[JobRegistry] = []


@pytest.fixture
def server():
    forget_remembered_modes()
    with FakeOpenAIServer() as srv:
        yield srv
    assert srv.unexpected == []


def test_candidate_rows_say_who_is_typing_who_is_in_and_who_has_not_started():
    rows = logic.candidate_rows(["A", "B", "C"], {"A": (None, "Hel", False),
                                                  "B": (0.4, "Done.", True)})
    assert rows == [("A", "score … · typing…", "Hel", True),
                    ("B", "score 0.40 · bid in", "Done.", False),
                    ("C", "waiting for the first token…", "", False)]


def test_only_runs_with_a_real_model_show_candidates_forming():
    """An empty config (it comes with the first event) meant "no stream": the panel never showed."""
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
        assert snap.deltas >= 2 and snap.candidates["A"] == (0.8, "Hello", True)
    else:
        assert snap.deltas == 0


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


def _panel(job_id: str) -> None:
    """An AppTest script: the forming panel of the job, as the live view draws it."""
    from groupchat_ui.run import live_view
    from tests.ui import test_streaming_ui

    registry = test_streaming_ui.REGISTRY[0]
    live_view._candidates(registry.snapshot(job_id))


def test_the_forming_panel_shows_the_reply_growing_in_order(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch):
    """The server holds each write until the panel is drawn again (`pace`); a long key is held
    in the environment (a 44-character reply once showed "Every wor" until posted)."""
    forget_remembered_modes()
    # not key-shaped: any value of a credential-named variable is held, whatever its shape
    monkeypatch.setenv("ANTHROPIC_API_KEY", "held-while-the-reply-streams-" + "x" * 17)
    message = " ".join(WORDS)
    fragments = (['{"score": 0.9, "message": "' + WORDS[0] + " "]
                 + [w + " " for w in WORDS[1:-1]] + [WORDS[-1], '"}'])
    looked = threading.Semaphore(0)  # one release per drawing of the panel
    writes: list[int] = []

    def pace(index: int) -> None:  # the server's thread, before write `index` of the stream
        writes.append(index)
        if index > 1:  # the role chunk and the first words go at once; then one per look
            looked.acquire(timeout=60)

    with FakeOpenAIServer() as srv:
        srv.script("slow", [tool_call(fragments=fragments, score=None, message=None,
                                      pace=pace)])
        srv.script("quick", [tool_call(0.2, "")])
        srv.set_responder(None, lambda body: tool_call(0.0, ""))
        agents = [Agent(agent_name=n, model_name=f"openai/{n.lower()}", api_base=srv.base_url)
                  for n in ("Slow", "Quick")]
        registry = JobRegistry()
        REGISTRY[:] = [registry]
        store = RunStore(f"sqlite:///{tmp_path}/runs.db")
        job = logic.start_run(store, registry, "me", agents, "t", {"max_loops": 2}, {},
                              stream=True)
        seen: list[str] = []
        deadline = time.monotonic() + 120
        while not registry.snapshot(job).done and time.monotonic() < deadline:
            at = AppTest.from_function(_panel, args=(job,), default_timeout=30)
            at.run()
            assert not at.exception, [e.value for e in at.exception]
            shown = [m.value.removesuffix(" ▌") for m in at.markdown
                     if m.value.startswith(WORDS[0])]
            if shown and (not seen or shown[0] != seen[-1]):
                seen.append(shown[0])
            if writes:  # the stream has begun: let it write once more
                looked.release()
            else:
                time.sleep(0.05)  # the request has not reached the server yet
        snap = registry.snapshot(job)
        registry.shutdown()
    dispose_engines()
    assert snap.status == "finished"
    assert len(seen) >= 2 and len(seen[-1]) > len(seen[0])  # it grew while we watched
    assert all(message.startswith(text.rstrip()) for text in seen)  # prefixes, in order
    assert [len(t) for t in seen] == sorted(len(t) for t in seen)
    assert snap.messages[1].content == message
