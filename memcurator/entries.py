"""Entries and usage: the log folded into one row per entry, as of an injected date.

Every function here is a pure function of ``raw.events`` and ``as_of`` (an exclusive upper bound
on event time): events at or after ``as_of`` are invisible, so a past night can be rebuilt as it
stood.
"""

from __future__ import annotations

import hashlib
from datetime import date, datetime, time, timedelta

import duckdb

from memcurator import sql
from memcurator.store import ensure_table, replace_table
from memcurator.tables import CHECKS, ENTRIES, ENTRY_USAGE, MEMORY_WRITES, RECALL_RESULTS, RUNS, Table


def as_of_for_night(night: date | str) -> datetime:
    """The nightly run for day D sees every event before D+1 00:00 UTC."""
    day = date.fromisoformat(night) if isinstance(night, str) else night
    return datetime.combine(day + timedelta(days=1), time.min)


def _build(conn: duckdb.DuckDBPyConnection, table: Table, query_name: str, as_of: datetime) -> int:
    return replace_table(conn, table, sql.load(query_name), {"as_of": as_of})


def build_memory_writes(conn, as_of: datetime, cfg=None) -> int:
    """Flattens each memory.write payload; derives the entry id from the content when not given.

    A write is flattened once: the rows of writes still in the log and before ``as_of`` are carried
    over from the previous night when that night used this same query and declaration (their
    version is the table's comment), and only the other writes are parsed. A row depends only on its
    event, so the table is the one a full parse gives (tested)."""
    query = sql.load("memory_writes")
    version = "memory_writes:" + hashlib.sha256((query + MEMORY_WRITES.ddl()).encode()).hexdigest()[:16]
    ensure_table(conn, MEMORY_WRITES)
    same = conn.execute("select comment = $v from duckdb_tables() where schema_name = 'core' "
                        "and table_name = 'memory_writes'", {"v": version}).fetchone()[0]
    conn.execute(
        f"""create or replace temp table carried_writes as
            select * from core.memory_writes as p
            where {'true' if same else 'false'} and p.ts < $as_of
              and exists (select 1 from raw.events as e where e.event_id = p.event_id)""", {"as_of": as_of})
    try:
        count = replace_table(conn, MEMORY_WRITES, query, {"as_of": as_of})
        conn.execute(f"comment on table core.memory_writes is '{version}'")
    finally:
        conn.execute("drop table if exists carried_writes")
    return count


def build_entries(conn, as_of: datetime, cfg=None) -> int:
    """The latest write of an entry id is its current version; all writes give its provenance."""
    return _build(conn, ENTRIES, "entries", as_of)


def build_recall_results(conn, as_of: datetime, cfg=None) -> int:
    """Unnests the results of each memory.recall event."""
    return _build(conn, RECALL_RESULTS, "recall_results", as_of)


def build_checks(conn, as_of: datetime, cfg=None) -> int:
    """Flattens each memory.check event."""
    return _build(conn, CHECKS, "checks", as_of)


def build_runs(conn, as_of: datetime, cfg=None) -> int:
    """Pairs run.start and run.end events per run."""
    return _build(conn, RUNS, "runs", as_of)


def build_entry_usage(conn, as_of: datetime, cfg=None) -> int:
    """Recalls, injections and checks per entry; only passing checks count as proof."""
    return _build(conn, ENTRY_USAGE, "entry_usage", as_of)
