"""Cold start of the quick CLI commands: CPU of `--version`, `list` and `show` (issue 24,
target 5: at most 0.5 s each, no litellm import).

    python -m bench.cold_start --before 298112d          # before and after, one run
    python -m bench.cold_start --before 298112d --write  # also into BENCHMARKS.md

`--before` is a commit (or a checkout's folder) of the code to compare with; the commands run
as a user runs them, `python -m groupchat_core ...` in a fresh process, from each checkout,
against a store of its own (GROUPCHAT_HOME in a temporary folder, with 3 sim runs that
checkout recorded). CPU is the child's user + system time (os.wait4), medians of `--reps`
runs, before and after alternating so both see the same load. Also counted: which heavy
libraries each command loaded. Measurement only: nothing here asserts on time.
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
        raise SystemExit(f"{command} failed in {checkout} (exit "
                         f"{os.waitstatus_to_exitcode(status)})")
    return usage.ru_utime + usage.ru_stime


def loaded_by(checkout: Path, argv: list[str], env: dict[str, str]) -> list[str]:
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(HEAVY), *argv],
                          cwd=checkout, env=env, capture_output=True, text=True, check=False)
    lines = [x for x in done.stderr.splitlines() if x.startswith("LOADED ")]
    return json.loads(lines[-1][7:]) if lines else ["?"]


def seeded_home(folder: Path, checkout: Path) -> tuple[dict[str, str], str]:
    """A GROUPCHAT_HOME with 3 sim runs recorded by `checkout` (each tree its own: an older
    tree cannot open a store a newer one wrote); its environment and one run's short id."""
    env = {**os.environ, "GROUPCHAT_HOME": str(folder)}
    env.pop("GROUPCHAT_DB", None)
    for i in range(3):
        subprocess.run([sys.executable, "-m", "groupchat_core", "run", "examples/debate.yaml",
                        "--task", f"cold start {i}", "--quiet"], cwd=checkout, env=env,
                       check=True, capture_output=True)
    listed = subprocess.run([sys.executable, "-m", "groupchat_core", "list", "--json"],
                            cwd=checkout, env=env, check=True, capture_output=True, text=True)
    return env, str(json.loads(listed.stdout)[0]["run_id"])[:8]


def main() -> None:
    args = h.options(__doc__, reps=5, before="required", write=True).parse_args()
    with tempfile.TemporaryDirectory() as folder, h.tree(args.before) as before:
        trees = {"before": before, "after": AFTER}
        homes = {tree: seeded_home(Path(folder) / tree, root) for tree, root in trees.items()}
        lines = ["| command | before: CPU s | after: CPU s | before loads | after loads |",
                 "|---|---:|---:|---|---|"]
        for name in ("--version", "list", "show"):
            argv = {tree: [name, *([run_id] if name == "show" else [])]
                    for tree, (_, run_id) in homes.items()}
            cpu = h.alternate({tree: lambda tree=tree, root=root, argv=argv: cpu_of(
                ["-m", "groupchat_core", *argv[tree]], root, homes[tree][0])
                for tree, root in trees.items()}, args.reps)
            loads = [", ".join(loaded_by(root, argv[tree], homes[tree][0])) or "none"
                     for tree, root in trees.items()]
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
