"""Engine benchmarks (issue: engine). Measurement only: nothing here asserts on time.

    python -m bench.engine            # full run, about 2 minutes on 2 cores
    python -m bench.engine --quick    # smoke run, well under a minute
    python -m bench.engine --write    # also rewrite the figures section of BENCHMARKS.md

1. turn wall time at 200 ms bid latency, N = 2/8/16/32 agents, against FakeOpenAIServer running
   in a separate (spawned) process, beside a bare asyncio.gather of the same N litellm calls on
   the same background loop;
2. engine CPU per bid beyond litellm's own call cost (zero latency), litellm's CPU per call, a
   cProfile of litellm's call path, and litellm settings that might skip unneeded work;
3. 1,000 sim chats of the debate trio; 4. cold start (import + one sim chat) in a subprocess.
"""

from __future__ import annotations

import asyncio
import cProfile
import datetime as dt
import os
import pstats
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from bench import _harness as h

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

LATENCY_S = 0.2
MODEL = "openai/gpt-4o-mini"  # priced in litellm's local cost map: cost is computed as for real
UNPRICED_MODEL = "openai/local-model"  # what a local server usually is: no price known
API_KEY = "sk-local"
TASK = "Should hospitals adopt AI diagnosis? Weigh the benefits, the risks and the costs."
DEBATE = (
    ("Optimist", "You argue for the benefits."),
    ("Pessimist", "You argue for the risks."),
    ("Realist", "You seek a balanced analysis."),
)
REFERENCE_TURN_PER_LATENCY = {3: 1.38, 8: 1.85, 16: 2.41, 32: 3.8}
TARGETS = {"ratio": 1.10, "cpu_ms": 1.0, "sims_s": 60.0, "cold_s": 1.5}


@dataclass(frozen=True)
class Plan:
    sizes: tuple[int, ...] = (2, 8, 16, 32)
    reps: int = 9
    cpu_pairs: int = 140
    profile_calls: int = 200
    setting_pairs: int = 50
    sim_chats: int = 1000
    cold_runs: int = 5


QUICK = Plan(sizes=(2, 8), reps=2, cpu_pairs=10, profile_calls=40, setting_pairs=4,
             sim_chats=100, cold_runs=2)


def silent_bids(server: Any, latency: float = LATENCY_S) -> None:
    """The server's setup (in its own process): every bid silent, after `latency` seconds."""
    from groupchat_core.testing import tool_call

    server.default_latency = latency
    server.set_responder(None, lambda body: tool_call(0.0, ""))


# --- shared helpers ---------------------------------------------------------------------------


def http_chat(base_url: str, n: int, model: str, api_key: str = API_KEY) -> Any:
    from groupchat_core import Agent, GroupChat

    agents = [Agent(agent_name=f"Agent{i}", system_prompt=DEBATE[i % 3][1], model_name=model,
                    api_base=base_url, api_key=api_key) for i in range(n)]
    return GroupChat(agents=agents, max_loops=2)  # task + one turn: exactly one turn runs


def one_lull_turn(chat: Any, n: int) -> bool:
    run = chat.last_run
    return (run.stop_reason == "lull" and len(run.turns) == 1 and len(run.bids) == n
            and all(b.error is None for b in run.bids))


async def _gather_calls(litellm: Any, base_url: str, model: str, batch: Sequence[Any],
                        drain: bool = False, api_key: str = API_KEY) -> list[Any]:
    """The bare baseline: the engine's request for each agent, sent with one asyncio.gather."""
    from groupchat_core import FORCED_RESPOND_CHOICE, RESPOND_TOOL

    replies = await asyncio.gather(*(litellm.acompletion(
        model=model, messages=messages, tools=[RESPOND_TOOL], tool_choice=FORCED_RESPOND_CHOICE,
        temperature=0.5, max_tokens=1024, timeout=60.0, num_retries=0, max_retries=0,
        api_base=base_url, api_key=api_key) for messages in batch))
    if drain:  # let litellm's post-call logging tasks finish inside the measured window
        await asyncio.sleep(0.005)
    return list(replies)


def bare(litellm: Any, base_url: str, model: str, batch: Sequence[Any], times: int = 1,
          drain: bool = False, api_key: str = API_KEY) -> list[Any]:
    from groupchat_core import background_loop

    async def repeat() -> list[Any]:
        replies: list[Any] = []
        for _ in range(times):
            replies = await _gather_calls(litellm, base_url, model, batch, drain, api_key)
        return replies

    return background_loop().submit(repeat()).result()


# --- 1. turn wall time ------------------------------------------------------------------------


@dataclass
class TurnRow:
    n: int
    turn_ms: float
    bare_ms: float
    slowest_bid_ms: float
    one_turn_ok: bool

    @property
    def ratio(self) -> float:
        return self.turn_ms / self.bare_ms

    @property
    def per_latency(self) -> float:
        return self.turn_ms / (LATENCY_S * 1000.0)


def _turn_row(server: h.ServerProcess, litellm: Any, n: int, reps: int) -> TurnRow:
    chat = http_chat(server.base_url, n, MODEL)
    chat.run(TASK)  # untimed warm-up: connections for n agents, prompt caches
    batch = server.ask("messages", n)
    bare(litellm, server.base_url, MODEL, batch)
    slowest: list[float] = []
    ok = True

    def engine() -> float:
        nonlocal ok
        seconds = h.repeat(lambda: chat.run(TASK), 1)[0]
        ok = ok and one_lull_turn(chat, n)
        slowest.append(max(b.latency_ms for b in chat.last_run.bids))
        return seconds

    found = h.alternate({"engine": engine, "bare": lambda: h.repeat(lambda: bare(
        litellm, server.base_url, MODEL, batch), 1)[0]}, reps)
    return TurnRow(n, 1000 * h.median(found["engine"]), 1000 * h.median(found["bare"]),
                   h.median(slowest), ok)


def bench_turns(server: h.ServerProcess, litellm: Any, plan: Plan) -> list[TurnRow]:
    server.ask("latency", LATENCY_S)
    rows = []
    for n in plan.sizes:
        rows.append(_turn_row(server, litellm, n, plan.reps))
        print(f"  N={n:>2}: turn {rows[-1].turn_ms:6.1f} ms, bare {rows[-1].bare_ms:6.1f} ms",
              flush=True)
    return rows


# --- 2. CPU per bid ---------------------------------------------------------------------------


@dataclass
class CpuRow:
    model: str
    bids: int
    engine_cpu_s: float
    bare_cpu_s: float
    overhead_ms_per_bid: float  # median over pairs (one chat, one bare gather)
    mean_overhead_ms_per_bid: float  # totals: (engine CPU - bare CPU) / bids
    litellm_ms_per_call: float


def settled_cpu(fn: Callable[[], Any]) -> float:
    """CPU of fn plus the loop work it leaves behind (litellm's post-call logging tasks)."""
    from groupchat_core import background_loop

    start = time.process_time()
    fn()
    background_loop().submit(asyncio.sleep(0.01)).result()
    return time.process_time() - start


def bench_cpu(server: h.ServerProcess, litellm: Any, plan: Plan, model: str) -> CpuRow:
    """Pairs of (one-turn chat, bare gather of the same 8 calls), order alternating, so load
    from other tenants of the machine hits both sides alike."""
    server.ask("latency", 0.0)
    n = 8
    chat = http_chat(server.base_url, n, model)
    chat.run(TASK)
    batch = server.ask("messages", n)
    bare(litellm, server.base_url, model, batch, times=2)
    found = h.alternate({
        "engine": lambda: settled_cpu(lambda: chat.run(TASK)),
        "bare": lambda: settled_cpu(lambda: bare(litellm, server.base_url, model, batch))},
        plan.cpu_pairs)
    engine_s, bare_s = found["engine"], found["bare"]
    bids = len(engine_s) * n
    median = h.median(e - b for e, b in zip(engine_s, bare_s, strict=True)) / n * 1000
    mean = (sum(engine_s) - sum(bare_s)) / bids * 1000
    return CpuRow(model, bids, sum(engine_s), sum(bare_s), median, mean,
                  sum(bare_s) / bids * 1000)


# --- 2b. where litellm spends its CPU --------------------------------------------------------


class ProfilingExecutor(ThreadPoolExecutor):
    """A default executor that profiles its work: litellm runs completion() in the executor."""

    def __init__(self) -> None:
        super().__init__(thread_name_prefix="profiled")
        self.profiles: list[cProfile.Profile] = []
        self._local = threading.local()
        self._plock = threading.Lock()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        return super().submit(self._profiled, fn, *args, **kwargs)

    def _profiled(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        profile = getattr(self._local, "profile", None)
        if profile is None:
            profile = self._local.profile = cProfile.Profile()
            with self._plock:
                self.profiles.append(profile)
        return profile.runcall(fn, *args, **kwargs)


HOTSPOTS = (  # (label, path fragment, function): inclusive times, so rows may nest
    ("litellm `completion()` request building (runs in the executor)", "litellm/main.py",
     "completion"),
    ("  of which `get_optional_params`", "litellm/utils.py", "get_optional_params"),
    ("openai SDK `async_transform` of request params (messages, tools)",
     "openai/_utils/_transform.py", "async_transform"),
    ("HTTP round trip: httpx client over litellm's aiohttp transport", "httpx/_client.py",
     "send"),
    ("response parse: openai SDK `parse`", "openai/_legacy_response.py", "parse"),
    ("response to litellm `ModelResponse`", "convert_dict_to_response.py",
     "convert_to_model_response_object"),
    ("cost: `completion_cost` for `_hidden_params['response_cost']`", "litellm/cost_calculator.py",
     "completion_cost"),
    ("success logging, no callbacks set (`async_success_handler`)", "litellm_logging.py",
     "async_success_handler"),
    ("  of which standard logging payload", "litellm_logging.py",
     "get_standard_logging_object_payload"),
    ("`responses_api_bridge_check` (twice per call)", "litellm/main.py",
     "responses_api_bridge_check"),
    ("`function_setup` (logging object, call id)", "litellm/utils.py", "function_setup"),
    ("`get_model_info_helper` (model-map lookups)", "litellm/utils.py", "get_model_info_helper"),
)


@dataclass
class Profile:
    calls: int
    cpu_ms_per_call: float  # process_time while profiled (profiler overhead included)
    profiled_ms_per_call: float  # time the profiler saw, minus waiting in epoll
    hotspots: list[tuple[str, float, float]] = field(default_factory=list)  # label, ms, share
    top: list[tuple[str, float]] = field(default_factory=list)


def _cumulative(stats: pstats.Stats, fragment: str, name: str) -> float:
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    return sum(v[3] for (path, _, fn), v in raw.items() if fn == name and fragment in path)


def profile_litellm(server: h.ServerProcess, litellm: Any, plan: Plan) -> Profile:
    from groupchat_core import background_loop

    server.ask("latency", 0.0)
    batch = server.ask("messages", 8)
    runner, executor, loop_profile = background_loop(), ProfilingExecutor(), cProfile.Profile()
    gathers = max(1, plan.profile_calls // len(batch))

    async def profiled() -> None:
        asyncio.get_running_loop().set_default_executor(executor)
        loop_profile.enable()
        try:
            for _ in range(gathers):
                await _gather_calls(litellm, server.base_url, MODEL, batch, drain=True)
        finally:
            loop_profile.disable()
            asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor())

    cpu = h.repeat(lambda: runner.submit(profiled()).result(), 1, clock=time.process_time)[0]
    executor.shutdown()
    stats = pstats.Stats(loop_profile)
    for profile in executor.profiles:
        stats.add(profile)
    calls = gathers * len(batch)
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    waiting = sum(v[2] for (_, _, fn), v in raw.items() if "of 'select.epoll'" in fn)
    busy = sum(v[2] for v in raw.values()) - waiting
    result = Profile(calls, cpu / calls * 1000, busy / calls * 1000)
    for label, fragment, name in HOTSPOTS:
        total = _cumulative(stats, fragment, name)
        result.hotspots.append((label, total / calls * 1000, total / busy))
    inside = [(f"{Path(p).name}:{fn}", v[3]) for (p, _, fn), v in raw.items()
              if "site-packages/litellm/" in p and v[3] < 0.5 * busy]
    result.top = [(name, t / calls * 1000) for name, t in sorted(inside, key=lambda x: -x[1])[:15]]
    return result


# --- 2c. litellm settings that might skip work -----------------------------------------------

CANDIDATE_SETTINGS: tuple[tuple[str, Any], ...] = (
    ("disable_end_user_cost_tracking", True),
    ("turn_off_message_logging", True),
    ("callbacks", []),
    ("disable_streaming_logging", True),
    ("cache", None),
    ("telemetry", False),
    ("drop_params", True),
    ("disable_token_counter", True),
    ("disable_aiohttp_transport", True),
    # not a module setting: an environment variable litellm reads on every openai/ call; it
    # sends the request through litellm's own HTTP handler instead of the openai SDK
    ("env:EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER", "true"),
)


@dataclass
class SettingRow:
    setting: str
    status: str
    base_ms: float | None = None
    with_ms: float | None = None
    features: str = ""

    @property
    def change(self) -> float | None:
        if self.base_ms is None or self.with_ms is None:
            return None
        return self.with_ms / self.base_ms - 1


def _get(litellm: Any, name: str) -> Any:
    if name.startswith("env:"):
        return os.environ.get(name[4:])
    return getattr(litellm, name)


def _set(litellm: Any, name: str, value: Any) -> Any:
    old = _get(litellm, name)
    if not name.startswith("env:"):
        setattr(litellm, name, value)
    elif value is None:
        os.environ.pop(name[4:], None)
    else:
        os.environ[name[4:]] = value
    return old


def _features(litellm: Any, server: h.ServerProcess, batch: Sequence[Any], key: str) -> str:
    """Do usage tokens, cost and token counting still work, bare and through the engine?"""
    reply = bare(litellm, server.base_url, MODEL, batch[:1], api_key=key)[0]
    cost = (getattr(reply, "_hidden_params", None) or {}).get("response_cost")
    usage = getattr(reply.usage, "prompt_tokens", None)
    chat = http_chat(server.base_url, 2, MODEL, api_key=key)
    chat.run(TASK)
    bid = chat.last_run.bids[0]
    parsed = bid.path == "tool_call" and bid.error is None
    counted = litellm.token_counter(model=MODEL, text=TASK)  # the engine's transcript budget
    broken = [what for what, ok in (("usage", usage), ("cost", cost is not None),
                                    ("engine usage", bid.prompt_tokens), ("tool call", parsed),
                                    ("engine cost", bid.cost_usd is not None),
                                    ("token_counter", counted)) if not ok]
    if broken:
        return "BROKEN: " + ", ".join(broken)
    return "tool call, usage, cost, token_counter ok"


def _measure_setting(litellm: Any, server: h.ServerProcess, batch: Sequence[Any], plan: Plan,
                     changes: Sequence[tuple[str, Any]]) -> tuple[float, float, str]:
    """Per-call CPU without and with the change: single gathers of 8, alternating (the change
    is applied around each with-gather). The with-calls use their own API key, so litellm builds
    them their own cached client (a transport setting takes effect there)."""
    key = API_KEY + "-" + "-".join(name for name, _ in changes or [("control", None)])

    def plain() -> float:
        return settled_cpu(lambda: bare(litellm, server.base_url, MODEL, batch))

    def changed() -> float:
        old = [(name, _set(litellm, name, value)) for name, value in changes]
        try:
            return settled_cpu(lambda: bare(litellm, server.base_url, MODEL, batch,
                                              api_key=key))
        finally:
            for name, value in old:
                _set(litellm, name, value)

    changed()  # settle: the new client's first connections
    found = h.alternate({"plain": plain, "changed": changed}, plan.setting_pairs)
    old = [(name, _set(litellm, name, value)) for name, value in changes]
    try:
        features = _features(litellm, server, batch, key)
    finally:
        for name, value in old:
            _set(litellm, name, value)
    per_call = 1000 / len(batch)
    return h.median(found["plain"]) * per_call, h.median(found["changed"]) * per_call, features


def try_settings(server: h.ServerProcess, litellm: Any, plan: Plan) -> list[SettingRow]:
    server.ask("latency", 0.0)
    batch = server.ask("messages", 8)
    base, control, features = _measure_setting(litellm, server, batch, plan, [])
    rows = [SettingRow("control: nothing changed, own client", "measured (noise floor)", base,
                       control, features)]
    helpful: list[tuple[str, Any]] = []
    # a setting "helps" only if it beats twice the control's drift (and at least 5 %)
    bar = -max(0.05, 2 * abs(rows[0].change or 0.0))
    for name, value in CANDIDATE_SETTINGS:
        label = f"{name[4:]}={value}" if name.startswith("env:") else f"litellm.{name} = {value!r}"
        if not name.startswith("env:") and not hasattr(litellm, name):
            rows.append(SettingRow(label, "absent in this litellm"))
            continue
        if _get(litellm, name) == value:
            rows.append(SettingRow(label, "already the default: nothing to skip"))
            continue
        base, with_setting, features = _measure_setting(litellm, server, batch, plan,
                                                         [(name, value)])
        rows.append(SettingRow(label, "measured", base, with_setting, features))
        change = rows[-1].change
        if change is not None and change < bar and not features.startswith("BROKEN"):
            helpful.append((name, value))
        print(f"  {label}: {base:.2f} -> {with_setting:.2f} ms/call ({features})", flush=True)
    if len(helpful) > 1:
        base, with_setting, features = _measure_setting(litellm, server, batch, plan, helpful)
        names = " + ".join(n for n, _ in helpful)
        rows.append(SettingRow(f"combined: {names}", "measured", base, with_setting, features))
    return rows


# --- 3. sim throughput and 4. cold start ------------------------------------------------------


@dataclass
class SimResult:
    chats: int
    wall_s: float
    mean_messages: float
    litellm_loaded: bool

    @property
    def per_1000_s(self) -> float:
        return self.wall_s / self.chats * 1000


def bench_sims(chats: int) -> SimResult:
    from groupchat_core import Agent, GroupChat

    messages = 0
    start = time.perf_counter()
    for seed in range(chats):
        agents = [Agent(agent_name=name, system_prompt=prompt, model_name="sim/balanced")
                  for name, prompt in DEBATE]
        chat = GroupChat(agents=agents, max_loops=20, seed=seed)
        chat.run(TASK)
        messages += len(chat.last_run.messages)
    wall = time.perf_counter() - start
    return SimResult(chats, wall, messages / chats, "litellm" in sys.modules)


COLD_START = f"""
import sys
from groupchat_core import Agent, GroupChat
agents = [Agent(agent_name=n, system_prompt=p, model_name="sim/balanced") for n, p in {DEBATE!r}]
GroupChat(agents=agents, max_loops=20, seed=1).run({TASK!r})
print("litellm" in sys.modules)
"""


@dataclass
class ColdResult:
    runs: list[float]
    litellm_imported: bool

    @property
    def median_s(self) -> float:
        return h.median(self.runs)


def bench_cold_start(runs: int) -> ColdResult:
    said: list[str] = []
    times = h.repeat(lambda: said.append(subprocess.run(
        [sys.executable, "-c", COLD_START], cwd=h.ROOT, check=True, capture_output=True,
        text=True).stdout.strip()), runs)
    return ColdResult(times, any(out.endswith("True") for out in said))


# --- report ---------------------------------------------------------------------------------


def _mark(ok: bool) -> str:
    return "pass" if ok else "**miss**"


@dataclass
class Results:
    plan: Plan
    quick: bool
    litellm_import_s: float = 0.0
    first_chat_s: float = 0.0
    turns: list[TurnRow] = field(default_factory=list)
    cpu: list[CpuRow] = field(default_factory=list)
    profile: Profile | None = None
    settings: list[SettingRow] = field(default_factory=list)
    sims: SimResult | None = None
    cold: ColdResult | None = None


def _turn_table(results: Results) -> list[str]:
    lines = ["| N agents | turn (median ms) | bare gather (median ms) | engine / bare | "
             "turn / latency | reference turn / latency | slowest bid (ms) | target ≤ 1.10 |",
             "|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in results.turns:
        ref = REFERENCE_TURN_PER_LATENCY.get(r.n)
        note = "" if r.one_turn_ok else " (run was not one lull turn!)"
        lines.append(
            f"| {r.n} | {r.turn_ms:.1f} | {r.bare_ms:.1f} | {r.ratio:.3f} | {r.per_latency:.2f}× "
            f"| {f'{ref:.2f}×' if ref else '—'} | {r.slowest_bid_ms:.1f} | "
            f"{_mark(r.ratio <= TARGETS['ratio'])}{note} |")
    return lines


def _summary_table(results: Results) -> list[str]:
    lines = ["| figure | measured | target | result |", "|---|---:|---:|---|"]
    for r in results.turns:
        lines.append(f"| turn engine/bare, N={r.n}, 200 ms latency | {r.ratio:.3f} | ≤ 1.10 | "
                     f"{_mark(r.ratio <= TARGETS['ratio'])} |")
    for c in results.cpu:
        lines.append(f"| engine CPU per bid beyond litellm, N=8, `{c.model}` | "
                     f"{c.overhead_ms_per_bid:.3f} ms | < 1 ms | "
                     f"{_mark(c.overhead_ms_per_bid < TARGETS['cpu_ms'])} |")
        lines.append(f"| litellm CPU per call, `{c.model}` | {c.litellm_ms_per_call:.2f} ms | — "
                     "| (information) |")
    if results.sims:
        s = results.sims
        loaded = "litellm loaded" if s.litellm_loaded else "litellm not loaded"
        lines.append(f"| {s.chats} sim chats, 3 agents, max_loops=20, `run()` (wall; {loaded}) | "
                     f"{s.wall_s:.2f} s ({s.per_1000_s:.2f} s per 1,000) | < 60 s per 1,000 | "
                     f"{_mark(s.per_1000_s < TARGETS['sims_s'])} |")
        lines.append(f"| mean messages per sim chat | {s.mean_messages:.2f} | — | (information) |")
    if results.cold:
        c2 = results.cold
        lines.append(f"| cold start: import + one sim chat (median of {len(c2.runs)}) | "
                     f"{c2.median_s:.3f} s | < 1.5 s | {_mark(c2.median_s < TARGETS['cold_s'])} |")
        lines.append(f"| litellm imported by sim-only work | {c2.litellm_imported} | False | "
                     f"{_mark(not c2.litellm_imported)} |")
    return lines


def _cpu_table(results: Results) -> list[str]:
    lines = ["| model | bids | engine CPU (s) | bare CPU (s) | engine overhead, median of pairs "
             "(ms/bid) | from totals (ms/bid) | litellm (ms/call) |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for c in results.cpu:
        lines.append(f"| `{c.model}` | {c.bids} | {c.engine_cpu_s:.2f} | {c.bare_cpu_s:.2f} | "
                     f"{c.overhead_ms_per_bid:.3f} | {c.mean_overhead_ms_per_bid:.3f} | "
                     f"{c.litellm_ms_per_call:.2f} |")
    return lines


def _profile_table(p: Profile) -> list[str]:
    lines = [f"cProfile of {p.calls} bare calls (`{MODEL}`, 8 per gather, zero latency): "
             f"{p.cpu_ms_per_call:.1f} ms CPU per call while profiled, {p.profiled_ms_per_call:.1f}"
             " ms seen by the profiler; the profiler inflates call-heavy code, so read the shares.",
             "", "| where (inclusive; indented rows are inside the row above) | profiled ms/call "
             "| share |", "|---|---:|---:|"]
    for label, ms, share in p.hotspots:
        lines.append(f"| {label} | {ms:.2f} | {share:.0%} |")
    return lines


def _settings_table(rows: list[SettingRow]) -> list[str]:
    lines = ["| setting | status | CPU/call without (ms) | with (ms) | change | usage & cost |",
             "|---|---|---:|---:|---:|---|"]
    for r in rows:
        change = f"{r.change:+.1%}" if r.change is not None else "—"
        base = f"{r.base_ms:.2f}" if r.base_ms is not None else "—"
        with_ms = f"{r.with_ms:.2f}" if r.with_ms is not None else "—"
        lines.append(f"| `{r.setting}` | {r.status} | {base} | {with_ms} | {change} | "
                     f"{r.features or '—'} |")
    return lines


def render(results: Results) -> str:
    today = dt.date.today().isoformat()
    mode = "quick smoke run (`--quick`)" if results.quick else "full run"
    out = ["## Machine", "", f"Measured {today}, {mode}.", ""]
    out += [f"- {h.machine(litellm=metadata.version('litellm'))}"]
    out += [f"- litellm import: {results.litellm_import_s:.2f} s; first HTTP chat (untimed "
            f"warm-up): {results.first_chat_s:.2f} s", "",
            "## Engine (issue: engine)", "", f"Date: {today}.", "", "### Targets", ""]
    out += _summary_table(results)
    out += ["", f"### Turn wall time at {LATENCY_S * 1000:.0f} ms bid latency", "",
            f"Median of {results.plan.reps} one-turn chats and {results.plan.reps} bare gathers, "
            "interleaved. Reference figures were measured at 3 (not 2), 8, 16 and 32 agents.", ""]
    out += _turn_table(results)
    out += ["", "### Engine CPU per bid (zero latency, N = 8)", ""] + _cpu_table(results)
    if results.profile:
        out += ["", "### Where litellm spends its CPU", ""] + _profile_table(results.profile)
    if results.settings:
        out += ["", "### litellm settings that might skip work", "",
                "Per-call CPU of single bare gathers of 8, without and with the setting, "
                f"median of {results.plan.setting_pairs} "
                "alternating pairs.", ""]
        out += _settings_table(results.settings)
    return "\n".join(out) + "\n"


# --- main -------------------------------------------------------------------------------------


def run(plan: Plan, quick: bool) -> Results:
    import groupchat_core

    results = Results(plan, quick)
    print(f"[3] {plan.sim_chats} sim chats ...", flush=True)
    results.sims = bench_sims(plan.sim_chats)
    print(f"[4] cold start x{plan.cold_runs} ...", flush=True)
    results.cold = bench_cold_start(plan.cold_runs)
    groupchat_core.set_max_inflight_calls(64)  # >= 32, so N=32 is never throttled
    with h.ServerProcess(silent_bids) as server:
        start = time.perf_counter()
        litellm = groupchat_core.prepare_litellm()
        results.litellm_import_s = time.perf_counter() - start
        results.first_chat_s = h.repeat(
            lambda: http_chat(server.base_url, 2, MODEL).run(TASK), 1)[0]
        print("[1] turn wall time ...", flush=True)
        results.turns = bench_turns(server, litellm, plan)
        print("[2] CPU per bid ...", flush=True)
        results.cpu = [bench_cpu(server, litellm, plan, m) for m in (MODEL, UNPRICED_MODEL)]
        print("[2b] profile ...", flush=True)
        results.profile = profile_litellm(server, litellm, plan)
        print("[2c] settings ...", flush=True)
        results.settings = try_settings(server, litellm, plan)
    return results


def main(argv: Sequence[str] | None = None) -> None:
    args = h.options(__doc__, quick=True, write=True).parse_args(argv)
    started = time.perf_counter()
    results = run(QUICK if args.quick else Plan(), args.quick)
    figures = render(results)
    print()
    print(figures)
    if results.profile:
        print("Top cumulative litellm functions (profiled ms/call):")
        for name, ms in results.profile.top:
            print(f"  {ms:7.2f}  {name}")
    if args.write:
        h.write_section("engine", figures)
    print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
