"""Dashboard benchmarks (issue: dashboard). Measurement only: nothing here asserts on time.

    python -m bench.dashboard            # full run, about two minutes on 2 cores
    python -m bench.dashboard --quick    # smoke run (a 200-turn run, fewer repetitions)
    python -m bench.dashboard --write    # also rewrite the figures between the markers
    python -m bench.dashboard --before REV   # only part 3, this tree against a commit (or a
                                             # checkout's folder), alternating

1. the Analysis page for a 1,000-turn x 16-agent run, server side: the data and figure work the
   page does (no Streamlit), the page script under AppTest (whole, and without its transcript
   tab), and its script runs inside a real `streamlit run` server (a timer around each run);
2. the first page load in a fresh browser (Debian's chromium, never a downloaded one) after
   `make run`, warm: the landing page, and the Analysis page of that big run;
3. the browser busy until interactive on that Analysis page (desktop and phone size, against a
   10-turn control run): until the heatmap is drawn and a tab click is answered, long tasks.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from functools import partial
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from bench import _harness as h  # noqa: E402
from bench.store import scripted_chat  # noqa: E402
from groupchat_core.store import RunStore  # noqa: E402

ROOT = h.ROOT
CHROMIUM = "/usr/bin/chromium"
TARGETS = {"analysis_s": 2.0, "first_load_s": 5.0}
METRICS = '[data-testid="stMetric"]'
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
DRAWN = "() => document.querySelectorAll('.js-plotly-plot svg.main-svg').length >= 2"


def median_time(fn: Callable[[], Any], reps: int) -> float:
    return h.median(h.repeat(fn, reps, warmup=1))


@contextmanager
def chromium() -> Iterator[Any]:
    """Debian's chromium (never a downloaded one), headless, through Playwright."""
    from playwright.sync_api import sync_playwright

    from tests.e2e.conftest import CHROMIUM_ARGS

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                     args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def build_run(url: str, turns: int) -> str:
    """A finished run of `turns` turns x 16 agents (scripted, one speaker per turn)."""
    store = RunStore(url)
    chat = scripted_chat(16, turns, seed=7)
    store.attach(chat)
    chat.run("A long one.")
    store.flush()
    return str(chat.last_run.run_id)


# --- 1. server side -------------------------------------------------------------------------


def bench_functions(url: str, run_id: str, reps: int) -> dict[str, float]:
    """The page's data and figure work without Streamlit: what its cached reads and charts cost."""
    from groupchat_core import bids_csv, bundle_json, transcript_markdown
    from groupchat_core.analysis import charts, speaker_metrics, transition_matrix
    from groupchat_ui.analysis import logic
    from groupchat_ui.analysis.view import TRANSCRIPT_PAGE

    store = RunStore(url)
    record = store.load_run(run_id)
    bids, turns = record.bids_frame(), record.turns_frame()
    agents = [a["agent_name"] for a in store.run_info(run_id)["spec"]["agents"]]
    m = speaker_metrics(turns, bids)
    page = [int(t) for t in turns["turn"]][:TRANSCRIPT_PAGE]

    def figures() -> None:
        for fig in (charts.bids_heatmap(bids, "adjusted", 0.5, agents),
                    charts.bid_lines(bids, turns, 0.5, "adjusted", agents),
                    charts.winner_timeline(turns, agents),
                    charts.transition_heatmap(transition_matrix(turns, agents)),
                    charts.turn_shares(m)):
            fig.to_json()  # st.plotly_chart sends the figure as JSON

    return {
        "load (record, bids, turns, messages)": median_time(lambda: (
            store.load_run(run_id).bids_frame(), record.turns_frame(),
            store.messages(run_id)), reps),
        "speaker metrics": median_time(lambda: speaker_metrics(turns, bids), reps),
        "five figures, built and as JSON": median_time(figures, reps),
        f"transcript: one page's bid tables ({TRANSCRIPT_PAGE} turns)": median_time(
            lambda: [logic.turn_bids(bids[bids["turn"].isin(page)], t) for t in page], reps),
        "downloads (bundle, CSV, Markdown)": median_time(lambda: (
            bundle_json(store, run_id), bids_csv(store, run_id),
            transcript_markdown(store, run_id)), reps),
    }


def bench_apptest(reps: int) -> dict[str, float]:
    """The Analysis page under AppTest (GROUPCHAT_DB points at the big run), whole and with the
    transcript tab left empty; after one warm-up, so the cached reads are warm."""
    from streamlit.testing.v1 import AppTest

    from groupchat_ui.analysis import view as analysis_view

    def render() -> None:
        at = AppTest.from_file(str(ROOT / "app_pages" / "analysis.py"), default_timeout=600)
        at.run()
        assert not at.exception, [e.value for e in at.exception]

    whole = median_time(render, reps)
    transcript = analysis_view.transcript
    analysis_view.transcript = lambda data: None
    try:
        without = median_time(render, reps)
    finally:
        analysis_view.transcript = transcript
    return {"whole page": whole, "without the transcript tab": without}


# --- 2. in a browser ------------------------------------------------------------------------

# `streamlit run` exactly as the CLI does it, plus a timer around each script run written to
# BENCH_SCRIPT_LOG (ScriptRunner._run_script is private API of the pinned Streamlit 1.67).
TIMED_BOOT = """
import os, sys, time
from streamlit.runtime.scriptrunner import script_runner
run = script_runner.ScriptRunner._run_script
def timed(self, rerun_data):
    start = time.perf_counter()
    try:
        return run(self, rerun_data)
    finally:
        with open(os.environ["BENCH_SCRIPT_LOG"], "a") as log:
            log.write(f"{time.perf_counter() - start}\\n")
script_runner.ScriptRunner._run_script = timed
from streamlit.web.cli import main
sys.argv = ["streamlit", *sys.argv[1:]]
main()
"""


@contextmanager
def make_run(url: str, script_log: Path | None = None, root: Path = ROOT) -> Any:
    """The server as `make run` starts it (its command line, GROUPCHAT_DB set); with
    `script_log`, the same CLI with each script run's duration appended to that file."""
    from tests.e2e.conftest import free_port, wait_healthy

    port = free_port()
    args = ["run", "streamlit_app.py", "--server.headless", "true",
            "--server.address", "127.0.0.1", "--server.port", str(port)]
    env = {**os.environ, "GROUPCHAT_DB": url}
    if script_log is None:  # `make run`'s entry: the warm-up, then Streamlit (older trees: none)
        warmed = (root / "groupchat_ui" / "kit" / "server.py").exists()
        cmd = ([sys.executable, "-m", "groupchat_ui.kit.server", *args] if warmed
               else [str(Path(sys.executable).parent / "streamlit"), *args])
    else:
        cmd = [sys.executable, "-c", TIMED_BOOT, *args]
        env["BENCH_SCRIPT_LOG"] = str(script_log)
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc)  # type: ignore[arg-type]
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # a loaded machine: do not leave it running
            proc.kill()
            proc.wait(timeout=10)


def load(browser: Any, address: str, ready: Callable[[Any], None]) -> dict[str, float]:
    """One page load in a fresh browser context (no cache, a new session): seconds from
    `goto` until `ready` and until no script is running."""
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    start = time.perf_counter()
    page.goto(address)
    ready(page)
    shown = time.perf_counter() - start
    page.locator(IDLE).wait_for(state="attached", timeout=120_000)
    idle = time.perf_counter() - start
    context.close()
    return {"shown": shown, "idle": idle}


def landing(page: Any) -> None:
    page.get_by_text("status: idle").wait_for(timeout=120_000)


def cards(page: Any) -> None:
    page.locator(METRICS).first.wait_for(timeout=120_000)


def charts_drawn(page: Any) -> None:
    cards(page)
    page.wait_for_function(DRAWN, timeout=120_000)


def bench_browser(url: str, run_id: str, reps: int) -> dict[str, Any]:
    """Page loads after one warm-up load each (median of `reps` fresh contexts), then the
    Analysis page's script runs timed inside an instrumented server."""
    analysis = f"/analysis?run={run_id}"
    cases = [("Run (landing page): status line shown", "/", landing),
             ("Analysis, big run: metric cards shown", analysis, cards),
             ("Analysis, big run: first two charts drawn", analysis, charts_drawn)]
    out: dict[str, Any] = {}
    with chromium() as browser:
        with make_run(url) as base:
            for name, path, ready in cases:
                load(browser, base + path, ready)  # warm-up: imports, caches, the server
                runs = [load(browser, base + path, ready) for _ in range(reps)]
                out[name] = {k: h.median(r[k] for r in runs) for k in runs[0]}
        with tempfile.TemporaryDirectory() as folder:
            log = Path(folder) / "script_runs.txt"
            with make_run(url, log) as base:
                for _ in range(reps + 1):
                    load(browser, base + analysis, cards)
                runs = [float(x) for x in log.read_text().split()]
            out["script"] = h.median(runs[-reps:])  # one run per load; warm-up first
    return out


# --- 3. browser busy until interactive -----------------------------------------------------

# Installed before any page script runs: every long task (> 50 ms on the main thread) is kept.
LONGTASKS = """(() => { window.__longtasks = [];
  new PerformanceObserver(list => { for (const e of list.getEntries())
    window.__longtasks.push([e.startTime, e.duration]); })
  .observe({type: 'longtask', buffered: true}); })();"""
# The bids heatmap has drawn: its plot holds the heatmap layer (an image of the cells).
HEATMAP_DRAWN = """() => { const p = document.querySelector('.st-key-bids_heatmap .js-plotly-plot');
  return !!(p && p.querySelector('svg.main-svg') && p.querySelector('g.hm image, g.hm'));
}"""


def script_runs(log: Path | None) -> list[float]:
    """Durations of the script runs the instrumented server has logged so far."""
    return [float(x) for x in log.read_text().split()] if log and log.exists() else []


def interactive(browser: Any, base: str, run_id: str, phone: bool = False,
                log: Path | None = None) -> dict[str, float]:
    """One visit to a run's Analysis page by a full navigation (`goto /analysis?run=`, as a
    link from outside or a reload) in a fresh browser context whose first page (the landing
    page) has loaded, so plotly.js and Streamlit's bundle are in its cache, as for someone
    already using the app. Seconds from `goto` until the bids heatmap is drawn, until a click on
    the second tab has shown that tab (the main thread was free to handle it), the main thread's
    long tasks (> 50 ms) in that span (their sum, when the last ended) and, with the server's
    `log`, the page's script runs in that span (their sum: server time)."""
    size = {"width": 390, "height": 844} if phone else {"width": 1280, "height": 900}
    context = browser.new_context(viewport=size)
    page = context.new_page()
    page.goto(base + "/")
    landing(page)
    page.locator(IDLE).wait_for(state="attached", timeout=120_000)
    page.add_init_script(LONGTASKS)
    before = len(script_runs(log))
    start = time.perf_counter()
    page.goto(f"{base}/analysis?run={run_id}")
    result = _drawn_and_clicked(page, start, 0.0)
    result["script runs, sum"] = _script_time(page, log, before)
    context.close()
    return result


def in_app(browser: Any, base: str, run_id: str, phone: bool = False,
           log: Path | None = None) -> dict[str, float]:
    """One visit to a run's Analysis page from inside the app, as a user moves between pages:
    a fresh context opens the run's Analysis page once (so the session has chosen that run),
    goes to the Run page with the sidebar, then, timed, clicks "Analysis" in the sidebar (no
    page reload: the same websocket session, Streamlit's bundle and plotly.js already
    evaluated). The same figures as `interactive`, from that click."""
    size = {"width": 390, "height": 844} if phone else {"width": 1280, "height": 900}
    context = browser.new_context(viewport=size)
    page = context.new_page()
    page.add_init_script(LONGTASKS)
    page.goto(f"{base}/analysis?run={run_id}")
    page.wait_for_function(HEATMAP_DRAWN, timeout=120_000, polling=50)
    page.locator(IDLE).wait_for(state="attached", timeout=120_000)
    _sidebar_link(page, "Run").click(timeout=120_000)
    landing(page)
    page.wait_for_function("() => !document.querySelector('.st-key-bids_heatmap')",
                           timeout=120_000, polling=50)
    link = _sidebar_link(page, "Analysis")
    link.wait_for(timeout=120_000)
    t0 = page.evaluate("performance.now()") / 1000
    before = len(script_runs(log))
    start = time.perf_counter()
    link.click(timeout=120_000)
    result = _drawn_and_clicked(page, start, t0)
    result["script runs, sum"] = _script_time(page, log, before)
    context.close()
    return result


def _sidebar_link(page: Any, title: str) -> Any:
    """The sidebar's link to a page; on a phone the sidebar is folded away: open it first."""
    expand = page.get_by_test_id("stExpandSidebarButton")
    if expand.is_visible():
        expand.click()
    return page.get_by_test_id("stSidebarNav").get_by_text(title, exact=True)


def _drawn_and_clicked(page: Any, start: float, t0: float) -> dict[str, float]:
    page.wait_for_function(HEATMAP_DRAWN, timeout=120_000, polling=50)
    drawn = time.perf_counter() - start
    sidebar = page.get_by_test_id("stSidebar")
    if page.viewport_size["width"] < 500 and sidebar.get_attribute("data-collapsed") == "false":
        # On a phone the sidebar stays open over the page after a link in it was tapped: the
        # user folds it away to reach the tabs (part of the time measured).
        page.get_by_test_id("stSidebarHeader").hover()
        page.get_by_test_id("stSidebarCollapseButton").click(force=True)
        page.locator('[data-testid="stSidebar"][data-collapsed="true"]').wait_for(
            state="attached", timeout=120_000)
    tab = page.get_by_role("tab").nth(1)
    tab.click(timeout=120_000)
    page.wait_for_function("(t) => t.getAttribute('aria-selected') === 'true'",
                           arg=tab.element_handle(), timeout=120_000, polling=50)
    clicked = time.perf_counter() - start
    tasks = [(s / 1000 - t0, d / 1000) for s, d in page.evaluate("window.__longtasks")
             if s / 1000 + d / 1000 > t0]
    return {"heatmap drawn": drawn, "tab click answered": clicked,
            "long tasks, sum": sum(d for _, d in tasks),
            "last long task ended": max((s + d for s, d in tasks), default=0.0)}


def _script_time(page: Any, log: Path | None, before: int) -> float:
    """Server seconds in script runs since `before` (the tab click's rerun included, once it
    has ended: wait until no script runs)."""
    if log is None:
        return float("nan")
    page.locator(IDLE).wait_for(state="attached", timeout=120_000)
    return sum(script_runs(log)[before:])


VISITS = {"full navigation": interactive, "in-app": in_app}


def bench_interactive(url: str, runs: dict[str, str], reps: int,
                      before: Path | None = None) -> dict[tuple[str, ...], dict[str, float]]:
    """Both visits (`VISITS`) for each run (name -> id) at desktop and phone size, against a
    server that logs its script runs (and, with `before`, one started from that checkout on
    the same database): one warm-up visit each, then `reps` rounds visiting every case in
    turn, the order rotating (so load on a shared machine hits all alike); medians of each
    case, and its per-round tab click times under the keys `round 0`, `round 1`, ..."""
    roots = {"after": ROOT, **({"before": before} if before else {})}
    with tempfile.TemporaryDirectory() as folder, chromium() as browser, ExitStack() as stack:
        logs = {tree: Path(folder) / f"{tree}.txt" for tree in roots}
        servers = {tree: (stack.enter_context(make_run(url, logs[tree], root=root)), logs[tree])
                   for tree, root in roots.items()}
        cases = {(tree, visit, name, size): partial(VISITS[visit], browser, base, run_id,
                                                    size.startswith("phone"), log)
                 for visit in VISITS for name, run_id in runs.items()
                 for size in ("desktop 1280x900", "phone 390x844")
                 for tree, (base, log) in servers.items()}
        for visit_once in cases.values():
            visit_once()  # warm-up: server caches, imports
        found = h.alternate(cases, reps)
    return {case: {**{k: h.median(r[k] for r in rows) for k in rows[0]},
                   **{f"round {i}": r[KEY] for i, r in enumerate(rows)}}
            for case, rows in found.items()}


KEY = "tab click answered"


def compare_table(busy: dict[tuple[str, ...], dict[str, float]]) -> str:
    """Before and after side by side: medians and quartiles of the tab click answered, per
    round ratios, medians of the script time and the long tasks."""
    def spread(rounds: list[float]) -> str:
        q1, q2, q3 = h.quartiles(rounds)
        return f"{q2:.2f} ({q1:.2f}–{q3:.2f})"

    rows = []
    for (tree, visit, name, size), a in busy.items():
        if tree != "after":
            continue
        b = busy[("before", visit, name, size)]
        rb, ra = ([v for k, v in r.items() if k.startswith("round ")] for r in (b, a))
        ratios = [y / x for x, y in zip(rb, ra, strict=True)]
        rows.append([visit, f"{name}, {size}", spread(rb), spread(ra),
                     f"{h.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f})",
                     f"{b['script runs, sum']:.2f} → {a['script runs, sum']:.2f}",
                     f"{b['long tasks, sum']:.2f} → {a['long tasks, sum']:.2f}"])
    return h.table(["visit", "case", f"before: {KEY} (s), median (quartiles)", "after",
                    "after / before per round, median (range)",
                    "script runs, sum (s): before → after",
                    "long tasks, sum (s): before → after"], rows) + f"\n\n{machine()}\n"


# --- report ---------------------------------------------------------------------------------


def machine() -> str:
    import streamlit

    chromium = subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True,
                              check=False).stdout.strip()
    return h.machine(Streamlit=streamlit.__version__, browser=chromium)


def report(turns: int, rows: int, functions: dict[str, float], apptest: dict[str, float],
           browser: dict[str, Any], reps: int, quick: bool,
           busy: dict[tuple[str, ...], dict[str, float]] | None = None) -> str:
    def verdict(value: float, target: float) -> str:
        return "meets" if value < target else "misses"

    target, script = TARGETS["analysis_s"], browser.pop("script")
    lines = [
        "### Dashboard figures\n",
        f"Measured {dt.date.today()}{' (quick run)' if quick else ''} on {machine()}. "
        f"The big run: {turns:,} turns × 16 agents ({rows:,} bids), in a SQLite file.\n",
        f"| Analysis page of the big run, server side (median of {reps}, warm) | seconds | "
        f"target < {target:g} s |",
        "|---|---:|---|",
        f"| page script under AppTest | {apptest['whole page']:.2f} | "
        f"{verdict(apptest['whole page'], target)} |",
        f"| page script under AppTest, transcript tab left empty | "
        f"{apptest['without the transcript tab']:.2f} | — |",
        f"| one script run in the real server, a browser rendering it on the same machine | "
        f"{script:.2f} | {verdict(script, target)} |",
        *(f"| its work alone, no Streamlit, uncached: {name} | {value:.3f} | — |"
          for name, value in functions.items()),
        "",
        "| page load in a fresh browser context after `make run`, warm (median of "
        f"{reps}) | "
        f"until shown (s) | until no script runs (s) | target < {TARGETS['first_load_s']:g} s |",
        "|---|---:|---:|---|",
        *(f"| {name} | {r['shown']:.2f} | {r['idle']:.2f} | "
          f"{verdict(r['shown'], TARGETS['first_load_s']) if name.startswith('Run') else '—'} |"
          for name, r in browser.items()),
        "",
    ]
    if busy:
        lines += [
            f"| browser busy on the Analysis page, app already open (median of {reps}) | "
            "heatmap drawn (s) | tab click answered (s) | long tasks, sum (s) | "
            f"script runs, sum (s) | target < {target:g} s |",
            "|---|---:|---:|---:|---:|---|",
            *(f"| {name}, {visit}, {size} | {r['heatmap drawn']:.2f} | "
              f"{r['tab click answered']:.2f} | {r['long tasks, sum']:.2f} | "
              f"{r['script runs, sum']:.2f} | "
              f"{verdict(r['tab click answered'], target) if 'big' in name else '—'} |"
              for (_, visit, name, size), r in busy.items()),
            "",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = h.options(__doc__, reps=5, quick=True, before="optional", write=True)
    args = parser.parse_args(argv)
    turns, reps = (200, min(3, args.reps)) if args.quick else (1000, args.reps)
    if args.before is not None:
        with tempfile.TemporaryDirectory() as folder, h.tree(args.before) as before:
            url = f"sqlite:///{folder}/dashboard.db"
            runs = {f"big run, {turns:,} turns x 16": build_run(url, turns),
                    "control, 10 turns x 16": build_run(url, 10)}
            print(compare_table(bench_interactive(url, runs, reps, before)))
        return
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{folder}/dashboard.db"
        os.environ["GROUPCHAT_DB"] = url  # for AppTest and the server
        print(f"[0] record a {turns}-turn x 16-agent run ...", flush=True)
        run_id = build_run(url, turns)
        rows = len(RunStore(url).bids(run_id))
        print("[1] the Analysis page's work, then the page under AppTest ...", flush=True)
        functions = bench_functions(url, run_id, reps)
        apptest = bench_apptest(reps)
        print("[2] page loads in fresh browser contexts ...", flush=True)
        browser = bench_browser(url, run_id, reps)
        print("[3] browser busy until interactive (and a 10-turn control run) ...", flush=True)
        control = build_run(url, 10)
        busy = bench_interactive(url, {"control, 10 turns x 16": control,
                                       f"big run, {turns:,} turns x 16": run_id}, reps)
    figures = report(turns, rows, functions, apptest, browser, reps, args.quick, busy)
    print(figures)
    if args.write:
        h.write_section("dashboard", figures)


if __name__ == "__main__":
    main()
