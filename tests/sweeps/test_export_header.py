"""Issue 38 item 10: every sweep export (CSV on stdout or file, JSON, the page's) says how it was
made in `# ` header lines pandas reads past. Private imports: helpers with no public name."""

from __future__ import annotations

import io
import json
import platform
from importlib import metadata

import pandas as pd
import pytest

from groupchat_core.providers._sim import SIMS_VERSION
from groupchat_core.store import RunStore
from groupchat_core.sweeps import (
    aggregate,
    export_meta,
    frame_csv,
    parse_sweep,
    run_sweep,
    sweep_results,
)
from groupchat_core.sweeps._export import read_export_csv, spec_hash
from groupchat_core.sweeps._results import metrics_of
from tests.helpers.cli import run_cli
from tests.helpers.stores import release_store_engines
from tests.sweeps import PERSONAS as AGENTS

TASK = "Is plan #2 better? Say so, then give the sum 2+3."
TABLES = {"cells": [], "long": [], "intervals": [], "importance": [], "accuracy": [],
          "compare": ["--a", "threshold=0.0", "--b", "threshold=1.0"]}


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """Thresholds 0 (chats run to max_loops) and 1 (every chat lulls at once: no variation,
    so its groups carry a note), 5 repeats of one scored task whose prompt holds a `#`."""
    path = tmp_path_factory.mktemp("header") / "h.db"
    store = RunStore(f"sqlite:///{path}")
    spec = parse_sweep({"name": "header", "base": {"max_loops": 4, "agents": AGENTS},
                        "grid": {"threshold": [0.0, 1.0]},
                        "tasks": [{"id": "t1", "prompt": TASK, "answer": "5",
                                   "scorer": "numeric"}],
                        "repeats": 5, "concurrency": 2})
    outcome = run_sweep(spec, store)
    assert outcome.status == "finished"
    yield store, f"sqlite:///{path}", outcome.sweep_id
    release_store_engines()


@pytest.fixture
def db(sweep, monkeypatch):
    """The recorded sweep's store and id, its database the CLI's."""
    store, url, sweep_id = sweep
    monkeypatch.setenv("GROUPCHAT_DB", url)
    return store, sweep_id


def check_header(facts: dict[str, str], meta: dict, table: str) -> None:
    """The header's facts are the export's own: parsed back, they equal export_meta's."""
    assert facts["groupchat_lab_export"] == table
    assert facts["sweep_id"] == meta["sweep"]["sweep_id"]
    assert json.loads(facts["spec"]) == json.loads(json.dumps(meta["spec"]))
    assert facts["spec_sha256"] == spec_hash(json.loads(facts["spec"]))
    assert json.loads(facts["seeds"]) == meta["seeds"]
    assert float(facts["level"]) == 0.95
    assert facts["simulated"] == "true"
    assert facts["app_version"] == meta["written_by"]["app_version"]
    assert int(facts["sweep_schema"]) == meta["written_by"]["sweep_schema"]
    assert int(facts["sims_version"]) == SIMS_VERSION
    assert facts["python"] == platform.python_version()
    libraries = json.loads(facts["libraries"])
    assert libraries["numpy"] == metadata.version("numpy")
    assert libraries["pandas"] == metadata.version("pandas")


@pytest.mark.parametrize("table", list(TABLES))
def test_every_table_on_stdout_opens_with_a_header_pandas_reads_past(db, table, capsys):
    store, sweep_id = db
    code, out, err = run_cli(capsys, "sweep", "export", sweep_id, "--table", table,
                             *TABLES[table])
    assert code == 0, err
    assert out.startswith("# groupchat_lab_export: ")
    frame, facts = read_export_csv(io.StringIO(out))
    check_header(facts, export_meta(store, sweep_id), table)
    plain = pd.read_csv(io.StringIO(out), comment="#")  # as a reader without our code would
    pd.testing.assert_frame_equal(plain, frame)
    assert len(frame) > 0 and "note" in " ".join(frame.columns)
    if table in ("cells", "long"):
        assert set(frame["task"]) == {TASK}  # the `#` inside a cell is no comment


def test_a_file_export_carries_the_same_header_and_its_meta_file(db, capsys, tmp_path):
    store, sweep_id = db
    target = tmp_path / "cells.csv"
    code, _, err = run_cli(capsys, "sweep", "export", sweep_id, "-o", str(target))
    assert code == 0, err
    frame, facts = read_export_csv(str(target))
    check_header(facts, export_meta(store, sweep_id), "cells")
    side = json.loads((tmp_path / "cells.csv.meta.json").read_text())
    assert side["written_by"]["sims_version"] == SIMS_VERSION
    assert side["spec_sha256"] == facts["spec_sha256"]
    assert len(frame) == 10


def test_the_wide_cells_csv_has_each_metric_s_note_of_its_group(db, capsys):
    store, sweep_id = db
    _, out, _ = run_cli(capsys, "sweep", "export", sweep_id)
    cells = pd.read_csv(io.StringIO(out), comment="#")
    results = sweep_results(store, sweep_id)
    for metric in metrics_of(results):
        assert f"{metric}_note" in cells.columns
    notes = aggregate(results).set_index(["threshold", "metric"])["note"]
    lulled = cells[cells["threshold"] == 1.0]
    expected = notes.loc[(1.0, "messages")]
    assert expected and (lulled["messages_note"] == expected).all()  # no variation: said


def test_json_and_the_page_s_csv_carry_the_versions(db, capsys):
    store, sweep_id = db
    _, out, _ = run_cli(capsys, "sweep", "export", sweep_id, "--table", "intervals",
                        "--format", "json")
    meta = json.loads(out)["meta"]
    assert meta["written_by"]["sims_version"] == SIMS_VERSION
    assert meta["written_by"]["python"] == platform.python_version()
    assert "numpy" in meta["written_by"]["libraries"]
    page = frame_csv(sweep_results(store, sweep_id), export_meta(store, sweep_id), "results")
    frame, facts = read_export_csv(io.StringIO(page))
    check_header(facts, export_meta(store, sweep_id), "results")
    assert len(frame) == 10


def test_a_plain_frame_csv_keeps_its_old_shape():
    """No meta: no header, minimal quoting (the bid log and other tables as before)."""
    text = frame_csv(pd.DataFrame({"a": ["x"], "b": [1]}))
    assert text == "a,b\nx,1\n"
