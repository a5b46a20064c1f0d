"""Speaker metrics, transitions, explanations and counterfactuals, with known answers."""

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


def test_explain_names_runner_up_and_margin():
    text = explain(trio_record(), 1)
    assert text.startswith("Turn 1: Alice spoke")
    assert "runner-up was Bob at 0.7" in text and "margin of 0.2" in text
    assert "1 of 3 bids had an empty message" in text


def test_explain_says_when_the_penalty_changed_the_winner():
    text = explain(trio_record(), 2)
    assert "Bob spoke" in text and "runner-up was Cara" in text and "margin of 0.05" in text
    assert "penalty changed the outcome" in text and "Alice (0.9) would have won" in text


def test_explain_a_lull_compares_the_best_bid_with_the_threshold():
    text = explain(trio_record(), 3)
    assert "lull" in text and "Cara's 0.3" in text and "not above the threshold 0.5" in text


def test_explain_a_tie_goes_to_the_earlier_agent():
    record = scripted_run({"A": [(0.8, "a"), (0.1, "")], "B": [(0.8, "b"), (0.1, "")]},
                          max_loops=10)
    text = explain(record, 1)
    assert "A spoke" in text and "tie with B" in text and "earliest in the list, A" in text
    assert "margin of 0" in text


def test_explain_a_penalty_that_did_not_change_the_winner():
    record = scripted_run({"A": [(0.9, "a1"), (0.95, "a2"), (0.1, "")],
                           "B": [(0.6, "b1"), (0.6, "b2"), (0.1, "")]}, max_loops=10)
    text = explain(record, 2)
    assert "A spoke with an adjusted bid of 0.65 (raw 0.95 minus the recency penalty)" in text
    assert "penalty applied to A but did not change the winner" in text


def test_explain_a_bid_equal_to_the_threshold_and_all_silent_turns():
    record = scripted_run({"A": [(0.5, "a")], "B": [(0.2, "")]}, max_loops=10)
    assert "equal to the threshold 0.5" in explain(record, 1)
    silent = scripted_run({"A": [(0.9, "")], "B": [(0.2, "")]}, max_loops=10)
    assert "Every agent stayed silent" in explain(silent, 1)


def test_explain_a_turn_where_every_bid_failed_is_not_a_lull():
    record = scripted_run({"A": [RuntimeError("boom")], "B": [RuntimeError("down")]})
    text = explain(record, 1)
    assert "Every bid failed" in text and "not a lull" in text and "boom" in text


def test_explain_an_unknown_turn_raises_with_the_known_turns():
    with pytest.raises(ConfigError, match=r"turn 9 .* \[1, 2, 3\]"):
        explain(trio_record(), 9)


# --- counterfactuals ----------------------------------------------------------------------

LADDER = {  # A, B (the penalty beats A's 0.9), A (B's 0.95 is penalised), then a lull
    "A": [(0.9, "a1"), (0.9, "a2"), (0.85, "a3"), (0.1, "")],
    "B": [(0.3, "b1"), (0.7, "b2"), (0.95, "b3"), (0.1, "")],
}


def test_same_parameters_reproduce_the_actual_winners_exactly():
    record = scripted_run(LADDER, max_loops=10)
    result = counterfactual(record.bids_frame(), 0.5, 0.3, 1)
    assert list(result.frame["counterfactual_winner"].iloc[:3]) == ["A", "B", "A"]
    assert not result.frame["diverged"].any() and result.first_divergence is None
    assert result.stopped == "lull" and len(result.frame) == 4


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


def test_a_higher_threshold_diverges_at_the_first_turn_it_would_lull():
    record = scripted_run(LADDER, max_loops=10)
    result = counterfactual(record.bids_frame(), 0.75, 0.3, 1)
    assert result.first_divergence == 2 and result.stopped == "lull"
    assert list(result.frame["turn"]) == [1, 2]  # later bids answered another conversation
    assert pd.isna(result.frame["counterfactual_winner"].iloc[1])


def test_no_penalty_diverges_where_the_penalty_decided_the_turn():
    record = scripted_run(LADDER, max_loops=10)
    result = counterfactual(record.bids_frame(), 0.5, 0.0, 1)
    assert result.first_divergence == 2 and result.stopped == "diverged"
    assert result.frame.iloc[-1][["actual_winner", "counterfactual_winner"]].tolist() == ["B", "A"]


def test_a_longer_recency_window_penalises_earlier_speakers():
    record = scripted_run(LADDER, max_loops=10)
    result = counterfactual(record.bids_frame(), 0.5, 0.3, 2)  # A spoke 2 messages before turn 3
    assert result.first_divergence == 3 and result.stopped == "diverged"
    assert result.frame.iloc[-1]["counterfactual_winner"] == "B"
