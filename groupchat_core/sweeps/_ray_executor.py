"""Running sweep cells on a Ray cluster: cells run as coroutines inside long-lived async actors
(docs/sweeps.md, "Sweeps on Ray").

Why Ray and not something home-made: scheduling over machines, worker processes, failure
detection and cancellation are solved there. The runner (scheduler.py) stays the only one that
decides which cells run: it claims each cell in the store *before* submitting it here, so
claim-once cells and resume hold however many workers there are (the driver owns every claim).

Why actors: the cells users scale out wait on providers (I/O), and a Ray task runs one cell per
worker process, each process importing litellm (~4.5 s, ~200 MB) to hold one cell's few bids.
A `CellWorker` actor imports it once and runs many cells on its own event loop, the same
`CellRun` the local executor uses; Ray's own guidance for I/O-bound work. An actor reserves
`cpus_per_cell` x its slots CPUs and runs up to `slots = max(1, floor(1 / cpus_per_cell))`
cells at once (0.25: four cells share one CPU; 1, the default: one cell per CPU, as CPU-bound
sim cells want); the driver adds an actor when every one is full, so actors grow to
`concurrency / slots` at most, and Ray places them where CPUs are free.

Each cell is a streaming call of its actor's async generator method. The worker runs the
cell's chat and streams back, turn by turn: who it is (node, host, pid), the usage of each bid
(calls, cost), and (SQLite) the engine's events. Where the run is recorded depends on the store:

- PostgreSQL (a server every worker reaches): the worker records its run turn by turn into the
  shared store itself, exactly as the local executor would.
- SQLite (one machine): workers never open the file. Many processes writing one SQLite file
  works with WAL, but its single writer lock turns every turn of every worker into a wait on
  the same lock, and a worker SIGKILLed inside a transaction is only cleaned up by the next
  opener; so the driver, the file's only writer, replays the streamed events into the same
  StoreRecorder the local executor uses (identical rows, turn by turn, as batches arrive).

Budget caps are global: usage reaches the driver's runner as each turn's batch arrives, and the
runner stops launching and cancels every cell in flight once a cap is reached (Ray cancels
their coroutines on the actors). Guarantee: calls over the cap are bounded by the bids already
in flight when the cap is crossed plus those in the turn batches not yet delivered, i.e. at
most `concurrency` cells x (agents + one turn's bids) calls; nothing new starts after the
crossing is seen.

Limits: a deployment's rpm is paced by one limiter actor per sweep (_ray_limits.py), made by
the driver on the sweep's first cell whose deployments declare rpm and handed to each cell's
call; the worker paces its requests through it (the Pacing seam of providers/_deployments.py),
so N workers together send no more than the rpm (each pacing alone sent up to N times it).

Keys: provider keys never travel in the CellJob (it holds no secrets). Workers get them from the
driver's environment, only the variables the cells' agents need (and GROUPCHAT_DB for a server
store), as a separate small task argument (`Secrets`): inline in the task, in memory. Not
through runtime_env `env_vars`: Ray's runtime-env agent writes those into its log files (the
tests check the cluster's session folder for a key).

Faults: when a worker dies mid-cell (its process killed, its node lost), every cell it ran
fails on the driver: the driver drops the actor, flags each partial run `error` ("its Ray
worker died"), keeps the cell's claim (the driver still owns it) and submits the cell again as
a new run (on a new actor), up to `retries` times; after that the cell's result is
an `error` and its claim is reopened, so a resume runs it. A finished cell is finished in the
store before the call ends, so a death afterwards can never lose or double it. Ray's own
restarts and retries are off (max_restarts=0, max_task_retries=0): a blind re-execution could
not flag the partial run first. A cancelled cell (budget cap, stop) is `ray.cancel`led: Ray
cancels its coroutine on the actor, which closes its run as `cancelled`.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import ConfigError, StoreError
from ._executor import CellJob, CellResult, CellTracing, UsageHook
from ._ray_limits import ClusterLimits, lease_owner, start_limits
from ._ray_worker import DB_ENV, CellWorker, Secrets

if TYPE_CHECKING:
    from ..store import RunStore

logger = logging.getLogger("groupchat_core")
DEFAULT_RETRIES = 2  # new attempts of a cell whose worker died
NO_RAY = ("--executor ray needs Ray, which is not installed: "
          "pip install 'groupchat-lab[ray]' (a clone's make setup has it)")


@dataclass(eq=False)
class _Actor:
    """One CellWorker actor of the pool and how many cells it runs now."""

    handle: Any
    running: int = 0


@dataclass
class _Attempt:
    """What the driver knows of one attempt of a cell (from the stream)."""

    worker: str | None = None
    pid: int | None = None
    hostname: str | None = None
    run_id: str | None = None
    result: CellResult | None = None
    recorder: Any = None  # the driver's StoreRecorder (SQLite), else None
    seen: list[str] = field(default_factory=list)


class RayExecutor:
    """Executor running cells in long-lived async Ray actors (see the module docstring).

    `address`: a running cluster ("auto", "ray://..." or host:port); None starts a local one
    (and stops it on close). `cpus_per_cell`: Ray CPUs a cell reserves (1 suits CPU-bound sim
    cells; a fraction lets I/O-bound cells share a CPU, and one actor runs them together).
    `retries`: new attempts after a worker dies. `env`: the environment keys are read from
    (the driver's by default).
    `watch(job, item)`: called on the driver with every item a worker streams."""

    def __init__(self, store: RunStore, *, address: str | None = None,
                 cpus_per_cell: float = 1.0, retries: int = DEFAULT_RETRIES,
                 bid_cache: bool | None = None, init_options: dict[str, Any] | None = None,
                 env: dict[str, str] | None = None,
                 watch: Callable[[CellJob, dict[str, Any]], None] | None = None,
                 tracing: CellTracing | None = None) -> None:
        from ._spec import check_cpus_per_cell

        try:
            cpus_per_cell = check_cpus_per_cell(cpus_per_cell)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        self.store = store
        self.address = address
        self.cpus_per_cell = cpus_per_cell
        self.retries = max(0, retries)
        self.bid_cache = bid_cache
        self.init_options = dict(init_options or {})
        self.env = dict(os.environ if env is None else env)
        self.watch = watch  # sees every streamed item (tests; progress views)
        self.tracing = tracing  # pickled to each worker, which traces the cell's chat there
        self.workers_record = store.engine.dialect.name != "sqlite"
        self._started_ray = False
        self._remote: Any = None  # the CellWorker actor class, once started
        self.slots = max(1, int(1 / cpus_per_cell + 1e-9))  # cells one actor runs at once
        self._actors: list[_Actor] = []
        self._limits: dict[str, ClusterLimits] = {}  # per sweep with paced deployments

    # --- the cluster ------------------------------------------------------------------------

    def start(self) -> None:
        """Connect to the cluster (or start a local one); ships this process's groupchat_core
        to the workers, so they run exactly the driver's code."""
        try:
            import ray
        except ImportError:  # an optional extra: the local executor needs none of it
            raise ConfigError(NO_RAY) from None

        if self._remote is None:
            _check_reachable(self.address)
        if not ray.is_initialized():
            options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                       "logging_level": logging.WARNING,
                                       **self.init_options}
            # The package's folder, by path: importing the package here would import upwards.
            package = str(Path(__file__).resolve().parents[1])
            options.setdefault("runtime_env", {"py_modules": [package]})
            try:
                with loopback_only(self.address is None):
                    ray.init(address=self.address, **options)
            except Exception as exc:  # Ray raises bare Exception, TimeoutError, OSError, ...
                raise ConfigError(ray_start_error(self.address, exc)) from None
            self._started_ray = True
        if self._remote is None:
            self._remote = ray.remote(max_restarts=0, max_task_retries=0)(CellWorker)

    def check(self) -> None:
        """Refuse at once, with start()'s one line, what start() would refuse before it
        connects: Ray not installed, an address that is none or where nothing answers. Why: the
        dashboard checks this on its Start button, then runs the slow start() off its loop."""
        try:
            import ray  # noqa: F401
        except ImportError:
            raise ConfigError(NO_RAY) from None
        _check_reachable(self.address)

    def close(self) -> None:
        """Disconnect (and stop the local cluster if this executor started it)."""
        if self._limits:
            import ray

            for limits in self._limits.values():
                ray.kill(limits.handle)
            self._limits = {}
        if self._started_ray:
            import ray

            ray.shutdown()
            self._started_ray = False
        self._remote = None
        self._actors = []

    def __enter__(self) -> RayExecutor:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _env_vars(self, job: CellJob) -> dict[str, str]:
        """The driver's variables this cell's workers need: agents' key variables, the bases
        those keys may go to (GROUPCHAT_TRUSTED_API_BASES: without it a worker sends a trusted
        base no key), and the store's URL when workers record (never written into the job)."""
        from ..providers._deployments import key_variables, parse_deployments
        from ..providers._endpoints import TRUSTED_BASES_ENV

        names = set(key_variables(job.spec, parse_deployments(job.deployments)))
        names.add(TRUSTED_BASES_ENV)
        found = {name: self.env[name] for name in sorted(names) if self.env.get(name)}
        if self.workers_record:
            found[DB_ENV] = self.store.url
        return found

    def _limits_for(self, job: CellJob) -> ClusterLimits | None:
        """The sweep's limiter actor, made on its first cell whose deployments declare rpm
        (one per sweep: every worker's requests for them are paced by it, _ray_limits.py);
        None when nothing is paced. Its window is this process's RPM_WINDOW_S."""
        from ..providers import _deployments

        deployments = _deployments.parse_deployments(job.deployments)
        if not any(_deployments.group_rpm(items) for items in deployments.values()):
            return None
        if job.sweep_id not in self._limits:
            self._limits[job.sweep_id] = start_limits(job.sweep_id, _deployments.RPM_WINDOW_S)
        return self._limits[job.sweep_id]

    # --- one cell ---------------------------------------------------------------------------

    def _actor(self) -> _Actor:
        """The actor with the most free slots; a new one when every actor is full and the
        cluster has CPUs for another; else the least busy (the call waits for a slot there).

        Why a cap: an actor holds its CPUs for the whole sweep, so actors the cluster cannot
        place would wait for CPUs the others never give back."""
        free = [a for a in self._actors if a.running < self.slots]
        if free:
            return min(free, key=lambda a: a.running)
        if self._actors and len(self._actors) >= self._max_actors():
            return min(self._actors, key=lambda a: a.running)
        handle = self._remote.options(num_cpus=self.cpus_per_cell * self.slots,
                                      max_concurrency=self.slots).remote()
        actor = _Actor(handle)
        self._actors.append(actor)
        return actor

    def _max_actors(self) -> int:
        """How many actors the cluster's CPUs hold (at least one)."""
        import ray

        cpus = float(ray.cluster_resources().get("CPU", 0.0))  # type: ignore[no-untyped-call]
        return max(1, int(cpus / (self.cpus_per_cell * self.slots) + 1e-9))

    def _drop(self, actor: _Actor) -> None:
        """A dead actor leaves the pool (its cells fail one by one; each is retried)."""
        if actor in self._actors:
            self._actors.remove(actor)

    async def submit(self, job: CellJob, usage: UsageHook) -> CellResult:
        import ray

        self.start()
        failures: list[str] = []
        for attempt in range(self.retries + 1):
            state = _Attempt()
            actor = self._actor()
            actor.running += 1
            stream = actor.handle.run_cell.remote(
                job.model_dump(), self.workers_record, self.bid_cache,
                Secrets(self._env_vars(job)), self.tracing, self._limits_for(job))
            try:
                async for ref in stream:
                    self._take(job, state, await ref, usage)
            except asyncio.CancelledError:
                ray.cancel(stream)  # Ray cancels the cell's coroutine on its actor
                self._cleanup(job, state, "cancelled", "cancelled: a budget cap or the user "
                              "stopped the sweep")
                raise
            except ray.exceptions.RayTaskError as exc:  # the cell's own code raised
                cause = exc.cause if isinstance(getattr(exc, "cause", None), BaseException) \
                    else exc
                self._cleanup(job, state, "error", f"{type(cause).__name__}: {cause}")
                if isinstance(cause, (StoreError, ConfigError)):
                    raise cause from None
                raise StoreError(f"cell {job.cell} failed on Ray worker {state.worker}: "
                                 f"{type(cause).__name__}: {str(cause).splitlines()[0]}"
                                 ) from None
            except ray.exceptions.RayError as exc:  # the worker or its node died
                self._drop(actor)
                self._forget(job, state)
                reason = (f"its Ray worker {state.worker or '(not started)'} died mid-cell "
                          f"({type(exc).__name__})")
                failures.append(reason)
                logger.warning("sweep %s cell %s: %s; attempt %d of %d", job.sweep_id,
                               job.cell, reason, attempt + 1, self.retries + 1)
                self._cleanup(job, state, "error", reason + "; the cell was run again")
                continue
            finally:
                actor.running -= 1
            if state.result is None:
                raise StoreError(f"cell {job.cell}: its Ray task ended without a result")
            return state.result
        return CellResult(cell=job.cell, run_id="", status="error", stop_reason=None,
                          messages=0, turns=0, calls=0, bids=0, cache_hits=0, cost_usd=0.0,
                          error=f"gave up after {len(failures)} attempts: {failures[-1]}",
                          worker=None)

    def _forget(self, job: CellJob, state: _Attempt) -> None:
        """A dead worker's rpm permits and waits go back to the sweep's limiter (it would hold
        them for good: a sweep at its rpm would wait forever)."""
        limits = self._limits.get(job.sweep_id)
        if limits is not None and state.pid is not None and state.hostname is not None:
            limits.handle.forget.remote(
                lease_owner(state.hostname, state.pid))

    def _take(self, job: CellJob, state: _Attempt, item: dict[str, Any],
              usage: UsageHook) -> None:
        """One streamed item from the worker."""
        kind = item["kind"]
        if self.watch is not None:
            self.watch(job, item)
        if kind == "hello":
            state.worker, state.pid, state.hostname = item["worker"], item["pid"], item["host"]
            if not self.workers_record:
                state.recorder = self._driver_recorder(job)
        elif kind == "turn":
            if item["calls"] or item["cost"]:
                usage(item["calls"], item["cost"])
            state.run_id = item.get("run_id") or state.run_id
            if state.recorder is not None:
                for event in item["events"]:
                    state.recorder(event)
        elif kind == "result":
            result = CellResult.model_validate(item["result"])
            if state.recorder is not None:
                state.recorder.flush()
                if state.recorder.failures:
                    raise StoreError(f"run {result.run_id} was not fully recorded: "
                                     + next(iter(state.recorder.failures.values())))
            state.result = result.model_copy(update={"worker": state.worker})

    def _driver_recorder(self, job: CellJob) -> Any:
        """The driver's recorder of a cell's run (SQLite): reads the agents from the spec."""
        from ..engine._groupchat import GroupChat

        source = GroupChat.from_spec(job.spec, bid_cache=False)
        return self.store.recorder(source, sweep_id=job.sweep_id, cell=job.cell)

    def _cleanup(self, job: CellJob, state: _Attempt, status: str, reason: str) -> None:
        """Close the partial run of an attempt that did not end normally."""
        try:
            if state.recorder is not None:
                state.recorder.abandon(reason, status=status)
            elif state.pid is not None:
                self._flag_worker_run(job, state, status, reason)
        except StoreError as exc:  # a resume still sees the run unfinished: nothing is lost
            logger.error("sweep %s cell %s: could not flag its partial run: %s",
                         job.sweep_id, job.cell, exc)

    def _flag_worker_run(self, job: CellJob, state: _Attempt, status: str,
                         reason: str) -> None:
        """A server store: the dead worker's run left `running` is flagged (by its writer)."""
        assert state.pid is not None and state.hostname is not None
        self.store.flag_writer_runs(job.sweep_id, job.cell, pid=state.pid,
                                    hostname=state.hostname, status=status, reason=reason)


LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"  # "0": every Ray address is 127.0.0.1


@contextmanager
def loopback_only(local: bool) -> Iterator[None]:
    """While a local cluster starts (`local`), Ray takes 127.0.0.1 as this node's address, so
    the GCS, raylet, object manager, agents and workers listen on loopback only.

    Why: by default Ray resolves even 127.0.0.1 to the machine's own network address and binds
    its ports on every interface, so anyone on the network could reach the cluster (and run
    code on it). Ray's switch for this is the variable LOOPBACK_ENV (its single-machine mode on
    macOS and Windows): read at import in the driver (so its constant is set here too) and by
    the processes the start spawns (they inherit the variable). Both are put back afterwards:
    a later connection to a real cluster from this process must not claim loopback."""
    if not local:
        yield
        return
    from ray._private import ray_constants

    flag = "ENABLE_RAY_CLUSTER"  # the constant Ray read from LOOPBACK_ENV at import
    saved_env, saved_flag = os.environ.get(LOOPBACK_ENV), getattr(ray_constants, flag, None)
    os.environ[LOOPBACK_ENV] = "0"
    if saved_flag is not None:
        setattr(ray_constants, flag, False)
    try:
        yield
    finally:
        if saved_flag is not None:
            setattr(ray_constants, flag, saved_flag)
        if saved_env is None:
            os.environ.pop(LOOPBACK_ENV, None)
        else:
            os.environ[LOOPBACK_ENV] = saved_env


def _check_reachable(address: str | None, timeout: float = 3.0) -> None:
    """A host:port address that answers nothing fails at once with one line (ray.init would
    retry for minutes); "auto", "ray://" and None are left to Ray."""
    if not address or address == "auto" or "://" in address:
        return
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise ConfigError(f"--ray-address {address!r} is not host:port (e.g. 10.0.0.5:6379), "
                          "auto, or ray://host:port")
    import socket

    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        raise ConfigError(f"no Ray cluster answers at {address} ({exc.strerror or exc}); "
                          "start one there (`ray start --head`), or leave --ray-address out to "
                          "start a local cluster") from None


def ray_start_error(address: str | None, exc: BaseException) -> str:
    """One line for a Ray start that failed: what failed, Ray's first line, what to do.

    Why every exception: ray.init raises ConnectionError, ValueError and RuntimeError, but also
    bare Exception ("node timed out during startup"), TimeoutError and OSError (a full /tmp);
    anything it raises before the sweep starts is a setup problem, never a traceback."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    detail = f"{type(exc).__name__}: {lines[0][:300]}" if lines else type(exc).__name__
    if address is None:
        return (f"could not start a local Ray cluster ({detail}); check that /tmp has room and "
                "no stale Ray processes run (`ray stop`), or give --ray-address of a running "
                "cluster, or leave --executor ray out to run the cells here")
    return (f"could not connect to Ray at {address} ({detail}); check --ray-address (host:port "
            "of the head node, auto, or ray://host:port) and that `ray status` there answers")
