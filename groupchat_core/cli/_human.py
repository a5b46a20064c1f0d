"""`run --human NAME`: a person seated in the terminal (issue 22).

The person is a `Human` whose callback reads the terminal: each turn it shows the last message,
the bids so far (more as they arrive) and the time left, then takes one line. Enter passes; `h`
raises a hand (kept across turns until they win), `l` lowers it; `0.7 some words` bids 0.7 with
a draft. A winner types their message (Enter keeps their draft). Everything shown is untrusted
text made inert (`terminal_text`); prompts go to stderr, so stdout still carries only the result.

Lines are read by one daemon thread into the loop's queue, so a window's end never leaves a
reader blocked on a line meant for the next prompt; end of input passes every later turn.
"""

from __future__ import annotations

import asyncio
import re
import sys
import threading
from typing import TextIO

from .._terminal import terminal_text
from ..engine._humans import (
    Human,
    HumanAction,
    HumanPrompt,
    LowerHand,
    Pass,
    Post,
    RaiseHand,
    SetBid,
)
from ..engine._room import RoomSnapshot

HELP = "Enter: pass | h: raise your hand | l: lower it | 0.7 [draft]: bid 0.7"
_BID = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)(?:\s+(.*))?\s*$", re.DOTALL)
PREVIEW_CHARS = 120


def parse_line(line: str) -> HumanAction | None:
    """A typed line as an action: "" passes, h / l the hand, "0.7 words" a bid; None when it
    is none of these (the prompt says so and asks again)."""
    text = line.strip()
    if not text:
        return Pass()
    if text.lower() in ("h", "hand"):
        return RaiseHand()
    if text.lower() in ("l", "lower"):
        return LowerHand()
    found = _BID.match(text)
    if found is None:
        return None
    score = float(found.group(1))
    if not 0.0 <= score <= 1.0:
        return None
    return SetBid(score, (found.group(2) or "").strip())


def _short(text: str) -> str:
    one = terminal_text(text)  # one line, controls escaped
    return one if len(one) <= PREVIEW_CHARS else one[:PREVIEW_CHARS] + " …"


class TerminalPlayer:
    """The callback of the person at the terminal: reads `stdin`, writes prompts to `out`."""

    def __init__(self, name: str, stdin: TextIO | None = None, out: TextIO | None = None) -> None:
        self.name = name
        self.stdin = stdin if stdin is not None else sys.stdin
        self.out = out if out is not None else sys.stderr
        self._lines: asyncio.Queue[str | None] | None = None
        self._shown: set[tuple[int, str]] = set()
        self._ended = False

    def human(self) -> Human:
        return Human(self.name, description="a person at the terminal", callback=self)

    def _say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def _start_reader(self) -> asyncio.Queue[str | None]:
        if self._lines is None:
            loop = asyncio.get_running_loop()
            lines: asyncio.Queue[str | None] = asyncio.Queue()
            self._lines = lines

            def read() -> None:
                for line in iter(self.stdin.readline, ""):
                    loop.call_soon_threadsafe(lines.put_nowait, line.rstrip("\n"))
                loop.call_soon_threadsafe(lines.put_nowait, None)  # end of input

            threading.Thread(target=read, name="groupchat-terminal", daemon=True).start()
        return self._lines

    async def _line(self) -> str | None:
        if self._ended:
            return None
        line = await self._start_reader().get()
        if line is None:
            self._ended = True
        return line

    def _show_bids(self, snap: RoomSnapshot) -> None:
        for bid in snap.bids:
            key = (snap.turn, bid.name)
            if bid.kind != "agent" or key in self._shown:
                continue
            self._shown.add(key)
            score = "?" if bid.score is None else f"{bid.score:.2f}"
            left = "" if snap.time_left is None else f"  ({snap.time_left:.0f} s left)"
            self._say(f"  bid  {terminal_text(bid.name)} {score}: {_short(bid.message)}{left}")

    async def __call__(self, prompt: HumanPrompt) -> HumanAction | None:
        if prompt.phase == "post":
            return await self._post(prompt)
        if prompt.phase != "bid":
            return None
        room = prompt.room
        snap = room.snapshot()
        last = snap.messages[-1] if snap.messages else None
        self._say(f"--- turn {prompt.turn}: {terminal_text(self.name)}, "
                  f"{prompt.time_left():.0f} s to bid"
                  + (" (your hand is up)" if self.name in snap.hands else ""))
        if last is not None:
            self._say(f"  last {terminal_text(last[0])}: {_short(last[1])}")
        self._show_bids(snap)
        unsubscribe = room.subscribe(self._show_bids)  # the agents' bids as they come in
        try:
            while True:
                self._say(f"  [{HELP}] >")
                line = await self._line()
                if line is None:  # end of input: a pass now, never a wait for the window
                    return Pass()
                action = parse_line(line)
                if isinstance(action, LowerHand):
                    room.submit(self.name, action)
                    self._say("  hand lowered")
                    continue
                if action is not None:
                    return action
                self._say(f"  not understood: {_short(line)}")
        finally:
            unsubscribe()

    async def _post(self, prompt: HumanPrompt) -> HumanAction | None:
        draft = f" (Enter keeps your draft: {_short(prompt.draft)})" if prompt.draft else ""
        self._say(f"--- you won turn {prompt.turn}: type your message, "
                  f"{prompt.time_left():.0f} s{draft} >")
        line = await self._line()
        return Post("" if line is None else line)  # end of input: the draft, if any
