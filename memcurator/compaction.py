"""Compaction: the nights' checkpoints write changes without merging row groups; the close of a night
compacts the store when it is due.

DuckDB merges a table's row groups while it checkpoints (its "vacuum"): the rows deletes left are
dropped and small row groups are joined where fewer would hold the rows. A night commits and
checkpoints many times, and at each checkpoint every table whose row groups could be fewer was
rewritten there and then: on a 1M-entry store, a 1 %-churn night's checkpoint after the clusters
rewrote about 254k rows of core.cluster_edges to save one row group (0.23 s), and such merges were
0.43 s of the night (docs/performance.md). The store's writers therefore checkpoint without merging
(store.connect sets ``max_vacuum_tasks`` to 0), and ``close_night`` compacts (checkpoints with
DuckDB's merges) when ``COMPACT_DAYS`` passed since the last merge (each night's inserts add a small
row group to the tables it keeps). A table whose deleted rows reach ``DEAD_SHARE`` of its
stored rows is written again alone at the close (its live rows into a fresh table), whenever that
comes: the store's merges rewrite the row groups of every table that could be fewer, and one table's
deletes made all of them pay. On the bench's 1M-entry store, six 1 %-churn nights after its full
night, core.contradiction_candidates' deletes reached the share: the close with the store's merges
took 17.2 s, with the table written alone 0.95 s (lab, one machine, 2026-12-06). Compaction changes how
rows are stored, never which: every table reads the same. A purge compacts into a fresh file anyway
(memcurator/purge.py).

work.changes is written again so on most nights: each refresh replaces its table's rows there, so
after a night most of its rows are deleted ones (when that made the store compact, every night from
the third on did: at 1M entries 2.6 s of the nightly job's publish step, 0.2 s of a night with no new
file). Its rewrite is the nights' bookkeeping, not recorded in work.compactions.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

import duckdb

from memcurator.changes import CHANGES
from memcurator.store import comment_on, ensure_table, stored_as_declared, transaction
from memcurator.tables import TABLES, C, Table, register

DEAD_SHARE = 0.10  # a table's deleted rows, of the rows it stores, that make a night compact
# nights' dates between merges of the store at most. The row groups the nights add cost their scans
# nothing measurable over that span: on the bench's 1M-entry store, 30 1 %-churn nights with no merge
# (the tables written alone as their deletes reached the share) took 10.9 s in the median of the first
# ten and of the last ten; the 31st took 12.9, 10.9 and 9.1 s on that store and 10.7, 10.1 and 11.3 s
# on it merged (alternated), and the merge 8.1 s (lab, 2026-12-06, one slow machine; in that run a table
# written alone lost its comment, mended since, and some stages of the night after derived in full: the
# medians leave those nights out). Merged weekly, it cost the nights about a second each.
COMPACT_DAYS = 30
ROW_GROUP_ROWS = 122_880  # DuckDB's row group: a smaller table has nothing to merge
DUCKDB_VACUUM_TASKS = 100  # DuckDB's default max_vacuum_tasks (per table and checkpoint)
MAX_ROUNDS = 4  # a checkpoint merges at most three row groups at a time: a few rounds join the rest

COMPACTIONS = register(Table(
    "work", "compactions",
    "One row per night whose close recorded a compaction of the store (or the first night, which only starts the count).",
    (
        C("as_of", "TIMESTAMP", "The night.", False),
        C("reason", "VARCHAR", "first_night, deleted_rows (tables whose deleted rows reached the share, written again alone), interval (days since the last merge of the store) or forced.", False),
        C("compacted", "BOOLEAN", "Whether rows were stored anew (a first night only starts the count).", False),
        C("rounds", "BIGINT", "Checkpoints with the store's merges run (each merges at most three row groups at a time; none when the tables were written alone).", False),
        C("stored_rows", "BIGINT", "Rows stored before, deleted ones included, over the store's tables.", False),
        C("stored_rows_after", "BIGINT", "Rows stored after.", False),
        C("deleted_rows", "BIGINT", "Deleted rows still stored before, over the store's tables.", False),
        C("tables", "VARCHAR[]", "Tables whose deleted rows reached the share.", False),
    ),
    key=("as_of",),
))


@dataclass(frozen=True)
class Storage:
    stored: int   # rows stored, deleted ones included
    deleted: int  # deleted rows still stored
    over_share: list[str]  # tables whose deleted rows reached DEAD_SHARE


def storage(conn: duckdb.DuckDBPyConnection) -> Storage:
    """Stored and deleted rows of the store's tables: DuckDB's estimated size counts the rows a table
    stores until they are merged away, count(*) the live ones."""
    tables = conn.execute("select schema_name, table_name, estimated_size from duckdb_tables() "
                          "where not temporary and database_name = current_database() order by all").fetchall()
    stored = deleted = 0
    over = []
    for schema, name, size in tables:
        live = conn.execute(f'select count(*) from "{schema}"."{name}"').fetchone()[0]
        stored, deleted = stored + size, deleted + max(size - live, 0)
        if size >= ROW_GROUP_ROWS and size - live >= DEAD_SHARE * size:
            over.append(f"{schema}.{name}")
    return Storage(stored, deleted, over)


def _stored(conn: duckdb.DuckDBPyConnection, schema: str, name: str) -> tuple[str, str | None]:
    """The stored table's create statement and comment."""
    return conn.execute("select sql, comment from duckdb_tables() where database_name = current_database() "
                        "and schema_name = ? and table_name = ?", [schema, name]).fetchone()


def rewrite(conn: duckdb.DuckDBPyConnection, table: Table) -> None:
    """Write ``table`` again alone: its live rows into a fresh table of its declaration, which then
    takes its name (copied to a temp table and back, the 1M-entry store's core.entries took 6.4-7.0 s,
    so 3.8-4.4 s: lab, 2026-12-06), and its comment: a stage's code version, without which the next
    night derives the table in full (store.set_version)."""
    fresh = f"{table.name}__fresh"
    _, comment = _stored(conn, table.schema, table.name)
    with transaction(conn):
        conn.execute(f"drop table if exists {table.schema}.{fresh}")
        conn.execute(replace(table, name=fresh).ddl())
        conn.execute(f"insert into {table.schema}.{fresh} select {table.select_list('q')} from {table.qualified} as q")
        conn.execute(f"drop table {table.qualified}")
        conn.execute(f"alter table {table.schema}.{fresh} rename to {table.name}")
        if comment is not None:
            comment_on(conn, table.qualified, comment)


def rewrite_stored(conn: duckdb.DuckDBPyConnection, qualified: str) -> None:
    """Write the stored table ``qualified`` (schema.name) again alone: by its declaration when it is
    stored as declared (its columns' compression is not in DuckDB's create statement), else as the
    store has it (a table of another version's declaration stays as it is)."""
    declared = TABLES.get(qualified)
    if declared is not None and stored_as_declared(conn, declared):
        rewrite(conn, declared)
        return
    schema, name = qualified.split(".", 1)
    create, comment = _stored(conn, schema, name)
    with transaction(conn):
        conn.execute(f'create temp table live_rows as select * from "{schema}"."{name}"')
        conn.execute(f'drop table "{schema}"."{name}"')
        conn.execute(create)
        conn.execute(f'insert into "{schema}"."{name}" select * from live_rows')
        conn.execute("drop table live_rows")
        if comment is not None:
            comment_on(conn, f'"{schema}"."{name}"', comment)


MERGES = ("first_night", "interval", "forced")  # the reasons that start the count of days again


def due(conn: duckdb.DuckDBPyConnection, as_of: datetime, found: Storage) -> str | None:
    """Why the night ending at ``as_of`` compacts, or None."""
    ensure_table(conn, COMPACTIONS)
    last = conn.execute("select max(as_of) from work.compactions where as_of <= $a and list_contains($m, reason)",
                        {"a": as_of, "m": list(MERGES)}).fetchone()[0]
    if last is None:
        return "first_night"
    if as_of - last >= timedelta(days=COMPACT_DAYS):
        return "interval"
    return "deleted_rows" if found.over_share else None


REWRITTEN = (CHANGES,)  # tables whose rows the nights replace: written again alone at the close


def close_night(conn: duckdb.DuckDBPyConnection, as_of: datetime, force: bool = False) -> str | None:
    """End a night: compact when due (or ``force``), then checkpoint. Returns the reason, or None."""
    found = storage(conn)
    dead = [table for table in REWRITTEN if table.qualified in found.over_share]
    for table in dead:
        rewrite(conn, table)
    if dead:
        found = storage(conn)
    reason = "forced" if force else due(conn, as_of, found)
    if reason is None:
        conn.execute("checkpoint")
        return None
    compact = reason != "first_night"
    rounds, after = 0, found.stored
    with transaction(conn):
        ensure_table(conn, COMPACTIONS)
        conn.execute("delete from work.compactions where as_of = $a", {"a": as_of})
        conn.execute("insert into work.compactions values ($a, $r, $c, 0, $s, $s, $d, $t)",
                     {"a": as_of, "r": reason, "c": compact, "s": found.stored, "d": found.deleted, "t": found.over_share})
    if reason == "deleted_rows":  # those tables alone, the store's row groups left to the interval
        for qualified in found.over_share:
            rewrite_stored(conn, qualified)
        after = storage(conn).stored
    elif compact:
        conn.execute(f"set max_vacuum_tasks = {DUCKDB_VACUUM_TASKS}")
        try:
            before = found.stored + 1
            while rounds < MAX_ROUNDS and after < before:
                # a checkpoint runs only with something to write: the round's count is that
                rounds, before = rounds + 1, after
                conn.execute("update work.compactions set rounds = $n where as_of = $a", {"n": rounds, "a": as_of})
                conn.execute("checkpoint")
                after = storage(conn).stored
        finally:
            conn.execute("set max_vacuum_tasks = 0")
    if compact:
        conn.execute("update work.compactions set stored_rows_after = $s where as_of = $a", {"s": after, "a": as_of})
    conn.execute("checkpoint")
    return reason
