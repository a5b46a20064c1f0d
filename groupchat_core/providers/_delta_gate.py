"""Between a streamed bid and its observers: secrets masked, a flood coalesced, the loop shared.

Why: a provider may echo a key inside the reply, and may send 20,000 one-character deltas. Each
delta reaching observers re-parsed the whole partial JSON and fed every observer on the shared
loop (a flood stalled it 2 s and the bid timed out). So:

- at most EVENTS_PER_SECOND delta events per bid reach the observers; each carries the whole
  message so far, so batching loses no text, and the last (`final`) one is always sent;
- each event's message is masked (_secrets.mask_secrets, over every secret the process holds) and,
  until the final one, holds back a tail that may be the start of a secret: the longest tail
  that begins a held secret, and the trailing word (up to MAX_WORD_HOLD characters) for Bearer
  tokens and sk-... shapes, so a key split across deltas is never shown in part. (Holding back
  the longest secret's length instead kept a short reply from streaming at all while any key of
  40 characters was held.)
- `pause` yields to the loop every YIELD_EVERY seconds of reading: litellm parses chunks that
  are already buffered without awaiting, so a fast stream would otherwise never let go.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable

from .._secrets import MIN_SECRET_LENGTH, mask_secrets

EVENTS_PER_SECOND = 20  # delta events per bid toward observers
YIELD_EVERY = 0.005  # seconds of stream reading between yields to the shared loop
MAX_WORD_HOLD = 1_000  # characters of a trailing word held back (a JWT bearer token fits)

Sink = Callable[[float | None, str], None]


def _trailing_word(text: str) -> int:
    """Characters of the word `text` ends with (0 after whitespace), at most MAX_WORD_HOLD."""
    tail = text[-MAX_WORD_HOLD:]
    if not tail or tail[-1].isspace():
        return 0
    return len(tail.split()[-1])


def _secret_start(text: str, secrets: Iterable[str]) -> int:
    """Characters of the longest tail of `text` that is the beginning of one of `secrets` (a
    key the next delta may complete). A tail that begins no secret can never become part of
    one, so nothing else needs holding."""
    longest = 0
    for secret in secrets:
        first = secret[0]
        start = max(0, len(text) - len(secret) + 1)
        at = text.find(first, start)
        while at != -1 and len(text) - at > longest:
            if secret.startswith(text[at:]):
                longest = len(text) - at
                break
            at = text.find(first, at + 1)
    return longest


class DeltaGate:
    """Wraps one bid's delta sink: masked, tail held back, at most EVENTS_PER_SECOND."""

    def __init__(self, sink: Sink, secrets: Iterable[str],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._sink, self._clock = sink, clock
        self._secrets = [s for s in secrets if len(s) >= MIN_SECRET_LENGTH]
        self._next = 0.0
        self._sent: tuple[float | None, str] | None = None
        self._yielded = clock()

    def due(self) -> bool:
        """Whether the budget allows an event now (ask before parsing the partial bid)."""
        return self._clock() >= self._next

    def send(self, score: float | None, message: str, *, final: bool = False) -> None:
        """Send what may be shown of (score, message so far); a repeat is dropped."""
        shown = mask_secrets(message, self._secrets)
        if not final:
            hold = max(_secret_start(shown, self._secrets), _trailing_word(shown))
            shown = shown[: len(shown) - hold]
        self._next = self._clock() + 1.0 / EVENTS_PER_SECOND
        if (score, shown) != self._sent:
            self._sent = (score, shown)
            self._sink(score, shown)

    async def pause(self) -> None:
        """Yield to the loop when this stream has read for YIELD_EVERY seconds straight."""
        now = self._clock()
        if now - self._yielded >= YIELD_EVERY:
            await asyncio.sleep(0)
            self._yielded = self._clock()


def gated_sink(sink: Sink, secrets: Iterable[str]) -> Sink:
    """`sink` behind a DeltaGate, for a provider that calls its request's sink itself (any
    provider but litellm, whose stream reader gates its own): every message masked with its
    tail held back, at most EVENTS_PER_SECOND events (the bid event that follows is whole)."""
    gate = DeltaGate(sink, secrets)

    def send(score: float | None, message: str) -> None:
        if gate.due():
            gate.send(score, message)

    return send
