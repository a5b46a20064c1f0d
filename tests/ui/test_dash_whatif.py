"""What-if for a single run (issue 41): the Analysis page replays any run's recorded bids under
another threshold, recency penalty and window, as the Sweeps page did for sweep runs only."""

from __future__ import annotations

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from groupchat_core import Agent, GroupChat
from groupchat_core.analysis import counterfactual, whatif_grid
from groupchat_core.store import RunStore
from groupchat_core.testing import ScriptedBids
from groupchat_ui.analysis import logic
from tests.helpers.app_helpers import goto


@pytest.fixture
def store() -> RunStore:
    return RunStore()  # GROUPCHAT_DB points into this test's tmp_path (tests/conftest.py)


def scripted_run(store: RunStore) -> str:
    """A single run: Ann bids 0.6 then 0.5, Bo 0.4 then 0.45, threshold 0.3, no penalty: Ann
    speaks twice, then a lull (3 turns)."""
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


def info_text(at: AppTest) -> str:
    return " ".join(str(i.value) for i in at.info)


def test_a_single_runs_bids_replay_under_other_parameters(app: AppTest, store: RunStore):
    run_id = scripted_run(store)
    assert store.list_runs()["sweep_id"].isna().all()  # a single run, not a sweep's
    goto(app, "analysis", run=run_id)
    app.session_state["analysis_tab"] = "Why?"
    app.run()
    assert not app.exception, [e.value for e in app.exception]
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


def test_the_one_line_says_same_lull_or_divergence():
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


def test_threshold_ranges_are_joined_in_words():
    grid = pd.DataFrame({"threshold": [0.3, 0.1, 0.2, 0.4, 0.5],
                         "outcome": ["lull", "same", "same", "same", "diverges"]})
    grid.loc[0, "outcome"] = "diverges"
    grid = pd.concat([grid, pd.DataFrame({"threshold": [0.6], "outcome": ["same"]})])
    assert logic.same_run_thresholds(grid) == ("At this penalty and window, thresholds "
                                              "0.10–0.20, 0.40 and 0.60 (of the grid) give the "
                                              "recorded run.")
    assert logic.same_run_thresholds(grid.assign(outcome="lull")).startswith("No threshold")
