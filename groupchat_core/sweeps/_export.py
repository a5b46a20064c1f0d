"""Self-describing sweep exports: what a reader needs to reproduce and cite the statistics.

Why: an export without its confidence level, resample counts, seeds, spec and models cannot be
checked, and a table of simulated chats must not pass for one of real models (issue 21). Every
export (CLI `sweep export`, the Sweeps page's downloads) carries `export_meta`: the spec, every
seed (the base seed, each repeat's seed, `sample_seed`), the statistics' settings (confidence,
bootstrap resamples and seed, permutation counts and seeds, the multiple-comparison adjustments),
the models of every agent per cell, a `simulated` flag (true when any agent of any cell is a
`sim/` model, including sims reached through the `model` or `agent_models` axis) and a methods
paragraph, versioned (METHODS_VERSION), that a paper can cite.

Formats: the wide CSV (one row per cell, its group's intervals and note beside it), a tidy long
frame (one row per cell and metric, `long_frame`) and Parquet of either (`parquet_bytes`: the
metadata rides in the file's key-value metadata under `groupchat_lab`). Every CSV, on standard
output or in a file, opens with a commented header (`export_csv`): lines starting with `# `
that carry the spec and its hash, the seeds, the confidence level, `simulated`, the app, sweep
schema and sims versions, and the Python and library versions, so a CSV piped on its own still
says how it was made; `pandas.read_csv(path, comment="#")` reads the table past it (text cells
are quoted, so a `#` inside one is kept) and `read_export_csv` returns both.
"""

from __future__ import annotations

import hashlib
import io
import json
import platform
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from .._jsonable import plain
from .._version import app_version
from ..exports._tables import HEADER_PREFIX, frame_csv
from ..providers._sim import SIMS_VERSION
from . import _compare, _importance
from ._intervals import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, CONFIDENCE, SD_FLOOR, STUDENTIZED
from ._multiple import SHOWN
from ._natures import CACHE_METRICS, MIN_N_BOUNDED, MIN_N_INTERVAL, MIN_N_UNBOUNDED
from ._plan import stored_spec
from ._results import METRICS
from ._spec import SWEEP_SCHEMA_VERSION, any_simulated, cell_models

if TYPE_CHECKING:
    from ..store import RunStore

# Bump when the methods paragraph or a method it describes changes (a paper cites this).
METHODS_VERSION = "groupchat-lab-sweep-methods/3"
META_KEY = b"groupchat_lab"
# Constant per export, repeated on every CSV row so a CSV alone says how it was made.
ROW_FACTS = ("confidence", "bootstrap_resamples", "bootstrap_seed", "methods_version")
# The libraries whose versions can move the numbers (statistics, frames, the stored specs).
LIBRARIES = ("numpy", "pandas", "scipy", "pydantic", "sqlalchemy", "litellm", "pyarrow")


def statistics_settings() -> dict[str, Any]:
    """Every setting the statistics use: confidence, resamples, permutations and their seeds."""
    return {
        "confidence": CONFIDENCE,
        "intervals": {"rates": "wilson", "others": STUDENTIZED,
                      "bootstrap_resamples": BOOTSTRAP_RESAMPLES,
                      "bootstrap_seed": BOOTSTRAP_SEED, "cut_to": "feasible range",
                      "sd_floor": SD_FLOOR, "no_interval_below_n": MIN_N_INTERVAL,
                      "binary_score": "wilson",
                      "coverage_from_n": {"bounded": MIN_N_BOUNDED,
                                          "unbounded": MIN_N_UNBOUNDED}},
        "importance": {"test": f"{_importance.ANOVA} (grid axes); {_importance.SPEARMAN} "
                               "(continuous axes)",
                       "permutations_per_tested_row": _importance.FAMILY_SHUFFLES,
                       "min_permutations": _importance.MIN_PERMUTATIONS,
                       "analytic_p_past_shuffled_values": _importance.WORK,
                       "seed": _importance.SEED, "max_levels": _importance.MAX_LEVELS,
                       "min_per_level": _importance.MIN_PER_LEVEL,
                       "left_out_metrics": list(CACHE_METRICS)},
        "comparisons": {"exact_splits": _compare.EXACT_SPLITS,
                        "permutations": _compare.PERMUTATIONS,
                        "min_permutations": _compare.MIN_PERMUTATIONS,
                        "seed": _compare.SEED, "alpha": _compare.ALPHA,
                        "paired": "sign-flip test when both cells share (task, seed)",
                        "not_tested": list(CACHE_METRICS)},
        "multiple_comparisons": {"shown": SHOWN, "also": "benjamini-hochberg"},
    }


def export_meta(store: RunStore, sweep_id: str) -> dict[str, Any]:
    """The facts that make an export reproducible and citable (see the module docstring)."""
    from ._results import sweep_summary

    sweep_id, spec = stored_spec(store, sweep_id)
    summary = sweep_summary(store, sweep_id)
    models: dict[str, dict[str, str]] = {}
    for cell in spec.cells():
        chosen = cell_models(spec, cell)
        models[cell.key] = {n: chosen[n] for n in spec.cell_agents(cell)}
    simulated = any_simulated(spec)
    meta: dict[str, Any] = {
        "sweep": summary,
        "spec": spec.to_data(),
        "seeds": {"base_seed": spec.base.seed,
                  "repeat_seeds": [spec.base.seed + r for r in range(spec.repeats)],
                  "sample_seed": spec.base.seed if spec.sample_seed is None
                  else spec.sample_seed,
                  "sample_seed_set": spec.sample_seed is not None},
        "statistics": statistics_settings(),
        "models": models,
        "simulated": simulated,
        "written_by": written_by(),
    }
    meta["spec_sha256"] = spec_hash(meta["spec"])
    meta["methods"] = {"version": METHODS_VERSION, "text": methods_paragraph(meta)}
    return meta


def written_by() -> dict[str, Any]:
    """The code behind an export: app, sweep schema and sims versions, Python and libraries
    (the sims and the libraries changed numbers between app versions, so each is recorded)."""
    return {"app_version": app_version(), "sweep_schema": SWEEP_SCHEMA_VERSION,
            "sims_version": SIMS_VERSION, "python": platform.python_version(),
            "libraries": library_versions()}


def library_versions() -> dict[str, str]:
    """Installed versions of LIBRARIES (from their metadata; a missing one is left out)."""
    found: dict[str, str] = {}
    for name in LIBRARIES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def spec_hash(spec: dict[str, Any]) -> str:
    """sha256 of the spec's canonical JSON: two exports of one spec carry the same hash."""
    text = json.dumps(plain(spec), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def export_csv(frame: pd.DataFrame, meta: dict[str, Any], table: str) -> str:
    """A table as the lab's CSV export: the commented header, then the table (frame_csv)."""
    return frame_csv(frame, meta=meta, table=table)


def read_export_csv(source: str | io.StringIO) -> tuple[pd.DataFrame, dict[str, str]]:
    """A CSV export read back: the table (as pandas.read_csv(..., comment="#") reads it) and
    its header's facts as text, by key. Accepts a path or a text buffer."""
    text = source.getvalue() if isinstance(source, io.StringIO) else \
        Path(source).read_text(encoding="utf-8")
    facts: dict[str, str] = {}
    for line in text.splitlines():
        if not line.startswith(HEADER_PREFIX):
            break
        key, _, value = line[len(HEADER_PREFIX):].partition(": ")
        facts[key] = value
    return pd.read_csv(io.StringIO(text), comment="#"), facts


def methods_paragraph(meta: dict[str, Any]) -> str:
    """A methods paragraph for a paper, generated from the export's own facts."""
    spec, stats, seeds = meta["spec"], meta["statistics"], meta["seeds"]
    ivals, imp, cmp = stats["intervals"], stats["importance"], stats["comparisons"]
    cells = meta["sweep"].get("cells_total")
    sims = ("Some or all agents were simulated (sim/ models), not language models. "
            if meta["simulated"] else "")
    return (
        f"We ran a parameter sweep of {cells} cells with GroupChat Lab "
        f"{meta['written_by']['app_version']} ({spec.get('repeats', 1)} repeats per parameter "
        f"combination and task; repeat r used seed {seeds['base_seed']} + r; sampled axes used "
        f"seed {seeds['sample_seed']}). {sims}Per combination we report {stats['confidence']:.0%}"
        " confidence intervals: Wilson score intervals for rates and, for every other metric, a "
        f"studentized (bootstrap-t) bootstrap of the mean ({ivals['bootstrap_resamples']:,} "
        f"resamples, seed {ivals['bootstrap_seed']}, each resample's standard deviation floored "
        f"at {ivals['sd_floor']:g} of the sample's) cut to the metric's feasible range; a 0/1 "
        "score got the Wilson interval. Below "
        f"{ivals['no_interval_below_n']} repeats, or where the interval would have been the "
        "metric's whole feasible range, no interval was reported; coverage and width per "
        "metric and repeat count were measured in a simulation study (GroupChat Lab, "
        "the statistics guide); intervals from fewer than "
        f"{ivals['coverage_from_n']['bounded']} repeats (bounded metrics) or "
        f"{ivals['coverage_from_n']['unbounded']} (unbounded ones) are flagged as possibly "
        "under-covering. Combinations whose repeats "
        "all agreed are reported as having no variation, without an interval. Parameter "
        "importance is a one-way decomposition of variance (eta and omega squared) for grid "
        "axes and Spearman's rank correlation for continuously sampled axes, each with a "
        f"seeded permutation p-value ({imp['permutations_per_tested_row']} shuffles per tested "
        f"row of the table, at least {imp['min_permutations']}, seed {imp['seed']}, so that "
        "Holm's correction can reject; the F test's or the t approximation's p where a sweep "
        "was too large to shuffle); levels with "
        f"fewer than {imp['min_per_level']} chats were left out, and metrics that measure the "
        "bid cache were shown but not tested. Two cells were compared with an exact or seeded "
        f"permutation test of the difference in means ({cmp['permutations']:,} shuffles, seed "
        f"{cmp['seed']}), a sign-flip test on per-seed differences when the cells shared their "
        "seeds; effect sizes are Cliff's delta (Feng-Cliff interval) and Cohen's d "
        "(Hedges-Olkin interval). p-values are adjusted across the tested rows of a table by "
        "Holm's method (Benjamini-Hochberg also given). "
        f"[{METHODS_VERSION}]")


def with_row_facts(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with the export's constant facts as columns (so a CSV alone carries them)."""
    return frame.assign(confidence=CONFIDENCE, bootstrap_resamples=BOOTSTRAP_RESAMPLES,
                        bootstrap_seed=BOOTSTRAP_SEED, methods_version=METHODS_VERSION)


def long_frame(cells: pd.DataFrame, intervals: pd.DataFrame) -> pd.DataFrame:
    """Tidy: one row per cell and metric, with the cell's parameters, seed, models and
    `simulated`, the value, and its group's interval (n, mean, ci_low, ci_high, method, note)."""
    by = list(intervals.columns[:list(intervals.columns).index("metric")])
    metrics = [m for m in METRICS if m in cells]
    ids = [c for c in cells.columns if c not in metrics and not c.startswith(tuple(
        f"{m}_" for m in METRICS))]
    long = cells[ids + metrics].melt(id_vars=ids, value_vars=metrics, var_name="metric",
                                     value_name="value")
    group = intervals[[*by, "metric", "n", "mean", "ci_low", "ci_high", "range_low",
                       "range_high", "interval_method", "coverage_from_n", "note"]]
    group = group.rename(columns={"n": "group_n", "mean": "group_mean"})
    long = long.merge(group, on=[*by, "metric"], how="left")
    order = {m: i for i, m in enumerate(metrics)}
    long["_order"] = long["metric"].map(order)
    long = long.sort_values(["index", "_order"], kind="stable").drop(columns="_order")
    long["value"] = pd.to_numeric(long["value"], errors="coerce").astype(float)
    return with_row_facts(long.reset_index(drop=True))


def parquet_bytes(frame: pd.DataFrame, meta: dict[str, Any]) -> bytes:
    """The frame as Parquet (pyarrow), the export's metadata as JSON in the file's schema."""
    try:
        import pyarrow as pa  # type: ignore[import-untyped]
        import pyarrow.parquet as pq  # type: ignore[import-untyped]
    except ImportError:  # an engine-only install: pyarrow is the [parquet] extra
        from .._errors import ConfigError

        raise ConfigError("Parquet exports need pyarrow: pip install 'groupchat-lab[parquet]' "
                          "(or export --format csv or json)") from None

    table = pa.Table.from_pandas(_parquet_safe(frame), preserve_index=False)
    existing = table.schema.metadata or {}
    table = table.replace_schema_metadata({**existing, META_KEY: json.dumps(plain(meta))})
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def _parquet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """Mixed-type object columns (labels next to None) as strings, so pyarrow takes them."""
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object:
            kinds = {type(v) for v in out[column] if v is not None and v == v}
            if len(kinds) > 1 or (kinds and not kinds <= {str, bool}):
                out[column] = [None if v is None or v != v else str(v) for v in out[column]]
    return out


def read_parquet_meta(data: bytes) -> dict[str, Any]:
    """The export metadata stored in a Parquet export (for readers and tests)."""
    import pyarrow.parquet as pq

    schema = pq.read_schema(io.BytesIO(data))
    raw = (schema.metadata or {}).get(META_KEY)
    if raw is None:
        raise ValueError("not a GroupChat Lab sweep export: no groupchat_lab metadata")
    loaded: dict[str, Any] = json.loads(raw)
    return loaded
