"""The Analysis page's "Why?" tab (issues 41, 43.5): what-if replays a single run's bids under
other parameters, and "Did the floor go to the best candidate?" asks its judge only on the
button, then shows what a scripted judge over real HTTP said."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from groupchat_core import Agent, GroupChat
from groupchat_core.analysis import counterfactual, whatif_grid
from groupchat_core.store import RunStore
from groupchat_core.testing import FakeOpenAIServer, ScriptedBids, tool_call
from groupchat_ui.analysis import logic
from tests.helpers.app_helpers import goto

SCORES = {"one": 0.2, "uno": 0.9, "two": 0.7, "dos": 0.3}


def scripted_run(store: RunStore) -> str:
    """Ann bids 0.6 then 0.5, Bo 0.4 then 0.45; threshold 0.3, no penalty: Ann twice, a lull."""
    fake = ScriptedBids({"Ann": [(0.6, "one"), (0.5, "two"), (0.1, "")],
                         "Bo": [(0.4, "uno"), (0.45, "dos"), (0.1, "")]})
    agents = [Agent(agent_name=n, model_name=fake.model_name) for n in ("Ann", "Bo")]
    chat = GroupChat(agents=agents,
                     max_loops=4, threshold=0.3, recency_penalty=0.0, recency_window=1)
    store.attach(chat)
    chat.run("Plan a picnic.")
    store.flush(timeout=30)
    assert chat.last_run is not None
    return str(chat.last_run.run_id)


def why_tab(app: AppTest, run_id: str) -> AppTest:
    goto(app, "analysis", run=run_id)
    app.session_state["analysis_tab"] = "Why?"
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def info_text(at: AppTest) -> str:
    return " ".join(str(i.value) for i in at.info)


def test_a_single_runs_bids_replay_under_other_parameters(app: AppTest, store: RunStore):
    run_id = scripted_run(store)
    assert store.list_runs()["sweep_id"].isna().all()  # a single run, not a sweep's
    why_tab(app, run_id)
    fields = {k: app.number_input(key=f"whatif_{k}").value
              for k in ("threshold", "recency_penalty", "recency_window")}
    assert fields == {"threshold": 0.3, "recency_penalty": 0.0, "recency_window": 1}
    assert "The same run: each of its 3 recorded turns" in info_text(app)

    app.number_input(key="whatif_threshold").set_value(0.55).run()  # Ann's 0.5 falls short
    assert "A lull on turn 2" in info_text(app) and "not after its 3 recorded" in info_text(app)
    replay = next(d.value for d in app.dataframe if "replayed" in d.value.columns)
    assert list(replay["replayed"]) == ["Ann", "(lull)"]

    app.number_input(key="whatif_threshold").set_value(0.3)
    app.number_input(key="whatif_recency_penalty").set_value(0.2).run()  # 0.5-0.2 < 0.45
    assert "Turn 2 goes to Bo instead of Ann's" in info_text(app)


def test_the_one_line_says_same_lull_or_divergence_and_joins_threshold_ranges_in_words():
    bids_of = {"Ann": [(0.6, "a"), (0.5, "b")], "Bo": [(0.4, "c"), (0.45, "d")]}
    fake = ScriptedBids(bids_of)
    chat = GroupChat(agents=[Agent(agent_name=n, model_name=fake.model_name) for n in bids_of],
                     max_loops=3, threshold=0.3, recency_penalty=0.0)
    chat.run("Task.")
    assert chat.last_run is not None
    bids = chat.last_run.bids_frame()
    same = counterfactual(bids, 0.3, 0.0, 1)
    assert logic.whatif_text(same, 2) == ("The same run: each of its 2 recorded turns picks the "
                                         "same speaker.")
    assert logic.whatif_text(counterfactual(bids, 0.7, 0.0, 1), 2).startswith(
        "A lull on turn 1 (no bid clears the threshold): the chat stops there, not after its 2")
    assert logic.whatif_text(counterfactual(bids, 0.3, 0.2, 1), 2).startswith(
        "Turn 2 goes to Bo instead of Ann's")
    table = logic.replay_table(counterfactual(bids, 0.3, 0.2, 1))
    assert list(table["recorded"]) == ["Ann", "Ann"] and list(table["replayed"]) == ["Ann", "Bo"]
    grid = whatif_grid(bids, logic.WHATIF_THRESHOLDS, [0.0], [1])
    assert logic.same_run_thresholds(grid) == ("At this penalty and window, thresholds "
                                              "0.00–0.45 (of the grid) give the recorded run.")
    grid = pd.DataFrame({"threshold": [0.3, 0.1, 0.2, 0.4, 0.5],
                         "outcome": ["lull", "same", "same", "same", "diverges"]})
    grid.loc[0, "outcome"] = "diverges"
    grid = pd.concat([grid, pd.DataFrame({"threshold": [0.6], "outcome": ["same"]})])
    assert logic.same_run_thresholds(grid) == ("At this penalty and window, thresholds "
                                              "0.10–0.20, 0.40 and 0.60 (of the grid) give the "
                                              "recorded run.")
    assert logic.same_run_thresholds(grid.assign(outcome="lull")).startswith("No threshold")


def verdict(body: dict[str, Any]) -> Any:
    proposed = body["messages"][-1]["content"].rsplit("Proposed next message:\n", 1)[1]
    return tool_call(SCORES[proposed.strip()], "because")


def test_the_judge_is_asked_only_on_the_button_and_its_verdicts_show(app: AppTest,
                                                                      store: RunStore) -> None:
    run_id = scripted_run(store)
    with FakeOpenAIServer() as server:
        server.set_responder("judge", verdict)
        why_tab(app, run_id)
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
