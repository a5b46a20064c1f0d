"""What every benchmark shares, so each script in bench/ is only its scenario.

    from bench import _harness as h

    args = h.options(__doc__, reps=5, before="optional", write=True).parse_args(argv)
    times = h.repeat(lambda: work(), args.reps, warmup=1)          # seconds of each call
    h.median(times); h.quartiles(times); h.quantile(times, 0.9)
    found = h.alternate({"a": run_a, "b": run_b}, rounds=9)       # {"a": [...], "b": [...]}
    with h.tree(args.before) as old:                              # a commit or a folder
        ...                                                       # run the old code from `old`
    with h.ServerProcess(respond) as server:                      # a fake server, own process
        server.ask("latency", 0.2)
    print(h.table(["what", "s"], [["load", 0.12]]))               # one way to print a result
    h.write_section("store", text)                                # --write: between markers

- `options(doc, ...)`: the argparse set-up; `--help` prints the script's docstring, which is
  its method. Only the options a script asks for exist: `--reps N` (its default), `--quick`
  (a smoke run), `--before REV|DIR` ("required" or "optional"), `--write`.
- `repeat(fn, n, warmup=0, clock=time.perf_counter)`: `clock` seconds of each of `n` calls
  after `warmup` untimed ones (`clock=time.process_time` for CPU). `wall_and_cpu(fn)`: both.
- `alternate(variants, rounds)`: each round runs every variant once, the order rotated by one
  each round (two variants: AB, BA, AB, ...), so a machine's drifting load hits all alike;
  returns every variant's results in round order (the i-th of each are one round: pairs).
- `at_commit(rev)`: the tree of a commit (`git archive`, so the shared .git gains no worktree
  to clean up), extracted in a temporary folder and byte-compiled; `tree(x)`: a folder as it
  is, else `at_commit`. Code runs from there as `python -m ...` with that folder as its
  working directory (the current folder comes first on sys.path), with this tree's
  virtualenv. `rerun(root, "bench.NAME", argv)`: this benchmark, in a fresh process, on the
  code of `root` (for a scenario that must own its process, as a memory figure does).
- `ServerProcess(setup, *args, server=FakeOpenAIServer)`: a scripted OpenAI-compatible server
  started in a spawned process (its CPU never counts against the client), `setup(server,
  *args)` run there (a module-level function); `.base_url`; `.ask(command, arg)`: "latency"
  (seconds), "messages" (the last n requests' messages), "writes" (the streamed writes so far,
  then the log cleared), "setup" (a new args tuple: reset, then setup again).
- `machine(**extra)`: one line naming the machine (cores, CPU, Python, OS, load average).
- `row(*cells)`, `table(header, rows)`: Markdown; `write_section(name, text, path)`: replaces
  the text between `<!-- bench.NAME:begin/end -->` in BENCHMARKS.md (or `path`), re-read just
  before writing, so benchmarks run one after another never overwrite each other.

Nothing here asserts on time: a benchmark measures and prints; the figure goes in BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, TypeVar

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS_MD = ROOT / "BENCHMARKS.md"
T = TypeVar("T")
K = TypeVar("K")


def options(doc: str | None, *, reps: int | None = None, quick: bool = False,
            before: Literal["required", "optional"] | None = None,
            write: bool = False) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    if reps is not None:
        parser.add_argument("--reps", type=int, default=reps, help=f"repetitions ({reps})")
    if quick:
        parser.add_argument("--quick", action="store_true", help="a smoke run")
    if before is not None:
        parser.add_argument("--before", required=before == "required", metavar="REV|DIR",
                            help="a commit or a checkout to compare with, alternating")
    if write:
        parser.add_argument("--write", action="store_true", help="rewrite the figures' block")
    return parser


def repeat(fn: Callable[[], object], n: int, *, warmup: int = 0,
           clock: Callable[[], float] = time.perf_counter) -> list[float]:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(n):
        start = clock()
        fn()
        times.append(clock() - start)
    return times


def wall_and_cpu(fn: Callable[[], object]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def median(values: Iterable[float]) -> float:
    return float(statistics.median(values))


def quartiles(values: Sequence[float]) -> tuple[float, float, float]:
    """(first quartile, median, third quartile)."""
    if len(values) < 2:
        return values[0], values[0], values[0]
    q1, q2, q3 = statistics.quantiles(values, n=4)
    return q1, q2, q3


def quantile(values: Iterable[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def alternate(variants: Mapping[K, Callable[[], T]], rounds: int) -> dict[K, list[T]]:
    names = list(variants)
    found: dict[K, list[T]] = {name: [] for name in names}
    for i in range(rounds):
        k = i % len(names)
        for name in names[k:] + names[:k]:
            found[name].append(variants[name]())
    return found


@contextmanager
def at_commit(rev: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="bench-at-") as folder:
        archive = Path(folder) / "tree.tar"
        subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(archive), rev], check=True)
        with tarfile.open(archive) as tar:
            tar.extractall(Path(folder) / "tree", filter="data")
        # byte-compiled as a used checkout is, so its first runs (or every run, where the
        # machine sets PYTHONDONTWRITEBYTECODE) do not pay the compilation this tree does not
        code = [str(p) for p in (Path(folder) / "tree").iterdir()
                if p.name.startswith(("groupchat_", "app_pages", "streamlit_app"))]
        subprocess.run([sys.executable, "-m", "compileall", "-q", *code], check=True,
                       stdout=subprocess.DEVNULL)
        yield Path(folder) / "tree"


@contextmanager
def tree(rev_or_dir: str) -> Iterator[Path]:
    if Path(rev_or_dir).is_dir():
        yield Path(rev_or_dir).resolve()
    else:
        with at_commit(rev_or_dir) as path:
            yield path


def rerun(root: Path, module: str, argv: Sequence[str]) -> None:
    """Run the benchmark `module` (bench.NAME) of this tree in a fresh process on the code of
    `root`: the bench package from here, everything else from there."""
    with tempfile.TemporaryDirectory(prefix="bench-rerun-") as folder:
        shutil.copytree(ROOT / "bench", Path(folder) / "bench",
                        ignore=shutil.ignore_patterns("__pycache__"))
        subprocess.run([sys.executable, "-m", module, *argv], cwd=folder, check=True,
                       env={**os.environ, "PYTHONPATH": str(root)})


def _serve(conn: Any, make: Callable[[], Any], setup: Callable[..., None] | None,
           args: tuple[Any, ...]) -> None:
    """The child of ServerProcess: starts the server, answers commands until "stop"."""
    server = make().start()
    if setup is not None:
        setup(server, *args)
    conn.send(server.base_url)
    while True:
        command, arg = conn.recv()
        if command == "latency":
            server.default_latency = arg
        elif command == "messages":
            arg = [r.body.get("messages") for r in server.requests[-arg:]]
        elif command in ("writes", "setup"):
            if command == "writes":
                arg = server.stream_writes
            else:
                args = arg
            server.reset()
            if setup is not None:
                setup(server, *args)
        else:
            break
        conn.send(arg)
    server.stop()


class ServerProcess:
    def __init__(self, setup: Callable[..., None] | None, *args: Any,
                 server: Callable[[], Any] | None = None) -> None:
        if server is None:
            from groupchat_core.testing import FakeOpenAIServer
            server = FakeOpenAIServer
        self._child = (server, setup, args)

    def __enter__(self) -> ServerProcess:
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child, *self._child), daemon=True)
        self._proc.start()
        self.base_url: str = self._conn.recv()
        return self

    def ask(self, command: str, arg: Any = None) -> Any:
        self._conn.send((command, arg))
        return self._conn.recv()

    def __exit__(self, *exc: object) -> None:
        self._conn.send(("stop", None))
        self._proc.join(5)
        if self._proc.is_alive():
            self._proc.terminate()


def machine(**extra: str) -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in
                Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor()) \
        if Path("/proc/cpuinfo").exists() else platform.processor()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    facts = [f"{cores} cores ({cpu})", f"Python {platform.python_version()}",
             platform.platform(), *(f"{k} {v}" for k, v in extra.items()),
             f"load average {os.getloadavg()[0]:.1f}"]
    return ", ".join(facts)


def row(*cells: object) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A Markdown table: the first column left-aligned, the others right-aligned."""
    lines = [row(*header), "|---|" + "---:|" * (len(header) - 1)]
    return "\n".join([*lines, *(row(*r) for r in rows)])


def write_section(name: str, text: str, path: Path = BENCHMARKS_MD) -> None:
    begin, end = f"<!-- bench.{name}:begin -->", f"<!-- bench.{name}:end -->"
    doc = path.read_text(encoding="utf-8")
    block = f"{begin}\n{text.rstrip()}\n{end}"
    if begin in doc and end in doc:
        head, rest = doc.split(begin, 1)
        doc = head + block + rest.split(end, 1)[1]
    else:
        doc = doc.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(doc, encoding="utf-8")
