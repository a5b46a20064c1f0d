"""bench/suite_timeline.py, the plugin BENCHMARKS.md's suite figures come from: it records each
test's wall span and CPU (its own and its children's), and the report adds them up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bench.suite_timeline import report
from tests.helpers import ROOT

SAMPLE = """
import subprocess, sys, time

def test_waits():
    time.sleep(0.3)

def test_works():
    end = time.process_time() + 0.2
    while time.process_time() < end:
        pass

def test_runs_a_child():
    subprocess.run([sys.executable, "-c", "import time\\nend = time.process_time() + 0.2\\n"
                    "while time.process_time() < end: pass"], check=True)
"""


def test_each_test_gets_its_wall_span_and_cpu_and_the_report_adds_them_up(
        tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text(SAMPLE, encoding="utf-8")
    out = tmp_path / "timeline"
    out.mkdir()
    # a plain run: not one of this run's xdist workers (the file is named after the worker)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")},
           "PYTHONPATH": str(ROOT), "SUITE_TIMELINE": str(out)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "bench.suite_timeline", "test_sample.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {row["id"].split("::")[1]: row for row in map(
        json.loads, (out / "timeline-main.jsonl").read_text(encoding="utf-8").splitlines())}
    assert list(rows) == ["test_waits", "test_works", "test_runs_a_child"]
    waited = rows["test_waits"]["end"] - rows["test_waits"]["start"]
    assert waited >= 0.3
    # its CPU is not its wall span: a sleep costs next to none (a ratio, not a speed claim)
    assert rows["test_waits"]["self"] < waited / 2
    assert rows["test_works"]["self"] >= 0.2
    assert rows["test_runs_a_child"]["children"] >= 0.2 > rows["test_works"]["children"]
    table = report(out)
    assert "main | 3 |" in table and "test_sample.py |" in table
