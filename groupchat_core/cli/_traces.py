"""The command line's trace switch, shared by `run` and `sweep run` (docs/integrations.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .._errors import CliError
from ._store import say


def add_trace_flags(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--trace", action=argparse.BooleanOptionalAction, default=None,
                        help=f"export OpenTelemetry traces of {what} (the standard OTEL_* "
                        "variables choose where); default: GROUPCHAT_TRACES, else on when "
                        "OTEL_TRACES_EXPORTER or an OTLP endpoint is set")
    parser.add_argument("--trace-content", action="store_true", default=None,
                        help="trace with message content (the task, each bid's message); "
                        "default: OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")


def trace_flag(args: argparse.Namespace) -> bool | None:
    """--trace / --no-trace; --trace-content alone means --trace."""
    flag: bool | None = args.trace
    return True if args.trace_content and flag is None else flag


def tracer_provider_for(flag: bool | None) -> Any:
    """The SDK tracer provider the switch asks for, or None. Asked by --trace or
    GROUPCHAT_TRACES, a missing SDK or a bad exporter is one line that stops the command;
    asked only by the OTEL_* variables (set perhaps for other tools), it is one line on stderr
    and the command goes on untraced. The SDK is imported only then."""
    from ..integrations._otel import TRACE_ENV, trace_switch, tracer_provider_from_env

    switch = trace_switch(flag)
    if switch is None:
        return None
    asked = switch in ("--trace", TRACE_ENV)
    try:
        return tracer_provider_from_env()
    except ImportError:
        need = "needs the OpenTelemetry SDK: pip install 'groupchat-lab[traces]'"
        if asked:
            raise CliError(f"{switch} {need}") from None
        say(f"note: {switch} is set, but tracing {need}; running untraced", sys.stderr)
    except CliError as exc:
        if asked:
            raise
        say(f"note: {switch} is set, but {exc}; running untraced", sys.stderr)
    return None
