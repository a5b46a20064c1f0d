"""Traces of runs started from the dashboard: the Settings page's switch turns on the same
OpenTelemetry tracing as the CLI's `run --trace` (groupchat_core.integrations), for runs this
browser session starts, with spans sent where the server's standard OTEL_* variables say.

One tracer provider serves the whole server (built on first use, from the environment the
server was started with), so every traced run goes to the same place and nothing is rebuilt per
run. Pure: no streamlit here (the page keeps the switch in session state under TRACE_KEY).
"""

from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Mapping
from typing import Any

TRACE_KEY = "trace_runs"  # session state: the Settings switch, read when the Run page starts
INSTALL = "pip install 'groupchat-lab[traces]'"
DEFAULT_OTLP = "http://localhost:4318"  # the OTLP/HTTP default of the OpenTelemetry SDK


def tracing_available() -> bool:
    """Whether the OpenTelemetry SDK (the [traces] extra) is installed."""
    try:
        return importlib.util.find_spec("opentelemetry.sdk") is not None
    except ModuleNotFoundError:  # not even the opentelemetry namespace
        return False


def trace_destination(environ: Mapping[str, str] | None = None) -> str:
    """Where spans go, in words, from the standard variables (as tracer_provider_from_env
    reads them)."""
    env = os.environ if environ is None else environ
    service = env.get("OTEL_SERVICE_NAME") or "groupchat-lab"
    kind = (env.get("OTEL_TRACES_EXPORTER") or "otlp").strip().lower()
    if kind == "console":
        where = "printed as JSON on the server's standard error (OTEL_TRACES_EXPORTER=console)"
    elif kind == "none":
        where = "nowhere: OTEL_TRACES_EXPORTER=none drops them"
    elif kind == "otlp":
        endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or (
            (env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or DEFAULT_OTLP).rstrip("/") + "/v1/traces")
        where = f"over OTLP/HTTP to {endpoint}"
    else:
        where = f"nowhere: OTEL_TRACES_EXPORTER={kind!r} is not supported (use otlp or console)"
    return f"Spans of service {service!r} go {where}."


@functools.cache
def server_tracer_provider() -> Any:
    """The server's one tracer provider, from the OTEL_* environment."""
    from groupchat_core.integrations import tracer_provider_from_env

    return tracer_provider_from_env()


def sweep_tracing(user: str | None) -> Any:
    """A sweep's cell tracer (each cell's chat traced with its sweep id and cell, locally or on
    a Ray worker, as `sweep run --trace` does), exporting through the server's provider."""
    from groupchat_core.integrations import CellTracer

    return CellTracer(server_tracer_provider(), user_id=user)


def trace_run(chat: Any, user: str | None) -> None:
    """Add the trace observer to a chat about to start (the run's owner as `user.id`)."""
    from groupchat_core.integrations import trace_chat

    trace_chat(chat, tracer_provider=server_tracer_provider(), user_id=user)
