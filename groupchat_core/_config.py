"""Chat configuration: validation at the edge, and the flat JSON/YAML spec format.

A spec is the GroupChat constructor's parameters as top-level keys, `agents` as a list of Agent
fields, and `schema_version`. Missing keys take defaults; unknown keys and secrets are errors.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ._agent import _ACCEPTED as _AGENT_KEYWORDS
from ._agent import Agent, ToolChoiceMode, _short_name
from ._bidding import DEFAULT_BID_PROMPT, resolve_bid_prompt, validate_bid_prompt
from ._bounds import CHAT_BOUNDS, CHAT_CHOICES, not_a_choice, out_of_bounds
from ._bounds import MAX_BATCH_CONCURRENCY as MAX_BATCH_CONCURRENCY
from ._bounds import MAX_LOOPS as MAX_LOOPS
from ._bounds import MAX_RECENCY_WINDOW as MAX_RECENCY_WINDOW
from ._bounds import MAX_SEED as MAX_SEED
from ._bounds import MAX_TIMEOUT_S as MAX_TIMEOUT_S
from ._bounds import OUTPUT_TYPES as OUTPUT_TYPES  # declared there: the CLI's parser reads it
from ._bounds import STRATEGIES as STRATEGIES  # declared there: the CLI's parser reads it
from ._errors import ConfigError
from ._safeload import check_int

# The strategies that name one speaker a turn (by schedule or a selector model): its score is
# recorded and ignored, so threshold, recency_penalty and recency_window never enter.
NAMES_SPEAKERS: frozenset[str] = frozenset(
    {"round_robin", "random", "selector", "all_speak", "vote"})

SCHEMA_VERSION = 1
MAX_SPEC_BYTES = 1_000_000


def _check_int(name: str, value: Any) -> int:
    """Documented integer ranges (docs/engine.md §2, declared in _bounds.py): a value like 1e20
    is one clear ConfigError, never an OverflowError or a run the store cannot record."""
    bound = CHAT_BOUNDS[name]
    return check_int(name, value, int(bound.low), int(bound.high))


def _check_number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


class ChatConfig(BaseModel):
    """Everything about a chat except its agents and conversation (what to_dict() returns).

    The one declaration of each setting's default: GroupChat's signature reads them from here.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    name: str = "dynamic-groupchat"
    description: str = "Agents take turns; one speaker per turn."
    max_loops: int = 20
    threshold: float = 0.5
    recency_penalty: float = 0.3
    recency_window: int = 1
    idle_timeout: float = 8.0  # accepted and stored for compatibility; never ends a chat
    output_type: str = "str-all-except-first"
    verbose: bool = False
    auto_equip: bool = True
    # extensions (keyword-only in GroupChat)
    bid_prompt: str = DEFAULT_BID_PROMPT
    seed: int = 0
    bid_timeout: float | None = 120.0
    batch_concurrency: int = 1
    # Stream bids (stream=true) so observers asking for "bid_delta" events watch them form;
    # off by default: a stream costs CPU per delta, and nobody may be watching (sweeps).
    stream_bids: bool = False
    # Who speaks (docs/engine.md §16): bidding, round_robin, random, selector, bid_then_speak,
    # all_speak. `selector_model` is the model the `selector` strategy asks (any model string
    # an agent could use: sim/, a chat's providers, litellm).
    strategy: str = "bidding"
    selector_model: str = "sim/balanced"
    # Where and how the selector is asked, as for an agent: the OpenAI-compatible server of
    # `selector_model` (a local one gets the placeholder key; a key goes only where keys may:
    # docs/engine.md "Keys and endpoints") and its tool-choice mode (e.g. "json_schema" for a
    # small local model under a grammar). None: litellm's default endpoint; forced tool calls.
    selector_api_base: str | None = None
    selector_tool_choice_mode: ToolChoiceMode | None = None
    # People in the room (issue 22, docs/engine.md "Human participants"): a person's bid
    # window each turn, a winning person's window to post, and how many top bids a person
    # choosing the speaker (human_selector) sees.
    human_window: float = 20.0
    human_post_window: float = 60.0
    selector_top_k: int = 3
    # What a bidder sees (docs/engine.md "What agents see"; choices in _bounds.CHAT_CHOICES,
    # the first of each is the default and today's request): the history as one flattened
    # block or typed turns, speaker names shown or anonymised, the others' last bids and the
    # running vote tally hidden or shown.
    history: str = "flattened"
    speaker_names: str = "shown"
    show_bids: str = "hidden"
    show_tally: str = "hidden"
    # Roster entries marked off-topic (issue 43.4, docs/outcomes.md "Distractors"): recorded
    # with the run so analysis can say how often they held the floor; selection ignores it.
    distractors: list[str] = Field(default_factory=list)

    @field_validator("distractors", mode="before")
    @classmethod
    def _distractors(cls, v: Any) -> list[str]:
        if v is None:
            return []
        if isinstance(v, str) or not isinstance(v, list | tuple):
            raise ValueError("distractors must be a list of agent names, e.g. [Chatter]")
        names = [_short_name("distractors", n) if isinstance(n, str) else n for n in v]
        if any(not isinstance(n, str) or not n.strip() for n in names):
            raise ValueError("distractors must be a list of agent names, e.g. [Chatter]")
        if len(set(names)) != len(names):
            raise ValueError("distractors names an agent twice")
        return names

    @field_validator("history", "speaker_names", "show_bids", "show_tally")
    @classmethod
    def _choice(cls, v: str, info: Any) -> str:
        if v not in CHAT_CHOICES[info.field_name]:
            raise ValueError(not_a_choice(info.field_name, v))
        return v

    @field_validator("strategy")
    @classmethod
    def _strategy(cls, v: str) -> str:
        if v not in STRATEGIES:
            raise ValueError(f"strategy {v!r} is not one of: {', '.join(STRATEGIES)}")
        return v

    @field_validator("selector_model")
    @classmethod
    def _selector_model(cls, v: str) -> str:
        return _short_name("selector_model", v)

    @field_validator("selector_api_base")
    @classmethod
    def _selector_api_base(cls, v: str | None) -> str | None:
        if v is None or not v.strip():
            return None
        return _short_name("selector_api_base", v.strip())

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return _short_name("name", v)

    @field_validator("max_loops", mode="before")
    @classmethod
    def _max_loops(cls, v: Any) -> int:
        return _check_int("max_loops", v)

    @field_validator("recency_window", mode="before")
    @classmethod
    def _window(cls, v: Any) -> int:
        return _check_int("recency_window", v)

    @field_validator("batch_concurrency", mode="before")
    @classmethod
    def _batch(cls, v: Any) -> int:
        return _check_int("batch_concurrency", v)

    @field_validator("seed", mode="before")
    @classmethod
    def _seed(cls, v: Any) -> int:
        return _check_int("seed", v)

    @field_validator("idle_timeout")
    @classmethod
    def _idle(cls, v: float) -> float:
        bound = CHAT_BOUNDS["idle_timeout"]
        if not bound.holds(v):
            raise ValueError(f"idle_timeout must be a number of seconds {bound.text()}, "
                             f"got {v!r}")
        return v

    @field_validator("threshold", "recency_penalty", mode="before")
    @classmethod
    def _score_setting(cls, v: Any, info: Any) -> float:
        value, bound = _check_number(info.field_name, v), CHAT_BOUNDS[info.field_name]
        if not bound.holds(value):
            raise ValueError(out_of_bounds(info.field_name, value, bound))
        return value

    @field_validator("output_type")
    @classmethod
    def _output_type(cls, v: str) -> str:
        if v not in OUTPUT_TYPES:
            raise ValueError(f"output_type {v!r} is not one of: {', '.join(OUTPUT_TYPES)}")
        return v

    @field_validator("bid_prompt")
    @classmethod
    def _template(cls, v: str) -> str:
        return validate_bid_prompt(resolve_bid_prompt(v))

    @field_validator("human_window", "human_post_window", mode="before")
    @classmethod
    def _human_window(cls, v: Any, info: Any) -> float:
        value, bound = _check_number(info.field_name, v), CHAT_BOUNDS[info.field_name]
        if not bound.holds(value):
            raise ValueError(out_of_bounds(info.field_name, value, bound))
        return value

    @field_validator("selector_top_k", mode="before")
    @classmethod
    def _top_k(cls, v: Any) -> int:
        return _check_int("selector_top_k", v)

    @field_validator("bid_timeout")
    @classmethod
    def _timeout(cls, v: float | None) -> float | None:
        high = CHAT_BOUNDS["bid_timeout"].high
        if v is not None and not CHAT_BOUNDS["bid_timeout"].holds(v):
            raise ValueError(f"bid_timeout must be a positive number of seconds up to "
                             f"{high:,.0f} (a day), got {v!r}")
        return v


class ChatSpec(ChatConfig):
    """A full, secret-free chat spec: config plus agents, with a schema version."""

    # Never echo rejected input (it may be a key an agent should not carry) in error messages.
    model_config = ConfigDict(extra="forbid", validate_assignment=True, hide_input_in_errors=True)

    schema_version: int = SCHEMA_VERSION
    agents: list[Agent] = Field(default_factory=list)

    @field_validator("schema_version")
    @classmethod
    def _version(cls, v: int) -> int:
        if v != SCHEMA_VERSION:
            raise ValueError(f"schema_version {v!r} is not supported (expected {SCHEMA_VERSION})")
        return v

    @field_validator("agents", mode="before")
    @classmethod
    def _no_keys(cls, v: Any) -> Any:
        """A spec is data that gets stored and shared: it never carries a credential."""
        for item in v if isinstance(v, list) else []:
            if not isinstance(item, Mapping):
                continue
            if "api_key" in item or "llm_api_key" in item:
                raise ValueError(
                    "agents must not carry api_key in a spec file; set the provider key in the "
                    "environment (e.g. OPENAI_API_KEY) or the dashboard's Settings page"
                )
        return v

    @model_validator(mode="after")
    def _distractors_in_roster(self) -> ChatSpec:
        """A distractor names an agent of this spec (a typo would count no turns, silently)."""
        check_distractors(self.distractors, [a.agent_name for a in self.agents])
        return self

    def to_data(self) -> dict[str, Any]:
        data = self.model_dump(exclude={"agents"})
        data["agents"] = [agent.to_spec() for agent in self.agents]
        return data


def check_distractors(distractors: list[str], roster: list[str]) -> None:
    """Every distractor is on the roster: one-line ValueError naming the first that is not."""
    for name in distractors:
        if name not in roster:
            raise ValueError(f"distractors names {name!r}, who is not in the roster "
                             f"({', '.join(roster) or 'no agents'})")


def chat_default(name: str) -> Any:
    """The engine's default of one chat setting (e.g. 'recency_penalty' -> 0.3): readers of a
    config that lacks the key fall back to this, never to a copy."""
    return ChatConfig.model_fields[name].get_default(call_default_factory=True)


_KNOWN_KEYS = sorted(set(ChatSpec.model_fields) | _AGENT_KEYWORDS)


def explain(exc: ValidationError, what: str = "config") -> ConfigError:
    """One readable ConfigError from a pydantic ValidationError: where, what, and the bad value."""
    parts = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"]) or what
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            key = str(err["loc"][-1])
            msg = "unknown key (remove it or check its spelling)"
            close = difflib.get_close_matches(key, _KNOWN_KEYS, n=1)
            if key in _KNOWN_KEYS:  # spelt right, but in the wrong kind of file or place
                msg = "not a key here (it belongs to a chat spec or an agent: is this the " \
                      "right kind of file?)"
            elif close:
                msg = f"unknown key (did you mean {close[0]!r}?)"
        parts.append(f"{where}: {msg}")
    return ConfigError(f"invalid {what}: " + "; ".join(parts))


def parse_spec(data: Any, source: str = "spec") -> ChatSpec:
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source} must be a mapping of settings, got {type(data).__name__}")
    try:
        return ChatSpec.model_validate(dict(data))
    except ValidationError as exc:
        raise explain(exc, source) from None


def load_spec_text(text: str | bytes, source: str = "spec") -> ChatSpec:
    """Parse untrusted JSON or YAML into a ChatSpec: bounded size and depth, no object-building
    tags, no aliases (billion laughs), no NaN, no secret fields."""
    from ._safeload import parse_text

    return parse_spec(parse_text(text, source, MAX_SPEC_BYTES), source)


def load_spec(path: str | Path) -> ChatSpec:
    """A chat spec from a JSON or YAML file, read as untrusted data (see load_spec_text)."""
    from ._safeload import read_limited

    return load_spec_text(read_limited(path, MAX_SPEC_BYTES, "spec file"), Path(path).name)


def dump_spec(spec: ChatSpec, fmt: str = "yaml") -> str:
    """A chat spec as JSON or YAML text that load_spec_text reads back (never an API key)."""
    import yaml

    data = spec.to_data()
    if fmt == "json":
        return json.dumps(data, indent=2)
    if fmt == "yaml":
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    raise ConfigError(f"unknown spec format {fmt!r}; use 'json' or 'yaml'")
