"""Outcomes on the dashboard (issue 20 items 4 and 5), through AppTest: the Sweeps page's
Outcomes tab (accuracy per strategy with its interval, cost per correct answer, equality
against outcome), the Analysis page's outcome panel, the Runs table's outcome columns, and
"simulated" wherever sim results show (the Outcomes tab drawn in a browser:
tests/e2e/test_sweeps.py); and
distractors (issue 43.4): how many turns a run's distractor held, and the per-strategy report."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from streamlit.testing.v1 import AppTest

from groupchat_core import Agent, GroupChat
from groupchat_core.outcomes import du_math_tasks
from groupchat_core.store import RunStore
from groupchat_core.sweeps import (
    SweepSpec,
    accuracy_table,
    distractor_report,
    run_sweep,
    sweep_results,
)
from groupchat_core.testing import ScriptedBids
from groupchat_ui.kit import jobs as job_registry
from groupchat_ui.kit import store_access
from groupchat_ui.runs.logic import runs_table
from tests.helpers.app_helpers import goto, new_app, open_tab

pytestmark = pytest.mark.usefixtures("fresh_engines")

AGENTS = [{"agent_name": n, "model_name": m, "system_prompt": f"You are {n}."}
          for n, m in (("Solver", "sim/balanced"), ("Checker", "sim/reserved"))]


@pytest.fixture
def store(store_url: str) -> Iterator[RunStore]:
    yield RunStore(store_url)
    job_registry.registry().shutdown()


def frame_with(at: AppTest, column: str):  # AppTest's dataframes carry no key: find by column
    return next(d.value for d in at.dataframe if column in d.value.columns)


def strategy_sweep(store: RunStore) -> str:
    spec = SweepSpec.model_validate({
        "name": "strategies", "base": {"max_loops": 3, "agents": AGENTS},
        "grid": {"strategy": ["bidding", "round_robin"]},
        "tasks": [t.model_dump() for t in du_math_tasks(4)], "concurrency": 1})
    sweep_id = run_sweep(spec, store).sweep_id
    store_access.invalidate()
    return sweep_id


def test_the_outcomes_tab_shows_accuracy_per_strategy_and_only_for_a_sweep_with_answers(
        store) -> None:
    spec = SweepSpec.model_validate({"name": "plain", "tasks": ["Plan it."],
                                     "base": {"max_loops": 2, "agents": AGENTS},
                                     "grid": {"threshold": [0.2, 0.4]}})
    plain = run_sweep(spec, store).sweep_id
    sweep_id = strategy_sweep(store)
    at = goto(new_app(), "sweeps", sweep=plain)
    assert "Outcomes" not in [t.label for t in at.tabs]  # no answers: no Outcomes tab
    goto(at, "sweeps", sweep=sweep_id)
    assert "Outcomes" in [t.label for t in at.tabs]
    open_tab(at, "sw_results_tab", "Outcomes")
    assert any(w.value.startswith("Simulated: sim/ agents answered") for w in at.warning)
    assert any("Simulated." in c.value for c in at.caption)  # the header's note
    shown = frame_with(at, "calls_per_correct")
    expected = accuracy_table(sweep_results(store, sweep_id), by=["strategy"])
    assert list(shown["strategy"]) == ["bidding", "round_robin"]
    assert list(shown["correct"]) == list(expected["correct"])
    assert list(shown["n"]) == [4, 4]
    captions = " ".join(c.value for c in at.caption)
    assert "between gini and correct over 8 chats" in captions or \
        "No correlation of gini with correct" in captions


def scored_run(store: RunStore, correct: bool) -> str:
    """A recorded sim run of Du problem 0 judged `correct`: the first seed with that verdict."""
    agents = [Agent(agent_name=a["agent_name"], model_name=a["model_name"],
                    system_prompt=a["system_prompt"]) for a in AGENTS]
    for seed in range(40):
        chat = GroupChat(agents=agents, max_loops=3, seed=seed)
        chat.run(du_math_tasks(1)[0])
        assert chat.last_run is not None and chat.last_run.outcome is not None
        if chat.last_run.outcome.correct is correct:
            store.attach(chat)
            chat.run(du_math_tasks(1)[0])  # the same seed again, recorded
            assert chat.last_run.outcome is not None
            assert chat.last_run.outcome.correct is correct
            store_access.invalidate()
            return str(chat.last_run.run_id)
    raise AssertionError(f"no seed below 40 gave a {'right' if correct else 'wrong'} answer")


def test_analysis_and_the_runs_table_show_the_runs_outcome_and_that_it_is_simulated(
        store) -> None:
    run_id = scored_run(store, correct=False)
    at = goto(new_app(), "analysis", run=run_id)
    assert any(e.value.startswith("Outcome: **wrong**") and "expected 246" in e.value
               and "numeric scorer" in e.value for e in at.error)
    assert any("Simulated: sim/ agents" in c.value for c in at.caption)
    facts = frame_with(at, "value")
    assert dict(zip(facts[""], facts["value"], strict=True))["answer from"] == "majority vote"
    votes = frame_with(at, "last stated answer")
    assert set(votes["agent"]) <= {"Solver", "Checker"}
    assert [e.label for e in at.expander if e.label.startswith("Outcomes across")] == [
        "Outcomes across scored runs (1)"]
    assert any(m.value.startswith("Accuracy **0%** (0 of 1 finished scored runs")
               for m in at.markdown)
    assert any("1 of 1 runs are simulated" in c.value for c in at.caption)

    table = runs_table(store.list_runs())  # the Runs table's outcome and simulated columns
    row = table[table["run_id"] == run_id].iloc[0]
    assert (row["outcome"], row["scorer"], row["simulated"]) == ("wrong", "numeric", "simulated")
    shown = frame_with(goto(at, "runs"), "run_id")
    assert {"outcome", "answer", "scorer", "simulated"} <= set(shown.columns)


def test_analysis_says_how_many_turns_the_distractor_held_and_a_plain_run_adds_nothing(
        store) -> None:
    """Turns 1 and 3 go to `*Chatter*` (the highest bid), 2 and 4 to Solver: 2 of 4. A plain
    run has no outcome column and no distractor line."""
    chat = GroupChat(agents=[Agent(agent_name="A", model_name="sim/eager"),
                             Agent(agent_name="B", model_name="sim/eager")], max_loops=2)
    store.attach(chat)
    chat.run("Plan it.")
    table = runs_table(store.list_runs())
    assert "outcome" not in table.columns and "simulated" in table.columns
    store_access.invalidate()
    at = goto(new_app(), "analysis", run=chat.last_run.run_id)
    assert not [i.value for i in at.info if "held the floor" in i.value]

    script = ScriptedBids({
        "Solver": [(0.6, "Let us compute."), (0.9, "It is 42."), (0.6, "Yes."), (0.9, "42.")],
        "*Chatter*": [(0.95, "Nice weather!"), (0.2, ""), (0.95, "Ramen?"), (0.3, "")],
    }, shared=False)
    agents = [Agent(agent_name=n, model_name=script.model_name) for n in ("Solver", "*Chatter*")]
    chat = GroupChat(agents=agents, max_loops=5, recency_penalty=0.0, bid_cache=False,
                     distractors=["*Chatter*"], providers=script.providers)
    store.attach(chat)
    chat.run("Compute 6 * 7.")
    script.assert_complete()
    assert chat.last_run is not None
    store_access.invalidate()
    goto(at, "analysis", run=chat.last_run.run_id)
    lines = [i.value for i in at.info if "held the floor" in i.value]
    assert lines == [r"Distractor \*Chatter\* held the floor in 2 of 4 turns."]


def test_the_outcomes_tab_shows_the_distractor_report_per_strategy(store) -> None:
    agents = [{"agent_name": n, "model_name": m, "system_prompt": f"You are {n}."}
              for n, m in (("Solver", "sim/balanced"), ("Chatter", "sim/offtopic"))]
    spec = SweepSpec.model_validate({
        "name": "distractors", "base": {"max_loops": 3, "agents": agents,
                                        "distractors": ["Chatter"]},
        "grid": {"strategy": ["bidding", "round_robin"]},
        "tasks": [t.model_dump() for t in du_math_tasks(3)], "concurrency": 1})
    sweep_id = run_sweep(spec, store).sweep_id
    store_access.invalidate()
    expected = distractor_report(sweep_results(store, sweep_id), by=["strategy"])
    at = open_tab(goto(new_app(), "sweeps", sweep=sweep_id), "sw_results_tab", "Outcomes")
    shown = next(d.value for d in at.dataframe if "accuracy_baseline" in d.value.columns)
    assert list(shown["strategy"]) == ["bidding", "round_robin"]
    assert list(shown["distractor_turns"]) == list(expected["distractor_turns"])
    assert list(shown["turns"]) == list(expected["turns"])
    lines = [m.value for m in at.markdown if "held the floor" in m.value]
    assert len(lines) == 2
    # the escaped markdown of "Strategy round_robin: ..." (labels and names are untrusted)
    robin = expected.set_index("strategy").loc["round_robin"]
    assert any(line.startswith(r"Strategy round\_robin: distractors (Chatter) held the floor in "
                               f"{robin['distractor_turns']} of {robin['turns']} turns")
               for line in lines), lines
