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
from typing import TYPE_CHECKING, Any

from .._errors import CliError
from .._terminal import terminal_text
from ._output import emit_json, records
from ._store import emit, say, text_table

# `sweep list --json`: one object per sweep, newest first.
LIST_FIELDS = ("sweep_id", "name", "status", "reason", "created_at", "ended_at", "runs", "pid",
               "hostname", "owner", "owner_name")
SHOWN_METRICS = ("messages", "lull_turn", "evenness", "calls_needed", "correct")
TABLES = ("cells", "long", "intervals", "importance", "compare", "accuracy", "distractors",
          "methods")

if TYPE_CHECKING:  # the parser is built for every command: pandas loads only when a verb runs
    import pandas as pd


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
    from ._owner import add_owner_flag

    add_owner_flag(remove, "deletes it (must be the sweep's recorded owner)")
    export = verbs.add_parser("export", help="every cell with its metrics and the 95 %% "
                                             "intervals of its parameter combination; or the "
                                             "long table, importance, a comparison, methods")
    export.add_argument("sweep", help="sweep id (or a unique prefix)")
    export.add_argument("--table", choices=TABLES, default="cells",
                        help="cells: one row per cell, its intervals beside it (default); long: "
                             "one row per cell and metric; intervals: one per combination and "
                             "metric; importance; compare: cell --b against cell --a on each "
                             "metric; accuracy: per combination (e.g. strategy) of scored "
                             "tasks, accuracy (Wilson), calls, tokens and cost per correct "
                             "answer; distractors: per strategy, the distractors' share of "
                             "turns (Wilson) and accuracy with and without them; methods: the "
                             "methods paragraph")
    export.add_argument("--format", choices=("csv", "json", "parquet"), default="csv",
                        help="csv: safe to open in a spreadsheet (default), opening with "
                             "`# ` lines that carry the spec, seeds, level, simulated and the "
                             "versions (pandas.read_csv(..., comment='#') skips them; with -o, "
                             "the whole metadata also goes to FILE.meta.json); json: the "
                             "table with `meta`; parquet (needs -o): `meta` in the file's "
                             "metadata")
    export.add_argument("--a", action="append", default=[], metavar="PARAM=VALUE",
                        help="with --table compare: cell A (repeat for each parameter)")
    export.add_argument("--b", action="append", default=[], metavar="PARAM=VALUE",
                        help="with --table compare: cell B")
    export.add_argument("--metric", action="append", default=None, metavar="METRIC",
                        help="metrics of importance / compare (default: all that apply)")
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
    from ..sweeps._results import aggregate, call_counts, sweep_results, sweep_summary

    summary = sweep_summary(store, args.sweep)
    intervals = aggregate(sweep_results(store, summary["sweep_id"]))
    if args.json:
        emit_json({"sweep": summary, "intervals": records(intervals, list(intervals.columns))})
        return 0
    lines = [f"{key}: {'' if value is None else value}" for key, value in summary.items()
             if key != "simulated"]
    lines.append(f"model calls: {call_counts(store, summary['sweep_id']).text()}")
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
    from ._delete import check_owner, confirmed
    from ._exits import FAILED
    from ._owner import cli_owner

    row = store.get_sweep(args.sweep)
    sweep = row["sweep_id"]
    label = f"sweep {sweep[:12]} ({terminal_text(row['name'])})"
    check_owner(label, row, cli_owner(args))
    runs = int(len(store.list_runs(sweep_id=sweep)))
    what = f"{label} and its {runs} runs"
    if not confirmed(f"Delete {what}?", what, args.yes):
        return FAILED
    gone = store.delete_sweep(sweep)
    say(f"deleted {label} and its {gone} runs", sys.stderr)
    return 0


def cells_with_intervals(store: Any, sweep_id: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every cell (sweep_results) joined with the 95 % interval of each metric over the
    cells sharing its parameter combination: `<metric>_n`, `_mean`, `_ci_low`, `_ci_high`,
    `_interval_method` and `_note` (why a group has no interval, or too few repeats)."""
    from ..sweeps._results import aggregate, metrics_of, sweep_results

    cells = sweep_results(store, sweep_id)
    intervals = aggregate(cells)
    by = list(intervals.columns[:list(intervals.columns).index("metric")])
    frame = cells.copy()
    for metric in metrics_of(cells):
        part = intervals[intervals["metric"] == metric].drop(columns="metric")
        part = part[[*by, "n", "mean", "ci_low", "ci_high", "interval_method", "note"]].rename(
            columns={"n": f"{metric}_n", "mean": f"{metric}_mean", "ci_low": f"{metric}_ci_low",
                     "ci_high": f"{metric}_ci_high",
                     "interval_method": f"{metric}_interval_method", "note": f"{metric}_note"})
        if by:
            frame = frame.merge(part, on=by, how="left")
        else:
            for column in part.columns:
                frame[column] = part[column].iloc[0] if len(part) else None
    return frame, intervals


def _export(args: argparse.Namespace, store: Any) -> int:
    from ..sweeps._export import export_meta
    from ..sweeps._results import sweep_summary

    summary = sweep_summary(store, args.sweep)
    meta = export_meta(store, summary["sweep_id"])
    if args.table == "methods":
        if args.format != "csv":
            raise CliError("--table methods is a paragraph of text: leave out --format")
        emit(meta["methods"]["text"], args.output)
        return 0
    if args.format == "parquet" and args.output is None:
        raise CliError("--format parquet writes a binary file: give -o FILE")
    frame = _export_table(args, store, summary["sweep_id"])
    extra = None
    if args.table == "cells" and args.format == "json":  # the v1 shape, plus `meta`
        extra = {"sweep": summary, "intervals": records(*_records_of(
            cells_with_intervals(store, summary["sweep_id"])[1]))}
    _write(frame, meta, args, extra)
    return 0


def _records_of(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    return frame, list(frame.columns)


def _parse_cell(pairs: list[str], flag: str) -> dict[str, Any]:
    cell: dict[str, Any] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise CliError(f"{flag} takes PARAM=VALUE (e.g. {flag} threshold=0.3), got {pair!r}")
        try:
            cell[name] = float(value)
        except ValueError:
            cell[name] = value
    return cell


def _export_table(args: argparse.Namespace, store: Any, sweep_id: str) -> pd.DataFrame:
    from ..sweeps._export import long_frame, with_row_facts
    from ..sweeps._results import METRICS, sweep_results

    if args.table != "compare" and (args.a or args.b):
        raise CliError("--a and --b only apply with --table compare")
    if args.table in ("cells", "long", "intervals"):
        frame, intervals = cells_with_intervals(store, sweep_id)
        if args.table == "cells":
            return with_row_facts(frame)
        if args.table == "long":
            return long_frame(sweep_results(store, sweep_id), intervals)
        return with_row_facts(intervals)
    results = sweep_results(store, sweep_id)
    if args.table == "accuracy":
        from ..sweeps._outcomes import accuracy_table, scored_chats

        if scored_chats(results).empty:
            raise CliError("--table accuracy needs scored tasks (tasks with an answer and a "
                           "scorer, e.g. `answer: \"42\"` and `scorer: numeric`); this sweep "
                           "has no scored finished chat")
        return with_row_facts(accuracy_table(results))
    if args.table == "distractors":
        from ..sweeps._distractors import distractor_report, has_distractors

        if not has_distractors(results):
            raise CliError("--table distractors needs a sweep whose base marks distractors "
                           "(e.g. `distractors: [Chatter]`, a name from its agents)")
        return with_row_facts(distractor_report(results))
    if args.table == "importance":
        from ..sweeps._importance import IMPORTANCE_METRICS, importance

        return with_row_facts(importance(results, metrics=args.metric or IMPORTANCE_METRICS))
    from ..sweeps._compare import compare_metrics

    if not args.a or not args.b:
        raise CliError("--table compare needs the two cells: --a PARAM=VALUE and --b "
                       "PARAM=VALUE (e.g. --a threshold=0.3 --b threshold=0.6)")
    return with_row_facts(compare_metrics(results, _parse_cell(args.a, "--a"),
                                          _parse_cell(args.b, "--b"),
                                          args.metric or list(METRICS)))


def _write(frame: pd.DataFrame, meta: dict[str, Any], args: argparse.Namespace,
           extra: dict[str, Any] | None = None) -> None:
    import json
    from pathlib import Path

    from .._errors import ConfigError
    from .._jsonable import plain
    from ..exports._tables import frame_csv
    from ..sweeps._export import parquet_bytes

    if args.format == "json":
        rows = records(frame, list(frame.columns))
        data = ({"sweep": extra["sweep"], "cells": rows, "intervals": extra["intervals"],
                 "meta": meta} if extra is not None else {"meta": meta, "rows": rows})
        emit(json.dumps(plain(data), indent=1, ensure_ascii=False), args.output)
        return
    if args.format == "parquet":
        try:
            Path(args.output).write_bytes(parquet_bytes(frame, meta))
        except OSError as exc:
            raise ConfigError(f"cannot write {args.output!r}: {exc.strerror or exc}") from None
        say(f"wrote {args.output}", sys.stderr)
        return
    emit(frame_csv(frame, meta, args.table), args.output)
    if args.output is not None:
        emit(json.dumps(plain(meta), indent=1, ensure_ascii=False), f"{args.output}.meta.json")
