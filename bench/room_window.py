"""How long a room waits for a person (issue 22: "a room never waits longer than its window
plus one second for a person").

    python -m bench.room_window                       # windows 1, 5, 20 s; 5 rounds
    python -m bench.room_window --quick               # windows 1, 5 s; 2 rounds
    python -m bench.room_window --tab-closed --reps 2 # that case only

One agent (ScriptedBids, answers at once) and one person, one turn (max_loops 2). Scenarios:
- silent: nobody plays the person (a closed tab before it was marked away): the bid window
  runs out;
- stuck: the person's callback never returns (a hung client): cancelled at the window's end;
- leaves: the person leaves at half the window (the Run page's "away", or a closed terminal);
- no post: the person raises a hand at once, wins, and never posts: the post window (the same
  length) runs out and the floor falls to the agent;
- tab closed (--tab-closed): the person's tab refreshes as the Run page's live view does (every
  REFRESH_S, through `room_seats.presence`, the function the page calls), then stops at half
  the window; with another tab open (a watcher), its refreshes tell the room the seat left once
  the tab has been silent LEAVE_AFTER_S, which ends the turn when that comes before the window's
  end; with no other tab, the window ends it. No browser: the refresh timer is a thread.
Reported per scenario and window: the median and the worst, over the rounds, of the run's wall
time past what the scenario must wait (the window; half of it; the post window). Measurement
only: nothing here asserts on time.
"""

from __future__ import annotations

import asyncio
import threading
import time

from bench import _harness as h
from groupchat_core import (
    Agent,
    GroupChat,
    Human,
    HumanPrompt,
    RaiseHand,
    Room,
    background_loop,
)
from groupchat_core.testing import ScriptedBids
from groupchat_ui.run import room_seats as seats
from groupchat_ui.run.live_view import REFRESH_S


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


def _refreshing(job_id: str, room: Room, me: str | None, table: seats.SeatTable,
                until: threading.Event, left: list[float]) -> None:
    """One open tab: what its live view tells the room every REFRESH_S, until it closes; the
    moment it tells the room a silent seat left goes into `left`."""
    while not until.wait(REFRESH_S):
        if seats.presence(job_id, room, me, table):
            left.append(time.perf_counter())


def _tab_closed(window: float, watched: bool) -> tuple[float, float | None]:
    """One run: (seconds past the bid window, seconds from the tab closing to the room being
    told it left; None when no tab was left open to tell it)."""
    fake = ScriptedBids({"A": [(0.6, "the agent speaks")] * 3}, shared=False)
    chat = GroupChat(agents=[Agent(agent_name="A", model_name=fake.model_name), Human("Tab")],
                     providers=fake.providers, bid_cache=False, max_loops=2,
                     human_window=window, human_post_window=window)
    room, table = chat.room, seats.SeatTable()
    assert room is not None
    table.register("job", chat, [seats.Seat("Tab", None, b"")])
    closed, done, left = threading.Event(), threading.Event(), list[float]()
    tabs = [threading.Thread(target=_refreshing, args=("job", room, "Tab", table, closed, left))]
    if watched:
        tabs.append(threading.Thread(target=_refreshing,
                                     args=("job", room, None, table, done, left)))
    try:
        start = time.perf_counter()
        future = background_loop().submit(chat.arun_record("Plan it."))
        room.wait_for(lambda s: s.phase == "bidding", 30)
        for tab in tabs:
            tab.start()
        time.sleep(window / 2)
        closed.set()  # the tab closes: its refreshes stop
        closed_at = time.perf_counter()
        record = future.result(timeout=window * 3 + 30)
        elapsed = time.perf_counter() - start
    finally:
        closed.set()
        done.set()
        for tab in tabs:
            tab.join()
        fake.close()
    assert record.turns and record.turns[0].winner == "A", record.turns
    return elapsed - window, (left[0] - closed_at) if left else None


def _tab_closed_table(windows: list[float], rounds: int) -> None:
    print(f"| tab closed | window (s) | closed to told left: median (s) | past the window: "
          f"median (ms) | worst (ms) |  (leave after {seats.LEAVE_AFTER_S:g} s, refresh "
          f"{REFRESH_S:g} s)")
    print("|---|---|---|---|---|")
    for watched in (True, False):
        for window in windows:
            runs = [_tab_closed(window, watched) for _ in range(rounds)]
            past = [p for p, _ in runs]
            told = [t for _, t in runs if t is not None]
            told_text = f"{h.median(told):.2f}" if told else "not told"
            print(h.row("another tab open" if watched else "no other tab", f"{window:g}",
                        told_text, f"{h.median(past) * 1000:.0f}", f"{max(past) * 1000:.0f}"),
                  flush=True)


def main() -> None:
    parser = h.options(__doc__, reps=5, quick=True)
    parser.add_argument("--tab-closed", action="store_true", help="only the tab-closed case")
    args = parser.parse_args()
    windows = [1.0, 5.0] if args.quick else [1.0, 5.0, 20.0]
    rounds = min(2, args.reps) if args.quick else args.reps
    print(f"{h.machine()}; {rounds} rounds")
    if args.tab_closed:
        _tab_closed_table(windows, rounds)
        print(f"at the end: {h.machine()}")
        return
    print("| scenario | window (s) | past the wait: median (ms) | worst (ms) |")
    print("|---|---|---|---|")
    for scenario in ("silent", "stuck", "leaves", "no post"):
        for window in windows:
            over = [_one(scenario, window) for _ in range(rounds)]
            print(h.row(scenario, f"{window:g}", f"{h.median(over) * 1000:.0f}",
                        f"{max(over) * 1000:.0f}"), flush=True)
    print(f"at the end: {h.machine()}")


if __name__ == "__main__":
    main()
