"""Credentials never leave the process: one scrubber for every text the engine keeps or shows.

A provider may echo what it was sent ("Incorrect API key provided: Bearer sk-..."), so any
error text is scrubbed before it is stored on a bid or run, logged, or printed. The scrubber
knows every credential a call could have used:

- the agent's own `api_key`;
- every environment variable whose name looks like a credential (litellm reads provider keys
  from there): names with a `_`-separated part KEY, APIKEY, TOKEN, SECRET, PASSWORD, PASSWD,
  CREDENTIAL(S) or AUTH (OPENAI_API_KEY, AZURE_OPENAI_AD_TOKEN, AWS_SECRET_ACCESS_KEY, HF_TOKEN,
  VERTEX_CREDENTIALS, ...), see `is_credential_env_name`;
- secret-looking values inside `litellm_kwargs` (header values of Authorization / api-key,
  entries named like keys, tokens, secrets, passwords or credentials), see `is_secret_name`;
- and, whatever their source, `Bearer <token>` and `sk-...` key shapes.

Only whole values of at least MIN_SECRET_LENGTH characters are masked: a dummy key such as "x"
(usual for local servers) is not a secret, and masking it would maul the text
("OpenAIE***ception").
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._agent import Agent

MASK = "***"
MIN_SECRET_LENGTH = 8

_CREDENTIAL_PARTS = frozenset({
    "KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "CREDENTIALS", "AUTH",
})
_SECRET_NAMES = frozenset({"authorization", "proxy_authorization", "cookie", "bearer"})
_SECRET_PARTS = frozenset({
    "key", "apikey", "token", "secret", "password", "passwd", "credential", "credentials", "auth",
    "authorization",
})
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b(Bearer)\s+[^\s\"',;)}\]]+", re.IGNORECASE), r"\1 " + MASK),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"), "sk-" + MASK),
)


def is_credential_env_name(name: str) -> bool:
    """True for environment variables that may hold a credential (by name, not value)."""
    return any(part in _CREDENTIAL_PARTS for part in name.upper().split("_"))


def is_secret_name(name: str) -> bool:
    """True for a litellm kwarg or header name that carries a credential: Authorization,
    api-key, x-api-key, azure_ad_token, aws_secret_access_key, client_secret, ..."""
    norm = name.strip().lower().replace("-", "_")
    return norm in _SECRET_NAMES or any(p in _SECRET_PARTS for p in norm.split("_"))


def _is_plain_setting(value: Any) -> bool:
    """Numbers, booleans and None are settings (e.g. a token limit), never credentials."""
    return value is None or isinstance(value, bool | int | float)


def secret_paths(kwargs: Mapping[str, Any], prefix: str = "") -> list[str]:
    """Dotted paths of the secret entries in `litellm_kwargs`, for error messages."""
    found: list[str] = []
    for key, value in kwargs.items():
        where = f"{prefix}.{key}" if prefix else str(key)
        if is_secret_name(str(key)) and not _is_plain_setting(value):
            found.append(where)
        elif isinstance(value, Mapping):
            found.extend(secret_paths(value, where))
    return found


def redact_kwargs(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `litellm_kwargs` without its secret entries (what every dump stores)."""
    out: dict[str, Any] = {}
    for key, value in kwargs.items():
        if is_secret_name(str(key)) and not _is_plain_setting(value):
            continue
        out[key] = redact_kwargs(value) if isinstance(value, Mapping) else value
    return out


def _values(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
        # "Bearer abc..." is sent whole, but a provider may echo only the token
        head, _, token = value.partition(" ")
        if token and head.lower() in ("bearer", "basic", "token"):
            yield token.strip()
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _values(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _values(item)


def kwargs_secrets(kwargs: Mapping[str, Any]) -> list[str]:
    """Every secret value inside `litellm_kwargs` (nested headers included)."""
    found: list[str] = []
    for key, value in kwargs.items():
        if is_secret_name(str(key)) and not _is_plain_setting(value):
            found.extend(_values(value))
        elif isinstance(value, Mapping):
            found.extend(kwargs_secrets(value))
    return found


def env_secrets(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of credential-named environment variables, read now (keys may change at runtime)."""
    env = os.environ if environ is None else environ
    return [value for name, value in env.items() if is_credential_env_name(name)]


def agent_secrets(agent: Agent) -> list[str]:
    """The credentials one agent carries: its api_key and the secrets in its litellm_kwargs."""
    key = agent.secret_key()
    return ([key] if key else []) + kwargs_secrets(agent.litellm_kwargs)


def scrub(text: str, agents: Iterable[Agent] = (), extra: Iterable[str] = ()) -> str:
    """`text` with every credential a call could have used masked as ***.

    Known values (the agents', the environment's, `extra`) are masked wherever they occur whole,
    longest first, when at least MIN_SECRET_LENGTH characters long; then Bearer tokens and
    sk-... key shapes are masked whatever their source.
    """
    if not text:
        return text
    known: set[str] = set(extra)
    for agent in agents:
        known.update(agent_secrets(agent))
    known.update(env_secrets())
    for secret in sorted((s for s in known if len(s) >= MIN_SECRET_LENGTH), key=len,
                         reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def scrub_optional(text: str | None, agents: Iterable[Agent] = ()) -> str | None:
    """`scrub` for optional fields (Bid.error, RunRecord.error)."""
    return None if text is None else scrub(text, agents)


class ScrubFilter(logging.Filter):
    """A logging filter that scrubs each record's message and traceback text in place.

    Installed on the `groupchat_core` logger and on the handler verbose mode adds, so log lines
    (including `logger.exception` tracebacks) never carry a key from the environment or a
    Bearer header.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: leave it to logging's own error reporting
            return True
        clean = scrub(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = scrub(record.exc_text)
        return True


def install_log_filter(logger: logging.Logger | None = None) -> None:
    """Add one ScrubFilter to a logger (default: the engine's), idempotently."""
    target = logger or logging.getLogger("groupchat_core")
    if not any(isinstance(f, ScrubFilter) for f in target.filters):
        target.addFilter(ScrubFilter())


install_log_filter()  # every engine module logs through "groupchat_core"
