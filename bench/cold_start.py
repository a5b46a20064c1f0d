"""Cold start of the quick CLI commands: CPU of `--version`, `list` and `show` (issue 24,
target 5: at most 0.5 s each, no litellm import).

    python -m bench.cold_start --before 298112d          # before and after, one run
    python -m bench.cold_start --before 298112d --write  # also into BENCHMARKS.md

`--before` is a commit (or a checkout's folder) of the code to compare with; the commands run
as a user runs them, `python -m groupchat_core ...` in a fresh process, from each checkout,
against the same store (GROUPCHAT_HOME in a temporary folder, with 3 recorded sim runs). CPU
is the child's user + system time (os.wait4), medians of `--reps` runs, before and after
alternating so both see the same load. Also counted: which heavy libraries each command loaded.
Measurement only: nothing here asserts on time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import _harness as h

AFTER = h.ROOT
HEAVY = ("litellm", "pandas", "sqlalchemy", "groupchat_core.sweeps")
PROBE = ("import runpy, sys, atexit, json\n"
         "heavy = json.loads(sys.argv.pop(1))\n"
         "atexit.register(lambda: print('LOADED ' + json.dumps([m for m in heavy "
         "if m in sys.modules]), file=sys.stderr))\n"
         "sys.argv[0] = 'groupchat_core'\n"
         "runpy.run_module('groupchat_core', run_name='__main__', alter_sys=True)\n")


def cpu_of(command: list[str], checkout: Path = AFTER, env: dict[str, str] | None = None) -> float:
    """User + system CPU seconds of `python COMMAND` run from `checkout`."""
    child = subprocess.Popen([sys.executable, *command], cwd=checkout, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{command} failed in {checkout} (exit {status})")
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
    args = h.options(__doc__, reps=5, before="required", write=True).parse_args()
    with tempfile.TemporaryDirectory() as folder, h.tree(args.before) as before:
        env, run_id = seeded_home(Path(folder))
        commands = {"--version": ["--version"], "list": ["list"], "show": ["show", run_id]}
        lines = ["| command | before: CPU s | after: CPU s | before loads | after loads |",
                 "|---|---:|---:|---|---|"]
        for name, argv in commands.items():
            cli = ["-m", "groupchat_core", *argv]
            cpu = h.alternate({tree: lambda cli=cli, root=root: cpu_of(cli, root, env)
                               for tree, root in (("before", before), ("after", AFTER))},
                              args.reps)
            loads = [", ".join(loaded_by(c, argv, env)) or "none" for c in (before, AFTER)]
            lines.append(h.row(f"`{name}`", f"{h.median(cpu['before']):.2f}",
                               f"{h.median(cpu['after']):.2f}", *loads))
        bare, package, storage = (h.median(cpu_of(["-c", code]) for _ in range(args.reps))
                                  for code in ("pass", "import groupchat_core",
                                               "import sqlalchemy"))
    figures = "\n".join(lines) + (
        f"\n\nFloors, same run (CPU s, medians of {args.reps}): a bare `python -c pass` "
        f"{bare:.2f}; `import groupchat_core` {package:.2f}; `import sqlalchemy` "
        f"{storage:.2f}.\n")
    print(figures)
    if args.write:
        h.write_section("cold_start", figures)


if __name__ == "__main__":
    main()
