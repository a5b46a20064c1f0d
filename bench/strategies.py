"""What bid_then_speak saves over bidding (issue 20 item 2). Measurement only: no assertions.

    python -m bench.strategies            # 3, 5 and 8 agents, 10 turns each

Against FakeOpenAIServer over real HTTP (litellm's openai/ route): every agent is a model that
follows the prompt. Asked for a full bid it answers `respond` with its score and a 60-word
message; asked for a score only (bid_then_speak's first call: the prompt says so) it answers
with its score and an empty message; asked to write (the winner's second call) it answers with
the 60-word message. Scores differ per agent so the recency penalty rotates the floor. The fake
server counts tokens as words (prompt: the words of every message sent; completion: the words
of the tool call's arguments), so the figures compare strategies, not tokenizers. Reported per
strategy: calls, prompt tokens, completion tokens, total tokens, and bid_then_speak's saving.
"""

from __future__ import annotations

from typing import Any

from bench import _harness as h
from groupchat_core import Agent, GroupChat
from groupchat_core.testing import FakeOpenAIServer, Reply, tool_call

MESSAGE = " ".join(f"word{i}" for i in range(60))
STRATEGIES = ("bidding", "bid_then_speak", "all_speak", "round_robin")


def _responder(scores: dict[str, float]) -> Any:
    def answer(body: dict[str, Any]) -> Reply:
        model = str(body.get("model", ""))
        prompt = str(body["messages"][-1].get("content", ""))
        score = scores.get(model, 0.6)
        return tool_call(score, "" if "This round is score only" in prompt else MESSAGE)
    return answer


def measure(agents: int, turns: int) -> list[dict[str, Any]]:
    rows = []
    with FakeOpenAIServer() as srv:
        scores = {f"m{i}": round(0.95 - 0.05 * i, 2) for i in range(agents)}
        srv.set_responder(None, _responder(scores))
        for strategy in STRATEGIES:
            team = [Agent(agent_name=f"A{i}", model_name=f"openai/m{i}",
                          api_base=srv.base_url, temperature=0.0) for i in range(agents)]
            chat = GroupChat(agents=team, max_loops=turns + 1, strategy=strategy,
                             bid_cache=False, output_type="basemodel")
            record = chat.run("Plan the launch.")
            rows.append({
                "agents": agents, "strategy": strategy, "turns": len(record.turns),
                "posted": len(record.messages) - 1, "calls": record.total_calls,
                "prompt": record.total_prompt_tokens,
                "completion": record.total_completion_tokens,
                "total": record.total_prompt_tokens + record.total_completion_tokens})
    return rows


def main() -> None:
    parser = h.options(__doc__)
    parser.add_argument("--turns", type=int, default=10)
    args = parser.parse_args()
    print(h.table(["agents", "strategy", "turns", "posted", "calls", "prompt tok",
                   "completion tok", "total tok"], []))
    for n in (3, 5, 8):
        rows = measure(n, args.turns)
        for r in rows:
            print(h.row(r["agents"], r["strategy"], r["turns"], r["posted"], r["calls"],
                        f"{r['prompt']:,}", f"{r['completion']:,}", f"{r['total']:,}"))
        bid, bts = rows[0], rows[1]
        print(f"<!-- {n} agents: bid_then_speak completion tokens "
              f"{1 - bts['completion'] / bid['completion']:.0%} fewer, total "
              f"{1 - bts['total'] / bid['total']:.0%} fewer, calls "
              f"{bts['calls'] / bid['calls']:.2f}x -->")


if __name__ == "__main__":
    main()
