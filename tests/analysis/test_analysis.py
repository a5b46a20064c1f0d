"""Speaker metrics, transitions, explanations and counterfactuals, with known answers.

Private imports: the sweeps' one-pass metrics (`speaker_metrics_by_run`, `agent_orders` in
analysis/_metrics.py) are no public names; they are tested against the public per-run rule."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from groupchat_core import Agent, Bid, ConfigError, GroupChat, Message, RunRecord, Turn
from groupchat_core.analysis import (
    agent_order,
    counterfactual,
    explain_turn,
    gini,
    speaker_metrics,
    speakers,
    transition_matrix,
)
from groupchat_core.analysis._metrics import agent_orders, speaker_metrics_by_run
from tests.helpers.chats import scripted_chat
from tests.helpers.scripted_trio import trio_record


def hand_record(winners: list[str | None], agents: list[str], **turn_fields: list) -> RunRecord:
    """A record whose turns are won by `winners` (None = lull); every agent bids every turn."""
    turns, bids, messages = [], [], [Message(role="User", content="task")]
    for i, winner in enumerate(winners, start=1):
        extra = {k: v[i - 1] for k, v in turn_fields.items()}
        turns.append(Turn(turn=i, winner=winner, lull=winner is None, **extra))
        for pos, agent in enumerate(agents):
            bids.append(Bid(turn=i, agent=agent, position=pos, winner=agent == winner))
        if winner is not None:
            messages.append(Message(role=winner, content=f"{winner} on {i}"))
    return RunRecord(run_id="r", config={}, task="task", messages=messages, bids=bids,
                     turns=turns)


def scripted_run(script: dict, **kwargs) -> RunRecord:
    return scripted_chat(script, output_type="basemodel", **kwargs).run("Debate the plan.")


# --- metrics ------------------------------------------------------------------------------


def test_equal_shares_have_entropy_log2_n_evenness_one_and_gini_zero():
    agents = ["A", "B", "C", "D"]
    record = hand_record(agents, agents)
    m = speaker_metrics(record.turns_frame(), record.bids_frame())
    assert m.shares == {a: 0.25 for a in agents}
    assert m.entropy_bits == pytest.approx(math.log2(4))
    assert m.evenness == pytest.approx(1.0)
    assert m.gini == pytest.approx(0.0)


def test_one_speaker_has_gini_n_minus_one_over_n_and_zero_entropy():
    record = hand_record(["A", "A", "A"], ["A", "B", "C"])
    m = speaker_metrics(record.turns_frame(), record.bids_frame())
    assert m.gini == pytest.approx(2 / 3)
    assert m.entropy_bits == 0.0 and m.evenness == 0.0
    assert (m.longest_monologue, m.longest_monologue_agent) == (3, "A")
    assert m.shares == {"A": 1.0, "B": 0.0, "C": 0.0}


def test_gini_counts_agents_who_never_spoke():
    assert gini([1, 0, 0, 0]) == pytest.approx(3 / 4)
    assert gini([2, 2]) == 0.0
    assert gini([0, 0]) is None and gini([]) is None


def test_longest_monologue_is_the_longest_run_of_one_speaker():
    record = hand_record(["A", "B", "B", "B", "A", "C", "C"], ["A", "B", "C"])
    m = speaker_metrics(record.turns_frame(), record.bids_frame())
    assert (m.longest_monologue, m.longest_monologue_agent) == (3, "B")
    assert m.messages_posted == 7 and m.turns == 7


def test_margins_penalty_changes_failures_lull_and_stop_reason():
    record = hand_record(
        ["A", "B", "A", None], ["A", "B"],
        margin=[0.2, None, 0.4, None], penalty_changed_winner=[False, True, False, False],
        failed_bids=[0, 1, 0, 2],
    )
    m = speaker_metrics(record.turns_frame(), record.bids_frame(), stop_reason="lull")
    assert m.mean_margin == pytest.approx(0.3)
    assert (m.penalty_changed_winner, m.penalty_changed_rate) == (1, pytest.approx(1 / 3))
    assert m.failed_bids == 3
    assert (m.lull_turn, m.stop_reason) == (4, "lull")


def test_metrics_of_the_scripted_specification_run():
    record = trio_record()
    m = speaker_metrics(record.turns_frame(), record.bids_frame(), stop_reason=record.stop_reason)
    assert m.agents == ("Alice", "Bob", "Cara")  # Cara never spoke but still counts
    assert m.shares == {"Alice": 0.5, "Bob": 0.5, "Cara": 0.0}
    assert m.evenness == pytest.approx(1 / math.log2(3))
    assert m.mean_margin == pytest.approx((0.2 + 0.05) / 2)
    assert (m.penalty_changed_winner, m.lull_turn, m.stop_reason) == (1, 3, "lull")


def test_metrics_of_an_empty_run_are_zero_or_undefined():
    record = RunRecord(run_id="r", config={}, task="t")
    m = speaker_metrics(record.turns_frame(), record.bids_frame())
    assert (m.turns, m.messages_posted, m.longest_monologue) == (0, 0, 0)
    # one rule for a chat without messages: no speaker balance at all (issue 21), not a
    # monologue of 0 bits for entropy while evenness and Gini leave it out
    assert m.entropy_bits is None and m.gini is None and m.evenness is None
    assert m.mean_margin is None
    assert m.lull_turn is None and m.as_dict()["shares"] == {}


def test_many_runs_in_one_frame_get_each_runs_own_metrics_to_the_last_bit():
    """The sweeps' one-pass path (speaker_metrics_by_run) against the per-run rule, over runs
    with margins in no tidy order, a lull, failures, a silent agent, and an empty run."""
    records = [
        hand_record(["A", "B", "A", None], ["A", "B"], margin=[0.1, None, 0.7, None],
                    penalty_changed_winner=[False, True, False, False], failed_bids=[0, 1, 0, 2]),
        hand_record(["C", "C", "B"], ["A", "B", "C"], margin=[1 / 3, 0.2, 0.1],
                    penalty_changed_winner=[True, True, False], failed_bids=[0, 0, 0]),
        trio_record(),
    ]
    turns = pd.concat([r.turns_frame().assign(run_id=f"r{i}") for i, r in enumerate(records)])
    bids = pd.concat([r.bids_frame().assign(run_id=f"r{i}") for i, r in enumerate(records)])
    stops = {"r0": "lull", "r1": "max_loops", "r2": "lull"}
    orders = agent_orders(bids.sample(frac=1, random_state=3))  # any row order: by position
    got = speaker_metrics_by_run(turns, orders, stops)
    assert list(got) == ["r0", "r1", "r2"]
    for i, record in enumerate(records):
        want = speaker_metrics(record.turns_frame(), record.bids_frame(),
                               stop_reason=stops[f"r{i}"])
        assert got[f"r{i}"] == want
    assert got["r1"].agents == ("A", "B", "C") and got["r1"].shares["A"] == 0.0
    assert speaker_metrics_by_run(turns.iloc[:0], orders, stops) == {}
    assert agent_orders(bids.iloc[:0]) == {}


# --- transitions --------------------------------------------------------------------------


def test_transition_counts_with_every_agent_on_both_axes():
    record = hand_record(["A", "B", "A", "B", "B"], ["A", "B", "C"])
    matrix = transition_matrix(record.turns_frame(), agents=["A", "B", "C"])
    assert list(matrix.index) == list(matrix.columns) == ["A", "B", "C"]
    assert matrix.loc["A", "B"] == 2 and matrix.loc["B", "A"] == 1 and matrix.loc["B", "B"] == 1
    assert int(matrix.to_numpy().sum()) == 4 and matrix.loc["C"].sum() == 0


def test_turns_bids_and_messages_frames_give_the_same_speakers():
    record = hand_record(["B", "A", "A", "B"], ["A", "B"])
    expected = ["B", "A", "A", "B"]
    assert speakers(record.turns_frame()) == expected
    assert speakers(record.bids_frame()) == expected
    assert speakers(record.messages_frame()) == expected  # the task is not a speaker
    frames = [record.turns_frame(), record.bids_frame(), record.messages_frame()]
    matrices = [transition_matrix(f, agents=["A", "B"]) for f in frames]
    assert all(m.equals(matrices[0]) for m in matrices)
    assert agent_order(record.bids_frame()) == ["A", "B"]


# --- explaining a turn --------------------------------------------------------------------


def explain(record: RunRecord, turn: int, threshold: float = 0.5) -> str:
    return explain_turn(record.bids_frame(), record.turns_frame(), turn, threshold)


BOOM = {"A": [RuntimeError("boom")], "B": [RuntimeError("down")]}


@pytest.mark.parametrize(("script", "turn", "fragments"), [
    (None, 1, ["Turn 1: Alice spoke", "runner-up was Bob at 0.7", "margin of 0.2",
               "1 of 3 bids had an empty message"]),
    (None, 2, ["Bob spoke", "runner-up was Cara", "margin of 0.05", "penalty changed the outcome",
               "Alice (0.9) would have won"]),
    (None, 3, ["lull", "Cara's 0.3", "not above the threshold 0.5"]),  # best bid vs threshold
    ({"A": [(0.8, "a"), (0.1, "")], "B": [(0.8, "b"), (0.1, "")]}, 1,  # a tie
     ["A spoke", "tie with B", "earliest in the list, A", "margin of 0"]),
    ({"A": [(0.9, "a1"), (0.95, "a2"), (0.1, "")], "B": [(0.6, "b1"), (0.6, "b2"), (0.1, "")]},
     2, ["A spoke with an adjusted bid of 0.65 (raw 0.95 minus the recency penalty)",
         "penalty applied to A but did not change the winner"]),
    ({"A": [(0.5, "a")], "B": [(0.2, "")]}, 1, ["equal to the threshold 0.5"]),
    ({"A": [(0.9, "")], "B": [(0.2, "")]}, 1, ["Every agent stayed silent"]),
    (BOOM, 1, ["Every bid failed", "not a lull", "boom"]),
])
def test_explain_a_turn(script: dict | None, turn: int, fragments: list[str]):
    record = trio_record() if script is None else scripted_run(script, max_loops=10)
    text = explain(record, turn)
    assert [f for f in fragments if f not in text] == [], text


def test_explain_an_unknown_turn_raises_with_the_known_turns():
    with pytest.raises(ConfigError, match=r"turn 9 .* \[1, 2, 3\]"):
        explain(trio_record(), 9)


# --- counterfactuals ----------------------------------------------------------------------

LADDER = {  # A, B (the penalty beats A's 0.9), A (B's 0.95 is penalised), then a lull
    "A": [(0.9, "a1"), (0.9, "a2"), (0.85, "a3"), (0.1, "")],
    "B": [(0.3, "b1"), (0.7, "b2"), (0.95, "b3"), (0.1, "")],
}


def test_counterfactuals_of_a_scripted_run():
    bids = scripted_run(LADDER, max_loops=10).bids_frame()
    same = counterfactual(bids, 0.5, 0.3, 1)  # the same parameters: the actual winners exactly
    assert list(same.frame["counterfactual_winner"].iloc[:3]) == ["A", "B", "A"]
    assert not same.frame["diverged"].any() and same.first_divergence is None
    assert same.stopped == "lull" and len(same.frame) == 4
    higher = counterfactual(bids, 0.75, 0.3, 1)  # diverges at the first turn it would lull
    assert higher.first_divergence == 2 and higher.stopped == "lull"
    assert list(higher.frame["turn"]) == [1, 2]  # later bids answered another conversation
    assert pd.isna(higher.frame["counterfactual_winner"].iloc[1])
    unpenalised = counterfactual(bids, 0.5, 0.0, 1)  # diverges where the penalty decided
    assert unpenalised.first_divergence == 2 and unpenalised.stopped == "diverged"
    assert unpenalised.frame.iloc[-1][["actual_winner", "counterfactual_winner"]].tolist() == [
        "B", "A"]
    longer = counterfactual(bids, 0.5, 0.3, 2)  # A spoke 2 messages before turn 3
    assert longer.first_divergence == 3 and longer.stopped == "diverged"
    assert longer.frame.iloc[-1]["counterfactual_winner"] == "B"


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_same_parameters_reproduce_simulated_runs(seed: int):
    agents = [Agent(agent_name=n, model_name=f"sim/{p}", temperature=1.0)
              for n, p in [("Ann", "eager"), ("Ben", "balanced"), ("Cy", "contrarian")]]
    chat = GroupChat(agents=agents, max_loops=15, threshold=0.45, recency_penalty=0.2,
                     recency_window=2, seed=seed, output_type="basemodel")
    record = chat.run("Should the city build a new bridge?")
    result = counterfactual(record.bids_frame(), 0.45, 0.2, 2)
    actual = [t.winner for t in record.turns]
    assert [None if pd.isna(w) else w for w in result.frame["counterfactual_winner"]] == actual
    assert result.first_divergence is None
    assert result.stopped == (None if record.stop_reason == "max_loops" else "lull")
