"""Bridges to the tools people already run (docs/integrations.md): OpenTelemetry traces of a
run, and MLflow experiment tracking of a run or a sweep. Their libraries are optional and
imported only when a function here is called; `import groupchat_core` never imports this.

    from groupchat_core.integrations import trace_chat, export_run_mlflow
"""

from ._cell_traces import CellTracer
from ._mlflow import export_mlflow, export_run_mlflow, export_sweep_mlflow
from ._otel import (
    CONTENT_ENV,
    TRACE_ENV,
    TraceObserver,
    content_wanted,
    trace_chat,
    trace_switch,
    tracer_provider_from_env,
    traces_wanted,
)

__all__ = ["CONTENT_ENV", "TRACE_ENV", "CellTracer", "TraceObserver", "content_wanted",
           "export_mlflow", "export_run_mlflow", "export_sweep_mlflow", "trace_chat",
           "trace_switch", "tracer_provider_from_env", "traces_wanted"]
