"""Speaker dynamics from recorded bid logs: metrics, transitions, why-explanations, what-if.

    from groupchat_core.analysis import speaker_metrics, explain_turn, whatif_grid

Everything here reads DataFrames or records; nothing calls a model. Re-selection reuses the
engine's own `select_speaker`, so "what if" answers follow the same rules as a live run.
"""

from ._compare_runs import config_diff, flatten_config, rotation, top_bids
from ._distractors import DistractorTurns, distractor_turns, run_distractors
from ._metrics import (
    Counterfactual,
    RecordedTurn,
    SpeakerMetrics,
    agent_order,
    bid_outcome,
    bid_outcomes,
    counterfactual,
    explain_turn,
    gini,
    recorded_turns,
    reselect,
    speaker_metrics,
    speakers,
    transition_matrix,
)
from ._people import Agreement, selector_agreement
from ._whatif import (
    DEFAULT_PENALTIES,
    DEFAULT_THRESHOLDS,
    WHATIF_COLUMNS,
    whatif_grid,
    whatif_pivot,
    whatif_record,
    whatif_run,
)

__all__ = [
    "DEFAULT_PENALTIES",
    "DEFAULT_THRESHOLDS",
    "WHATIF_COLUMNS",
    "Agreement",
    "Counterfactual",
    "DistractorTurns",
    "RecordedTurn",
    "SpeakerMetrics",
    "agent_order",
    "bid_outcome",
    "bid_outcomes",
    "config_diff",
    "counterfactual",
    "distractor_turns",
    "explain_turn",
    "flatten_config",
    "gini",
    "recorded_turns",
    "reselect",
    "rotation",
    "run_distractors",
    "speaker_metrics",
    "selector_agreement",
    "speakers",
    "top_bids",
    "transition_matrix",
    "whatif_grid",
    "whatif_pivot",
    "whatif_record",
    "whatif_run",
]
