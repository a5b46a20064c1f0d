"""Search spaces beyond a numeric grid: agent order, roster, a model per agent, random search.

Why a module of its own: these axes depend on the base chat's agents (an order is a permutation
of them), some are sampled (seeded, so a resumed sweep rebuilds the very same cells), and all of
them must be bounded before anything is generated: all orders of 10 agents are 3.6 million.

Values as cells carry them (and as cell keys store them, canonical JSON):
- order: the agent names in speaking-priority order (ties go to the earlier agent, so the order
  matters); every permutation (`all`), N sampled ones (`{sample: N}`) or an explicit list.
- roster: the agent names taking part, in base order (or, with `order`, in that order);
  every subset of the given sizes (`{sizes: [2, 3]}`), N of them sampled (`sample: N`), or an
  explicit list.
- agent_models: {agent: model} for the agents listed, every combination of their model lists.
- random search: `samples` draws of the listed parameters, uniform over `{low, high}` (floats
  rounded to 4 decimals; integers inclusive) or uniform over `{choice: [...]}`; each draw is a
  cell value `sample: i` with its drawn parameters.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from collections.abc import Mapping, Sequence
from typing import Any

from .._bounds import AGENT_BOUNDS, CHAT_BOUNDS, MAX_SWEEP_AXIS

MAX_AXIS = MAX_SWEEP_AXIS  # values per axis (orders, rosters, model combinations, random samples)
# What random search may draw, within each setting's one declared range (_bounds.py).
_DRAWN = {**{name: CHAT_BOUNDS[name] for name in
             ("threshold", "recency_penalty", "recency_window", "max_loops")},
          "temperature": AGENT_BOUNDS["temperature"]}
RANDOM_PARAMS = {name: (b.low, b.high, b.integer) for name, b in _DRAWN.items()}
RANDOM_DIGITS = 4
SPACE_AXES = ("order", "roster", "agent_models")


def _rng(seed: int, axis: str) -> random.Random:
    """A generator per axis, so adding one sampled axis does not change another's draws."""
    return random.Random(f"{seed}:{axis}")


def _names(value: Any, where: str, agents: Sequence[str]) -> list[str]:
    if not isinstance(value, list) or not value or not all(isinstance(n, str) for n in value):
        raise ValueError(f"{where} must be a list of agent names")
    unknown = [n for n in value if n not in agents]
    if unknown:
        raise ValueError(f"{where} names {unknown[0]!r}, not an agent of base.agents "
                         f"({', '.join(agents)})")
    if len(set(value)) != len(value):
        raise ValueError(f"{where} names an agent twice")
    return list(value)


def _distinct(values: list[Any], where: str) -> list[Any]:
    if len({json.dumps(v, sort_keys=True) for v in values}) != len(values):
        raise ValueError(f"{where} lists the same value twice")
    return values


def _sample_count(value: Any, where: str, total: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{where}.sample must be a whole number >= 1, got {value!r}")
    if value > MAX_AXIS:
        raise ValueError(f"{where}.sample is {value:,}; at most {MAX_AXIS:,}")
    if value > total:
        raise ValueError(f"{where}.sample is {value:,} but there are only {total:,}; "
                         "ask for fewer, or list them all")
    return value


def _sample_permutations(agents: Sequence[str], count: int, rng: random.Random
                         ) -> list[list[str]]:
    total = math.factorial(len(agents))
    if total <= 4 * MAX_AXIS:  # small enough to enumerate: sample without replacement
        every = [list(p) for p in itertools.permutations(agents)]
        return rng.sample(every, count)
    seen: dict[str, list[str]] = {}
    while len(seen) < count:  # far fewer wanted than exist: rejection is quick
        order = list(agents)
        rng.shuffle(order)
        seen.setdefault(json.dumps(order), order)
    return list(seen.values())


def orders(spec: Any, agents: Sequence[str], seed: int) -> list[list[str]]:
    """The order axis's values; refuses more than MAX_AXIS, naming the fix."""
    n = len(agents)
    total = math.factorial(n)
    if spec == "all":
        if total > MAX_AXIS:
            raise ValueError(f"grid.order: all orders of {n} agents are {total:,}, over the "
                             f"{MAX_AXIS:,} limit; sample some instead: order: {{sample: 100}}")
        return [list(p) for p in itertools.permutations(agents)]
    if isinstance(spec, Mapping):
        if set(spec) != {"sample"}:
            raise ValueError("grid.order must be 'all', {sample: N} or a list of orders")
        count = _sample_count(spec["sample"], "grid.order", total)
        return _sample_permutations(agents, count, _rng(seed, "order"))
    if isinstance(spec, list) and spec:
        if len(spec) > MAX_AXIS:
            raise ValueError(f"grid.order lists {len(spec):,} orders; at most {MAX_AXIS:,}")
        out = []
        for i, order in enumerate(spec):
            names = _names(order, f"grid.order[{i}]", agents)
            if len(names) != n:
                raise ValueError(f"grid.order[{i}] must list every agent once ({n}); "
                                 "use grid.roster to leave agents out")
            out.append(names)
        return _distinct(out, "grid.order")
    raise ValueError("grid.order must be 'all', {sample: N} or a non-empty list of orders")


def rosters(spec: Any, agents: Sequence[str], seed: int) -> list[list[str]]:
    """The roster axis's values (each at least 2 agents, in base order)."""
    n = len(agents)
    if isinstance(spec, Mapping):
        if not set(spec) <= {"sizes", "sample"} or "sizes" not in spec:
            raise ValueError("grid.roster must be {sizes: [2, 3]} (optionally with sample: N) "
                             "or a list of agent lists")
        sizes = spec["sizes"]
        if (not isinstance(sizes, list) or not sizes or any(
                isinstance(k, bool) or not isinstance(k, int) or not 2 <= k <= n for k in sizes)
                or len(set(sizes)) != len(sizes)):
            raise ValueError(f"grid.roster.sizes must list distinct sizes from 2 to {n} (the "
                             f"number of base agents), got {sizes!r}")
        total = sum(math.comb(n, k) for k in sizes)
        if "sample" in spec:
            count = _sample_count(spec["sample"], "grid.roster", total)
            if total > 4 * MAX_AXIS:
                raise ValueError(f"grid.roster: {total:,} rosters are too many to sample from; "
                                 "give explicit rosters or smaller sizes")
            every = [list(c) for k in sorted(sizes) for c in itertools.combinations(agents, k)]
            picked = _rng(seed, "roster").sample(range(len(every)), count)
            return [every[i] for i in sorted(picked)]
        if total > MAX_AXIS:
            raise ValueError(f"grid.roster: sizes {sizes} make {total:,} rosters, over the "
                             f"{MAX_AXIS:,} limit; sample some: roster: {{sizes: {sizes}, "
                             "sample: 100}")
        return [list(c) for k in sorted(sizes) for c in itertools.combinations(agents, k)]
    if isinstance(spec, list) and spec:
        if len(spec) > MAX_AXIS:
            raise ValueError(f"grid.roster lists {len(spec):,} rosters; at most {MAX_AXIS:,}")
        out = []
        for i, roster in enumerate(spec):
            names = _names(roster, f"grid.roster[{i}]", agents)
            if len(names) < 2:
                raise ValueError(f"grid.roster[{i}] has {len(names)} agent; a chat needs 2")
            out.append([a for a in agents if a in names])  # base order: one roster, one value
        return _distinct(out, "grid.roster")
    raise ValueError("grid.roster must be {sizes: [...]} or a non-empty list of agent lists")


def agent_models(spec: Any, agents: Sequence[str]) -> list[dict[str, str]]:
    """Every combination of the per-agent model lists, as {agent: model}."""
    if not isinstance(spec, Mapping) or not spec:
        raise ValueError("grid.agent_models must map agent names to lists of models, e.g. "
                         "{Optimist: [sim/balanced, gpt-4o-mini]}")
    names = _names(list(spec), "grid.agent_models", agents)
    lists = []
    for name in names:
        models = spec[name]
        if (not isinstance(models, list) or not models
                or not all(isinstance(m, str) and m.strip() for m in models)):
            raise ValueError(f"grid.agent_models.{name} must be a non-empty list of model names")
        lists.append(_distinct(list(models), f"grid.agent_models.{name}"))
    total = math.prod(len(m) for m in lists)
    if total > MAX_AXIS:
        raise ValueError(f"grid.agent_models makes {total:,} combinations, over the "
                         f"{MAX_AXIS:,} limit; list fewer models per agent")
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*lists)]


def check_random(spec: Any) -> dict[str, Any]:
    """Validate a `random:` block: {samples: N, <param>: {low, high} | {choice: [...]}}."""
    if not isinstance(spec, Mapping):
        raise ValueError("random must be a mapping: {samples: N, threshold: {low: 0.2, "
                         "high: 0.8}, ...}")
    samples = spec.get("samples")
    if isinstance(samples, bool) or not isinstance(samples, int) or not 1 <= samples <= MAX_AXIS:
        raise ValueError(f"random.samples must be a whole number from 1 to {MAX_AXIS:,}, got "
                         f"{samples!r}")
    params = {k: v for k, v in spec.items() if k != "samples"}
    if not params:
        raise ValueError("random lists no parameter to draw: add e.g. threshold: {low: 0.2, "
                         "high: 0.8}")
    out: dict[str, Any] = {"samples": samples}
    for name, value in params.items():
        if name not in (*RANDOM_PARAMS, "model"):
            raise ValueError(f"random.{name} cannot be drawn; drawable: "
                             f"{', '.join([*RANDOM_PARAMS, 'model'])}")
        out[name] = _check_draw(name, value)
    return out


def _check_draw(name: str, value: Any) -> dict[str, Any]:
    if isinstance(value, Mapping) and set(value) == {"choice"}:
        choices = value["choice"]
        if not isinstance(choices, list) or not choices or len(choices) > MAX_AXIS:
            raise ValueError(f"random.{name}.choice must be a list of 1 to {MAX_AXIS} values")
        for c in choices:
            _check_value(name, c)
        return {"choice": _distinct(list(choices), f"random.{name}.choice")}
    if name == "model" or not isinstance(value, Mapping) or set(value) != {"low", "high"}:
        kind = "{choice: [...]}" if name == "model" else "{low: L, high: H} or {choice: [...]}"
        raise ValueError(f"random.{name} must be {kind}")
    low, high = _check_value(name, value["low"]), _check_value(name, value["high"])
    if low > high:
        raise ValueError(f"random.{name}: low {low} is above high {high}")
    return {"low": low, "high": high}


def _check_value(name: str, value: Any) -> Any:
    if name == "model":
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"random.model.choice values must be model names, got {value!r}")
        return value
    low, high, integer = RANDOM_PARAMS[name]
    ok = (not isinstance(value, bool) and isinstance(value, int | float)
          and math.isfinite(value) and low <= value <= high
          and (not integer or isinstance(value, int)))
    if not ok:
        kind = "a whole number" if integer else "a number"
        raise ValueError(f"random.{name} values must be {kind} from {low} to {high}, got "
                         f"{value!r}")
    return value


def random_samples(spec: Mapping[str, Any], seed: int) -> list[dict[str, Any]]:
    """The drawn parameter sets, `sample: i` first; one generator per parameter."""
    count = int(spec["samples"])
    draws: list[dict[str, Any]] = [{"sample": i} for i in range(count)]
    for name, how in spec.items():
        if name == "samples":
            continue
        rng = _rng(seed, f"random.{name}")
        for row in draws:
            if "choice" in how:
                row[name] = rng.choice(how["choice"])
            elif RANDOM_PARAMS[name][2]:
                row[name] = rng.randint(how["low"], how["high"])
            else:
                row[name] = round(rng.uniform(how["low"], how["high"]), RANDOM_DIGITS)
    return draws


def label(name: str, value: Any) -> Any:
    """A cell value as tables show it: orders 'A → B → C', rosters 'A + B', models per agent
    'A=m1 · B=m2'; JSON when a name holds the separator (labels stay one-to-one)."""
    if name == "order":
        return _join(value, " → ")
    if name == "roster":
        return _join(value, " + ")
    if name == "agent_models":
        items = [f"{a}={m}" for a, m in value.items()]
        if any("=" in a or " · " in a or " · " in m for a, m in value.items()):
            return json.dumps(value, ensure_ascii=False, sort_keys=True)
        return " · ".join(items)
    return value


def _join(names: Sequence[str], sep: str) -> str:
    if any(sep.strip() in n for n in names) or any(n != n.strip() for n in names):
        return json.dumps(list(names), ensure_ascii=False)
    return sep.join(names)
