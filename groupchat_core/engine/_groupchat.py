"""GroupChat: the public facade. Validates once, runs chats on one long-lived loop, keeps records.

Deliberate differences from the reference are listed in the README ("Differences").
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from .._agent import Agent
from .._config import ChatConfig, ChatSpec, check_distractors, explain, parse_spec
from .._errors import ConfigError
from .._records import (
    BidDelta,
    Event,
    Message,
    Observer,
    Outcome,
    RunRecord,
    observer_takes,
    observer_thread_safe,
)
from ..outcomes import Task, judge_agent, score_run
from ..providers._credentials import check_credentials, credentials_error
from ..providers._deployment_checks import key_problems
from ..providers._deployments import Deployments, Routes, routed_by, routes_for
from ..providers._litellm import load_litellm_off_loop
from ..providers._model_calls import LITELLM, provider_for
from ..providers._providers import Provider
from ..providers._sim import is_sim_model, persona_for
from ._bidcache import BidCache, resolve_cache
from ._loop import background_loop
from ._outputs import StreamingCallback, format_output, stream_message
from ._participant import Human
from ._room import Room
from ._turn_loop import TurnLoop

logger = logging.getLogger("groupchat_core")
_CONFIG_FIELDS = frozenset(ChatConfig.model_fields)
_RUN_ID = re.compile(r"[0-9a-f]{32}")


def _default(field: str) -> Any:
    """ChatConfig's default for a setting: declared once there, shown in this signature."""
    return ChatConfig.model_fields[field].default


def _check_agents(agents: Sequence[Agent | Human] | None, auto_equip: bool) -> list[Agent]:
    if agents is None or len(agents) < 2:
        raise ConfigError("GroupChat requires at least 2 agents.")
    seen: set[str] = set()
    for i, agent in enumerate(agents):
        if isinstance(agent, Human):
            if agent.name in seen:
                raise ConfigError(f"duplicate name {agent.name!r}: names identify speakers, so "
                                  "each agent and person needs a unique name")
            seen.add(agent.name)
            continue
        if not isinstance(agent, Agent):
            raise ConfigError(
                f"agents[{i}] is a {type(agent).__name__}, not a groupchat_core.Agent "
                "or Human")
        if agent.agent_name in seen:
            raise ConfigError(
                f"duplicate agent_name {agent.agent_name!r}: names identify speakers, so each "
                "agent needs a unique name")
        seen.add(agent.agent_name)
        _check_model(agent)
        if not auto_equip and not agent.has_respond_tool():
            raise ConfigError(
                f"agent {agent.agent_name!r} has no 'respond' tool and auto_equip=False: add "
                "RESPOND_TOOL to its tools_list_dictionary or pass auto_equip=True")
    models = [a for a in agents if isinstance(a, Agent)]
    if not models:
        raise ConfigError("a room with people needs at least 1 agent beside them")
    return models


def _check_people(roster: Sequence[Agent | Human], selector: Human | None,
                  strategy: str) -> Room | None:
    """The room of a chat with people (None without): the strategy must be bidding, names
    unique, the selector a Human."""
    people = [p for p in roster if isinstance(p, Human)]
    if selector is not None and not isinstance(selector, Human):
        raise ConfigError(f"human_selector is a {type(selector).__name__}, not a "
                          "groupchat_core.Human")
    if selector is not None and selector.name in {
            p.name if isinstance(p, Human) else p.agent_name for p in roster}:
        raise ConfigError(f"human_selector {selector.name!r} has the name of a participant: "
                          "give the person choosing the speaker a name of their own")
    if not people and selector is None:
        return None
    if strategy != "bidding":
        raise ConfigError(f"people take part only with strategy 'bidding', not {strategy!r}: "
                          "a person bids for the floor under the bidding rule")
    everyone = [*people, *([selector] if selector is not None else [])]
    return Room([(p.name, p.user) for p in everyone])


def _check_model(agent: Agent) -> None:
    """A sim/ model must name a known persona: say so before the run, not on the first bid."""
    if is_sim_model(agent.model_name):
        try:
            persona_for(agent.model_name)
        except ValueError as exc:
            raise ConfigError(f"agent {agent.agent_name!r}: {exc}") from None


def _check_providers(providers: Mapping[str, Provider] | None) -> dict[str, Provider]:
    """Providers by model-name prefix: each key a prefix ("fake", not "fake/model"), each value
    an object with `needs_prompt` and an async `bid(request)` (providers/_providers.py)."""
    if providers is None:
        return {}
    if not isinstance(providers, Mapping):
        raise ConfigError("providers must map a model-name prefix to a provider, e.g. "
                          "providers={'fake': my_provider} for models named 'fake/...'")
    checked: dict[str, Provider] = {}
    for prefix, provider in providers.items():
        if not isinstance(prefix, str) or not prefix or "/" in prefix:
            raise ConfigError(f"providers key {prefix!r} is not a model-name prefix: use the "
                              "part before the '/', e.g. 'fake' for 'fake/model'")
        if not isinstance(provider, Provider):
            raise ConfigError(
                f"providers[{prefix!r}] is a {type(provider).__name__}, not a provider: it "
                "needs a `needs_prompt` attribute and an async `bid(request)` method")
        checked[prefix] = provider
    return checked


class GroupChat:
    """Turn-based bidding chat: every agent bids each turn; the best bid above threshold speaks."""

    agents: list[Agent]
    roster: list[Agent | Human]
    humans: list[Human]
    human_selector: Human | None
    room: Room | None
    last_run: RunRecord | None
    _config: ChatConfig
    _observers: list[Observer]
    _active: set[tuple[asyncio.AbstractEventLoop, asyncio.Task[Any] | None]]
    _lock: threading.Lock
    _bid_cache: BidCache | None
    _routes: Routes | None
    _providers: dict[str, Provider]

    if TYPE_CHECKING:  # the config fields, read and written through to `_config` (below)
        name: str
        description: str
        max_loops: int
        threshold: float
        recency_penalty: float
        recency_window: int
        idle_timeout: float
        output_type: str
        verbose: bool
        auto_equip: bool
        bid_prompt: str
        seed: int
        bid_timeout: float | None
        batch_concurrency: int
        stream_bids: bool
        human_window: float
        human_post_window: float
        selector_top_k: int

    def __init__(
        self,
        name: str = _default("name"),
        description: str = _default("description"),
        agents: Sequence[Agent | Human] | None = None,
        max_loops: int = _default("max_loops"),
        threshold: float = _default("threshold"),
        recency_penalty: float = _default("recency_penalty"),
        recency_window: int = _default("recency_window"),
        idle_timeout: float = _default("idle_timeout"),
        output_type: str = _default("output_type"),
        verbose: bool = _default("verbose"),
        auto_equip: bool = _default("auto_equip"),
        *,
        on_event: Observer | Iterable[Observer] | None = None,
        bid_cache: BidCache | bool | None = None,
        deployments: Deployments | dict[str, Any] | None = None,
        providers: Mapping[str, Provider] | None = None,
        human_selector: Human | None = None,
        **extensions: Any,
    ) -> None:
        """The reference's signature; every default is ChatConfig's (see _config.py).

        `bid_cache`: None (default) answers repeated requests of deterministic agents (sim/
        models, temperature 0) from the process's memory cache; True caches every agent's bids
        (opt-in where answers vary); False turns caching off; a BidCache (e.g. store-backed)
        is used as given. See _bidcache.py.

        `deployments`: several endpoints per model name, load-balanced by litellm's Router
        for this chat's runs only (docs/sweeps.md, "Several deployments"); other chats on the
        same model name keep their own api_base and key.

        `providers`: Provider objects by model-name prefix, for this chat only:
        `providers={"fake": p}` sends every `fake/...` agent's bids to `p.bid(request)`
        instead of litellm (docs/engine.md, "Providers"). Unnamed prefixes: `sim/` runs the
        built-in sims, everything else goes through litellm.

        People (docs/engine.md, "Human participants"): `agents` may list `Human`s among the
        agents (list order is the roster's, ties go to the earlier); `human_selector`, a
        Human who picks the speaker among the top bids each turn. Either gives the chat a
        `room` (thread-safe live state for a UI); without them `room` is None."""
        try:
            config = ChatConfig(
                name=name, description=description, max_loops=max_loops, threshold=threshold,
                recency_penalty=recency_penalty, recency_window=recency_window,
                idle_timeout=idle_timeout, output_type=output_type, verbose=verbose,
                auto_equip=auto_equip, **extensions,
            )
        except ValidationError as exc:
            raise explain(exc, "GroupChat argument") from None
        agent_list = _check_agents(agents, config.auto_equip)
        if config.auto_equip:
            for agent in agent_list:
                agent.equip()
        object.__setattr__(self, "_config", config)
        object.__setattr__(self, "agents", agent_list)
        roster = list(agents or [])
        try:  # as a spec does it (ChatSpec): a distractor must be on the roster
            check_distractors(config.distractors, [p.name if isinstance(p, Human) else
                                                   p.agent_name for p in roster])
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        object.__setattr__(self, "roster", roster)
        object.__setattr__(self, "humans", [p for p in roster if isinstance(p, Human)])
        object.__setattr__(self, "human_selector", human_selector)
        object.__setattr__(self, "room", _check_people(roster, human_selector, config.strategy))
        object.__setattr__(self, "last_run", None)
        object.__setattr__(self, "_observers", _observer_list(on_event))
        object.__setattr__(self, "_active", set())
        object.__setattr__(self, "_lock", threading.Lock())
        object.__setattr__(self, "_bid_cache", resolve_cache(bid_cache))
        object.__setattr__(self, "_routes", routes_for(deployments))
        object.__setattr__(self, "_providers", _check_providers(providers))

    # Config fields read and write through to the validated config, like the reference's attrs.
    def __getattr__(self, item: str) -> Any:
        if item in _CONFIG_FIELDS:
            return getattr(self.__dict__["_config"], item)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {item!r}")

    def __setattr__(self, key: str, value: Any) -> None:
        if key in _CONFIG_FIELDS:
            try:
                setattr(self._config, key, value)
            except ValidationError as exc:
                raise explain(exc, "GroupChat argument") from None
            return
        object.__setattr__(self, key, value)

    @property
    def bid_cache(self) -> BidCache | None:
        """The cache answering this chat's repeated bid requests (None: caching is off)."""
        return self._bid_cache

    @bid_cache.setter
    def bid_cache(self, value: BidCache | bool | None) -> None:
        object.__setattr__(self, "_bid_cache", resolve_cache(value))

    @property
    def config(self) -> ChatConfig:
        return self._config.model_copy()

    @property
    def conversation(self) -> list[dict[str, Any]]:
        """Messages of the last run as dicts (empty before the first run)."""
        return [m.as_dict() for m in self.last_run.messages] if self.last_run else []

    def add_observer(self, observer: Observer) -> None:
        """Watch every run of this chat: see `Observer` for `wants` (which event kinds) and
        `thread_safe` (called on the engine's loop thread)."""
        self._observers.append(observer)

    def remove_observer(self, observer: Observer) -> None:
        self._observers.remove(observer)

    # --- running --------------------------------------------------------------------------

    async def arun_record(self, task: str | Task,
                          streaming_callback: StreamingCallback | None = None,
                          *, run_id: str | None = None, observers: Iterable[Observer] = (),
                          _dispatch: Callable[..., None] | None = None) -> RunRecord:
        """Run one chat on the running loop and return its full typed record. A `Task` (a
        task with an answer, groupchat_core.outcomes) runs its prompt and the record gets its
        `outcome` (docs/outcomes.md). `run_id`: the id the run is recorded under (32 hex
        digits; default a new uuid4), so a caller that already named the work (the dashboard's
        job) shows one id for it everywhere. `observers`: watch this run only, after the
        chat's own (several runs of one chat at once each tell their own watchers)."""
        scored = task if isinstance(task, Task) else None
        if scored is not None:
            task = scored.prompt
        if not isinstance(task, str) or not task.strip():
            raise ConfigError("task must be a non-empty string or a groupchat_core.outcomes.Task")
        task = task.replace("\x00", "\ufffd")  # as for replies: no database stores NUL
        if run_id is not None and not _RUN_ID.fullmatch(run_id):
            raise ConfigError(f"run_id must be 32 lowercase hex digits (a uuid4 hex), got "
                              f"{run_id[:40]!r}")
        dispatch = _dispatch or _call_now
        watchers = [*self._observers, *observers, *self._console()]

        def emit(event: Event) -> None:
            for observer in watchers:
                if not observer_takes(observer, event.kind):
                    continue  # (bid_delta events go through emit_delta only)
                if observer_thread_safe(observer):
                    _guarded(observer, event)  # quick and thread-safe: no hop to the caller
                else:
                    dispatch(_guarded, observer, event)

        deltas = [o for o in watchers if observer_takes(o, "bid_delta")]

        def emit_delta(event: BidDelta) -> None:
            for observer in deltas:
                if observer_thread_safe(observer):
                    _guarded(observer, event)
                else:
                    dispatch(_guarded, observer, event)

        def post(message: Message) -> None:
            if streaming_callback is not None:
                dispatch(stream_message, streaming_callback, message)

        judge = [judge_agent(scored)] if scored is not None and scored.scorer == "judge" else []
        if any(self._provider(a) is LITELLM for a in [*self.agents, *judge]):
            await load_litellm_off_loop()  # token counting needs it; never import on the loop
            # before anything is spent: a judge without its key would fail after the run
            problems = self._credential_problems() + check_credentials(judge)
            if problems:
                raise ConfigError(credentials_error(problems))
        run = TurnLoop(self.agents, self._config.model_copy(), task, emit, post, self._bid_cache,
                       emit_delta if self.stream_bids and deltas else None, self._providers,
                       **self._scoring(scored), roster=self.roster, room=self.room,
                       human_selector=self.human_selector, run_id=run_id)
        current = asyncio.current_task()
        with self._lock:
            self._active.add((asyncio.get_running_loop(), current))
        try:
            with routed_by(self._routes):  # this chat's deployments only, never another's
                return await run.execute()
        finally:
            with self._lock:
                self._active.discard((asyncio.get_running_loop(), current))
            object.__setattr__(self, "last_run", run.record)

    def _scoring(self, scored: Task | None) -> dict[str, Any]:
        """The turn loop's scorer and the sims' answer key for a scored task (else none)."""
        if scored is None:
            return {}
        names = [a.agent_name for a in self.agents]

        async def score(record: RunRecord) -> Outcome:
            return await score_run(record, scored, names)

        return {"score": score, "answer_key": scored.answer_key()}

    def _credential_problems(self) -> list[str]:
        """Missing keys: routed agents are judged by their deployments (_deployment_checks)."""
        routes = self._routes
        ours = [a for a in self.agents if self._provider(a) is LITELLM]
        direct = [a for a in ours if routes is None or not routes.serves(a.model_name)]
        models = [a.model_name for a in ours]
        return check_credentials(direct) + key_problems(routes, models)

    def _provider(self, agent: Agent) -> Provider:
        return provider_for(agent.model_name, self._providers)

    async def arun(self, task: str | Task,
                   streaming_callback: StreamingCallback | None = None) -> Any:
        """Async twin of run(): callbacks and observers run on the caller's loop, in order.

        Model calls still run on the shared background loop, so litellm's per-loop clients and
        logging worker are never bound to a loop the caller may close (asyncio.run, notebooks).
        """
        try:
            record = await background_loop().arun_relaying(
                lambda relay: self.arun_record(task, streaming_callback, _dispatch=relay))
        except concurrent.futures.CancelledError:  # cancel(): the record says "cancelled"
            assert self.last_run is not None  # set before the run's task finishes cancelling
            record = self.last_run
        return format_output(record, self.output_type)

    def run(self, task: str | Task, streaming_callback: StreamingCallback | None = None) -> Any:
        """Run one chat synchronously; callbacks and observers run on the calling thread."""
        record = self._run_sync(task, streaming_callback)
        return format_output(record, self.output_type)

    def _run_sync(self, task: str | Task,
                  streaming_callback: StreamingCallback | None) -> RunRecord:
        try:
            return background_loop().run_relaying(
                lambda relay: self.arun_record(task, streaming_callback, _dispatch=relay),
                keep=lambda fn, args: fn is _guarded)  # observers still see the end
        except concurrent.futures.CancelledError:  # cancel(): the record says "cancelled"
            assert self.last_run is not None  # set before the run's task finishes cancelling
            return self.last_run

    def run_batch(self, tasks: Sequence[str | Task]) -> list[Any]:
        """One fresh, independent chat per task, in task order (batch_concurrency runs several)."""
        if self.room is not None:
            raise ConfigError("run_batch runs chats without people: a room holds one run at a "
                              "time (run the tasks one by one)")
        tasks = list(tasks)
        if self.batch_concurrency <= 1:
            return [self.run(task) for task in tasks]
        future = background_loop().submit(self._batch(tasks))
        return future.result()

    async def _batch(self, tasks: list[str | Task]) -> list[Any]:
        gate = asyncio.Semaphore(self.batch_concurrency)

        async def one(task: str | Task) -> Any:
            async with gate:
                return format_output(await self.arun_record(task), self.output_type)

        return list(await asyncio.gather(*(one(t) for t in tasks)))

    def cancel(self) -> None:
        """Stop every run of this chat in progress; what was posted is kept (stop: cancelled)."""
        with self._lock:
            active = list(self._active)
        for loop, task in active:
            if task is not None:
                loop.call_soon_threadsafe(task.cancel)

    def _console(self) -> list[Observer]:
        if not self.verbose:
            return []
        from ._console import VerboseConsole

        return [VerboseConsole()]

    # --- serialization --------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The chat configuration, without agents and conversation (as the reference)."""
        return self._config.model_dump()

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def to_spec(self) -> ChatSpec:
        """The full, secret-free spec (config plus agents) for JSON/YAML files."""
        return ChatSpec(**self._config.model_dump(), agents=[
            Agent(**a.to_spec()) for a in self.agents])

    @classmethod
    def from_spec(cls, spec: ChatSpec | dict[str, Any], *, people: Sequence[Human] = (),
                  **overrides: Any) -> GroupChat:
        """The spec's chat; `people` (Humans, which a spec does not carry) join the roster
        after its agents."""
        parsed = spec if isinstance(spec, ChatSpec) else parse_spec(spec)
        data = parsed.model_dump(exclude={"agents", "schema_version"})
        data.update(overrides)
        return cls(agents=[*(a.model_copy(deep=True) for a in parsed.agents), *people], **data)

    def __repr__(self) -> str:
        names = ", ".join(a.agent_name for a in self.agents)
        return f"GroupChat(name={self.name!r}, agents=[{names}], threshold={self.threshold!r})"


def _call_now(fn: Callable[..., None], *args: Any) -> None:
    fn(*args)


def _guarded(observer: Observer, event: Event) -> None:
    """An observer that raises is logged and skipped: watching a chat never breaks it."""
    try:
        observer(event)
    except Exception:
        logger.exception("observer %r failed on a %s event", observer, event.kind)


def _observer_list(on_event: Observer | Iterable[Observer] | None) -> list[Observer]:
    if on_event is None:
        return []
    if callable(on_event):
        return [on_event]
    return list(on_event)
