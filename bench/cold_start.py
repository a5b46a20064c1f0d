"""Cold start of the quick CLI commands: CPU of `--version`, `list` and `show` (issue 24,
target 5: at most 0.5 s each, no litellm import).

    python -m bench.cold_start --before /tmp/perf-before          # before and after, one run
    python -m bench.cold_start --before /tmp/perf-before --write  # also into BENCHMARKS.md

`--before` is a checkout of the code to compare with (`git worktree add /tmp/perf-before
298112d`); the commands run as a user runs them, `python -m groupchat_core ...` in a fresh
process, from each checkout, against the same store (GROUPCHAT_HOME in a temporary folder,
with 3 recorded sim runs). CPU is the child's user + system time (os.wait4), medians of
`--repeats` runs, before and after alternating so both see the same load. Also counted: which
heavy libraries each command loaded. Measurement only: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.report import write_section

AFTER = Path(__file__).resolve().parents[1]
HEAVY = ("litellm", "pandas", "sqlalchemy", "groupchat_core.sweeps")
PROBE = ("import runpy, sys, atexit, json\n"
         "heavy = json.loads(sys.argv.pop(1))\n"
         "atexit.register(lambda: print('LOADED ' + json.dumps([m for m in heavy "
         "if m in sys.modules]), file=sys.stderr))\n"
         "sys.argv[0] = 'groupchat_core'\n"
         "runpy.run_module('groupchat_core', run_name='__main__', alter_sys=True)\n")


def cpu_of(checkout: Path, argv: list[str], env: dict[str, str]) -> float:
    """User + system CPU seconds of `python -m groupchat_core ARGV` run from `checkout`."""
    child = subprocess.Popen([sys.executable, "-m", "groupchat_core", *argv], cwd=checkout,
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{argv} failed in {checkout} (exit {child.returncode})")
    return usage.ru_utime + usage.ru_stime


def loaded_by(checkout: Path, argv: list[str], env: dict[str, str]) -> list[str]:
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(HEAVY), *argv],
                          cwd=checkout, env=env, capture_output=True, text=True, check=False)
    lines = [x for x in done.stderr.splitlines() if x.startswith("LOADED ")]
    return json.loads(lines[-1][7:]) if lines else ["?"]


def seeded_home(folder: Path) -> tuple[dict[str, str], str]:
    env = {**os.environ, "GROUPCHAT_HOME": str(folder)}
    env.pop("GROUPCHAT_DB", None)
    for i in range(3):
        subprocess.run([sys.executable, "-m", "groupchat_core", "run", "examples/debate.yaml",
                        "--task", f"cold start {i}", "--quiet"], cwd=AFTER, env=env,
                       check=True, capture_output=True)
    listed = subprocess.run([sys.executable, "-m", "groupchat_core", "list", "--json"],
                            cwd=AFTER, env=env, check=True, capture_output=True, text=True)
    return env, str(json.loads(listed.stdout)[0]["run_id"])[:8]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="checkout to compare with")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--write", action="store_true", help="write BENCHMARKS.md's figures")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        env, run_id = seeded_home(Path(folder))
        commands = {"--version": ["--version"], "list": ["list"], "show": ["show", run_id]}
        lines = ["| command | before: CPU s | after: CPU s | before loads | after loads |",
                 "|---|---:|---:|---|---|"]
        for name, argv in commands.items():
            times: dict[str, list[float]] = {"before": [], "after": []}
            for _ in range(args.repeats):
                times["before"].append(cpu_of(args.before, argv, env))
                times["after"].append(cpu_of(AFTER, argv, env))
            before, after = (statistics.median(times[k]) for k in ("before", "after"))
            loads = [", ".join(loaded_by(c, argv, env)) or "none" for c in (args.before, AFTER)]
            lines.append(f"| `{name}` | {before:.2f} | {after:.2f} | {loads[0]} | {loads[1]} |")
        bare = statistics.median(_cpu([sys.executable, "-c", "pass"])
                                 for _ in range(args.repeats))
        package = statistics.median(_cpu([sys.executable, "-c", "import groupchat_core"])
                                    for _ in range(args.repeats))
        storage = statistics.median(_cpu([sys.executable, "-c", "import sqlalchemy"])
                                    for _ in range(args.repeats))
    figures = "\n".join(lines) + (
        f"\n\nFloors, same run (CPU s, medians of {args.repeats}): a bare `python -c pass` "
        f"{bare:.2f}; `import groupchat_core` {package:.2f}; `import sqlalchemy` "
        f"{storage:.2f}.\n")
    print(figures)
    if args.write:
        write_section("cold_start", figures)


def _cpu(command: list[str]) -> float:
    child = subprocess.Popen(command, cwd=AFTER, stdout=subprocess.DEVNULL)
    _, _, usage = os.wait4(child.pid, 0)
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    main()
