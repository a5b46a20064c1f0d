"""`sweep list`, `sweep show SWEEP`, `sweep stop SWEEP`, `sweep export SWEEP`, `sweep delete
SWEEP`: the sweeps in the store, for people (tables) and scripts (`--json`, field names in
docs/engine.md).

`sweep delete` removes the sweep with its runs and cell claims (store.delete_sweep), after a
confirmation naming it (`--yes` skips it; without a terminal to ask on, `--yes` is required).
Only the sweep's owner deletes it: the CLI's identity (`--owner`, else the OS user) must be the
one recorded, or none may be recorded (the CLI holds the store's credentials: a sweep nobody
owns is the CLI's to manage). A running sweep is refused: stop it first.

`sweep stop` records a stop request in the store: the sweep's owner (this machine or another,
the CLI or the dashboard) sees it before launching its next cell, lets the cells in flight
finish and ends the sweep `cancelled`; `sweep SPEC --resume SWEEP` runs the rest.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import pandas as pd

from .._cli.output import emit_json, records
from .._cli.store import emit, say, text_table
from .._errors import CliError
from .._terminal import terminal_text
from ._results import aggregate, metrics_of, sweep_results, sweep_summary

# `sweep list --json`: one object per sweep, newest first.
LIST_FIELDS = ("sweep_id", "name", "status", "reason", "created_at", "ended_at", "runs", "pid",
               "hostname", "owner", "owner_name")
SHOWN_METRICS = ("messages", "lull_turn", "evenness", "total_calls", "correct")


def add_verbs(verbs: Any) -> None:
    listing = verbs.add_parser("list", help="sweeps in the store, newest first")
    listing.add_argument("--json", action="store_true", help="a JSON array of sweeps")
    show = verbs.add_parser("show", help="a sweep's progress, totals and results with 95 %% "
                                         "intervals per parameter combination")
    show.add_argument("sweep", help="sweep id (or a unique prefix)")
    show.add_argument("--json", action="store_true",
                      help="the summary and every (combination, metric) interval as JSON")
    stop = verbs.add_parser("stop", help="ask a running sweep to stop after its cells in "
                                         "flight (resume it later with --resume)")
    stop.add_argument("sweep", help="sweep id (or a unique prefix)")
    remove = verbs.add_parser("delete", help="delete a sweep with its runs (only its owner; "
                                             "asks first unless --yes)")
    remove.add_argument("sweep", help="sweep id (or a unique prefix)")
    remove.add_argument("--yes", action="store_true", help="do not ask for a confirmation")
    from .._cli.owner import add_owner_flag

    add_owner_flag(remove, "deletes it (must be the sweep's recorded owner)")
    export = verbs.add_parser("export", help="every cell with its metrics and the 95 %% "
                                             "intervals of its parameter combination")
    export.add_argument("sweep", help="sweep id (or a unique prefix)")
    export.add_argument("--format", choices=("csv", "json"), default="csv",
                        help="csv: one row per cell, safe to open in a spreadsheet (default); "
                             "json: sweep, cells and intervals")
    export.add_argument("-o", "--output", default=None, help="file to write (default stdout)")


def run_verb(args: argparse.Namespace, store: Any) -> int:
    handlers = {"list": _list, "show": _show, "stop": _stop, "export": _export,
                "delete": _delete}
    return handlers[args.verb](args, store)


def _list(args: argparse.Namespace, store: Any) -> int:
    frame = store.list_sweeps()
    if args.json:
        emit_json(records(frame, LIST_FIELDS))
        return 0
    if frame.empty:
        say("no sweeps in the store", sys.stderr)
        return 0
    table = frame[["sweep_id", "name", "status", "created_at", "runs", "reason"]].assign(
        sweep_id=frame["sweep_id"].str[:12], created_at=frame["created_at"].str[:19],
        reason=frame["reason"].fillna(""))
    say(text_table(table), multiline=True)
    return 0


def _show(args: argparse.Namespace, store: Any) -> int:
    summary = sweep_summary(store, args.sweep)
    intervals = aggregate(sweep_results(store, summary["sweep_id"]))
    if args.json:
        emit_json({"sweep": summary, "intervals": records(intervals, list(intervals.columns))})
        return 0
    lines = [f"{key}: {'' if value is None else value}" for key, value in summary.items()
             if key != "simulated"]
    if summary["simulated"]:
        lines.append("simulated: yes (offline sims took part: these results show the lab's "
                     "machinery, not what a language model would do)")
    say("\n".join(lines), multiline=True)
    shown = intervals[intervals["metric"].isin(SHOWN_METRICS)]
    if not shown.empty:
        say("", multiline=True)
        say(text_table(shown.round(3)), multiline=True)
    return 0


def _stop(args: argparse.Namespace, store: Any) -> int:
    row = store.get_sweep(args.sweep)
    sweep = row["sweep_id"]
    if not store.request_sweep_stop(sweep):
        raise CliError(f"sweep {sweep[:12]} is not running (it is {row['status']}); nothing "
                       "to stop")
    where = f"pid {row['pid']} on {row['hostname']}" if row.get("pid") else "its owner"
    say(f"asked sweep {sweep[:12]} ({where}) to stop: it launches no more cells, finishes "
        f"the ones in flight and ends cancelled; resume with `sweep --resume {sweep[:12]}`",
        sys.stderr)
    return 0


def _delete(args: argparse.Namespace, store: Any) -> int:
    from .._cli.owner import cli_owner

    row = store.get_sweep(args.sweep)
    sweep, owner, me = row["sweep_id"], row.get("owner"), cli_owner(args)
    label = f"sweep {sweep[:12]} ({terminal_text(row['name'])})"
    if owner is not None and owner != me:
        raise CliError(f"{label} belongs to {terminal_text(row.get('owner_name') or owner)}, "
                       f"not to {terminal_text(me or 'an unknown user')}: only its owner "
                       "deletes it (run as that user, or give --owner)")
    runs = int(len(store.list_runs(sweep_id=sweep)))
    if not args.yes:
        if not sys.stdin.isatty():
            raise CliError(f"deleting {label} and its {runs} runs needs a confirmation: add "
                           "--yes (stdin is not a terminal to ask on)")
        print(f"Delete {label} and its {runs} runs? This cannot be undone. [y/N] ",
              end="", file=sys.stderr, flush=True)
        if sys.stdin.readline().strip().lower() not in ("y", "yes"):
            say("nothing deleted", sys.stderr)
            return 1
    gone = store.delete_sweep(sweep)
    say(f"deleted {label} and its {gone} runs", sys.stderr)
    return 0


def cells_with_intervals(store: Any, sweep_id: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every cell (sweep_results) joined with the 95 % interval of each metric over the
    cells sharing its parameter combination: `<metric>_n`, `_mean`, `_ci_low`, `_ci_high`,
    `_interval_method`."""
    cells = sweep_results(store, sweep_id)
    intervals = aggregate(cells)
    by = list(intervals.columns[:list(intervals.columns).index("metric")])
    frame = cells.copy()
    for metric in metrics_of(cells):
        part = intervals[intervals["metric"] == metric].drop(columns="metric")
        part = part[[*by, "n", "mean", "ci_low", "ci_high", "interval_method"]].rename(columns={
            "n": f"{metric}_n", "mean": f"{metric}_mean", "ci_low": f"{metric}_ci_low",
            "ci_high": f"{metric}_ci_high", "interval_method": f"{metric}_interval_method"})
        if by:
            frame = frame.merge(part, on=by, how="left")
        else:
            for column in part.columns:
                frame[column] = part[column].iloc[0] if len(part) else None
    return frame, intervals


def _export(args: argparse.Namespace, store: Any) -> int:
    from .._exports import frame_csv

    summary = sweep_summary(store, args.sweep)
    frame, intervals = cells_with_intervals(store, summary["sweep_id"])
    if args.format == "csv":
        emit(frame_csv(frame), args.output)
    else:
        import json

        from .._cli.output import plain

        data = {"sweep": summary, "cells": records(frame, list(frame.columns)),
                "intervals": records(intervals, list(intervals.columns))}
        emit(json.dumps(plain(data), indent=1, ensure_ascii=False), args.output)
    return 0
