"""False calls and power of the sweep tests, before and after issue 38. Measurement only.

    python -m bench.sweep_false_calls            # 200 null sweeps per row, a few minutes
    python -m bench.sweep_false_calls --quick    # 50

1. Null sweeps from relabelled pools: 400 recorded sim chats of one setting (3 sim agents,
   threshold 0.5, max_loops 12) dealt at random into a fake 4 x 2 grid (axes a, b: inert by
   construction), 5 chats per cell. Importance over 9 metrics x 2 axes (18 tests), and the
   Compare tab's browse of all 28 pairs of the 8 cells on `messages`: the share of sweeps with
   any call at p < 0.05, raw and after Holm (family-wise error; at most 5 % is the promise).
   Before: importance p from 999 shuffles; the Compare tab's verdict from the raw p.
2. Power: the six-parameter sim sweep (2 x 2 x 2 x 2 x 2 grid, every order of 3 agents, 2
   repeats; 54 rows): rows passing Holm with 999 shuffles (before) and with 200 per tested row
   (after), and the smallest p_holm.
3. Random search (examples/sweep-random.yaml, run with sims): eta squared of threshold and
   recency_penalty per metric, grouped by drawn value (before) and Spearman's rho^2 (after).
"""

from __future__ import annotations

import tempfile

import numpy as np
import pandas as pd

from bench import _harness as h
from groupchat_core.store import RunStore, dispose_engines
from groupchat_core.sweeps import (
    IMPORTANCE_METRICS,
    compare_pairs,
    factor_importance,
    holm,
    importance,
    load_sweep,
    parse_sweep,
    run_sweep,
    sweep_results,
)

ROOT = h.ROOT
AGENTS = [{"agent_name": n, "model_name": m} for n, m in (
    ("Optimist", "sim/eager"), ("Pessimist", "sim/balanced"), ("Realist", "sim/reserved"))]
ALPHA = 0.05


def _run(store: RunStore, data: dict[str, object]) -> pd.DataFrame:
    outcome = run_sweep(parse_sweep(data), store)
    return sweep_results(store, outcome.sweep_id)


def _before(frame: pd.DataFrame, params: list[str]) -> pd.DataFrame:
    """Importance as it was: each axis grouped by its values, 999 shuffles."""
    done = frame[frame["status"] == "finished"]
    rows = []
    for metric in IMPORTANCE_METRICS:
        values = pd.to_numeric(done[metric], errors="coerce")
        keep = values.notna()
        for param in params:
            stats = factor_importance(values[keep].tolist(), done.loc[keep, param],
                                      permutations=999, continuous=False)
            rows.append({"metric": metric, "parameter": param, **stats})
    table = pd.DataFrame(rows)
    table["p_holm"] = holm(list(table["p_value"]))
    return table


def null_sweeps(pool: pd.DataFrame, sweeps: int) -> dict[str, float]:
    rng = np.random.default_rng(38)
    counts = dict.fromkeys(("imp_raw", "imp_holm_before", "imp_holm_after", "cmp_raw",
                            "cmp_holm"), 0)
    for _ in range(sweeps):
        chats = pool.iloc[rng.permutation(len(pool))[:40]].reset_index(drop=True)
        chats = chats.assign(a=[i % 4 for i in range(40)], b=[(i // 4) % 2 for i in range(40)],
                             cell_id=[f"c{i % 8}" for i in range(40)])
        after = importance(chats, parameters=["a", "b"])
        before = _before(chats, ["a", "b"])
        counts["imp_raw"] += bool((after["p_value"] < ALPHA).any())
        counts["imp_holm_after"] += bool((after["p_holm"] < ALPHA).any())
        counts["imp_holm_before"] += bool((before["p_holm"] < ALPHA).any())
        pairs = compare_pairs(chats.drop(columns=["seed"], errors="ignore"), ["cell_id"],
                              "messages")
        counts["cmp_raw"] += bool((pairs["p_value"] < ALPHA).any())
        counts["cmp_holm"] += bool((pairs["p_holm"] < ALPHA).any())
    return {k: v / sweeps for k, v in counts.items()}


def power(store: RunStore) -> dict[str, object]:
    frame = _run(store, {
        "name": "six", "base": {"max_loops": 8, "agents": AGENTS},
        "grid": {"threshold": [0.2, 0.8], "recency_penalty": [0.0, 0.4],
                 "recency_window": [1, 3], "max_loops": [5, 10], "temperature": [0.2, 0.9],
                 "order": "all"}, "tasks": ["Q?"], "repeats": 2, "concurrency": 4})
    params = ["threshold", "recency_penalty", "recency_window", "max_loops", "temperature",
              "order"]
    after, before = importance(frame, parameters=params), _before(frame, params)
    return {"rows": len(after), "passed_before": int((before["p_holm"] < ALPHA).sum()),
            "passed_after": int((after["p_holm"] < ALPHA).sum()),
            "min_holm_before": float(before["p_holm"].min()),
            "min_holm_after": float(after["p_holm"].min()),
            "at_floor_before": int((before["p_value"] <= 0.001 + 1e-12).sum())}


def random_search(store: RunStore) -> pd.DataFrame:
    spec = load_sweep(ROOT / "examples" / "sweep-random.yaml")
    frame = sweep_results(store, run_sweep(spec, store).sweep_id)
    params = ["threshold", "recency_penalty"]
    before = _before(frame, params).set_index(["metric", "parameter"])["eta_squared"]
    after = importance(frame, parameters=params).set_index(["metric", "parameter"])
    rows = []
    for metric in ("messages", "lulled", "evenness", "gini"):
        rows.append({"metric": metric,
                     "before: threshold / penalty": f"{before[(metric, 'threshold')]:.3f} / "
                     f"{before[(metric, 'recency_penalty')]:.3f}",
                     "after: threshold / penalty (rho^2)":
                     f"{after.loc[(metric, 'threshold'), 'eta_squared']:.3f} / "
                     f"{after.loc[(metric, 'recency_penalty'), 'eta_squared']:.3f}",
                     "after p_holm": f"{after.loc[(metric, 'threshold'), 'p_holm']:.3g} / "
                     f"{after.loc[(metric, 'recency_penalty'), 'p_holm']:.3g}"})
    return pd.DataFrame(rows)


def main() -> None:
    args = h.options(__doc__, quick=True).parse_args()
    sweeps = 50 if args.quick else 200
    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore(f"sqlite:///{tmp}/false_calls.db")
        pool = _run(store, {"name": "pool", "base": {"max_loops": 12, "agents": AGENTS,
                                                    "threshold": 0.5},
                            "tasks": ["Plan the offsite."], "repeats": 400, "concurrency": 4})
        pool = pool[pool["status"] == "finished"]
        null = null_sweeps(pool, sweeps)
        strong = power(store)
        drawn = random_search(store)
        dispose_engines()
    print(f"1. Null sweeps ({sweeps}, relabelled pool of {len(pool)} sim chats): share with any "
          "call at p < 0.05")
    print(f"   importance (18 tests): raw {null['imp_raw']:.3f}; Holm before (999 shuffles) "
          f"{null['imp_holm_before']:.3f}; Holm after {null['imp_holm_after']:.3f}")
    print(f"   Compare tab (28 pairs, messages): raw p (before) {null['cmp_raw']:.3f}; Holm "
          f"across the pairs (after) {null['cmp_holm']:.3f}")
    print(f"2. Six-parameter sim sweep, {strong['rows']} rows: pass Holm before "
          f"{strong['passed_before']} (rows at the p floor 0.001: {strong['at_floor_before']}; "
          f"smallest p_holm {strong['min_holm_before']:.3g}), after {strong['passed_after']} "
          f"(smallest p_holm {strong['min_holm_after']:.3g})")
    print("3. Random search (examples/sweep-random.yaml, sims): eta squared")
    print(h.table(list(drawn.columns), list(drawn.itertuples(index=False))))


if __name__ == "__main__":
    main()
