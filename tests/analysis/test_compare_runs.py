"""Two runs side by side (groupchat_core.analysis: config_diff, flatten_config, top_bids,
rotation): every figure worked out by hand from frames built here."""

from __future__ import annotations

import pandas as pd
import pytest

from groupchat_core.analysis import config_diff, flatten_config, rotation, top_bids

A = {"schema_version": 3, "threshold": 0.5, "max_loops": 8, "stream_bids": False,
     "agents": [{"agent_name": "Ann", "model_name": "sim/eager", "temperature": 0.7},
                {"agent_name": "Ben", "model_name": "sim/reserved", "temperature": 0.7}]}
B = {"schema_version": 3, "threshold": 0.6, "max_loops": 8, "stream_bids": False,
     "agents": [{"agent_name": "Ben", "model_name": "sim/reserved", "temperature": 0.2},
                {"agent_name": "Ann", "model_name": "sim/eager", "temperature": 0.7}]}


def test_agents_are_matched_by_name_not_position():
    flat = flatten_config(A)
    assert flat["agents Ann.model_name"] == "sim/eager"
    assert "schema_version" not in flat
    diff = config_diff(A, B, only_differs=True)
    assert list(diff["setting"]) == ["agents Ben.temperature", "threshold"]
    assert list(diff["A"]) == ["0.7", "0.5"] and list(diff["B"]) == ["0.2", "0.6"]


def test_all_settings_side_by_side_and_a_missing_one_reads_not_set():
    table = config_diff(A, {**B, "seed": 4})
    assert len(table) == len(flatten_config(A)) + 1
    row = table.set_index("setting").loc["seed"]
    assert row["A"] == "(not set)" and row["B"] == "4" and row["differs"]
    assert not table.set_index("setting").loc["max_loops", "differs"]


def test_top_bid_and_rotation_per_turn():
    bids = pd.DataFrame({"turn": [1, 1, 2, 2], "agent": ["Ann", "Ben", "Ann", "Ben"],
                         "score": [0.9, 0.2, 0.4, 0.6], "adjusted": [0.9, 0.2, 0.1, 0.6]})
    top = top_bids(bids)
    assert list(top["top_agent"]) == ["Ann", "Ben"]
    assert list(top["top_adjusted"]) == [0.9, 0.6]
    assert list(top["mean_score"]) == pytest.approx([0.55, 0.5])
    turns = pd.DataFrame({"turn": [1, 2, 3, 4], "winner": ["Ann", None, "Ann", "Ben"]})
    rot = rotation(turns)
    assert list(rot["distinct_so_far"]) == [1, 1, 1, 2]
    assert rot["speaker"].isna().tolist() == [False, True, False, False]
