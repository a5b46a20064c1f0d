"""`groupchat-lab` (also `python -m groupchat_core`): headless chats, the run store, the dashboard.

    run SPEC --task T      run one chat, record it in the store, print its output
    list [--json]          recorded runs, newest first
    show RUN [--json]      one run's summary and transcript (RUN may be an id prefix)
    export RUN             as a JSON bundle, the bid log as CSV, or the transcript as Markdown
    import FILE            add a run bundle to the store
    delete RUN...          delete runs (only their owner; cli/_delete.py)
    agents list|import|export   saved agents
    sweep SPEC [--resume SWEEP] [--max-usd N]   a parameter sweep (see cli/_sweeps.py), and
    sweep list|show|stop|export                 the sweeps in the store
    serve [--port N]       the dashboard (cli/_serve.py)
    completion SHELL       a bash/zsh/fish/tcsh/powershell completion script (cli/_completion.py)
    --version              app, litellm and schema versions, and where the data lives

stdout carries only results (pipeable; a reader that goes away, as `| head` does, ends the
command quietly with status 141); progress and the run id go to stderr. Every error is one line
`error: ...` on stderr and exit status 2 (every status: cli/_exits.py). The list/show/export/
import/agents commands live in cli/_store.py; this module holds the parser and `run`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from .._chat_settings import CLI_SETTINGS, ChatSetting
from .._errors import CliError, GroupChatError
from .._records import Event, RunFinished, RunStarted, TurnCompleted
from .._secrets import scrub
from .._statuses import RUN_STATUSES
from . import _serve as serve
from . import _store as store
from ._completion import files
from ._exits import (
    ERROR_EXIT,
    FAILED,
    INTERRUPT_EXIT,
    SIGTERM_EXIT,
    Terminated,
    sigterm_as_interrupt,
)
from ._output import LOG_LEVELS, log_events, quiet_broken_pipe, setup_logging
from ._owner import add_owner_flag, cli_owner
from ._store import say
from ._traces import add_trace_flags, trace_flag, tracer_provider_for

if TYPE_CHECKING:  # the engine loads when a command runs a chat (`list`, `show` never do)
    from ..engine._groupchat import GroupChat


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
                + (" (failed)" if b.failed else "")
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


class _Version(argparse.Action):
    """--version: printed, then exit (computed only when asked: it reads the data home)."""

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from ._info import version_text

        say(version_text(), multiline=True)
        parser.exit()


def _number(kind: type[int] | type[float]) -> Any:
    """An argparse type: a number (ChatConfig then checks its range, one line if out)."""
    wanted = "an integer" if kind is int else "a number"

    def parse(text: str) -> int | float:
        try:
            return kind(text)
        except ValueError:
            shown = repr(text if len(text) <= 30 else text[:27] + "...")
            raise argparse.ArgumentTypeError(f"must be {wanted}, got {shown}") from None
    return parse


def _add_chat_flags(run: argparse.ArgumentParser, settings: Iterator[ChatSetting],
                    through: str | None = None) -> None:
    """Add the next settings' flags (up to and including `through`; None: all the rest)."""
    for setting in settings:
        cli = setting.cli
        kw: dict[str, Any] = {"dest": setting.name, "default": None, "help": setting.cli_help()}
        assert cli is not None and setting.flag is not None
        choices = cli.choices or setting.choices
        if setting.kind is bool:
            run.add_argument(setting.flag, action=argparse.BooleanOptionalAction, **kw)
        elif choices is not None:
            run.add_argument(setting.flag, choices=choices, **kw)
        else:
            number = int if setting.kind is int else float
            run.add_argument(setting.flag, type=_number(number), metavar=cli.metavar, **kw)
        if setting.name == through:
            return


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="groupchat-lab",
                     description="Run turn-based bidding group chats headless; browse the store; "
                                 "serve the dashboard.")
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="print the app, litellm and store schema versions and where the "
                             "data lives, then exit")
    parser.add_argument("--db", default=None, metavar="URL",
                        help="store URL (default: $GROUPCHAT_DB, else groupchat.db in the data "
                             "home: see --version)")
    parser.add_argument("--log-level", choices=LOG_LEVELS, default=None,
                        help="show the engine's log on stderr from this level up")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="-v: the log at info level, -vv: debug")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = sub.add_parser("run", help="run one chat from a JSON/YAML spec, record it, print it")
    files(run.add_argument("spec", help="chat spec file (JSON or YAML; - reads standard input)"))
    run.add_argument("--task", required=True, help="the user's opening message")
    # The chat's settings, on top of the spec's (checked by the same rules as a spec): each
    # flag, its type and help come from the settings schema (_chat_settings.py).
    settings = iter(CLI_SETTINGS)
    _add_chat_flags(run, settings, through="output_type")
    run.add_argument("--quiet", action="store_true", help="no per-turn progress lines")
    run.add_argument("--no-store", action="store_true", help="do not record the run")
    add_owner_flag(run, "the run is recorded for")
    _add_chat_flags(run, settings, through="show_tally")
    run.add_argument("--human", default=None, metavar="NAME",
                     help="seat a person named NAME in this terminal: each turn shows the bids "
                     "and the time left; Enter passes, h raises a hand, 0.7 [draft] bids 0.7")
    _add_chat_flags(run, settings)  # the rest: a person's bid window
    add_trace_flags(run, "the run")
    run.add_argument("--model-check", action=argparse.BooleanOptionalAction, default=True,
                     help="refuse, before the run, a model no provider can answer (offline: "
                     "litellm's routing and model list; default on)")
    runs = sub.add_parser("list", help="recorded runs, newest first")
    runs.add_argument("--status", default=None, choices=RUN_STATUSES,
                      help="only runs with this status")
    runs.add_argument("--agent", default=None, help="only runs this agent took part in")
    runs.add_argument("--since", default=None, help="ISO date or time (UTC unless given)")
    runs.add_argument("--tag", default=None, help="only runs with this tag")
    runs.add_argument("--limit", type=_limit, default=20,
                      help=f"how many runs to list, 1 to {MAX_LIST_LIMIT:,} (default 20)")
    runs.add_argument("--json", action="store_true",
                      help="a JSON array of runs, one object per run (stable field names)")
    show = sub.add_parser("show", help="a run's summary and transcript")
    show.add_argument("run", help="run id (or a unique prefix)")
    show.add_argument("--bids", action="store_true", help="also print the bid log")
    show.add_argument("--json", action="store_true",
                      help="the run, its messages and turns (and bids with --bids) as JSON")
    export = sub.add_parser("export", help="export a run (json bundle, csv bids, md transcript)")
    export.add_argument("run", help="run id (or a unique prefix); with --to mlflow also a sweep id")
    export.add_argument("--format", choices=("json", "csv", "md"), default="json",
                        help="json: a bundle `import` reads; csv: the bid log; md: transcript")
    export.add_argument("-o", "--output", default=None,
                        help="file to write (default, or -: stdout)")
    export.add_argument("--to", choices=("file", "mlflow"), default="file",
                        help="mlflow: log the run (or a sweep, by its id) to an MLflow "
                        "tracking store instead of writing a file")
    export.add_argument("--tracking-uri", default=None, metavar="URI",
                        help="with --to mlflow: where (default: MLFLOW_TRACKING_URI)")
    export.add_argument("--experiment", default="groupchat-lab",
                        help="with --to mlflow: the experiment name (default groupchat-lab)")
    imp = sub.add_parser("import", help="add a run bundle (JSON) to the store")
    files(imp.add_argument("file", help="a bundle written by `export --format json` (- reads "
                           "standard input)"))
    add_owner_flag(imp, "the imported run belongs to (bundles carry no owner)")
    _agents_parser(sub)
    from ._delete import add_parser as add_delete_parser
    from ._sweeps import add_parser as add_sweep_parser

    add_delete_parser(sub)
    from ._completion import add_parser as add_completion_parser

    add_sweep_parser(sub)
    from ._selection import add_parser as add_selection_parser

    add_selection_parser(sub)
    serve.add_parser(sub)
    add_completion_parser(sub)
    return parser


def _agents_parser(sub: Any) -> None:
    agents = sub.add_parser("agents", help="saved agents: list, import, export")
    verbs = agents.add_subparsers(dest="verb", required=True)
    verbs.add_parser("list", help="saved agents")
    imp = verbs.add_parser("import", help="save the agents of a JSON/YAML agents file")
    files(imp.add_argument("file", help="an agents file (schema_version and agents; - reads "
                           "standard input)"))
    exp = verbs.add_parser("export", help="write saved agents as an agents file")
    exp.add_argument("names", nargs="*", help="agent names (default: all)")
    exp.add_argument("--format", choices=("json", "yaml"), default="yaml",
                     help="file format (default yaml)")
    exp.add_argument("-o", "--output", default=None, help="file to write (default stdout)")


def _render(output: Any) -> str:
    if isinstance(output, str):
        return output
    if hasattr(output, "model_dump_json"):
        return str(output.model_dump_json(indent=2))
    return json.dumps(output, indent=2, ensure_ascii=False)


_store = store.store_of


def cmd_run(args: argparse.Namespace) -> int:
    if not args.task.strip():
        raise CliError("--task must not be empty")
    spec = _load_spec(args.spec)
    overrides = {s.name: getattr(args, s.name) for s in CLI_SETTINGS
                 if getattr(args, s.name) is not None}
    from ..engine._stream_printer import DeltaPrinter
    from ..providers._sim import SIM_NOTE, is_sim_model

    people = []
    if args.human is not None:
        from ._human import TerminalPlayer

        people = [TerminalPlayer(args.human).human()]
    chat = _chat(spec, overrides, people)
    if args.model_check:
        _check_models(chat)
    if chat.stream_bids:
        chat.add_observer(DeltaPrinter(say, sys.stderr))
    owner = cli_owner(args)
    recorder = None if args.no_store else _store(args).attach(chat, owner=owner,
                                                               owner_name=owner)
    chat.add_observer(log_events)  # --log-level / -v: the turns and bids in the log
    tracing = _tracing(chat, args, owner)
    if not args.quiet:
        chat.add_observer(TurnPrinter(sys.stderr))
        if any(is_sim_model(a.model_name) for a in chat.agents):
            print(f"note: {SIM_NOTE}", file=sys.stderr)
    try:
        output = chat.run(args.task)
    except BaseException as exc:
        if recorder is not None:
            _abandon(recorder, exc)
        raise
    finally:
        if tracing is not None:
            tracing.shutdown()  # flush the spans before the process ends
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
        return FAILED
    return 0


def _check_models(chat: GroupChat) -> None:
    """Refuse a model no provider can answer before anything runs (offline: litellm's routing
    rules and model list; providers/_model_names.py)."""
    from ..providers._model_names import model_problems

    problems = model_problems(chat.agents)
    if problems:
        raise CliError("; ".join(problems) + " (--no-model-check runs it anyway)")


def _tracing(chat: GroupChat, args: argparse.Namespace, owner: str | None) -> Any:
    """A tracer provider from the OTEL_* environment with its observer on the chat, when traces
    are asked for (cli/_traces.py); else None."""
    provider = tracer_provider_for(trace_flag(args))
    if provider is not None:
        from ..integrations._otel import trace_chat

        trace_chat(chat, tracer_provider=provider, user_id=owner,
                   capture_content=args.trace_content)
    return provider


def _chat(spec: Any, overrides: dict[str, Any], people: Sequence[Any] = ()) -> GroupChat:
    """The spec's chat with the command line's parameters (and the person of --human),
    checked by ChatConfig's rules; a bad value is one line naming the flag."""
    from .._errors import ConfigError
    from ..engine._groupchat import GroupChat

    try:
        return GroupChat.from_spec(spec, people=people, **overrides)
    except ConfigError as exc:
        message = str(exc).removeprefix("invalid GroupChat argument: ")
        for name in overrides:
            if message.startswith(f"{name}: "):
                raise CliError(f"--{name.replace('_', '-')}: {message[len(name) + 2:]}"
                               ) from None
        raise


def _abandon(recorder: Any, exc: BaseException) -> None:
    """The engine raised (or Ctrl-C): close the run in the store without hiding why."""
    cancelled = isinstance(exc, KeyboardInterrupt)  # Ctrl-C, or SIGTERM (Terminated)
    try:
        recorder.abandon(("terminated (SIGTERM)" if isinstance(exc, Terminated) else
                          "interrupted by the user") if cancelled else
                         scrub(f"{type(exc).__name__}: {exc}"),
                         status="cancelled" if cancelled else "error")
    except GroupChatError:
        pass  # the store is unreachable too; the original error is what to report


def _load_spec(path: str) -> Any:
    """A chat spec file (`-`: standard input), read as untrusted data: bounded, no YAML
    aliases, no secret fields."""
    from .._config import MAX_SPEC_BYTES, load_spec_text

    return load_spec_text(store.read_file(path, MAX_SPEC_BYTES), store.source_name(path))


def cmd_sweep(args: argparse.Namespace) -> int:
    from ._sweeps import cmd_sweep as run

    if args.verb == "list" and (missing := store.no_store(args)) is not None:
        if args.json:
            print("[]")
        else:
            say(missing, sys.stderr)
        return 0
    return run(args, _store(args, create=args.verb == "run"))  # the other verbs only read


def _cmd_completion(args: argparse.Namespace) -> int:
    from ._completion import cmd_completion

    return cmd_completion(args, build_parser())


def _cmd_delete(args: argparse.Namespace) -> int:
    from ._delete import cmd_delete

    return cmd_delete(args)


def _cmd_selection(args: argparse.Namespace) -> int:
    from ._selection import cmd_selection

    return cmd_selection(args)


COMMANDS = {"run": cmd_run, "list": store.cmd_list, "show": store.cmd_show,
            "export": store.cmd_export, "import": store.cmd_import, "agents": store.cmd_agents,
            "sweep": cmd_sweep, "serve": serve.cmd_serve, "delete": _cmd_delete,
            "completion": _cmd_completion, "selection": _cmd_selection}


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from ._sweeps import with_default_verb

    try:
        with sigterm_as_interrupt():
            args = build_parser().parse_args(
                with_default_verb(list(sys.argv[1:] if argv is None else argv)))
            setup_logging(args.log_level, args.verbose)
            return COMMANDS[args.command](args)
    except GroupChatError as exc:
        say(scrub(f"error: {exc}"), sys.stderr)  # one line; never a key from the environment
        return ERROR_EXIT
    except BrokenPipeError:
        return quiet_broken_pipe()
    except Terminated:
        print("terminated", file=sys.stderr)
        return SIGTERM_EXIT
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return INTERRUPT_EXIT
