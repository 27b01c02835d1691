"""Entries and usage: the log folded into one row per entry, as of an injected date.

Every function here is a pure function of ``raw.events`` and ``as_of`` (an exclusive upper bound
on event time): events at or after ``as_of`` are invisible, so a past night can be rebuilt as it
stood.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta

import duckdb

from memcurator import sql
from memcurator.store import replace_table
from memcurator.tables import CHECKS, ENTRIES, ENTRY_USAGE, MEMORY_WRITES, RECALL_RESULTS, RUNS, Table


def as_of_for_night(night: date | str) -> datetime:
    """The nightly run for day D sees every event before D+1 00:00 UTC."""
    day = date.fromisoformat(night) if isinstance(night, str) else night
    return datetime.combine(day + timedelta(days=1), time.min)


def _build(conn: duckdb.DuckDBPyConnection, table: Table, query_name: str, as_of: datetime) -> int:
    return replace_table(conn, table, sql.load(query_name), {"as_of": as_of})


def build_memory_writes(conn, as_of: datetime, cfg=None) -> int:
    """Flattens each memory.write payload; derives the entry id from the content when not given."""
    return _build(conn, MEMORY_WRITES, "memory_writes", as_of)


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
