"""Unknown cost is not zero: an unpriced model's run reads "unknown", a partly priced one says
its total is partial; over real HTTP (litellm prices a known model name, not a made-up one).
Private imports (`_records`): units or test hooks with no public name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from groupchat_core import Agent, Bid, GroupChat, RunRecord, format_cost, transcript_markdown
from groupchat_core._records import cost_totals
from groupchat_core.cli import main
from groupchat_core.store import RunStore
from groupchat_core.sweeps import parse_sweep
from groupchat_core.testing import FakeOpenAIServer, tool_call
from tests.providers.conftest import http_agent


def two_turns(srv: FakeOpenAIServer, models: tuple[str, str], store: RunStore) -> RunRecord:
    srv.set_responder(models[0], lambda body: tool_call(0.9, "A says something useful"))
    srv.set_responder(models[1], lambda body: tool_call(0.1, ""))
    chat = GroupChat(agents=[http_agent(srv, "A", models[0]), http_agent(srv, "B", models[1])],
                     max_loops=3, recency_penalty=0.0)
    store.attach(chat)
    chat.run("Price this.")
    record: RunRecord | None = chat.last_run
    assert record is not None
    return record


@pytest.mark.parametrize("models, priced, says, never", [
    (("local-llm", "local-llm-2"), "", "completion tokens, cost unknown", "$0.0000"),
    (("gpt-4o-mini", "gpt-4o-mini-2024-07-18"), "AB", "cost ${total:.4f}", "unknown"),
    (("gpt-4o-mini", "local-llm"), "A", "${total:.4f} + unknown (2 unpriced bids)", None),
], ids=["a local unpriced model costs unknown, not zero", "a priced model has a complete total",
        "a partly priced run is flagged partial"])
def test_only_priced_bids_have_a_cost_and_the_total_says_what_is_unknown(
        server: FakeOpenAIServer, store: RunStore, models: tuple[str, str], priced: str,
        says: str, never: str | None) -> None:
    record = two_turns(server, models, store)
    assert len(record.bids) == 4
    assert all(b.calls == 1 and ((b.cost_usd or 0) > 0 if b.agent in priced
                                 else b.cost_usd is None) for b in record.bids)
    unpriced = sum(b.agent not in priced for b in record.bids)
    assert record.unpriced_bids == unpriced and record.cost_complete == (unpriced == 0)
    total = sum(b.cost_usd or 0 for b in record.bids)
    assert record.total_cost_usd == (pytest.approx(total) if priced else None)
    loaded = store.load_run(record.run_id)  # the store keeps 0 in its column, reads unknown
    assert loaded.unpriced_bids == unpriced
    assert loaded.total_cost_usd == (pytest.approx(total) if priced else None)
    md = transcript_markdown(store, record.run_id)
    assert says.format(total=total) in md and (never is None or never not in md)


def test_simulated_and_failed_bids_cost_nothing_known() -> None:
    sim = GroupChat(agents=[Agent(agent_name=n) for n in ("A", "B")], max_loops=4)
    sim.run("t")
    assert sim.last_run.total_cost_usd == 0.0 and sim.last_run.cost_complete


def test_cost_totals_rules() -> None:
    call: dict[str, Any] = {"turn": 1, "agent": "A", "position": 0, "calls": 1}
    priced = Bid(**call, path="tool_call", cost_usd=0.002)
    unpriced = Bid(**call, path="tool_call")
    failed = Bid(**call, path="none", error="APIConnectionError: down")
    cached = Bid(turn=1, agent="A", position=0, calls=0, cached=True, path="tool_call")
    scripted = Bid(**call, path="scripted")
    assert cost_totals([]) == (0.0, 0)
    assert cost_totals([failed, cached, scripted]) == (0.0, 0)
    assert cost_totals([unpriced, failed]) == (None, 1)
    assert cost_totals([priced, unpriced]) == (0.002, 1)
    assert format_cost(None) == "unknown"
    assert format_cost(0.002) == "$0.0020"
    assert format_cost(0.002, 1) == "$0.0020 + unknown (1 unpriced bid)"


def test_an_old_record_without_the_new_field_still_loads() -> None:
    data = RunRecord(run_id="r", config={}, task="t").model_dump()
    data.pop("unpriced_bids")
    assert RunRecord(**data).unpriced_bids == 0


def test_a_sweep_on_an_unpriced_model_is_not_said_to_be_free_nor_its_runs_in_the_cli(
        server: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")  # litellm's OpenAI client wants some key
    server.set_responder(None, lambda body: tool_call(0.1, ""))
    agents = [{"agent_name": n, "model_name": "openai/local-llm", "api_base": server.base_url}
              for n in ("A", "B")]
    spec = parse_sweep({"name": "local", "base": {"max_loops": 3, "agents": agents},
                        "tasks": ["t"], "repeats": 1, "bid_cache": False, "concurrency": 1,
                        "grid": {"threshold": [0.3, 0.5]}})
    db, path = f"sqlite:///{tmp_path}/cli.db", tmp_path / "sweep.json"
    path.write_text(json.dumps(spec.to_data()))
    assert main(["--db", db, "sweep", str(path), "--quiet"]) == 0
    out, _ = capsys.readouterr()
    assert "cost unknown" in out and "$0.0000" not in out
    run_id = RunStore(db).list_runs()["run_id"].iloc[0]
    assert RunStore(db).load_run(run_id).total_cost_usd is None
    assert main(["--db", db, "show", run_id]) == 0
    assert "cost unknown" in capsys.readouterr().out
