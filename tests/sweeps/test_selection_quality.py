"""Did the floor go to the best candidate (issue 43, item 5): a scripted judge with known
scores over real HTTP judges the trio's run; the winner-is-best rate, regret and calibration
are checked against numbers worked out by hand below.

The trio (tests/helpers/scripted_trio.py): turn 1 Alice "A1" (bid 0.9) wins over Bob "B1"
(0.7); turn 2 Bob "B2" (0.7) wins over Alice "A2" (0.9, penalised) and Cara "C1" (0.65);
turn 3 is a lull (no winner: not judged). The judge scores A1 0.4, B1 0.8, A2 0.5, B2 0.9,
C1 0.9: turn 1's winner was not the best (regret 0.4), turn 2's was (tied with Cara, regret 0).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import pytest

from groupchat_core.sweeps import (
    calibration,
    judge_selection,
    selection_summary,
    selection_turns,
    summary_lines,
)
from groupchat_core.testing import FakeOpenAIServer, error, tool_call
from tests.helpers.cli import run_cli
from tests.helpers.scripted_trio import trio_chat, trio_record

JUDGED = {"A1": 0.4, "B1": 0.8, "A2": 0.5, "B2": 0.9, "C1": 0.9}


def _verdict(body: dict[str, Any]) -> Any:
    prompt = body["messages"][-1]["content"]
    proposed = prompt.rsplit("Proposed next message:\n", 1)[1].strip()
    return tool_call(JUDGED[proposed], f"judged {proposed}")


@pytest.fixture(scope="module")
def judged() -> Any:
    record = trio_record()
    with FakeOpenAIServer() as server:
        server.set_responder("judge", _verdict)
        # the process's memory cache: the key holds this server's own api_base (a fresh port)
        first = judge_selection([record], "openai/judge", api_base=server.base_url)
        again = judge_selection([record], "openai/judge", api_base=server.base_url)
        prompts = [r.body["messages"][-1]["content"] for r in server.requests_for("judge")]
    return first, again, prompts


def test_each_candidate_is_judged_once_blind_and_cached(judged: Any) -> None:
    first, again, prompts = judged
    assert len(prompts) == 5 and first.calls == 5 and first.cached == 0  # lull turn: none
    assert again.calls == 0 and again.cached == 5  # the same questions: from the cache
    assert sorted(first.candidates["judged"]) == sorted(JUDGED.values())
    proposed = [p.rsplit("Proposed next message:", 1)[1] for p in prompts]
    assert not any(name in part or "0.9" in part for part in proposed
                   for name in ("Alice", "Bob", "Cara"))  # no author, no bid
    turn2 = next(p for p in prompts if p.endswith("C1"))
    assert "Alice: A1" in turn2 and "Debate the plan." in turn2  # what came before, named
    assert first.unpriced == 5  # the fake's model has no price: said, not counted as $0


def test_a_sim_judge_costs_nothing_and_is_not_unpriced() -> None:
    """A sim answers in-process: no provider billed it ("$0.0000 + 31 unpriced" was shown)."""
    result = judge_selection([trio_record()], "sim/balanced", cache=False)
    assert result.calls == 5 and result.unpriced == 0 and result.cost_usd == 0.0
    assert "unpriced" not in summary_lines(result)[-1]


def test_winner_is_best_and_regret_by_hand(judged: Any) -> None:
    first, _, _ = judged
    turns = selection_turns(first.candidates)
    assert list(turns["turn"]) == [1, 2]
    assert list(turns["winner"]) == ["Alice", "Bob"]
    assert list(turns["best"]) == ["Bob", "Bob, Cara"]
    assert list(turns["winner_is_best"]) == [False, True]
    assert list(turns["regret"]) == pytest.approx([0.4, 0.0])
    summary = selection_summary(turns)
    assert summary.turns == 2 and summary.single == 0
    assert summary.winner_is_best.estimate == pytest.approx(0.5)
    assert 0.0 < summary.winner_is_best.low < 0.5 < summary.winner_is_best.high < 1.0
    assert summary.regret.estimate == pytest.approx(0.2)
    assert "only 2 contested turns" in summary.note


def test_calibration_by_hand(judged: Any) -> None:
    first, _, _ = judged
    table = calibration(first.candidates).set_index("agent")
    overall = table.loc["all"]
    # mid-ranks: bids (0.9, 0.7, 0.9, 0.7, 0.65) -> (4.5, 2.5, 4.5, 2.5, 1); judged
    # (0.4, 0.8, 0.5, 0.9, 0.9) -> (1, 3, 2, 4.5, 4.5); Pearson of the ranks = -8.25 / sqrt(9*9.5)
    assert overall["n"] == 5
    rho: float = table.at["all", "rho"]  # type: ignore[assignment]
    assert overall["rho"] == pytest.approx(-8.25 / math.sqrt(9 * 9.5))
    half = 1.959964 * 1.06 / math.sqrt(2)
    assert overall["rho_low"] == pytest.approx(math.tanh(math.atanh(rho) - half),
                                               abs=1e-4)
    assert overall["rho_high"] == pytest.approx(math.tanh(math.atanh(rho) + half),
                                                abs=1e-4)
    assert overall["bid_minus_judged"] == pytest.approx((0.5 - 0.1 + 0.4 - 0.2 - 0.25) / 5)
    assert table.loc["Alice", "n"] == 2 and "too few" in str(table.loc["Alice", "note"])
    lines = summary_lines(first)
    assert lines[0].startswith("winner was the judge's best on 1 of 2 contested turns: 0.50")
    assert any("Spearman rho -0.89" in line for line in lines)
    assert lines[-1].startswith("judge openai/judge: 5 calls made, 0 answers from the cache")


def test_a_failed_verdict_leaves_its_turn_out_and_is_counted() -> None:
    record = trio_record()
    with FakeOpenAIServer() as server:
        def verdict(body: dict[str, Any]) -> Any:
            if body["messages"][-1]["content"].endswith("A1"):
                return error(400, "bad request")
            return _verdict(body)

        server.set_responder("judge", verdict)
        result = judge_selection([record], "openai/judge", api_base=server.base_url,
                                 cache=False)
    assert len(result.errors) == 1
    turns = selection_turns(result.candidates)
    assert list(turns["turn"]) == [2]  # turn 1's winner has no verdict: that turn is left out
    assert result.candidates["judged"].notna().sum() == 4


def test_the_cli_prints_the_summary_and_writes_a_self_describing_table(
        tmp_path: Any, capsys: pytest.CaptureFixture[str], sqlite_store: Any) -> None:
    chat, _ = trio_chat()
    chat.add_observer(sqlite_store.recorder(chat))
    chat.run("Debate the plan.")
    assert chat.last_run is not None
    run_id = chat.last_run.run_id
    db = ["--db", sqlite_store.url]
    with FakeOpenAIServer() as server:
        server.set_responder("judge", _verdict)
        judge = ["--judge", "openai/judge", "--judge-api-base", server.base_url]
        code, out, err = run_cli(capsys, *db, "selection", run_id[:8], *judge)
        assert code == 0, err
        assert "winner was the judge's best on 1 of 2 contested turns" in out
        path = tmp_path / "turns.csv"
        code, _, err = run_cli(capsys, *db, "selection", run_id, *judge, "--table", "turns",
                               "-o", str(path))
        assert code == 0, err
        assert len(server.requests_for("judge")) == 5  # the second look: from the store's cache
    text = path.read_text()
    assert text.startswith("# groupchat_lab_export: selection-turns\n")
    assert "# judge_model: openai/judge" in text
    table = pd.read_csv(path, comment="#")
    assert list(table["regret"]) == pytest.approx([0.4, 0.0])
    code, _, err = run_cli(capsys, *db, "selection", "--judge", "openai/judge")
    assert code != 0 and err.strip().splitlines() == [
        "error: selection needs runs: give run ids, or --sweep with a sweep id"]
