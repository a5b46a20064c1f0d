"""Search spaces: agent order, roster, models per agent, random search; bounds, labels, estimate,
budget caps and resume over the new axes. Private imports (`sweeps._results`): no public name."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from groupchat_core import ConfigError
from groupchat_core.store import RunStore
from groupchat_core.sweeps import estimate, parse_sweep, plan_sweep, run_sweep, sweep_results
from groupchat_core.testing import FakeOpenAIServer, tool_call
from tests.helpers import ROOT

NAMES = ("Ann", "Bob", "Cy")


def agents(names=NAMES, model="sim/balanced"):
    return [{"agent_name": n, "model_name": model} for n in names]


def sweep(grid=None, **changes):
    data = {"name": "space", "base": {"max_loops": 5, "agents": agents()},
            "grid": grid if grid is not None else {}, "tasks": ["Plan the offsite."],
            "repeats": 1}
    data.update(changes)
    return parse_sweep(data)


@pytest.fixture
def store(sqlite_store: RunStore) -> RunStore:  # SQLite only (tests/conftest.py's)
    return sqlite_store


def test_order_all_is_every_permutation_and_each_cell_runs_in_its_order():
    spec = sweep({"order": "all", "threshold": [0.3, 0.6]})
    cells = list(spec.cells())
    orders = {tuple(c.params["order"]) for c in cells}
    assert len(cells) == 12 and len(orders) == 6 and {tuple(o) for o in orders} == set(
        __import__("itertools").permutations(NAMES))
    for cell in cells:
        assert [a.agent_name for a in spec.chat_spec(cell).agents] == cell.params["order"]
    assert len({c.key for c in cells}) == 12


def test_ties_go_to_the_earlier_agent_of_the_cells_order(store):
    """Every agent bids the same over real HTTP: the first of the cell's order speaks first."""
    with FakeOpenAIServer() as server:
        server.set_responder(None, lambda body: tool_call(0.9, "Same."))
        base = {"max_loops": 3, "recency_penalty": 0.0, "agents": [
            {"agent_name": n, "model_name": "openai/gpt-4o-mini", "api_base": server.base_url}
            for n in ("Ann", "Bob")]}
        spec = parse_sweep({"base": base, "grid": {"order": [["Ann", "Bob"], ["Bob", "Ann"]]},
                            "tasks": ["t"], "bid_cache": False})
        outcome = run_sweep(spec, store)
    frame = sweep_results(store, outcome.sweep_id)
    assert list(frame["status"]) == ["finished", "finished"]
    for _, row in frame.iterrows():
        turns = store.turns([row["run_id"]]).sort_values("turn")
        assert turns["winner"].iloc[0] == row["order"].split(" → ")[0]
        assert turns["reason"].iloc[0] == "tie_by_order"


def test_a_permutation_axis_too_large_is_refused_naming_the_fix_and_sampling_is_seeded():
    ten = [f"A{i}" for i in range(10)]
    with pytest.raises(ConfigError) as err:
        parse_sweep({"base": {"agents": agents(ten)}, "grid": {"order": "all"},
                     "tasks": ["t"]})
    text = str(err.value)
    assert "3,628,800" in text and "order: {sample: 100}" in text and "\n" not in text
    sampled = {"base": {"agents": agents(ten)}, "tasks": ["t"], "grid": {"order": {"sample": 50}}}
    first, again = parse_sweep(sampled), parse_sweep(sampled)
    other = parse_sweep({**sampled, "sample_seed": 9})
    keys = [c.key for c in first.cells()]
    assert keys == [c.key for c in again.cells()] and len(set(keys)) == 50
    assert keys != [c.key for c in other.cells()]
    assert all(sorted(c.params["order"]) == sorted(ten) for c in first.cells())
    with pytest.raises(ConfigError, match="only 6"):
        sweep({"order": {"sample": 7}})


def test_rosters_by_size_or_listed_and_their_bounds():
    spec = sweep({"roster": {"sizes": [2, 3]}})
    rosters = [c.params["roster"] for c in spec.cells()]
    assert rosters == [["Ann", "Bob"], ["Ann", "Cy"], ["Bob", "Cy"], ["Ann", "Bob", "Cy"]]
    cell = next(c for c in spec.cells() if c.params["roster"] == ["Ann", "Cy"])
    assert [a.agent_name for a in spec.chat_spec(cell).agents] == ["Ann", "Cy"]
    listed = sweep({"roster": [["Cy", "Ann"]], "order": [["Cy", "Bob", "Ann"]]})
    only = next(listed.cells())
    assert only.params["roster"] == ["Ann", "Cy"]  # base order: one roster, one value
    assert [a.agent_name for a in listed.chat_spec(only).agents] == ["Cy", "Ann"]  # the order's
    for grid, message in (({"roster": [["Ann"]]}, "a chat needs 2"),
                          ({"roster": [["Ann", "Zed"]]}, "'Zed', not an agent"),
                          ({"roster": {"sizes": [1]}}, "sizes from 2 to 3"),
                          ({"roster": [["Ann", "Bob"], ["Bob", "Ann"]]}, "same value twice")):
        with pytest.raises(ConfigError, match=message):
            sweep(grid)
    many = [f"A{i:02d}" for i in range(20)]
    with pytest.raises(ConfigError, match=r"sample: 100"):
        parse_sweep({"base": {"agents": agents(many)}, "grid": {"roster": {"sizes": [5]}},
                     "tasks": ["t"]})
    sampled = parse_sweep({"base": {"agents": agents(many[:12])}, "tasks": ["t"],
                           "grid": {"roster": {"sizes": [3], "sample": 10}}})
    assert len(list(sampled.cells())) == 10


def test_a_model_per_agent_and_its_conflict_with_model():
    spec = sweep({"agent_models": {"Ann": ["sim/balanced", "sim/eager"],
                                   "Cy": ["sim/reserved", "sim/expert"]}})
    cells = list(spec.cells())
    assert len(cells) == 4
    chat = spec.chat_spec(cells[-1])
    assert [a.model_name for a in chat.agents] == ["sim/eager", "sim/balanced", "sim/expert"]
    with pytest.raises(ConfigError, match="use one"):
        sweep({"model": ["sim/eager"], "agent_models": {"Ann": ["sim/eager"]}})
    with pytest.raises(ConfigError, match="unknown sim persona"):
        sweep({"agent_models": {"Ann": ["sim/no-such-persona"]}})


def test_random_search_is_seeded_within_its_ranges_and_combines_with_the_grid():
    draw = {"samples": 20, "threshold": {"low": 0.2, "high": 0.8},
            "recency_window": {"low": 1, "high": 4}, "model": {"choice": ["sim/balanced",
                                                                          "sim/eager"]}}
    def drawn(random=draw, **changes):
        return sweep({"recency_penalty": [0.0, 0.3]}, random=random, **changes)

    spec = drawn()
    cells = list(spec.cells())
    assert len(cells) == 40 and len({c.key for c in cells}) == 40
    assert all(0.2 <= c.params["threshold"] <= 0.8 for c in cells)
    assert all(isinstance(c.params["recency_window"], int) and 1 <= c.params["recency_window"]
               <= 4 for c in cells)
    assert {c.params["model"] for c in cells} == {"sim/balanced", "sim/eager"}
    keys = [c.key for c in cells]
    assert [c.key for c in drawn().cells()] == keys  # reproducible: a resume rebuilds them
    assert [c.key for c in drawn(sample_seed=3).cells()] != keys
    chat = spec.chat_spec(cells[3])
    assert chat.threshold == cells[3].params["threshold"]
    assert chat.agents[0].model_name == cells[3].params["model"]
    for bad, message in (({"samples": 0, "threshold": {"low": 0, "high": 1}}, "from 1 to"),
                         ({"samples": 3}, "no parameter"),
                         ({"samples": 3, "threshold": {"low": 0.9, "high": 0.1}}, "above high"),
                         ({"samples": 3, "threshold": {"low": 0, "high": 5}}, "from -1.0 to 2.0"),
                         ({"samples": 3, "seed": 1}, "cannot be drawn"),
                         ({"samples": 3, "recency_penalty": {"low": 0, "high": 1}},
                          "both a grid axis")):
        with pytest.raises(ConfigError, match=message):
            drawn(bad)


def test_the_estimate_covers_the_new_axes_and_counts_a_rosters_agents():
    spec = sweep({"roster": {"sizes": [2, 3]}, "order": "all"},
                 random={"samples": 2, "temperature": {"low": 0, "high": 1}}, repeats=2)
    result = estimate(spec)
    assert result.cells == 6 * 4 * 2 * 2
    turns = 5 - 1
    assert result.calls_upper == sum(turns * len(spec.cell_agents(c)) for c in spec.cells())
    assert result.calls_upper == 6 * 2 * 2 * turns * (2 + 2 + 2 + 3)
    assert result.prompt_tokens_upper == 0 and result.cost_usd_upper == 0.0  # sims
    assert "search space: 6 order × 4 roster × 2 random samples × 1 task(s) × 2 repeat(s) = " \
           "96 cells" in result.summary()


def test_cell_labels_stay_unique_and_one_to_one_for_awkward_names():
    odd = ["A → B", "C", "D + E"]
    spec = parse_sweep({"base": {"agents": agents(odd)}, "tasks": ["t"],
                        "grid": {"order": "all", "roster": {"sizes": [2, 3]}}})
    from groupchat_core.sweeps._results import _cell_row

    rows = [_cell_row(spec, c) for c in spec.cells()]
    assert len({(r["order"], r["roster"]) for r in rows}) == len(rows) == 6 * 4
    assert all(json.loads(r["order"]) for r in rows)  # a name holds the arrow: JSON labels


def test_a_capped_order_roster_random_sweep_stops_then_resumes_without_rerunning(store):
    spec = sweep({"order": {"sample": 3}, "roster": {"sizes": [2, 3]}},
                 random={"samples": 2, "threshold": {"low": 0.2, "high": 0.6}},
                 concurrency=1)
    total = spec.cell_count()
    first = run_sweep(spec, store, max_calls=20)
    assert first.status == "stopped_budget" and first.cells_done < total
    plan = plan_sweep(None, store, resume=first.sweep_id)
    assert len(plan.todo) == total - first.cells_done and plan.estimate is not None
    assert plan.estimate.cells == len(plan.todo)
    second = run_sweep(plan=plan, store=store)
    assert second.status == "finished" and second.cells_done == total
    runs = store.list_runs(sweep_id=first.sweep_id, status="finished")
    assert runs["cell"].is_unique and len(runs) == total
    frame = sweep_results(store, first.sweep_id)
    assert set(frame["status"]) == {"finished"}
    assert frame["roster"].notna().all() and frame["sample"].notna().all()
    assert set(frame["agents"]) == {2, 3}


def test_cli_estimate_shows_the_space_and_samples_override(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(json.dumps({"base": {"agents": agents()}, "tasks": ["t"],
                                "grid": {"order": "all"},
                                "random": {"samples": 4, "threshold": {"low": 0.2,
                                                                       "high": 0.8}}}))
    cmd = [sys.executable, "-m", "groupchat_core", "--db", f"sqlite:///{tmp_path}/c.db",
           "sweep", str(path), "--estimate", "--samples", "7"]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "6 order × 7 random samples × 1 task(s) × 1 repeat(s) = 42 cells" in done.stdout
    path.write_text(json.dumps({"base": {"agents": agents([f"A{i}" for i in range(10)])},
                                "tasks": ["t"], "grid": {"order": "all"}}))
    bad = subprocess.run(cmd[:-2], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "order: {sample: 100}" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    assert math.factorial(10) == 3_628_800


@pytest.mark.parametrize("name", ["sweep-order.yaml", "sweep-random.yaml"])
def test_the_example_sweep_specs_load_and_estimate(name):
    from groupchat_core.sweeps import load_sweep

    spec = load_sweep(ROOT / "examples" / name)
    result = estimate(spec)
    assert result.cells == spec.cell_count() > 0 and result.prompt_tokens_upper == 0
    assert "search space:" in result.summary()
