"""verbose=True: log bids, scores and stop events; print each posted message as a panel."""

from __future__ import annotations

import logging

from .._records import BidReceived, Event, LullReached, MessagePosted, RunFinished, SpeakerSelected
from .._secrets import ScrubFilter, install_log_filter
from .._terminal import terminal_text

logger = logging.getLogger("groupchat_core")


class VerboseConsole:
    """An observer like any other: the engine itself never prints."""

    def __init__(self) -> None:
        from rich.console import Console

        self._console = Console()
        if not logger.handlers and not logging.getLogger().handlers:
            handler = logging.StreamHandler()  # verbose asked to see the log: give it a sink
            handler.setFormatter(logging.Formatter("%(levelname)s groupchat: %(message)s"))
            handler.addFilter(ScrubFilter())  # no key reaches the terminal, whoever logs
            logger.addHandler(handler)
        install_log_filter(logger)  # every engine log line is scrubbed (see _secrets.py)
        if logger.getEffectiveLevel() > logging.INFO:
            logger.setLevel(logging.INFO)

    def __call__(self, event: Event) -> None:
        if isinstance(event, BidReceived):
            b = event.bid
            logger.info("turn %d bid %s: score=%.3f adjusted=%.3f%s", b.turn, b.agent, b.score,
                        b.adjusted, f" error={b.error}" if b.error else "")
        elif isinstance(event, SpeakerSelected):
            logger.info("turn %d: %s speaks (%s)", event.turn.turn, event.turn.winner,
                        event.turn.reason)
        elif isinstance(event, LullReached):
            logger.info("turn %d: lull, no bid cleared the threshold", event.turn.turn)
        elif isinstance(event, RunFinished):
            logger.info("run %s stopped: %s", event.run_id, event.record.stop_reason)
        elif isinstance(event, MessagePosted):
            self._panel(event)

    def _panel(self, event: MessagePosted) -> None:
        from rich.markup import escape
        from rich.panel import Panel

        m = event.message
        content = escape(terminal_text(m.content, multiline=True))  # no live control characters
        if m.score is None:
            self._console.print(Panel(content, title="User task", border_style="green"))
        else:
            title = f"{escape(terminal_text(m.role))} (score {m.score:.2f})"
            self._console.print(Panel(content, title=title, border_style="blue"))
