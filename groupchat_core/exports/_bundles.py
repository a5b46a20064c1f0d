"""Run bundles: one run as a JSON file (spec, task, messages, bids, turns; never a key).

    data = export_bundle(store, run_id)     # a dict; bundle_json() gives the text
    run_id = import_bundle(other_store, data)

Importing validates everything first (unknown fields, wrong types, secret-like fields, size,
numbers the store can hold) and then re-checks the run against the engine's own rules: every
turn is re-selected from its bids with `select_speaker` under the bundle's threshold, recency
penalty and window (recent speakers derived from the bundle's messages, as the turn loop does),
and the recorded winner, turn row, posted message, stop reason and totals must all agree. The
first contradiction is one ConfigError line (turn, agent, what was expected); the run is written
in one transaction only after all of that, so a bad file changes nothing. An imported run reads
back exactly as it was exported.

The file's models live in _bundle_model.py, the engine-rule checks in _bundle_checks.py.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field, ValidationError, field_validator

from .._agent import Agent
from .._config import MAX_SPEC_BYTES, explain, parse_spec
from .._errors import ConfigError
from .._records import utc_now
from .._safeload import check_plain, parse_text
from ..store import RunStore, outcome_values
from ._bundle_checks import _check_consistent
from ._bundle_model import (
    BUNDLE_FORMAT,
    BUNDLE_VERSION,
    MAX_BUNDLE_BYTES,
    Bundle,
    BundleRun,
    _Strict,
    written_by,
)


def export_bundle(store: RunStore, run_id: str) -> dict[str, Any]:
    """The run as plain data: format, schema_version (the bundle format's), exported_at,
    written_by (app, litellm and store schema versions), run, spec, messages, bids, turns."""
    info = store.run_info(run_id)
    record = store.load_run(run_id)
    posted_on = store.message_turns(run_id)
    run = {k: info[k] for k in BundleRun.model_fields if k != "tags"}
    run["tags"] = [t for t in (info.get("tags") or "").split(",") if t]
    # The bundle format keeps 0 for an unknown cost (the store's NULL, v13); import_run reads
    # it back from the bids' own costs.
    run["total_cost_usd"] = run["total_cost_usd"] or 0.0
    bundle = {
        "format": BUNDLE_FORMAT, "schema_version": BUNDLE_VERSION, "exported_at": utc_now(),
        "written_by": written_by(), "run": run, "spec": info["spec"],
        "messages": [{**m.model_dump(), "turn": t}
                     for m, t in zip(record.messages, posted_on, strict=True)],
        "bids": [b.model_dump() for b in record.bids],
        "turns": [t.model_dump() for t in record.turns],
        "people": [{"name": name, "position": position} for position, name in sorted(
            {(b.position, b.agent) for b in record.bids if b.kind == "human"})],
    }
    if record.outcome is not None:  # only scored runs carry one (older readers stay happy)
        bundle["outcome"] = record.outcome.model_dump()
    return bundle


def bundle_json(store: RunStore, run_id: str) -> str:
    """The run's bundle as JSON text, ready for a file or a download (import_bundle reads it)."""
    return json.dumps(export_bundle(store, run_id), indent=1, ensure_ascii=False)


def read_bundle(data: str | bytes | Mapping[str, Any], source: str = "bundle") -> Bundle:
    """Validate a bundle (text or parsed data) completely, without touching any store."""
    if isinstance(data, str | bytes):
        data = parse_text(data, source, MAX_BUNDLE_BYTES)
    else:
        check_plain(data, source)
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source} must be a JSON object, got {type(data).__name__}")
    try:
        bundle = Bundle.model_validate(dict(data))
    except ValidationError as exc:
        raise explain(exc, source) from None
    spec = parse_spec(bundle.spec, f"{source} spec")
    _check_consistent(bundle, spec, source)
    return bundle


def import_bundle(store: RunStore, data: str | bytes | Mapping[str, Any],
                  source: str = "bundle") -> str:
    """Add the bundle's run to the store, all or nothing; returns its run id."""
    bundle = read_bundle(data, source)
    spec = parse_spec(bundle.spec, f"{source} spec").to_data()
    run = bundle.run.model_dump()
    if run["status"] == "running":
        run["status"] = "interrupted"  # no process here is writing it
    run.update(outcome_values(bundle.outcome))
    store.import_run(run, spec, message_rows=[m.model_dump() for m in bundle.messages],
                     bid_rows=[b.model_dump() for b in bundle.bids],
                     turn_rows=[t.model_dump() for t in bundle.turns])
    return bundle.run.run_id


# --- agent files ---------------------------------------------------------------------------

AGENTS_VERSION = 1


class AgentsFile(_Strict):
    """`{schema_version: 1, agents: [...]}`: saved agents as a file (never an api_key)."""

    schema_version: int
    agents: list[Agent] = Field(min_length=1)

    @field_validator("schema_version")
    @classmethod
    def _version(cls, v: int) -> int:
        if v != AGENTS_VERSION:
            raise ValueError(f"schema_version {v} is not supported (expected {AGENTS_VERSION})")
        return v


def dump_agents(agents: Sequence[Agent], fmt: str = "yaml") -> str:
    """Agents as a JSON or YAML file, with a schema version and without keys."""
    import yaml

    data = {"schema_version": AGENTS_VERSION, "agents": [a.to_spec() for a in agents]}
    if fmt == "json":
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if fmt == "yaml":
        return str(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    raise ConfigError(f"unknown agents format {fmt!r}; use 'json' or 'yaml'")


def load_agents_text(text: str | bytes, source: str = "agents file") -> list[Agent]:
    """Parse an agents file safely; any problem is one ConfigError naming it."""
    data = parse_text(text, source, MAX_SPEC_BYTES)
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source} must be a mapping with schema_version and agents, got "
                          f"{type(data).__name__}")
    try:
        parsed = AgentsFile.model_validate(dict(data))
    except ValidationError as exc:
        raise explain(exc, source) from None
    names = [a.agent_name for a in parsed.agents]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError(f"{source}: duplicate agent_name {', '.join(map(repr, duplicates))}")
    return parsed.agents
