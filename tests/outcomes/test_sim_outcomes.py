"""Honest offline stand-ins (issue 20 item 5): sims respond to what the conversation says,
answer scored tasks with a declared, seeded accuracy, and every result they produce says
"simulated" (CLI show/list, sweep show/export), also when a sweep's model axis brings them.

Private imports (PERSONAS, cell_models, text_similarity): units tested as such, which no public
module exports."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest

from groupchat_core import Agent, GroupChat
from groupchat_core.cli import main
from groupchat_core.outcomes import Task, du_math_tasks
from groupchat_core.providers._sim import PERSONAS, text_similarity
from groupchat_core.store import RunStore
from groupchat_core.sweeps import SweepSpec, run_sweep, sweep_results
from groupchat_core.testing import ScriptedBids
from groupchat_ui.kit.presets import DEBATE_TRIO

SAME_LONGEST_WORD = ("medical diagnosis", "Choose the restaurant.", "nuclear disarmament")


pytestmark = pytest.mark.usefixtures("fresh_engines")


def bid_log(task: str, seed: int) -> list[tuple[str, float, str]]:
    chat = GroupChat(agents=DEBATE_TRIO.build_agents(latency_s=0.0), seed=seed,
                     bid_cache=False, **DEBATE_TRIO.settings)
    chat.run(task)
    assert chat.last_run is not None
    return [(b.agent, b.score, b.message) for b in chat.last_run.bids]


def test_tasks_with_the_same_longest_word_now_give_different_runs() -> None:
    """Before: these three tasks gave byte-identical bid logs over 20 seeds (the sim read only
    the length of the longest word). Now eagerness follows trigram similarity between each
    agent's prompt and the recent transcript, so different texts give different bids."""
    logs = {task: [bid_log(task, seed) for seed in range(20)] for task in SAME_LONGEST_WORD}
    scores = {task: [[s for _, s, _ in log] for log in runs] for task, runs in logs.items()}
    first, second, third = (scores[t] for t in SAME_LONGEST_WORD)
    assert first != second and second != third and first != third
    assert sum(a != b for a, b in zip(first, third, strict=True)) >= 10  # most seeds differ


def test_identical_tasks_give_identical_runs() -> None:
    for seed in range(5):
        assert bid_log("nuclear disarmament", seed) == bid_log("nuclear disarmament", seed)


def test_text_similarity_is_a_real_similarity() -> None:
    prompt = "You are a clinician: patients, diagnosis, treatment and clinical care."
    assert text_similarity(prompt, prompt) == pytest.approx(1.0)
    assert text_similarity(prompt, "") == 0.0
    near = text_similarity(prompt, "How should the clinic treat patients after diagnosis?")
    far = text_similarity(prompt, "Which pizza topping goes with pineapple?")
    assert near > far + 0.2
    assert text_similarity("a b", "c d") == text_similarity("c d", "a b")


def _sim_chat(model: str, **kwargs: object) -> GroupChat:
    agents = [Agent(agent_name=n, model_name=model, **kwargs) for n in ("A", "B", "C")]
    return GroupChat(agents=agents, max_loops=2, bid_cache=False, threshold=0.0)


def _accuracy(chat: GroupChat, tasks: list[Task]) -> float:
    right = 0
    for task in tasks:
        chat.run(task.model_copy(update={"answer_from": "final"}))
        assert chat.last_run is not None and chat.last_run.outcome is not None
        right += bool(chat.last_run.outcome.correct)
    return right / len(tasks)


def test_a_sim_answers_with_its_personas_declared_accuracy() -> None:
    tasks = du_math_tasks(200)
    for persona in ("expert", "contrarian"):
        declared = PERSONAS[persona].accuracy
        assert abs(_accuracy(_sim_chat(f"sim/{persona}"), tasks) - declared) < 0.08
    sure = _sim_chat("sim/eager", litellm_kwargs={"sim_accuracy": 1.0})
    never = _sim_chat("sim/eager", litellm_kwargs={"sim_accuracy": 0.0})
    assert _accuracy(sure, tasks[:30]) == 1.0 and _accuracy(never, tasks[:30]) == 0.0


def test_a_sims_answer_is_seeded_and_fits_every_rule_scorer() -> None:
    task = Task(id="mc", prompt="Which planet is red?", answer="Mars", scorer="choice",
                choices=["Venus", "Mars", "Jupiter"])
    answers = set()
    for seed in range(30):
        chat = _sim_chat("sim/contrarian")
        chat.seed = seed
        chat.run(task)
        outcome = chat.last_run.outcome
        assert outcome is not None and outcome.answer in ("A", "B", "C")
        answers.add(outcome.answer)
        again = _sim_chat("sim/contrarian")
        again.seed = seed
        again.run(task)
        assert again.last_run.outcome == outcome
    assert "B" in answers and len(answers) > 1


def _cli(capsys, *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def test_cli_list_and_show_say_simulated(capsys, store_url) -> None:
    store = RunStore(store_url)
    sims = _sim_chat("sim/balanced")
    store.attach(sims)
    sims.run(du_math_tasks(1)[0])
    script = ScriptedBids({"A": [(0.9, "It is 246.")], "B": [(0.1, "")]})
    fake = GroupChat(agents=[Agent(agent_name=n, model_name=script.model_name) for n in "AB"],
                     max_loops=2)
    store.attach(fake)
    fake.run(du_math_tasks(1)[0])
    script.close()
    listed = {r["run_id"]: r for r in json.loads(_cli(capsys, "--db", store_url, "list",
                                                        "--json"))}
    assert listed[sims.last_run.run_id]["simulated"] is True
    fake_row = listed[fake.last_run.run_id]
    assert fake_row["simulated"] is False
    assert (fake_row["task_id"], fake_row["answer"], fake_row["correct"], fake_row["score"],
            fake_row["scorer"]) == ("du-math-000", "246", True, 1.0, "numeric")
    table = _cli(capsys, "--db", store_url, "list")
    sim_line = next(line for line in table.splitlines() if sims.last_run.run_id[:12] in line)
    fake_line = next(line for line in table.splitlines() if fake.last_run.run_id[:12] in line)
    assert "simulated" in sim_line and "simulated" not in fake_line
    assert "correct" in fake_line
    shown = json.loads(_cli(capsys, "--db", store_url, "show", sims.last_run.run_id, "--json"))
    assert shown["simulated"] is True and shown["outcome"]["task_id"] == "du-math-000"
    text = _cli(capsys, "--db", store_url, "show", sims.last_run.run_id)
    assert "**Simulated**" in text and "- Outcome: " in text
    assert "Simulated" not in _cli(capsys, "--db", store_url, "show", fake.last_run.run_id)


def test_a_sweep_whose_model_axis_brings_sims_says_simulated(capsys, store_url) -> None:
    """The base agents name a real model; the grid's model axis swaps in a sim: the sweep's
    cells, `sweep show` and the export say simulated."""
    agents = [{"agent_name": n, "model_name": "gpt-4o-mini"} for n in ("A", "B")]
    spec = SweepSpec.model_validate({
        "name": "via-axis", "base": {"max_loops": 2, "agents": agents},
        "grid": {"model": ["sim/eager"]},
        "tasks": [t.model_dump() for t in du_math_tasks(2)], "concurrency": 1})
    store = RunStore(store_url)
    outcome = run_sweep(spec, store)
    results = sweep_results(store, outcome.sweep_id)
    assert list(results["simulated"]) == [True, True]
    assert results["scorer"].tolist() == ["numeric", "numeric"]
    shown = _cli(capsys, "--db", store_url, "sweep", "show", outcome.sweep_id)
    assert "simulated: yes" in shown and "correct" in shown
    data = json.loads(_cli(capsys, "--db", store_url, "sweep", "show", outcome.sweep_id,
                           "--json"))
    assert data["sweep"]["simulated"] is True
    methods = {r["metric"]: r["interval_method"] for r in data["intervals"]}
    # issue 38: a rule scorer's 0/1 score is a rate like `correct`: one interval per type
    assert methods["correct"] == "wilson" and methods["score"] == "wilson"
    csv = _cli(capsys, "--db", store_url, "sweep", "export", outcome.sweep_id)
    # read as the export says it is read (issue 38.10: `# ` header lines, quoted text)
    table = pd.read_csv(io.StringIO(csv), comment="#")
    assert "correct_interval_method" in table.columns
    assert table["simulated"].astype(str).eq("True").all()

    real = SweepSpec.model_validate({
        "name": "real", "tasks": ["Plan it."], "grid": {"model": ["gpt-4o-mini"]},
        "base": {"max_loops": 2, "agents": [{"agent_name": n, "model_name": "sim/eager"}
                                            for n in ("A", "B")]}})
    from groupchat_core.sweeps._spec import cell_models

    assert cell_models(real, next(real.cells())) == {"A": "gpt-4o-mini", "B": "gpt-4o-mini"}
