"""Credentials never leave the process: one masking function for every text kept or shown.

A provider may echo what it was sent ("Incorrect API key provided: Bearer sk-..."), in an error
or inside the model's reply, so error text and model output alike (each streamed delta, the
message, the bid) are scrubbed before they are stored, logged, printed or shown. `mask_secrets`
is the one masking function (the dashboard's too); `scrub` masks every secret the process holds:

- the agent's own `api_key`;
- every environment variable whose name looks like a credential (litellm reads provider keys
  from there): names with a `_`-separated part KEY, APIKEY, TOKEN, SECRET, PASSWORD, PASSWD,
  CREDENTIAL(S) or AUTH (OPENAI_API_KEY, AZURE_OPENAI_AD_TOKEN, AWS_SECRET_ACCESS_KEY, HF_TOKEN,
  VERTEX_CREDENTIALS, ...), see `is_credential_env_name`;
- secret-looking values inside a request's settings (its api_key; `litellm_kwargs` itself may
  carry none: _kwargs_policy.py), see `is_secret_name`;
- every secret handed to `hold_secrets`: each agent's key once a chat runs it (a Settings key of
  any session), deployments' `api_key_env` values, the dashboard's `.streamlit/secrets.toml`;
- and, whatever their source, `Bearer <token>` and `sk-...` key shapes.

Only whole values of at least MIN_SECRET_LENGTH (8) characters are masked, everywhere: a dummy
key such as "x" or "no-key" (usual for local servers) is not a secret, and masking it would maul
the text ("OpenAIE***ception"); no provider issues keys that short.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol


class Agent(Protocol):
    """What masking needs of an agent (groupchat_core.Agent satisfies it); a Protocol so this
    module, which Agent itself uses, never imports Agent back."""

    @property
    def litellm_kwargs(self) -> Mapping[str, Any]: ...

    def secret_key(self) -> str | None: ...


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


_held: set[str] = set()
_held_lock = threading.Lock()


def hold_secrets(values: Iterable[str]) -> None:
    """Remember secrets this process holds (keys given in a session, deployment keys, the
    dashboard's secrets file), so model output that echoes one is masked in every chat."""
    found = {v for v in values if isinstance(v, str) and len(v) >= MIN_SECRET_LENGTH}
    if found:
        with _held_lock:
            _held.update(found)


def held_secrets(agents: Iterable[Agent] = (), extra: Iterable[str] = ()) -> list[str]:
    """Every secret known now, longest first: the agents', `extra`, the environment's, and
    those held (hold_secrets); only values of at least MIN_SECRET_LENGTH characters."""
    known: set[str] = set(extra)
    for agent in agents:
        known.update(agent_secrets(agent))
    known.update(env_secrets())
    with _held_lock:
        known.update(_held)
    return sorted((s for s in known if len(s) >= MIN_SECRET_LENGTH), key=len, reverse=True)


def mask_secrets(text: str | None, secrets: Iterable[str]) -> str:
    """The one masking function: `text` with each of `secrets` (whole values of at least
    MIN_SECRET_LENGTH characters, longest first) and every Bearer token or sk-... key shape
    replaced by ***."""
    if not text:
        return ""
    for secret in sorted((s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH), key=len,
                         reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def mask_values(value: Any, secrets: Sequence[str]) -> Any:
    """`mask_secrets` over every string inside plain data (dicts, lists, tuples)."""
    if isinstance(value, str):
        return mask_secrets(value, secrets) if value else value
    if isinstance(value, dict):
        return {k: mask_values(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(mask_values(v, secrets) for v in value)
    return value


def scrub(text: str, agents: Iterable[Agent] = (), extra: Iterable[str] = ()) -> str:
    """`text` with every credential the process holds masked as *** (`mask_secrets` over
    `held_secrets`)."""
    if not text:
        return text
    return mask_secrets(text, held_secrets(agents, extra))


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
