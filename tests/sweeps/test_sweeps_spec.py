"""Sweep specs (format, validation, cells; no people: docs/sweeps.md "People"), the estimate,
search spaces (order, roster, models, random search), rate limits as a floor on wall time.
Private imports (MAX_CELLS, litellm_module, RATE_LIMITS, `_cell_row`): no public name."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groupchat_core import ConfigError, set_rate_limit
from groupchat_core.providers._ratelimit import RATE_LIMITS
from groupchat_core.store import RunStore
from groupchat_core.sweeps import (
    estimate,
    load_sweep,
    load_sweep_text,
    parse_sweep,
    plan_sweep,
    run_sweep,
    sweep_results,
)
from groupchat_core.sweeps._spec import MAX_CELLS
from groupchat_core.testing import FakeOpenAIServer, tool_call
from tests.helpers import ROOT
from tests.helpers.cli import run_cli

BASE = {"max_loops": 6, "seed": 10, "agents": [
    {"agent_name": "Optimist", "system_prompt": "You argue for the benefits.",
     "model_name": "sim/balanced"},
    {"agent_name": "Pessimist", "system_prompt": "You argue for the risks.",
     "model_name": "sim/eager"}]}


def spec_data(**changes) -> dict:
    data = {"schema_version": 1, "name": "t", "base": json.loads(json.dumps(BASE)),
            "grid": {"threshold": [0.4, 0.6], "recency_penalty": [0.1, 0.3, 0.5]},
            "tasks": ["Plan the offsite.", "Pick a database."], "repeats": 2}
    data.update(changes)
    return data


def test_a_yaml_spec_loads_and_expands_into_stable_cells(tmp_path):
    path = tmp_path / "sweep.yaml"
    path.write_text(textwrap.dedent("""\
        schema_version: 1
        name: thresholds
        base:
          max_loops: 6
          seed: 10
          agents:
            - {agent_name: A, model_name: sim/balanced}
            - {agent_name: B, model_name: sim/eager}
        grid:
          threshold: [0.4, 0.6]
          recency_window: [0, 2]
        tasks: [Plan the offsite., Pick a database.]
        repeats: 3
        max_calls: 500
    """))
    spec = load_sweep(path)
    cells = list(spec.cells())
    assert spec.cell_count() == len(cells) == 2 * 2 * 2 * 3
    assert [c.index for c in cells] == list(range(24))
    assert len({c.key for c in cells}) == 24
    first = cells[0]
    assert json.loads(first.key) == {"threshold": 0.4, "recency_window": 0, "task": 0,
                                     "repeat": 0}
    assert [c.key for c in load_sweep(path).cells()] == [c.key for c in cells]  # stable

    chat = spec.chat_spec(cells[-1])
    assert (chat.threshold, chat.recency_window, chat.seed, chat.max_loops) == (0.6, 2, 12, 6)
    assert spec.tasks[cells[-1].task_index] == "Pick a database."
    assert spec.max_calls == 500 and spec.bid_cache is None and spec.concurrency == 4


def test_model_temperature_and_prompt_axes_apply_to_every_agent():
    spec = parse_sweep(spec_data(grid={
        "model": ["sim/reserved", "sim/contrarian"], "temperature": [0, 1.5],
        "bid_prompt": {"short": "You are {agent_name}. Bid above {threshold}.",
                       "plain": "{agent_name}: respond."}}, tasks=["t"], repeats=1))
    cells = list(spec.cells())
    assert len(cells) == 8
    cell = next(c for c in cells if c.params == {"model": "sim/contrarian", "temperature": 1.5,
                                                 "bid_prompt": "short"})
    chat = spec.chat_spec(cell)
    assert {a.model_name for a in chat.agents} == {"sim/contrarian"}
    assert {a.temperature for a in chat.agents} == {1.5}
    assert chat.bid_prompt.startswith("You are {agent_name}")
    assert '"bid_prompt":"short"' in cell.key


@pytest.mark.parametrize(("change", "message"), [
    ({"colour": "red"}, "colour: unknown key"),
    ({"grid": {"thresold": [0.5]}}, "grid.thresold: unknown key"),
    ({"grid": {"threshold": ["high"]}}, r"grid.threshold\[0\] must be a finite number"),
    ({"grid": {"threshold": []}}, "grid.threshold must be a non-empty list"),
    ({"grid": {"threshold": [0.5, 0.5]}}, "lists a value twice"),
    ({"grid": {"max_loops": [True]}}, r"grid.max_loops\[0\] must be an integer >= 1"),
    ({"grid": {"recency_window": [-1]}}, r"grid.recency_window\[0\] must be an integer >= 0"),
    ({"grid": {"temperature": [3]}}, r"must be a finite number >= 0 and <= 2"),
    ({"grid": {"model": ["sim/nobody"]}}, "unknown sim persona 'nobody'"),
    ({"grid": {"bid_prompt": {"x": "{secret}"}}}, "unknown placeholder"),
    ({"tasks": []}, "tasks must be a list of 1 to"),
    ({"tasks": ["ok", "  "]}, r"tasks\[1\] must be a non-empty string"),
    ({"repeats": 0}, "repeats must be an integer >= 1"),
    ({"concurrency": 1000}, "concurrency must be an integer >= 1 and <= 256"),
    ({"max_usd": -1}, "max_usd must be a positive amount"),
    ({"schema_version": 2}, "schema_version 2 is not supported"),
    ({"base": {**BASE, "agents": BASE["agents"][:1]}}, "at least 2 agents"),
    ({"base": {**BASE, "threshold": "x"}}, "invalid base: threshold"),
    ({"grid": {"threshold": [i / 1000 for i in range(1000)], "recency_penalty": [0.1, 0.2]},
      "repeats": 100}, f"over the {MAX_CELLS:,} limit"),  # refused before anything runs
])
def test_invalid_specs_are_one_clear_error(change, message):
    with pytest.raises(ConfigError, match=message):
        parse_sweep(spec_data(**change))


def test_untrusted_files_keep_secrets_and_aliases_out():
    keyed = json.loads(json.dumps(spec_data()))
    keyed["base"]["agents"][0]["api_key"] = "sk-leak-me-123"
    with pytest.raises(ConfigError) as caught:
        load_sweep_text(json.dumps(keyed))
    assert "sk-leak-me" not in str(caught.value) and "api_key" in str(caught.value)
    with pytest.raises(ConfigError, match="aliases are not allowed"):
        load_sweep_text("name: &a x\nbase: *a\ntasks: [t]\n")
    with pytest.raises(ConfigError, match="over the"):
        load_sweep_text("x" * 2_000_000)


def test_the_estimate_of_a_sim_sweep_is_exact_in_calls_and_free(tmp_path):
    spec = parse_sweep(spec_data())
    result = estimate(spec)
    cells = spec.cell_count()
    assert result.cells == cells == 24
    assert result.calls_upper == cells * 2 * (6 - 1)
    assert result.cost_usd_upper == 0.0 and result.unpriced_models == []
    # issue 11: sims send no prompt and generate no tokens (it used to promise 1,235,520)
    assert result.prompt_tokens_upper == 0 and result.completion_tokens_upper == 0
    assert "0 prompt + 0 completion tokens" in result.summary()
    assert result.calls_typical is None
    assert any("offline simulations, no cost" in a for a in result.assumptions)
    assert "up to 240 model calls" in result.summary()

    store = RunStore(f"sqlite:///{tmp_path}/e.db")
    run_sweep(parse_sweep(spec_data(repeats=1, tasks=["t"])), store)
    typical = plan_sweep(spec, store).estimate
    assert typical is not None and 0 < typical.calls_typical <= typical.calls_upper
    assert any("earlier finished runs of these agents (6)" in a for a in typical.assumptions)


def test_priced_models_are_costed_with_litellms_prices_and_unknown_ones_said_so():
    from groupchat_core.providers._litellm import litellm_module

    priced = spec_data(grid={"model": ["openai/gpt-4o-mini"]}, tasks=["t"], repeats=1)
    result = estimate(parse_sweep(priced))
    prompt, completion = litellm_module().cost_per_token(
        model="openai/gpt-4o-mini", prompt_tokens=result.prompt_tokens_upper,
        completion_tokens=result.completion_tokens_upper)
    assert result.cost_usd_upper == pytest.approx(prompt + completion) and prompt > 0
    assert any("litellm's cost map for openai/gpt-4o-mini" in a for a in result.assumptions)

    local = spec_data(grid={"model": ["openai/local-model"]}, tasks=["t"], repeats=1)
    unknown = estimate(parse_sweep(local))
    assert unknown.cost_usd_upper is None and unknown.unpriced_models == ["openai/local-model"]
    assert "cost up to unknown" in unknown.summary()
    assert any("max_usd cannot see it" in a for a in unknown.assumptions)


def test_sim_sweeps_never_import_litellm(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(spec_data(repeats=1, tasks=["t"])))
    code = textwrap.dedent(f"""
        import sys
        from groupchat_core.store import RunStore
        from groupchat_core.sweeps import load_sweep, plan_sweep, run_sweep
        store = RunStore("sqlite:///{tmp_path}/s.db")
        spec = load_sweep({str(path)!r})
        print(plan_sweep(spec, store).estimate.cost_usd_upper)
        print(run_sweep(spec, store).status)
        print("litellm" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True, cwd=ROOT).stdout.split()
    assert out == ["0.0", "finished", "False"]


# --- search spaces: order, roster, models per agent, random search ---------------------------

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
    """Equal bids over real HTTP: the first of the cell's order speaks first."""
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


@pytest.mark.usefixtures("fresh_engines")
def test_cli_estimate_shows_the_space_and_samples_override(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(json.dumps({"base": {"agents": agents()}, "tasks": ["t"],
                                "grid": {"order": "all"},
                                "random": {"samples": 4, "threshold": {"low": 0.2,
                                                                       "high": 0.8}}}))
    code, out, err = run_cli(capsys, "sweep", str(path), "--estimate", "--samples", "7")
    assert code == 0, err
    assert "6 order × 7 random samples × 1 task(s) × 1 repeat(s) = 42 cells" in out
    path.write_text(json.dumps({"base": {"agents": agents([f"A{i}" for i in range(10)])},
                                "tasks": ["t"], "grid": {"order": "all"}}))
    code, _, err = run_cli(capsys, "sweep", str(path), "--estimate")
    # 10 agents have 10! = 3,628,800 orders: "all" is refused, sampling is offered
    assert code == 2 and "order: {sample: 100}" in err and err.count("\n") == 1


@pytest.mark.parametrize("name", ["sweep-order.yaml", "sweep-random.yaml"])
def test_the_example_sweep_specs_load_and_estimate(name):
    spec = load_sweep(ROOT / "examples" / name)
    result = estimate(spec)
    assert result.cells == spec.cell_count() > 0 and result.prompt_tokens_upper == 0
    assert "search space:" in result.summary()


# --- a sweep runs agents only: people are refused, saying why -----------------------------

PAIR = agents(("A", "B"))
WHY = "a sweep runs its cells unattended, so nobody would be in the room to bid"
SEATS = [
    ({"agents": PAIR, "people": [{"name": "Ann"}]}, "base.people: a sweep cannot seat people"),
    ({"agents": [*PAIR, {"agent_name": "Ann", "kind": "human"}]},
     "base.agents[2]: 'Ann' is a person (kind: human); a sweep cannot seat people"),
    ({"agents": PAIR, "human_selector": {"name": "Judge"}},
     "base.human_selector: a sweep cannot have a person pick the speaker"),
]


def people_sweep(base: dict[str, Any]) -> dict[str, Any]:
    return {"base": base, "tasks": ["Plan it."]}


@pytest.mark.parametrize(("base", "says"), SEATS)
def test_a_sweep_spec_cannot_carry_people_and_says_why_there_and_from_the_cli(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, base: dict[str, Any],
        says: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_sweep(people_sweep(base))
    assert str(caught.value) == f"invalid sweep spec: {says}: {WHY}; run a chat with people " \
        "with GroupChat(...) or `groupchat-lab run --human NAME`"
    assert "unknown" not in str(caught.value)
    path = tmp_path / "people.yaml"
    path.write_text(json.dumps(people_sweep(base)))
    code, out, err = run_cli(capsys, "sweep", str(path), "--estimate")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"error: invalid people.yaml: {says}: {WHY}")
    assert "Traceback" not in err


def test_people_at_the_top_of_a_sweep_file_are_refused_too(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({**people_sweep({"agents": PAIR}), "people": [{"name": "Ann"}]}))
    with pytest.raises(ConfigError, match=f"^invalid s.json: people: .*{WHY}"):
        load_sweep(path)


def test_an_agent_kind_is_no_seat_for_a_person() -> None:
    """Only `kind: human` is a person; any other kind stays the generic unknown keyword."""
    with pytest.raises(ConfigError, match="unknown keyword 'kind'"):
        parse_sweep(people_sweep({"agents": [*PAIR, {"agent_name": "C", "kind": "agent"}]}))


def test_a_sweep_without_people_builds_its_cells_from_the_agents() -> None:
    spec = parse_sweep(people_sweep({"agents": PAIR}))
    assert [a.agent_name for a in spec.base.agents] == ["A", "B"]


# --- rate limits in the estimate (issue 42.2) -------------------------------------------------

LOCAL = "http://127.0.0.1:9/v1"


@pytest.fixture(autouse=True)
def no_limits() -> Iterator[None]:
    RATE_LIMITS.clear()
    yield
    RATE_LIMITS.clear()


def rated(deployments: list[dict[str, Any]] | None = None, **extra: Any) -> Any:
    """16 cells of two agents on one model, two turns each: 64 calls."""
    agents = [{"agent_name": n, "system_prompt": "Speak.", "model_name": "openai/fake",
               "api_base": LOCAL, "timeout": 10} for n in "AB"]
    data: dict[str, Any] = {"name": "x", "base": {"agents": agents, "max_loops": 3},
                            "grid": {"threshold": [0.1, 0.2, 0.3, 0.4]}, "tasks": ["Go"],
                            "repeats": 4, "concurrency": 16, **extra}
    if deployments is not None:
        data["deployments"] = {"openai/fake": deployments}
    return parse_sweep(data)


def test_deployments_rpm_make_the_wall_time_at_least_calls_over_rpm() -> None:
    free = estimate(rated([{"name": "a", "api_base": LOCAL}]))
    paced = estimate(rated([{"name": "a", "api_base": LOCAL, "rpm": 12},
                           {"name": "b", "api_base": LOCAL, "rpm": 8}]))
    assert free.calls_upper == paced.calls_upper == 64
    assert free.wall_s_upper < 60  # two turns of 16 cells at once: seconds, not minutes
    assert paced.wall_s_upper >= 64 / 20 * 60  # 20 a minute together: 3.2 minutes at least
    assert any("at most 20 requests a minute" in a and "64 calls" in a
               for a in paced.assumptions)
    assert not any("rate limit" in a for a in free.assumptions)


def test_a_deployment_without_rpm_leaves_the_model_unpaced_and_a_process_wide_rpm_paces() -> None:
    mixed = estimate(rated([{"name": "a", "api_base": LOCAL, "rpm": 1},
                           {"name": "b", "api_base": LOCAL}]))
    assert mixed.wall_s_upper < 60 and not any("rate limit" in a for a in mixed.assumptions)
    set_rate_limit("openai/fake", rpm=32)
    assert estimate(rated()).wall_s_upper >= 64 / 32 * 60


def test_a_queue_longer_than_the_bid_deadline_only_paces() -> None:
    # 16 cells x 2 agents = 32 bids at once on 20 a minute: up to 2 minutes' wait against the
    # 120 s bid deadline, which that wait does not use up: a floor, no warning
    tight = estimate(rated([{"name": "a", "api_base": LOCAL, "rpm": 20}]))
    assert any("counts against neither" in a for a in tight.assumptions)
    assert not any(a.startswith("warning") for a in tight.assumptions)
