"""Strategy x accuracy x calls x tokens on a small real model (issue 20, the closing table).

SmolLM2-135M behind llama-cpp-python's OpenAI server (groupchat_core.testing.LocalLLMServer)
answers the first N of Du et al.'s arithmetic problems (groupchat_core.outcomes.du_math_tasks)
under each speaker-selection strategy, two agents with constrained bids (`json_schema`), each
strategy at a budget of about two posted answers per chat:

    round_robin  max_loops 2   the task and one agent's answer (the single-agent baseline)
    random       max_loops 3   two answers from seeded draws
    selector     max_loops 3   the same model as selector (its own call), then the named agent
    bidding      max_loops 3   both bid each turn, the winner's message posted
    bid_then_speak max_loops 3 both score each turn, the winner writes in a second call
    all_speak    max_loops 3   one round: both answer, on the same conversation

Each chat's outcome is the numeric scorer on the majority vote over each agent's last stated
answer (the Du set's rule). Per strategy: chats, correct, accuracy with its Wilson interval,
model calls, prompt and completion tokens (the server's usage), seconds. Interleaved by task
(every strategy on task 1, then task 2, ...), so a change of load hits all strategies alike.

    python -m bench.strategies_llm [--tasks 10] [--max-tokens 96] [--out FILE]

Needs `make llm-setup`. Results in BENCHMARKS.md. What these numbers can mean: a 135M model is
near chance at this arithmetic, so they compare the strategies' costs on a real server and show
the outcome pipeline end to end; the accuracy differences at this n say little.
"""

from __future__ import annotations

import collections
import json

from bench import _harness as h
from groupchat_core import Agent, GroupChat
from groupchat_core.outcomes import du_math_tasks
from groupchat_core.sweeps import wilson
from groupchat_core.testing import LocalLLMServer

PLAN: tuple[tuple[str, int], ...] = (
    ("round_robin", 2), ("random", 3), ("selector", 3), ("bidding", 3),
    ("bid_then_speak", 3), ("all_speak", 3))
ROLES = (("Solver", "You solve arithmetic carefully. State the final number."),
         ("Checker", "You check the arithmetic of others and state the correct number."))


def agents(server: LocalLLMServer, max_tokens: int) -> list[Agent]:
    return [Agent(agent_name=name, system_prompt=prompt, model_name=server.model_name,
                  api_base=server.base_url, api_key="x", max_tokens=max_tokens,
                  temperature=0.0, timeout=900.0, tool_choice_mode="json_schema")
            for name, prompt in ROLES]


def main() -> None:
    parser = h.options(__doc__)
    parser.add_argument("--tasks", type=int, default=10)
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--out", default=None, help="write the figures as JSON here too")
    args = parser.parse_args()
    tasks = du_math_tasks()[:args.tasks]
    totals: dict[str, collections.Counter[str]] = {s: collections.Counter() for s, _ in PLAN}
    seconds: dict[str, float] = collections.defaultdict(float)
    with LocalLLMServer(n_ctx=2048) as server:
        for i, task in enumerate(tasks):
            for strategy, loops in PLAN:
                chat = GroupChat(agents=agents(server, args.max_tokens), max_loops=loops,
                                 threshold=0.0, strategy=strategy, bid_timeout=None,
                                 bid_cache=False, seed=i, selector_model=server.model_name,
                                 selector_api_base=server.base_url,
                                 selector_tool_choice_mode="json_schema")
                seconds[strategy] += h.repeat(lambda chat=chat, task=task: chat.run(task), 1)[0]
                record = chat.last_run
                assert record is not None and record.outcome is not None
                t = totals[strategy]
                t["chats"] += 1
                t["correct"] += bool(record.outcome.correct)
                t["answered"] += record.outcome.answer is not None
                t["calls"] += sum(b.calls for b in record.bids)
                t["prompt"] += sum(b.prompt_tokens or 0 for b in record.bids)
                t["completion"] += sum(b.completion_tokens or 0 for b in record.bids)
                t["read"] += sum(b.outcome == "read" for b in record.bids)
                t["bids"] += len(record.bids)
                print(f"task {i + 1}/{len(tasks)} {strategy}: correct="
                      f"{record.outcome.correct} answer={record.outcome.answer} "
                      f"expected={task.answer}", flush=True)
    rows = []
    for strategy, loops in PLAN:
        t = totals[strategy]
        interval = wilson(t["correct"], t["chats"])
        low, high = interval.low, interval.high
        rows.append({"strategy": strategy, "max_loops": loops, **dict(t),
                     "accuracy": t["correct"] / t["chats"], "wilson": [low, high],
                     "seconds": round(seconds[strategy], 1)})
    print(h.table(["strategy", "max_loops", "chats", "correct", "accuracy (95 % Wilson)",
                   "answered", "calls", "prompt tok", "completion tok", "bids read", "s"],
                  [[r["strategy"], r["max_loops"], r["chats"], r["correct"],
                    f"{r['accuracy']:.2f} ({r['wilson'][0]:.2f}-{r['wilson'][1]:.2f})",
                    r["answered"], r["calls"], f"{r['prompt']:,}", f"{r['completion']:,}",
                    f"{r['read']}/{r['bids']}", f"{r['seconds']:.0f}"] for r in rows]))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump({"machine": h.machine(), "max_tokens": args.max_tokens,
                       "tasks": len(tasks), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
