"""Distractors (issue 43.4): the setting is validated against the roster and recorded with the
run; the per-run count and the per-strategy report give the numbers worked out by hand from a
scripted room; the shipped experiment runs on sims and `sweep export --table distractors`
prints the report.

Private imports (PERSONAS, SimContext, simulate_bid): the off-topic sim persona is a unit with
no public name."""

from __future__ import annotations

import io
import math

import pandas as pd
import pytest

from groupchat_core import Agent, ConfigError, GroupChat, load_spec_text
from groupchat_core.analysis import distractor_turns, run_distractors
from groupchat_core.cli import main
from groupchat_core.store import RunStore
from groupchat_core.sweeps import (
    distractor_report,
    has_distractors,
    load_sweep,
    run_sweep,
    sweep_results,
    wilson,
)
from groupchat_core.testing import ScriptedBids
from tests.helpers import ROOT

pytestmark = pytest.mark.usefixtures("fresh_engines")

EXAMPLE = ROOT / "examples" / "experiments" / "distractors.yaml"


def scripted_room() -> tuple[GroupChat, ScriptedBids]:
    """The task and four turns (max_loops=5) by the bidding rule; Chatter's bid is the
    highest on turns 1 and 3 only."""
    script = ScriptedBids({
        "Solver": [(0.6, "Let us compute."), (0.9, "It is 42."), (0.6, "Yes."), (0.9, "42.")],
        "Chatter": [(0.95, "Nice weather!"), (0.2, ""), (0.95, "Ramen later?"), (0.3, "")],
    }, shared=False)
    agents = [Agent(agent_name=n, model_name=script.model_name) for n in ("Solver", "Chatter")]
    chat = GroupChat(agents=agents, max_loops=5, recency_penalty=0.0, distractors=["Chatter"],
                     providers=script.providers, bid_cache=False)
    return chat, script


def test_a_scripted_room_counts_the_distractors_turns_as_worked_out_by_hand() -> None:
    chat, script = scripted_room()
    chat.run("Compute 6 * 7.")
    record = chat.last_run
    assert record is not None
    script.assert_complete()
    assert [m.role for m in record.messages[1:]] == ["Chatter", "Solver", "Chatter", "Solver"]
    assert record.config["distractors"] == ["Chatter"]  # recorded with the run
    assert run_distractors(record.config) == ["Chatter"]
    [held] = distractor_turns(record.turns_frame(), run_distractors(record.config))
    assert (held.name, held.turns, held.posted) == ("Chatter", 2, 4)
    assert held.text() == "Distractor Chatter held the floor in 2 of 4 turns."
    assert distractor_turns(record.turns_frame(), ["Solver"])[0].turns == 2
    assert run_distractors({}) == [] and run_distractors(None) == []  # runs from before


def _results(rows: list[tuple[str, int, int, float | None]]) -> pd.DataFrame:
    """A sweep-results frame by hand: (strategy, messages, distractor turns, correct)."""
    return pd.DataFrame([{"strategy": s, "status": "finished", "messages": m,
                          "distractor_turns": d, "distractors": "Chatter", "correct": c,
                          "simulated": False} for s, m, d, c in rows])


def test_the_report_gives_share_interval_and_accuracy_as_worked_out_by_hand() -> None:
    results = _results([("bidding", 4, 2, 0.0), ("bidding", 4, 0, 1.0), ("bidding", 2, 1, 1.0),
                        ("round_robin", 3, 1, 1.0), ("round_robin", 3, 1, 0.0)])
    assert has_distractors(results)
    table = distractor_report(results).set_index("strategy")
    bidding = table.loc["bidding"]
    assert (bidding["chats"], bidding["turns"], bidding["distractor_turns"]) == (3, 10, 3)
    assert bidding["share"] == pytest.approx(0.3)
    interval = wilson(3, 10)
    assert (bidding["ci_low"], bidding["ci_high"]) == (interval.low, interval.high)
    assert (bidding["chats_with"], bidding["accuracy_with"]) == (2, 0.5)  # 0 and 1
    assert (bidding["chats_without"], bidding["accuracy_without"]) == (1, 1.0)
    assert "observed, not assigned" in bidding["note"]
    robin = table.loc["round_robin"]
    assert (robin["turns"], robin["distractor_turns"]) == (6, 2)
    assert robin["chats_without"] == 0 and math.isnan(robin["accuracy_without"])
    assert "no chat without one to compare with" in robin["note"]


def test_the_report_says_in_words_when_the_data_cannot_answer() -> None:
    unscored = _results([("bidding", 4, 2, None)])
    assert "cannot say what distractors cost" in distractor_report(unscored)["note"][0]
    silent = _results([("bidding", 4, 0, 1.0)])
    assert "no scored chat gave a distractor the floor" in distractor_report(silent)["note"][0]
    baseline = pd.concat([_results([("bidding", 4, 2, 0.0)]),
                          _results([("bidding", 4, 0, 1.0)]).assign(distractors="")])
    row = distractor_report(baseline).iloc[0]
    assert (row["chats"], row["baseline_chats"], row["accuracy_baseline"]) == (1, 1, 1.0)
    assert "against the baseline" in row["note"]
    with pytest.raises(ConfigError, match="declare no distractors"):
        distractor_report(unscored.drop(columns="distractor_turns"))


def test_an_unknown_distractor_is_one_line_error() -> None:
    base = "agents: [{agent_name: A}, {agent_name: B}]\n"
    assert load_spec_text(base + "distractors: [B]\n").distractors == ["B"]
    with pytest.raises(ConfigError) as caught:
        load_spec_text(base + "distractors: [Bob]\n")
    message = str(caught.value)
    assert "\n" not in message and "'Bob'" in message and "not in the roster (A, B)" in message
    for bad in ("distractors: B\n", "distractors: [B, B]\n", "distractors: [3]\n"):
        with pytest.raises(ConfigError, match="distractors") as caught:
            load_spec_text(base + bad)
        assert "\n" not in str(caught.value)
    assert load_spec_text(base).distractors == []  # the default: none, as before


def test_the_off_topic_sim_bids_high_and_never_states_an_answer() -> None:
    from groupchat_core.providers._sim import PERSONAS, SimContext, simulate_bid

    assert PERSONAS["offtopic"].eagerness > PERSONAS["eager"].eagerness
    ctx = SimContext(persona="sim/offtopic", agent_name="Chatter",
                     system_prompt="You chat.", history=(("User", "What is 2+2?"),), turn=1,
                     temperature=0.0, seed=0,
                     answer_key={"answer": "4", "scorer": "numeric", "task_id": "t"})
    bid = simulate_bid(ctx)
    assert bid.score > 0.5 and bid.message and "answer" not in bid.message.lower()
    assert "2+2" not in bid.message


def test_the_shipped_experiment_runs_on_sims_and_exports_the_report(tmp_path, capsys) -> None:
    spec = load_sweep(EXAMPLE)
    assert spec.base.distractors == ["Chatter"]
    assert {a.model_name for a in spec.base.agents} >= {"sim/offtopic"}
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    store = RunStore(url)
    outcome = run_sweep(spec, store)
    results = sweep_results(store, outcome.sweep_id)
    assert results["status"].eq("finished").all() and results["simulated"].all()
    no_chatter = results["roster"].eq("Solver + Checker")
    assert results.loc[no_chatter, "distractors"].eq("").all()  # the baseline cells
    assert results.loc[no_chatter, "distractor_turns"].eq(0).all()
    table = distractor_report(results).set_index("strategy")
    assert sorted(table.index) == sorted(spec.axes()["strategy"])
    assert table["note"].str.contains("simulated").all()
    robin = results[(results["strategy"] == "round_robin") & ~no_chatter]
    assert table.loc["round_robin", "turns"] == robin["messages"].sum()
    assert table.loc["round_robin", "distractor_turns"] == robin["distractor_turns"].sum()
    # docs/outcomes.md "Distractors": the shipped table's counts. By rule, round_robin,
    # all_speak and vote give each of three agents one of the three turns; on these sims the
    # highest bid is Chatter's on two turns, random draws alike (seed 0 in every chat), the
    # sim selector keeps naming Solver; no verdict changed (15 of 20 right everywhere).
    held = {"bidding": 40, "bid_then_speak": 40, "round_robin": 20, "random": 20,
            "all_speak": 20, "vote": 20, "selector": 0}
    assert table["distractor_turns"].to_dict() == held
    assert table["turns"].eq(60).all() and table["chats"].eq(20).all()
    robin_share = wilson(20, 60)
    assert (table.loc["vote", "ci_low"], table.loc["vote", "ci_high"]) == (robin_share.low,
                                                                            robin_share.high)
    assert table["accuracy_baseline"].eq(0.75).all() and table["baseline_chats"].eq(20).all()
    assert table.loc["bidding", "accuracy_with"] == 0.75
    assert table.loc["selector", "chats_with"] == 0
    capsys.readouterr()
    assert main(["--db", url, "sweep", "export", outcome.sweep_id,
                 "--table", "distractors"]) == 0
    exported = pd.read_csv(io.StringIO(capsys.readouterr().out), comment="#")
    assert list(exported["strategy"]) == sorted(spec.axes()["strategy"])
    assert list(exported["distractor_turns"]) == list(table.sort_index()["distractor_turns"])


def test_a_chat_built_in_code_checks_its_distractors_too() -> None:
    from groupchat_core import Agent, ConfigError, GroupChat

    agents = [Agent(agent_name="A"), Agent(agent_name="B")]
    with pytest.raises(ConfigError, match="distractors names 'C', who is not in the roster"):
        GroupChat(agents=agents, distractors=["C"])
    assert GroupChat(agents=agents, distractors=["B"]).to_spec() is not None
