"""How long a room waits for a person (issue 22: "a room never waits longer than its window
plus one second for a person").

    PYTHONPATH=. .venv/bin/python bench/room_window.py            # windows 1, 5, 20 s; 5 rounds
    PYTHONPATH=. .venv/bin/python bench/room_window.py --quick    # windows 1, 5 s; 2 rounds

One agent (ScriptedBids, answers at once) and one person, one turn (max_loops 2). Scenarios:
- silent: nobody plays the person (a closed tab before it was marked away): the bid window
  runs out;
- stuck: the person's callback never returns (a hung client): cancelled at the window's end;
- leaves: the person leaves at half the window (the Run page's "away", or a closed terminal);
- no post: the person raises a hand at once, wins, and never posts: the post window (the same
  length) runs out and the floor falls to the agent.
Reported per scenario and window: the median and the worst, over the rounds, of the run's wall
time past what the scenario must wait (the window; half of it; the post window). Measurement
only: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time

from groupchat_core import Agent, GroupChat, Human, HumanPrompt, RaiseHand, background_loop
from groupchat_core.testing import ScriptedBids


async def _never(prompt: HumanPrompt) -> None:
    await asyncio.Event().wait()


async def _hand_then_nothing(prompt: HumanPrompt) -> RaiseHand | None:
    if prompt.phase == "bid":
        return RaiseHand()
    await asyncio.Event().wait()  # the post window: never posts
    return None


def _one(scenario: str, window: float) -> float:
    """Seconds past what the scenario must wait, for one run."""
    fake = ScriptedBids({"A": [(0.6, "the agent speaks")] * 3}, shared=False)
    person = {"silent": Human("Sam"), "stuck": Human("Stu", callback=_never),
              "leaves": Human("Lea"), "no post": Human("Nop", callback=_hand_then_nothing)
              }[scenario]
    chat = GroupChat(agents=[Agent(agent_name="A", model_name=fake.model_name), person],
                     providers=fake.providers, bid_cache=False, max_loops=2,
                     human_window=window, human_post_window=window)
    try:
        start = time.perf_counter()
        future = background_loop().submit(chat.arun_record("Plan it."))
        if scenario == "leaves":
            room = chat.room
            assert room is not None
            room.wait_for(lambda s: s.phase == "bidding", 30)
            time.sleep(window / 2)  # the bench's person stays half the window, then leaves
            room.leave("Lea")
        record = future.result(timeout=window * 3 + 30)
        elapsed = time.perf_counter() - start
    finally:
        fake.close()
    assert record.turns and record.turns[0].winner == "A", record.turns
    return elapsed - (window / 2 if scenario == "leaves" else window)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    windows = [1.0, 5.0] if args.quick else [1.0, 5.0, 20.0]
    rounds = 2 if args.quick else 5
    print(f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}; {rounds} rounds")
    print("| scenario | window (s) | past the wait: median (ms) | worst (ms) |")
    print("|---|---|---|---|")
    for scenario in ("silent", "stuck", "leaves", "no post"):
        for window in windows:
            over = [_one(scenario, window) for _ in range(rounds)]
            print(f"| {scenario} | {window:g} | {statistics.median(over) * 1000:.0f} | "
                  f"{max(over) * 1000:.0f} |", flush=True)
    print(f"load {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
