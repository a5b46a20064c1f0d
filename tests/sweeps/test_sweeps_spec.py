"""Sweep specs (format, validation, cells) and the pre-flight estimate, with how long rate limits
make a sweep take (issue 42.2): a model whose deployments all declare rpm (or a process-wide
set_rate_limit rpm) makes calls / rpm minutes a floor on the wall time; a queue on a limit only
paces (no deadline counts it: tests/providers/test_rate_limits_pace.py), so no warning asks for
a lower concurrency. Private imports (MAX_CELLS, litellm_module, RATE_LIMITS, the process-wide
limits cleared around each test): names no public module exports."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
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
)
from groupchat_core.sweeps._spec import MAX_CELLS
from tests.helpers import ROOT

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


def test_a_deployment_without_rpm_leaves_the_model_unpaced() -> None:
    mixed = estimate(rated([{"name": "a", "api_base": LOCAL, "rpm": 1},
                           {"name": "b", "api_base": LOCAL}]))
    assert mixed.wall_s_upper < 60 and not any("rate limit" in a for a in mixed.assumptions)


def test_a_process_wide_rpm_paces_the_estimate_too() -> None:
    set_rate_limit("openai/fake", rpm=32)
    assert estimate(rated()).wall_s_upper >= 64 / 32 * 60


def test_a_queue_longer_than_the_bid_deadline_only_paces() -> None:
    # 16 cells x 2 agents = 32 bids at once on 20 a minute: up to 2 minutes' wait against the
    # 120 s bid deadline, which that wait does not use up: a floor, no warning
    tight = estimate(rated([{"name": "a", "api_base": LOCAL, "rpm": 20}]))
    assert any("counts against neither" in a for a in tight.assumptions)
    assert not any(a.startswith("warning") for a in tight.assumptions)
