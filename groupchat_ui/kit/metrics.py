"""Speaker metrics as cards (label, value, help, note): what Analysis shows and Runs compares.

Why pure and shared: the same numbers appear on the Analysis page and in the Runs page's
side-by-side comparison, and they are easy to get subtly wrong and easy to test as data.
"""

from __future__ import annotations

import math

from groupchat_core.analysis import SpeakerMetrics

Card = tuple[str, str, str, str | None]  # label, value, help, a short note under the value

# Layout only (never applied to model output): on a phone-width screen Streamlit stacks every
# column, so nine metric cards took ~1,700 px before the first chart. Cards inside a container
# keyed `cards_*` become a compact three-column grid there, tabs get tighter, and the charts'
# hover toolbar (it covered an axis label) is hidden. 640 px is where Streamlit stacks columns.
PHONE_CSS = """<style>
@media (max-width: 640px) {
  [class*="st-key-cards_"] { display: grid !important; gap: 0.4rem !important;
    grid-template-columns: repeat(3, minmax(0, 1fr)) !important; }
  [class*="st-key-cards_"] div:has([data-testid="stMetric"]) { display: contents !important; }
  [class*="st-key-cards_"] [data-testid="stColumn"]:not(:has([data-testid="stMetric"])) {
    display: none !important; }
  [class*="st-key-cards_"] [data-testid="stMetric"] { padding: 0.3rem 0.45rem !important;
    min-width: 0; min-height: 0 !important; height: auto !important; gap: 0 !important; }
  [class*="st-key-cards_"] [data-testid="stMetric"] > * { padding: 0.1rem 0 !important; }
  [class*="st-key-cards_"] [data-testid="stMetricLabel"] { min-height: 0 !important; }
  [class*="st-key-cards_"] [data-testid="stMetricLabel"] * { font-size: 0.72rem !important;
    white-space: normal !important; overflow-wrap: anywhere; line-height: 1.2 !important; }
  [class*="st-key-cards_"] [data-testid="stMetricLabel"] [data-testid^="stTooltip"] {
    display: none !important; }
  [class*="st-key-cards_"] [data-testid="stMetricValue"] { font-size: 1.15rem !important;
    line-height: 1.3 !important; }
  [class*="st-key-cards_"] [data-testid="stMetricDelta"] { font-size: 0.62rem !important;
    padding: 0 0.3rem !important; }
  [data-testid="stMainBlockContainer"] { padding-top: 3rem !important; }
  [data-testid="stMainBlockContainer"] h1 { font-size: 2rem !important;
    padding-top: 0.5rem !important; }
  [data-testid="stTabs"] [role="tablist"] { gap: 0.6rem !important; }
  [data-testid="stTabs"] [role="tab"] p { font-size: 0.875rem !important; }
  [data-testid="stElementContainer"]:has(.js-plotly-plot) [data-testid="stElementToolbar"] {
    display: none !important; }
}
</style>"""


def _fmt(value: float | None, spec: str = ".2f") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return format(value, spec)


def metric_cards(m: SpeakerMetrics) -> list[Card]:
    """(label, value, help, note) for every speaker metric the Analysis page shows."""
    rate = m.penalty_changed_rate
    return [
        ("Turns", str(m.turns), "Turns played, including a final lull.", m.stop_reason),
        ("Lull turn", "none" if m.lull_turn is None else str(m.lull_turn),
         "First turn on which no bid cleared the threshold.", None),
        ("Speaker entropy", _fmt(m.entropy_bits), "Shannon entropy of turn shares, in bits.",
         "bits"),
        ("Evenness", _fmt(m.evenness), "Entropy over its maximum: 1 means perfectly even.",
         None),
        ("Gini", _fmt(m.gini), "Gini of turn shares: 0 equal shares; near 1 one agent "
         "dominates.", None),
        ("Longest monologue", str(m.longest_monologue),
         "Most consecutive messages by one agent.", m.longest_monologue_agent),
        ("Mean margin", _fmt(m.mean_margin, ".3f"),
         "Winner's adjusted bid minus the runner-up's, averaged over turns with both.", None),
        ("Penalty flips", str(m.penalty_changed_winner),
         "Turns where the recency penalty changed who spoke.",
         None if rate is None else f"{rate:.0%} of turns with a winner"),
        ("Failed bids", str(m.failed_bids), "Bids whose model call failed.", None),
    ]
