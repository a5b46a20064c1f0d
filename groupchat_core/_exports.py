"""Human-facing exports of a stored run: the bid log as CSV, the transcript as Markdown.

Both hold model output, so both are defused for the programs that open them: CSV cells that a
spreadsheet would run as a formula get a leading apostrophe, and Markdown escapes raw HTML and
image syntax (a prompt-injected `![](http://...)` must not load anything when viewed).
"""

from __future__ import annotations

import re
from typing import Any

from ._records import Bid, RunRecord, Turn, format_cost
from ._sim import is_sim_model
from .store import RunStore

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_TEXT_COLUMNS = ("run_id", "agent", "message", "path", "error")


def _defuse_cell(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def bids_csv(store: RunStore, run_id: str) -> str:
    """The run's bid log as CSV (SPEC §7 columns plus run_id), safe to open in a spreadsheet."""
    frame = store.bids(run_id)
    for column in _TEXT_COLUMNS:
        frame[column] = frame[column].map(_defuse_cell)
    return str(frame.to_csv(index=False, lineterminator="\n"))


def _safe_md(text: str) -> str:
    """Model text as inert Markdown: no raw HTML, no images, no structure breaking out."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = re.sub(r"!\[", r"!\\[", text)
    return text


def _quote(text: str) -> str:
    return "\n".join("> " + line if line else ">" for line in _safe_md(text).splitlines() or [""])


def _score(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _runner_up(turn: Turn, turn_bids: list[Bid]) -> str:
    if turn.runner_up_adjusted is None:
        return "no runner-up"
    name = next((b.agent for b in turn_bids
                 if not b.winner and b.message and b.adjusted == turn.runner_up_adjusted), "?")
    return (f"runner-up {_safe_md(name)} {_score(turn.runner_up_adjusted)}"
            + (f", margin {_score(turn.margin)}" if turn.margin is not None else ""))


def _turn_section(turn: Turn, turn_bids: list[Bid], content: str | None) -> list[str]:
    if turn.winner is None:
        best = max((b for b in turn_bids if b.message), key=lambda b: b.adjusted, default=None)
        why = ("lull: no bid cleared the threshold" if turn.lull
               else "no agent produced a readable bid (the run stopped with an error)")
        lines = [f"### Turn {turn.turn}: nobody spoke", "", why + (
            f" (best: {_safe_md(best.agent)} {_score(best.adjusted)})"
            if best and turn.lull else "") + "."]
        return [*lines, ""]
    won = next(b for b in turn_bids if b.winner)
    penalty = " (recency penalty applied)" if won.penalized else ""
    lines = [f"### Turn {turn.turn}: {_safe_md(won.agent)}", "",
             f"*score {_score(won.score)}, adjusted {_score(won.adjusted)}{penalty}; "
             f"{_runner_up(turn, turn_bids)}*", "", _quote(content or ""), ""]
    return lines


def _header(info: dict[str, Any], record: RunRecord) -> list[str]:
    spec = info["spec"]
    agents = ", ".join(
        f"{_safe_md(a['agent_name'])} ({a['model_name']}"
        + (", simulated" if is_sim_model(a["model_name"]) else "") + ")"
        for a in spec["agents"])
    return [
        f"# {_safe_md(info['name'])}", "",
        f"- Run: `{info['run_id']}`",
        f"- Status: {info['status']} (stop reason: {info['stop_reason'] or 'none'})",
        f"- Started: {info['started_at']}; ended: {info['ended_at'] or 'not recorded'}",
        f"- Agents: {agents}",
        f"- Threshold {spec['threshold']}, recency penalty {spec['recency_penalty']} "
        f"(window {spec['recency_window']}), max loops {spec['max_loops']}",
        f"- Totals: {record.total_calls} calls, {record.total_prompt_tokens} prompt and "
        f"{record.total_completion_tokens} completion tokens, cost "
        f"{format_cost(record.total_cost_usd, record.unpriced_bids)}",
        *([f"- Error: {_safe_md(info['error'])}"] if info.get("error") else []),
        "", "## Task", "", _quote(record.task), "", "## Turns", "",
    ]


def transcript_markdown(store: RunStore, run_id: str) -> str:
    """The run as Markdown: header, task, then each turn's reply with its score and runner-up."""
    info = store.run_info(run_id)
    record = store.load_run(run_id)
    by_turn: dict[int, list[Bid]] = {}
    for bid in record.bids:
        by_turn.setdefault(bid.turn, []).append(bid)
    replies = iter(m.content for m in record.messages[1:])
    lines = _header(info, record)
    for turn in record.turns:
        content = next(replies, "") if turn.winner is not None else None
        lines.extend(_turn_section(turn, by_turn.get(turn.turn, []), content))
    if not record.turns:
        lines += ["No turn was completed.", ""]
    return "\n".join(lines)
