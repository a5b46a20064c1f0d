"""The Run page's forming candidates (issue 24, target 2) show a streamed reply growing delta by
delta: every state shown is a prefix of the reply, it grows while the turn is open, and the
whole reply is what the run posts (drawn through `live_view._candidates`, as the fragment does).
The server holds each write until the panel has been drawn once more (`pace`), however slow the
machine; a long key is held in the environment (the delta gate once held back as many
characters as the longest key, so a 44-character reply showed "Every wor" until posted)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from groupchat_core import Agent, forget_remembered_modes
from groupchat_core.store import RunStore, dispose_engines
from groupchat_core.testing import FakeOpenAIServer, tool_call
from groupchat_ui.kit.jobs import JobRegistry
from groupchat_ui.run import logic

pytestmark = pytest.mark.usefixtures("fresh_engines")

WORDS = ["Every", "word", "of", "this", "reply", "reaches", "the", "screen."]
REGISTRY: list[JobRegistry] = []


def _panel(job_id: str) -> None:
    """An AppTest script: the forming panel of the job, as the live view draws it."""
    from groupchat_ui.run import live_view
    from tests.ui import test_live_forming

    registry = test_live_forming.REGISTRY[0]
    live_view._candidates(registry.snapshot(job_id))


def test_the_forming_panel_shows_the_reply_growing_in_order(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch):
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
