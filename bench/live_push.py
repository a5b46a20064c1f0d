"""A token from the engine to the screen: the Run page's live view polled against pushed (issue
41, point 1). Measurement only.

    python -m bench.live_push --before REV|DIR [--reps 3] [--words 40]

For this tree and a commit or another checkout (before: the Run page's fragment redrawn every
0.5 s), alternating, each repetition on a newly started server (`make run`'s command line, a
temporary SQLite store with two agents on a scripted OpenAI-compatible server in this process,
on loopback): one agent streams a reply of `--words` words, one write per word every 0.15 s
(the other answers at once with a weaker bid); twice on the same server and page: the first
run after the start ("cold": the process's first chat, the tab's first chart, first stream; a
stall of about a second early in it showed in both trees, with the app's threads idle: the
browser's main thread busy) and the next ("warm"). A MutationObserver,
installed before each Start,
records `Date.now()` whenever the first candidate's text on the page changes (before: the
fragment's `.st-key-cand_0`; after: the live channel's row, kit/live.js). For each word, the
delay from the scripted server's flush of its write (`stream_writes`, monotonic, turned into
wall time by this process's own offset) to the first DOM state that shows it. The engine reads
the write over loopback a moment after the flush, so each figure is an upper bound of "the
engine has the token" to "the token is on screen". Reported: median and p95 over every word of
every repetition, the worst, and words never shown. Debian's /usr/bin/chromium.
"""

from __future__ import annotations

import os
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from bench import _harness as h  # noqa: E402
from bench.dashboard import IDLE, ROOT, chromium, machine, make_run  # noqa: E402

DELAY_S = 0.15
# Both views' first candidate: the timed fragment's keyed container, the channel's row.
# A status line saying `finished`, other than the one the page showed before this run.
FINISHED = """(before) => [...document.querySelectorAll('[data-testid="stCaptionContainer"]')]
  .some(e => /^status: finished/.test(e.innerText) && e.innerText !== before)"""
OBSERVER = """() => { window.__seen = []; let last = null;
  new MutationObserver(() => {
    const rows = document.querySelectorAll('.st-key-cand_0, .gc-cand[data-i="0"]');
    const text = [...rows].map(e => e.textContent).join(' | ');
    if (text !== last) { last = text; window.__seen.push([Date.now(), text]); }
  }).observe(document.body, {subtree: true, childList: true, characterData: true}); }"""


def words(n: int, prefix: str) -> list[str]:
    return [f"{prefix}{i:02d}" for i in range(n)]


def stream(said: list[str]) -> Any:
    """A reply streamed one word a write. Each write ends a word ("w07 "): the engine's delta
    gate holds back a trailing word until it ends (never part of a key), so a word shows on its
    own write, not the next one."""
    from groupchat_core.testing import tool_call

    fragments = ['{"score": 0.9, "message": "' + said[0] + " "] + [w + " " for w in said[1:]] \
        + ['"}']
    return tool_call(fragments=fragments, chunk_delay=DELAY_S, score=None, message=None)


def one(browser: Any, root: Path, n: int) -> dict[str, list[float | None]]:
    """Two runs on a new server of `root`, one page: each word's flush → screen delay (None:
    never shown) in the first run after the start ("cold": the process's first chat, first
    chart, first stream) and in the next ("warm")."""
    from groupchat_core import Agent
    from groupchat_core.store import RunStore
    from groupchat_core.testing import FakeOpenAIServer, tool_call
    from tests.e2e.conftest import fill_task, pick_roster, start_run, status_line

    said = {"cold": words(n, "c"), "warm": words(n, "w")}
    offset = time.time() - time.monotonic()
    suffix = uuid.uuid4().hex[:6]
    lull = tool_call(0.0, "")
    delays: dict[str, list[float | None]] = {}
    with tempfile.TemporaryDirectory() as folder, FakeOpenAIServer() as fake:
        db = f"sqlite:///{folder}/live.db"
        # each run: turn 1, Slow streams and Quick bids lower; turn 2, both lull
        fake.script(f"slow{suffix}", [stream(said["cold"]), lull, stream(said["warm"]), lull])
        quick = tool_call(0.3, "I would rather listen.")
        fake.script(f"quick{suffix}", [quick, lull, quick, lull])
        RunStore(db).save_agents([
            Agent(agent_name=f"Slow-{suffix}", model_name=f"openai/slow{suffix}",
                  api_base=fake.base_url),
            Agent(agent_name=f"Quick-{suffix}", model_name=f"openai/quick{suffix}",
                  api_base=fake.base_url)])
        with make_run(db, root=root) as base:
            context = browser.new_context(viewport={"width": 1280, "height": 1000})
            page = context.new_page()
            page.goto(base + "/run")
            status_line(page).wait_for(timeout=120_000)
            pick_roster(page, [f"Slow-{suffix}", f"Quick-{suffix}"])
            fill_task(page, "Watch the bids form.")
            before = ""
            for run, (which, shown) in enumerate(said.items(), 1):
                page.evaluate(OBSERVER)
                start = page.locator(".st-key-start_run button")
                for _ in range(3):  # the rerun after a Start closes the New run panel
                    page.locator(IDLE).wait_for(state="attached", timeout=120_000)
                    if start.is_visible():
                        break
                    page.get_by_test_id("stExpander").filter(has_text="New run").first \
                        .get_by_text("New run").first.click()
                start_run(page)
                page.wait_for_function(FINISHED, arg=before, timeout=300_000)
                before = status_line(page).inner_text()
                seen: list[tuple[float, str]] = page.evaluate("() => window.__seen")
                writes = [times for model, times in fake.stream_writes  # not the lulls'
                          if model == f"slow{suffix}" and len(times) > n][run - 1]
                delays[which] = []
                for i in range(n):
                    text = " ".join(shown[:i + 1])
                    flushed = (writes[1 + i] + offset) * 1000  # writes[0]: the role chunk
                    at = next((t for t, seen_text in seen if text in seen_text), None)
                    delays[which].append(None if at is None else (at - flushed) / 1000)
            context.close()
    return delays


def main(argv: list[str] | None = None) -> None:
    parser = h.options(__doc__, reps=3, before="required")
    parser.add_argument("--words", type=int, default=40)
    args = parser.parse_args(argv)
    with h.tree(args.before) as before, chromium() as browser:
        found = h.alternate({tree: lambda root=root: one(browser, root, args.words)
                             for tree, root in (("before", before), ("after", ROOT))}, args.reps)

    def figures(rows: list[dict[str, list[float | None]]], which: str) -> dict[str, float]:
        every = [d for r in rows for d in r[which] if d is not None]
        return {"median": h.median(every), "p95": h.quantile(every, 0.95), "worst": max(every),
                "missed": sum(d is None for r in rows for d in r[which]), "n": len(every)}

    print(f"\nMachine: {machine()}; {args.reps} reps each, alternating, a new server each; "
          f"{args.words} words a run, one every {DELAY_S} s")
    print("\n| a token, server flush → on screen (s) | before (polled) | after (pushed) | "
          "target |")
    print("|---|---:|---:|---|")
    for which in ("warm", "cold"):
        b, a = figures(found["before"], which), figures(found["after"], which)
        print(f"| {which}: median | {b['median']:.3f} | {a['median']:.3f} | ≤ 0.100 |")
        print(f"| {which}: p95 | {b['p95']:.3f} | {a['p95']:.3f} | ≤ 0.250 |")
        print(f"| {which}: worst | {b['worst']:.3f} | {a['worst']:.3f} | — |")
        print(f"| {which}: words shown / never shown | {b['n']} / {b['missed']:.0f} | "
              f"{a['n']} / {a['missed']:.0f} | — |")


if __name__ == "__main__":
    main()
