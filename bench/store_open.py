"""Opening a SQLite store: what the integrity check on open costs (issue 19, row 8).

    python -m bench.store_open            # a ~70 MB store, about a minute on 2 cores
    python -m bench.store_open --quick    # a ~10 MB store (smoke run)
    python -m bench.store_open --write    # also rewrite the figures between the markers

The store is filled with real recorded runs (scripted 16-agent chats, copied by re-importing
their bundles under new ids) up to the target size. Then, each in a fresh process-level state
(engines disposed, schema checks forgotten), median of 5: `PRAGMA quick_check` alone (what
RunStore runs once per file per process), `PRAGMA integrity_check` alone (for comparison, not
used), and `RunStore(url)` on a new engine (the check and the connection; the process still
remembers that the schema is current). The page cache is warm (the file was just written):
a cold disk adds its read time to the check. Measurement only: nothing here asserts on time.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
import uuid
from contextlib import closing
from pathlib import Path

from bench import _harness as h
from bench.store import scripted_chat
from groupchat_core import bundle_json, import_bundle
from groupchat_core.store import RunStore, dispose_engines


def build(path: Path, target_mb: float) -> int:
    """A store of about `target_mb` MB of real runs; how many runs it holds."""
    url = f"sqlite:///{path}"
    store = RunStore(url)
    chat = scripted_chat(16, 200, seed=7)
    store.attach(chat)
    chat.run("Fill the store.")
    store.flush()
    bundle = json.loads(bundle_json(store, chat.last_run.run_id))
    count = 1
    while path.stat().st_size < target_mb * 1e6:
        copy = json.loads(json.dumps(bundle))
        copy["run"]["run_id"] = uuid.uuid4().hex
        import_bundle(store, copy)
        count += 1
    dispose_engines()
    return count


def pragma(path: Path, name: str) -> None:
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        conn.execute("PRAGMA mmap_size=268435456")  # as _sqlite_check.py does
        assert conn.execute(f"PRAGMA {name}").fetchall()[0][0] == "ok"


def open_store(url: str) -> None:
    dispose_engines()  # a new engine: the file is checked again (the schema check is not)
    RunStore(url)


def main(argv: list[str] | None = None) -> None:
    args = h.options(__doc__, reps=5, quick=True, write=True).parse_args(argv)
    target = 10 if args.quick else 70
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "big.db"
        runs = build(path, target)
        size = path.stat().st_size / 1e6
        quick, full, whole = (h.median(h.repeat(fn, args.reps)) for fn in (
            lambda: pragma(path, "quick_check"), lambda: pragma(path, "integrity_check"),
            lambda: open_store(f"sqlite:///{path}")))
    figures = (
        f"A {size:.0f} MB SQLite store ({runs} runs of 200 turns x 16 agents), warm page "
        f"cache, median of {args.reps}:\n\n"
        "| what | time |\n|---|---|\n"
        f"| `PRAGMA quick_check` (run once per file per process when a store opens) "
        f"| {quick * 1000:.0f} ms |\n"
        f"| `PRAGMA integrity_check` (not used: compares every index too) "
        f"| {full * 1000:.0f} ms |\n"
        f"| `RunStore(url)` on a new engine, check included | {whole * 1000:.0f} ms |\n")
    print(figures)
    if args.write:
        h.write_section("store_open", figures)


if __name__ == "__main__":
    main()
