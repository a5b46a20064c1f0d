"""Tokens on screen and the first run after a server start (issue 24, target 2). Measurement only.

    python -m bench.live_view --before REV|DIR [--reps 3]

For this tree and a commit or another checkout, alternating, each repetition on a newly started
server (`make run`'s command line, a temporary SQLite store with two agents on a scripted
OpenAI-compatible server in this process, on loopback):
1. *first run after a server start*: a fresh browser opens the Run page, waits until no script
   runs, picks both agents, types the task and clicks Start; seconds from that click until the
   scripted server receives the run's first model request (`RecordedRequest.received_at`).
2. *flush to screen*: the same run streams one agent's reply as 12 deltas, one every 0.7 s (the
   other agent answers at once with a weaker bid). A MutationObserver, installed before the
   click, records `Date.now()` whenever the forming candidate's text changes; for each delta,
   the delay from the server's flush of that write (`stream_writes`, monotonic, turned into wall
   time by this process's own offset) to the first DOM state that shows it. Reported: the first
   character's delay (the first delta) and the median and worst delay over all deltas.
Debian's /usr/bin/chromium.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from bench import _harness as h  # noqa: E402
from bench.dashboard import IDLE, ROOT, chromium, machine, make_run  # noqa: E402

WORDS = ["Streaming", "words", "arrive", "one", "by", "one", "so", "the", "room", "can",
         "watch", "it."]
DELAY_S = 0.7
OBSERVER = """() => { window.__seen = []; let last = null;
  new MutationObserver(() => {
    const text = [...document.querySelectorAll('.st-key-cand_0')].map(e => e.innerText)
      .join(' | ');
    if (text !== last) { last = text; window.__seen.push([Date.now(), text]); }
  }).observe(document.body, {subtree: true, childList: true, characterData: true}); }"""


def one(browser: Any, root: Path) -> dict[str, Any]:
    from groupchat_core import Agent
    from groupchat_core.store import RunStore
    from groupchat_core.testing import FakeOpenAIServer, tool_call
    from tests.e2e.conftest import fill_task, pick_roster, status_line

    offset = time.time() - time.monotonic()
    suffix = uuid.uuid4().hex[:6]
    # Each delta ends a word ("word "): the engine's delta gate holds back a trailing word until
    # it ends (a secrets guarantee: never part of a key), so a delta ending mid-word would show
    # one delta later, one inter-token interval, which this script's 0.7 s spacing would inflate.
    fragments = (['{"score": 0.9, "message": "' + WORDS[0] + " "]
                 + [w + " " for w in WORDS[1:]] + ['"}'])
    with tempfile.TemporaryDirectory() as folder, FakeOpenAIServer() as fake:
        db = f"sqlite:///{folder}/live.db"
        fake.script(f"slow{suffix}", [tool_call(fragments=fragments, chunk_delay=DELAY_S,
                                                score=None, message=None)])
        fake.script(f"quick{suffix}", [tool_call(0.3, "I would rather listen.")])
        fake.set_responder(None, lambda body: tool_call(0.0, ""))  # turn 2: a lull
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
            page.evaluate(OBSERVER)
            clicked = 0.0
            for _ in range(3):  # a rerun landing at that moment can swallow the click
                page.locator(IDLE).wait_for(state="attached", timeout=120_000)
                button = page.locator(".st-key-start_run button")
                button.wait_for(state="visible", timeout=120_000)
                clicked = time.monotonic()
                button.click(timeout=120_000)
                deadline = time.monotonic() + 60
                while not fake.requests and time.monotonic() < deadline:
                    if (time.monotonic() - clicked > 10
                            and status_line(page).inner_text().startswith("status: idle")):
                        break
                    time.sleep(0.01)
                if fake.requests:
                    break
            first_request = min(r.received_at for r in fake.requests) - clicked
            page.get_by_text(re.compile(r"^status: finished")).wait_for(timeout=120_000)
            seen: list[tuple[float, str]] = page.evaluate("() => window.__seen")
            context.close()
        writes = next(times for model, times in fake.stream_writes if model == f"slow{suffix}")
    delays = []
    for i in range(len(WORDS)):
        shown = " ".join(WORDS[:i + 1])
        flushed = (writes[1 + i] + offset) * 1000  # writes[0] is the role chunk
        at = next((t for t, text in seen if shown in text), None)
        delays.append(None if at is None else (at - flushed) / 1000)
    return {"first request": first_request, "delays": delays}


def main(argv: list[str] | None = None) -> None:
    args = h.options(__doc__, reps=3, before="required").parse_args(argv)
    with h.tree(args.before) as before, chromium() as browser:
        found = h.alternate({tree: lambda root=root: one(browser, root)
                             for tree, root in (("before", before), ("after", ROOT))}, args.reps)

    def figures(rows: list[dict[str, Any]]) -> dict[str, float]:
        every = [d for r in rows for d in r["delays"] if d is not None]
        missed = sum(d is None for r in rows for d in r["delays"])
        firsts = [r["delays"][0] for r in rows if r["delays"][0] is not None]
        return {"request": h.median(r["first request"] for r in rows),
                "first": h.median(firsts) if firsts else float("nan"),
                "median": h.median(every), "worst": max(every), "missed": missed}

    b, a = figures(found["before"]), figures(found["after"])
    print(f"\nMachine: {machine()}; {args.reps} reps each, alternating, a new server each")
    print("\n| live view (median of reps; worst over every delta) | before | after | target |")
    print("|---|---:|---:|---|")
    print(f"| first run after a server start: Start click → first model request (s) | "
          f"{b['request']:.2f} | {a['request']:.2f} | ≤ 2 s: "
          f"{'meets' if a['request'] <= 2 else 'misses'} |")
    print(f"| server flush of the first delta → its text in the DOM (s) | {b['first']:.3f} | "
          f"{a['first']:.3f} | ≤ 0.3 s: {'meets' if a['first'] <= 0.3 else 'misses'} |")
    print(f"| every delta, flush → DOM, median (s) | {b['median']:.3f} | {a['median']:.3f} | — |")
    print(f"| every delta, flush → DOM, worst (s) | {b['worst']:.3f} | {a['worst']:.3f} | — |")
    print(f"| deltas never shown | {b['missed']} | "
          f"{a['missed']} | — |")


if __name__ == "__main__":
    main()
