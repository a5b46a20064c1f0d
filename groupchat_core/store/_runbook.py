"""Reading and editing recorded runs (a RunStore mixin): list, resolve, load, the bid/turn/
message logs as frames, importing a whole run, deleting it and setting its owner, notes and
tags. Connections and recording stay in _runstore.py."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Select, delete, func, literal, select, update

from .._errors import StoreError
from .._records import Bid, RunRecord, cost_totals
from . import _reader as reader
from ._base import StoreBase
from ._connect import safe_url
from ._ids import MATCHES_READ, exact_first, like_prefix, resolve_id
from ._library import check_owner
from ._schema import RUN_STATUSES, run_agents, runs, turns
from ._writer import insert_imported, run_row

if TYPE_CHECKING:
    import pandas as pd

    from .._config import ChatSpec

LIST_COLUMNS = (
    "run_id", "name", "status", "stop_reason", "task", "agents", "threshold", "recency_penalty",
    "recency_window", "max_loops", "total_calls", "total_prompt_tokens",
    "total_completion_tokens", "total_cost_usd", "unpriced_bids", "started_at", "ended_at",
    "sweep_id", "cell",
    "tags", "notes", "error", "owner", "owner_name",
    "task_id", "answer", "correct", "score", "scorer",  # a scored task's outcome (v9)
)
RunIds = str | Sequence[str] | None


class RunBook(StoreBase):
    """The runs part of RunStore."""

    # --- reading --------------------------------------------------------------------------

    def list_runs(self, *, status: str | None = None, agent: str | None = None,
                  since: str | datetime | None = None, sweep_id: str | None = None,
                  tag: str | None = None, limit: int | None = None) -> pd.DataFrame:
        """Runs, newest first, as a DataFrame (plus a `turns` count and `models`, a tuple of
        the agents' model names in list order, which says whether a run was simulated:
        groupchat_core.providers._sim.run_is_simulated); all filters combine."""
        import pandas as pd

        rows = self.list_run_rows(status=status, agent=agent, since=since, sweep_id=sweep_id,
                                  tag=tag, limit=limit)
        # models as tuples, so the frame stays hashable (pandas, the dashboard's st.cache_data)
        return pd.DataFrame.from_records(rows, columns=[*LIST_COLUMNS, "turns", "models"])

    def list_run_rows(self, *, status: str | None = None, agent: str | None = None,
                      since: str | datetime | None = None, sweep_id: str | None = None,
                      tag: str | None = None, limit: int | None = None
                      ) -> list[dict[str, Any]]:
        """list_runs as plain dicts (same columns, same order), without pandas: the CLI's
        `list` starts in a fraction of the time (bench/cold_start.py)."""
        query = _filtered(status, agent, since, sweep_id, tag)
        if limit is not None:
            query = query.limit(max(int(limit), 0))
        with self.read("list runs") as conn:
            rows = conn.execute(query).all()
            models = reader.run_models(conn, [r[0] for r in rows])
        names = [*LIST_COLUMNS, "turns"]
        return [{**dict(zip(names, row, strict=True)),
                 "models": tuple(models.get(row[0], ()))} for row in rows]

    def run_ids(self) -> list[str]:
        with self.read("list runs") as conn:
            return list(conn.execute(select(runs.c.run_id)).scalars())

    def resolve(self, prefix: str) -> str:
        """The full id of the one run `prefix` names: its full id or a unique prefix of at
        least MIN_PREFIX characters (ids are long to type). UnknownId (a StoreError) naming the
        closest ids otherwise: never another run."""
        query = select(runs.c.run_id).where(
            runs.c.run_id.like(like_prefix(prefix), escape="\\")).order_by(
            exact_first(runs.c.run_id, prefix)).limit(MATCHES_READ)
        with self.read("find a run") as conn:
            found = [str(i) for i in conn.execute(query).scalars()] if prefix else []
        return resolve_id("run", prefix, found, self._newest_run_ids,
                          f" in {safe_url(self.url)}")

    def _newest_run_ids(self) -> list[str]:
        with self.read("list runs") as conn:
            return [str(i) for i in conn.execute(
                select(runs.c.run_id).order_by(runs.c.started_at.desc())).scalars()]

    def run_info(self, run_id: str) -> dict[str, Any]:
        """The run's row: status, stop reason, timings, totals, spec (as a dict), tags, ..."""
        with self.read("read a run") as conn:
            row = reader.run_row(conn, run_id)
            if row is None:
                raise StoreError(f"no run {run_id!r} in {safe_url(self.url)}")
            info = dict(row)
            info["turns"] = conn.execute(select(func.count()).select_from(turns)
                                         .where(turns.c.run_id == run_id)).scalar()
        info["spec"] = reader.spec_of(info.pop("spec_json"))
        return info

    def spec(self, run_id: str) -> ChatSpec:
        """The run's chat spec, ready for GroupChat.from_spec (to re-run it)."""
        from .._config import parse_spec

        return parse_spec(self.run_info(run_id)["spec"], f"spec of run {run_id}")

    def load_run(self, run_id: str) -> RunRecord:
        """The run's RunRecord, exactly as the engine produced it (so far, if unfinished)."""
        with self.read("read a run") as conn:
            row = reader.run_row(conn, run_id)
            if row is None:
                raise StoreError(f"no run {run_id!r} in {safe_url(self.url)}")
            return reader.record_from(conn, row)

    def bids(self, run_ids: RunIds = None) -> pd.DataFrame:
        """Bid log of one run, several, or all (None), as a DataFrame."""
        return self._log("bids", run_ids)

    def turns(self, run_ids: RunIds = None) -> pd.DataFrame:
        """Turn rows (winner, margins, reasons) of one run, several, or all, as a DataFrame."""
        return self._log("turns", run_ids)

    def messages(self, run_ids: RunIds = None) -> pd.DataFrame:
        """Posted messages of one run, several, or all, as a DataFrame."""
        return self._log("messages", run_ids)

    def message_turns(self, run_id: str) -> list[int]:
        """The turn each message of the run was posted on (0 for the task), in posting order."""
        with self.read("read a run") as conn:
            return reader.message_turns(conn, run_id)

    def _log(self, kind: str, run_ids: RunIds) -> pd.DataFrame:
        ids = [run_ids] if isinstance(run_ids, str) else run_ids
        with self.read(f"read {kind}") as conn:
            return reader.log_frame(conn, kind, None if ids is None else list(ids))

    # --- importing ------------------------------------------------------------------------

    def import_run(self, run: Mapping[str, Any], spec: dict[str, Any], *,
                   message_rows: Sequence[Mapping[str, Any]],
                   bid_rows: Sequence[Mapping[str, Any]] = (),
                   turn_rows: Sequence[Mapping[str, Any]] = ()) -> None:
        """Add a whole run made elsewhere (a bundle) in one transaction: all of it or nothing.

        `run`: run_id, task, started_at and the other stored run columns (name, status,
        stop_reason, error, ended_at, totals, notes), with `tags` as a list. `spec`:
        ChatSpec.to_data(). Each message row carries the `turn` it was posted on; bid and turn
        rows are Bid and Turn fields. A run id already in the store is refused (StoreError).
        """
        run_id = run["run_id"]
        row = run_row(run_id, run["task"], spec, run["started_at"])
        row.update({k: v for k, v in run.items() if k not in _NOT_IMPORTED},
                   tags=",".join(run.get("tags") or ()))
        known, row["unpriced_bids"] = cost_totals([Bid.model_validate(b) for b in bid_rows])
        if known is None:  # calls were made and none could be priced: unknown, not 0
            row["total_cost_usd"] = None
        with self.write(f"import run {run_id}") as conn:
            if conn.execute(select(runs.c.run_id).where(runs.c.run_id == run_id)).first():
                raise StoreError(f"run {run_id} is already in the store; delete it first to "
                                 "import it again")
            insert_imported(conn, row, spec["agents"], [dict(m) for m in message_rows],
                            [dict(b) for b in bid_rows], [dict(t) for t in turn_rows])

    # --- editing --------------------------------------------------------------------------

    def delete_run(self, run_id: str) -> bool:
        """Delete a run and its log (foreign keys cascade); True if it existed."""
        with self.write("delete a run") as conn:
            return bool(conn.execute(delete(runs).where(runs.c.run_id == run_id)).rowcount)

    def set_owner(self, run_id: str, owner: str | None, owner_name: str | None = None) -> None:
        """Say who a run belongs to (e.g. whoever imported it: bundles carry no owner)."""
        self._update_run(run_id, "set the owner", owner=check_owner(owner),
                         owner_name=check_owner(owner_name))

    def set_notes(self, run_id: str, notes: str) -> None:
        self._update_run(run_id, "set notes", notes=notes)

    def set_tags(self, run_id: str, tags: Sequence[str]) -> None:
        """Replace a run's tags (short labels without commas)."""
        clean = [_check_tag(t) for t in tags]
        self._update_run(run_id, "set tags", tags=",".join(dict.fromkeys(clean)))

    def _update_run(self, run_id: str, what: str, **values: Any) -> None:
        with self.write(what) as conn:
            if not conn.execute(update(runs).where(runs.c.run_id == run_id)
                                .values(**values)).rowcount:
                raise StoreError(f"no run {run_id!r} in {safe_url(self.url)}")

# Never taken from an imported run's fields: who owns a run is the importer's to say
# (set_owner), not the file's (a bundle could otherwise make a run look like anyone's).
_NOT_IMPORTED = frozenset({"tags", "run_id", "task", "owner", "owner_name"})
def _check_tag(tag: str) -> str:
    tag = tag.strip() if isinstance(tag, str) else ""
    if not tag or "," in tag or len(tag) > 50:
        raise StoreError(f"a tag must be 1-50 characters without commas, got {tag!r}")
    return tag


def _since(value: str | datetime) -> str:
    """An ISO-8601 UTC bound comparable with stored times (naive values are taken as UTC)."""
    try:
        moment = value if isinstance(value, datetime) else datetime.fromisoformat(value)
    except ValueError:
        raise StoreError(f"since must be an ISO-8601 date or time, got {value!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat()


def _filtered(status: str | None, agent: str | None, since: str | datetime | None,
              sweep_id: str | None, tag: str | None) -> Select[Any]:
    count = select(func.count()).where(turns.c.run_id == runs.c.run_id).scalar_subquery()
    query = select(*(runs.c[c] for c in LIST_COLUMNS), count.label("turns")).order_by(
        runs.c.started_at.desc(), runs.c.run_id)
    if status is not None:
        if status not in RUN_STATUSES:
            raise StoreError(f"status must be one of {', '.join(RUN_STATUSES)}; got {status!r}")
        query = query.where(runs.c.status == status)
    if agent is not None:
        query = query.where(runs.c.run_id.in_(
            select(run_agents.c.run_id).where(run_agents.c.agent == agent)))
    if since is not None:
        query = query.where(runs.c.started_at >= _since(since))
    if sweep_id is not None:
        query = query.where(runs.c.sweep_id == sweep_id)
    if tag is not None:
        pattern = "%," + _check_tag(tag).replace("\\", "\\\\").replace("%", "\\%").replace(
            "_", "\\_") + ",%"
        query = query.where((literal(",") + runs.c.tags + literal(",")).like(pattern, escape="\\"))
    return query
