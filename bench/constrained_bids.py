"""Readable-bid rate of a small real model with and without constrained decoding (issue 20 item 6).

SmolLM2-135M behind llama-cpp-python's OpenAI server (groupchat_core.testing.LocalLLMServer)
bids in short real chats. The same chats are run in both modes, interleaved, in one process:
`json` (no tools, the bid asked for as JSON text: what a model without tool calls gets) and
`json_schema` (the same prompt, plus the respond tool's schema as `response_format`, which this
server turns into a grammar). A bid counts as readable when the engine read a score from it
(Bid.outcome "read"); the rest are what the engine records as unreadable or failed.

    python -m bench.constrained_bids [--bids 200] [--max-tokens 160] [--progress FILE]

--progress FILE rewrites FILE with the counts so far after every chat (`"partial": true`
until both modes have their bids), so a run stopped early still leaves its figures.

Needs `make llm-setup` (the server is built once per machine). Results in BENCHMARKS.md.
"""

from __future__ import annotations

import collections
import json
import sys
from typing import Any

from bench import _harness as h
from groupchat_core import Agent, GroupChat
from groupchat_core.testing import LocalLLMServer

MODES = ("json", "json_schema")
ROOMS: list[tuple[str, list[tuple[str, str]]]] = [
    ("Park or data centre for the old rail yard?",
     [("Ann", "You argue for the park."), ("Ben", "You argue for the data centre.")]),
    ("Should the team adopt a four-day week?",
     [("Cleo", "You care about wellbeing."), ("Dev", "You care about deadlines.")]),
    ("What is 12 + 7 * 3? Give a number.",
     [("Eve", "You are careful with arithmetic."), ("Finn", "You check others' sums.")]),
    ("Plan a team offsite.",
     [("Gus", "You are curious and ask questions."), ("Hana", "You give examples.")]),
]


def summary(counts: dict[str, collections.Counter[str]],
            paths: dict[str, collections.Counter[str]], seconds: dict[str, float],
            max_tokens: int, max_loops: int, partial: bool) -> dict[str, Any]:
    """The figures so far: per mode, bids, readable, rate, outcomes, paths, seconds per bid."""
    result: dict[str, Any] = {"machine": h.machine(), "max_tokens": max_tokens,
                              "max_loops": max_loops, "partial": partial, "modes": {}}
    for mode in MODES:
        total = sum(counts[mode].values())
        read = counts[mode]["read"]
        result["modes"][mode] = {
            "bids": total, "readable": read, "rate": round(read / total, 3) if total else None,
            "outcomes": dict(counts[mode]), "paths": dict(paths[mode]),
            "seconds_per_bid": round(seconds[mode] / total, 2) if total else None,
        }
    return result


def run(bids_per_mode: int, max_tokens: int, max_loops: int,
        progress: str | None = None) -> dict[str, Any]:
    counts: dict[str, collections.Counter[str]] = {m: collections.Counter() for m in MODES}
    paths: dict[str, collections.Counter[str]] = {m: collections.Counter() for m in MODES}
    seconds = dict.fromkeys(MODES, 0.0)
    with LocalLLMServer(n_ctx=2048) as server:
        chat_no = 0
        while min(sum(c.values()) for c in counts.values()) < bids_per_mode:
            task, roster = ROOMS[chat_no % len(ROOMS)]
            chat_no += 1
            for mode in MODES:  # the same chat in both modes, back to back
                if sum(counts[mode].values()) >= bids_per_mode:
                    continue
                agents = [Agent(agent_name=name, system_prompt=prompt,
                                model_name=server.model_name, api_base=server.base_url,
                                api_key="x", max_tokens=max_tokens, temperature=0.7,
                                timeout=600.0, num_retries=0, tool_choice_mode=mode)
                          for name, prompt in roster]
                chat = GroupChat(agents=agents, max_loops=max_loops, threshold=0.0,
                                 bid_timeout=None, bid_cache=False)
                seconds[mode] += h.repeat(lambda chat=chat, task=task: chat.run(task), 1)[0]
                record = chat.last_run
                assert record is not None
                for bid in record.bids:
                    cut = bool(bid.error and "cut off at max_tokens" in bid.error)
                    counts[mode][f"{bid.outcome}{' (cut off)' if cut else ''}"] += 1
                    paths[mode][bid.path] += 1
            print(json.dumps({m: dict(counts[m]) for m in MODES}), file=sys.stderr, flush=True)
            if progress:
                done = min(sum(c.values()) for c in counts.values()) >= bids_per_mode
                with open(progress, "w", encoding="utf-8") as out:
                    json.dump(summary(counts, paths, seconds, max_tokens, max_loops,
                                      partial=not done), out, indent=2)
    return summary(counts, paths, seconds, max_tokens, max_loops, partial=False)


def main(argv: list[str] | None = None) -> int:
    parser = h.options(__doc__)
    parser.add_argument("--bids", type=int, default=200, help="bids per mode (default 200)")
    parser.add_argument("--max-tokens", type=int, default=160)
    parser.add_argument("--max-loops", type=int, default=2)
    parser.add_argument("--progress", default=None, metavar="FILE",
                        help="rewrite FILE with the figures so far after every chat")
    args = parser.parse_args(argv)
    print(json.dumps(run(args.bids, args.max_tokens, args.max_loops, args.progress),
                     indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
