"""The Analysis page's "Did the floor go to the best candidate?" (issue 43, item 5): nothing is
asked until the Judge button is pressed; then the summary, the per-turn table and the
calibration table show what a scripted judge over real HTTP said."""

from __future__ import annotations

from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from groupchat_core import Agent, GroupChat
from groupchat_core.store import RunStore
from groupchat_core.testing import FakeOpenAIServer, ScriptedBids, tool_call
from tests.helpers.app_helpers import goto

SCORES = {"one": 0.2, "uno": 0.9, "two": 0.7, "dos": 0.3}


def scripted_run(store: RunStore) -> str:
    """Ann wins turns 1 and 2 over Bo (no penalty), then a lull."""
    fake = ScriptedBids({"Ann": [(0.6, "one"), (0.5, "two"), (0.1, "")],
                         "Bo": [(0.4, "uno"), (0.45, "dos"), (0.1, "")]})
    agents = [Agent(agent_name=n, model_name=fake.model_name) for n in ("Ann", "Bo")]
    chat = GroupChat(agents=agents, max_loops=4, threshold=0.3, recency_penalty=0.0)
    store.attach(chat)
    chat.run("Plan a picnic.")
    store.flush(timeout=30)
    assert chat.last_run is not None
    return str(chat.last_run.run_id)


def verdict(body: dict[str, Any]) -> Any:
    proposed = body["messages"][-1]["content"].rsplit("Proposed next message:\n", 1)[1]
    return tool_call(SCORES[proposed.strip()], "because")


def test_the_judge_is_asked_only_on_the_button_and_its_verdicts_show(app: AppTest) -> None:
    run_id = scripted_run(RunStore())
    with FakeOpenAIServer() as server:
        server.set_responder("judge", verdict)
        goto(app, "analysis", run=run_id)
        app.session_state["analysis_tab"] = "Why?"
        app.run()
        assert not app.exception, [e.value for e in app.exception]
        assert app.button(key="selection_go").disabled  # no model: nothing to ask
        app.text_input(key="selection_judge").set_value("openai/judge")
        app.text_input(key="selection_judge_base").set_value(server.base_url).run()
        assert server.requests_for("judge") == []  # typing asks nothing
        app.button(key="selection_go").click().run()
        assert not app.exception, [e.value for e in app.exception]
        assert len(server.requests_for("judge")) == 4
    text = " ".join(str(m.value) for m in app.markdown)
    # turn 1: Ann "one" 0.2 won over Bo "uno" 0.9 (regret 0.7); turn 2: "two" 0.7 over 0.3
    assert "winner was the judge's best on 1 of 2 contested turns" in text
    assert "mean regret 0.350" in text
    turns = next(d.value for d in app.dataframe if "regret" in d.value.columns)
    assert list(turns["regret"]) == pytest.approx([0.7, 0.0])
