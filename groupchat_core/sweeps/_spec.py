"""The sweep spec: a base chat, a grid of parameters, tasks and repeats; and its cells.

A sweep file is untrusted data (JSON or YAML, schema-versioned), read like a chat spec: bounded
size and depth, no YAML aliases, no secret-like keys, unknown keys are errors. `base` is a chat
spec in the usual flat format (config.ChatSpec); `grid` lists values per parameter (and the agent
order, roster and models per agent, expanded in _space.py); `random` draws N parameter sets,
crossed with the grid; a cell is one combination × one task × one repeat, and repeat r runs with
seed `base.seed + r`.

Every cell has a stable key, the canonical JSON of its grid values, task index and repeat; runs
are stored with it (runs.cell), which is how a resumed sweep knows what is done. Keys are
unique per cell: a bid-prompt label over 60 characters is shortened with a hash of the whole
label (`short_label`), and a grid whose labels still coincide is rejected.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from .._bounds import AGENT_BOUNDS, CHAT_BOUNDS, CHAT_CHOICES, MAX_SWEEP_AXIS, SWEEP_BOUNDS, Bound
from .._bounds import MAX_CALLS_CAP as MAX_CALLS_CAP
from .._config import (
    MAX_SPEC_BYTES,
    ChatSpec,
    explain,
    parse_spec,
)
from .._errors import ConfigError
from .._safeload import show_number
from . import _space
from ._people import refuse_people
from ._tasks import scored_tasks

SWEEP_SCHEMA_VERSION = 1
MAX_CELLS = 100_000
MAX_AXIS = MAX_SWEEP_AXIS
MAX_LABEL = 60  # bid-prompt labels in cell keys and result tables (see short_label)
AXES = ("threshold", "recency_penalty", "recency_window", "max_loops", "bid_prompt", "model",
        "temperature", "strategy", "order", "roster", "agent_models", *CHAT_CHOICES)


def _plain(value: float) -> str:
    """10000 for an int, 2 for 2.0, 0.25 for 0.25 (bounds in messages)."""
    return f"{value:g}" if isinstance(value, float) else str(value)


def _finite(value: Any) -> bool:
    return (not isinstance(value, bool) and isinstance(value, int | float)
            and math.isfinite(value))


def _number(name: str, value: Any, *, integer: bool = False, low: float | None = None,
            high: float | None = None) -> Any:
    bad = isinstance(value, bool) or not isinstance(value, int | float) or (
        isinstance(value, float) and not math.isfinite(value))
    if not bad and integer and not isinstance(value, int):
        bad = True
    if not bad and ((low is not None and value < low) or (high is not None and value > high)):
        bad = True
    if bad:
        kind = "an integer" if integer else "a finite number"
        bounds = "" if low is None else f" >= {_plain(low)}" + (
            "" if high is None else f" and <= {_plain(high)}")
        if not integer and not _finite(value):  # nan is not a number: no range to name
            bounds = ""
        raise ValueError(f"{name} must be {kind}{bounds}, got {show_number(value)}")
    return value if integer else float(value)


MAX_CPUS_PER_CELL = 64.0


def check_cpus_per_cell(value: Any) -> float:
    """Ray CPUs a cell reserves: a number in (0, 64] (one-line ValueError naming the fix)."""
    bad = isinstance(value, bool) or not isinstance(value, int | float) or not (
        math.isfinite(value) and 0 < value <= MAX_CPUS_PER_CELL)
    if bad:
        raise ValueError(f"cpus_per_cell must be a number above 0 and at most "
                         f"{MAX_CPUS_PER_CELL:g} (e.g. 0.25 for cells that wait on HTTP "
                         f"models), got {show_number(value)}")
    return float(value)


def _bounded(bound: Bound) -> Callable[[str, Any], Any]:
    """A grid value's check within the setting's one declared range (_bounds.py)."""
    def check(name: str, value: Any) -> Any:
        return _number(name, value, integer=bound.integer, low=bound.low, high=bound.high)
    return check


def _axis(name: str, values: Any, check: Any) -> list[Any]:
    if not isinstance(values, list) or not values:
        raise ValueError(f"grid.{name} must be a non-empty list of values")
    if len(values) > MAX_AXIS:
        raise ValueError(f"grid.{name} has {len(values)} values; at most {MAX_AXIS}")
    checked = [check(f"grid.{name}[{i}]", v) for i, v in enumerate(values)]
    if len(set(map(json.dumps, checked))) != len(checked):
        raise ValueError(f"grid.{name} lists a value twice: {values!r}")
    return checked


def short_label(label: str) -> str:
    """A bid-prompt label as cells carry it: kept whole up to MAX_LABEL characters; a longer
    one is cut and ends in `~` and 8 hex digits of its sha256, so labels that share their
    first characters stay distinct cells."""
    if len(label) <= MAX_LABEL:
        return label
    digest = hashlib.sha256(label.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{label[:MAX_LABEL - 9]}~{digest}"


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    return value


class Grid(BaseModel):
    """Values to sweep per parameter; a parameter left out keeps the base chat's value.

    `model` and `temperature` apply to every agent; `bid_prompt` maps short labels to
    templates or preset names (the labels go into cell keys and result tables, the templates
    into the runs), or lists preset names (`[swarms-14, swarms-16]`, each its own label).
    `history`, `speaker_names`, `show_bids` and `show_tally` list choices of CHAT_CHOICES.
    `order`, `roster` and `agent_models` depend on the base agents: they are checked and
    expanded by SweepSpec (see _space.py).
    """

    model_config = ConfigDict(extra="forbid")

    threshold: list[float] | None = None
    recency_penalty: list[float] | None = None
    recency_window: list[int] | None = None
    max_loops: list[int] | None = None
    bid_prompt: dict[str, str] | None = None
    model: list[str] | None = None
    temperature: list[float] | None = None
    strategy: list[str] | None = None  # speaker-selection strategies (docs/engine.md §16)
    order: Any = None  # "all" | {sample: N} | [[agent, ...], ...]
    roster: Any = None  # {sizes: [k, ...], sample?: N} | [[agent, ...], ...]
    agent_models: dict[str, list[str]] | None = None
    history: list[str] | None = None
    speaker_names: list[str] | None = None
    show_bids: list[str] | None = None
    show_tally: list[str] | None = None

    @field_validator("history", "speaker_names", "show_bids", "show_tally", mode="before")
    @classmethod
    def _choices(cls, v: Any, info: Any) -> Any:
        setting = info.field_name

        def check(name: str, value: Any) -> str:
            if value not in CHAT_CHOICES[setting]:
                raise ValueError(f"{name} must be one of {', '.join(CHAT_CHOICES[setting])}, "
                                 f"got {value!r}")
            return str(value)

        return None if v is None else _axis(setting, v, check)

    @field_validator("threshold", "recency_penalty", mode="before")
    @classmethod
    def _floats(cls, v: Any, info: Any) -> Any:
        return None if v is None else _axis(info.field_name, v, _bounded(
            CHAT_BOUNDS[info.field_name]))

    @field_validator("recency_window", "max_loops", mode="before")
    @classmethod
    def _ints(cls, v: Any, info: Any) -> Any:
        return None if v is None else _axis(info.field_name, v, _bounded(
            CHAT_BOUNDS[info.field_name]))

    @field_validator("temperature", mode="before")
    @classmethod
    def _temperatures(cls, v: Any) -> Any:
        return None if v is None else _axis("temperature", v, _bounded(
            AGENT_BOUNDS["temperature"]))

    @field_validator("strategy", mode="before")
    @classmethod
    def _strategies(cls, v: Any) -> Any:
        from .._config import STRATEGIES

        def check(name: str, value: Any) -> str:
            if value not in STRATEGIES:
                raise ValueError(f"{name} must be one of {', '.join(STRATEGIES)}, "
                                 f"got {value!r}")
            return str(value)

        return None if v is None else _axis("strategy", v, check)

    @field_validator("model", mode="before")
    @classmethod
    def _models(cls, v: Any) -> Any:
        return None if v is None else _axis("model", v, _text)

    @field_validator("bid_prompt", mode="before")
    @classmethod
    def _prompts(cls, v: Any) -> Any:
        if v is None:
            return None
        from .._bidding import BID_PROMPT_PRESETS, resolve_bid_prompt, validate_bid_prompt

        if isinstance(v, list) and v and all(p in BID_PROMPT_PRESETS for p in v):
            if len(set(v)) != len(v):
                raise ValueError(f"grid.bid_prompt lists a preset twice: {v!r}")
            return {p: BID_PROMPT_PRESETS[p] for p in v}
        if not isinstance(v, Mapping) or not v:
            raise ValueError("grid.bid_prompt must map labels to templates or list presets, "
                             "e.g. {plain: '...', strict: '...'} or ["
                             + ", ".join(BID_PROMPT_PRESETS) + "]")

        prompts: dict[str, str] = {}
        given_as: dict[str, str] = {}
        for given, template in v.items():
            label = short_label(_text("grid.bid_prompt label", given))
            if label in prompts:  # two labels would make one cell: a grid value lost
                raise ValueError(f"grid.bid_prompt labels {given_as[label]!r} and {given!r} "
                                 f"both become the cell label {label!r}; make them distinct")
            prompts[label] = validate_bid_prompt(resolve_bid_prompt(template))
            given_as[label] = given
        return prompts

    def axes(self) -> dict[str, list[Any]]:
        """The plain grid axes (not order, roster, agent_models: SweepSpec.axes() has them all)
        in a fixed order, each with its values (labels for prompts)."""
        values = self.model_dump(exclude_none=True)
        if "bid_prompt" in values:
            values["bid_prompt"] = list(values["bid_prompt"])
        return {name: values[name] for name in AXES
                if name in values and name not in _space.SPACE_AXES}


@dataclass(frozen=True)
class Cell:
    """One chat of a sweep: grid values, a task and a repeat."""

    index: int
    params: dict[str, Any]  # only the swept parameters (bid_prompt as its label)
    task_index: int
    repeat: int

    @property
    def key(self) -> str:
        return json.dumps({**self.params, "task": self.task_index, "repeat": self.repeat},
                          sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class SweepSpec(BaseModel):
    """A sweep file. Budget caps stop the sweep cleanly when reached (see _scheduler.py)."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    schema_version: int = SWEEP_SCHEMA_VERSION
    name: str = "sweep"
    base: ChatSpec
    grid: Grid = Field(default_factory=Grid)
    tasks: list[str]
    # Tasks with answers (docs/outcomes.md), one per entry of `tasks`, when they carry any:
    # read from a task-set file named by `tasks:` or given inline; stored whole, so a resumed
    # sweep needs no file.
    task_set: list[dict[str, Any]] | None = None
    repeats: int = 1
    concurrency: int = 4
    max_calls: int | None = None
    max_usd: float | None = None
    bid_cache: bool | None = None  # None: deterministic agents only; True: all; False: off
    # Ray CPUs each cell reserves with --executor ray (None: 1, for CPU-bound sim cells); a
    # fraction such as 0.25 lets I/O-bound cells (HTTP models) share a CPU.
    cpus_per_cell: float | None = None
    random: dict[str, Any] | None = None  # random search: {samples: N, param: range/choice}
    sample_seed: int | None = None  # seeds every sampled axis; None: base.seed
    _axes: dict[str, list[Any]] = PrivateAttr(default_factory=dict)
    # model name -> its deployments, load-balanced by litellm's Router (_deployments.py)
    deployments: dict[str, list[dict[str, Any]]] | None = None

    @field_validator("schema_version")
    @classmethod
    def _version(cls, v: int) -> int:
        if v != SWEEP_SCHEMA_VERSION:
            raise ValueError(f"schema_version {v!r} is not supported (expected "
                             f"{SWEEP_SCHEMA_VERSION})")
        return v

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not v.strip() or len(v) > 200:
            raise ValueError("name must be 1-200 characters")
        return v

    @field_validator("base", mode="before")
    @classmethod
    def _base(cls, v: Any) -> Any:
        return v if isinstance(v, ChatSpec) else parse_spec(v, "base")

    @model_validator(mode="before")
    @classmethod
    def _task_file(cls, data: Any, info: ValidationInfo) -> Any:
        """`tasks:` naming a task set (a file, or {file, limit}) or listing scored tasks:
        their prompts become `tasks` and the whole tasks `task_set`."""
        if not isinstance(data, Mapping) or "tasks" not in data:
            return data
        base_dir = (info.context or {}).get("base_dir")
        scored = scored_tasks(data["tasks"], base_dir, MAX_AXIS)
        if scored is None:
            return data
        if data.get("task_set") is not None:
            raise ValueError("give the tasks once: in tasks (a file or a list), not task_set")
        return {**data, "tasks": [t.prompt for t in scored],
                "task_set": [t.model_dump(exclude_defaults=True) for t in scored]}

    @field_validator("tasks", mode="before")
    @classmethod
    def _tasks(cls, v: Any) -> Any:
        if not isinstance(v, list) or not v or len(v) > MAX_AXIS:
            raise ValueError(f"tasks must be a list of 1 to {MAX_AXIS} task strings, task "
                             "objects, or a task-set file (tasks: tasks.jsonl)")
        return [_text(f"tasks[{i}]", t) for i, t in enumerate(v)]

    @field_validator("task_set", mode="before")
    @classmethod
    def _task_set(cls, v: Any) -> Any:
        if v is None:
            return None
        from ..outcomes import tasks_from

        return [t.model_dump(exclude_defaults=True) for t in tasks_from(v, "task_set")]

    def scored_task(self, task_index: int) -> dict[str, Any] | None:
        """The task with its answer for cell tasks of a task set (else None: a plain task)."""
        return None if self.task_set is None else self.task_set[task_index]

    @field_validator("repeats", "concurrency", "max_calls", mode="before")
    @classmethod
    def _counts(cls, v: Any, info: Any) -> Any:
        return None if v is None else _bounded(SWEEP_BOUNDS[info.field_name])(info.field_name, v)

    @field_validator("deployments", mode="before")
    @classmethod
    def _deployments(cls, v: Any) -> Any:
        from ..providers._deployments import parse_deployments, to_data

        return None if v is None else to_data(parse_deployments(v))

    @field_validator("max_usd", mode="before")
    @classmethod
    def _usd(cls, v: Any) -> Any:
        if v is not None and _number("max_usd", v) <= 0:
            raise ValueError(f"max_usd must be a positive amount, got {v!r}")
        return v

    @field_validator("cpus_per_cell", mode="before")
    @classmethod
    def _cpus(cls, v: Any) -> Any:
        return None if v is None else check_cpus_per_cell(v)

    @field_validator("random", mode="before")
    @classmethod
    def _random(cls, v: Any) -> Any:
        return None if v is None else _space.check_random(v)

    @field_validator("sample_seed", mode="before")
    @classmethod
    def _sample_seed(cls, v: Any) -> Any:
        return None if v is None else _number("sample_seed", v, integer=True, low=0,
                                              high=2**63 - 1)

    @model_validator(mode="after")
    def _size(self) -> SweepSpec:
        if len(self.base.agents) < 2:
            raise ValueError("base.agents: a chat needs at least 2 agents")
        if self.task_set is not None and len(self.task_set) != len(self.tasks):
            raise ValueError("task_set must hold one task per entry of tasks")
        self._axes = self._expand()
        if self.cell_count() > MAX_CELLS:
            raise ValueError(f"the sweep has {self.cell_count():,} cells, over the "
                             f"{MAX_CELLS:,} limit: fewer grid values, samples, tasks or "
                             "repeats")
        return self

    def _expand(self) -> dict[str, list[Any]]:
        """Every axis with its values: the grid's, then order, roster and models per agent
        (checked against the base agents), then the random samples (as one axis)."""
        axes = self.grid.axes()
        names = [a.agent_name for a in self.base.agents]
        seed = self.base.seed if self.sample_seed is None else self.sample_seed
        grid = self.grid
        if grid.model is not None and grid.agent_models is not None:
            raise ValueError("grid.model and grid.agent_models both set the models; use one")
        if grid.order is not None:
            axes["order"] = _space.orders(grid.order, names, seed)
        if grid.roster is not None:
            axes["roster"] = _space.rosters(grid.roster, names, seed)
        if grid.agent_models is not None:
            axes["agent_models"] = _space.agent_models(grid.agent_models, names)
        if self.random is not None:
            both = [k for k in self.random if k in axes or (k == "model" and "agent_models"
                                                            in axes)]
            if both:
                raise ValueError(f"{both[0]} is both a grid axis and drawn at random; keep it "
                                 "in one of grid or random")
            axes["random"] = _space.random_samples(self.random, seed)
        return axes

    def axes(self) -> dict[str, list[Any]]:
        """Every swept axis with its values; `random` holds the drawn parameter sets."""
        return self._axes

    def cell_count(self) -> int:
        return math.prod(len(v) for v in self.axes().values()) * len(self.tasks) * \
            self.repeats

    def space_text(self) -> str:
        """The search space in one line: '3 threshold × 6 order × 20 random samples × 1 task
        × 2 repeats = 720 cells'."""
        parts = [f"{len(v):,} {'random samples' if k == 'random' else k}"
                 for k, v in self.axes().items()]
        parts += [f"{len(self.tasks)} task(s)", f"{self.repeats} repeat(s)"]
        return " × ".join(parts) + f" = {self.cell_count():,} cells"

    def cells(self) -> Iterator[Cell]:
        """Every cell, in a stable order: grid (first axis slowest), then task, then repeat.
        A random sample's drawn values are the cell's own parameters, with `sample: i`."""
        axes = self.axes()
        combos = itertools.product(*axes.values())
        index = 0
        for combo in combos:
            params: dict[str, Any] = {}
            for name, value in zip(axes, combo, strict=True):
                if name == "random":
                    params.update(value)
                else:
                    params[name] = value
            for task_index in range(len(self.tasks)):
                for repeat in range(self.repeats):
                    yield Cell(index, params, task_index, repeat)
                    index += 1

    def cell_agents(self, cell: Cell) -> list[str]:
        """The names of the agents in a cell's chat, in its speaking-priority order."""
        names = list(cell.params.get("order") or [a.agent_name for a in self.base.agents])
        roster = cell.params.get("roster")
        return names if roster is None else [n for n in names if n in roster]

    def chat_spec(self, cell: Cell) -> ChatSpec:
        """The base chat with the cell's values applied and its repeat's seed."""
        data = self.base.to_data()
        params = dict(cell.params)
        by_name = {a["agent_name"]: a for a in data["agents"]}
        data["agents"] = [by_name[n] for n in self.cell_agents(cell)]
        # a roster without a distractor is the distractor-free baseline (docs/outcomes.md)
        data["distractors"] = [n for n in data["distractors"] if n in self.cell_agents(cell)]
        for agent in data["agents"]:
            if "model" in params:
                agent["model_name"] = params["model"]
            if agent["agent_name"] in params.get("agent_models", {}):
                agent["model_name"] = params["agent_models"][agent["agent_name"]]
            if "temperature" in params:
                agent["temperature"] = params["temperature"]
        if "bid_prompt" in params:
            data["bid_prompt"] = (self.grid.bid_prompt or {})[params["bid_prompt"]]
        for name in ("threshold", "recency_penalty", "recency_window", "max_loops", "strategy",
                     *CHAT_CHOICES):
            if name in params:
                data[name] = params[name]
        data["seed"] = self.base.seed + cell.repeat
        return parse_spec(data, f"cell {cell.key}")

    def to_data(self) -> dict[str, Any]:
        data = self.model_dump(exclude={"base"})
        data["base"] = self.base.to_data()
        data["grid"] = self.grid.model_dump(exclude_none=True)
        for optional in ("random", "sample_seed", "cpus_per_cell"):  # absent, as stored before
            if data.get(optional) is None:
                data.pop(optional, None)
        return data

    def same_cells(self, other: SweepSpec) -> bool:
        """True when both specs define the same cells (caps, concurrency, deployments and
        cpus_per_cell may differ)."""
        keep = {"max_calls", "max_usd", "concurrency", "deployments", "cpus_per_cell"}
        mine = {k: v for k, v in self.to_data().items() if k not in keep}
        theirs = {k: v for k, v in other.to_data().items() if k not in keep}
        return mine == theirs


def parse_sweep(data: Any, source: str = "sweep spec",
                base_dir: str | Path | None = None) -> SweepSpec:
    """`base_dir`: where a task-set file named by `tasks:` is looked for (the sweep file's
    folder when read by load_sweep; else the working directory)."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source} must be a mapping of settings, got {type(data).__name__}")
    refuse_people(data, source)
    try:
        spec = SweepSpec.model_validate(dict(data), context={"base_dir": base_dir})
    except ValidationError as exc:
        raise explain(exc, source) from None
    _check_chats(spec)
    return spec


def _check_chats(spec: SweepSpec) -> None:
    """Build one chat per model/temperature/prompt combination (and per model set per agent,
    and per model drawn at random): every cell must be runnable."""
    from ..engine._groupchat import GroupChat

    axes = {k: v for k, v in spec.axes().items()
            if k in ("model", "temperature", "bid_prompt")}
    extra: list[dict[str, Any]] = [{"agent_models": m}
                                   for m in spec.axes().get("agent_models", [])]
    extra += [{"model": m} for m in (spec.random or {}).get("model", {}).get("choice", [])]
    for combo in itertools.product(*axes.values()):
        cell = Cell(0, dict(zip(axes, combo, strict=True)), 0, 0)
        GroupChat.from_spec(spec.chat_spec(cell), bid_cache=False)
    for params in extra[:_space.MAX_AXIS]:
        GroupChat.from_spec(spec.chat_spec(Cell(0, params, 0, 0)), bid_cache=False)


def load_sweep_text(text: str | bytes, source: str = "sweep spec",
                    base_dir: str | Path | None = None) -> SweepSpec:
    """Parse untrusted JSON or YAML (bounded, no aliases, no secrets) into a SweepSpec."""
    from .._safeload import parse_text

    return parse_sweep(parse_text(text, source, MAX_SPEC_BYTES), source, base_dir)


def load_sweep(path: str | Path) -> SweepSpec:
    from .._safeload import read_limited

    return load_sweep_text(read_limited(path, MAX_SPEC_BYTES, "sweep file"), Path(path).name,
                           Path(path).parent)


def cell_models(spec: SweepSpec, cell: Cell) -> dict[str, str]:
    """Each agent's model in a cell (the base's, then the `model` axis, then models per agent):
    what `SweepSpec.chat_spec` sets, without building the chat."""
    models = {a.agent_name: a.model_name for a in spec.base.agents}
    if "model" in cell.params:
        models = dict.fromkeys(models, str(cell.params["model"]))
    models.update({str(k): str(v) for k, v in (cell.params.get("agent_models") or {}).items()})
    return models


def any_simulated(spec: SweepSpec) -> bool:
    """Whether any agent of any cell (through the model axes too) is an offline sim/ model:
    such results describe the simulations, not language models."""
    from ..providers._sim import cell_is_simulated

    for cell in spec.cells():
        models = cell_models(spec, cell)
        if cell_is_simulated(models[name] for name in spec.cell_agents(cell)):
            return True
    return False
