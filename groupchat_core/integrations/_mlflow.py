"""Experiment tracking: a recorded run, or a sweep, logged to an MLflow tracking store.

A run becomes one MLflow run: parameters (threshold, recency, max_loops, the models), the
analysis metrics (speaker balance, totals; each turn's winning score and margin as steps), tags
(the run id, whether it was simulated) and artifacts (the bid log CSV, the JSON bundle). A
sweep becomes a parent run with one child per cell. Uses MlflowClient on the given tracking
URI only (no global MLflow state); mlflow-skinny is imported when called, never at startup.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._secrets import held_secrets, mask_secrets

if TYPE_CHECKING:
    from ..store import RunStore

DEFAULT_EXPERIMENT = "groupchat-lab"
PARAMS = ("threshold", "recency_penalty", "recency_window", "max_loops", "seed", "output_type")


def _client(tracking_uri: str) -> Any:
    try:
        from mlflow.tracking import MlflowClient
    except ImportError:
        from .._errors import CliError

        raise CliError("MLflow export needs mlflow-skinny: pip install mlflow-skinny") from None
    return MlflowClient(tracking_uri=tracking_uri)


def _experiment(client: Any, name: str) -> str:
    found = client.get_experiment_by_name(name)
    return str(found.experiment_id if found is not None else client.create_experiment(name))


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float) and not (isinstance(value, float) and math.isnan(value)):
        return float(value)
    return None


def _safe(text: str) -> str:
    return mask_secrets(text, held_secrets())


def run_params(store: RunStore, run_id: str) -> dict[str, str]:
    spec = store.spec(run_id)
    data = spec.model_dump(mode="json") if hasattr(spec, "model_dump") else dict(spec)
    params = {k: str(data[k]) for k in PARAMS if data.get(k) is not None}
    agents = data.get("agents") or []
    params["models"] = ",".join(f"{a['agent_name']}={a['model_name']}" for a in agents)
    params["agents"] = str(len(agents))
    return {k: _safe(v)[:500] for k, v in params.items()}


def run_metrics(store: RunStore, run_id: str) -> dict[str, float]:
    """The Analysis page's speaker metrics and the run's totals, numbers only."""
    from ..analysis import speaker_metrics

    record = store.load_run(run_id)
    metrics = speaker_metrics(store.turns(run_id), store.bids(run_id),
                              stop_reason=record.stop_reason).as_dict()
    out = {k: v for k, v in ((k, _number(v)) for k, v in metrics.items()) if v is not None}
    for agent, share in metrics["shares"].items():
        out[f"share.{agent}"] = float(share)
    totals = {"total_calls": record.total_calls,
              "total_prompt_tokens": record.total_prompt_tokens,
              "total_completion_tokens": record.total_completion_tokens,
              "total_cost_usd": record.total_cost_usd, "unpriced_bids": record.unpriced_bids}
    out.update({k: float(v) for k, v in totals.items() if v is not None})
    if record.outcome is not None and record.outcome.correct is not None:
        out["correct"] = float(record.outcome.correct)
    return out


def _simulated(store: RunStore, run_id: str) -> bool:
    from ..providers._sim import run_is_simulated

    return run_is_simulated(a.model_name for a in store.spec(run_id).agents)


def export_run_mlflow(store: RunStore, run_id: str, tracking_uri: str, *,
                      experiment: str = DEFAULT_EXPERIMENT, parent: str | None = None,
                      extra_params: dict[str, str] | None = None) -> str:
    """Log one recorded run as an MLflow run; returns the MLflow run id."""
    from ..exports._bundles import bundle_json
    from ..exports._tables import bids_csv

    run_id = store.resolve(run_id)
    client = _client(tracking_uri)
    record = store.load_run(run_id)
    tags = {"groupchat.run_id": run_id,
            "groupchat.simulated": str(_simulated(store, run_id)).lower(),
            "groupchat.stop_reason": record.stop_reason or "",
            "mlflow.runName": f"run {run_id[:8]}"}
    if parent is not None:
        tags["mlflow.parentRunId"] = parent
    run = client.create_run(_experiment(client, experiment), tags=tags,
                            start_time=_ms(record.started_at))
    mlflow_id = str(run.info.run_id)
    for key, value in {**run_params(store, run_id), **(extra_params or {})}.items():
        client.log_param(mlflow_id, key, value)
    for key, number in run_metrics(store, run_id).items():
        client.log_metric(mlflow_id, key, number)
    for turn in record.turns:
        for key in ("winning_adjusted", "margin"):
            step = _number(getattr(turn, key))
            if step is not None:
                client.log_metric(mlflow_id, f"turn.{key}", step, step=turn.turn)
    client.log_text(mlflow_id, bids_csv(store, run_id), "bids.csv")
    client.log_text(mlflow_id, bundle_json(store, run_id), "bundle.json")
    status = "FINISHED" if record.stop_reason not in {"error", "cancelled"} else "FAILED"
    client.set_terminated(mlflow_id, status=status, end_time=_ms(record.ended_at))
    return mlflow_id


def export_sweep_mlflow(store: RunStore, sweep_id: str, tracking_uri: str, *,
                        experiment: str = DEFAULT_EXPERIMENT,
                        progress: Callable[[int, int], None] | None = None) -> str:
    """Log a sweep as a parent MLflow run with a child per finished cell; returns the
    parent's MLflow run id. `progress(done, total)` hears of each cell's run logged (and
    0 of total first): a 48-run sweep takes about a minute."""
    from ..sweeps import sweep_results, varying

    sweep = store.get_sweep(sweep_id)
    sweep_id = str(sweep["sweep_id"])
    frame = sweep_results(store, sweep_id)
    client = _client(tracking_uri)
    parent = client.create_run(_experiment(client, experiment), tags={
        "groupchat.sweep_id": sweep_id, "mlflow.runName": f"sweep {sweep_id[:8]}"})
    parent_id = str(parent.info.run_id)
    axes = varying(frame)
    client.log_param(parent_id, "cells", str(len(frame)))
    client.log_param(parent_id, "varying", ",".join(axes) or "-")
    client.log_text(parent_id, json.dumps(sweep.get("grid"), default=str, indent=2),
                    "sweep.json")
    rows = [r for r in frame.to_dict("records")
            if isinstance(r.get("run_id"), str)]  # a pending cell has no run yet
    for done, row in enumerate(rows):
        if progress is not None:
            progress(done, len(rows))
        extra = {"cell": str(row["cell"]),
                 **{a: str(row[a]) for a in axes if a in row}}
        export_run_mlflow(store, row["run_id"], tracking_uri, experiment=experiment,
                          parent=parent_id, extra_params=extra)
    if progress is not None:
        progress(len(rows), len(rows))
    client.set_terminated(parent_id, status="FINISHED")
    return parent_id


def _ms(stamp: str | None) -> int | None:
    if not stamp:
        return None
    from datetime import datetime

    return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)


def export_mlflow(store: RunStore, ident: str, tracking_uri: str, *,
                  experiment: str = DEFAULT_EXPERIMENT,
                  progress: Callable[[int, int], None] | None = None) -> tuple[str, str]:
    """A run id (or prefix) or else a sweep id: ("run"|"sweep", the MLflow run id);
    `progress` as export_sweep_mlflow's (a sweep's only)."""
    from .._errors import StoreError

    try:
        run_id = store.resolve(ident)
    except StoreError:
        return "sweep", export_sweep_mlflow(store, ident, tracking_uri, experiment=experiment,
                                            progress=progress)
    return "run", export_run_mlflow(store, run_id, tracking_uri, experiment=experiment)
