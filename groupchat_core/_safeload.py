"""Reading untrusted JSON/YAML files (bundles, agent files): data only, bounded, secret-free.

Nothing in a file is ever executed: YAML goes through a safe loader that also refuses aliases
(a few lines of `&a [*a, *a, ...]` expand into billions of nodes), sizes and nesting are capped,
YAML has its own smaller size cap (parsing it costs about 10x the time and 5x the memory of
JSON), no number may be NaN or infinite (JSON's NaN/Infinity, YAML's .nan/.inf: a recorded NaN
could never be exported as JSON again), no text may hold NUL (no database stores it), and any
key-like field (api_key, password, ...) is rejected without echoing its value.

The integer helpers here are the one place the edge's numeric bounds are spelled out
(check_int, MAX_STORED_INT), so configs, agents, sweeps and bundles say the same thing.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import yaml

from ._errors import ConfigError

MAX_DEPTH = 64
MAX_YAML_BYTES = 8 * 1024 * 1024  # YAML costs ~3x JSON's time per byte even through libyaml
MAX_STORED_INT = 2**31 - 1  # the store's INTEGER columns (32-bit on PostgreSQL)
_JSON_START = re.compile(rb"\s*[{\[]")
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
    """JSON (if it starts with `{` or `[`) or YAML text into plain data, within max_bytes
    (and within MAX_YAML_BYTES for YAML)."""
    raw = text.encode() if isinstance(text, str) else text
    size = len(raw)
    if size > max_bytes:
        raise ConfigError(f"{source} is {size:,} bytes, over the {max_bytes:,}-byte limit; "
                          "is it the right file?")
    is_json = _JSON_START.match(raw) is not None
    if not is_json and size > MAX_YAML_BYTES:
        raise ConfigError(f"{source} is {size:,} bytes of YAML: YAML bundles are limited to 8 MB "
                          f"({MAX_YAML_BYTES:,} bytes); export as JSON for larger runs")
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise ConfigError(f"{source} is not UTF-8 text") from None
    try:
        if is_json:
            data = json.loads(text, parse_float=_finite, parse_constant=_no_constant)
        else:
            data = _load_yaml(text, source)
    except RecursionError:
        raise ConfigError(f"{source} is nested too deeply") from None
    except (ValueError, yaml.YAMLError) as exc:
        detail = str(exc).replace("\n", " ")
        raise ConfigError(f"{source} is not valid JSON or YAML: {detail}") from None
    check_plain(data, source)
    return data


def _load_yaml(text: str, source: str) -> Any:
    """Safe YAML through libyaml when it is there (about 4x faster and half the memory of the
    pure-Python loader). libyaml composes in C, where neither _NoAliasLoader's alias check nor
    Python's recursion limit applies, so a first pass over the events refuses aliases and deep
    nesting before anything is built."""
    c_loader = getattr(yaml, "CSafeLoader", None)
    if c_loader is None:
        return yaml.load(text, Loader=_NoAliasLoader)  # noqa: S506 - a SafeLoader subclass
    depth = 0
    for event in yaml.parse(text, Loader=c_loader):
        if isinstance(event, yaml.AliasEvent):
            mark = event.start_mark
            line = f" (line {mark.line + 1})" if mark is not None else ""
            raise yaml.YAMLError(f"YAML aliases are not allowed{line}")
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise ConfigError(f"{source} is nested more than {MAX_DEPTH} levels deep")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
    return yaml.load(text, Loader=c_loader)  # noqa: S506 - CSafeLoader: plain data types only


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
    """Reject nesting deeper than MAX_DEPTH, any secret-like key, a number that is NaN or
    infinite and text holding NUL, naming where it is."""
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        node, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ConfigError(f"{source} is nested more than {MAX_DEPTH} levels deep")
        if isinstance(node, float) and not math.isfinite(node):
            raise ConfigError(f"{source}: {path or 'the value'} is {node}, not a finite number; "
                              "use a finite number")
        if isinstance(node, str) and "\x00" in node:
            raise ConfigError(f"{source}: {path or 'the value'} contains a NUL character, which "
                              "no store can hold; remove it")
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


def nonfinite_path(data: Any, path: str = "") -> str | None:
    """Where in nested dicts/lists a float is NaN or infinite (None if nowhere): such a value
    would be recorded and then make every JSON export of the run unreadable."""
    stack: list[tuple[Any, str]] = [(data, path)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            return where or "the value"
        if isinstance(node, dict):
            stack.extend((v, f"{where}.{k}" if where else str(k)) for k, v in node.items())
        elif isinstance(node, list | tuple):
            stack.extend((v, f"{where}[{i}]") for i, v in enumerate(node))
    return None


def show_number(value: Any) -> str:
    """A rejected value for an error message: huge integers as their size, never 10^20 digits
    (and never Python's 4,300-digit conversion error instead of ours)."""
    if isinstance(value, int) and value.bit_length() > 128:
        return f"an integer of about {int(value.bit_length() * math.log10(2)) + 1:,} digits"
    return repr(value)


def check_int(name: str, value: Any, low: int, high: int) -> int:
    """An int (not a bool, not a float such as 1e20 from YAML or JSON) in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an integer >= {low:,}, got {show_number(value)}")
    if value > high:
        raise ValueError(f"{name} must be an integer <= {high:,} (its documented maximum), "
                         f"got {show_number(value)}")
    return value
