"""`selection RUN ... | --sweep ID --judge MODEL`: did the floor go to the best candidate?

A judge model scores every candidate message of each judged turn (docs/outcomes.md, "Selection
quality"); the command prints the winner-is-best rate, the regret, the calibration of bids and
what the judging cost, or one of its tables as CSV opening with `# ` lines. Calls are made only
here, when asked; answers are cached in the store's bid cache (`--no-cache` asks again).
"""

from __future__ import annotations

import argparse
import hashlib
from collections.abc import Callable
from typing import Any

from .._errors import CliError

TABLES = ("summary", "turns", "candidates", "calibration")


def add_parser(sub: Any) -> None:
    from ._completion import files

    cmd = sub.add_parser("selection", help="judge each turn's candidate messages: did the "
                                           "floor go to the best one? (calls a judge model)")
    cmd.add_argument("runs", nargs="*", metavar="RUN", help="run id (or a unique prefix)")
    cmd.add_argument("--sweep", default=None, help="every run of this sweep (id or prefix)")
    cmd.add_argument("--judge", required=True, metavar="MODEL",
                     help="the judge's litellm model string (e.g. openai/gpt-4o-mini)")
    cmd.add_argument("--judge-api-base", default=None, metavar="URL",
                     help="the judge's OpenAI-compatible endpoint (keys bound to it as agents')")
    cmd.add_argument("--table", choices=TABLES, default="summary",
                     help="summary lines (default), or a table as CSV: turns, candidates, "
                          "calibration")
    files(cmd.add_argument("-o", "--output", default=None,
                           help="file to write (default stdout)"))
    cmd.add_argument("--no-cache", action="store_true",
                     help="ask the judge again instead of reusing cached answers")


def _records(args: argparse.Namespace, store: Any) -> list[Any]:
    ids = [store.resolve(prefix) for prefix in args.runs]
    if args.sweep is not None:
        sweep_id = store.resolve_sweep(args.sweep)
        ids += [row["run_id"] for row in store.list_run_rows(sweep_id=sweep_id)]
    if not ids:
        raise CliError("selection needs runs: give run ids, or --sweep with a sweep id")
    return [store.load_run(run_id) for run_id in dict.fromkeys(ids)]


def _table_csv(judgement: Any, table: str, runs: int) -> str:
    from ..exports._tables import HEADER_PREFIX
    from ..sweeps import SELECTION_PROMPT, calibration, frame_csv, selection_turns

    makers: dict[str, Callable[[], Any]] = {
        "turns": lambda: selection_turns(judgement.candidates),
        "candidates": lambda: judgement.candidates,
        "calibration": lambda: calibration(judgement.candidates)}
    frame = makers[table]()
    facts = [("groupchat_lab_export", f"selection-{table}"), ("judge_model", judgement.judge_model),
             ("prompt_sha256", hashlib.sha256(SELECTION_PROMPT.encode()).hexdigest()),
             ("runs", runs), ("calls", f"made {judgement.calls}, cached {judgement.cached}"),
             ("read_with", 'pandas.read_csv(path, comment="#")')]
    from .._terminal import terminal_text

    header = "".join(f"{HEADER_PREFIX}{k}: {terminal_text(v)}\n" for k, v in facts)
    return header + frame_csv(frame)


def cmd_selection(args: argparse.Namespace) -> int:
    from ..sweeps import judge_selection, summary_lines
    from ._store import emit, store_of

    store = store_of(args, create=False)
    records = _records(args, store)
    judgement = judge_selection(records, args.judge, api_base=args.judge_api_base,
                                cache=not args.no_cache, store=store)
    if args.table == "summary":
        text = "\n".join(summary_lines(judgement)) + "\n"
    else:
        text = _table_csv(judgement, args.table, len(records))
    emit(text, args.output)
    return 0
