"""`warm_up` and the dashboard's entry (issue 24): after it a first chat (in a fresh process:
imports are per process) loads almost nothing new; without it, litellm. It opens no socket, and
litellm is never imported on the shared loop's thread, warm or cold."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.helpers import ROOT
from tests.helpers.waits import HANG_GUARD_S

FIRST_CHAT = """
import builtins, json, socket, sys, threading
real_import = builtins.__import__
litellm_threads = set()  # the threads that imported litellm (first import only)
def spy(name, *a, **k):
    if name == "litellm" and "litellm" not in sys.modules:
        litellm_threads.add(threading.current_thread().name)
    return real_import(name, *a, **k)
builtins.__import__ = spy
from groupchat_core import Agent, GroupChat, warm_up
from groupchat_core.testing import FakeOpenAIServer, tool_call

connects = []
real_connect = socket.socket.connect
def watched(self, address):
    connects.append(str(address))
    return real_connect(self, address)
socket.socket.connect = watched
if sys.argv[1] == "warm":
    warm_up()
warm_connects = list(connects)
before = set(sys.modules)
with FakeOpenAIServer() as fake:
    fake.set_responder(None, lambda body: tool_call(0.0, ""))
    for model in ("openai/first", "hosted_vllm/first"):
        agents = [Agent(agent_name=n, model_name=model, api_base=fake.base_url, num_retries=0)
                  for n in ("A", "B")]
        GroupChat(agents=agents, max_loops=2).run("The first chat of this process.")
    requests = len(fake.requests)
new = sorted(set(sys.modules) - before)
print(json.dumps({"new": new, "requests": requests, "warm_connects": warm_connects,
                  "litellm_threads": sorted(litellm_threads)}))
"""


def first_chats(*modes: str) -> list[dict[str, object]]:
    """Each mode's first chat, in fresh processes started side by side."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    started = [subprocess.Popen([sys.executable, "-c", FIRST_CHAT, mode], cwd=ROOT, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for mode in modes]
    results = []
    for process in started:
        out, err = process.communicate(timeout=HANG_GUARD_S)
        assert process.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def test_after_the_warm_up_a_first_chat_loads_almost_nothing_and_the_warm_up_sends_nothing():
    cold, warm = first_chats("cold", "warm")
    assert cold["requests"] == warm["requests"] == 4  # both chats really went over HTTP
    cold_new, warm_new = cold["new"], warm["new"]
    assert isinstance(cold_new, list) and isinstance(warm_new, list)
    assert "litellm" in cold_new and len(cold_new) > 500  # what a cold first chat pays
    assert "litellm" not in warm_new and len(warm_new) < 30, warm_new
    assert warm["warm_connects"] == []  # every completion answered inside litellm
    for threads in (cold["litellm_threads"], warm["litellm_threads"]):
        assert threads and "groupchat-loop" not in threads  # imported, never on the loop


def test_the_entry_says_it_warmed_and_a_failed_warm_up_never_stops_the_server(monkeypatch,
                                                                              capsys):
    import groupchat_core
    from groupchat_ui.kit import server

    monkeypatch.setattr(groupchat_core, "warm_up", lambda: 1.25)
    server.warm()
    assert capsys.readouterr().err == "GroupChat Lab: model-call path warmed in 1.2 s\n"

    def broken() -> float:
        raise OSError("no loopback\nsecond line")

    monkeypatch.setattr(groupchat_core, "warm_up", broken)
    server.warm()  # returns: the server starts cold
    err = capsys.readouterr().err
    assert err.startswith("GroupChat Lab: warm-up skipped (OSError: no loopback")
    assert err.count("\n") == 1, err  # one line, whatever the error says

    monkeypatch.setenv(server.WARM_UP_ENV, "0")
    server.warm()  # switched off: not even the broken warm-up is tried
    assert capsys.readouterr().err == ""
