"""Agent: who takes part in a chat and how to reach its model.

Keyword-compatible with the reference `Agent(agent_name=..., system_prompt=..., model_name=...)`.
The API key is a secret: excluded from every dump, spec, export and repr.
"""

from __future__ import annotations

import copy
import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from ._bidding import RESPOND_TOOL

DEFAULT_MODEL = "sim/balanced"
ToolChoiceMode = Literal["forced", "required", "auto", "json"]

# Keys that would smuggle a secret or override what the engine controls.
_FORBIDDEN_EXTRA_KEYS = frozenset(
    {"api_key", "messages", "tools", "tool_choice", "model", "stream", "n"}
)


MAX_NAME_LENGTH = 200  # names are identifiers (stored, charted, filtered), not prose


def _short_name(field: str, value: str) -> str:
    if len(value) > MAX_NAME_LENGTH:
        raise ValueError(f"{field} is {len(value)} characters long; keep it to {MAX_NAME_LENGTH}")
    if any(ord(c) < 32 for c in value):
        raise ValueError(f"{field} must not contain control characters (newlines, tabs, NUL)")
    return value


class Agent(BaseModel):
    """One participant. Each bid is a single-shot call; agents keep no memory between bids."""

    # hide_input_in_errors: a rejected value (e.g. a key put in litellm_kwargs) is never echoed.
    model_config = ConfigDict(extra="forbid", validate_assignment=True, hide_input_in_errors=True)

    agent_name: str
    system_prompt: str = ""
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
    litellm_kwargs: dict[str, Any] = Field(default_factory=dict)

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
        if not math.isfinite(value) or not 0 <= value <= 2:
            raise ValueError(f"temperature must be between 0 and 2, got {value!r}")
        return value

    @field_validator("max_tokens", "num_retries")
    @classmethod
    def _non_negative(cls, value: int) -> int:
        if value < 0:
            raise ValueError(f"must be >= 0, got {value!r}")
        return value

    @field_validator("timeout")
    @classmethod
    def _positive_timeout(cls, value: float) -> float:
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {value!r}")
        return value

    @field_validator("litellm_kwargs")
    @classmethod
    def _safe_kwargs(cls, value: dict[str, Any]) -> dict[str, Any]:
        bad = sorted(k for k in value if k in _FORBIDDEN_EXTRA_KEYS or "key" in k.lower())
        if bad:
            raise ValueError(
                f"litellm_kwargs must not set {bad}: the engine controls these, and keys go in "
                "api_key or the environment"
            )
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

    def to_spec(self) -> dict[str, Any]:
        """Agent fields for a spec file: never the key; RESPOND_TOOL is left out (re-equipped)."""
        spec = self.model_dump(exclude={"api_key"})
        spec["tools_list_dictionary"] = [
            t for t in spec["tools_list_dictionary"]
            if (t.get("function") or {}).get("name") != "respond"
        ]
        return spec
