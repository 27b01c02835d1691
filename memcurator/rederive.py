"""The reproducibility check of incremental nights: derive the store's last night again from its log
alone and compare every table with the store's, row for row.

A night reuses the night before's work (memcurator/changes.py and the tables of night.SIDE_TABLES);
the tables must stay a pure function of the log, the curator decisions, the settings and as_of, as
the full derivation computes them. ``rederive_check`` copies the store's inputs (shards.SHARD_INPUTS:
the events and the curator decisions) into a scratch store in a folder beside the store, derives the
night there from nothing (no table to reuse, so every stage derives in full) with the settings the
night recorded (core.audit_settings; a chat judge's verdicts are taken from the store, see
``rederive_check``), and compares each
table of the core and mart schemas by multiset difference in DuckDB (the health history, kept across
nights, by its slice of that night) and each view by its definition. The store is read twice, to copy
its inputs and to compare, and not held between: a night that ran in between is reported, not
compared. The scratch folder is removed after (a killed check's, by the next check).
"""

from __future__ import annotations

from collections.abc import Iterator
import json
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from pathlib import Path

import duckdb

from memcurator import audit, night, store
from memcurator.config import CurationConfig
from memcurator.contradictions import JUDGED_PAIRS, judge_version
from memcurator.ingest import ensure_raw_tables
from memcurator.shards import HISTORY_TABLES, SHARD_INPUTS
from memcurator.tables import stored_columns

COMPARED_SCHEMAS = ("core", "mart")
SCRATCH = "rederive"  # the name of the scratch folders beside the store (store.spill_space)


@dataclass(frozen=True)
class TableComparison:
    """One table (or view) of the store against its re-derivation."""

    table: str
    stored_rows: int | None  # None: the store has no such table
    rederived_rows: int | None
    only_stored: int  # rows (counted with their copies) the store has and the re-derivation has not
    only_rederived: int
    same_columns: bool = True  # for a view: the same definition

    @property
    def identical(self) -> bool:
        return (self.same_columns and self.stored_rows == self.rederived_rows and not self.only_stored
                and not self.only_rederived)


@dataclass(frozen=True)
class RederiveReport:
    as_of: datetime
    events: int
    tables: list[TableComparison]
    reused_verdicts: int = 0  # a chat judge's verdicts taken from the store, not asked again

    @property
    def identical(self) -> bool:
        return all(t.identical for t in self.tables)

    @property
    def differing(self) -> list[str]:
        return [t.table for t in self.tables if not t.identical]

    def verdict(self) -> str:
        """One line for a person: the night, what was compared, and which tables differ."""
        differing = self.differing
        return (f"night as of {self.as_of:%Y-%m-%d %H:%M}, {self.events:,} events, {len(self.tables)} tables and views "
                "compared: " + (f"{len(differing)} differ: {', '.join(differing)}" if differing
                                else "every table identical to the full derivation")
                + (f" (stored verdicts of the chat judge taken as given: {self.reused_verdicts:,})"
                   if self.reused_verdicts else ""))

    def as_dict(self) -> dict:
        return {"as_of": self.as_of.isoformat(), "events": self.events, "identical": self.identical,
                "reused_verdicts": self.reused_verdicts,
                "tables": [asdict(t) | {"identical": t.identical} for t in self.tables]}


class StoreChanged(RuntimeError):
    """The store was written while the check derived its night again, or could not be read (a night
    holding it): check again."""


def last_night(conn: duckdb.DuckDBPyConnection) -> datetime | None:
    """The as_of of the last night derived in the store (None: none yet)."""
    if not store.table_exists(conn, "work", "refreshes"):
        return None
    return conn.execute("select max(as_of) from work.refreshes").fetchone()[0]


def _generations(conn: duckdb.DuckDBPyConnection, catalog: str) -> tuple[list[tuple], int]:
    """What tells one state of a store from another: each kept table's refresh generation (a night
    refreshes them all) and the size of the log."""
    refreshes = conn.execute(f"select table_name, generation from {catalog}.work.refreshes order by all").fetchall()
    return refreshes, conn.execute(f"select count(*) from {catalog}.raw.events").fetchone()[0]


def night_settings(conn: duckdb.DuckDBPyConnection) -> dict:
    """The curation settings the store's last night ran with (core.audit_settings), as a mapping; empty
    for a store whose nights did not record them (before the column was added)."""
    if "settings" not in {name for name, _ in stored_columns(conn, audit.AUDIT_SETTINGS)}:
        return {}
    row = conn.execute("select settings from core.audit_settings").fetchone()
    return json.loads(row[0]) if row else {}


def rederive_check(store_path: Path, as_of: datetime | None = None, cfg: CurationConfig | None = None,
                   overrides: dict | None = None, ask_judge: bool = False,
                   known: CurationConfig | None = None) -> RederiveReport:
    """Derive the store's night ``as_of`` (default: the last one it derived) again from its inputs alone,
    with ``cfg`` (default: the settings its last night ran with, as the store records them, else the
    defaults, a judge's endpoint whole from ``known``: CurationConfig.from_recorded; ``overrides``
    changes some of them), and compare every table; raises ValueError for a store without a derived
    night, StoreChanged when a night wrote the store meanwhile or holds it, SettingsError when the
    recorded settings cannot be used whole.

    Only the rules judge is a function of the texts: a model asked again need not answer the same, and
    the check would find the model's second thoughts, not the nights' doing. With a chat judge the
    store's verdicts of that judge (core.judged_pairs) go into the scratch store with the inputs, and
    the derivation reads them as a night reads its stored verdicts: only pairs without one (a request
    that failed, a pair the store has no verdict for) are asked. ``ask_judge`` asks the model for every
    pair again."""
    store_path = Path(store_path).resolve()
    if not store_path.exists():
        raise ValueError(f"{store_path}: no store there")
    with _reading(store_path):
        with store.connect(store_path, read_only=True) as conn:
            as_of = as_of or last_night(conn)
            # (an endpoint given in ``overrides`` is the one to ask: the record's masked one is not needed)
            cfg = cfg or CurationConfig.from_recorded(night_settings(conn) | (overrides or {}), known)
    if as_of is None:
        raise ValueError(f"{store_path}: the store has no derived night yet (run `memcurator run` first)")
    cfg = replace(cfg, **(overrides or {}))
    with store.spill_space(store_path, SCRATCH) as folder:
        scratch = folder / "rederived.duckdb"
        with store.connect(scratch) as conn:
            ensure_raw_tables(conn)
            _attach(conn, store_path)
            before = _generations(conn, "stored")
            for table in SHARD_INPUTS:
                conn.execute(f"insert into {table.qualified} select {table.select_list('q')} "
                             f"from stored.{table.qualified} as q")
            reused = _model_verdicts(conn, cfg) if cfg.judge_endpoint and not ask_judge else 0
            conn.execute("detach stored")
        # a connection of its own: connect sizes DuckDB's memory limit by the events the store holds
        with store.connect(scratch) as conn:
            night.derive_night(conn, as_of, cfg)
        # compared from a connection of its own too: DuckDB gives a view's definition as it was written
        # until the file is opened again, then as it reads it back (spelled otherwise: compared alike)
        with store.connect(scratch, read_only=True) as conn:
            events = conn.execute("select count(*) from raw.events").fetchone()[0]
            _attach(conn, store_path)
            if _generations(conn, "stored") != before:
                raise StoreChanged(f"{store_path} was written while its night was derived again: check again")
            tables = _compare(conn, as_of)
    return RederiveReport(as_of, events, tables, reused)


def _model_verdicts(conn: duckdb.DuckDBPyConnection, cfg: CurationConfig) -> int:
    """The stored verdicts of the chat judge ``cfg`` names, copied from the attached store (``stored``) into
    the scratch store's verdict cache; how many."""
    if not store.table_exists(conn, JUDGED_PAIRS.schema, JUDGED_PAIRS.name, database="stored"):
        return 0
    store.ensure_cache(conn, JUDGED_PAIRS)
    conn.execute(f"insert into {JUDGED_PAIRS.qualified} select {JUDGED_PAIRS.select_list('q')} "
                 f"from stored.{JUDGED_PAIRS.qualified} as q where judge = $j", {"j": judge_version(cfg)})
    return conn.execute(f"select count(*) from {JUDGED_PAIRS.qualified}").fetchone()[0]


@contextmanager
def _reading(store_path: Path) -> Iterator[None]:
    """The store opened for reading: a process writing it (a night) holds its lock."""
    try:
        yield
    except (duckdb.IOException, duckdb.ConnectionException) as error:
        raise StoreChanged(f"{store_path} cannot be read now (a night may be writing it): check again after it. "
                           f"DuckDB: {str(error).splitlines()[0]}") from error


def _attach(conn: duckdb.DuckDBPyConnection, store_path: Path) -> None:
    with _reading(store_path):
        conn.execute(f"attach '{store.path_literal(store_path)}' as stored (read_only)")


def _names(conn: duckdb.DuckDBPyConnection, catalog: str, kind: str) -> dict[str, str]:
    """The base tables (their columns) or the views (their definitions) of the compared schemas."""
    if kind == "table":
        rows = conn.execute("select schema_name || '.' || table_name, string_agg(column_name || ' ' || data_type, ', ' "
                            "order by column_index) from duckdb_columns() where database_name = $c and "
                            "schema_name in (select unnest($s)) and table_name in (select table_name from "
                            "duckdb_tables() where database_name = $c) group by all",
                            {"c": catalog, "s": list(COMPARED_SCHEMAS)}).fetchall()
    else:
        rows = conn.execute("select schema_name || '.' || view_name, sql from duckdb_views() where database_name = $c "
                            "and schema_name in (select unnest($s))", {"c": catalog, "s": list(COMPARED_SCHEMAS)}).fetchall()
    return dict(rows)


def _compare(conn: duckdb.DuckDBPyConnection, as_of: datetime) -> list[TableComparison]:
    here = conn.execute("select current_database()").fetchone()[0]
    stored, rederived = _names(conn, "stored", "table"), _names(conn, here, "table")
    out = []
    for name in sorted(set(stored) | set(rederived)):
        if name not in stored or name not in rederived or stored[name] != rederived[name]:
            count = lambda catalog, names: (conn.execute(f"select count(*) from {catalog}.{name}").fetchone()[0]  # noqa: E731
                                            if name in names else None)
            out.append(TableComparison(name, count("stored", stored), count(here, rederived), 0, 0, False))
            continue
        # a table kept across nights is compared by the night's slice
        where = f"where {HISTORY_TABLES[name]} = $as_of" if name in HISTORY_TABLES else ""
        params = {"as_of": as_of} if where else {}
        a, b = f"(select * from stored.{name} {where})", f"(select * from {here}.{name} {where})"
        out.append(TableComparison(name, *conn.execute(
            f"select (select count(*) from {a}), (select count(*) from {b}), "
            f"(select count(*) from ({a} except all {b})), (select count(*) from ({b} except all {a}))",
            params).fetchone()))
    stored_views, rederived_views = _names(conn, "stored", "view"), _names(conn, here, "view")
    for name in sorted(set(stored_views) | set(rederived_views)):
        out.append(TableComparison(name, None, None, 0, 0, stored_views.get(name) == rederived_views.get(name)))
    return out
