"""Human-facing exports of a stored run: the bid log as CSV, the transcript as Markdown.

Both hold model output and names from spec files, so both are defused for the programs that
open them:
- CSV: a cell that a spreadsheet would run as a formula (`=`, `+`, `-`, `@`, a tab or CR, their
  fullwidth and small lookalikes, also after leading blanks) gets a leading apostrophe.
  `frame_csv` is the one way the lab writes CSV (the bid log here, sweep results in the
  dashboard); nothing else calls `to_csv`.
- Markdown: one-line fields (names, model names, ids, errors) have every Markdown character
  backslash-escaped; message bodies and the task keep their formatting, but raw HTML and
  autolinks are escaped, images cannot load, and a link (inline or by reference) whose target
  is not http(s) is broken apart. Control characters become visible `\\x1b` text (a `cat` of
  the file cannot drive the terminal).
"""

from __future__ import annotations

import csv
import json
import re
import unicodedata
from typing import TYPE_CHECKING, Any, Literal

from .._records import Bid, Outcome, RunRecord, Turn, format_cost
from .._terminal import terminal_text
from ..providers._sim import is_sim_model, run_is_simulated
from ..store import RunStore

if TYPE_CHECKING:
    import pandas as pd

_FORMULA_START = frozenset("=+-@\t\r\n\u2212")  # U+2212 MINUS SIGN: some spreadsheets read it
_TEXT_COLUMNS = ("run_id", "agent", "message", "path", "error")


def _formula_like(value: str) -> bool:
    """Whether a spreadsheet could read `value` as a formula: its first character, after any
    blanks or invisible characters, is a formula start once fullwidth and small forms are
    folded (NFKC maps U+FF1D FULLWIDTH EQUALS SIGN to `=`, U+FE62 SMALL PLUS SIGN to `+`...)."""
    if not value:
        return False
    if value[0] in _FORMULA_START:
        return True
    for char in value:
        if char.isspace() or unicodedata.category(char) in ("Cf", "Cc"):
            continue
        return char in _FORMULA_START or unicodedata.normalize("NFKC", char)[:1] in "=+-@"
    return False


def defuse_cell(value: Any) -> Any:
    """A CSV cell a spreadsheet shows as text, never runs: formula-like strings get a `'`."""
    if isinstance(value, str) and _formula_like(value):
        return "'" + value
    return value


def frame_csv(frame: pd.DataFrame, meta: dict[str, Any] | None = None,
              table: str = "table") -> str:
    """A table as CSV with every text cell (and header) defused: safe to open in a spreadsheet.
    With a sweep export's `meta` (sweeps.export_meta), the CSV opens with its commented header
    (`export_header`) and text cells are quoted, so a `#` inside one is never a comment."""
    safe = frame.copy()
    for column in safe.columns:
        if safe[column].dtype == object or str(safe[column].dtype) in ("string", "str"):
            safe[column] = safe[column].map(defuse_cell)
    safe.columns = [defuse_cell(c) for c in safe.columns]
    quoting: Literal[0, 2] = csv.QUOTE_MINIMAL if meta is None else csv.QUOTE_NONNUMERIC
    body = str(safe.to_csv(index=False, lineterminator="\n", quoting=quoting))
    return body if meta is None else export_header(meta, table) + body


HEADER_PREFIX = "# "


def export_header(meta: dict[str, Any], table: str) -> str:
    """The commented lines opening a sweep's CSV export, `# key: value` one fact a line: the
    spec and its hash, seeds, confidence level, `simulated`, the app, sweep schema and sims
    versions, Python and libraries. JSON values stay on one line and ASCII (no control
    character survives). Why: CSV on standard output had no room for a meta file beside it."""
    def one_line(value: Any) -> str:
        return json.dumps(value, ensure_ascii=True, separators=(",", ":"), default=str)

    made = meta["written_by"]
    facts = [
        ("groupchat_lab_export", table),
        ("sweep_id", meta["sweep"].get("sweep_id")),
        ("spec_sha256", meta["spec_sha256"]),
        ("spec", one_line(meta["spec"])),
        ("seeds", one_line(meta["seeds"])),
        ("level", meta["statistics"]["confidence"]),
        ("simulated", "true" if meta["simulated"] else "false"),
        ("app_version", made["app_version"]),
        ("sweep_schema", made["sweep_schema"]),
        ("sims_version", made["sims_version"]),
        ("python", made["python"]),
        ("libraries", one_line(made["libraries"])),
        ("calls", one_line({k: meta["sweep"].get(f"calls{s}") for k, s in (
            ("made", ""), ("cached", "_cached"), ("needed", "_needed"))})),
        ("methods_version", meta["methods"]["version"]),
        ("read_with", 'pandas.read_csv(path, comment="#")'),
    ]
    return "".join(f"{HEADER_PREFIX}{key}: {terminal_text(value)}\n" for key, value in facts)


def bids_csv(store: RunStore, run_id: str) -> str:
    """The run's bid log as CSV (docs/engine.md §9 columns plus run_id), safe for spreadsheets."""
    return frame_csv(store.bids(run_id))


_LINK_END = re.compile(r"(\\*)\]([(:])")  # the `](` of an inline link, the `]:` of a definition
_SAFE_TARGET = re.compile(r"https?://", re.IGNORECASE)
# Markdown's inline and block characters (not `-+.:=`, harmless mid-line, common in times)
_MD_PUNCTUATION = re.compile(r"([\\`*_\[\]()<>&!#|~$])")
_PLAIN_ID = re.compile(r"[\w.:+-]+")


def _target_after(text: str, start: int) -> str:
    """The link destination starting at `start` (after `](` or `]:`), with its backslash
    escapes removed, as a Markdown renderer would read it (blanks and one line end first)."""
    match = re.compile(r"[ \t]*(?:\n[ \t]*)?([^\s)]*)").match(text, start)
    return match.group(1).replace("\\", "") if match else ""


def _neutralise_links(text: str) -> str:
    """Escape the `]` of every link or link definition whose target is not http(s)://, so
    `[x](javascript:...)` and `[x]: javascript:...` stay text; an already escaped `]` is text."""

    def fix(match: re.Match[str]) -> str:
        slashes, opener = match.group(1), match.group(2)
        if len(slashes) % 2 or _SAFE_TARGET.match(_target_after(text, match.end())):
            return match.group(0)
        return slashes + "\\]" + opener

    return _LINK_END.sub(fix, text)


def _safe_md(text: str) -> str:
    """Model text as inert Markdown that keeps its formatting: no raw HTML or autolinks, no
    images, no links but http(s) ones, no control characters."""
    text = terminal_text(text, multiline=True)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = text.replace("![", "!\\[")  # no image syntax survives, escaped or not
    return _neutralise_links(text)


def _md_inline(value: object) -> str:
    """A one-line field (a name, a model name, an id, an error) as plain Markdown text: every
    Markdown character escaped, nothing can format, link or break the line."""
    return _MD_PUNCTUATION.sub(r"\\\1", terminal_text(value))


def _md_code(value: object) -> str:
    """An id as inline code when it is a plain token, else as escaped text."""
    text = str(value)
    return f"`{text}`" if _PLAIN_ID.fullmatch(text) else _md_inline(text)


def _quote(text: str) -> str:
    return "\n".join("> " + line if line else ">" for line in _safe_md(text).splitlines() or [""])


def _score(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _runner_up(turn: Turn, turn_bids: list[Bid]) -> str:
    if turn.runner_up_adjusted is None:
        return "no runner-up"
    name = next((b.agent for b in turn_bids
                 if not b.winner and b.message and b.adjusted == turn.runner_up_adjusted), "?")
    return (f"runner-up {_md_inline(name)} {_score(turn.runner_up_adjusted)}"
            + (f", margin {_score(turn.margin)}" if turn.margin is not None else ""))


def _turn_section(turn: Turn, turn_bids: list[Bid], content: str | None) -> list[str]:
    if turn.winner is None:
        best = max((b for b in turn_bids if b.message), key=lambda b: b.adjusted, default=None)
        why = ("lull: no bid cleared the threshold" if turn.lull
               else "no agent produced a readable bid (the run stopped with an error)")
        lines = [f"### Turn {turn.turn}: nobody spoke", "", why + (
            f" (best: {_md_inline(best.agent)} {_score(best.adjusted)})"
            if best and turn.lull else "") + "."]
        return [*lines, ""]
    won = next(b for b in turn_bids if b.winner)
    penalty = " (recency penalty applied)" if won.penalized else ""
    person = " (a person)" if won.kind == "human" else ""
    picked = (f"; picked by a person over the rule's {_md_inline(turn.rule_winner)}"
              if turn.reason == "human_pick" and turn.rule_winner else "")
    lines = [f"### Turn {turn.turn}: {_md_inline(won.agent)}{person}", "",
             f"*score {_score(won.score)}, adjusted {_score(won.adjusted)}{penalty}; "
             f"{_runner_up(turn, turn_bids)}{picked}*", "", _quote(content or ""), ""]
    return lines


def _header(info: dict[str, Any], record: RunRecord) -> list[str]:
    spec = info["spec"]
    agents = ", ".join(
        f"{_md_inline(a['agent_name'])} ({_md_inline(a['model_name'])}"
        + (", simulated" if is_sim_model(a["model_name"]) else "") + ")"
        for a in spec["agents"])
    return [
        f"# {_md_inline(info['name'])}", "",
        f"- Run: {_md_code(info['run_id'])}",
        f"- Status: {_md_inline(info['status'])} (stop reason: "
        f"{_md_inline(info['stop_reason'] or 'none')})",
        f"- Started: {_md_inline(info['started_at'])}; ended: "
        f"{_md_inline(info['ended_at'] or 'not recorded')}",
        f"- Owner: {_md_inline(_owner_text(info))}",
        f"- Agents: {agents}",
        *_people_line(record),
        f"- Threshold {_md_inline(spec['threshold'])}, recency penalty "
        f"{_md_inline(spec['recency_penalty'])} (window {_md_inline(spec['recency_window'])}), "
        f"max loops {_md_inline(spec['max_loops'])}",
        f"- Totals: {record.total_calls} calls, {record.total_prompt_tokens} prompt and "
        f"{record.total_completion_tokens} completion tokens, cost "
        f"{format_cost(record.total_cost_usd, record.unpriced_bids)}",
        *([f"- Error: {_md_inline(info['error'])}"] if info.get("error") else []),
        *_outcome_lines(record),
        *([SIMULATED_NOTE] if run_is_simulated(a["model_name"] for a in spec["agents"])
          else []),
        "", "## Task", "", _quote(record.task), "", "## Turns", "",
    ]


def _people_line(record: RunRecord) -> list[str]:
    """The people who bid in the run (the spec lists agents only), in roster order."""
    people = sorted({(b.position, b.agent) for b in record.bids if b.kind == "human"})
    return [f"- People: {', '.join(_md_inline(name) for _, name in people)}"] if people else []


SIMULATED_NOTE = ("- **Simulated**: offline sims (not language models) took part; these "
                  "results show the lab's machinery, not what a model would do")


def outcome_text(outcome: Outcome) -> str:
    """One line: the answer, right or wrong (or the judge's score), and how it was scored."""
    verdict = {True: "correct", False: "wrong", None: "not scored"}[outcome.correct]
    score = "" if outcome.score is None or outcome.scorer != "judge" else \
        f", score {outcome.score:g}"
    expected = "" if outcome.expected is None else f", expected {outcome.expected}"
    return (f"{verdict}{score}: answer {outcome.answer if outcome.answer is not None else 'none'}"
            f"{expected} (task {outcome.task_id}, {outcome.scorer} scorer, "
            f"{outcome.answer_from} answer)")


def _outcome_lines(record: RunRecord) -> list[str]:
    if record.outcome is None:
        return []
    lines = [f"- Outcome: {_md_inline(outcome_text(record.outcome))}"]
    judge = record.outcome.judge
    if judge is not None:
        unpriced = int(judge.cost_usd is None and judge.calls > 0)
        lines.append(f"- Judge: {_md_inline(judge.model)}, {judge.calls} call(s), cost "
                     f"{format_cost(judge.cost_usd, unpriced)}"
                     + (f", error: {_md_inline(judge.error)}" if judge.error else ""))
    return lines


def _owner_text(info: dict[str, Any]) -> str:
    """Who the run was recorded for: name (identity), or that nobody was recorded."""
    owner, name = info.get("owner"), info.get("owner_name")
    if not owner:
        return "none recorded"
    return owner if not name or name == owner else f"{name} ({owner})"


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
