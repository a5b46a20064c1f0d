"""How often the floor went to a distractor, per strategy, and what it cost in accuracy.

Why: AutoGen's speaker-selection test once picked an off-topic agent 54 times (microsoft/autogen
PR #736). A chat's `distractors` setting marks such roster entries; `sweep_results` counts their
posted turns per chat (`distractor_turns`, from groupchat_core.analysis), and this table is what
`sweep export --table distractors`, the Sweeps page's Outcomes tab and notebooks read
(docs/outcomes.md, "Distractors"). It lives here, not in analysis, because the Wilson interval
is the sweeps' own (_intervals.py) and analysis may not import upwards.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from .._errors import ConfigError
from ._intervals import wilson
from ._outcomes import scored_chats

DISTRACTOR_COLUMNS = ["distractors", "chats", "turns", "distractor_turns", "share", "ci_low",
                      "ci_high", "interval_method", "scored", "chats_with", "accuracy_with",
                      "chats_without", "accuracy_without", "baseline_chats", "accuracy_baseline",
                      "simulated", "note"]


def has_distractors(results: pd.DataFrame) -> bool:
    """Whether these sweep results declare distractors (the column exists only then)."""
    return "distractor_turns" in results and bool(results["distractors"].fillna("").ne("").any())


def _accuracy(group: pd.DataFrame) -> float:
    return float(pd.to_numeric(group["correct"], errors="coerce").mean()) if len(group) \
        else math.nan


def _row(group: pd.DataFrame) -> dict[str, Any]:
    finished = group[group["status"] == "finished"]
    on_roster = finished["distractors"].fillna("").ne("")
    done, baseline = finished[on_roster], scored_chats(finished[~on_roster])
    turns = int(pd.to_numeric(done["messages"], errors="coerce").fillna(0).sum())
    held = pd.to_numeric(done["distractor_turns"], errors="coerce").fillna(0)
    interval = wilson(int(held.sum()), turns)
    scored = scored_chats(done)
    won = pd.to_numeric(scored["distractor_turns"], errors="coerce").fillna(0) > 0
    with_, without = scored[won], scored[~won]
    names = sorted({n for v in done["distractors"] for n in str(v).split(", ") if n})
    notes = []
    if done.empty:
        notes.append("no finished chat with a distractor on its roster")
    elif turns:
        notes.append("interval over posted turns, which are not independent within a chat")
    if scored.empty:
        notes.append("no scored chat: the data cannot say what distractors cost in accuracy")
    elif not baseline.empty:
        notes.append("cost: accuracy against the baseline (cells whose roster has no "
                     "distractor)")
    elif with_.empty:
        notes.append("no scored chat gave a distractor the floor: nothing to compare")
    elif without.empty:
        notes.append("every scored chat gave a distractor the floor: no chat without one to "
                     "compare with")
    else:
        notes.append("with vs without is observed, not assigned: chats also differ in task "
                     "and seed")
    simulated = bool(done["simulated"].fillna(False).astype(bool).any()) \
        if "simulated" in done else False
    if simulated:
        notes.append("simulated")
    return {"distractors": ", ".join(names), "chats": len(done), "turns": turns,
            "distractor_turns": int(held.sum()), "share": interval.estimate,
            "ci_low": interval.low, "ci_high": interval.high,
            "interval_method": interval.method, "scored": len(scored),
            "chats_with": len(with_), "accuracy_with": _accuracy(with_),
            "chats_without": len(without), "accuracy_without": _accuracy(without),
            "baseline_chats": len(baseline), "accuracy_baseline": _accuracy(baseline),
            "simulated": simulated, "note": "; ".join(notes)}


def distractor_report(results: pd.DataFrame, by: Sequence[str] | None = None) -> pd.DataFrame:
    """Per group of `by` (default: `strategy` when it varies, else the varying parameters):
    the distractors' share of posted turns in finished chats (Wilson 95 %), and the accuracy of
    scored chats in which a distractor held the floor at least once against those in which none
    did, and of scored chats in cells whose roster has no distractor (the baseline, when a
    `roster` axis gives one), with a note in words where the data cannot answer."""
    from ._results import varying

    if "distractor_turns" not in results:
        raise ConfigError("these results declare no distractors: set `distractors: [NAME]` in "
                          "the sweep's base (a name from its agents)")
    if by is None:
        axes = varying(results)
        by = ["strategy"] if "strategy" in axes else axes
    by = list(by)
    missing = [c for c in by if c not in results]
    if missing:
        raise ConfigError(f"unknown result columns {missing}; columns: {list(results.columns)}")
    if not by:
        return pd.DataFrame([_row(results)], columns=DISTRACTOR_COLUMNS)
    rows = []
    for key, group in results.groupby(by, sort=True, dropna=False):
        labels = key if isinstance(key, tuple) else (key,)
        rows.append({**dict(zip(by, labels, strict=True)), **_row(group)})
    return pd.DataFrame(rows, columns=[*by, *DISTRACTOR_COLUMNS])
