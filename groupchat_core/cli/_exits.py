"""The CLI's exit statuses (the README's "Exit status" table; one test per status), and SIGTERM.

SIGTERM ends a command as Ctrl-C does: a run or sweep in flight is cancelled and recorded
`cancelled`, the process ends with status 143 (128 + 15, what a shell reports for SIGTERM) and no
traceback. `kill PID`, `timeout`, systemd and container stops send SIGTERM first.

The handler raises `Terminated`, a KeyboardInterrupt, so every path that already cleans up after
Ctrl-C (the engine's relay loop, the sweep scheduler, the run's recorder) does the same for it.
It raises once: a second SIGTERM during that clean-up is ignored, so the record is still written.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

OK = 0
FAILED = 1  # the command ran, its outcome is a failure: a chat whose every bid failed, a sweep
#             stopped by a cap, by `sweep stop` or with failed cells, a declined confirmation
ERROR_EXIT = 2  # bad input or a refused action: one line `error: ...` on stderr
INTERRUPT_EXIT = 130  # 128 + SIGINT (Ctrl-C)
SIGPIPE_EXIT = 141  # 128 + SIGPIPE: stdout's reader went away (`| head`)
SIGTERM_EXIT = 143  # 128 + SIGTERM


class Terminated(KeyboardInterrupt):
    """The process was sent SIGTERM."""


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While inside: SIGTERM raises Terminated (once) in the main thread. Elsewhere (a thread,
    where Python cannot set handlers) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired = False

    def on_term(signum: int, frame: FrameType | None) -> Any:
        nonlocal fired
        if not fired:
            fired = True
            raise Terminated

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
