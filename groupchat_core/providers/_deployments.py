"""Several deployments of one model, load-balanced by litellm's Router (docs/sweeps.md,
"Several deployments").

Why: sweeps against real providers hit per-deployment rate limits; the same model served from
several endpoints (regions, accounts, a local server farm) multiplies what a sweep can do. A
deployments map names, per model, the endpoints that serve it:

    deployments:
      openai/gpt-4o-mini:
        - {name: east, api_base: https://east.example/v1, api_key_env: EAST_KEY, rpm: 60}
        - {name: west, api_base: https://west.example/v1, api_key_env: WEST_KEY, tpm: 90000}

Keys are named by environment variable only (never written in a spec, a store or a log). Agents
keep using the model's name; a call for a model with deployments goes through a
`litellm.Router` (usage-based routing: each deployment's rpm/tpm is respected, a failing
deployment is cooled down and routed around), and the deployment that answered is read back from
the response (`deployment_of`) for the bid record.

Scoped, never process-wide: deployments belong to the chat that declared them
(`GroupChat(deployments=...)`; a sweep passes its own to each cell's chat). A run sets ROUTES
to its chat's Routes (or None) for its own task and the tasks of its bids, so other chats on the
same loop, before, during and after, call their own api_base with their own key. Chats that
declare the same deployments (a sweep's cells) share one Router and so its rpm/tpm counts.

Limits pace, they never fail a request: when every deployment of a model declares rpm, their sum
is the model's pace (`pace_routed`, a WindowLimit shared like the Router): a request waits for
a permit before its own timeout starts (_requests.one_request), so a sweep asking for more
than its deployments allow slows down and finishes, instead of the Router finding them all full
and its retries running out the request's timeout (issue 42: 17 bids of 32 lost at rpm 20).
Where permits come from is one seam (`Pacing`), chosen once per process: this process's own
windows (LocalPacing), or, in a Ray sweep's worker, one limiter actor for the whole sweep
(sweeps/_ray_limits.py), so N workers together still send no more than the rpm.

The seam: `routed_call(kwargs)` returns an awaitable completion for a model with deployments in
the running chat, else None (the model-call code then calls litellm.acompletion as before).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .._errors import ConfigError
from .._secrets import hold_secrets
from ._endpoints import TRUSTED_BASES_ENV, endpoint_trusted
from ._limit_waits import queued
from ._ratelimit import WindowLimit

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_KEYISH = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL|API_BASE|BASE_URL", re.I)
MAX_DEPLOYMENTS = 64
COOLDOWN_S = 30.0
# The span a deployment's rpm counts over. 60 s: the Router's own calendar minute; with several
# deployments the Router keeps their rpm too (it spreads calls so none passes its own). A test
# may shorten it (rpm per that window); the Router, whose count is per minute only, then gets
# none. On Ray the driver's value is the sweep's (its limiter actor counts over it).
RPM_WINDOW_S = 60.0
# Per-request settings of the model-call seam that name one endpoint: a routed call drops them
# (they would override the deployment the Router picked).
_ENDPOINT_KWARGS = ("api_base", "api_key", "client", "base_url")


class Deployment(BaseModel):
    """One endpoint serving a model. `model`: the litellm model string it is called with (the
    group's name by default); `api_key_env`: the environment variable holding its key."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    name: str = Field(min_length=1, max_length=100)
    model: str | None = None
    api_base: str | None = None
    api_key_env: str | None = None
    rpm: int | None = Field(default=None, ge=1)
    tpm: int | None = Field(default=None, ge=1)

    @field_validator("api_key_env")
    @classmethod
    def _env(cls, v: str | None) -> str | None:
        if v is not None and not _ENV_NAME.match(v):
            raise ValueError("api_key_env must be an environment variable name (the key itself "
                             "never goes in a spec)")
        return v


Deployments = dict[str, list[Deployment]]


def parse_deployments(data: Any, where: str = "deployments") -> Deployments:
    """Validate a deployments map (model name -> list of deployments); ConfigError naming the
    problem otherwise."""
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where} must map a model name to a list of deployments")
    parsed: Deployments = {}
    for model, items in data.items():
        if not isinstance(model, str) or not model.strip():
            raise ConfigError(f"{where}: model names must be non-empty strings")
        if not isinstance(items, list) or not 1 <= len(items) <= MAX_DEPLOYMENTS:
            raise ConfigError(f"{where}.{model} must be a list of 1 to {MAX_DEPLOYMENTS} "
                              "deployments")
        try:
            found = [Deployment.model_validate(item) for item in items]
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"]) or "deployment"
            text = str(err["msg"]).removeprefix("Value error, ")
            raise ConfigError(f"{where}.{model}: {field}: {text} (each deployment takes name, "
                              "model, api_base, api_key_env, rpm, tpm)") from None
        names = [d.name for d in found]
        if len(set(names)) != len(names):
            raise ConfigError(f"{where}.{model}: deployment names must be unique")
        parsed[model] = found
    return parsed


def to_data(deployments: Deployments) -> dict[str, list[dict[str, Any]]]:
    return {m: [d.model_dump(exclude_none=True) for d in ds] for m, ds in deployments.items()}


def untrusted_key_problem(group: str, d: Deployment, env: Mapping[str, str]) -> str | None:
    """A server key (named by `api_key_env`) goes only to a trusted endpoint, as an agent's
    does (docs/engine.md, Security model): a sweep file must not send the server's keys to a
    base its author controls."""
    if not d.api_base or endpoint_trusted(d.model or group, d.api_base, env):
        return None
    return f"deployment {d.name!r} of {group} would send the key in {d.api_key_env} to " \
           f"untrusted api_base {d.api_base}; ask an admin to trust it via " \
           f"{TRUSTED_BASES_ENV}, or drop api_key_env for an open server"


def model_list(deployments: Deployments, env: Mapping[str, str] | None = None
               ) -> list[dict[str, Any]]:
    """litellm Router's model_list; keys are read from `env` (the process's) only here."""
    env = os.environ if env is None else env
    out: list[dict[str, Any]] = []
    for group, items in deployments.items():
        for d in items:
            params: dict[str, Any] = {"model": d.model or group}
            if d.api_base:
                params["api_base"] = d.api_base
            if d.api_key_env:
                key = env.get(d.api_key_env)
                if not key:
                    raise ConfigError(f"deployment {d.name!r} of {group} needs its key in "
                                      f"{d.api_key_env}, which is not set; set it or drop "
                                      "api_key_env")
                refused = untrusted_key_problem(group, d, env)
                if refused:
                    raise ConfigError(refused)
                params["api_key"] = key
                hold_secrets([key])  # masked in any model output that echoes it (_secrets.py)
            elif d.api_base:
                params["api_key"] = "sk-no-key-required"  # an open (local) server
            if d.rpm:
                params["rpm"] = d.rpm
            if d.tpm:
                params["tpm"] = d.tpm
            out.append({"model_name": group, "litellm_params": params,
                        "model_info": {"id": deployment_id(group, d)}})
    return out


def deployment_id(group: str, d: Deployment) -> str:
    """The Router's id of a deployment: its name, plus a digest of where it points (the Router
    keeps rpm/tpm usage per id for the minute, across Routers of the process: two deployments
    that share a name but not an endpoint must not share a count)."""
    digest = hashlib.sha256(f"{group}\n{d.model}\n{d.api_base}".encode()).hexdigest()[:12]
    return f"{d.name}#{digest}"


class Routes:
    """The deployments one chat (or one sweep's cells) declared, and the Router serving them.

    Why scoped: deployments used to be the process's, so after a sweep (or while it ran) an
    ordinary chat on the same model name was routed to the sweep's endpoints, its own api_base
    and key ignored. A chat's runs set ROUTES to its own Routes (or to None), so a call is
    routed only for the chat that declared the model's deployments."""

    def __init__(self, deployments: Deployments) -> None:
        self.deployments: Deployments = dict(deployments)

    def serves(self, model: str) -> bool:
        return model in self.deployments

    def router(self) -> Any:
        return _shared_router(self.deployments)

    async def call(self, request: dict[str, Any]) -> Any:
        response = await self.router().acompletion(**request)
        _keep_unknown_cost_unknown(response)
        return response

    def deployment_of(self, response: Any) -> str | None:
        hidden = getattr(response, "_hidden_params", None) or {}
        model_id = hidden.get("model_id")
        for group, items in self.deployments.items():
            for d in items:
                if deployment_id(group, d) == model_id:
                    return d.name
        return None


# The deployments in force for the running chat (set by GroupChat.arun_record around each run,
# inherited by the tasks of its bids); None: nothing is routed.
ROUTES: ContextVar[Routes | None] = ContextVar("groupchat_routes", default=None)


def routes_for(deployments: Deployments | Mapping[str, Any] | None) -> Routes | None:
    """A Routes for these deployments (parsed and checked first), None for none."""
    parsed = deployments if _is_parsed(deployments) else parse_deployments(deployments)
    return Routes(parsed) if parsed else None  # type: ignore[arg-type]


def _is_parsed(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(v, list) and all(isinstance(d, Deployment) for d in v) for v in value.values())


@contextmanager
def routed_by(routes: Routes | None) -> Iterator[None]:
    """Route the calls made inside (this task and the tasks it starts) through `routes` only."""
    token = ROUTES.set(routes)
    try:
        yield
    finally:
        ROUTES.reset(token)


_routers: OrderedDict[str, Any] = OrderedDict()
_routers_lock = threading.Lock()
MAX_ROUTERS = 16


def _shared_router(deployments: Deployments) -> Any:
    """One Router per distinct set of deployments (and keys), shared by every chat declaring
    the same set: the cells of a sweep share rpm/tpm counts and cooldowns."""
    params = model_list(deployments)
    for group, items in deployments.items():
        # pace_routed alone paces a lone deployment (the Router's own count, per calendar
        # minute, refused requests the window had granted, and its waits ran out their
        # timeouts), and every deployment when the window is not the Router's minute
        if len(items) == 1 or _pacing.window_s != 60.0:
            for item in params:
                if item["model_name"] == group:
                    item["litellm_params"].pop("rpm", None)
    key = hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()
    with _routers_lock:
        router = _routers.get(key)
        if router is None:
            router = _routers[key] = _new_router(params)
            while len(_routers) > MAX_ROUTERS:
                _routers.popitem(last=False)
        _routers.move_to_end(key)
        return router


def _new_router(params: list[dict[str, Any]]) -> Any:
    """A Router, without the empty price entries it writes into litellm's process-wide price
    map for models litellm cannot price (they would read as $0 for every later call to the
    model, routed or not: unknown cost must stay unknown)."""
    from litellm.router import Router
    from litellm.types.router import AllowedFailsPolicy, RetryPolicy

    from ._litellm import litellm_module

    prices = litellm_module().model_cost
    before = set(prices)
    router = Router(
        model_list=params,
        routing_strategy="usage-based-routing-v2",  # honours rpm / tpm
        num_retries=0,  # the engine's retries count and bound every call
        # a deployment that fails (5xx, timeout, refused) sits out COOLDOWN_S; one at its
        # rpm/tpm is only skipped while it is (not a fault)
        allowed_fails=0, cooldown_time=COOLDOWN_S,
        allowed_fails_policy=AllowedFailsPolicy(RateLimitErrorAllowedFails=10**6),
        # a deployment found at its limit when the call starts (concurrent bids race for the
        # last slot): the Router picks another one at once
        retry_policy=RetryPolicy(RateLimitErrorRetries=3),
        enable_pre_call_checks=False)
    for name in set(prices) - before:
        if "#" not in name and not _has_price(prices[name]):  # "#": a deployment's own id
            del prices[name]
    return router


def _has_price(entry: Any) -> bool:
    """A price-map entry that prices something: a number, not the None-filled template litellm
    writes for a model it met but cannot price (which still has `..._cost_per_token` keys)."""
    return isinstance(entry, dict) and any(
        "cost_per" in k and isinstance(v, int | float) and not isinstance(v, bool)
        for k, v in entry.items())


def _keep_unknown_cost_unknown(response: Any) -> None:
    """The Router reports $0 for a model litellm cannot price; a direct call reports None.
    Ask the price map for the deployment's model: no price known means the cost is unknown
    (None), so a bid on it reads "unknown", never $0.0000."""
    hidden = getattr(response, "_hidden_params", None)
    if not isinstance(hidden, dict) or hidden.get("response_cost"):
        return
    model = str(hidden.get("litellm_model_name") or getattr(response, "model", "") or "")
    usage = getattr(response, "usage", None)
    hidden["response_cost"] = price(model, getattr(usage, "prompt_tokens", None),
                                    getattr(usage, "completion_tokens", None))


def price(model: str, prompt: Any, completion: Any) -> float | None:
    """USD for these tokens from litellm's price map; None when no price is known."""
    if not isinstance(prompt, int) or not isinstance(completion, int):
        return None
    from ._litellm import litellm_module

    litellm = litellm_module()
    bare = model.split("/", 1)[-1]
    if not any(_has_price(litellm.model_cost.get(name)) for name in (model, bare)):
        return None  # not in the price map (or only an empty entry a Router wrote)
    try:
        costs = litellm.cost_per_token(model=model, prompt_tokens=prompt,
                                       completion_tokens=completion)
    except Exception:  # "This model isn't mapped yet"
        return None
    return float(costs[0]) + float(costs[1])


def has_deployments(model: str) -> bool:
    routes = ROUTES.get()
    return routes is not None and routes.serves(model)


def routed_bases(model: str) -> list[str | None] | None:
    """The api_base of each deployment serving `model` in the running chat (None: not
    routed); for the loopback guard of tests (GROUPCHAT_BLOCK_REMOTE_CALLS)."""
    routes = ROUTES.get()
    if routes is None or not routes.serves(model):
        return None
    return [d.api_base for d in routes.deployments[model]]


def routed_call(kwargs: dict[str, Any]) -> Awaitable[Any] | None:
    """The completion for a model with deployments in the running chat (through the Router,
    endpoint settings of the agent dropped), else None: the caller then uses
    litellm.acompletion itself."""
    model = str(kwargs.get("model", ""))
    routes = ROUTES.get()
    if routes is None or not routes.serves(model):
        return None
    # num_retries=0 from the engine would also switch off the Router's retry on a deployment
    # found at its limit (no request made); the engine's own retries stay as they are
    request = {k: v for k, v in kwargs.items() if k not in _ENDPOINT_KWARGS
               and k != "num_retries"}
    return routes.call(request)


_pacers: dict[str, WindowLimit] = {}
_pacers_lock = threading.Lock()


def group_rpm(items: list[Deployment]) -> int | None:
    """The requests per minute a model's deployments take together: the sum of their rpm when
    every one declares rpm, else None (one without a limit takes what the others cannot)."""
    if not items or any(d.rpm is None for d in items):
        return None
    return sum(d.rpm or 0 for d in items)


def pace_key(group: str, items: list[Deployment]) -> str:
    """Names one model's set of deployments for its pace: deployment ids and rpm only (an id is
    a name plus a digest of where it points: no key is ever in it)."""
    ids = sorted(f"{deployment_id(group, d)}:{d.rpm}" for d in items)
    return json.dumps([group, ids])


class Pacing(Protocol):
    """Where a process's requests for paced deployments get their permits: this process's own
    windows (LocalPacing, the default) or one limiter for a whole Ray sweep (ClusterPacing in
    sweeps/_ray_limits.py, installed by its CellWorker actors). Chosen once per process
    (`install_pacing`); `window_s` is the span each rpm counts over."""

    @property
    def window_s(self) -> float: ...

    async def acquire(self, group: str, items: list[Deployment], rpm: int) -> Any:
        """Wait for a permit for one request of `group` (its deployments take `rpm` per
        window); the permit, to hand back to `release` when the request ends."""
        ...

    def release(self, permit: Any) -> None: ...


class LocalPacing:
    """One WindowLimit per model and set of deployments (and window) in this process, shared
    by every chat that declares the same ones, as their Router is: a sweep's cells queue in one
    line."""

    @property
    def window_s(self) -> float:
        return RPM_WINDOW_S

    async def acquire(self, group: str, items: list[Deployment], rpm: int) -> Any:
        key = json.dumps([pace_key(group, items), RPM_WINDOW_S])
        with _pacers_lock:
            pacer = _pacers.get(key)
            if pacer is None:
                pacer = _pacers[key] = WindowLimit(rpm, RPM_WINDOW_S)
        await pacer.acquire()
        return pacer

    def release(self, permit: Any) -> None:
        permit.release()


_pacing: Pacing = LocalPacing()


def install_pacing(pacing: Pacing | None) -> None:
    """Make `pacing` this process's (None: back to the local one)."""
    global _pacing
    _pacing = LocalPacing() if pacing is None else pacing


def current_pacing() -> Pacing:
    return _pacing


@asynccontextmanager
async def pace_routed(kwargs: dict[str, Any]) -> AsyncIterator[float]:
    """Hold one of the running chat's deployments' requests for this model (the sum of their
    rpm per window) while the request runs; yields the seconds waited, 0.0 for a model not
    routed or not limited. The caller starts the request's timeout inside, after the wait."""
    model = str(kwargs.get("model", ""))
    routes = ROUTES.get()
    items = None if routes is None or not routes.serves(model) else routes.deployments[model]
    rpm = None if items is None else group_rpm(items)
    if items is None or rpm is None:
        yield 0.0
        return
    pacing = _pacing
    start = time.monotonic()
    async with queued():  # the bid's deadline stands still while it waits (_limit_waits.py)
        permit = await pacing.acquire(model, items, rpm)
    try:
        yield max(0.0, time.monotonic() - start)
    finally:
        pacing.release(permit)


def deployment_of(response: Any) -> str | None:
    """The name of the deployment that answered a routed call (None for a direct call)."""
    routes = ROUTES.get()
    return None if routes is None else routes.deployment_of(response)


def key_variables(spec: Mapping[str, Any], deployments: Deployments | None = None) -> list[str]:
    """Environment variables a chat spec's calls read (for workers elsewhere): each agent's
    provider key and base-URL variables (e.g. OPENAI_API_KEY) and its deployments' key
    variables. In-process models (sim/) need none."""
    from ._routing import in_process_provider

    names: set[str] = set()
    for d in (deployments or {}).values():
        names.update(x.api_key_env for x in d if x.api_key_env)
    for agent in spec.get("agents") or []:
        model = str(agent.get("model_name", "")) if isinstance(agent, Mapping) else ""
        if not model or in_process_provider(model) is not None:
            continue
        provider = model.split("/", 1)[0] if "/" in model else "openai"
        prefix = re.sub(r"[^A-Za-z0-9]", "_", provider).upper() + "_"
        names.update(n for n in os.environ if n.startswith(prefix) and _KEYISH.search(n))
    return sorted(names)
