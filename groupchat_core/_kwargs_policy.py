"""What an agent's `litellm_kwargs` may carry: a short allowlist, judged in one place.

Why: litellm sends a request wherever its settings say (`base_url`, `api_base`,
`custom_llm_provider`, `aws_bedrock_runtime_endpoint`, ...), and signs it with whatever
credentials it finds. Keys are bound to endpoints (providers/_endpoints.py) by the agent's
first-class `api_base`, so a setting hidden in `litellm_kwargs` that moved the request would
carry the server's or another user's key to a host nobody trusted. So `litellm_kwargs` holds only
settings that cannot change where a request goes or what it is signed with; everything else is
refused, naming the key and the first-class field to use instead (docs/engine.md §14). The Agent
validates it on every door (Python API, files, the store, the CLI, the dashboard), and the
request builder checks it again, so an agent built around validation (`model_construct`) cannot
slip one through either.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ._secrets import is_secret_name

# name -> what it does (the docs' table is checked against this: tests/architecture/test_docs.py)
ALLOWED_KWARGS: dict[str, str] = {
    "sim_latency": "seconds a sim/ bid takes (the sims only)",
    "sim_failure_rate": "share of sim/ bids that fail (the sims only)",
    "sim_accuracy": "how often a sim/ agent answers a task right (the sims only)",
    "top_p": "nucleus sampling",
    "top_k": "top-k sampling (providers that take it)",
    "min_p": "min-p sampling (providers that take it)",
    "seed": "sampling seed",
    "stop": "stop sequences",
    "presence_penalty": "sampling penalty",
    "frequency_penalty": "sampling penalty",
    "repetition_penalty": "sampling penalty (local servers)",
    "logit_bias": "token biases",
    "logprobs": "ask for log-probabilities",
    "top_logprobs": "how many log-probabilities",
    "parallel_tool_calls": "whether the model may call tools in parallel",
    "reasoning_effort": "a reasoning model's effort",
    "thinking": "a reasoning model's thinking budget",
    "user": "an end-user id the provider may log",
    "drop_params": "let litellm drop settings the provider does not take",
    "api_version": "the API version string (Azure, Vertex)",
    "extra_headers": "extra HTTP headers (no credential, Host or forwarding header)",
    "extra_body": "extra JSON body fields (no credential or endpoint field)",
}

# Names that set the engine's own arguments: the turn decides them.
ENGINE_KWARGS = frozenset({"messages", "tools", "tool_choice", "model", "stream", "n",
                           "timeout", "num_retries", "max_retries", "max_tokens", "temperature",
                           "response_format", "stream_options"})
_MOVES_REQUEST = re.compile(r"base|url|endpoint|host|region|location|provider|proxy|client|"
                            r"project|route|deployment|server|uri|domain|profile|role|sts", re.I)
_FORWARDING_HEADER = re.compile(r"^(host|forwarded|x-forwarded-.*|x-real-ip|via)$", re.I)


def kwargs_problem(kwargs: Mapping[str, Any], where: str = "litellm_kwargs") -> str | None:
    """The first reason these settings are refused, in one line naming the key and what to use
    instead; None when every entry is allowed. Never echoes a value."""
    for name in sorted(kwargs, key=str):
        problem = _entry_problem(str(name), kwargs[name], where)
        if problem is not None:
            return problem
    return None


def _entry_problem(name: str, value: Any, where: str) -> str | None:
    path = f"{where}.{name}"
    if name in ALLOWED_KWARGS:
        if name == "extra_headers":
            return _headers_problem(value, path)
        if name == "extra_body":
            return _body_problem(value, path)
        return None
    if name in ENGINE_KWARGS:
        return (f"{path} is set by the engine, not an agent; use the Agent's own field or the "
                "chat's settings")
    if is_secret_name(name):
        return (f"{path} would carry a credential; give the key as the agent's api_key, in "
                "Settings or in the server's environment")
    if _MOVES_REQUEST.search(name):
        return (f"{path} would change where requests go; set the endpoint as the agent's "
                "api_base (or a deployment in a sweep), where keys are bound to it")
    return (f"{path} is not a setting an agent may carry; allowed: "
            f"{', '.join(sorted(ALLOWED_KWARGS))}")


def _headers_problem(value: Any, path: str) -> str | None:
    if not isinstance(value, Mapping):
        return f"{path} must be a mapping of header names to values"
    for header in sorted(value, key=str):
        text = str(header)
        if is_secret_name(text):
            return (f"{path} must not set {text!r}: it carries a credential; give the key as the "
                    "agent's api_key, in Settings or in the server's environment")
        if _FORWARDING_HEADER.match(text.strip()):
            return (f"{path} must not set {text!r}: it changes where a request goes; set the "
                    "endpoint as the agent's api_base")
    return None


def _body_problem(value: Any, path: str) -> str | None:
    if not isinstance(value, Mapping):
        return f"{path} must be a mapping of body fields"
    for key in sorted(value, key=str):  # litellm reads some routes' settings from here too
        if _MOVES_REQUEST.search(str(key)):
            return (f"{path}.{key} would change where requests go; set the endpoint as the "
                    "agent's api_base")
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        node, at = stack.pop()
        if isinstance(node, Mapping):
            for key, item in node.items():
                if is_secret_name(str(key)) and not _plain(item):
                    return (f"{at}.{key} would carry a credential; give the key as the agent's "
                            "api_key, in Settings or in the server's environment")
                stack.append((item, f"{at}.{key}"))
        elif isinstance(node, list):
            stack.extend((item, f"{at}[{i}]") for i, item in enumerate(node))
    return None


def _plain(value: Any) -> bool:
    """Numbers, booleans and None are settings (a token budget), never credentials."""
    return value is None or isinstance(value, bool | int | float)
