"""What the CLI writes for scripts (`--json`), and how it ends when its reader goes away.

JSON goes to stdout as one document, ASCII only (every control character and non-ASCII
character is a `\\u` escape, so untrusted text cannot drive a terminal), NaN as null. Field
names are stable and documented in docs/engine.md ("The command line").
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from .._jsonable import plain
from .._records import BidReceived, Event, LullReached, RunStarted, SpeakerSelected
from .._secrets import ScrubFilter, install_log_filter
from .._terminal import terminal_text
from ._exits import SIGPIPE_EXIT

LOG_LEVELS = ("debug", "info", "warning", "error")


def records(frame: Any, fields: Sequence[str]) -> list[dict[str, Any]]:
    """Rows of a DataFrame as dicts with exactly `fields` (missing columns read None)."""
    rows: list[dict[str, Any]] = []
    for row in frame.to_dict(orient="records"):
        rows.append({name: plain(row.get(name)) for name in fields})
    return rows


def emit_json(data: Any) -> None:
    """One JSON document on stdout."""
    sys.stdout.write(json.dumps(plain(data), indent=2, ensure_ascii=True) + "\n")
    sys.stdout.flush()


def quiet_broken_pipe() -> int:
    """The reader of stdout went away (`... | head`): stop writing, without a traceback (also
    none at exit, when Python flushes stdout again)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return SIGPIPE_EXIT


def setup_logging(level: str | None, verbose: int) -> None:
    """--log-level NAME, or -v (info) / -vv (debug): the engine's log on stderr, scrubbed of
    keys. Without either, only warnings and errors are shown (Python's default)."""
    if level is None and not verbose:
        return
    name = level or ("debug" if verbose > 1 else "info")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_TerminalFormatter("%(levelname)s %(name)s: %(message)s"))
    handler.addFilter(ScrubFilter())
    logger = logging.getLogger("groupchat_core")
    install_log_filter(logger)
    logger.addHandler(handler)
    logger.setLevel(name.upper())
    logger.propagate = False


class _TerminalFormatter(logging.Formatter):
    """Log lines carry model output and names: their control characters are escaped."""

    def format(self, record: logging.LogRecord) -> str:
        return terminal_text(super().format(record), multiline=True)


logger = logging.getLogger("groupchat_core.cli")


def log_events(event: Event) -> None:
    """Observer for `run` under --log-level / -v: turns at info, every bid at debug."""
    if isinstance(event, RunStarted):
        logger.info("run %s: agents %s", event.run_id, ", ".join(event.agents))
    elif isinstance(event, BidReceived):
        b = event.bid
        logger.debug("turn %d bid %s: score=%.3f adjusted=%.3f path=%s latency=%.0f ms%s",
                     b.turn, b.agent, b.score, b.adjusted, b.path, b.latency_ms,
                     f" error={b.error}" if b.error else "")
    elif isinstance(event, SpeakerSelected):
        logger.info("turn %d: %s speaks (%s)", event.turn.turn, event.turn.winner,
                    event.turn.reason)
    elif isinstance(event, LullReached):
        logger.info("turn %d: lull, no bid cleared the threshold", event.turn.turn)
