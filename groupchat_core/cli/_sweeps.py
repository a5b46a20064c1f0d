"""`groupchat-lab sweep SPEC [--resume SWEEP] [--max-usd N]`: a sweep, headless; and the
sweeps in the store: `sweep list`, `sweep show SWEEP`, `sweep stop SWEEP`, `sweep export SWEEP`,
`sweep delete SWEEP` (_sweeps_manage.py). A new sweep is recorded for `--owner`, else the OS user.
`sweep SPEC` is short for `sweep run SPEC`.

A sweep has one owner: `--resume` of a sweep another live process still runs is refused with
one line naming it (pid, host, since when) and how to stop it; `--take-over` resumes one left
running by a process on another host that is known to be gone.

The pre-flight estimate and progress go to stderr (a progress bar on a terminal, a line per
~5 % of cells otherwise); stdout gets one summary line at the end. Runs, cells and the sweep's
status land in the store, exactly as the dashboard reads them. Exit status: 0 finished,
1 stopped by a budget cap, by `sweep stop` or with failed cells (resume to continue), 130 on
Ctrl-C (the sweep is recorded `cancelled` and can be resumed), 2 for errors. With `--json`, stdout
gets the outcome as one JSON object instead of the summary line (docs/engine.md, "The command
line").
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

from .._errors import CliError
from .._records import format_cost
from .._statuses import SweepStatus
from .._terminal import terminal_text
from ._exits import FAILED, INTERRUPT_EXIT, OK

if TYPE_CHECKING:  # the sweeps package loads pandas: only when a sweep verb runs
    from ..sweeps._events import CellFinished, SweepEvent, SweepOutcome, SweepStarted

EXIT: dict[SweepStatus, int] = {"finished": OK, "stopped_budget": FAILED, "error": FAILED,
                                "cancelled": INTERRUPT_EXIT}
VERBS = ("run", "list", "show", "stop", "export", "delete")
_GLOBAL_WITH_VALUE = ("--db", "--log-level")


def with_default_verb(argv: Sequence[str]) -> list[str]:
    """`sweep SPEC ...` / `sweep --resume X` as `sweep run ...` (the form before sweeps had
    verbs keeps working); every other command line is returned as it is."""
    args, i = list(argv), 0
    while i < len(args):
        token = args[i]
        if token in _GLOBAL_WITH_VALUE:
            i += 2
        elif token.startswith("-"):
            i += 1
        else:
            break
    if i < len(args) and args[i] == "sweep":
        following = args[i + 1] if i + 1 < len(args) else None
        if following not in (*VERBS, "-h", "--help"):
            args.insert(i + 1, "run")
    return args


def add_parser(sub: Any) -> None:
    from ._sweeps_manage import add_verbs

    group = sub.add_parser("sweep", help="run a parameter sweep (JSON/YAML sweep spec) into "
                                         "the store, resumable; list, show, stop, export sweeps",
                           description="`sweep SPEC` is short for `sweep run SPEC`.")
    verbs = group.add_subparsers(dest="verb", required=True, metavar="VERB")
    sweep = verbs.add_parser("run", help="run (or --resume) a sweep")
    from ._completion import files

    files(sweep.add_argument("spec", nargs="?", help="sweep spec file (- reads standard "
                             "input; optional with --resume)"))
    sweep.add_argument("--resume", metavar="SWEEP", help="finish sweep SWEEP (id or prefix): "
                       "cells with a finished run are skipped")
    sweep.add_argument("--take-over", action="store_true",
                       help="with --resume: take over a sweep still marked running by a "
                            "process on another host (only if that process is gone)")
    sweep.add_argument("--max-usd", type=float, default=None, metavar="N",
                       help="stop cleanly once the sweep's calls cost N USD (priced models)")
    sweep.add_argument("--max-calls", type=int, default=None, metavar="N",
                       help="stop cleanly after N model calls")
    sweep.add_argument("--concurrency", type=int, default=None, metavar="N",
                       help="cells in flight (overrides the spec)")
    sweep.add_argument("--samples", type=int, default=None, metavar="N",
                       help="random search: draw N parameter sets (overrides random.samples)")
    sweep.add_argument("--sample-seed", type=int, default=None, metavar="S",
                       help="seed of every sampled axis (random search, sampled orders and "
                            "rosters; overrides sample_seed)")
    sweep.add_argument("--estimate", action="store_true",
                       help="print the pre-flight estimate and exit without running")
    sweep.add_argument("--quiet", action="store_true", help="no progress on stderr")
    sweep.add_argument("--executor", choices=("local", "ray"), default="local",
                       help="where cells run: this process (local), or one Ray task per cell "
                            "(ray; needs pip install 'groupchat-lab[ray]')")
    sweep.add_argument("--ray-address", default=None, metavar="ADDR",
                       help="with --executor ray: the cluster (host:port of its head, or auto); "
                            "default: start a local cluster for this sweep")
    sweep.add_argument("--cpus-per-cell", type=float, default=None, metavar="X",
                       help="with --executor ray: Ray CPUs each cell reserves, above 0 and at "
                            "most 64 (overrides the spec's cpus_per_cell; default 1; e.g. 0.25 "
                            "lets cells that wait on HTTP models share a CPU)")
    sweep.add_argument("--json", action="store_true",
                       help="print the outcome (or the --estimate) as JSON on stdout")
    from ._traces import add_trace_flags

    add_trace_flags(sweep, "each cell's run (with groupchat.sweep.id and .cell)")
    from ._owner import add_owner_flag

    add_owner_flag(sweep, "a new sweep and its runs are recorded for (a resume keeps the "
                          "sweep's owner)")
    add_verbs(verbs)


class SweepProgress:
    """Observer printing the estimate, progress and the end of a sweep on `stream`."""

    def __init__(self, stream: TextIO, *, bar: bool) -> None:
        self.stream = stream
        self.bar = bar
        self._progress: Any = None
        self._task: Any = None
        self._step = 1

    def __call__(self, event: SweepEvent) -> None:
        from ..sweeps._events import BudgetStopped, CellFinished, SweepFinished, SweepStarted

        if isinstance(event, SweepStarted):
            self._started(event)
        elif isinstance(event, CellFinished):
            self._cell(event)
        elif isinstance(event, BudgetStopped):
            self._print(f"budget cap: {event.reason}; stopping")
        elif isinstance(event, SweepFinished):
            self.close()

    def _started(self, event: SweepStarted) -> None:
        verb = "resumed" if event.resumed else "started"
        self._print(f"sweep {event.sweep_id} {verb} ({event.name}): {event.cells_total} cells, "
                    f"{event.cells_done} already done")
        self._print(event.estimate.summary(), multiline=True)
        self._step = max(1, event.cells_total // 20)
        if self.bar:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

            self._progress = Progress("[progress.description]{task.description}", BarColumn(),
                                      MofNCompleteColumn(), TimeElapsedColumn(),
                                      console=Console(file=self.stream), transient=False)
            self._progress.start()
            self._task = self._progress.add_task("cells", total=event.cells_total,
                                                 completed=event.cells_done)

    def _cell(self, event: CellFinished) -> None:
        if self._progress is not None:
            self._progress.update(self._task, completed=event.cells_done)
            return
        if event.status != "finished":
            self._print(f"cell {event.index} {event.status}" +
                        (f": {event.error}" if event.error else ""))
        elif event.cells_done % self._step == 0 or event.cells_done == event.cells_total:
            self._print(f"{event.cells_done}/{event.cells_total} cells done")

    def _print(self, text: str, *, multiline: bool = False) -> None:
        """Sweep names, cell keys and errors are untrusted: controls are escaped."""
        text = terminal_text(text, multiline=multiline)
        if self._progress is not None:
            self._progress.console.print(text, markup=False, highlight=False)
        else:
            print(text, file=self.stream, flush=True)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def _positive(value: float | None, name: str, integer: bool = False) -> None:
    """A cap from the command line: positive and finite (`--max-usd nan` would never stop a
    sweep), integers no larger than the spec allows."""
    from ..sweeps._spec import MAX_CALLS_CAP

    if value is not None and (not math.isfinite(value) or value <= 0 or (integer and value < 1)
                              or (integer and value > MAX_CALLS_CAP)):
        limit = f" and at most {MAX_CALLS_CAP:,}" if integer else " and finite"
        raise CliError(f"{name} must be positive{limit}, got {value!r}")


def _cpus(args: argparse.Namespace) -> None:
    """--cpus-per-cell: only with Ray, and in the spec's range (one line naming the flag)."""
    from ..sweeps._spec import check_cpus_per_cell

    if args.executor != "ray":
        raise CliError("--cpus-per-cell only applies with --executor ray")
    try:
        check_cpus_per_cell(args.cpus_per_cell)
    except ValueError as exc:
        raise CliError(f"--cpus-per-cell: {exc}".replace("cpus_per_cell must", "must")
                       ) from None


def cmd_sweep(args: argparse.Namespace, store: Any) -> int:
    if args.verb != "run":
        from ._sweeps_manage import run_verb

        return run_verb(args, store)
    return _cmd_run(args, store)


def _load_sweep(path: str) -> Any:
    """A sweep file; `-` reads standard input (its relative task-set paths then resolve from
    the working directory)."""
    from .._config import MAX_SPEC_BYTES
    from ..sweeps._spec import load_sweep, load_sweep_text
    from ._store import STDIN, read_file

    if path != STDIN:
        return load_sweep(path)
    return load_sweep_text(read_file(path, MAX_SPEC_BYTES), "stdin")


def _cmd_run(args: argparse.Namespace, store: Any) -> int:
    from ..sweeps._plan import plan_sweep
    from ..sweeps._scheduler import run_sweep
    from ..sweeps._spec import parse_sweep
    from ._output import emit_json

    if args.spec is None and args.resume is None:
        raise CliError("give a sweep spec file, or --resume SWEEP")
    if args.take_over and args.resume is None:
        raise CliError("--take-over only applies with --resume SWEEP")
    if args.ray_address is not None and args.executor != "ray":
        raise CliError("--ray-address only applies with --executor ray")
    if args.cpus_per_cell is not None:
        _cpus(args)
    _positive(args.max_usd, "--max-usd")
    _positive(args.max_calls, "--max-calls", integer=True)
    _positive(args.concurrency, "--concurrency", integer=True)
    spec = _load_sweep(args.spec) if args.spec else None
    if spec is not None:
        spec = _search_overrides(spec, args)
    plan = plan_sweep(spec, store, resume=args.resume, take_over=args.take_over)
    if args.concurrency is not None:
        plan.spec = parse_sweep({**plan.spec.to_data(), "concurrency": args.concurrency})
    if args.estimate:
        assert plan.estimate is not None
        if args.json:
            emit_json(plan.estimate.model_dump())
        else:
            print(terminal_text(plan.estimate.summary(), multiline=True), flush=True)
        return 0
    from ._owner import cli_owner

    owner = cli_owner(args)
    provider, tracing = _tracing(args, owner)
    progress = SweepProgress(sys.stderr, bar=sys.stderr.isatty())
    observers = [] if args.quiet else [progress]
    executor = None
    if args.executor == "ray":
        from ..sweeps._ray_executor import RayExecutor

        cpus = args.cpus_per_cell or plan.spec.cpus_per_cell or 1.0
        executor = RayExecutor(store, address=args.ray_address, bid_cache=plan.spec.bid_cache,
                               cpus_per_cell=cpus, tracing=tracing)
        executor.start()
    try:
        outcome = run_sweep(plan=plan, store=store, on_event=observers, executor=executor,
                            max_calls=args.max_calls, max_usd=args.max_usd, owner=owner,
                            owner_name=owner, tracing=tracing)
    finally:
        progress.close()
        if executor is not None:
            executor.close()
        if provider is not None:
            provider.shutdown()  # flush the spans before the process ends
    from ..sweeps._scheduler import STOPPED_ON_REQUEST

    code = 1 if outcome.reason == STOPPED_ON_REQUEST else EXIT.get(outcome.status, 1)
    from ..sweeps._results import call_counts

    counts = call_counts(store, outcome.sweep_id)  # as `sweep show` and the exports count
    if args.json:
        emit_json({**outcome.model_dump(), "hit_rate": outcome.hit_rate,
                   "cost": _cost_text(store, outcome),
                   "sweep_calls": {"made": counts.made, "cached": counts.cached,
                                   "needed": counts.needed}})
        return code
    print(terminal_text(
        f"sweep {outcome.sweep_id} {outcome.status}: {outcome.cells_done}/"
        f"{outcome.cells_total} cells done; this session {outcome.cells_run} cells, cost "
        f"{_cost_text(store, outcome)}; the sweep's calls: {counts.text()}"
        + (f" ({outcome.reason})" if outcome.reason else "")), flush=True)
    return code


def _tracing(args: argparse.Namespace, owner: str | None) -> tuple[Any, Any]:
    """The tracer provider and the CellTracer for each cell, when traces are asked for (a Ray
    worker builds its own provider from its OTEL_* environment); else (None, None)."""
    from ._traces import trace_flag, tracer_provider_for

    provider = tracer_provider_for(trace_flag(args))
    if provider is None:
        return None, None
    from ..integrations._cell_traces import CellTracer

    return provider, CellTracer(provider, capture_content=args.trace_content, user_id=owner)


def _search_overrides(spec: Any, args: argparse.Namespace) -> Any:
    """--samples and --sample-seed applied to a loaded spec (validated like the file)."""
    from ..sweeps._spec import parse_sweep

    data = spec.to_data()
    if getattr(args, "samples", None) is not None:
        if spec.random is None:
            raise CliError("--samples needs a random: block in the sweep spec (e.g. random: "
                           "{samples: 20, threshold: {low: 0.2, high: 0.8}})")
        data["random"] = {**data["random"], "samples": args.samples}
    if getattr(args, "sample_seed", None) is not None:
        data["sample_seed"] = args.sample_seed
    return parse_sweep(data, "sweep spec") if data != spec.to_data() else spec


def _cost_text(store: Any, outcome: SweepOutcome) -> str:
    """The session's cost, or "unknown" / a flagged partial sum when some calls had no price
    (a local model missing from litellm's price map costs something unknown, not $0)."""
    unpriced = 0
    if outcome.calls:  # each run row keeps its unpriced bids (store schema v13)
        runs = store.list_run_rows(sweep_id=outcome.sweep_id)
        unpriced = sum(int(r["unpriced_bids"] or 0) for r in runs)
    total = None if unpriced and outcome.cost_usd == 0 else outcome.cost_usd
    return format_cost(total, unpriced)
