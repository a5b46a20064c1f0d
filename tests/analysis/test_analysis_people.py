"""Analysis of a run with people in the room (issue 22): a person is a participant like any
other in the balance metrics, the transitions, the rotation and the what-if grid (heatmap),
while their bids (path "human", calls 0) add no calls, tokens or cost. The runs are real: a
headless Human whose callback answers RaiseHand / SetBid / Pass beside scripted agents."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from groupchat_core import (
    Agent,
    GroupChat,
    Human,
    HumanAction,
    HumanPrompt,
    Pass,
    Pick,
    Post,
    RaiseHand,
    RunRecord,
    SetBid,
    background_loop,
)
from groupchat_core.analysis import (
    counterfactual,
    explain_turn,
    rotation,
    speaker_metrics,
    top_bids,
    transition_matrix,
    whatif_pivot,
    whatif_record,
)
from groupchat_core.testing import ScriptedBids

pytestmark = pytest.mark.usefixtures("fresh_engines")

HOUR = 3600.0


@pytest.fixture
def fakes() -> Iterator[list[ScriptedBids]]:
    made: list[ScriptedBids] = []
    yield made
    for fake in made:
        fake.close()


def _run(fakes: list[ScriptedBids], answers: dict[tuple[str, int], HumanAction],
         script: dict[str, list[object]], order: str, **config: object) -> RunRecord:
    async def play(prompt: HumanPrompt) -> HumanAction | None:
        return answers.get((prompt.phase, prompt.turn))

    fake = ScriptedBids(script, shared=False)
    fakes.append(fake)
    by_name: dict[str, Agent | Human] = {
        n: Agent(agent_name=n, model_name=fake.model_name) for n in script}
    by_name["Ann"] = Human("Ann", callback=play)
    config.setdefault("human_post_window", HOUR)
    chat = GroupChat(agents=[by_name[n] for n in order.split()], providers=fake.providers,
                     bid_cache=False, human_window=HOUR, **config)  # type: ignore[arg-type]
    return background_loop().submit(chat.arun_record("Plan the trip.")).result(timeout=30)


def _mixed(fakes: list[ScriptedBids]) -> RunRecord:
    """Turn 1: A (0.9) over Ann's raised hand (0.8). Turn 2: her hand wins, she posts. Turn 3:
    she bids 0.95 and writes: she wins again (recency window 0). Turn 4: she passes, A."""
    answers: dict[tuple[str, int], HumanAction] = {
        ("bid", 1): RaiseHand(), ("post", 2): Post("Train."),
        ("bid", 3): SetBid(0.95, "And a bike."), ("post", 3): Post(""), ("bid", 4): Pass()}
    script: dict[str, list[object]] = {
        "A": [(0.9, "a1"), (0.5, "a2"), (0.6, "a3"), (0.7, "a4")],
        "B": [(0.2, "b1"), (0.1, ""), (0.1, ""), (0.6, "b4")]}
    return _run(fakes, answers, script, "A Ann B", max_loops=5, recency_window=0)


def test_a_person_counts_in_the_balance_like_any_participant(fakes: list[ScriptedBids]) -> None:
    record = _mixed(fakes)
    assert [t.winner for t in record.turns] == ["A", "Ann", "Ann", "A"]
    metrics = speaker_metrics(record.turns_frame(), record.bids_frame(),
                              stop_reason=record.stop_reason)
    assert metrics.agents == ("A", "Ann", "B")  # roster order, the silent B included
    assert metrics.shares == {"A": 0.5, "Ann": 0.5, "B": 0.0}
    assert metrics.messages_posted == 4
    assert (metrics.longest_monologue, metrics.longest_monologue_agent) == (2, "Ann")
    assert metrics.gini == pytest.approx(1 / 3)
    matrix = transition_matrix(record.turns_frame(), metrics.agents)
    assert matrix.at["A", "Ann"] == 1 and matrix.at["Ann", "Ann"] == 1
    assert matrix.at["Ann", "A"] == 1 and int(matrix.to_numpy().sum()) == 3
    assert rotation(record.turns_frame())["distinct_so_far"].tolist() == [1, 2, 2, 2]
    assert top_bids(record.bids_frame())["top_agent"].tolist() == ["A", "Ann", "Ann", "A"]


def test_a_persons_bids_add_no_calls_tokens_or_cost(fakes: list[ScriptedBids]) -> None:
    record = _mixed(fakes)
    hers = [b for b in record.bids if b.agent == "Ann"]
    assert [(b.kind, b.path, b.calls, b.prompt_tokens, b.cost_usd) for b in hers] == [
        ("human", "human", 0, None, None)] * 4
    agents = [b for b in record.bids if b.kind == "agent"]
    assert record.total_calls == sum(b.calls for b in agents) == 8
    assert record.total_prompt_tokens == sum(b.prompt_tokens or 0 for b in agents)
    assert record.total_cost_usd == pytest.approx(sum(b.cost_usd or 0.0 for b in agents))
    assert record.unpriced_bids == 0  # her cost-less bids made no call: not "unpriced"


def test_explain_and_what_if_read_a_persons_bid_by_the_engines_rule(
        fakes: list[ScriptedBids]) -> None:
    record = _mixed(fakes)
    bids, turns = record.bids_frame(), record.turns_frame()
    assert "Ann" in explain_turn(bids, turns, 2, record.config["threshold"])
    same = counterfactual(bids, record.config["threshold"], record.config["recency_penalty"], 0)
    assert same.first_divergence is None and same.stopped is None
    assert same.frame["counterfactual_winner"].tolist() == ["A", "Ann", "Ann", "A"]
    grid = whatif_record(record, thresholds=[0.5, 0.85], penalties=[0.0], windows=[0])
    pivot = whatif_pivot(grid)
    # at 0.85 Ann's hand (0.8) cannot speak: turn 2 lulls (nobody over 0.85), the rest unknown
    assert pivot.at[0.0, 0.5] == 4 and pivot.at[0.0, 0.85] == 2
    assert grid.set_index("threshold").at[0.85, "lull_turn"] == 2


def test_a_person_who_passes_every_turn_is_a_silent_participant(
        fakes: list[ScriptedBids]) -> None:
    answers: dict[tuple[str, int], HumanAction] = {("bid", t): Pass() for t in range(1, 4)}
    script: dict[str, list[object]] = {"A": [(0.9, "a1"), (0.8, "a2")],
                                       "B": [(0.7, "b1"), (0.6, "b2")]}
    record = _run(fakes, answers, script, "Ann A B", max_loops=3)
    metrics = speaker_metrics(record.turns_frame(), record.bids_frame())
    assert metrics.agents == ("Ann", "A", "B") and metrics.shares["Ann"] == 0.0
    assert metrics.evenness is not None and metrics.evenness < 1.0


def test_a_person_who_won_and_did_not_post_is_re_read_as_unable_to_speak(
        fakes: list[ScriptedBids]) -> None:
    """Ann's 0.9 wins, she does not post in her second window, the floor falls to A (0.7):
    re-selection at the run's own settings must find A, not her unposted draft; a raised hand
    with no draft (turn 2) still speaks for her."""
    answers: dict[tuple[str, int], HumanAction] = {("bid", 1): SetBid(0.9, "a draft"),
                                                   ("bid", 2): RaiseHand()}
    script: dict[str, list[object]] = {"A": [(0.7, "a1"), (0.1, "")], "B": [(0.6, "b1"),
                                                                          (0.1, "")]}
    record = _run(fakes, answers, script, "Ann A B", max_loops=3, human_post_window=0.05)
    assert [t.winner for t in record.turns] == ["A", None]  # turn 2: her hand, no post: lull
    bids = record.bids_frame()
    config = record.config
    same = counterfactual(bids, config["threshold"], config["recency_penalty"],
                          config["recency_window"])
    assert same.frame["counterfactual_winner"].tolist()[:1] == ["A"]
    assert same.first_divergence is None
    metrics = speaker_metrics(record.turns_frame(), bids)
    assert metrics.shares == {"Ann": 0.0, "A": 1.0, "B": 0.0}


def test_what_if_takes_a_selectors_pick_as_recorded_while_the_rule_picks_the_same(
        fakes: list[ScriptedBids]) -> None:
    """A person as selector overrode the rule on turn 1 (B over A): at the run's own settings
    the what-if reproduces the run (the rule still picks A there, so the person's choice is
    taken as made), and where the rule would pick otherwise it diverges on that turn."""
    script: dict[str, list[object]] = {"A": [(0.9, "a1"), (0.9, "a2")],
                                       "B": [(0.7, "b1"), (0.4, "b2")]}
    answers: dict[tuple[str, int], HumanAction] = {("pick", 1): Pick("B"),
                                                   ("pick", 2): Pick(None)}

    async def judge(prompt: HumanPrompt) -> HumanAction | None:
        return answers.get((prompt.phase, prompt.turn))

    fake = ScriptedBids(script, shared=False)
    fakes.append(fake)
    chat = GroupChat(agents=[Agent(agent_name=n, model_name=fake.model_name) for n in script],
                     providers=fake.providers, bid_cache=False, human_window=HOUR,
                     max_loops=3, selector_top_k=2, human_selector=Human("Judge",
                                                                         callback=judge))
    record = background_loop().submit(chat.arun_record("Plan.")).result(timeout=30)
    assert [(t.winner, t.rule_winner) for t in record.turns] == [("B", "A"), ("A", "A")]
    config = record.config
    grid = whatif_record(record, thresholds=[config["threshold"], 0.95],
                         penalties=[config["recency_penalty"]])
    by = grid.set_index("threshold")
    assert by.at[config["threshold"], "outcome"] == "same"
    assert by.at[config["threshold"], "exact_through"] == 2
    assert by.at[0.95, "outcome"] == "lull" and by.at[0.95, "lull_turn"] == 1
    same = counterfactual(record.bids_frame(), config["threshold"], config["recency_penalty"],
                          config["recency_window"], turns=record.turns_frame())
    assert same.frame["counterfactual_winner"].tolist() == ["B", "A"]
    assert same.frame["reason"].tolist()[0] == "human_pick"
    metrics = speaker_metrics(record.turns_frame(), record.bids_frame())
    assert metrics.shares == {"A": 0.5, "B": 0.5}


def test_the_bid_heatmap_has_a_row_for_the_person(fakes: list[ScriptedBids]) -> None:
    """The dashboard's heatmap, given the spec's agents (which list no person), still draws a
    row of the person's bids, after the agents."""
    from groupchat_core.analysis.charts import bids_heatmap

    record = _mixed(fakes)
    heat = bids_heatmap(record.bids_frame(), "score", 0.5, agents=["A", "B"]).data[0]
    assert list(heat.y) == ["A", "B", "Ann"]
    assert [round(float(v), 2) for v in heat.z[2]] == [0.8, 0.8, 0.95, 0.0]
