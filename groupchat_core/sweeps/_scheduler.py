"""Running a sweep: cells concurrently, budget caps, progress events, a clean record of the end.

The runner decides which cells run and when; an Executor (executor.py) runs each one. Up to
`concurrency` cells are in flight; their model calls are further limited by the process-wide
in-flight call limit (limiter.CALL_LIMITER), so many small cells keep the limit busy.

Budget caps count model calls and their cost (priced models only) over every session of the
sweep, bid by bid as they arrive. When a cap is reached the runner launches no more cells,
cancels the cells in flight (their runs read `cancelled`) and records the sweep as
`stopped_budget` with the reason. A stop request (`sweep stop`, recorded in the store) is polled
before each cell is launched: no more cells start, the ones in flight finish, and the sweep ends
`cancelled`, resumable. Calls in flight when the cap is reached are cancelled too;
their results are never seen (a provider may still bill them).

Keys are checked before anything is spent: a sweep run here (the local executor) whose agents
lack a provider key raises ConfigError listing every problem, before the sweep is created. And
when CREDENTIAL_STOP cells in a row end in error with nothing posted because the provider refused
the credentials (a wrong key passes the check), the sweep stops with status `error` and a reason
saying so, instead of spending a failing call per bid on every remaining cell.

One owner, claim-once cells: a session takes the sweep over (`store.reopen_sweep` refuses while
another live process runs it), and claims each cell in the store before running it
(`store.claim_cell`); a cell already claimed or finished elsewhere is skipped, never run twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from .._errors import ConfigError, StoreError
from .._statuses import SweepStatus
from ..engine._bidcache import BidCache
from ..engine._loop import background_loop
from ..providers._credentials import check_credentials, credentials_error, is_credential_failure
from ..providers._deployment_checks import key_problems, unknowable_budget_error, unknowable_costs
from ..providers._deployments import routes_for
from ..providers._litellm import load_litellm_off_loop
from ..providers._routing import in_process_provider
from ._estimate import estimate
from ._events import (
    BudgetStopped,
    CellFinished,
    CellStarted,
    SweepEvent,
    SweepFinished,
    SweepOutcome,
    SweepStarted,
)
from ._executor import CellJob, CellResult, CellTracing, Executor, LocalExecutor
from ._plan import SweepPlan, plan_sweep
from ._spec import Cell, SweepSpec, any_simulated

if TYPE_CHECKING:
    from .._agent import Agent
    from ..store import CellClaim, RunStore

SweepObserver = Callable[[SweepEvent], None]
CREDENTIAL_STOP = 3  # cells in a row refused on credentials before the sweep stops
STOPPED_ON_REQUEST = "stopped on request (sweep stop); resume it to run the rest"
logger = logging.getLogger("groupchat_core")


class SweepRunner:
    """One session of a sweep (a new sweep, or the rest of a resumed one)."""

    def __init__(self, plan: SweepPlan, store: RunStore, *, executor: Executor | None = None,
                 observers: Iterable[SweepObserver] = (), max_calls: int | None = None,
                 max_usd: float | None = None, owner: str | None = None,
                 owner_name: str | None = None, tracing: CellTracing | None = None) -> None:
        self.plan, self.spec, self.store = plan, plan.spec, store
        self.owner, self.owner_name = owner, owner_name  # who a new sweep is recorded for
        self.executor = executor or LocalExecutor(store, _cache_for(plan.spec, store),
                                                  tracing=tracing)
        self.observers = list(observers)
        self.max_calls = max_calls if max_calls is not None else plan.spec.max_calls
        self.max_usd = max_usd if max_usd is not None else plan.spec.max_usd
        self.sweep_id = plan.sweep_id or ""
        self.status: SweepStatus | None = None
        self.reason: str | None = None
        self.running: set[asyncio.Task[None]] = set()
        self.outcome: SweepOutcome | None = None
        self._session = {"calls": 0, "bids": 0, "hits": 0, "run": 0, "cost": 0.0}
        self._done = len(plan.done)
        self._refused = 0  # cells in a row that failed on credentials
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None

    # --- the session ------------------------------------------------------------------------

    async def run(self) -> SweepOutcome:
        started = time.perf_counter()
        self._loop, self._loop_thread = asyncio.get_running_loop(), threading.get_ident()
        await self._check_budget_knowable()  # before anything is created or spent
        if isinstance(self.executor, LocalExecutor):  # remote workers hold their own keys
            await self._check_credentials()
        self._open()  # takes the sweep over, or raises (SweepBusy): nothing to release then
        try:
            try:
                self._check_budget()
                await self._launch()
            except asyncio.CancelledError:
                self._stop("cancelled", "cancelled by the user")
                await self._drain()
                await self._close(started)
                raise
            return await self._close(started)
        finally:
            self.store.release_sweep(self.sweep_id)  # however the session ended

    def _open(self) -> None:
        spec, plan = self.spec, self.plan
        resumed = plan.resumed
        if plan.estimate is None:
            plan.estimate = estimate(spec, plan.todo, store=self.store, sweep_id=plan.sweep_id,
                                     cells_done=len(plan.done))
        if plan.sweep_id is None:
            self.sweep_id = plan.sweep_id = self.store.create_sweep(
                spec.name, spec.to_data(), owner=self.owner, owner_name=self.owner_name)
        else:
            self.store.reopen_sweep(plan.sweep_id, take_over=plan.take_over)
        self._emit(SweepStarted(sweep_id=self.sweep_id, name=spec.name,
                                cells_total=len(plan.cells), cells_done=self._done,
                                resumed=resumed, estimate=plan.estimate))

    async def _check_credentials(self) -> None:
        """Raise ConfigError naming every missing key, before the sweep is created."""
        agents: dict[tuple[str, str, str | None], Agent] = {}
        for cell in self.plan.todo:
            for agent in self.spec.chat_spec(cell).agents:
                agents.setdefault((agent.agent_name, agent.model_name, agent.api_base), agent)
        if all(in_process_provider(a.model_name) is not None for a in agents.values()):
            return
        await load_litellm_off_loop()
        routes = routes_for(self.spec.deployments)  # a routed agent is judged by its deployments
        direct = [a for a in agents.values() if routes is None or not routes.serves(a.model_name)]
        problems = check_credentials(direct) + key_problems(
            routes, [a.model_name for a in agents.values()])
        if problems:
            raise ConfigError(credentials_error(problems))

    async def _check_budget_knowable(self) -> None:
        """A dollar budget over calls whose cost is unknown could never stop the sweep:
        refused with one line (ConfigError), before the sweep is created."""
        if self.max_usd is None:
            return
        models = {a.model_name for cell in self.plan.todo
                  for a in self.spec.chat_spec(cell).agents}
        if all(in_process_provider(m) is not None for m in models):
            return  # sims: no litellm needed, and no cost to know
        await load_litellm_off_loop()  # the price map; never imported on the loop's thread
        unknown = unknowable_costs(models, routes_for(self.spec.deployments))
        if unknown:
            raise ConfigError(unknowable_budget_error(self.max_usd, unknown))

    async def _launch(self) -> None:
        gate = asyncio.Semaphore(self.spec.concurrency)
        for cell in self.plan.todo:
            await gate.acquire()
            requested = self.status is None and await asyncio.to_thread(self._stop_requested)
            if requested and self.status is None:  # a cap may have stopped it meanwhile
                self.status, self.reason = "cancelled", STOPPED_ON_REQUEST
            if self.status is not None:
                gate.release()
                break
            task = asyncio.create_task(self._cell(cell, gate))
            self.running.add(task)
            task.add_done_callback(self.running.discard)
        await self._drain()

    def _stop_requested(self) -> bool:
        """`sweep stop` (from any process) recorded a request: launch no more cells, let the
        ones in flight finish, end `cancelled`; a resume runs the rest. Read off the loop (the
        read is retried on a lost connection); the loop alone sets the status."""
        try:
            return self.store.sweep_stop_requested(self.sweep_id)
        except StoreError as exc:  # unreadable now: the next cell asks again
            logger.warning("sweep %s: could not read stop requests: %s", self.sweep_id, exc)
            return False

    async def _drain(self) -> None:
        while self.running:
            await asyncio.gather(*list(self.running), return_exceptions=True)

    async def _close(self, started: float) -> SweepOutcome:
        executor_cache = getattr(self.executor, "bid_cache", None)
        if isinstance(executor_cache, BidCache):
            await asyncio.to_thread(executor_cache.flush)
        total = len(self.plan.cells)
        status, reason = self.status, self.reason
        if status is None:
            status = "finished" if self._done == total else "error"
            if status == "error":
                reason = (f"{total - self._done} cells did not finish (their runs ended in "
                          "error); resume the sweep to retry them")
        self.store.finish_sweep(self.sweep_id, status, reason)
        s = self._session
        self.outcome = SweepOutcome(
            sweep_id=self.sweep_id, name=self.spec.name, status=status,
            reason=reason, cells_total=total, cells_done=self._done, cells_run=int(s["run"]),
            calls=int(s["calls"]), bids=int(s["bids"]), cache_hits=int(s["hits"]),
            cost_usd=float(s["cost"]), calls_total=self.plan.spent_calls + int(s["calls"]),
            cost_usd_total=self.plan.spent_usd + float(s["cost"]),
            elapsed_s=time.perf_counter() - started, simulated=any_simulated(self.spec))
        self._emit(SweepFinished(sweep_id=self.sweep_id, outcome=self.outcome))
        return self.outcome

    # --- cells ------------------------------------------------------------------------------

    async def _cell(self, cell: Cell, gate: asyncio.Semaphore) -> None:
        try:
            try:
                claim = await self._claim(cell)
            except StoreError as exc:
                self._stop("error", f"cell {cell.key} could not be claimed: {exc}")
                self._cell_end(cell, None, "error", str(exc))
                return
            if not claim.claimed:  # finished or running elsewhere: never run a cell twice
                self._cell_taken(cell, claim)
                return
            finished_run: str | None = None
            try:
                finished_run = await self._run_cell(cell)
            finally:  # finished with its run, else open again for a resume
                await _off_loop(self._release_cell, cell, finished_run)
        finally:
            gate.release()

    async def _claim(self, cell: Cell) -> CellClaim:
        """Claim the cell off the loop: a claim retried on a lost connection must not stall
        the chats in flight (store.retrying backs off for up to reconnect_for). Cancelled
        meanwhile (a cap, Stop), a claim the thread still made is released at once."""
        claiming = asyncio.ensure_future(
            asyncio.to_thread(self.store.claim_cell, self.sweep_id, cell.key))
        try:
            return await asyncio.shield(claiming)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                if (await claiming).claimed:
                    await _off_loop(self._release_cell, cell, None)
            raise

    def _release_cell(self, cell: Cell, finished_run: str | None) -> None:
        try:
            self.store.finish_cell(self.sweep_id, cell.key, finished_run)
        except StoreError as exc:  # the run's own status still tells a resume what to do
            logger.error("sweep %s: the claim of cell %s was not updated: %s",
                         self.sweep_id, cell.key, exc)

    def _cell_taken(self, cell: Cell, claim: CellClaim) -> None:
        """A cell another session claimed: counted if it finished there, else skipped."""
        if claim.state == "finished":
            self._done += 1
        self._emit(CellFinished(
            sweep_id=self.sweep_id, cell=cell.key, index=cell.index, run_id=claim.run_id,
            status="finished" if claim.state == "finished" else "skipped",
            error=None if claim.state == "finished" else f"not run here: {claim.holder()}",
            cells_done=self._done, cells_total=len(self.plan.cells)))

    async def _run_cell(self, cell: Cell) -> str | None:
        """Run a claimed cell; the id of its run if that run finished."""
        self._emit(CellStarted(sweep_id=self.sweep_id, cell=cell.key, index=cell.index))
        job = CellJob(sweep_id=self.sweep_id, cell=cell.key, index=cell.index,
                      spec=self.spec.chat_spec(cell).to_data(),
                      task=self.spec.tasks[cell.task_index],
                      scored=self.spec.scored_task(cell.task_index),
                      deployments=self.spec.deployments)
        try:
            result = await self.executor.submit(job, self._usage)
        except asyncio.CancelledError:  # a cap or the user stopped the sweep
            self._cell_end(cell, None, "cancelled")
            return None
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            self._stop("error", f"cell {cell.key} failed: {error}")
            self._cell_end(cell, None, "error", error)
            return None
        self._cell_end(cell, result, result.status)
        return result.run_id if result.status == "finished" else None

    def _cell_end(self, cell: Cell, result: CellResult | None, status: str,
                  error: str | None = None) -> None:
        if result is not None:
            s = self._session
            s["bids"] += result.bids
            s["hits"] += result.cache_hits
            if status == "finished":
                self._done += 1
                s["run"] += 1
            self._count_refusal(result)
        fields = {} if result is None else result.model_dump(exclude={"cell", "status"})
        if error is not None:
            fields["error"] = error
        self._emit(CellFinished(sweep_id=self.sweep_id, cell=cell.key, index=cell.index,
                                status=status, cells_done=self._done,
                                cells_total=len(self.plan.cells),
                                **{"run_id": None, **fields}))

    def _count_refusal(self, result: CellResult) -> None:
        """Stop after CREDENTIAL_STOP cells in a row that the provider refused on credentials."""
        refused = (result.status == "error" and result.messages == 0
                   and is_credential_failure(result.error))
        self._refused = self._refused + 1 if refused else 0
        if self._refused >= CREDENTIAL_STOP and self.status is None:
            cause = (result.error or "").split("\n")[0][:300]
            self._stop("error", f"stopped: {self._refused} cells in a row failed because the "
                       "provider refused the credentials; check the API key (the provider's "
                       "environment variable, or the agents' api_key), then resume the sweep. "
                       f"Last error: {cause}")

    # --- budget -----------------------------------------------------------------------------

    def _usage(self, calls: int, cost_usd: float) -> None:
        """Called as bids arrive (on the loop; hopped onto it from another thread)."""
        loop = self._loop
        if loop is not None and threading.get_ident() != self._loop_thread:
            loop.call_soon_threadsafe(self._usage_on_loop, calls, cost_usd)
        else:
            self._usage_on_loop(calls, cost_usd)

    def _usage_on_loop(self, calls: int, cost_usd: float) -> None:
        self._session["calls"] += calls
        self._session["cost"] += cost_usd
        self._check_budget()

    def _check_budget(self) -> None:
        calls = self.plan.spent_calls + int(self._session["calls"])
        cost = self.plan.spent_usd + float(self._session["cost"])
        reason = None
        if self.max_calls is not None and calls >= self.max_calls:
            reason = f"max_calls {self.max_calls} reached ({calls} calls)"
        elif self.max_usd is not None and cost >= self.max_usd:
            reason = f"max_usd {self.max_usd:g} reached (${cost:.4f})"
        if reason is not None and self.status is None:
            self._stop("stopped_budget", reason)
            self._emit(BudgetStopped(sweep_id=self.sweep_id, reason=reason, calls_total=calls,
                                     cost_usd_total=cost))

    def _stop(self, status: SweepStatus, reason: str) -> None:
        """Launch nothing more and cancel the cells in flight (first stop reason wins)."""
        if self.status is None:
            self.status, self.reason = status, reason
        for task in list(self.running):
            task.cancel()

    def _emit(self, event: SweepEvent) -> None:
        for observer in self.observers:
            try:
                observer(event)
            except Exception:  # watching a sweep never breaks it
                logger.exception("sweep observer %r failed on a %s event", observer, event.kind)


def _cache_for(spec: SweepSpec, store: RunStore) -> BidCache | bool:
    """The sweep's store-backed cache under the spec's policy (False: off)."""
    if spec.bid_cache is False:
        return False
    return BidCache(store, cache_all=spec.bid_cache is True)


async def arun_sweep(spec: SweepSpec | None = None, store: RunStore | None = None, *,
                     resume: str | None = None, plan: SweepPlan | None = None,
                     executor: Executor | None = None,
                     on_event: SweepObserver | Iterable[SweepObserver] | None = None,
                     max_calls: int | None = None, max_usd: float | None = None,
                     owner: str | None = None, owner_name: str | None = None,
                     tracing: CellTracing | None = None) -> SweepOutcome:
    """Run a sweep (or the rest of sweep `resume`) on the running loop; observers are called
    on the loop's thread. Run it on the engine's background loop (`run_sweep` does; the
    dashboard submits it as a job there), where litellm's clients live. `owner`/`owner_name`:
    who a new sweep (and its runs) is recorded for (a resumed sweep keeps its owner).
    `tracing` traces each cell's chat on the default local executor (a given executor carries
    its own: LocalExecutor/RayExecutor(tracing=...))."""
    if store is None:
        from ..store import RunStore

        store = RunStore()
    plan = plan or plan_sweep(spec, store, resume=resume)
    observers = [] if on_event is None else ([on_event] if callable(on_event) else list(on_event))
    runner = SweepRunner(plan, store, executor=executor, observers=observers,
                         max_calls=max_calls, max_usd=max_usd, owner=owner,
                         owner_name=owner_name, tracing=tracing)
    return await runner.run()


def run_sweep(spec: SweepSpec | None = None, store: RunStore | None = None, *,
              on_event: SweepObserver | Iterable[SweepObserver] | None = None,
              **options: object) -> SweepOutcome:
    """arun_sweep from synchronous code; observers run on the calling thread, in order.

    Ctrl-C (KeyboardInterrupt) cancels the sweep, waits until it is recorded `cancelled`,
    then re-raises.
    """
    observers = [] if on_event is None else ([on_event] if callable(on_event) else list(on_event))

    def notify(event: SweepEvent) -> None:
        for observer in observers:
            observer(event)

    return background_loop().run_relaying(
        lambda relay: arun_sweep(spec, store, on_event=lambda event: relay(notify, event),
                                 **options),  # type: ignore[arg-type]
        keep=lambda fn, args: isinstance(args[0], SweepFinished))  # the end is always seen


async def _off_loop(fn: Callable[..., object], *args: object) -> None:
    """`fn(*args)` on a thread, awaited to its end even if this task is cancelled meanwhile
    (then the cancellation goes on): a claim's end must be written before the session ends,
    or a resume could reopen the claim first and the late write would find it gone."""
    done = asyncio.ensure_future(asyncio.to_thread(fn, *args))
    try:
        await asyncio.shield(done)
    except asyncio.CancelledError:
        await done
        raise
