"""Streaming benchmarks (issue 14). Measurement only: nothing here asserts on time.

    python -m bench.streaming            # full run (30 rounds), about a minute on 2 cores
    python -m bench.streaming --reps 4   # smoke run

Against FakeOpenAIServer in a spawned process (its CPU never counts against the client):

(a) first token to first character: for each streamed bid, from the server's flush of the
    first SSE write that carries message text (FakeOpenAIServer.stream_writes, CLOCK_MONOTONIC,
    shared by both processes) to the moment the dashboard's own observer (the job's
    groupchat_core.LiveRun, what the Run page renders from) holds that text. The
    browser is not in the loop: the Run page's live fragment polls every REFRESH_S (0.5 s), so
    the screen adds 0-500 ms (mean 250 ms) plus Streamlit's delta round trip on top.
(b) CPU per bid, streamed vs not, each on the direct OpenAI-compatible path and through
    litellm (GROUPCHAT_DIRECT_HTTP=0, before issue 24), in the same rounds: one-turn chats of
    8 agents, each reply a 60-word message (about 55 deltas of 8 characters when streamed),
    zero latency; process CPU per bid of the
    chat with stream_bids on and a LiveRun observer, of the same chat with stream_bids off,
    and of stream_bids on with no observer asking for deltas (nothing streams). Pairs
    alternate order so other tenants' load hits every side alike.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from bench import _harness as h
from bench.engine import settled_cpu

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

WORDS = ("Streaming lets the room watch every candidate reply take shape while the turn is "
         "still open, so a slow model no longer means a silent screen; this sentence is sixty "
         "words long to stand in for a typical bid message from a small local model that "
         "argues one point, names a risk, and proposes a next step for the group to weigh "
         "before the floor moves on again").split()
MESSAGE = " ".join(WORDS[:60])
HEAD = '{"score": 0.2, "message": "'


def sixty_words(server: Any, chunk_delay: float) -> None:
    """The server's setup: every bid the same low-score 60-word reply (a lull after one turn),
    streamed `chunk_delay` seconds apart."""
    from groupchat_core.testing import tool_call

    fragments = [HEAD + WORDS[0]] + [" " + w for w in WORDS[1:60]] + ['"}']
    server.set_responder(None, lambda body: tool_call(
        fragments=fragments, chunk_delay=chunk_delay, score=None, message=None))


def _chat(base_url: str, n: int, stream: bool, observer: Any) -> Any:
    from groupchat_core import Agent, GroupChat

    agents = [Agent(agent_name=f"Agent{i}", model_name=f"openai/m{i}", api_base=base_url,
                    api_key="sk-local") for i in range(n)]
    return GroupChat(agents=agents, max_loops=2, stream_bids=stream,
                     on_event=[observer] if observer is not None else [])


class TimedForming:
    """The Run page's job fold (LiveRun), noting when each agent's first text arrived."""

    def __init__(self) -> None:
        from groupchat_core import LiveRun

        self.inner = LiveRun()
        self.wants, self.thread_safe = self.inner.wants, True
        self.first: dict[str, float] = {}

    def __call__(self, event: Any) -> None:
        self.inner(event)
        if event.kind == "bid_delta" and event.message and event.agent not in self.first:
            self.first[event.agent] = time.monotonic()


def first_char_latencies(server: h.ServerProcess, runs: int, n: int) -> list[float]:
    """Milliseconds from the first message-bearing SSE write to the LiveRun holding it."""
    server.ask("setup", (0.02,))
    out: list[float] = []
    for _ in range(runs):
        timed = TimedForming()
        chat = _chat(server.base_url, n, True, timed)
        chat.run("Stream a turn.")
        assert all(b.path == "tool_call:stream" for b in chat.last_run.bids), chat.last_run.bids
        for model, times in server.ask("writes"):
            agent = f"Agent{model.removeprefix('m')}"
            out.append((timed.first[agent] - times[1]) * 1000.0)  # write 1: HEAD + first word
    server.ask("setup", (0.0,))
    return out


VIA_LITELLM = " via litellm (GROUPCHAT_DIRECT_HTTP=0: before issue 24)"


def cpu_per_bid(server: h.ServerProcess, pairs: int, n: int) -> dict[str, list[float]]:
    """Per-bid CPU milliseconds of each variant, over `pairs` rounds in rotating order. Each
    variant runs on the direct OpenAI-compatible path (providers/_direct.py) and through
    litellm (GROUPCHAT_DIRECT_HTTP=0, the path before issue 24), in the same rounds."""
    base: dict[str, Callable[[], Any]] = {
        "streamed (stream_bids on, LiveRun observer)":
            lambda: _chat(server.base_url, n, True, TimedForming()),
        "not streamed (stream_bids off)": lambda: _chat(server.base_url, n, False, None),
        "stream_bids on, no delta observer (nothing streams)":
            lambda: _chat(server.base_url, n, True, None),
    }
    variants = {**{name: (make, "1") for name, make in base.items()},
                **{name + VIA_LITELLM: (make, "0") for name, make in base.items()}}

    def one(name: str) -> float:
        make, direct = variants[name]
        os.environ["GROUPCHAT_DIRECT_HTTP"] = direct
        chat = make()
        try:
            cpu = settled_cpu(lambda chat=chat: chat.run("One turn."))
        finally:
            os.environ.pop("GROUPCHAT_DIRECT_HTTP", None)
        assert len(chat.last_run.bids) == n and all(b.error is None
                                                    for b in chat.last_run.bids)
        server.ask("writes")  # drop the write log
        return cpu

    for name in variants:  # warm-up: imports, clients, caches
        one(name)
    return h.alternate({name: lambda name=name: one(name) * 1000.0 / n for name in variants},
                       pairs)


def main() -> None:
    args = h.options(__doc__, reps=30).parse_args()
    runs, pairs = max(1, args.reps * 2 // 3), args.reps
    from groupchat_core import prepare_litellm

    prepare_litellm()
    with h.ServerProcess(sixty_words, 0.0) as server:
        lat = first_char_latencies(server, runs, 4)
        os.environ["GROUPCHAT_DIRECT_HTTP"] = "0"
        lat_litellm = first_char_latencies(server, runs, 4)
        os.environ.pop("GROUPCHAT_DIRECT_HTTP")
        cpu = cpu_per_bid(server, pairs, 8)
    print(f"## machine: {h.machine()}")
    print(f"\n(a) first token to first character at the observer, {len(lat)} bids "
          f"({runs} one-turn chats of 4 streamed agents, 20 ms between deltas)")
    for name, values in (("direct path", lat), ("via litellm (before)", lat_litellm)):
        print(f"    {name}: median {h.median(values):.2f} ms · "
              f"p90 {h.quantile(values, 0.9):.2f} ms · max {max(values):.2f} ms")
    print(f"\n(b) CPU per bid, {pairs} rounds of one-turn chats of 8 agents, 60-word replies")
    for name, values in cpu.items():
        plain = "not streamed (stream_bids off)" + (VIA_LITELLM if VIA_LITELLM in name else "")
        base = h.median(cpu[plain])
        med = h.median(values)
        print(f"    {name}: median {med:.2f} ms/bid (p90 {h.quantile(values, 0.9):.2f}), "
              f"{med - base:+.2f} ms, {med / base:.2f}x vs not streamed on its path")


if __name__ == "__main__":
    main()
