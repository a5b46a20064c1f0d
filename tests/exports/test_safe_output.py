"""What goes out is safe too (issue 10 §6): Markdown exports render inert, every CSV the lab
writes is formula-defused, the CLI never lets a control character reach the terminal, and
names reject the characters that would spoof or drive it.

Hostile model output comes over real HTTP (groupchat_core.testing.FakeOpenAIServer, litellm's
OpenAI path); the CLI runs as a subprocess and its stdout/stderr bytes are checked.

Private imports (`exports._tables`): units or test hooks with no public name;
everything public comes from the public API.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator

import pandas as pd
import pytest
from markdown_it import MarkdownIt

from groupchat_core import (
    Agent,
    ConfigError,
    GroupChat,
    bids_csv,
    terminal_text,
    transcript_markdown,
)
from groupchat_core.cli import main
from groupchat_core.exports._tables import defuse_cell
from groupchat_core.store import RunStore
from groupchat_core.sweeps import frame_csv, parse_sweep, run_sweep, sweep_results
from groupchat_core.testing import FakeOpenAIServer, tool_call
from tests.helpers import ROOT

HTML = "<img src=x onerror=alert(1)>"
EVIL = ("hi \x1b]0;pwned\x07 then \x1b[2J clear, \x9b31m C1, \u202eevil\u202c, "
        "\x7f del, zero\u200bwidth, tag\U000E0041s\n"
        f"{HTML} <script>alert(1)</script> [click](javascript:alert(1)) "
        "[esc](javascript\\:alert(2)) [spaced]( javascript:alert(5)) <javascript:alert(3)> "
        "![img](http://evil.example/x.png) [data](data:text/html,x) [rel](/etc/passwd)\n\n"
        "[ref]: javascript:alert(4)\n[ref2]:\n  vbscript:x\n\n"
        "[ref] [ref2] and [ok](https://example.com/a) **bold** stays")
KEY = "sk-test-not-a-real-key"
C1 = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u200b\u202a-\u202e\u2066-\u2069"
                r"\U000e0000-\U000e007f]")


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv


def hostile_replies(srv: FakeOpenAIServer) -> None:
    """The first agent always wins with EVIL, the second always loses with a hostile text."""
    srv.set_responder(None, lambda body: tool_call(0.9, EVIL) if "first" in body["model"]
                      else tool_call(0.2, "=HYPERLINK(\"http://x\",\"y\") \x1b[31m"))


def hostile_chat(srv: FakeOpenAIServer) -> GroupChat:
    agents = [Agent(agent_name=name, model_name=f"openai/{model}", api_base=srv.base_url,
                    api_key=KEY)
              for name, model in (("Eve [x](javascript:alert(1))", f"first{HTML}"),
                                  ("Mallory *", "second"))]
    return GroupChat(name=f"<b>run</b> {HTML} `tick", agents=agents, max_loops=3,
                     threshold=0.3)


def markdown_problems(text: str) -> list[str]:
    """What would not be inert when `text` is rendered: raw HTML, images, links to anything
    but http(s) (markdown-it with html on and its own link check off), control characters."""
    md = MarkdownIt("commonmark", {"html": True})
    md.validateLink = lambda url: True  # judge every link ourselves
    problems = [f"control character {c!r}" for c in C1.findall(text)]
    stack = list(md.parse(text))
    while stack:
        token = stack.pop()
        stack.extend(token.children or [])
        if token.type in ("html_block", "html_inline"):
            problems.append(f"raw HTML {token.content!r}")
        elif token.type == "image":
            problems.append(f"image {token.attrGet('src')!r}")
        elif token.type == "link_open":
            href = str(token.attrGet("href"))
            if not re.match(r"https?://", href, re.IGNORECASE):
                problems.append(f"link to {href!r}")
    return problems


def test_the_checker_catches_what_it_must():
    raw = f"# {HTML}\n\n{EVIL}"
    found = " ".join(markdown_problems(raw))
    for expected in ("raw HTML", "image", "javascript:alert(1)", "javascript:alert(2)",
                     "javascript:alert(3)", "javascript:alert(4)", "vbscript:x",
                     "javascript:alert(5)", "data:text/html", "/etc/passwd",
                     "control character"):
        assert expected in found, expected


def test_the_markdown_transcript_of_a_hostile_run_renders_inert(store, server):
    hostile_replies(server)
    chat = hostile_chat(server)
    store.attach(chat)
    chat.run(f"Task {HTML} \x1b]0;title\x07 [t](javascript:alert(9))")
    run_id = chat.last_run.run_id
    with store.write("test: a hostile error on the run row") as conn:
        conn.exec_driver_sql(f"UPDATE runs SET error = '{HTML} [e](javascript:x) \x1b[2J' "
                             f"WHERE run_id = '{run_id}'")

    md = transcript_markdown(store, run_id)
    assert markdown_problems(md) == []
    assert "[ok](https://example.com/a)" in md and "**bold** stays" in md  # formatting kept
    assert "\\x1b]0;pwned\\x07" in md and "\\u202eevil" in md  # controls visible, not live
    assert "first\\<img src=x onerror=alert\\(1\\)\\>" in md  # the model name, escaped
    rendered = MarkdownIt("commonmark", {"html": True}).render(md)
    assert "<img" not in rendered and "<script" not in rendered and "<b>" not in rendered
    assert 'href="javascript' not in rendered.lower()


def test_one_csv_defuser_for_bids_and_sweep_results(store, server):
    hostile = ["=1+1", "+1", "-1", "@SUM(A1)", "\t=1", "\r=1", " =1", "\u3000=1",
               "\uff1d1+1", "\uff0b1", "\uff0d1", "\uff20SUM", "\ufe62x", "\u200b=1",
               "\u2212 1", "plain", "a=b"]
    assert [defuse_cell(v)[0] == "'" for v in hostile] == [True] * 15 + [False, False]
    assert defuse_cell(3.5) == 3.5 and defuse_cell(None) is None

    hostile_replies(server)
    chat = hostile_chat(server)
    store.attach(chat)
    chat.run("t")
    frame = pd.read_csv(io.StringIO(bids_csv(store, chat.last_run.run_id)))
    losing = frame[frame["agent"] == "Mallory *"]["message"].tolist()
    assert losing and all(m.startswith("'=HYPERLINK") for m in losing)

    sweep = parse_sweep({"name": "=cmd", "base": {"max_loops": 2, "agents": [
        {"agent_name": "A", "model_name": "sim/balanced"},
        {"agent_name": "B", "model_name": "sim/eager"}]},
        "grid": {"bid_prompt": {"\uff1dHYPERLINK(\"http://x\")":
                                "You are {agent_name}. Bid above {threshold}."}},
        "tasks": ["=HYPERLINK(\"http://evil\",\"click\")"]})
    outcome = run_sweep(sweep, store)
    results = sweep_results(store, outcome.sweep_id)
    text = frame_csv(results)
    cells = [c for row in pd.read_csv(io.StringIO(text), dtype=str).fillna("").values
             for c in row]
    assert any("HYPERLINK" in c for c in cells)
    assert not [c for c in cells if c and defuse_cell(c) != c]  # every formula defused


def test_nothing_writes_csv_but_the_one_defuser():
    """grep to_csv over the engine, the dashboard and its pages: only _exports.frame_csv."""
    found = []
    for folder in ("groupchat_core", "groupchat_ui", "app_pages"):
        for path in (ROOT / folder).rglob("*.py"):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if ".to_csv(" in line:
                    found.append(f"{path.relative_to(ROOT)}:{number}")
    assert len(found) == 1 and found[0].startswith("groupchat_core/exports/_tables.py"), found
    view = (ROOT / "groupchat_ui" / "sweeps" / "results_view.py").read_text(encoding="utf-8")
    assert "frame_csv(frame, meta" in view


# --- the terminal -------------------------------------------------------------------------------


def test_terminal_text_escapes_controls_and_keeps_what_a_transcript_needs():
    assert terminal_text("a\x1b[2Jb\x9bc\u202ed\x7f") == "a\\x1b[2Jb\\x9bc\\u202ed\\x7f"
    assert terminal_text("two\nlines\ttab") == "two\\x0alines\\x09tab"
    assert terminal_text("two\r\nlines\ttab\rX", multiline=True) == "two\nlines\ttab\\x0dX"
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
    assert terminal_text(family, multiline=True) == family  # emoji joiners kept in bodies
    assert terminal_text("tag\U000E0041", multiline=True) == "tag\\U000e0041"
    assert terminal_text("plain ñ text") == "plain ñ text"


def cli(url: str, *args: str, env: dict[str, str] | None = None) -> tuple[int, bytes, bytes]:
    """The CLI in a process of its own: the bytes a terminal would get."""
    full = {**os.environ, "GROUPCHAT_DB": url, **(env or {})}
    done = subprocess.run([sys.executable, "-m", "groupchat_core", *args], cwd=ROOT, env=full,
                          capture_output=True, timeout=300)
    return done.returncode, done.stdout, done.stderr


def cli_here(capfd: pytest.CaptureFixture[bytes], url: str, *args: str
             ) -> tuple[int, bytes, bytes]:
    """The CLI in this process, its file descriptors captured: the same bytes, no start-up."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("GROUPCHAT_DB", url)
        code = main(list(args))
    out, err = capfd.readouterr()
    return code, out, err


def assert_no_raw_controls(*streams: bytes) -> None:
    for data in streams:
        text = data.decode("utf-8")
        assert b"\x1b" not in data and b"\x07" not in data and b"\r" not in data
        assert not C1.findall(text), C1.findall(text)


def test_the_cli_never_prints_a_raw_control_character(store, server, tmp_path, capfdbinary):
    hostile_replies(server)
    agents = [{"agent_name": n, "model_name": f"openai/{m}", "api_base": server.base_url}
              for n, m in (("Eve", "first"), ("Mallory", "second"))]
    spec = tmp_path / "chat.json"
    spec.write_text(json.dumps({"name": "hostile", "max_loops": 3, "threshold": 0.3,
                                "verbose": True, "agents": agents}))  # its panels print too
    task = "Plan \x1b]0;retitled\x07 it \x9b2J \u202eevil"
    code, out, err = cli(store.url, "run", str(spec), "--task", task,
                         env={"OPENAI_API_KEY": KEY})
    assert code == 0, err
    assert_no_raw_controls(out, err)
    text = out.decode()
    assert "\\x1b[2J" in text and "\n" in text.strip()
    assert text.count("\\x1b]0;pwned\\x07") >= 3  # two verbose panels and the output
    assert "turn 1: Eve speaks" in err.decode()
    run_id = store.list_runs()["run_id"].iloc[0]

    printed = {}
    for args in (("show", run_id[:10], "--bids"), ("list",), ("export", run_id, "--format",
                                                             "md")):
        code, out, err = cli_here(capfdbinary, store.url, *args)
        assert code == 0, (args, err)
        assert_no_raw_controls(out, err)
        printed[args[0]] = out.decode()
    assert "\\x1b]0;retitled\\x07" in printed["show"] and "\\u202eevil" in printed["show"]
    assert "\\x1b[31m" in printed["show"]  # the bid log's losing message, escaped
    assert "\\x1b]0;retit" in printed["list"]

    code, out, err = cli_here(capfdbinary, store.url, "show", "\x1b[2Jnope")  # untrusted
    assert code == 2 and out == b"" and err.count(b"\n") == 1
    assert_no_raw_controls(err)
    assert b"\\x1b[2Jnope" in err


def test_the_sweep_cli_escapes_names_tasks_and_errors(store, tmp_path, capfdbinary):
    spec = tmp_path / "sweep.json"
    spec.write_text(json.dumps({
        "name": "sweep \x1b]0;owned\x07 \u202eX", "tasks": ["Task \x1b[2J \x9b1m"],
        "base": {"max_loops": 2, "agents": [{"agent_name": "A", "model_name": "sim/balanced"},
                                            {"agent_name": "B", "model_name": "sim/eager"}]},
        "grid": {"threshold": [0.3, 0.6]}}))
    code, out, err = cli_here(capfdbinary, store.url, "sweep", str(spec))
    assert code == 0, err
    assert_no_raw_controls(out, err)
    assert "sweep \\x1b]0;owned\\x07 \\u202eX" in err.decode()


# --- names ----------------------------------------------------------------------------------


NAMED = [("\u202e", "U+202E RIGHT-TO-LEFT OVERRIDE"),
         ("\x9b", "U+009B CONTROL SEQUENCE INTRODUCER"), ("\x7f", "U+007F DELETE"),
         ("\u2028", "U+2028 LINE SEPARATOR"), ("\u200b", "U+200B ZERO WIDTH SPACE"),
         ("\x1b", "U+001B ESCAPE"), ("\u2066", "U+2066 LEFT-TO-RIGHT ISOLATE")]


def test_names_reject_controls_naming_the_character(store, tmp_path, capfdbinary, subtests):
    """Every character on one store, each a subtest of its own."""
    for char, named in NAMED:
        with subtests.test(named):
            _names_reject(char, named, store, tmp_path, capfdbinary)


def _names_reject(char, named, store, tmp_path, capfdbinary):
    message = f"contains {named}; remove it"
    with pytest.raises(ValueError, match=re.escape(f"agent_name {message}")):
        Agent(agent_name=f"Al{char}ice")
    with pytest.raises(ValueError, match=re.escape(f"name {message}")):
        GroupChat(name=f"run{char}", agents=[Agent(agent_name="A", model_name="sim/eager"),
                                             Agent(agent_name="B", model_name="sim/eager")])
    spec = tmp_path / "chat.json"
    spec.write_text(json.dumps({"agents": [
        {"agent_name": f"Al{char}ice", "model_name": "sim/balanced"},
        {"agent_name": "Bob", "model_name": "sim/balanced"}]}))
    before = len(store.list_runs())
    code, out, err = cli_here(capfdbinary, store.url, "run", str(spec), "--task", "t")
    assert code == 2 and out == b"" and err.count(b"\n") == 1, err
    assert f"agent_name {message}".encode() in err
    assert_no_raw_controls(err)
    assert len(RunStore(store.url).list_runs()) == before  # nothing recorded
    with pytest.raises(ConfigError):
        from groupchat_core import load_spec_text

        load_spec_text(spec.read_text())
