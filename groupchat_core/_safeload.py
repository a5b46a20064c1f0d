"""Reading untrusted JSON/YAML files (bundles, agent files): data only, bounded, secret-free.

Nothing in a file is ever executed: YAML goes through a safe loader that also refuses aliases
(a few lines of `&a [*a, *a, ...]` expand into billions of nodes), JSON refuses NaN/Infinity,
sizes and nesting are capped, and any key-like field (api_key, password, ...) is rejected
without echoing its value.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import yaml

from ._errors import ConfigError

MAX_DEPTH = 64
_SECRET_NAMES = frozenset({
    "api_key", "apikey", "secret", "secret_key", "client_secret", "password", "passwd",
    "authorization", "access_token", "auth_token", "bearer", "private_key",
})
_SECRET_SUFFIXES = ("_api_key", "_secret", "_password", "_token_secret")


class _NoAliasLoader(yaml.SafeLoader):
    """SafeLoader (plain data types only) that also refuses anchors and aliases."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
            raise yaml.YAMLError(f"YAML aliases are not allowed (line {mark.line + 1})")
        return super().compose_node(parent, index)


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text} is out of range")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def parse_text(text: str | bytes, source: str, max_bytes: int) -> Any:
    """JSON (if it starts with `{` or `[`) or YAML text into plain data, within max_bytes."""
    size = len(text.encode() if isinstance(text, str) else text)
    if size > max_bytes:
        raise ConfigError(f"{source} is {size:,} bytes, over the {max_bytes:,}-byte limit; "
                          "is it the right file?")
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise ConfigError(f"{source} is not UTF-8 text") from None
    try:
        if text.lstrip().startswith(("{", "[")):
            data = json.loads(text, parse_float=_finite, parse_constant=_no_constant)
        else:
            data = yaml.load(text, Loader=_NoAliasLoader)  # noqa: S506 - a SafeLoader subclass
    except RecursionError:
        raise ConfigError(f"{source} is nested too deeply") from None
    except (ValueError, yaml.YAMLError) as exc:
        detail = str(exc).replace("\n", " ")
        raise ConfigError(f"{source} is not valid JSON or YAML: {detail}") from None
    check_plain(data, source)
    return data


def read_limited(path: str | Path, limit: int, what: str) -> bytes:
    """At most limit + 1 bytes of a file (enough for parse_text to report it as oversized),
    so a huge or endless file is never read whole."""
    p = Path(path)
    try:
        with p.open("rb") as handle:
            return handle.read(limit + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {str(p)!r}: {exc.strerror or exc}") from None


def check_plain(data: Any, source: str) -> None:
    """Reject nesting deeper than MAX_DEPTH and any secret-like key, naming where it is."""
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        node, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ConfigError(f"{source} is nested more than {MAX_DEPTH} levels deep")
        if isinstance(node, dict):
            for key, value in node.items():
                where = f"{path}.{key}" if path else str(key)
                if is_secret_name(str(key)):
                    raise ConfigError(
                        f"{source} has a secret-like field {where!r}: files never carry keys "
                        "(set them in the environment or the dashboard's Settings); remove it")
                stack.append((value, where, depth + 1))
        elif isinstance(node, list):
            stack.extend((item, f"{path}[{i}]", depth + 1) for i, item in enumerate(node))


def is_secret_name(key: str) -> bool:
    name = key.strip().lower().replace("-", "_")
    return name in _SECRET_NAMES or name.endswith(_SECRET_SUFFIXES)
