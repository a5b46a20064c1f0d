"""examples/notebook.ipynb runs top to bottom in a real Jupyter kernel (nbclient, ipykernel): a
sim chat, its bid log in pandas, a small sweep and its intervals, in a throwaway store; the run
record and the sweep outcome display as HTML, and the record gives its figures."""

from __future__ import annotations

import os

import nbclient
import nbformat

from tests.helpers import ROOT

NOTEBOOK = ROOT / "examples" / "notebook.ipynb"


def shown(cell: nbformat.NotebookNode) -> str:
    """What a code cell displayed: its printed text and its result's plain text."""
    parts = [o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in cell.outputs]
    return "".join(parts)


def test_the_example_notebook_executes_and_shows_the_chat_the_bids_and_the_sweep(tmp_path):
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not c.get("outputs") for c in notebook.cells if c.cell_type == "code")  # clean
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GROUPCHAT_BLOCK_REMOTE_CALLS": "1",
           "GROUPCHAT_HOME": str(tmp_path)}  # nothing reaches the network or a real store
    client = nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute(env=env)  # the kernel's environment; raises CellExecutionError on an error
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert all(o.output_type != "error" for c in code for o in c.outputs)
    texts = [shown(c) for c in code]
    assert "('Optimist', 'sim/balanced')" in texts[0]
    assert "Optimist:" in texts[1] or "Pessimist:" in texts[1] or "Realist:" in texts[1]
    assert "turn" in texts[2] and "adjusted" in texts[2]  # the bid log as a DataFrame
    assert {"Optimist", "Pessimist", "Realist"} <= set(texts[3].split())
    assert texts[5] == "('finished', 4, 4)"
    assert "threshold" in texts[6] and "lull_turn" in texts[6]
    assert "messages" in texts[7] and "ci_low" in texts[7]
    html = [o.data["text/html"] for o in code[8].outputs if "text/html" in o.get("data", {})]
    assert len(html) == 2 and "GroupChat run" in html[0] and "GroupChat sweep" in html[1]
    assert "simulated" in html[0] and "stop reason" in html[0]
    assert "notebook-thresholds" in html[1] and "4/4 done" in html[1]
    assert texts[8].endswith(
        "['bid_lines', 'bids_heatmap', 'transitions', 'turn_shares', 'winner_timeline']")
    assert not list(tmp_path.iterdir())  # the notebook's store is its own temp file
