"""The Run page warms litellm in the background, once per server process, when a real-model
agent is saved (issue 24, target 2): the first streamed run then finds it loaded. A sims-only
lab, and every other page, never start it (the import slows the whole process while it runs)."""

from __future__ import annotations

from groupchat_core import Agent
from groupchat_core.store import RunStore
from groupchat_ui.kit import warmup
from tests.helpers.app_helpers import goto, new_app, save_agents


def test_the_run_page_starts_the_warm_up_only_with_a_real_model_agent(monkeypatch, app):
    import os

    calls: list[int] = []
    monkeypatch.setattr(warmup, "start", lambda: calls.append(1))
    store = RunStore(os.environ["GROUPCHAT_DB"])
    save_agents(store, [Agent(agent_name="Sim", model_name="sim/balanced")])
    at = goto(new_app(), "run")
    goto(at, "analysis")
    assert calls == []  # sims only: nothing to warm
    save_agents(store, [Agent(agent_name="Real", model_name="openai/gpt-4o-mini")])
    goto(at, "analysis")
    assert calls == []  # not on other pages
    goto(at, "run")
    assert calls == [1]


def test_the_warm_up_is_one_thread_per_process_and_loads_litellm():
    first = warmup.start()
    assert warmup.start() is first and warmup.thread() is first
    assert first.name == "groupchat-warmup" and first.daemon
    first.join(timeout=300)
    import sys

    assert "litellm" in sys.modules
