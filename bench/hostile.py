"""Hostile providers on every route: the worst stall of the shared loop (issue 19 rows 2, 4).
Measurement only: nothing here asserts on time.

    python -m bench.hostile            # every route x case, a few minutes on 2 cores
    python -m bench.hostile --routes hosted_vllm --cases flood

A HostileServer (groupchat_core.testing) runs in a spawned process, so its CPU never counts
against the loop. For each route (`openai/`, `hosted_vllm/`, `lm_studio/`) and hostile case,
one chat (a hostile agent and an ordinary one; Agent.timeout and bid_timeout 10 s, as in the
issue) runs on the shared background loop beside a probe: a task that sleeps 10 ms in a loop
and records its worst lateness (the longest the loop was held by someone else). Reported: that
worst stall, the wall time of the chat, and how the hostile bid ended.
"""

from __future__ import annotations

import asyncio
import time
from functools import partial
from typing import Any

from bench import _harness as h
from groupchat_core.testing import HostileServer

ROUTES = ("openai", "hosted_vllm", "lm_studio")
# (case, streamed?): what each hostile model sends is described in groupchat_core.testing
CASES = (("huge_error", False), ("huge_reply", False), ("trickle", False),
         ("big_stream", True), ("flood", True), ("echo", True))
TIMEOUT = 10.0
PROBE_SLEEP = 0.01


class _Probe:
    """Sleeps PROBE_SLEEP in a loop on the shared loop; `worst` is the longest lateness."""

    def __init__(self) -> None:
        self.worst = 0.0
        self.running = True

    async def run(self) -> None:
        while self.running:
            start = time.perf_counter()
            await asyncio.sleep(PROBE_SLEEP)
            self.worst = max(self.worst, time.perf_counter() - start - PROBE_SLEEP)


class _Deltas:
    wants = frozenset({"bid_delta"})

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, event: Any) -> None:
        self.count += 1


def _outcome(bid: Any) -> str:
    if bid.error:
        return bid.error.split(":")[0] + (": " + bid.error.split(":")[1].strip()[:40]
                                          if ":" in bid.error else "")
    return f"{len(bid.message):,}-char message"


def one_case(base: str, route: str, case: str, stream: bool) -> dict[str, Any]:
    from pydantic import SecretStr

    from groupchat_core import Agent, GroupChat, background_loop

    def agent(name: str, model: str) -> Agent:
        return Agent(agent_name=name, model_name=f"{route}/{model}", api_base=base,
                     api_key=SecretStr("sk-bench-hostile-0123456789"), num_retries=0,
                     timeout=TIMEOUT)

    deltas = _Deltas()
    chat = GroupChat(agents=[agent("A", case), agent("B", "ok")], max_loops=2,
                     bid_timeout=TIMEOUT, threshold=0.3, stream_bids=stream,
                     on_event=[deltas] if stream else [])
    probe = _Probe()
    loop = background_loop()
    probing = loop.submit(probe.run())
    time.sleep(0.1)
    start = time.perf_counter()
    record = loop.submit(chat.arun_record("t")).result()
    elapsed = time.perf_counter() - start
    probe.running = False
    probing.result()
    return {"route": route, "case": case, "stall_ms": probe.worst * 1000, "wall_s": elapsed,
            "outcome": _outcome(record.bids[0]), "deltas": deltas.count}


def main() -> None:
    parser = h.options(__doc__)
    parser.add_argument("--routes", nargs="*", default=list(ROUTES))
    parser.add_argument("--cases", nargs="*", default=[c for c, _ in CASES])
    args = parser.parse_args()
    from groupchat_core import prepare_litellm

    prepare_litellm()
    print("machine:", h.machine())
    rows = []
    hostile = partial(HostileServer, echo_values=("bench-canary-key-0123456789",))
    with h.ServerProcess(None, server=hostile) as server:
        for route in args.routes:
            one_case(server.base_url, route, "ok", False)  # warm: clients, imports
            for case, stream in CASES:
                if case in args.cases:
                    row = one_case(server.base_url, route, case, stream)
                    rows.append(row)
                    print(h.row(f"`{route}/`", case + (" (streamed)" if stream else ""),
                                f"{row['stall_ms']:,.0f} ms", f"{row['wall_s']:.1f} s",
                                row["outcome"], f"{row['deltas']:,}"), flush=True)
    worst = max(rows, key=lambda r: r["stall_ms"])
    print(f"worst stall: {worst['stall_ms']:,.0f} ms ({worst['route']}/{worst['case']})")


if __name__ == "__main__":
    main()
