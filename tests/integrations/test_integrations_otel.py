"""OpenTelemetry traces of a run (issue 23 item 1): the span tree and its GenAI attributes
through the SDK's in-memory exporter, no key or unasked content in any attribute, and the
CLI's --trace / GROUPCHAT_TRACES switch exporting through the standard OTEL_* variables."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from groupchat_core import Agent, Bid, BidReceived, GroupChat, RunStarted, TurnStarted
from groupchat_core.cli import main
from groupchat_core.integrations import TraceObserver, trace_chat, trace_switch
from tests.helpers import ROOT as REPO

DEBATE = str(REPO / "examples" / "debate.yaml")
KEY = "sk-otel-test-key-0123456789abcdef"


pytestmark = pytest.mark.usefixtures("fresh_engines")


def provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    return tracer_provider, exporter


def traced_run(**kwargs: object) -> tuple[GroupChat, list]:
    tracer_provider, exporter = provider()
    chat = GroupChat(agents=[Agent(agent_name="A", model_name="sim/eager", api_key=KEY),
                             Agent(agent_name="B", model_name="sim/contrarian")], max_loops=3)
    trace_chat(chat, tracer_provider=tracer_provider, user_id="alice", **kwargs)
    chat.run("Should we adopt AI?")
    return chat, list(exporter.get_finished_spans())


def every_value(spans: list) -> str:
    return json.dumps([[s.name, dict(s.attributes), [dict(e.attributes) for e in s.events],
                        s.status.description] for s in spans], default=str)


def test_a_run_is_one_trace_run_turns_bids_and_model_calls():
    chat, spans = traced_run()
    record = chat.last_run
    assert record is not None
    by_id = {s.context.span_id: s for s in spans}
    roots = [s for s in spans if s.parent is None]
    assert [r.name for r in roots] == ["invoke_workflow dynamic-groupchat"]
    root = roots[0]
    assert {s.context.trace_id for s in spans} == {root.context.trace_id}
    turns = [s for s in spans if s.name.startswith("turn ")]
    bids = [s for s in spans if s.name.startswith("invoke_agent ")]
    calls = [s for s in spans if s.name.startswith("chat ")]
    assert [t.name for t in turns] == [f"turn {t.turn}" for t in record.turns]
    assert all(t.parent.span_id == root.context.span_id for t in turns)
    assert len(bids) == len(record.bids) == len(calls)
    for span in bids:
        parent = by_id[span.parent.span_id]
        assert parent.name == f"turn {span.attributes['groupchat.turn.index']}"
    for call in calls:
        bid_span = by_id[call.parent.span_id]
        assert bid_span.name.startswith("invoke_agent ")
        assert call.attributes["gen_ai.operation.name"] == "chat"
        assert call.name == f"chat {bid_span.attributes['gen_ai.request.model']}"
    assert len(spans) == 1 + len(turns) + len(bids) + len(calls)
    # One conversation id (the run id) across the run; session.id and user.id on the root.
    assert {s.attributes["gen_ai.conversation.id"] for s in [root, *turns, *bids]} == {
        record.run_id}
    assert root.attributes["session.id"] == record.run_id
    assert root.attributes["user.id"] == "alice"
    assert root.attributes["gen_ai.operation.name"] == "invoke_workflow"
    assert root.attributes["groupchat.threshold"] == 0.5
    assert root.attributes["groupchat.max_loops"] == 3
    assert root.attributes["groupchat.stop_reason"] == record.stop_reason
    assert tuple(root.attributes["groupchat.agents"]) == ("A", "B")


def test_a_bid_span_carries_model_agent_path_outcome_and_cost():
    chat, spans = traced_run()
    record = chat.last_run
    assert record is not None
    bids = [s for s in spans if s.name.startswith("invoke_agent ")]
    for span, bid in zip(bids, record.bids, strict=True):
        attrs = span.attributes
        assert span.name == f"invoke_agent {bid.agent}"
        assert attrs["gen_ai.operation.name"] == "invoke_agent"
        assert attrs["gen_ai.agent.name"] == bid.agent
        assert attrs["gen_ai.request.model"] == {"A": "sim/eager", "B": "sim/contrarian"}[
            bid.agent]
        assert attrs["groupchat.bid.path"] == bid.path == "simulation"
        assert attrs["groupchat.bid.outcome"] == bid.outcome
        assert attrs["groupchat.bid.won"] == bid.winner
        assert attrs["groupchat.bid.score"] == bid.score
        assert attrs["groupchat.bid.adjusted"] == bid.adjusted
        assert attrs["groupchat.bid.latency_ms"] == bid.latency_ms
        assert "error.type" not in attrs
    turn = next(s for s in spans if s.name == "turn 1")
    assert turn.attributes["groupchat.turn.winner"] == record.turns[0].winner
    assert [e.name for e in turn.events] == ["speaker_selected"]


def test_no_key_and_no_content_unless_asked():
    chat, spans = traced_run()
    text = every_value(spans)
    assert KEY not in text
    record = chat.last_run
    assert record is not None
    assert all(m.content not in text for m in record.messages if m.content)
    _, asked = traced_run(capture_content=True)
    winners = [s for s in asked if s.attributes.get("groupchat.bid.won")]
    assert winners and all(s.attributes["groupchat.bid.message"] for s in winners)
    assert KEY not in every_value(asked)


def test_a_bid_by_tool_call_has_an_execute_tool_respond_span():
    tracer_provider, exporter = provider()
    observer = TraceObserver([Agent(agent_name="A", model_name="openai/gpt-4o")],
                             tracer_provider=tracer_provider)
    observer(RunStarted(run_id="r1", task="t", agents=["A"], config={"name": "x"}))
    observer(TurnStarted(run_id="r1", turn=1))
    observer(BidReceived(run_id="r1", bid=Bid(
        turn=1, agent="A", position=0, score=0.7, adjusted=0.7, penalized=False,
        eligible=True, winner=False, message="hi", latency_ms=5.0, path="tool_call",
        outcome="read")))
    observer(TurnStarted(run_id="r1", turn=2))
    spans = {s.name: s for s in exporter.get_finished_spans()}
    tool = spans["execute_tool respond"]
    assert tool.parent.span_id == spans["invoke_agent A"].context.span_id
    assert tool.attributes["gen_ai.tool.name"] == "respond"
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"


def test_a_key_inside_a_bid_error_is_masked():
    tracer_provider, exporter = provider()
    observer = TraceObserver([Agent(agent_name="A", model_name="openai/gpt-4o", api_key=KEY)],
                             tracer_provider=tracer_provider, capture_content=True)
    observer(RunStarted(run_id="r1", task=f"task {KEY}", agents=["A"], config={"name": "x"}))
    observer(TurnStarted(run_id="r1", turn=1))
    observer(BidReceived(run_id="r1", bid=Bid(
        turn=1, agent="A", position=0, score=0.0, adjusted=0.0, penalized=False,
        eligible=False, winner=False, message=f"said {KEY}", latency_ms=5.0,
        path="tool_call", error=f"401 bad key {KEY}", outcome="failed")))
    observer(TurnStarted(run_id="r1", turn=2))  # ends turn 1 and places its bids
    spans = list(exporter.get_finished_spans())
    bid = next(s for s in spans if s.name == "invoke_agent A")
    assert bid.attributes["error.type"] == "failed"
    assert bid.status.status_code.name == "ERROR"
    assert "***" in bid.attributes["groupchat.bid.error"]
    assert KEY not in every_value(spans)


def test_run_trace_flag_exports_through_the_otel_environment(capsys, monkeypatch):
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "lab-under-test")
    assert main(["run", DEBATE, "--task", "Go?", "--quiet", "--no-store", "--trace"]) == 0
    err = capsys.readouterr().err
    assert '"name": "invoke_workflow ai-diagnosis-debate"' in err
    assert '"service.name": "lab-under-test"' in err
    assert '"gen_ai.operation.name": "invoke_agent"' in err


def test_traces_are_off_by_default_and_on_by_groupchat_traces(capsys, monkeypatch):
    assert main(["run", DEBATE, "--task", "Go?", "--quiet", "--no-store"]) == 0
    assert "invoke_workflow" not in capsys.readouterr().err
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    monkeypatch.setenv("GROUPCHAT_TRACES", "0")  # ours wins over the OTEL_* switch
    assert main(["run", DEBATE, "--task", "Go?", "--quiet", "--no-store"]) == 0
    assert "invoke_workflow" not in capsys.readouterr().err
    monkeypatch.setenv("GROUPCHAT_TRACES", "1")
    assert main(["run", DEBATE, "--task", "Go?", "--quiet", "--no-store"]) == 0
    assert "invoke_workflow" in capsys.readouterr().err
    assert main(["run", DEBATE, "--task", "Go?", "--quiet", "--no-store", "--no-trace"]) == 0
    assert "invoke_workflow" not in capsys.readouterr().err


def test_the_standard_otel_environment_turns_traces_on(capsys, monkeypatch):
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    assert main(["run", DEBATE, "--task", "Go?", "--quiet", "--no-store"]) == 0
    assert '"name": "invoke_workflow ai-diagnosis-debate"' in capsys.readouterr().err
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    assert main(["run", DEBATE, "--task", "Go?", "--quiet", "--no-store"]) == 0
    assert "invoke_workflow" not in capsys.readouterr().err
    endpoint = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}
    assert trace_switch(environ=endpoint) == "OTEL_EXPORTER_OTLP_ENDPOINT"
    assert trace_switch(environ={"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://x/v1/traces"}
                        ) == "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
    assert trace_switch(environ={**endpoint, "OTEL_TRACES_EXPORTER": "none"}) is None
    assert trace_switch(environ={**endpoint, "OTEL_SDK_DISABLED": "true"}) is None
    assert trace_switch(environ={"OTEL_SERVICE_NAME": "lab"}) is None  # names, never asks
    assert trace_switch(False, endpoint) is None


def test_otel_variables_without_the_sdk_are_one_note_and_the_run_goes_on(capsys, monkeypatch):
    """The OTEL_* variables may be set for other tools: without the SDK the run still runs,
    and one line says how to get traces; asked by --trace, the same line stops the run."""
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.resources", None)  # as if absent
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    assert main(["run", DEBATE, "--task", "Go?", "--quiet", "--no-store"]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert [line for line in err.splitlines() if "trac" in line] == [
        "note: OTEL_EXPORTER_OTLP_ENDPOINT is set, but tracing needs the OpenTelemetry SDK: "
        "pip install 'groupchat-lab[traces]'; running untraced"]
    assert main(["run", DEBATE, "--task", "Go?", "--quiet", "--no-store", "--trace"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: --trace needs the OpenTelemetry SDK: pip install 'groupchat-lab[traces]'"]


def test_message_content_by_the_genai_variable_or_trace_content(capsys, monkeypatch):
    _, spans = traced_run()
    assert not any("groupchat.bid.message" in s.attributes for s in spans)
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    _, spans = traced_run()
    assert any(s.attributes.get("groupchat.bid.message") for s in spans)
    assert traced_run(capture_content=False)[1][-1].attributes.get("groupchat.task") is None
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    task = "Adopt the purple plan?"
    assert main(["run", DEBATE, "--task", task, "--quiet", "--no-store"]) == 0
    assert task not in capsys.readouterr().err
    assert main(["run", DEBATE, "--task", task, "--quiet", "--no-store",
                 "--trace-content"]) == 0
    err = capsys.readouterr().err
    assert f'"groupchat.task": "{task}"' in err and '"groupchat.bid.message"' in err


def test_an_unknown_exporter_is_one_line_before_the_run(capsys, monkeypatch):
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "zipkin")
    assert main(["run", DEBATE, "--task", "Go?", "--quiet", "--trace"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: OTEL_TRACES_EXPORTER='zipkin' is not supported here; use otlp, "
                   "console or none"]


def test_the_engine_imports_neither_the_sdk_nor_mlflow():
    code = ("import sys, groupchat_core, groupchat_core.cli; "
            "print(sorted(m for m in sys.modules if m.startswith(('opentelemetry.sdk', "
            "'mlflow', 'groupchat_core.integrations'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=REPO).stdout
    assert out.strip() == "[]"


def test_otlp_without_its_exporter_package_is_one_line(capsys, monkeypatch):
    """OTLP (the standard default exporter) needs opentelemetry-exporter-otlp-proto-http,
    which the [traces] extra does not pull in: a missing one is named, before the run."""
    from groupchat_core.integrations import _otel

    real = _otel.importlib.import_module

    def missing(name: str, *args: object) -> object:
        if name.startswith("opentelemetry.exporter.otlp"):
            raise ImportError(name)
        return real(name, *args)

    monkeypatch.setattr(_otel.importlib, "import_module", missing)
    monkeypatch.delenv("OTEL_TRACES_EXPORTER", raising=False)
    assert main(["run", DEBATE, "--task", "Go?", "--quiet", "--trace"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: OTLP export needs opentelemetry-exporter-otlp-proto-http; install it, or set "
        "OTEL_TRACES_EXPORTER=console"]


def test_otlp_http_export_reaches_a_receiver_on_loopback(capsys, monkeypatch):
    """The standard default exporter (OTLP/HTTP, protobuf) to OTEL_EXPORTER_OTLP_ENDPOINT: a
    receiver started here gets the whole run, one trace, under the service's name."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    received: list[tuple[str, bytes]] = []

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((self.path, body))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        monkeypatch.delenv("OTEL_TRACES_EXPORTER", raising=False)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT",
                           f"http://127.0.0.1:{server.server_address[1]}")
        monkeypatch.setenv("OTEL_SERVICE_NAME", "lab-otlp")
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        assert main(["run", DEBATE, "--task", "Go?", "--quiet", "--trace"]) == 0
    finally:
        server.shutdown()
        server.server_close()
    run_id = capsys.readouterr().err.strip().splitlines()[-1].removeprefix("run ")
    assert received and {path for path, _ in received} == {"/v1/traces"}
    spans, services = [], set()
    for _, body in received:
        request = ExportTraceServiceRequest.FromString(body)
        for resource in request.resource_spans:
            services.update(a.value.string_value for a in resource.resource.attributes
                            if a.key == "service.name")
            for scope in resource.scope_spans:
                spans.extend(scope.spans)
    assert services == {"lab-otlp"}
    names = [s.name for s in spans]
    assert names.count("invoke_workflow ai-diagnosis-debate") == 1
    assert any(n.startswith("invoke_agent ") for n in names)
    assert len({s.trace_id for s in spans}) == 1
    root = next(s for s in spans if s.name.startswith("invoke_workflow"))
    attrs = {a.key: a.value.string_value for a in root.attributes}
    assert attrs["gen_ai.conversation.id"] == run_id


def test_the_service_is_groupchat_lab_unless_named_and_none_exports_nothing():
    from groupchat_core.integrations import tracer_provider_from_env

    exporter = InMemorySpanExporter()
    tracer_provider = tracer_provider_from_env({}, exporters=[exporter])
    tracer_provider.get_tracer("t").start_span("x").end()
    (span,) = exporter.get_finished_spans()
    assert span.resource.attributes["service.name"] == "groupchat-lab"
    quiet = tracer_provider_from_env({"OTEL_TRACES_EXPORTER": "none"})
    assert quiet._active_span_processor._span_processors == ()
