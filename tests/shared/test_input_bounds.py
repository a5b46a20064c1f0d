"""Bounded, predictable input at the edge (issue 10 §2).

- YAML has its own 8 MB limit (it costs several times JSON's time and memory to parse);
- no NaN or infinity gets in anywhere (a recorded NaN made the run's JSON export unreadable);
- every integer is bounded, so 1e20 is one clear line, never an OverflowError traceback, a
  chat the store cannot record, or a database error.

Each is tried through the real entry points: GroupChat(...), load_spec_text, load_sweep_text,
the CLI (exit 2, one line on stderr, no traceback, store unchanged; a real process where it reads
a file, its flags' checks in this one) and bundle import.

Private imports (`_safeload`, `exports._bundles`): units or test hooks with no public name;
everything public comes from the public API.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys

import pytest
import yaml

from groupchat_core import Agent, ConfigError, GroupChat, import_bundle, load_spec_text
from groupchat_core._safeload import MAX_YAML_BYTES, parse_text
from groupchat_core.exports._bundles import read_bundle
from groupchat_core.store import RunStore
from groupchat_core.sweeps import load_sweep_text
from tests.exports.test_bundle_consistency import store_digest, trio_bundle
from tests.helpers import ROOT
from tests.helpers.chats import scripted_chat
from tests.helpers.cli import run_cli

NAN = float("nan")
INF = float("inf")


def two_agents(**agent: object) -> list[Agent]:
    return [Agent(agent_name="A", **agent), Agent(agent_name="B")]


def one_line(exc: pytest.ExceptionInfo[BaseException]) -> str:
    message = str(exc.value)
    assert "\n" not in message and len(message) < 400, message
    return message


# --- GroupChat(...) ----------------------------------------------------------------------------


@pytest.mark.parametrize(("settings", "pattern"), [
    ({"recency_window": 10**20}, r"recency_window must be an integer <= 10,000 \(its documented "
                                 r"maximum\), got 100000000000000000000"),
    ({"max_loops": 10**20}, r"max_loops must be an integer <= 10,000"),
    ({"max_loops": 1e20}, r"max_loops must be an integer >= 1, got 1e\+20"),
    ({"max_loops": 10**5000}, r"max_loops must be an integer <= 10,000 .*got an integer of about "
                              r"5,001 digits"),
    ({"batch_concurrency": 10**9}, r"batch_concurrency must be an integer <= 1,000"),
    ({"seed": 10**30}, r"seed must be an integer <= 9,007,199,254,740,992"),
    ({"seed": 1e20}, r"seed must be an integer >= "),
    ({"idle_timeout": NAN}, r"idle_timeout must be a number of seconds from 0 to 86,400, got nan"),
    ({"idle_timeout": INF}, r"idle_timeout must be .* got inf"),
    ({"bid_timeout": INF}, r"bid_timeout must be a positive number of seconds up to 86,400"),
    ({"bid_timeout": 1e300}, r"bid_timeout must be a positive number of seconds up to 86,400"),
    ({"threshold": NAN}, r"threshold must be a finite number, got nan"),
])
def test_groupchat_refuses_unbounded_or_non_finite_settings(settings, pattern):
    with pytest.raises(ConfigError, match=pattern) as caught:
        GroupChat(agents=two_agents(), **settings)
    one_line(caught)


def test_assignment_is_bounded_too():
    chat = GroupChat(agents=two_agents())
    with pytest.raises(ConfigError, match="recency_window must be an integer <= 10,000"):
        chat.recency_window = 10**20
    assert chat.recency_window == 1


def test_the_largest_max_loops_runs_and_is_recorded(store: RunStore):
    """The old failure: max_loops 1e20 ran a chat the store could not record. The bound is one
    the store holds."""
    chat = scripted_chat({"A": [(0.9, "a"), (0.1, "")], "B": [(0.1, ""), (0.1, "")]},
                         max_loops=10_000, recency_window=10_000)
    recorder = store.attach(chat)
    chat.run("go")
    assert not recorder.failures
    assert store.run_info(chat.last_run.run_id)["max_loops"] == 10_000
    assert len(store.load_run(chat.last_run.run_id).turns) == 2


@pytest.mark.parametrize(("agent", "pattern"), [
    ({"litellm_kwargs": {"top_p": NAN}}, r"litellm_kwargs\.top_p must be a finite number"),
    ({"litellm_kwargs": {"extra_body": {"x": [1, INF]}}},
     r"litellm_kwargs\.extra_body\.x\[1\] must be a finite number"),
    ({"litellm_kwargs": {"seed": 2**70}}, r"litellm_kwargs\.seed is 1180591620717411303424, "
                                          r"beyond a 64-bit integer"),
    ({"tools_list_dictionary": [{"type": "function", "x": NAN}]},
     r"tools_list_dictionary\[0\]\.x must be a finite number"),
    ({"max_tokens": 1e20}, r"max_tokens must be an integer, got 1e\+20"),
    ({"max_tokens": 10**20}, r"max_tokens must be an integer <= 100,000,000"),
    ({"context_window": 10**12}, r"context_window must be an integer <= 100,000,000"),
    ({"num_retries": 10**6}, r"num_retries must be an integer <= 100"),
    ({"max_loops": 10**20}, r"max_loops must be an integer <= 10,000"),
    ({"timeout": 1e300}, r"timeout must be a positive number of seconds up to 86,400"),
    ({"timeout": NAN}, r"timeout must be a positive number of seconds"),
    ({"temperature": NAN}, r"temperature must be between 0 and 2"),
])
def test_agents_refuse_unbounded_or_non_finite_numbers(agent, pattern):
    with pytest.raises(ValueError, match=pattern):
        Agent(agent_name="A", **agent)
    if all(isinstance(v, int | float) and math.isfinite(v) for v in agent.values()):
        # a number JSON can carry: a spec file gets the same message, as one line
        spec = {"agents": [{"agent_name": "A", **agent}, {"agent_name": "B"}]}
        with pytest.raises(ConfigError, match=pattern) as caught:
            load_spec_text(json.dumps(spec))
        one_line(caught)


def test_three_point_oh_still_reads_as_three():
    assert Agent(agent_name="A", max_tokens=3.0).max_tokens == 3


# --- spec files --------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "pattern"), [
    ("idle_timeout: .nan\n", r"^spec: idle_timeout is nan, not a finite number"),
    ("threshold: -.inf\n", r"^spec: threshold is -inf, not a finite number"),
    ("agents:\n- {agent_name: A, litellm_kwargs: {top_p: .nan}}\n- {agent_name: B}\n",
     r"^spec: agents\[0\]\.litellm_kwargs\.top_p is nan, not a finite number"),
    ("agents:\n- {agent_name: A, litellm_kwargs: {extra_body: {w: [1, .inf]}}}\n",
     r"agents\[0\]\.litellm_kwargs\.extra_body\.w\[1\] is inf"),
    ("recency_window: 1.0e+20\n", r"recency_window must be an integer >= 0, got 1e\+20"),
    ("recency_window: 1e20\n", r"recency_window must be an integer >= 0, got '1e20'"),
    ("max_loops: 100000000000000000000\n", r"max_loops must be an integer <= 10,000"),
    ('{"max_loops": 1e20}', r"max_loops must be an integer >= 1, got 1e\+20"),
    ('{"seed": 100000000000000000000}', r"seed must be an integer <= 9,007,199,254,740,992"),
    ('{"idle_timeout": NaN}', r"NaN is not valid JSON"),
    ('{"bid_timeout": 1e999}', r"number 1e999 is out of range"),
    ('{"agents": [{"agent_name": "A", "max_tokens": 1e20}]}',
     r"agents\.0\.max_tokens: max_tokens must be an integer, got 1e\+20"),
    ("system_prompt_nul: \"a\\0b\"\n", r"system_prompt_nul contains a NUL character"),
])
def test_spec_files_refuse_non_finite_and_unbounded_numbers(text, pattern):
    with pytest.raises(ConfigError, match=pattern) as caught:
        load_spec_text(text)
    one_line(caught)


# --- sweep files -------------------------------------------------------------------------------

SWEEP = {"base": {"agents": [{"agent_name": "A"}, {"agent_name": "B"}]}, "tasks": ["t"]}


@pytest.mark.parametrize(("change", "pattern"), [
    ({"grid": {"max_loops": [5, 10**20]}}, r"grid\.max_loops\[1\] must be an integer >= 1 and "
                                           r"<= 10000, got 100000000000000000000"),
    ({"grid": {"recency_window": [10**6]}}, r"grid\.recency_window\[0\] must be an integer >= 0 "
                                            r"and <= 10000"),
    ({"grid": {"max_loops": [1e20]}}, r"grid\.max_loops\[0\] must be an integer"),
    ({"max_calls": 10**30}, r"max_calls must be an integer >= 1 and <= 1000000000"),
    ({"base": {**SWEEP["base"], "recency_window": 10**20}},
     r"recency_window must be an integer <= 10,000"),
    ({"base": {**SWEEP["base"], "idle_timeout": NAN}}, r"idle_timeout is nan"),
    ({"grid": {"threshold": [0.5, NAN]}}, r"grid\.threshold\[1\] is nan"),
    ({"max_usd": INF}, r"max_usd is inf"),
])
def test_sweep_files_refuse_non_finite_and_unbounded_numbers(change, pattern):
    text = yaml.safe_dump({**SWEEP, **change})
    with pytest.raises(ConfigError, match=pattern) as caught:
        load_sweep_text(text)
    one_line(caught)


@pytest.mark.parametrize(("change", "pattern"), [
    ({"grid": {"threshold": [NAN]}}, r"grid\.threshold\[0\] must be a finite number, got nan"),
    ({"grid": {"temperature": [INF]}}, r"grid\.temperature\[0\] must be a finite number"),
    ({"max_usd": NAN}, r"max_usd must be a finite number, got nan"),
    ({"repeats": 1e20}, r"repeats must be an integer >= 1 and <= 10000, got 1e\+20"),
])
def test_sweep_data_handed_over_directly_is_checked_by_the_validators(change, pattern):
    """No file parser in between (the dashboard and the Python API build sweeps as data)."""
    from groupchat_core.sweeps import parse_sweep

    with pytest.raises(ConfigError, match=pattern) as caught:
        parse_sweep({**SWEEP, **change})
    one_line(caught)


# --- YAML's own limit, and the libyaml path ----------------------------------------------------


def test_yaml_has_its_own_smaller_limit_json_does_not():
    big = "notes: " + "x" * (MAX_YAML_BYTES + 1) + "\n"
    with pytest.raises(ConfigError) as caught:
        read_bundle(big, "run.yaml")
    assert one_line(caught) == (
        f"run.yaml is {len(big):,} bytes of YAML: YAML bundles are limited to 8 MB "
        "(8,388,608 bytes); export as JSON for larger runs")
    as_json = json.dumps({"notes": "x" * (MAX_YAML_BYTES + 1)})
    assert parse_text(as_json, "run.json", 64 * 1024 * 1024)["notes"].startswith("xxx")
    with pytest.raises(ConfigError, match="YAML bundles are limited"):
        parse_text(big.encode(), "run.yaml", 64 * 1024 * 1024)


@pytest.mark.parametrize("libyaml", [True, False])
def test_yaml_aliases_and_deep_nesting_are_refused_on_either_loader(monkeypatch, libyaml):
    if not libyaml:
        monkeypatch.delattr(yaml, "CSafeLoader")
    else:
        assert hasattr(yaml, "CSafeLoader")  # the fast path is what runs here
    with pytest.raises(ConfigError, match=r"aliases are not allowed \(line 2\)"):
        parse_text("a: &x [1, 2]\nb: *x\n", "f.yaml", 10**6)
    with pytest.raises(ConfigError, match="nested"):
        parse_text("a: " + "[" * 50_000 + "]" * 50_000, "f.yaml", 10**6)
    with pytest.raises(ConfigError, match="nested more than 64"):
        parse_text("a: " + "[" * 70 + "]" * 70, "f.yaml", 10**6)
    with pytest.raises(ConfigError, match="python/object"):
        parse_text("a: !!python/object/apply:os.system ['true']", "f.yaml", 10**6)
    assert parse_text("a: [1, 2.5, x]\nb: {c: null}\n", "f.yaml", 10**6) == {
        "a": [1, 2.5, "x"], "b": {"c": None}}


# --- bundles -----------------------------------------------------------------------------------


def test_bundle_numbers_beyond_the_store_are_refused(store, subtests):
    data = trio_bundle(store)  # one recorded run, each number a subtest
    before = store_digest(store)
    for where, value, pattern in [
        ("total_calls", 10**30, r"Input should be less than or equal to 2147483647"),
        ("total_prompt_tokens", 1e30, r"total_prompt_tokens must be an integer from 0 to "
                                      r"2,147,483,647"),
        ("total_cost_usd", "nan", r"NaN is not valid JSON"),
    ]:
        with subtests.test(where):
            text = json.dumps({**data, "run": {**data["run"], where: value}})
            with pytest.raises(ConfigError, match=pattern) as caught:
                import_bundle(store, text.replace('"nan"', "NaN"))
            one_line(caught)
            assert store_digest(store) == before


def test_a_yaml_bundle_with_nan_is_refused(store):
    data = trio_bundle(store)
    text = yaml.safe_dump({**data, "run": {**data["run"], "total_cost_usd": NAN}})
    before = store_digest(store)
    with pytest.raises(ConfigError, match=r"run\.total_cost_usd is nan, not a finite number"):
        import_bundle(store, text)
    assert store_digest(store) == before


# --- the CLI as a real process -----------------------------------------------------------------


def cli(*argv: str, url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "groupchat_core", "--db", url, *argv],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def cli_here(capsys: pytest.CaptureFixture[str], *argv: str,
             url: str) -> subprocess.CompletedProcess[str]:
    """The CLI in this process, as `cli` gives it: a flag's check needs no process of its own."""
    code, out, err = run_cli(capsys, "--db", url, *argv)
    return subprocess.CompletedProcess(list(argv), code, out, err)


def assert_refused(done: subprocess.CompletedProcess[str], pattern: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("error: ")
    assert re.search(pattern, done.stderr), done.stderr


@pytest.mark.parametrize(("spec", "pattern"), [
    ("max_loops: 100000000000000000000\n", r"max_loops must be an integer <= 10,000"),
    ("recency_window: 1.0e+20\n", r"recency_window must be an integer >= 0, got 1e\+20"),
    ("idle_timeout: .nan\n", r"idle_timeout is nan, not a finite number"),
    ("agents:\n- {agent_name: A, litellm_kwargs: {top_p: .nan}}\n- {agent_name: B}\n",
     r"litellm_kwargs\.top_p is nan"),
])
def test_cli_run_refuses_a_bad_spec_and_records_nothing(store, store_url, tmp_path, spec,
                                                        pattern):
    path = tmp_path / "spec.yaml"
    path.write_text("agents:\n- {agent_name: A}\n- {agent_name: B}\n" + spec
                    if "agents" not in spec else spec)
    before = store_digest(store)
    assert_refused(cli("run", str(path), "--task", "hi", url=store_url), pattern)
    assert store_digest(store) == before


def test_cli_list_limit_is_bounded(store, store_url, capsys):
    assert_refused(cli_here(capsys, "list", "--limit", "100000000000000000000", url=store_url),
                   r"argument --limit: must be from 1 to 1,000,000, got '100000000000000000000'")
    assert_refused(cli_here(capsys, "list", "--limit", "0", url=store_url),
                   r"must be from 1 to 1,000,000")
    done = cli_here(capsys, "list", "--limit", "1000000", url=store_url)
    assert done.returncode == 0, done.stderr


def test_cli_import_refuses_huge_totals_and_big_yaml(store, store_url, tmp_path):
    data = trio_bundle(store)
    data["run"]["total_calls"] = 1e30
    lying = tmp_path / "huge.json"
    lying.write_text(json.dumps(data))
    big = tmp_path / "big.yaml"
    big.write_text("notes: " + "x" * (MAX_YAML_BYTES + 10) + "\n")
    before = store_digest(store)
    assert_refused(cli("import", str(lying), url=store_url),
                   r"run\.total_calls: total_calls must be an integer from 0 to 2,147,483,647")
    assert_refused(cli("import", str(big), url=store_url),
                   r"YAML bundles are limited to 8 MB .*export as JSON for larger runs")
    assert store_digest(store) == before


@pytest.mark.parametrize(("flag", "value", "pattern"), [
    ("--max-usd", "nan", r"--max-usd must be positive and finite, got nan"),
    ("--max-usd", "1e400", r"--max-usd must be positive and finite, got inf"),
    ("--max-calls", "100000000000000000000", r"--max-calls must be positive and at most "
                                             r"1,000,000,000"),
])
def test_cli_sweep_caps_are_finite_and_bounded(sqlite_store, tmp_path, capsys, flag, value,
                                               pattern):
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(SWEEP))
    assert_refused(cli_here(capsys, "sweep", str(path), flag, value, url=sqlite_store.url),
                   pattern)
    assert sqlite_store.list_runs().empty
