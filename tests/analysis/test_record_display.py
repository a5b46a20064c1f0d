"""Records that show themselves in Jupyter (issue 23 item 3): a run record's and a sweep
outcome's `_repr_html_` is a compact summary with every text escaped (model output is
untrusted), and `record.figures()` gives the Analysis charts, or one line without plotly.

Private imports (any_simulated): a unit tested as such, which no public module exports."""

from __future__ import annotations

import subprocess
import sys

import plotly.graph_objects as go
import pytest

import groupchat_core.analysis
from groupchat_core import Agent, GroupChat
from groupchat_core.store import RunStore
from groupchat_core.sweeps import SweepOutcome
from groupchat_core.sweeps._spec import any_simulated  # private: no public name needs it
from tests.helpers import ROOT
from tests.helpers.scripted_trio import trio_record

HOSTILE = '<img src="http://evil.example/x.png" onerror="alert(1)">'


def sim_record():
    chat = GroupChat(agents=[Agent(agent_name=f"A{HOSTILE}", model_name="sim/eager"),
                             Agent(agent_name="B", model_name="sim/contrarian")], max_loops=4)
    chat.run(f"Adopt it? {HOSTILE}")
    assert chat.last_run is not None
    return chat.last_run


def test_a_record_is_a_compact_escaped_summary_marked_simulated():
    record = sim_record()
    html = record._repr_html_()
    assert "<img" not in html and "<script" not in html
    assert "Adopt it? &lt;img src=&quot;http://evil.example/x.png&quot;" in html
    assert "simulated" in html
    spoke = [t.winner for t in record.turns]
    for label in ("task", "stop reason", "messages", "turns", "speakers", "totals"):
        assert f">{label}</th>" in html
    assert f">{record.stop_reason}</td>" in html and f">{len(record.turns)}</td>" in html
    assert f"B {spoke.count('B')} (" in html
    assert f"{record.total_calls} calls" in html


def test_a_run_without_sims_carries_no_simulated_mark():
    html = trio_record()._repr_html_()  # scripted bids: no sim took part
    assert "simulated" not in html and "Alice 1 (50%), Bob 1 (50%)" in html


def test_figures_are_the_analysis_charts():
    record = trio_record()
    figures = record.figures()
    assert sorted(figures) == ["bid_lines", "bids_heatmap", "transitions", "turn_shares",
                               "winner_timeline"]
    assert all(isinstance(f, go.Figure) for f in figures.values())
    heatmap = figures["bids_heatmap"].data[0]
    assert list(heatmap.y) == ["Alice", "Bob", "Cara"]


def test_figures_without_plotly_is_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "plotly", None)  # as if not installed
    monkeypatch.delitem(sys.modules, "groupchat_core.analysis.charts", raising=False)
    monkeypatch.delattr(groupchat_core.analysis, "charts", raising=False)  # not imported yet
    with pytest.raises(ImportError) as raised:
        trio_record().figures()
    assert str(raised.value) == "figures need plotly: pip install 'groupchat-lab[dashboard]'"


def test_a_sweep_outcome_is_an_escaped_summary():
    outcome = SweepOutcome(sweep_id="s1", name=f"grid {HOSTILE}", status="finished",
                           cells_total=4, cells_done=4, cells_run=4, calls=24, bids=24)
    html = outcome._repr_html_()
    assert "<img" not in html and "grid &lt;img" in html
    assert "4/4 done" in html and "24 model calls" in html and ">finished</td>" in html
    assert "simulated" not in html


def test_a_sweep_of_sims_says_so_in_its_summary_and_a_model_axis_decides():
    from groupchat_core.sweeps import parse_sweep, run_sweep

    agents = [{"agent_name": n, "system_prompt": "p", "model_name": "sim/balanced"} for n in "AB"]
    data = {"base": {"max_loops": 2, "agents": agents}, "grid": {"threshold": [0.5]},
            "tasks": ["Q?"]}
    outcome = run_sweep(parse_sweep(data), RunStore())
    assert outcome.simulated and "simulated: offline sim/ agents" in outcome._repr_html_()
    real = parse_sweep({**data, "grid": {"model": ["gpt-4o-mini"]}})
    assert not any_simulated(real)  # every cell's agents take the axis's model
    mixed = parse_sweep({**data, "grid": {"model": ["gpt-4o-mini", "sim/eager"]}})
    assert any_simulated(mixed)


def test_the_engine_and_its_analysis_import_no_plotly():
    code = ("import sys, groupchat_core, groupchat_core.analysis, groupchat_core.sweeps; "
            "sys.exit('plotly' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=False).returncode == 0
