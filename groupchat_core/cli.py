"""Headless runs: `python -m groupchat_core run SPEC.yaml --task "..."`.

Errors are one line on stderr and a non-zero exit; progress is one line per turn on stderr, so
stdout carries only the chat's output and can be piped.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from .config import load_spec
from .engine import GroupChat
from .errors import GroupChatError
from .outputs import OUTPUT_TYPES
from .records import Event, RunFinished, TurnCompleted


class TurnPrinter:
    """Observer printing a line per turn: who spoke and every agent's raw/adjusted score."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def __call__(self, event: Event) -> None:
        if isinstance(event, TurnCompleted):
            row = event.turn
            scores = ", ".join(
                f"{b.agent} {b.score:.2f}" + (f"→{b.adjusted:.2f}" if b.penalized else "")
                + (" (failed)" if b.error and b.path == "none" else "")
                for b in event.bids
            )
            outcome = f"{row.winner} speaks" if row.winner else (
                "lull" if row.lull else "every bid failed")
            print(f"turn {row.turn}: {outcome} | {scores}", file=self.stream, flush=True)
        elif isinstance(event, RunFinished):
            r = event.record
            print(f"stopped: {r.stop_reason} after {len(r.turns)} turns, {r.total_calls} calls"
                  + (f" ({r.error})" if r.error else ""), file=self.stream, flush=True)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m groupchat_core",
                                     description="Run turn-based bidding group chats headless.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run one chat from a JSON/YAML spec and print it")
    run.add_argument("spec", help="chat spec file (JSON or YAML)")
    run.add_argument("--task", required=True, help="the user's opening message")
    run.add_argument("--output-type", choices=OUTPUT_TYPES, default=None,
                     help="override the spec's output_type")
    run.add_argument("--quiet", action="store_true", help="no per-turn progress lines")
    return parser


def _render(output: Any) -> str:
    if isinstance(output, str):
        return output
    if hasattr(output, "model_dump_json"):
        return str(output.model_dump_json(indent=2))
    return json.dumps(output, indent=2, ensure_ascii=False)


def cmd_run(args: argparse.Namespace) -> int:
    spec = load_spec(args.spec)
    overrides = {"output_type": args.output_type} if args.output_type else {}
    chat = GroupChat.from_spec(spec, **overrides)
    if not args.quiet:
        chat.add_observer(TurnPrinter(sys.stderr))
        if any(a.model_name.startswith("sim/") for a in chat.agents):
            print("note: sim/ agents are offline simulations, not language models",
                  file=sys.stderr)
    if not args.task.strip():
        raise GroupChatError("--task must not be empty")
    output = chat.run(args.task)
    print(_render(output))
    return 0 if chat.last_run and chat.last_run.stop_reason != "error" else 1


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    args = build_parser().parse_args(argv)
    try:
        return {"run": cmd_run}[args.command](args)
    except GroupChatError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
