"""Coverage study of the sweep intervals (issue 21): how often each 95 % interval holds the true
mean at the repeat counts sweeps use. Measurement only: nothing here asserts.

    python -m bench.interval_coverage            # 1,000 samples per row, a few minutes on 2 cores
    python -m bench.interval_coverage --quick    # 200 samples per row
    python -m bench.interval_coverage --write    # also rewrite the table in docs/statistics.md

Populations (true mean known): Beta(2, 5) (bounded, mildly skewed), Beta(0.5, 5) (bounded, very
skewed), a capped count (5 + Geometric(0.12), at most 11: the messages of chats that often hit
max_loops, mass at the bound), LogNormal(0, 1) (unbounded, skewed: like cost), and
Bernoulli(0.15) for the Wilson interval of rates. Methods: the shipped studentized bootstrap cut
to the feasible range (`studentized_mean`), the old percentile bootstrap, BCa and Student t, all
from groupchat_core.sweeps._intervals with the sweeps' 2,000 resamples. Samples whose values all
agree get no interval from the studentized method ("no variation"): the table gives their share
and computes coverage over the samples that got one. Width is the mean width over the
population's feasible range (unbounded: raw units).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np

from groupchat_core.sweeps import (
    Interval,
    bca_mean,
    bootstrap_mean,
    studentized_mean,
    t_interval,
    wilson,
)

DOC = Path(__file__).resolve().parents[1] / "docs" / "statistics.md"
NS = (3, 5, 10, 30)
SEED = 20261202


def _capped(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.minimum(5 + rng.geometric(0.12, n), 11).astype(float)


def _capped_mean() -> float:
    p = 0.12
    # E[min(5 + G, 11)] with G ~ Geometric(p) on 1, 2, ...: sum of P(value >= v)
    return 5 + sum((1 - p) ** (k - 1) for k in range(1, 7))


POPULATIONS: dict[str, tuple[Callable[[np.random.Generator, int], np.ndarray], float,
                             float | None, float | None]] = {
    "Beta(2, 5)": (lambda r, n: r.beta(2, 5, n), 2 / 7, 0.0, 1.0),
    "Beta(0.5, 5)": (lambda r, n: r.beta(0.5, 5, n), 0.5 / 5.5, 0.0, 1.0),
    "capped count (max 11)": (_capped, _capped_mean(), 0.0, 11.0),
    "LogNormal(0, 1)": (lambda r, n: r.lognormal(0, 1, n), math.exp(0.5), 0.0, None),
}


def _methods(low: float | None, high: float | None) -> dict[str, Callable[[list[float], int],
                                                                           Interval]]:
    return {
        "bootstrap-t (shipped)": lambda x, s: studentized_mean(x, low=low, high=high, seed=s),
        "percentile (old)": lambda x, s: bootstrap_mean(x, seed=s),
        "BCa": lambda x, s: bca_mean(x, seed=s),
        "t": lambda x, s: t_interval(x, floor=low, ceiling=high),
    }


def study(reps: int) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for name, (draw, truth, low, high) in POPULATIONS.items():
        for n in NS:
            rng = np.random.default_rng(SEED + n)
            samples = [draw(rng, n).tolist() for _ in range(reps)]
            flat = sum(1 for x in samples if max(x) == min(x))
            for method, make in _methods(low, high).items():
                hits = given = 0
                width = 0.0
                for i, x in enumerate(samples):
                    interval = make(x, SEED + i)
                    if math.isnan(interval.low):
                        continue
                    given += 1
                    hits += interval.low <= truth <= interval.high
                    width += interval.high - interval.low
                scale = (high - low) if high is not None and low is not None else 1.0
                rows.append({"population": name, "n": n, "method": method,
                             "coverage": hits / given if given else math.nan,
                             "width": width / given / scale if given else math.nan,
                             "no_interval": 1 - given / reps, "all_equal": flat / reps})
    rng = np.random.default_rng(SEED)
    for n in NS:
        hits = 0
        for _ in range(reps):
            k = int(rng.binomial(n, 0.15))
            interval = wilson(k, n)
            hits += interval.low <= 0.15 <= interval.high
        rows.append({"population": "Bernoulli(0.15)", "n": n, "method": "wilson (shipped)",
                     "coverage": hits / reps, "width": math.nan, "no_interval": 0.0,
                     "all_equal": math.nan})
    return rows


def table(rows: list[dict[str, object]], reps: int) -> str:
    def cell(value: object, spec: str) -> str:
        return "–" if isinstance(value, float) and math.isnan(value) else format(value, spec)

    lines = [f"Coverage of 95 % intervals of the mean, {reps:,} samples per row "
             "(`python -m bench.interval_coverage`); width as a share of the feasible range "
             "(LogNormal: raw units); 'no interval': samples that got none (all values "
             "equal; unbounded: too few values to bound it); coverage is over the others.", "",
             "| population | method | n = 3 | n = 5 | n = 10 | n = 30 | width at n = 5 | "
             "no interval at n = 3 |", "|---|---|---|---|---|---|---|---|"]
    keys = list(dict.fromkeys((str(r["population"]), str(r["method"])) for r in rows))
    for population, method in keys:
        mine = {int(str(r["n"])): r for r in rows
                if r["population"] == population and r["method"] == method}
        covers = " | ".join(cell(mine[n]["coverage"], ".3f") for n in NS)
        lines.append(f"| {population} | {method} | {covers} | {cell(mine[5]['width'], '.2f')} "
                     f"| {cell(mine[3]['no_interval'], '.0%')} |")
    return "\n".join(lines) + "\n"


def write_doc(text: str, path: Path = DOC) -> None:
    begin, end = "<!-- bench.interval_coverage:begin -->", "<!-- bench.interval_coverage:end -->"
    doc = path.read_text()
    head, rest = doc.split(begin, 1)
    path.write_text(head + begin + "\n" + text + end + rest.split(end, 1)[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 samples per row")
    parser.add_argument("--reps", type=int, default=None, help="samples per row")
    parser.add_argument("--write", action="store_true", help="rewrite docs/statistics.md")
    args = parser.parse_args()
    reps = args.reps or (200 if args.quick else 1000)
    text = table(study(reps), reps)
    print(text)
    if args.write:
        write_doc(text)


if __name__ == "__main__":
    main()
