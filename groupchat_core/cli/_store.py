"""The store's commands: list, show, export, import, agents (cli.py declares their options).

`--json` output (list, show) uses the field names below, which are part of the CLI's
contract (docs/engine.md, "The command line"); new store columns never change them silently.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import Any, TextIO

from .._errors import CliError, ConfigError
from .._terminal import terminal_text
from ..providers._sim import run_is_simulated
from ._output import emit_json

# `list --json`: one object per run, newest first.
LIST_FIELDS = (
    "run_id", "name", "status", "stop_reason", "task", "agents", "turns", "threshold",
    "recency_penalty", "recency_window", "max_loops", "total_calls", "total_prompt_tokens",
    "total_completion_tokens", "total_cost_usd", "started_at", "ended_at", "sweep_id", "cell",
    "tags", "error", "owner", "owner_name", "simulated",
    "task_id", "answer", "correct", "score", "scorer",  # a scored task's outcome (else null)
)


def say(text: object, stream: TextIO | None = None, *, multiline: bool = False) -> None:
    """Print untrusted text (model output, names, tasks, errors) with its control characters
    escaped (see _terminal.py): the one way this CLI writes to a terminal."""
    print(terminal_text(text, multiline=multiline), file=stream or sys.stdout, flush=True)


def store_of(args: argparse.Namespace, *, create: bool = True) -> Any:
    """The store of --db (else GROUPCHAT_DB, else the data home). `create=False` for commands
    that only read: a SQLite store that does not exist is an error naming it, never created."""
    from ..store import RunStore

    return RunStore(args.db, create=create)


def no_store(args: argparse.Namespace) -> str | None:
    """Why there is nothing to list (no SQLite store at that path yet), else None."""
    from ..store import default_url, missing_store

    return missing_store(args.db or default_url())


def cmd_list(args: argparse.Namespace) -> int:
    if (missing := no_store(args)) is not None:  # nothing recorded yet: an empty list
        if args.json:
            emit_json([])
        else:
            say(missing, sys.stderr)
        return 0
    store = store_of(args, create=False)
    rows = store.list_run_rows(status=args.status, agent=args.agent, since=args.since,
                               tag=args.tag, limit=args.limit)  # plain rows: no pandas
    for row in rows:
        row["simulated"] = run_is_simulated(row["models"])
    if args.json:
        emit_json([{name: row.get(name) for name in LIST_FIELDS} for row in rows])
        return 0
    if not rows:
        from ..store import safe_url

        say(f"no runs in {safe_url(store.url)}", sys.stderr)
        return 0
    scored = any(row["scorer"] is not None for row in rows)  # some run had a task with an answer
    table = [{"run_id": row["run_id"][:12], "started_at": str(row["started_at"])[:19],
              "status": row["status"], "stop_reason": row["stop_reason"], "turns": row["turns"],
              "agents": shorten(str(row["agents"])),
              "task": shorten(re.sub(r"\s+", " ", str(row["task"]))),
              **({"outcome": _verdict(row["correct"])} if scored else {}),
              "simulated": "simulated" if row["simulated"] else ""} for row in rows]
    say(rows_table(table), multiline=True)
    return 0


def rows_table(rows: list[dict[str, Any]]) -> str:
    """Rows as aligned text, right-justified as pandas prints a frame (`list` avoids loading
    pandas), every cell on one line with its controls escaped."""
    columns = list(rows[0])
    cells = [[terminal_text(row[c]) for c in columns] for row in rows]
    widths = [max(len(c), *(len(line[i]) for line in cells)) for i, c in enumerate(columns)]
    lines = [[c.rjust(w) for c, w in zip(columns, widths, strict=True)]]
    lines += [[v.rjust(w) for v, w in zip(line, widths, strict=True)] for line in cells]
    return "\n".join(" ".join(line) for line in lines)


def _verdict(correct: Any) -> str:
    """A list row's outcome: correct, wrong, or blank for a plain task (or no score)."""
    if correct is None or correct != correct:  # None or NaN: no outcome
        return ""
    return "correct" if bool(correct) else "wrong"


def shorten(text: str, width: int = 40) -> str:
    text = terminal_text(text)  # escape first: an escape sequence is never cut in half
    return text if len(text) <= width else text[: width - 1] + "…"


def text_table(frame: Any) -> str:
    """A frame as aligned text, every text cell on one line with its controls escaped."""
    safe = frame.copy()
    for column in safe.columns:
        if safe[column].dtype == object:
            safe[column] = safe[column].map(lambda v: v if v is None else terminal_text(v))
    return str(safe.to_string(index=False))


def cmd_show(args: argparse.Namespace) -> int:
    from ..exports._tables import transcript_markdown

    store = store_of(args, create=False)
    run_id = store.resolve(args.run)
    if args.json:
        from ..exports._bundles import export_bundle

        bundle = export_bundle(store, run_id)  # the bundle's documented fields
        shown = {key: bundle[key] for key in ("run", "written_by", "messages", "turns")}
        shown["simulated"] = run_is_simulated(a["model_name"] for a in bundle["spec"]["agents"])
        shown["outcome"] = bundle.get("outcome")
        if args.bids:
            shown["bids"] = bundle["bids"]
        emit_json(shown)
        return 0
    say(transcript_markdown(store, run_id), multiline=True)
    if args.bids:
        say(text_table(store.bids(run_id).drop(columns="run_id")), multiline=True)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from ..exports._bundles import bundle_json
    from ..exports._tables import bids_csv, transcript_markdown

    store = store_of(args, create=False)
    if getattr(args, "to", "file") == "mlflow":
        return _export_mlflow(args, store)
    run_id = store.resolve(args.run)
    writers = {"json": bundle_json, "csv": bids_csv, "md": transcript_markdown}
    emit(writers[args.format](store, run_id), args.output)
    return 0


def _export_mlflow(args: argparse.Namespace, store: Any) -> int:
    from ..integrations._mlflow import export_mlflow

    uri = args.tracking_uri or os.environ.get("MLFLOW_TRACKING_URI")
    if not uri:
        raise CliError("--to mlflow needs --tracking-uri URI (or MLFLOW_TRACKING_URI), e.g. "
                       "--tracking-uri sqlite:///mlflow.db")
    try:
        kind, mlflow_id = export_mlflow(store, args.run, uri, experiment=args.experiment)
    except Exception as exc:
        if "MLFLOW_ALLOW_FILE_STORE" in str(exc):
            raise CliError("MLflow's file store is deprecated and refuses to open: use "
                           "--tracking-uri sqlite:///mlflow.db (or set "
                           "MLFLOW_ALLOW_FILE_STORE=true)") from None
        raise
    say(f"{kind} {args.run} logged to MLflow as run {mlflow_id} ({uri})")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from ..exports._bundle_model import MAX_BUNDLE_BYTES
    from ..exports._bundles import import_bundle
    from ._owner import cli_owner

    owner = cli_owner(args)
    data = read_file(args.file, MAX_BUNDLE_BYTES)
    store = store_of(args)
    run_id = import_bundle(store, data, source=source_name(args.file))
    store.set_owner(run_id, owner, owner)  # whoever imports it (as the dashboard does)
    say(f"imported run {run_id}")
    return 0


def cmd_agents(args: argparse.Namespace) -> int:
    from .._config import MAX_SPEC_BYTES
    from ..exports._bundles import dump_agents, load_agents_text

    if args.verb == "list" and no_store(args) is not None:
        return 0  # no store yet: no saved agents
    store = store_of(args, create=args.verb == "import")
    if args.verb == "import":
        agents = load_agents_text(read_file(args.file, MAX_SPEC_BYTES),
                                  source_name(args.file))
        store.save_agents(agents)
        say(f"saved {len(agents)} agent(s): " + ", ".join(a.agent_name for a in agents))
    elif args.verb == "export":
        agents = [store.get_agent(n) for n in args.names] if args.names else store.list_agents()
        emit(dump_agents(agents, args.format), args.output)
    else:
        listed, problems = store.saved_agents()
        for problem in problems:
            say(f"warning: {problem}", sys.stderr)
        for agent in listed:
            prompt = shorten(" ".join(agent.system_prompt.split()), 50)
            say(f"{terminal_text(agent.agent_name)}\t{terminal_text(agent.model_name)}\t"
                f"{terminal_text(prompt)}", multiline=True)
    return 0


STDIN = "-"  # a file argument of `-` reads standard input (`cat run.json | ... import -`)


def source_name(path: str) -> str:
    """How messages name what was read: the file's name, or `stdin`."""
    return "stdin" if path == STDIN else Path(path).name


def read_file(path: str, limit: int) -> bytes:
    """A file's bytes (standard input's for `-`), refusing anything over `limit` without
    reading it all."""
    try:
        if path == STDIN:
            data = sys.stdin.buffer.read(limit + 1)
        else:
            with open(path, "rb") as handle:
                data = handle.read(limit + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read {path!r}: {exc.strerror or exc}") from None
    shown = "standard input" if path == STDIN else repr(path)
    if len(data) > limit:
        raise ConfigError(f"{shown} is over the {limit:,}-byte limit; is it the right file?")
    return data


def emit(text: str, output: str | None) -> None:
    """An export to a file as it is; to stdout as it is when piped (it is data), with control
    characters escaped when stdout is a terminal."""
    text = text if text.endswith("\n") else text + "\n"
    if output is None or output == STDIN:  # `-o -`: standard output
        sys.stdout.write(terminal_text(text, multiline=True) if sys.stdout.isatty() else text)
        sys.stdout.flush()
        return
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write {output!r}: {exc.strerror or exc}") from None
    say(f"wrote {output}", sys.stderr)
