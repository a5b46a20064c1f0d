"""The dashboard's job table under many chats (issue 44, 3). Measurement only.

    python -m bench.job_memory                        # 1,000 chats of 10 turns x 3 agents
    python -m bench.job_memory --turns 40 --agents 5  # bigger chats
    python -m bench.job_memory --chats 200 --every 50 # quicker
    python -m bench.job_memory --before 0f75e24       # the same on that commit's code first

Runs sim chats one after another through the path the Run page's Start button takes
(groupchat_ui.run.logic.start_run: a recorded, streamed chat handed to a JobRegistry, on the
engine's background loop), waits for each to end, and every `--every` chats samples the
process's resident set (/proc/self/statm, after gc.collect()), how many jobs the table still
holds whole, as a summary, or not at all, and the length of the session's job list as the
sidebar builds it (`jobs_for`). The store is a fresh SQLite file in a temporary folder.

Every chat has the same task and seed, so the sims' own text cache (an LRU of 8,192 texts in
groupchat_core's sim provider, no part of the job table; a few KiB per new text) is warm after
the first chat, and what grows is what the job table keeps. `--varied` gives each chat its own
task: then that cache grows too (about three texts per chat) until it is full.

Only the public parts that the code before issue 44 also had are used, so `--before` runs
this same scenario, in a process of its own, on an older commit's code (or a checkout's).
"""

from __future__ import annotations

import gc
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import _harness as h

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

PERSONAS = ("eager", "balanced", "contrarian", "reserved", "expert")
OWNER = "bench-session"


def rss_mb() -> float:
    """Resident set size of this process, in MiB (after a full collection)."""
    gc.collect()
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def sim_agents(count: int) -> list[Any]:
    from groupchat_core import SIM_MODELS, Agent

    models = [m for m in SIM_MODELS if m.split("/", 1)[1] in PERSONAS] or list(SIM_MODELS)
    return [Agent(agent_name=f"Agent{i + 1}", model_name=models[i % len(models)],
                  litellm_kwargs={"sim_latency": 0.0}) for i in range(count)]


def table_state(registry: Any, ids: list[str]) -> tuple[int, int, int]:
    """(whole, summaries, forgotten) over every job started so far."""
    whole = summaries = gone = 0
    for job_id in ids:
        try:
            snap = registry.snapshot(job_id)
        except KeyError:
            gone += 1
            continue
        if getattr(snap, "summary", False):  # the code before issue 44 has no summaries
            summaries += 1
        else:
            whole += 1
    return whole, summaries, gone


def run(chats: int, every: int, turns: int, agents: int,
        varied: bool = False) -> list[dict[str, Any]]:
    from groupchat_core.store import RunStore
    from groupchat_ui.kit.jobs import JobRegistry
    from groupchat_ui.run.logic import default_params, start_run

    store = RunStore(f"sqlite:///{tempfile.mkdtemp(prefix='job-memory-')}/bench.db")
    registry = JobRegistry()
    roster = sim_agents(agents)
    # max_loops counts the task too; threshold 0: every turn has a speaker, never a lull
    params = {**default_params(), "max_loops": turns + 1, "threshold": 0.0, "seed": 1}
    ids: list[str] = []
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()

    def sample() -> None:
        whole, summaries, gone = table_state(registry, ids)
        rows.append({"chats": len(ids), "rss": rss_mb(), "whole": whole,
                     "summaries": summaries, "forgotten": gone,
                     "session list": len(registry.jobs_for(OWNER)),
                     "seconds": time.perf_counter() - started})

    sample()
    try:
        for i in range(chats):
            task = f"Plan step {i}." if varied else "Plan the next step."
            job_id = start_run(store, registry, OWNER, roster, task, params, {})
            ids.append(job_id)
            while not registry.snapshot(job_id).done:
                time.sleep(0.002)
            if registry.snapshot(job_id).status != "finished":
                sys.exit(f"chat {i} ended {registry.snapshot(job_id).status}: "
                         f"{registry.snapshot(job_id).error}")
            if (i + 1) % every == 0:
                sample()
    finally:
        registry.shutdown()
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = h.options(__doc__, before="optional")
    parser.add_argument("--chats", type=int, default=1000)
    parser.add_argument("--every", type=int, default=100)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--agents", type=int, default=3)
    parser.add_argument("--varied", action="store_true",
                        help="a task of its own per chat (the sims' text cache grows too)")
    args = parser.parse_args(argv)
    if args.chats < 1 or args.every < 1 or args.turns < 1 or not 2 <= args.agents <= 16:
        parser.error("--chats, --every and --turns must be at least 1; --agents 2 to 16")
    if args.before is not None:
        here = [a for a in (sys.argv[1:] if argv is None else argv)
                if a not in ("--before", args.before)]
        with h.tree(args.before) as before:
            h.rerun(before, "bench.job_memory", here)
    from groupchat_ui.kit import jobs

    keep = getattr(jobs, "keep_finished_setting", None)
    print(f"## job table memory: {args.chats} sim chats of {args.turns} turns x {args.agents} "
          f"agents, one after another (streamed, recorded), through JobRegistry; "
          f"{'a task of its own per chat' if args.varied else 'one task and seed for all'}")
    print(f"- code: {Path(jobs.__file__).parents[2]} · keep finished whole: "
          f"{keep() if keep else 'no bound (before issue 44)'}")
    print(f"- machine: {h.machine()}")
    rows = run(args.chats, args.every, args.turns, args.agents, args.varied)
    base = rows[0]["rss"]
    print("\n| chats | RSS MiB | vs start | kept whole | summaries | forgotten | session list "
          "| seconds |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(f"| {row['chats']} | {row['rss']:.1f} | {row['rss'] - base:+.1f} | {row['whole']} "
              f"| {row['summaries']} | {row['forgotten']} | {row['session list']} "
              f"| {row['seconds']:.0f} |")
    if len(rows) > 2:
        first, last = rows[1], rows[-1]
        grown = last["rss"] - first["rss"]
        print(f"\nfrom {first['chats']} to {last['chats']} chats: {grown:+.1f} MiB "
              f"({grown * 1024 / (last['chats'] - first['chats']):+.1f} KiB per chat)")


if __name__ == "__main__":
    main()
