"""Issue 43 as sweep axes, run flags and form fields: bid_prompt presets, history,
speaker_names, show_bids, show_tally and the vote strategy; the shipped examples run on sims.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from groupchat_core import BID_PROMPT_PRESETS, CHAT_CHOICES, ConfigError
from groupchat_core.store import RunStore
from groupchat_core.sweeps import (
    SweepSpec,
    accuracy_table,
    estimate,
    load_sweep,
    parse_sweep,
    run_sweep,
    sweep_results,
)
from groupchat_ui.run.form import RunForm
from groupchat_ui.sweeps import logic as sweeps_logic
from tests.helpers import ROOT
from tests.helpers.cli import DEBATE, run_cli

pytestmark = pytest.mark.usefixtures("fresh_engines")  # the CLI and the sweeps open stores
EXAMPLES = ROOT / "examples"
AGENTS = [{"agent_name": n, "model_name": "sim/balanced"} for n in ("A", "B")]


def _spec(grid: dict[str, Any]) -> SweepSpec:
    return parse_sweep({"name": "view", "tasks": ["t"], "grid": grid,
                        "base": {"max_loops": 2, "agents": AGENTS}})


def test_presets_and_choices_are_axes_applied_to_each_cell() -> None:
    spec = _spec({"bid_prompt": ["swarms-14", "swarms-16"], **{
        name: list(choices) for name, choices in CHAT_CHOICES.items()}})
    assert spec.axes() == {"bid_prompt": ["swarms-14", "swarms-16"], "history": [
        "flattened", "typed"], "speaker_names": ["shown", "anonymised"],
        "show_bids": ["hidden", "shown"], "show_tally": ["hidden", "shown"]}
    assert spec.cell_count() == 32
    for cell in spec.cells():
        chat = spec.chat_spec(cell)
        assert chat.bid_prompt == BID_PROMPT_PRESETS[cell.params["bid_prompt"]]
        assert all(getattr(chat, n) == cell.params[n] for n in CHAT_CHOICES)
    mixed = _spec({"bid_prompt": {"new": "swarms-16", "mine": "Bid, {agent_name}."}})
    assert mixed.grid.bid_prompt == {"new": BID_PROMPT_PRESETS["swarms-16"],
                                     "mine": "Bid, {agent_name}."}


@pytest.mark.parametrize(("grid", "message"), [
    ({"history": ["typed", "nested"]},
     "grid.history[1] must be one of flattened, typed, got 'nested'"),
    ({"show_bids": []}, "grid.show_bids must be a non-empty list of values"),
    ({"bid_prompt": ["swarms-16", "swarms-16"]}, "grid.bid_prompt lists a preset twice"),
    ({"bid_prompt": ["swarms-17"]}, "grid.bid_prompt must map labels to templates or list "
                                    "presets"),
])
def test_a_bad_axis_is_one_line(grid: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        _spec(grid)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_run_flags_set_the_preset_and_the_choices(capsys: pytest.CaptureFixture[str]) -> None:
    flags = ["--bid-prompt", "swarms-16", "--history", "typed", "--speaker-names",
             "anonymised", "--show-bids", "shown", "--show-tally", "shown"]
    code, _, err = run_cli(capsys, "run", DEBATE, "--task", "t", "--quiet", *flags)
    assert code == 0, err
    run_id = err.strip().splitlines()[-1].removeprefix("run ")
    config = RunStore().load_run(run_id).config
    assert config["bid_prompt"] == BID_PROMPT_PRESETS["swarms-16"]
    assert [config[n] for n in CHAT_CHOICES] == ["typed", "anonymised", "shown", "shown"]
    code, out, err = run_cli(capsys, "run", DEBATE, "--task", "t", "--history", "nested")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "argument --history: invalid choice: 'nested'" in err


def test_the_run_form_passes_the_preset_and_the_choices() -> None:
    form = RunForm.from_values({"bid_prompt": "custom {agent_name}", "history": "typed",
                                "show_tally": "shown"}, bid_prompt_preset="swarms-16")
    assert form.chat_kwargs() == {"bid_prompt": "swarms-16", "history": "typed",
                                  "show_tally": "shown"}
    assert RunForm.from_values({"bid_prompt": "custom {agent_name}"}).chat_kwargs() == {
        "bid_prompt": "custom {agent_name}"}


def test_the_sweeps_form_adds_an_axis_only_past_the_default() -> None:
    grid, _ = sweeps_logic.search_space({"bid_prompt": ["swarms-14"], "history": ["flattened"],
                                         "show_bids": ["hidden", "shown"]})
    assert grid == {"show_bids": ["hidden", "shown"]}
    grid, _ = sweeps_logic.search_space({"bid_prompt": ["swarms-14", "swarms-16"],
                                         "speaker_names": ["anonymised"]})
    assert grid == {"bid_prompt": ["swarms-14", "swarms-16"], "speaker_names": ["anonymised"]}


# --- the shipped examples, run on sims (on their first TASKS tasks: the same cells, faster) ---

TASKS = 10


def _ran(path: Path, tmp_path: Path) -> tuple[SweepSpec, RunStore, Any]:
    data = load_sweep(path).to_data()
    assert len(data["tasks"]) == len(data["task_set"]) == 100  # as shipped
    spec = parse_sweep({**data, "tasks": data["tasks"][:TASKS],
                        "task_set": data["task_set"][:TASKS]})
    store = RunStore(f"sqlite:///{tmp_path / 'sweep.db'}")
    results = sweep_results(store, run_sweep(spec, store).sweep_id)
    assert (results["status"] == "finished").all() and results["simulated"].all()
    return spec, store, results


def test_the_prompt_presets_example_runs_on_sims(tmp_path: Path) -> None:
    spec, store, results = _ran(EXAMPLES / "sweep-prompt-presets.yaml", tmp_path)
    assert spec.axes() == {"model": ["sim/balanced"], "bid_prompt": ["swarms-14", "swarms-16"],
                           "history": ["flattened", "typed"]}
    table = accuracy_table(results).set_index(["bid_prompt", "history"])
    assert list(table.index) == [("swarms-14", "flattened"), ("swarms-14", "typed"),
                                 ("swarms-16", "flattened"), ("swarms-16", "typed")]
    assert (table["n"] == TASKS).all() and table["simulated"].all()
    # A sim reads no prompt: the four cells are the same chats (what the example says)
    assert table["correct"].nunique() == 1 and table["calls"].nunique() == 1
    for row in results.drop_duplicates(["bid_prompt", "history"]).itertuples():
        config = store.load_run(row.run_id).config
        assert config["bid_prompt"] == BID_PROMPT_PRESETS[row.bid_prompt]
        assert config["history"] == row.history


def test_the_what_agents_see_example_runs_on_sims(tmp_path: Path) -> None:
    spec, store, results = _ran(EXAMPLES / "sweep-what-agents-see.yaml", tmp_path)
    assert {k: v for k, v in spec.axes().items() if k != "model"} == {
        name: list(choices) for name, choices in CHAT_CHOICES.items() if name != "history"}
    table = accuracy_table(results)
    assert len(table) == 8 and (table["n"] == TASKS).all()
    row = results[(results["speaker_names"] == "anonymised")
                  & (results["show_tally"] == "shown")].iloc[0]
    config = store.load_run(row["run_id"]).config
    assert (config["speaker_names"], config["show_tally"]) == ("anonymised", "shown")


def test_the_vote_baseline_example_runs_beside_the_other_strategies(tmp_path: Path) -> None:
    _, _, results = _ran(EXAMPLES / "experiments" / "vote_baseline.yaml", tmp_path)
    table = accuracy_table(results).set_index("strategy")
    assert set(table.index) == {"vote", "bidding", "round_robin", "all_speak",
                                "bid_then_speak"}
    vote = results[results["strategy"] == "vote"]
    assert (vote["calls_needed"] == 3).all()  # one call per agent, each on the task alone
    assert table.loc["vote", "calls"] == 3 * TASKS  # calls needed: 3 agents a task
    # all_speak at max_loops 4 is the same one round: the same answers, the same verdicts
    speak = results[results["strategy"] == "all_speak"].set_index("task_index")["correct"]
    assert vote.set_index("task_index")["correct"].equals(speak)


def test_the_estimate_counts_one_call_per_agent_under_vote() -> None:
    spec = load_sweep(EXAMPLES / "experiments" / "vote_baseline.yaml")
    vote = [c for c in spec.cells() if c.params["strategy"] == "vote"]
    assert len(vote) == 100 and spec.base.max_loops == 4
    assert estimate(spec, vote).calls_upper == 300  # 3 agents asked once a task
