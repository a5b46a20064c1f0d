"""OpenTelemetry traces of a run, after the GenAI semantic conventions (docs/integrations.md).

An Observer: the run is one span (`invoke_workflow <name>`), each turn a child (`turn <n>`),
each bid a grandchild (`invoke_agent <agent>`) with its model call below it (`chat <model>`)
and, when the bid came as a `respond` tool call, `execute_tool respond`.
A bid's span is placed when its turn completes (only then is it known whether it won), from
its recorded latency back to the moment it arrived. Text attributes pass through the core's
one masking function; message content is left out unless `capture_content=True` or
OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true (the conventions make content opt-in).
Uses only opentelemetry-api here; the SDK is needed only to export (see `tracer_provider_from_env`).
"""

from __future__ import annotations

import importlib
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._records import (
    Bid,
    BidReceived,
    Event,
    LullReached,
    RunFinished,
    RunStarted,
    SpeakerSelected,
    TurnCompleted,
    TurnStarted,
)
from .._secrets import held_secrets, mask_secrets

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer, TracerProvider

    from .._agent import Agent

TRACE_ENV = "GROUPCHAT_TRACES"
"""Set to 1 (or true/yes/on) to trace every `groupchat-lab run` as if --trace were given; 0 (or
false/no/off) keeps traces off even when the OTEL_* variables below would turn them on."""
CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The GenAI conventions' opt-in for message content in spans (`true`)."""
OTEL_SWITCHES = ("OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                 "OTEL_EXPORTER_OTLP_ENDPOINT")
INSTRUMENTATION = "groupchat_core"
_YES = {"1", "true", "yes", "on"}
_NO = {"0", "false", "no", "off"}


def trace_switch(flag: bool | None = None, environ: Mapping[str, str] | None = None
                 ) -> str | None:
    """Who turned traces on (`--trace`, GROUPCHAT_TRACES or the OTEL_* variable), or None.

    Why the OTEL_* variables count: whoever set an exporter or an OTLP endpoint for this
    process asked for traces (the standard environment). The flag wins, then GROUPCHAT_TRACES,
    then OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none (both off)."""
    if flag is not None:
        return "--trace" if flag else None
    env = os.environ if environ is None else environ
    ours = env.get(TRACE_ENV, "").strip().lower()
    if ours in _YES or ours in _NO:
        return TRACE_ENV if ours in _YES else None
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    exporter = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter == "none":
        return None
    return next((name for name in OTEL_SWITCHES if env.get(name, "").strip()), None)


def traces_wanted(flag: bool | None = None, environ: Mapping[str, str] | None = None) -> bool:
    """Whether to trace: the CLI flag when given, else the environment (trace_switch)."""
    return trace_switch(flag, environ) is not None


def content_wanted(flag: bool | None = None, environ: Mapping[str, str] | None = None) -> bool:
    """Whether spans carry message content: the flag when given, else CONTENT_ENV=true
    (opt-in, as the GenAI conventions say; their newer span_only/span_and_event count too)."""
    if flag is not None:
        return flag
    env = os.environ if environ is None else environ
    value = env.get(CONTENT_ENV, "").strip().lower()
    return value in _YES or value in {"span_only", "span_and_event"}


class TraceObserver:
    """Turns one chat's events into spans (reusable: one run span per run)."""

    wants = frozenset({"run_started", "turn_started", "bid", "speaker_selected", "lull",
                       "turn_completed", "run_finished"})

    def __init__(self, agents: Sequence[Agent] = (), *, tracer_provider: TracerProvider | None
                 = None, capture_content: bool | None = None, user_id: str | None = None,
                 attributes: dict[str, str | int | float | bool] | None = None) -> None:
        from opentelemetry import trace

        self._trace = trace
        self.tracer: Tracer = trace.get_tracer(INSTRUMENTATION, tracer_provider=tracer_provider)
        self.models = {a.agent_name: a.model_name for a in agents}
        self.secrets = held_secrets(agents)
        self.capture_content = content_wanted(capture_content)  # None: CONTENT_ENV decides
        self.user_id = user_id
        self.extra = dict(attributes or {})
        self.run_span: Span | None = None
        self.turn_span: Span | None = None
        self.run_id = ""
        self.pending: dict[int, tuple[int, Bid]] = {}

    def _text(self, value: str | None) -> str:
        return mask_secrets(value, self.secrets)

    def __call__(self, event: Event, /) -> None:
        if isinstance(event, RunStarted):
            self._run_started(event)
        elif isinstance(event, TurnStarted):
            self._end_turn()
            self.turn_span = self.tracer.start_span(
                f"turn {event.turn}", context=self._in(self.run_span),
                attributes={"groupchat.turn.index": event.turn,
                            "gen_ai.conversation.id": event.run_id})
        elif isinstance(event, BidReceived):
            # Placed when the turn completes: only then is it known whether the bid won.
            self.pending[event.bid.position] = (time.time_ns(), event.bid)
        elif isinstance(event, SpeakerSelected | LullReached) and self.turn_span is not None:
            turn = event.turn
            attrs: dict[str, Any] = {"groupchat.turn.lull": turn.lull,
                                     "groupchat.turn.reason": turn.reason or ""}
            if turn.winner is not None:
                attrs["groupchat.turn.winner"] = turn.winner
            self.turn_span.add_event(event.kind, _clean(attrs))
        elif isinstance(event, TurnCompleted) and self.turn_span is not None:
            for final in event.bids:
                arrived = self.pending.get(final.position, (time.time_ns(), final))[0]
                self.pending[final.position] = (arrived, final)
            turn = event.turn
            self.turn_span.set_attributes(_clean({
                "groupchat.turn.winner": turn.winner,
                "groupchat.turn.winning_adjusted": turn.winning_adjusted,
                "groupchat.turn.runner_up_adjusted": turn.runner_up_adjusted,
                "groupchat.turn.margin": turn.margin,
                "groupchat.turn.lull": turn.lull,
                "groupchat.turn.reason": turn.reason or "",
                "groupchat.turn.penalty_changed_winner": turn.penalty_changed_winner,
                "groupchat.turn.failed_bids": turn.failed_bids,
            }))
            self._end_turn()
        elif isinstance(event, RunFinished):
            self._run_finished(event)

    def _in(self, span: Span | None) -> Any:
        return None if span is None else self._trace.set_span_in_context(span)

    def _run_started(self, event: RunStarted) -> None:
        self._end_turn()
        if self.run_span is not None:
            self.run_span.end()
        config = event.config
        name = str(config.get("name") or "groupchat")
        self.run_id = event.run_id
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_workflow",
            "gen_ai.conversation.id": event.run_id,
            "session.id": event.run_id,
            "groupchat.run.name": self._text(name),
            "groupchat.agents": [self._text(a) for a in event.agents],
            "groupchat.threshold": config.get("threshold"),
            "groupchat.recency_penalty": config.get("recency_penalty"),
            "groupchat.recency_window": config.get("recency_window"),
            "groupchat.max_loops": config.get("max_loops"),
            "groupchat.strategy": config.get("strategy"),
            "user.id": self.user_id,
            **self.extra,
        }
        if self.capture_content:
            attrs["groupchat.task"] = self._text(event.task)
        self.run_span = self.tracer.start_span(f"invoke_workflow {self._text(name)}",
                                               attributes=_clean(attrs))

    def _bid(self, bid: Bid, end: int) -> None:
        model = self.models.get(bid.agent)
        start = end - int(max(bid.latency_ms, 0.0) * 1_000_000)
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": self._text(bid.agent),
            "gen_ai.conversation.id": self.run_id,
            "gen_ai.request.model": self._text(model) if model else None,
            "gen_ai.usage.input_tokens": bid.prompt_tokens,
            "gen_ai.usage.output_tokens": bid.completion_tokens,
            "groupchat.turn.index": bid.turn,
            "groupchat.bid.score": bid.score,
            "groupchat.bid.adjusted": bid.adjusted,
            "groupchat.bid.penalized": bid.penalized,
            "groupchat.bid.eligible": bid.eligible,
            "groupchat.bid.won": bid.winner,
            "groupchat.bid.path": bid.path,
            "groupchat.bid.outcome": bid.outcome,
            "groupchat.bid.cost_usd": bid.cost_usd,
            "groupchat.bid.latency_ms": bid.latency_ms,
            "groupchat.bid.calls": bid.calls,
            "groupchat.bid.cached": bid.cached,
            "groupchat.bid.deployment": self._text(bid.deployment) if bid.deployment else None,
        }
        if bid.error:
            attrs["error.type"] = bid.outcome
            attrs["groupchat.bid.error"] = self._text(bid.error)
        if self.capture_content:
            attrs["groupchat.bid.message"] = self._text(bid.message)
        parent = self.turn_span or self.run_span
        span = self.tracer.start_span(f"invoke_agent {self._text(bid.agent)}",
                                      context=self._in(parent), attributes=_clean(attrs),
                                      start_time=start)
        if model:
            call = self.tracer.start_span(
                f"chat {self._text(model)}", context=self._in(span), start_time=start,
                attributes=_clean({"gen_ai.operation.name": "chat",
                                   "gen_ai.request.model": self._text(model),
                                   "gen_ai.usage.input_tokens": bid.prompt_tokens,
                                   "gen_ai.usage.output_tokens": bid.completion_tokens,
                                   "error.type": bid.outcome if bid.error else None}))
            self._status(call, bid.error)
            call.end(end_time=end)
        if bid.path.startswith("tool_call") and not bid.error:
            # The bid came as a call of the forced `respond` tool (the conventions' tool span).
            self.tracer.start_span(
                "execute_tool respond", context=self._in(span), start_time=end,
                attributes={"gen_ai.operation.name": "execute_tool",
                            "gen_ai.tool.name": "respond"}).end(end_time=end)
        self._status(span, bid.error)
        span.end(end_time=end)

    def _status(self, span: Span, error: str | None) -> None:
        if error:
            from opentelemetry.trace import Status, StatusCode

            span.set_status(Status(StatusCode.ERROR, self._text(error)))

    def _end_turn(self) -> None:
        for end, bid in sorted(self.pending.values(), key=lambda p: p[1].position):
            self._bid(bid, end)
        self.pending.clear()
        if self.turn_span is not None:
            self.turn_span.end()
            self.turn_span = None

    def _run_finished(self, event: RunFinished) -> None:
        self._end_turn()
        if self.run_span is None:
            return
        record = event.record
        self.run_span.set_attributes(_clean({
            "groupchat.stop_reason": record.stop_reason or "",
            "groupchat.turns": len(record.turns),
            "gen_ai.usage.input_tokens": record.total_prompt_tokens,
            "gen_ai.usage.output_tokens": record.total_completion_tokens,
            "groupchat.cost_usd": record.total_cost_usd,
            "groupchat.calls": record.total_calls,
        }))
        if record.error:
            self.run_span.set_attribute("error.type", record.stop_reason or "error")
            self._status(self.run_span, record.error)
        self.run_span.end()
        self.run_span = None


def _clean(attrs: dict[str, Any]) -> dict[str, Any]:
    """OTel attributes take no None: drop the unknown values."""
    return {k: v for k, v in attrs.items() if v is not None}


def trace_chat(chat: Any, *, tracer_provider: TracerProvider | None = None,
               capture_content: bool | None = None, user_id: str | None = None,
               attributes: dict[str, str | int | float | bool] | None = None) -> TraceObserver:
    """Add a TraceObserver for the chat's agents to the chat and return it."""
    observer = TraceObserver(chat.agents, tracer_provider=tracer_provider,
                             capture_content=capture_content, user_id=user_id,
                             attributes=attributes)
    chat.add_observer(observer)
    return observer


def tracer_provider_from_env(environ: dict[str, str] | None = None,
                             exporters: Iterable[Any] = ()) -> Any:
    """An SDK TracerProvider exporting as the standard OTel variables say: OTEL_SERVICE_NAME
    names the service; OTEL_TRACES_EXPORTER=console prints spans (JSON) to stderr; otherwise
    (otlp, the standard default) spans go over OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT, which
    needs opentelemetry-exporter-otlp-proto-http. `exporters` are added as well (tests)."""
    import sys

    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider as SdkProvider
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

    from .._errors import CliError

    env = os.environ if environ is None else environ
    service = env.get("OTEL_SERVICE_NAME") or "groupchat-lab"
    provider = SdkProvider(resource=Resource.create({"service.name": service}))
    kind = (env.get("OTEL_TRACES_EXPORTER") or "otlp").strip().lower()
    extra = list(exporters)
    if kind == "console":
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
    elif kind == "otlp" and not extra:
        try:
            otlp = importlib.import_module(
                "opentelemetry.exporter.otlp.proto.http.trace_exporter")
        except ImportError:
            raise CliError("OTLP export needs opentelemetry-exporter-otlp-proto-http; install "
                           "it, or set OTEL_TRACES_EXPORTER=console") from None
        provider.add_span_processor(SimpleSpanProcessor(otlp.OTLPSpanExporter()))
    elif kind not in {"otlp", "none"}:
        raise CliError(f"OTEL_TRACES_EXPORTER={kind!r} is not supported here; use otlp, "
                       "console or none")
    for exporter in extra:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider
