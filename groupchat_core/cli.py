"""Headless use: `python -m groupchat_core run SPEC.yaml --task "..."`, and the run store.

    run SPEC --task T      run one chat, record it in the store, print its output
    list                   recorded runs, newest first
    show RUN               one run's summary and transcript (RUN may be an id prefix)
    export RUN             as a JSON bundle, the bid log as CSV, or the transcript as Markdown
    import FILE            add a run bundle to the store
    agents list|import|export   saved agents
    sweep SPEC [--resume SWEEP] [--max-usd N]   a parameter sweep (see sweeps/_cli.py)

stdout carries only results (pipeable); progress and the run id go to stderr. Every error is one
line `error: ...` on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

from ._errors import CliError, ConfigError, GroupChatError
from ._groupchat import GroupChat
from ._outputs import OUTPUT_TYPES
from ._records import Event, RunFinished, RunStarted, TurnCompleted
from ._secrets import scrub
from ._sim import is_sim_model
from ._stream_printer import DeltaPrinter
from ._terminal import terminal_text


def say(text: object, stream: TextIO | None = None, *, multiline: bool = False) -> None:
    """Print untrusted text (model output, names, tasks, errors) with its control characters
    escaped (see _terminal.py): the one way this CLI writes to a terminal."""
    print(terminal_text(text, multiline=multiline), file=stream or sys.stdout, flush=True)


class TurnPrinter:
    """Observer printing a line per turn: who spoke and every agent's raw/adjusted score."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def __call__(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            say(f"run {event.run_id} started: {len(event.agents)} agents, max_loops "
                f"{event.config.get('max_loops')}", self.stream)
        elif isinstance(event, TurnCompleted):
            row = event.turn
            scores = ", ".join(
                f"{b.agent} {b.score:.2f}" + (f"→{b.adjusted:.2f}" if b.penalized else "")
                + (" (failed)" if b.error and b.path == "none" else "")
                for b in event.bids
            )
            outcome = f"{row.winner} speaks" if row.winner else (
                "lull" if row.lull else "every bid failed")
            say(f"turn {row.turn}: {outcome} | {scores}", self.stream)
        elif isinstance(event, RunFinished):
            r = event.record
            cached = f" ({r.cache_hits} bids cached)" if r.cache_hits else ""
            say(f"stopped: {r.stop_reason} after {len(r.turns)} turns, {r.total_calls} calls"
                + cached + (f" ({scrub(r.error)})" if r.error else ""), self.stream)


MAX_LIST_LIMIT = 1_000_000


def _limit(text: str) -> int:
    """`list --limit`: a bounded integer (a huge one would overflow the database's LIMIT)."""
    shown = repr(text if len(text) <= 30 else text[:27] + "...")
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {shown}") from None
    if not 1 <= value <= MAX_LIST_LIMIT:
        raise argparse.ArgumentTypeError(f"must be from 1 to {MAX_LIST_LIMIT:,}, got {shown}")
    return value


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise CliError(f"{message} (see {self.prog} --help)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m groupchat_core",
                     description="Run turn-based bidding group chats headless; browse the store.")
    parser.add_argument("--db", default=None, metavar="URL",
                        help="store URL (default: $GROUPCHAT_DB, else data/groupchat.db)")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run one chat from a JSON/YAML spec, record it, print it")
    run.add_argument("spec", help="chat spec file (JSON or YAML)")
    run.add_argument("--task", required=True, help="the user's opening message")
    run.add_argument("--output-type", choices=OUTPUT_TYPES, default=None,
                     help="override the spec's output_type")
    run.add_argument("--quiet", action="store_true", help="no per-turn progress lines")
    run.add_argument("--no-store", action="store_true", help="do not record the run")
    run.add_argument("--stream", action=argparse.BooleanOptionalAction, default=None,
                     help="stream bids, printing each candidate's reply as it forms (stderr); "
                     "default: the spec's stream_bids (off)")
    runs = sub.add_parser("list", help="recorded runs, newest first")
    runs.add_argument("--status", default=None)
    runs.add_argument("--agent", default=None, help="only runs this agent took part in")
    runs.add_argument("--since", default=None, help="ISO date or time (UTC unless given)")
    runs.add_argument("--tag", default=None)
    runs.add_argument("--limit", type=_limit, default=20,
                      help=f"how many runs to list, 1 to {MAX_LIST_LIMIT:,} (default 20)")
    show = sub.add_parser("show", help="a run's summary and transcript")
    show.add_argument("run", help="run id (or a unique prefix)")
    show.add_argument("--bids", action="store_true", help="also print the bid log")
    export = sub.add_parser("export", help="export a run (json bundle, csv bids, md transcript)")
    export.add_argument("run", help="run id (or a unique prefix)")
    export.add_argument("--format", choices=("json", "csv", "md"), default="json")
    export.add_argument("-o", "--output", default=None, help="file to write (default stdout)")
    imp = sub.add_parser("import", help="add a run bundle (JSON) to the store")
    imp.add_argument("file")
    _agents_parser(sub)
    from .sweeps._cli import add_parser as add_sweep_parser

    add_sweep_parser(sub)
    return parser


def _agents_parser(sub: Any) -> None:
    agents = sub.add_parser("agents", help="saved agents: list, import, export")
    verbs = agents.add_subparsers(dest="verb", required=True)
    verbs.add_parser("list", help="saved agents")
    imp = verbs.add_parser("import", help="save the agents of a JSON/YAML agents file")
    imp.add_argument("file")
    exp = verbs.add_parser("export", help="write saved agents as an agents file")
    exp.add_argument("names", nargs="*", help="agent names (default: all)")
    exp.add_argument("--format", choices=("json", "yaml"), default="yaml")
    exp.add_argument("-o", "--output", default=None, help="file to write (default stdout)")


def _render(output: Any) -> str:
    if isinstance(output, str):
        return output
    if hasattr(output, "model_dump_json"):
        return str(output.model_dump_json(indent=2))
    return json.dumps(output, indent=2, ensure_ascii=False)


def _store(args: argparse.Namespace) -> Any:
    from .store import RunStore

    return RunStore(args.db)


def cmd_run(args: argparse.Namespace) -> int:
    if not args.task.strip():
        raise CliError("--task must not be empty")
    spec = _load_spec(args.spec)
    overrides = {"output_type": args.output_type} if args.output_type else {}
    if args.stream is not None:
        overrides["stream_bids"] = args.stream
    chat = GroupChat.from_spec(spec, **overrides)
    if chat.stream_bids:
        chat.add_observer(DeltaPrinter(say, sys.stderr))
    recorder = None if args.no_store else _store(args).attach(chat)
    if not args.quiet:
        chat.add_observer(TurnPrinter(sys.stderr))
        if any(is_sim_model(a.model_name) for a in chat.agents):
            print("note: sim/ agents are offline simulations, not language models",
                  file=sys.stderr)
    try:
        output = chat.run(args.task)
    except BaseException as exc:
        if recorder is not None:
            _abandon(recorder, exc)
        raise
    say(_render(output), multiline=True)  # the transcript: newlines kept, controls escaped
    run_id = chat.last_run.run_id if chat.last_run else None
    if run_id is not None:
        say(f"run {run_id}", sys.stderr)
    if recorder is not None and recorder.failures:
        raise CliError(f"run {run_id} was not fully recorded: "
                       + next(iter(recorder.failures.values())))
    if chat.last_run is not None and chat.last_run.stop_reason == "error":
        say(scrub(f"error: the chat stopped because every bid failed: {chat.last_run.error}",
                  chat.agents), sys.stderr)
        return 1
    return 0


def _abandon(recorder: Any, exc: BaseException) -> None:
    """The engine raised (or Ctrl-C): close the run in the store without hiding why."""
    cancelled = isinstance(exc, KeyboardInterrupt)
    try:
        recorder.abandon("interrupted by the user" if cancelled else
                         scrub(f"{type(exc).__name__}: {exc}"),
                         status="cancelled" if cancelled else "error")
    except GroupChatError:
        pass  # the store is unreachable too; the original error is what to report


def cmd_list(args: argparse.Namespace) -> int:
    store = _store(args)
    frame = store.list_runs(status=args.status, agent=args.agent, since=args.since,
                            tag=args.tag, limit=args.limit)
    if frame.empty:
        from .store import safe_url

        say(f"no runs in {safe_url(store.url)}", sys.stderr)
        return 0
    table = frame[["run_id", "started_at", "status", "stop_reason", "turns", "agents", "task"]]
    table = table.assign(
        run_id=table["run_id"].str[:12], started_at=table["started_at"].str[:19],
        task=table["task"].str.replace(r"\s+", " ", regex=True).map(_shorten),
        agents=table["agents"].map(_shorten))
    say(_table(table), multiline=True)
    return 0


def _shorten(text: str, width: int = 40) -> str:
    text = terminal_text(text)  # escape first: an escape sequence is never cut in half
    return text if len(text) <= width else text[: width - 1] + "…"


def _table(frame: Any) -> str:
    """A frame as aligned text, every text cell on one line with its controls escaped."""
    safe = frame.copy()
    for column in safe.columns:
        if safe[column].dtype == object:
            safe[column] = safe[column].map(lambda v: v if v is None else terminal_text(v))
    return str(safe.to_string(index=False))


def cmd_show(args: argparse.Namespace) -> int:
    from ._exports import transcript_markdown

    store = _store(args)
    run_id = store.resolve(args.run)
    say(transcript_markdown(store, run_id), multiline=True)
    if args.bids:
        say(_table(store.bids(run_id).drop(columns="run_id")), multiline=True)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from ._bundles import bundle_json
    from ._exports import bids_csv, transcript_markdown

    store = _store(args)
    run_id = store.resolve(args.run)
    writers = {"json": bundle_json, "csv": bids_csv, "md": transcript_markdown}
    _emit(writers[args.format](store, run_id), args.output)
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from ._bundles import MAX_BUNDLE_BYTES, import_bundle

    data = _read(args.file, MAX_BUNDLE_BYTES)
    run_id = import_bundle(_store(args), data, source=Path(args.file).name)
    say(f"imported run {run_id}")
    return 0


def cmd_agents(args: argparse.Namespace) -> int:
    from ._bundles import dump_agents, load_agents_text
    from ._config import MAX_SPEC_BYTES

    store = _store(args)
    if args.verb == "import":
        agents = load_agents_text(_read(args.file, MAX_SPEC_BYTES), Path(args.file).name)
        store.save_agents(agents)
        say(f"saved {len(agents)} agent(s): " + ", ".join(a.agent_name for a in agents))
    elif args.verb == "export":
        agents = [store.get_agent(n) for n in args.names] if args.names else store.list_agents()
        _emit(dump_agents(agents, args.format), args.output)
    else:
        for agent in store.list_agents():
            prompt = _shorten(" ".join(agent.system_prompt.split()), 50)
            say(f"{terminal_text(agent.agent_name)}\t{terminal_text(agent.model_name)}\t"
                f"{terminal_text(prompt)}", multiline=True)
    return 0


def _load_spec(path: str) -> Any:
    """A chat spec file, read as untrusted data: bounded, no YAML aliases, no secret fields."""
    from ._config import load_spec

    return load_spec(path)


def _read(path: str, limit: int) -> bytes:
    """A file's bytes, refusing anything over `limit` without reading it all."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read {path!r}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise ConfigError(f"{path!r} is over the {limit:,}-byte limit; is it the right file?")
    return data


def _emit(text: str, output: str | None) -> None:
    """An export to a file as it is; to stdout as it is when piped (it is data), with control
    characters escaped when stdout is a terminal."""
    text = text if text.endswith("\n") else text + "\n"
    if output is None:
        sys.stdout.write(terminal_text(text, multiline=True) if sys.stdout.isatty() else text)
        return
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write {output!r}: {exc.strerror or exc}") from None
    say(f"wrote {output}", sys.stderr)


def cmd_sweep(args: argparse.Namespace) -> int:
    from .sweeps._cli import cmd_sweep as run

    return run(args, _store(args))


COMMANDS = {"run": cmd_run, "list": cmd_list, "show": cmd_show, "export": cmd_export,
            "import": cmd_import, "agents": cmd_agents, "sweep": cmd_sweep}


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        args = build_parser().parse_args(argv)
        return COMMANDS[args.command](args)
    except GroupChatError as exc:
        say(scrub(f"error: {exc}"), sys.stderr)  # one line; never a key from the environment
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
