"""Tool-choice modes: the fallback ladder, recognising a provider's rejection, and the memory
of what each (model, api_base, tools) accepted."""

from __future__ import annotations

import copy
import hashlib
import json
import re
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._bidding import RESPOND_TOOL
from .._records import BidPath
from ._bodies import ERROR_BODY_CAP
from ._call_errors import REJECTING_CODES, code_of

if TYPE_CHECKING:
    from .._agent import Agent

MODE_MEMORY_TTL_S = 600.0  # a remembered fallback mode is re-probed from "forced" after this
JSON_TEXT_INSTRUCTION = (
    "\n\nYou cannot call functions here. Answer with only a JSON object of the form "
    '{"score": <number from 0 to 1>, "message": "<your reply, or empty to stay silent>"}.'
)
SCHEMA_OVERHEAD_TOKENS = 80  # '{"score": <up to 36 characters>, "message": "' + '"}' + spaces
SCHEMA_MESSAGE_CAP = 1_000  # longest message a constrained bid may carry, in characters
LADDER: tuple[str, ...] = ("forced", "required", "auto", "json")
PATHS: dict[str, BidPath] = {
    "forced": "tool_call",
    "required": "tool_call:required",
    "auto": "tool_call:auto",
    "json": "json_text",
    "json_schema": "json_schema",
}
# Modes that send no tools and read the bid from the reply's JSON text. "json_schema" is opt-in
# (Agent.tool_choice_mode, never a rung of the ladder): the respond tool's parameters go as
# `response_format`, so a server with constrained decoding (llama.cpp's) can only emit a bid.
TEXT_MODES = frozenset({"json", "json_schema"})


# What a provider accepted, remembered so a model that rejects forced tool_choice costs one
# rejected call per TTL, not one per bid. Scoped by the agent's tools (one agent's broken extra
# tool cannot change another agent's requests), it expires (the provider may have been fixed,
# the rejection may have been transient) and `remembered_modes()` shows it.
_ModeKey = tuple[str, str | None, str]
_accepted_mode: dict[_ModeKey, tuple[str, float]] = {}  # key -> (mode, expiry on monotonic)
# Models that refused to stream a bid (a 400 on stream=true, or a stream without a respond call),
# remembered the same way: one wasted request per TTL, and shown as mode "unstreamed".
_unstreamed: dict[_ModeKey, float] = {}  # key -> expiry on monotonic
_mode_lock = threading.Lock()  # read from UI threads while the loop thread writes


@dataclass(frozen=True)
class RememberedMode:
    """One remembered fallback: this (model, api_base, tools) answers in `mode` until expiry."""

    model: str
    api_base: str | None
    tools_hash: str
    mode: str
    expires_in: float  # seconds until the next bid re-probes from "forced"


def tools_hash(tools: list[dict[str, Any]]) -> str:
    """A short stable hash of an agent's tools list (part of the mode memory's key)."""
    text = json.dumps(tools, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def mode_key(agent: Agent) -> _ModeKey:
    return (agent.model_name, agent.api_base, tools_hash(agent.tools_list_dictionary))


def recalled_mode(key: _ModeKey) -> str:
    """The remembered mode for this key, or "forced" when none is remembered or it expired."""
    with _mode_lock:
        found = _accepted_mode.get(key)
        if found is None:
            return "forced"
        if found[1] <= time.monotonic():
            del _accepted_mode[key]
            return "forced"
        return found[0]


def remember(key: _ModeKey, mode: str) -> None:
    """Remember a step down (a fresh TTL); an accepted "forced" needs no memory."""
    with _mode_lock:
        if mode == "forced":
            _accepted_mode.pop(key, None)
        else:
            _accepted_mode[key] = (mode, time.monotonic() + MODE_MEMORY_TTL_S)


def streams(key: _ModeKey) -> bool:
    """False while this key is remembered as refusing to stream bids."""
    with _mode_lock:
        expiry = _unstreamed.get(key)
        if expiry is None:
            return True
        if expiry <= time.monotonic():
            del _unstreamed[key]
            return True
        return False


def remember_unstreamed(key: _ModeKey) -> None:
    """Remember (a fresh TTL) that this key's bids are asked for without stream=true."""
    with _mode_lock:
        _unstreamed[key] = time.monotonic() + MODE_MEMORY_TTL_S


def remembered_modes() -> list[RememberedMode]:
    """A read-only view of the fallback modes this process remembers (for the Run page); a
    model remembered as not streaming shows mode "unstreamed"."""
    now = time.monotonic()
    with _mode_lock:
        items = list(_accepted_mode.items())
        items += [(key, ("unstreamed", expiry)) for key, expiry in _unstreamed.items()]
    return [
        RememberedMode(model, base, tools, mode, round(expiry - now, 1))
        for (model, base, tools), (mode, expiry) in sorted(items, key=lambda i: str(i[0]))
        if expiry > now
    ]


def forget_remembered_modes() -> None:
    """Drop every remembered mode: the next bid of each model probes from "forced" again."""
    with _mode_lock:
        _accepted_mode.clear()
        _unstreamed.clear()


# Recognisers for a provider saying tools or tool_choice are unsupported, written from real
# messages. Anything else that mentions tools or functions (OpenAI's context-length error counts
# "functions" tokens; "Invalid schema for function 'x'" is one agent's broken tool) is NOT a
# rejection: stepping down on it would silence a working model.
_NOT_SUPPORTED = r"(?:is not supported|are not supported|not supported|unsupported|not allowed|" \
    r"not enabled|not available|requires --)"
_TOOLS_REJECTED = re.compile(
    "|".join((
        # OpenAI: "Unsupported parameter: 'tools' is not supported with this model."
        r"unsupported parameter:?\s*'?tools'?(?![_\w])",
        # Ollama: "registry.ollama.ai/library/gemma:2b does not support tools";
        # llama.cpp / others: "model does not support tool calling|function calling"
        r"(?:does not|doesn't|do not) support (?:tools\b|tool use|tool calling|tool calls|"
        r"function calling|functions\b)",
        # litellm UnsupportedParamsError: "... does not support parameters: ['tools', ...]"
        r"does not support parameters:[^\]}]*'tools'",
        # "tools are not supported by this model", "tools param requires --jinja flag"
        r"(?<![_\w])'?tools'?(?: param(?:eter)?)? (?:are |is )?" + _NOT_SUPPORTED,
        r"(?:tool|function) calling is " + _NOT_SUPPORTED,
    )),
    re.IGNORECASE,
)
_CHOICE_REJECTED = re.compile(
    "|".join((
        # OpenAI: "Unsupported parameter: 'tool_choice' is not supported with this model."
        r"unsupported (?:parameter|value):?\s*'?tool_choice'?",
        # "tool_choice of type 'function' is not supported", "tool_choice 'required' is not
        # supported", vLLM: '"auto" tool choice requires --enable-auto-tool-choice ...',
        # vLLM: 'tool_choice = "required" is not supported!'
        r"tool[_ ]choice[^.\n]{0,80}?" + _NOT_SUPPORTED,
        # litellm UnsupportedParamsError: "... does not support parameters: ['tool_choice']"
        r"does not support parameters:[^\]}]*'tool_choice'",
        # vLLM: 'Only named tools, "none" or "auto" are supported'
        r"only named tools[^.\n]{0,40}are supported",
    )),
    re.IGNORECASE,
)


def rejection_kind(text: str) -> str | None:
    """"tools" when the text says tools are unsupported, "tool_choice" when only the choice
    is, else None (not a capability rejection: the mode must not change)."""
    if _TOOLS_REJECTED.search(text):
        return "tools"
    if _CHOICE_REJECTED.search(text):
        return "tool_choice"
    return None


def rejection(exc: Exception, mode: str) -> str | None:
    """The next mode when a provider clearly rejected this one at call time, else None."""
    if mode in TEXT_MODES or code_of(exc) not in REJECTING_CODES:
        return None
    kind = rejection_kind(str(exc)[:ERROR_BODY_CAP])
    if kind is None:
        return None
    if kind == "tool_choice":
        return LADDER[LADDER.index(mode) + 1]
    return "json"


def respond_schema(agent: Agent) -> dict[str, Any]:
    """The JSON schema of the agent's respond tool's arguments (RESPOND_TOOL's by default)."""
    for tool in agent.tools_list_dictionary:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and function.get("name") == "respond":
            parameters = function.get("parameters")
            if isinstance(parameters, dict):
                return copy.deepcopy(parameters)
    default: dict[str, Any] = RESPOND_TOOL["function"]["parameters"]
    return copy.deepcopy(default)


def schema_response_format(agent: Agent) -> dict[str, Any]:
    """`response_format` for the "json_schema" mode: `{"type": "json_object", "schema": ...}`,
    the form llama.cpp's servers turn into a grammar (llama-cpp-python 0.3's request model
    takes only this form: `type` "json_schema" is refused with HTTP 422)."""
    schema = respond_schema(agent)
    message = (schema.get("properties") or {}).get("message")
    if isinstance(message, dict) and message.get("type") == "string" and "maxLength" not in message:
        message["maxLength"] = schema_message_chars(agent.max_tokens)
    return {"type": "json_object", "schema": schema}


def schema_message_chars(max_tokens: int) -> int:
    """The message's maxLength under constraint: a bid that always closes within max_tokens.
    Every token is at least one character, so the reply needs at most one token per character
    of message plus the JSON around it (SCHEMA_OVERHEAD_TOKENS, a 16-digit score included);
    capped so the grammar stays small (one nested rule per character)."""
    return max(0, min(max_tokens - SCHEMA_OVERHEAD_TOKENS, SCHEMA_MESSAGE_CAP))
