"""Traces of sweep cells: the sweeps' CellTracing seam, implemented with trace_chat.

Why its own object: a cell's chat is built inside the one cell runner (sweeps/_executor.CellRun),
locally or on a Ray worker, so the tracing must travel with the cell. A CellTracer pickles
without its tracer provider (an SDK provider holds locks and exporters); a worker then builds
one provider per process from its own OTEL_* environment, as `run --trace` would.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ._otel import trace_chat, tracer_provider_from_env

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

logger = logging.getLogger("groupchat_core")
_worker_provider: list[Any] = []  # this process's provider from the environment, built once


class CellTracer:
    """Adds a TraceObserver with the cell's attributes (`groupchat.sweep.id`, `.cell`) to each
    cell's chat. `tracer_provider` None: the process's provider from the OTEL_* variables."""

    def __init__(self, tracer_provider: TracerProvider | None = None, *,
                 capture_content: bool | None = None, user_id: str | None = None) -> None:
        self.tracer_provider = tracer_provider
        self.capture_content = capture_content
        self.user_id = user_id

    def __call__(self, chat: Any, attributes: dict[str, str | int | float | bool], /) -> None:
        trace_chat(chat, tracer_provider=self.tracer_provider or _process_provider(),
                   capture_content=self.capture_content, user_id=self.user_id,
                   attributes=attributes)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "tracer_provider": None}  # stays with the driver


def _process_provider() -> TracerProvider | None:
    """One SDK provider per worker process; None (the global, a no-op unless set) when this
    process cannot export, said once in the log: a cell is never failed for its traces."""
    if not _worker_provider:
        try:
            _worker_provider.append(tracer_provider_from_env())
        except Exception as exc:  # no SDK, an unknown exporter: one log line, no traces
            logger.warning("sweep cell traces off in this process: %s", exc)
            _worker_provider.append(None)
    provider: TracerProvider | None = _worker_provider[0]
    return provider
