"""Real-browser fixtures: the app served by `streamlit run` on a free port, Debian's chromium.

Each browser test is its own world: `app_server` starts the app for that test alone, on a free
port with a new SQLite store (`app_db_url`), and stops it after; `serve_with_login` does the
same with login on, against the local OIDC provider (`oidc_provider`). So no test sees what
another left, and the files and their tests pass in any order.

Never downloads a browser: Playwright drives /usr/bin/chromium. Screenshots go to
artifacts/screenshots/ (git-ignored).

Locating things: Streamlit 1.67 gives every keyed widget's container an `st-key-<key>` class
(`.st-key-start_run button`), and its elements `data-testid`s (`stChatMessage`,
`stPlotlyChart`, `stMetric`). The Run page prints a machine-readable status line
(`status: running · job <id> · turn 3 · messages 2`); tests wait on it, never on time.

A failed test keeps what its open tabs and the app servers showed (tests/e2e/evidence.py).
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import threading
import urllib.request
import uuid
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from groupchat_core import Agent
from groupchat_core.store import RunStore, dispose_engines
from groupchat_ui.run.live_view import ENDING_KEY
from tests.helpers import ROOT
from tests.helpers.waits import HANG_GUARD_MS, eventually, retrying

from . import evidence

CHROMIUM = "/usr/bin/chromium"
SCREENSHOTS = ROOT / "artifacts" / "screenshots"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
VIEWPORT = {"width": 1280, "height": 1000}
WAIT_MS = HANG_GUARD_MS  # Playwright's waits for what must show: the suite's one hang guard
STATUS = re.compile(r"^status: ")
# Every plotly chart on the page has drawn its SVG with at least one trace layer in it.
PLOTS_DRAWN = """(min) => {
  const plots = [...document.querySelectorAll('.js-plotly-plot')]
    .filter(p => p.offsetParent !== null);
  const drawn = plots.filter(p => p.querySelector('svg.main-svg')
    && p.querySelector('g.trace, g.hm, image, g.heatmaplayer *, g.barlayer *'));
  return drawn.length >= min;
}"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(url: str, proc: subprocess.Popen[bytes]) -> None:
    def healthy() -> bool:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                return bool(r.status == 200)
        except OSError:
            return False

    eventually(healthy, f"streamlit answering at {url}", step=0.2, alive=lambda: None
               if proc.poll() is None else f"streamlit exited with code {proc.returncode}")


@contextmanager
def serve_app(db_url: str, log_path: Path, port: int | None = None,
              extra_args: Sequence[str] = (),
              extra_env: dict[str, str] | None = None) -> Iterator[str]:
    """The dashboard as `make run` starts it (Streamlit's CLI after the engine's warm-up), on
    `port` (a free one by default) with `extra_args` for streamlit and `extra_env` in its
    environment (where the test's own *_API_KEY variables never go); yields its URL. One
    addition: SIGUSR1 dumps its threads' stacks to the log, for a failed test's evidence."""
    port = port or free_port()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(GROUPCHAT_DB=db_url, GROUPCHAT_BLOCK_REMOTE_CALLS="1",
               LITELLM_LOCAL_MODEL_COST_MAP="True", **(extra_env or {}))
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-c", evidence.SERVER_BOOT, "run", str(ROOT / "streamlit_app.py"),
             "--server.headless", "true", "--server.address", "127.0.0.1",
             "--server.port", str(port), "--browser.gatherUsageStats", "false", *extra_args],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        evidence.serving(proc.pid, log_path)
        try:
            wait_healthy(url, proc)
            yield url
        finally:
            evidence.stopped(proc.pid)
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture
def app_db_url(tmp_path: Path) -> str:
    """The SQLAlchemy URL of this test's app's own SQLite file, new and empty for each test
    (the test may write to it before it opens a page, and read it after)."""
    return f"sqlite:///{tmp_path}/groupchat.db"


@pytest.fixture
def app_server(app_db_url: str, tmp_path: Path) -> Iterator[str]:
    """The dashboard as `make run` starts it, for this test alone: its own server on a free
    port and its own store, so no test sees what another left (each test is its own world)."""
    with serve_app(app_db_url, tmp_path / "streamlit.log") as url:
        yield url


USERS = {"alice": ("alice@example.org", "Alice Liddell"), "bob": ("bob@example.org", "Bob Lee")}


@pytest.fixture(scope="module")
def oidc_provider() -> Iterator[str]:
    """A local OpenID Connect provider (`oidc-provider-mock`, a Flask app) on 127.0.0.1 in a
    thread, knowing alice and bob; its sign-in page offers them as buttons. Yields its URL."""
    import oidc_provider_mock
    import werkzeug.serving

    users = [oidc_provider_mock.User(sub=sub, claims={"email": email, "email_verified": True,
                                                      "name": name})
             for sub, (email, name) in USERS.items()]
    server = werkzeug.serving.make_server(
        "127.0.0.1", 0, oidc_provider_mock.app(user_claims=users), threaded=True)
    thread = threading.Thread(target=server.serve_forever, args=(0.1,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(5)
        server.server_close()


@contextmanager
def serve_with_login(provider: str, data: Path,
                     extra_env: dict[str, str] | None = None) -> Iterator[tuple[str, str]]:
    """The dashboard with login on: `[auth]` in a secrets file of its own (outside the repo,
    `--secrets.files`) and `extra_env` in its environment, its store a new SQLite file in
    `data` holding two slow sim agents (Ann, Ben); yields (app URL, store URL)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    secrets = data / "secrets.toml"
    secrets.write_text(
        "[auth]\n"
        f'redirect_uri = "{url}/oauth2callback"\n'
        f'cookie_secret = "{uuid.uuid4().hex}{uuid.uuid4().hex}"\n'
        'client_id = "groupchat-lab-test"\n'
        'client_secret = "not-a-real-secret"\n'
        f'server_metadata_url = "{provider}/.well-known/openid-configuration"\n',
        encoding="utf-8")
    db_url = f"sqlite:///{data}/groupchat.db"
    slow = {"sim_latency": 0.8}
    RunStore(db_url).save_agents([Agent(agent_name=n, model_name="sim/eager",
                                        litellm_kwargs=slow) for n in ("Ann", "Ben")])
    dispose_engines()
    with serve_app(db_url, data / "streamlit.log", port,
                   ["--secrets.files", str(secrets)], extra_env) as served:
        assert served == url
        yield url, db_url


def sign_in(page: Any, app: str, who: str) -> None:
    """Open the app signed out (only the login), log in, pick the user at the provider."""
    page.goto(app)
    login = page.locator(".st-key-login button")
    expect(login).to_be_visible(timeout=WAIT_MS)
    expect(page.get_by_role("heading", name="GroupChat Lab")).to_be_visible()
    wait_idle(page)
    assert page.get_by_test_id("stSidebarNav").count() == 0  # no pages for a visitor
    assert status_line(page).count() == 0 and "Data:" not in page.content()
    login.click()
    page.get_by_role("button", name=who, exact=True).click(timeout=WAIT_MS)  # the provider
    expect(page.get_by_role("heading", name="Run", exact=True)).to_be_visible(timeout=WAIT_MS)
    expect(page.get_by_test_id("stSidebar").get_by_text(re.compile(
        rf"^Signed in as {USERS[who][1]} \({re.escape(USERS[who][0])}\)$"))
    ).to_be_visible(timeout=WAIT_MS)
    expect(page.locator(".st-key-logout button")).to_be_visible()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Chromium for one test module. Not session-wide: while Playwright's sync API is open it
    leaves an event loop running on the main thread, and later (non-browser) tests that call
    asyncio.run or GroupChat.run from the main thread would see it."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run `make browser` (installs Debian's chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        _BROWSERS.append(b)
        yield b
        _BROWSERS.remove(b)
        b.close()


_BROWSERS: list[Any] = []  # the module's browser, whose open tabs a failure keeps


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failed browser test keeps what its tabs and app servers show, before any teardown
    closes them (evidence.py), and says so in its report."""
    report = yield
    if report.when == "call" and report.failed and _BROWSERS:
        contexts = [context for b in _BROWSERS for context in b.contexts]
        report.sections.append(("browser evidence", evidence.keep(item.nodeid, contexts)))
    return report


@pytest.fixture(scope="module")
def browser_context(browser: Any) -> Iterator[Any]:
    """The browser context of a module's `page`s; tests that need two people at once (two
    cookie jars) or another screen open contexts of their own (`open_context`)."""
    context = evidence.watch(browser.new_context(viewport=VIEWPORT))
    yield context
    context.close()


@pytest.fixture
def open_context(browser: Any) -> Iterator[Callable[..., Any]]:
    """Opens browser contexts of the test's own (`open_context(viewport=...)`): watched like
    the module's, and closed after the test's report is made, so a failure keeps their tabs."""
    opened: list[Any] = []

    def open_(**options: Any) -> Any:
        opened.append(evidence.watch(browser.new_context(**options)))
        return opened[-1]

    yield open_
    for context in opened:
        with contextlib.suppress(Exception):  # closed by the test already, or a crashed browser
            context.close()


@pytest.fixture
def page(browser_context: Any) -> Iterator[Any]:
    """The module's tab, which each test loads the app into afresh: every load is a browser
    session of its own in the app (Streamlit opens one per load). Why one tab: Chromium then
    reuses the tab's renderer and its compiled copy of Streamlit's bundle; a new tab or context
    costs about 2 s more Chromium CPU per test (BENCHMARKS.md, "The test suite's wall time").
    Nothing is left from an earlier test: no cookies, no local or session storage (Streamlit
    keeps the sidebar's state and the theme in the first), no other tabs, the default
    viewport; a tab that could not be cleaned (crashed, stuck) is closed and the next test
    opens a new one."""
    tabs = [tab for tab in browser_context.pages if not tab.is_closed()]
    for extra in tabs[1:]:
        extra.close()
    tab = tabs[0] if tabs else browser_context.new_page()
    browser_context.clear_cookies()
    tab.set_viewport_size(VIEWPORT)
    yield tab
    try:
        if tab.url.startswith("http"):
            tab.evaluate("() => { localStorage.clear(); sessionStorage.clear(); }")
        tab.goto("about:blank", timeout=10_000)
    except Exception:  # noqa: BLE001 - any failure: this tab is not reused
        with contextlib.suppress(Exception):  # a crashed browser may refuse even this
            tab.close()


def screenshot(page: Any, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


# --- steps shared by the browser tests ------------------------------------------------------


def expect(locator: Any) -> Any:
    from playwright.sync_api import expect as pw_expect

    return pw_expect(locator)


def open_page(page: Any, title: str) -> None:
    """Navigate with the sidebar, as a user does (keeps the browser session)."""
    page.get_by_test_id("stSidebarNav").get_by_text(title, exact=True).click()
    expect(page.get_by_role("heading", name=title, exact=True)).to_be_visible(timeout=WAIT_MS)


def wait_idle(page: Any) -> None:
    """Wait until no script run is in flight (not for pages with a live fragment's timer)."""
    expect(page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]')
           ).to_be_attached(timeout=WAIT_MS)


def choose(page: Any, widget: Any, option: Any) -> None:
    """Open a selectbox/multiselect and click an option. A rerun that lands just after the
    click re-renders the widget and closes its list, so opening is retried until it stays."""
    def attempt() -> None:
        wait_idle(page)
        if not option.is_visible():
            widget.click()
        option.click(timeout=3_000)  # playwright's TimeoutError: the list closed (or never opened)

    retrying(attempt, "choosing an option", recover=lambda: page.keyboard.press("Escape"))


def open_list(page: Any, widget: Any) -> Any:
    """Open a selectbox's list and return its options once they show. As in `choose`, a rerun
    landing just after the click re-renders the widget and closes the list, so opening is
    retried until the list is really open (CI once saw the list close before the first look)."""
    options = page.get_by_role("option")

    def attempt() -> Any:
        wait_idle(page)
        if not options.first.is_visible():
            widget.click()
        expect(options.first).to_be_visible(timeout=3_000)
        return options

    return retrying(attempt, "opening a list", recover=lambda: page.keyboard.press("Escape"))


def create_agent(page: Any, name: str, model: str, role: str = "",
                 latency_s: float | None = None) -> None:
    """Fill the Agents page's form and save; waits for the saved agent's row and for the form
    to be blank again (a saved new agent must never turn the form into its editor)."""
    form = page.get_by_test_id("stForm").filter(has=page.locator(".st-key-save_agent"))
    wait_idle(page)
    expect(fresh(page, ".st-key-agent_form_name input")).to_have_value("", timeout=WAIT_MS)
    choose(page, form.locator(".st-key-agent_form_model"),
           page.get_by_role("option", name=f"{model} (simulated)", exact=True))
    form.locator(".st-key-agent_form_name input").fill(name)
    form.locator(".st-key-agent_form_role textarea").fill(role)
    if latency_s is not None:
        latency = form.locator(".st-key-agent_form_sim_latency input")
        if not latency.is_visible():
            form.get_by_test_id("stExpander").get_by_text("Advanced").click()
        latency.fill(str(latency_s))
    save_agent(page, form, name)
    expect(page.locator(f".st-key-agent_edit_{css_key(name)}")).to_be_visible(timeout=WAIT_MS)
    wait_idle(page)
    expect(fresh(page, ".st-key-agent_form_name input")).to_have_value("", timeout=WAIT_MS)
    expect(form.get_by_text("New agent", exact=True)).to_be_visible()


def save_agent(page: Any, form: Any, name: str, attempts: int = 3) -> None:
    """Click the agent form's Save until its notice shows. Like Start run, a click can be
    swallowed (fresh clone H: the filled form stayed, no notice, no run); click again only
    once the page has run since the click and stands idle with neither the notice nor the
    agent's row, so an agent is never saved twice."""
    saved = page.get_by_test_id("stAlertContentSuccess").filter(
        has_text=f"Saved new agent {name}.")
    row = f".st-key-agent_edit_{css_key(name)}"
    for attempt in range(attempts):
        wait_idle(page)
        if saved.is_visible() or page.locator(row).count():
            break
        page.evaluate(WATCH_RUNS)
        form.locator(".st-key-save_agent button").click()
        try:
            page.wait_for_function(SAVE_SETTLED, arg=[f"Saved new agent {name}.", row],
                                   timeout=10_000 if attempt < attempts - 1 else WAIT_MS)
        except Exception:  # playwright's TimeoutError: no run since the click; click again
            continue
        if saved.is_visible() or page.locator(row).count():
            break
    expect(saved).to_be_visible(timeout=WAIT_MS)


# Counts the script runs the server starts from now on (the stApp's script state turning to
# `running`); a widget click sends its rerun to the server, which answers with such a run.
WATCH_RUNS = """() => { const app = document.querySelector('[data-testid="stApp"]');
  window.__gcRuns = 0;
  if (window.__gcObserver) window.__gcObserver.disconnect();
  window.__gcObserver = new MutationObserver(() => {
    if (app.getAttribute('data-test-script-state') === 'running') window.__gcRuns++; });
  window.__gcObserver.observe(app, {attributes: true, attributeFilter: ['data-test-script-state']});
}"""
# Settled after the click: a job started (the status line changed, or the page's `?job=` now
# names another job: the Run page writes it when it starts one), or a run started after the
# click and the page is idle again, still drawing the status unchanged, the same `?job=` and
# Start (that run did not start a job: swallowed).
CLICK_SETTLED = """([unchanged, jobBefore]) => {
  const app = document.querySelector('[data-testid="stApp"]');
  const job = new URLSearchParams(location.search).get('job') || '';
  if (job !== jobBefore) return 'started';
  const lines = [...document.querySelectorAll('[data-testid="stCaptionContainer"]')]
    .filter(e => !e.closest('[data-stale="true"]') && /^status: /.test(e.innerText));
  if (lines.length && !new RegExp(unchanged).test(lines[0].innerText)) return 'started';
  const start = document.querySelector('.st-key-start_run button');
  return window.__gcRuns > 0 && app.getAttribute('data-test-script-state') === 'notRunning'
    && lines.length > 0 && start !== null && start.offsetParent !== null ? 'swallowed' : false; }"""
URL_JOB = "() => new URLSearchParams(location.search).get('job') || ''"
# Settled after a Save click: the notice or the agent's row shows, or a run started after the
# click and the page is idle again without them (that run did not save: swallowed).
SAVE_SETTLED = """([notice, row]) => {
  const app = document.querySelector('[data-testid="stApp"]');
  const said = [...document.querySelectorAll('[data-testid="stAlertContentSuccess"]')]
    .some(e => e.innerText.includes(notice));
  if (said || document.querySelector(row)) return true;
  return window.__gcRuns > 0 && app.getAttribute('data-test-script-state') === 'notRunning'; }"""


def start_run(page: Any, attempts: int = 3) -> None:
    """Click Start run. A rerun landing at that moment can swallow the click, so click again
    only once the page has run since the click and stands idle showing the same status as
    before (idle, or the job that was there before): a slow start is waited for, never
    clicked twice, so a test never starts two jobs."""
    before = status_line(page).inner_text() if status_line(page).count() else ""
    shown = re.search(r"· job ([0-9a-f]{32}) ·", before)
    unchanged = r"^status: idle" + (f"|· job {shown.group(1)} ·" if shown else "")
    job_before = page.evaluate(URL_JOB)
    for attempt in range(attempts):
        wait_idle(page)
        if page.evaluate(URL_JOB) != job_before:  # the last click did start one after all
            return
        page.evaluate(WATCH_RUNS)
        page.locator(".st-key-start_run button").click()
        try:
            # no run at all after the click within 10 s: the click never reached the server
            page.wait_for_function("() => window.__gcRuns > 0", timeout=10_000)
            settled = page.wait_for_function(CLICK_SETTLED, arg=[unchanged, job_before],
                                             timeout=WAIT_MS)
            if settled.json_value() == "started":
                return
        except Exception as exc:  # playwright's TimeoutError
            if attempt == attempts - 1:
                said = " | ".join(page.get_by_test_id("stAlert").all_inner_texts())
                raise AssertionError(f"the run did not start; the page says: {said!r}") from exc
            continue
    said = " | ".join(page.get_by_test_id("stAlert").all_inner_texts())
    raise AssertionError(f"the run did not start; the page says: {said!r}")


def load_preset(page: Any, button: str = "load_preset", attempts: int = 3) -> None:
    """Click a Load / Use preset button (widget key `button`) and wait for its notice
    ("Loaded the ... preset"). A rerun landing at the click can swallow it; loading the same
    preset again changes nothing, so click until the notice."""
    said = page.get_by_test_id("stAlertContentSuccess").filter(has_text="Loaded the")
    for attempt in range(attempts):
        wait_idle(page)
        page.locator(f".st-key-{button} button").click()
        try:
            expect(said).to_be_visible(timeout=WAIT_MS // attempts)
            return
        except AssertionError:
            if attempt == attempts - 1:
                raise


def fill_task(page: Any, text: str, attempts: int = 3) -> None:
    """Type the Run page's task and leave the field (Streamlit takes it on blur). A rerun that
    lands while typing redraws the field empty, so type again until it keeps the text."""
    for attempt in range(attempts):
        wait_idle(page)
        field = page.locator(".st-key-run_task textarea")
        field.fill(text)
        field.press("Tab")
        wait_idle(page)
        if page.locator(".st-key-run_task textarea").input_value() == text:
            return
        if attempt == attempts - 1:
            raise AssertionError("the task field kept dropping what was typed")


def css_key(name: str) -> str:
    """A widget key as it appears in `st-key-...` classes (Streamlit trims it and keeps
    [A-Za-z0-9_-], replacing anything else with `-`)."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", name.strip())


def type_and_choose(page: Any, field: Any, text: str, option: Any,
                    done: Any | None = None) -> None:
    """Type `text` into a selectbox/multiselect's input to filter its list, then click the
    option, as a user does in a long list: the list is virtualized (only the options scrolled
    into view are in the page), so an option far down is not there until the list is filtered.
    A rerun that lands meanwhile redraws the widget, closing its list and clearing what was
    typed, so this types again until the option is clicked, or until `done` shows (a click
    that took late: a chosen option leaves the list, so typing again finds "No results")."""
    def attempt() -> None:
        wait_idle(page)
        if done is not None and done.count() and done.first.is_visible():
            page.keyboard.press("Escape")
            return
        if not option.is_visible():
            field.click()
            field.fill(text)
        option.click(timeout=3_000)  # playwright's TimeoutError: the list closed (or never opened)

    retrying(attempt, f"choosing {text!r}", recover=lambda: page.keyboard.press("Escape"))


def pick_roster(page: Any, names: Sequence[str]) -> None:
    """Choose agents, in order, in the Run page's multiselect (typing each name, since the
    saved agents keep their stored order and a new one sits at the end of a long list)."""
    box = page.locator(".st-key-run_roster")
    for name in names:
        literal = re.escape(name).replace("/", r"\/")  # playwright's selector ends at a `/`
        option = page.get_by_role("option", name=re.compile(f"^{literal} · "))
        chip = box.get_by_text(name + " · ", exact=False)
        for attempt in range(3):  # a rerun landing at the click can swallow it: choose again
            type_and_choose(page, fresh(page, ".st-key-run_roster input"), name, option, chip)
            try:
                expect(chip).to_be_visible(timeout=WAIT_MS // 3)
                break
            except AssertionError:
                if attempt == 2:
                    raise
    page.keyboard.press("Escape")
    wait_idle(page)  # a rerun in flight would redraw the form below and drop what is typed


def set_number(page: Any, key: str, value: float | int, attempts: int = 3) -> None:
    """Type into a keyed number input and leave it (a form takes the value on blur). A rerun
    that lands while typing redraws the input with its old value, so type again if it did."""
    field = page.locator(f".st-key-{key} input")
    check = "([sel, v]) => Math.abs(parseFloat(document.querySelector(sel).value) - v) < 1e-9"
    for attempt in range(attempts):
        wait_idle(page)
        field.fill(str(value))
        field.press("Tab")
        try:
            page.wait_for_function(check, arg=[f".st-key-{key} input", value],
                                   timeout=WAIT_MS // attempts)
            return
        except Exception:
            if attempt == attempts - 1:
                raise


def fresh(page: Any, css: str) -> Any:
    """Elements matching `css` that are not left over from the previous script run. While a
    rerun is in flight, Streamlit keeps the old elements (marked `data-stale="true"`) until it
    replaces them; when the layout above shifts (a notice shown once, a button gone), old and
    new copies are briefly both in the page."""
    return page.locator(f'{css}:not([data-stale="true"]):not([data-stale="true"] *)')


def status_line(page: Any) -> Any:
    """The Run page's status line as the last full run drew it: not the head's draw of a run
    that has just ended (groupchat_ui/run/live_view.py, ENDING_KEY), which a full rerun
    replaces a moment later; a test that saw `finished` there would race that rerun."""
    return fresh(page, f'[data-testid="stCaptionContainer"]:not(.st-key-{ENDING_KEY} *)'
                 ).filter(has_text=STATUS)


def job_id(page: Any) -> str:
    found = re.search(r"· job ([0-9a-f]{32}) ·", status_line(page).inner_text())
    assert found, status_line(page).inner_text()
    return found.group(1)


def wait_plots(page: Any, count: int) -> None:
    """Wait until at least `count` visible plotly charts have drawn SVG with traces."""
    page.wait_for_function(PLOTS_DRAWN, arg=count, timeout=WAIT_MS)
