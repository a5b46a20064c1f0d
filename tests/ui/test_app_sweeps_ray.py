"""The Sweeps page's "Run cells on" choice (this server or a Ray cluster): its default, the
one-line refusals (nothing answers, a malformed address, no Ray) with no sweep started, the
per-worker table, and one sweep from the page's form on a real local Ray cluster."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from streamlit.testing.v1 import AppTest

from groupchat_core import ConfigError
from groupchat_core.store import RunStore
from groupchat_core.sweeps import CellFinished, parse_sweep
from groupchat_ui.kit import jobs as job_registry
from groupchat_ui.sweeps import logic
from tests.helpers.app_helpers import (
    goto,
    new_app,
    open_tab,
    poll,
    session,
    small_grid,
    sweep_status,
)

MB = 2**20


@pytest.fixture
def at() -> Iterator[AppTest]:
    yield goto(new_app(), "sweeps")
    job_registry.registry().shutdown()


def four_cells(at: AppTest) -> None:
    """2 thresholds x 1 penalty x 1 window x 2 repeats = 4 sim cells of at most 6 turns."""
    small_grid(at, repeats=2, max_loops=6, penalties="0.0")
    at.number_input(key="sw_concurrency").set_value(2)
    at.run()
    assert not at.exception and not at.error, [e.value for e in (*at.exception, *at.error)]
    assert any("**4 cells**" in m.value for m in at.markdown)


def two_sim_spec(name: str, max_loops: int):
    return parse_sweep({"name": name, "base": {"max_loops": max_loops, "agents": [
        {"agent_name": n, "system_prompt": "Speak.", "model_name": "sim/balanced"}
        for n in ("A", "B")]}, "grid": {"threshold": [0.5]}, "tasks": ["t"]})


def test_without_ray_installed_the_page_names_the_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    registry = job_registry.JobRegistry()
    store = RunStore()
    spec = two_sim_spec("s", 3)
    try:
        with pytest.raises(ConfigError, match=r"pip install 'groupchat-lab\[ray\]'") as exc:
            logic.start_sweep(registry, store, "owner", spec, executor="ray")
        assert logic.page_words(str(exc.value)).startswith("a Ray cluster needs Ray, which is")
        assert registry.tasks_for("owner", "sweep") == []
        assert store.list_sweeps().empty
        with pytest.raises(ConfigError, match="'gpu' is not one of local, ray"):
            logic.start_sweep(registry, store, "owner", spec, executor="gpu")
    finally:
        registry.shutdown()


def finished(index: int, worker: str | None, status: str = "finished") -> CellFinished:
    return CellFinished(sweep_id="s", cell=f"c{index}", index=index, run_id=f"r{index}",
                        status=status, worker=worker, cells_done=index + 1, cells_total=9)


def test_the_worker_table_counts_cells_per_worker_and_keeps_labels_inert():
    hostile = "**host**<script>x</script>\x1b[31m/abcd1234/pid 7"
    events = [logic.RayState(None, "starting"), logic.RayState(None, "connected"),
              finished(0, "h/n1/pid 1"), finished(1, "h/n2/pid 2"), finished(2, "h/n1/pid 1"),
              finished(3, "h/n1/pid 1", status="cancelled"), finished(4, hostile),
              finished(5, "h/n2/pid 2", status="error")]
    table = logic.worker_table(events)
    assert list(table.columns) == ["worker", "finished", "not finished", "last cell",
                                   "last status"]
    rows = table.set_index("worker")
    assert rows.loc["h/n1/pid 1"].tolist() == [2, 1, 3, "cancelled"]
    assert rows.loc["h/n2/pid 2"].tolist() == [1, 1, 5, "error"]
    label = table["worker"].iloc[2]  # as sent: plain text in a table cell, minus the escape
    assert label == "**host**<script>x</script> [31m/abcd1234/pid 7"
    long = logic.worker_table([finished(0, "w" * 500)])
    assert len(long["worker"].iloc[0]) == logic.WORKER_LABEL_MAX
    assert logic.ray_state(events) == logic.RayState(None, "connected")
    assert "starting the cluster" in logic.RayState("10.0.0.5:6379", "starting").text()
    # a local sweep: no worker named, no table, no Ray state
    local = [finished(0, None), finished(1, None)]
    assert logic.worker_table(local).empty and logic.ray_state(local) is None


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A local Ray cluster's address: a head with no CPUs, two 1-CPU workers; no driver."""
    from ray.cluster_utils import Cluster

    small = {"object_store_memory": 100 * MB}
    made = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 0, "include_dashboard": False, **small})
    for _ in range(2):
        made.add_node(num_cpus=1, **small)
    made.wait_for_nodes()
    try:
        yield made.address
    finally:
        made.shutdown()


def test_a_bad_address_starts_nothing_and_a_sweep_started_on_the_page_runs_on_ray(
        at: AppTest, cluster):
    """The choice defaults to this server; nothing answering, a malformed address: one line
    each, nothing started; then the cluster's address: the sweep runs there and shows its
    workers."""
    import ray

    choice = at.radio(key="sw_executor")
    assert choice.value == "local" and choice.options == ["this server", "a Ray cluster"]
    assert at.text_input(key="sw_ray_address").disabled  # only for a Ray cluster
    four_cells(at)
    choice.set_value("ray").run()
    assert not at.text_input(key="sw_ray_address").disabled
    for address, said in (("127.0.0.1:1", "no Ray cluster answers at 127.0.0.1:1"),
                          ("nonsense", "the Ray address 'nonsense' is not host:port")):
        at.text_input(key="sw_ray_address").input(address).run()
        at.button(key="sw_start").click().run()
        assert not at.exception, [e.value for e in at.exception]
        shown = [e.value.replace("\\", "") for e in at.error]  # as read: unescaped
        assert len(shown) == 1 and said in shown[0], shown
        assert shown[0].startswith("Cannot start the sweep:") and "\n" not in shown[0]
        assert "Traceback" not in shown[0]
        assert "sweep status: idle" in sweep_status(at)
        assert session(at).sweep_jobs == []  # no job was started
    assert RunStore().list_sweeps().empty  # nor a sweep recorded
    at.text_input(key="sw_ray_address").input(cluster).run()
    at.button(key="sw_start").click().run()
    assert not at.error, [e.value for e in at.error]
    # Ray is one connection per process: a second Ray sweep meanwhile is refused, in one line
    with pytest.raises(ConfigError, match="a sweep on Ray already runs on this server"):
        logic.start_sweep(job_registry.registry(), RunStore(), session(at).owner,
                          two_sim_spec("second", 2), executor="ray", ray_address=cluster)
    poll(at, lambda a: sweep_status(a).startswith("sweep status: finished"),
         "the sweep on Ray to finish", shown=sweep_status)
    assert "4 / 4 cells finished" in sweep_status(at)
    # The Ray line is drawn before the status in a script run: wait for the line itself.
    poll(at, lambda a: any(c.value.startswith("cells ran on Ray") for c in a.caption),
         "the Ray line", shown=sweep_status)
    line = next(c.value for c in at.caption if c.value.startswith("cells ran on Ray"))
    assert cluster in line and "disconnected" in line  # ended: no longer "connected"
    workers = next(d.value for d in at.dataframe if "worker" in d.value.columns)
    assert len(workers) >= 1 and workers["finished"].sum() == 4
    assert workers["not finished"].sum() == 0
    assert all(w.count("/") == 2 and "pid " in w for w in workers["worker"])
    store = RunStore()
    sweep_id = at.selectbox(key="sw_pick").value
    runs = store.list_runs(sweep_id=sweep_id)
    assert len(runs) == 4 and set(runs["status"]) == {"finished"} and runs["cell"].is_unique
    claims = store.cell_claims(sweep_id)
    assert len(claims) == 4 and set(claims["state"]) == {"finished"}
    assert not ray.is_initialized()  # the executor was closed when the sweep ended
    # a reload (a new session, no live panel): Results still names the cluster and workers
    again = open_tab(goto(new_app(), "sweeps", sweep=sweep_id), "sw_results_tab", "Cells & runs")
    captions = [c.value for c in again.caption]
    assert any(c.startswith("cells ran on Ray") and "disconnected" in c for c in captions)
    assert "Ray workers: 1 worker(s) ran 4 finished cell(s)." in captions or any(
        c.startswith("Ray workers: ") and c.endswith("ran 4 finished cell(s).") for c in captions)
    assert any(d.value["finished"].sum() == 4 for d in again.dataframe
               if "worker" in d.value.columns)
