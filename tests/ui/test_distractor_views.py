"""Distractors on the dashboard (issue 43.4), through AppTest: the Analysis page says how many
turns a run's distractor held (a scripted room whose count is known by hand, the name escaped),
and the Sweeps page's Outcomes tab shows the per-strategy report, the same numbers as
`distractor_report`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from groupchat_core import Agent, GroupChat
from groupchat_core.outcomes import du_math_tasks
from groupchat_core.store import RunStore
from groupchat_core.sweeps import SweepSpec, distractor_report, run_sweep, sweep_results
from groupchat_core.testing import ScriptedBids
from groupchat_ui.kit import jobs as job_registry
from groupchat_ui.kit import store_access
from tests.helpers.app_helpers import goto, new_app

pytestmark = pytest.mark.usefixtures("fresh_engines")


@pytest.fixture
def store(store_url: str) -> Iterator[RunStore]:
    yield RunStore(store_url)
    job_registry.registry().shutdown()


def test_analysis_says_how_many_turns_the_distractor_held(store) -> None:
    """Turns 1 and 3 go to `*Chatter*` (the highest bid), 2 and 4 to Solver: 2 of 4."""
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
    at = goto(new_app(), "analysis", run=chat.last_run.run_id)
    lines = [i.value for i in at.info if "held the floor" in i.value]
    assert lines == [r"Distractor \*Chatter\* held the floor in 2 of 4 turns."]


def test_a_run_without_distractors_has_no_such_line(store) -> None:
    chat = GroupChat(agents=[Agent(agent_name=n, model_name="sim/eager") for n in "AB"],
                     max_loops=3)
    store.attach(chat)
    chat.run("Plan it.")
    assert chat.last_run is not None
    store_access.invalidate()
    at = goto(new_app(), "analysis", run=chat.last_run.run_id)
    assert not [i.value for i in at.info if "held the floor" in i.value]


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
    at = goto(new_app(), "sweeps", sweep=sweep_id)
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
