"""Agent: who takes part in a chat and how to reach its model.

Keyword-compatible with the reference `Agent(agent_name=..., system_prompt=..., model_name=...)`:
code written for the reference runs with only its import changed. Its keywords that mean
something here are mapped (REFERENCE_ALIASES); the rest are accepted with one
ReferenceCompatibilityWarning each (REFERENCE_IGNORED); anything else is a ConfigError naming it.
The API key never leaves the process: excluded from every dump, spec, export, repr and pickle
(see _secrets.py); `litellm_kwargs` carries no credential and no endpoint (_kwargs_policy.py).
"""

from __future__ import annotations

import copy
import difflib
import math
import warnings
from typing import Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    field_validator,
)

from ._bidding import RESPOND_TOOL
from ._bounds import AGENT_BOUNDS, MAX_AGENT_LOOPS, MAX_AGENT_TOKENS, MAX_RETRIES
from ._errors import ConfigError
from ._kwargs_policy import kwargs_problem
from ._safeload import check_int, nonfinite_path, show_number
from ._terminal import char_name, first_unsafe

DEFAULT_MODEL = "sim/balanced"
ToolChoiceMode = Literal["forced", "required", "auto", "json", "json_schema"]
# The modes, declared once with the type: the dashboard's agent form offers exactly these.
TOOL_CHOICE_MODES: tuple[ToolChoiceMode, ...] = get_args(ToolChoiceMode)

class ReferenceCompatibilityWarning(UserWarning):
    """A keyword of the reference's Agent that is accepted here but has no effect."""


# The reference's keyword -> the field it sets here.
REFERENCE_ALIASES: dict[str, str] = {
    "retry_attempts": "num_retries",
    "context_length": "context_window",
    "llm_base_url": "api_base",
    "llm_api_key": "api_key",
    "agent_description": "description",
}

# The reference's keywords with no effect here -> what to use instead (said in the warning).
REFERENCE_IGNORED: dict[str, str] = {
    "output_type": "a chat's output format is GroupChat(output_type=...)",
    "dynamic_temperature_enabled": "each bid uses Agent.temperature as given",
    "user_name": "the task is always posted as 'User'",
    "print_on": "use GroupChat(verbose=True) to print each posted message",
    "verbose": "use GroupChat(verbose=True) to log bids and print messages",
    "autosave": "runs are recorded by the store (RunStore().attach(chat))",
    "saved_state_path": "runs are recorded by the store (RunStore().attach(chat))",
    "dashboard": "the dashboard is a separate app (`groupchat-lab serve`)",
    "retry_interval": "retries back off exponentially on their own (Agent.num_retries)",
    "streaming_on": "each bid is one call; GroupChat.run(task, streaming_callback=...) streams "
                    "posted messages",
}

# Named in the unknown-keyword error itself: a pip user has no README to look them up in.
REFERENCE_KEYWORDS = ", ".join([*REFERENCE_ALIASES, *REFERENCE_IGNORED])


MAX_NAME_LENGTH = 200  # names are identifiers (stored, charted, filtered), not prose
# Numeric maxima (docs/engine.md §2): a bound, not a tuning, so 1e20 is a clear error at the edge.
MAX_AGENT_TIMEOUT_S = AGENT_BOUNDS["timeout"].high
MAX_KWARG_INT = 2**63 - 1  # an integer inside litellm_kwargs / tools: what a provider can take


def _short_name(field: str, value: str) -> str:
    if len(value) > MAX_NAME_LENGTH:
        raise ValueError(f"{field} is {len(value)} characters long; keep it to {MAX_NAME_LENGTH}")
    bad = first_unsafe(value)
    if bad is not None:  # controls, bidi overrides, invisible characters: names are shown raw
        raise ValueError(f"{field} contains {char_name(bad)}; remove it (names must not "
                         "contain control characters)")
    return value


class Agent(BaseModel):
    """One participant. Each bid is a single-shot call; agents keep no memory between bids."""

    # hide_input_in_errors: a rejected value (e.g. a key put in litellm_kwargs) is never echoed.
    model_config = ConfigDict(extra="forbid", validate_assignment=True, hide_input_in_errors=True)

    agent_name: str
    system_prompt: str = ""
    description: str = ""  # shown next to the name in the other agents' bid prompts
    model_name: str = DEFAULT_MODEL
    temperature: float = 0.5
    max_tokens: int = 1024
    max_loops: int = 1  # accepted for compatibility: each bid is one call
    persistent_memory: bool = False  # accepted for compatibility: no memory between bids
    tools_list_dictionary: list[dict[str, Any]] = Field(default_factory=list)
    api_base: str | None = None
    api_key: SecretStr | None = Field(default=None, exclude=True, repr=False)
    timeout: float = 60.0
    num_retries: int = 2
    tool_choice_mode: ToolChoiceMode | None = None
    context_window: int | None = None  # the model's input window in tokens (overrides litellm's)
    litellm_kwargs: dict[str, Any] = Field(default_factory=dict)

    def __init__(self, /, **data: Any) -> None:
        """Keyword construction, as the reference's code does it: its keywords are mapped or
        accepted with a warning, and an unknown keyword is a ConfigError, never a raw
        pydantic error. pydantic calls this for data too (model_validate, an agent inside a
        spec or agents file), so the same mapping applies everywhere."""
        unknown = sorted(k for k in data if k not in _ACCEPTED)
        if unknown:
            raise ConfigError(_unknown_message(unknown))
        super().__init__(**_from_reference(data, stacklevel=3))

    @field_validator("agent_name")
    @classmethod
    def _name_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("agent_name must not be empty")
        return _short_name("agent_name", value)

    @field_validator("model_name")
    @classmethod
    def _model_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("model_name must not be empty (e.g. 'sim/balanced' or 'gpt-4o-mini')")
        return _short_name("model_name", value.strip())

    @field_validator("temperature")
    @classmethod
    def _temperature_range(cls, value: float) -> float:
        bound = AGENT_BOUNDS["temperature"]
        if not bound.holds(value):
            raise ValueError(f"temperature must be between {bound.low:g} and {bound.high:g}, "
                             f"got {value!r}")
        return value

    @field_validator("context_window")
    @classmethod
    def _window(cls, value: int | None) -> int | None:
        if value is not None and value < 1:
            raise ValueError(f"context_window must be a positive number of tokens, got {value!r}")
        if value is not None:
            check_int("context_window", value, 1, MAX_AGENT_TOKENS)
        return value

    @field_validator("max_tokens", "num_retries", "max_loops", "context_window", mode="before")
    @classmethod
    def _whole_number(cls, value: Any, info: Any) -> Any:
        """3.0 still reads as 3; 1e20 or 2.5 is our one-line message, not pydantic's "unable to
        parse input string"."""
        if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()
                                             and abs(value) <= 2**53):
            raise ValueError(f"{info.field_name} must be an integer, got {value!r}")
        return value

    @field_validator("max_tokens", "num_retries")
    @classmethod
    def _non_negative(cls, value: int, info: Any) -> int:
        if value < 0:
            raise ValueError(f"must be >= 0, got {value!r}")
        high = MAX_AGENT_TOKENS if info.field_name == "max_tokens" else MAX_RETRIES
        return check_int(info.field_name, value, 0, high)

    @field_validator("max_loops")
    @classmethod
    def _loops(cls, value: int) -> int:
        return check_int("max_loops", value, -MAX_AGENT_LOOPS, MAX_AGENT_LOOPS)

    @field_validator("timeout")
    @classmethod
    def _positive_timeout(cls, value: float) -> float:
        if not AGENT_BOUNDS["timeout"].holds(value):
            raise ValueError(f"timeout must be a positive number of seconds up to "
                             f"{MAX_AGENT_TIMEOUT_S:,.0f} (a day), got {value!r}")
        return value

    @field_validator("tools_list_dictionary")
    @classmethod
    def _finite_tools(cls, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        _check_plain_numbers("tools_list_dictionary", value)
        return value

    @field_validator("litellm_kwargs")
    @classmethod
    def _safe_kwargs(cls, value: dict[str, Any]) -> dict[str, Any]:
        """Only settings that cannot move a request or carry a credential (_kwargs_policy)."""
        problem = kwargs_problem(value)
        if problem is not None:
            raise ValueError(problem)
        _check_plain_numbers("litellm_kwargs", value)
        return value

    def has_respond_tool(self) -> bool:
        return any(
            isinstance(t, dict) and (t.get("function") or {}).get("name") == "respond"
            for t in self.tools_list_dictionary
        )

    def equip(self) -> None:
        """Append RESPOND_TOOL once, in place, as the reference's auto_equip does."""
        if not self.has_respond_tool():
            self.tools_list_dictionary.append(copy.deepcopy(RESPOND_TOOL))  # never share it

    def secret_key(self) -> str | None:
        return self.api_key.get_secret_value() if self.api_key else None

    def __getstate__(self) -> dict[Any, Any]:
        """Pickling drops the key, like every other dump: a pickle is bytes that can leave the
        process. copy.deepcopy keeps it (in-process)."""
        state = super().__getstate__()
        fields = dict(state["__dict__"])
        fields["api_key"] = None
        return {**state, "__dict__": fields}

    def to_spec(self) -> dict[str, Any]:
        """Agent fields for a spec file: never the key; RESPOND_TOOL is left out (re-equipped)."""
        spec = self.model_dump(exclude={"api_key"})
        spec["tools_list_dictionary"] = [
            t for t in spec["tools_list_dictionary"]
            if (t.get("function") or {}).get("name") != "respond"
        ]
        return spec


def _check_plain_numbers(field: str, value: Any) -> None:
    """Nested numbers go to the provider and into every dump: finite, and integers a provider
    (and JSON readers) can hold."""
    where = nonfinite_path(value, field)
    if where is not None:
        raise ValueError(f"{where} must be a finite number (NaN and infinity cannot be recorded)")
    stack: list[tuple[Any, str]] = [(value, field)]
    while stack:
        node, path = stack.pop()
        if isinstance(node, int) and not isinstance(node, bool) and abs(node) > MAX_KWARG_INT:
            raise ValueError(f"{path} is {show_number(node)}, beyond a 64-bit integer")
        if isinstance(node, dict):
            stack.extend((v, f"{path}.{k}") for k, v in node.items())
        elif isinstance(node, list | tuple):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(node))


_ACCEPTED = frozenset(Agent.model_fields) | set(REFERENCE_ALIASES) | set(REFERENCE_IGNORED)


def _from_reference(data: dict[str, Any], stacklevel: int) -> dict[str, Any]:
    """Map the reference's keywords onto our fields; warn once per keyword with no effect."""
    if not any(k in REFERENCE_ALIASES or k in REFERENCE_IGNORED for k in data):
        return data
    out = dict(data)
    for old, new in REFERENCE_ALIASES.items():
        if old not in out:
            continue
        value = out.pop(old)
        if new in out and out[new] != value:
            raise ConfigError(
                f"Agent got both {old}= and {new}= with different values; {old} is the "
                f"reference's name for {new}: pass only one")
        out[new] = value
    for name, instead in REFERENCE_IGNORED.items():
        if name in out:
            del out[name]
            warnings.warn(
                f"Agent({name}=...) is accepted for code written for the reference but has no "
                f"effect here: {instead}.", ReferenceCompatibilityWarning, stacklevel=stacklevel)
    return out


def _unknown_message(unknown: list[str]) -> str:
    parts = []
    for name in unknown:
        close = difflib.get_close_matches(name, sorted(_ACCEPTED), n=1)
        parts.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    return (f"Agent got unknown keyword {', '.join(parts)}; accepted keywords are its fields "
            f"and the reference's keywords ({REFERENCE_KEYWORDS})")
