"""What a night changed, per table, so the stages after it derive again only the entries concerned.

A table kept this way has one row in work.refreshes: a generation id for its rows, the generation it
was refreshed from, whether that refresh derived everything, and the generation of each input it
read. work.changes holds the entries (namespace, entry_id) whose rows its last refresh changed
(deleted, added or altered). A stage derives again only the entries its inputs changed when each
input's last refresh started from the generation the stage read (or the input has not been refreshed
since); otherwise, or under another version of its code, it derives everything. Either way it gives
the same rows (tested). The work schema is bookkeeping that depends on which nights ran before; the
derived tables do not.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime

import duckdb

from memcurator import sql
from memcurator.store import (EVERY_HASH, define_hash_macros, ensure_table, entry_hashes, entry_rows,
                              params_used, replace_table, set_version, stored_as_declared, table_exists,
                              transaction)
from memcurator.tables import ENTRY_HASH, NS, ROW_HASH, C, Table, register

REFRESHES = register(Table(
    "work", "refreshes",
    "One row per table kept incrementally: the generation of its rows and what they were derived from.",
    (
        C("table_name", "VARCHAR", "The table (schema.name).", False),
        C("generation", "VARCHAR", "Id of this refresh of the table's rows.", False),
        C("previous_generation", "VARCHAR", "Generation the refresh started from (null: none)."),
        C("derived_all", "BOOLEAN", "The refresh derived every row (its changes are not listed).", False),
        C("version", "VARCHAR", "Version of the code and settings that derived the rows.", False),
        C("inputs", "VARCHAR", "JSON object: the generation of each input table read.", False),
        C("as_of", "TIMESTAMP", "The night the rows were derived for.", False),
    ),
    key=("table_name",),
))

CHANGES = register(Table(
    "work", "changes",
    "One row per entry whose rows a table's last refresh deleted, added or altered (none after a refresh that derived all).",
    (
        C("table_name", "VARCHAR", "The table (schema.name).", False),
        NS, C("entry_id", "VARCHAR", "The entry (or principle id, for tables keyed by one).", False),
    ),
    key=("table_name", "namespace", "entry_id"),
))


@dataclass(frozen=True)
class Refresh:
    generation: str
    previous_generation: str | None
    derived_all: bool
    version: str
    inputs: dict[str, str]
    as_of: datetime


def last_refresh(conn: duckdb.DuckDBPyConnection, table: str) -> Refresh | None:
    return last_refreshes(conn, [table])[table]


def last_refreshes(conn: duckdb.DuckDBPyConnection, tables: list[str]) -> dict[str, Refresh | None]:
    """The last refresh of each of ``tables`` (None: none), read in one statement."""
    rows = conn.execute("select table_name, generation, previous_generation, derived_all, version, inputs, as_of "
                        "from work.refreshes where list_contains($t, table_name)", {"t": list(tables)}).fetchall()
    found = {row[0]: Refresh(row[1], row[2], row[3], row[4], json.loads(row[5]), row[6]) for row in rows}
    return {table: found.get(table) for table in tables}


def ensure(conn: duckdb.DuckDBPyConnection) -> None:
    for table in (REFRESHES, CHANGES):
        ensure_table(conn, table)


def forget(conn: duckdb.DuckDBPyConnection) -> None:
    """Drop the bookkeeping: the next night derives every tracked table in full, and the tables kept by
    event read the log against their rows again (after the derived tables were written by something
    other than their stages, such as a merge of shards)."""
    ensure(conn)
    conn.execute("delete from work.refreshes")
    conn.execute("delete from work.changes")
    if table_exists(conn, "work", "event_reads"):  # entries.EVENT_READS
        conn.execute("delete from work.event_reads")


def forget_table(conn: duckdb.DuckDBPyConnection, table: str) -> None:
    """Drop the bookkeeping of one table (one no longer kept by refreshes, such as a table that became a
    view): the tables that read it derive everything the next night."""
    ensure(conn)
    conn.execute("delete from work.refreshes where table_name = ?", [table])
    conn.execute("delete from work.changes where table_name = ?", [table])


UNREAD = object()  # record's ``last`` when the caller has not read the table's last refresh


def record(conn: duckdb.DuckDBPyConnection, table: str, version: str, as_of: datetime,
           inputs: dict[str, str], changed: str | None, last: Refresh | None | object = UNREAD) -> None:
    """Record a refresh of ``table``: ``changed`` is a query of the (namespace, entry_id) it changed,
    None when it derived everything. Call it in the refresh's transaction. ``last`` is the table's last
    refresh as the refresh read it when it started (after ``ensure``); by default it is read here."""
    if last is UNREAD:
        ensure(conn)
        last = last_refresh(conn, table)
    conn.execute("delete from work.changes where table_name = ?", [table])
    if changed is not None:
        conn.execute(f"insert into work.changes select distinct $t, namespace, entry_id from ({changed}) "
                     "where entry_id is not null", {"t": table})
    conn.execute("delete from work.refreshes where table_name = ?", [table])
    conn.execute("insert into work.refreshes values (?, ?, ?, ?, ?, ?, ?)",
                 [table, uuid.uuid4().hex, last.generation if last else None, changed is None, version,
                  json.dumps(inputs, sort_keys=True), as_of])


def recorder(conn: duckdb.DuckDBPyConnection, table: Table, version: str, as_of: datetime):
    """The ``record`` callback of entries.refresh_per_event for ``table``."""
    return lambda changed: record(conn, table.qualified, version, as_of, {}, changed)


def input_changes(conn: duckdb.DuckDBPyConnection, table: str, version: str, inputs: list[str],
                  as_of: datetime) -> tuple[dict[str, str | None], Refresh | None, Refresh | None]:
    """The inputs' generations now; the table's last refresh when the table can be refreshed from it: same
    version, an earlier or the same night, and every input either unchanged since or refreshed once since from
    the generation read (then its changes are in the temp table input_changes); and the table's last refresh
    either way (record's ``last``). (One statement reads the refreshes, and record is given the table's: read
    one by one, 95 reads of 0.3 ms in a 1 %-churn night at 1M entries.)"""
    ensure(conn)
    refreshes = last_refreshes(conn, [*inputs, table])
    last = refreshes.pop(table)
    now = {t: r.generation if r else None for t, r in refreshes.items()}
    conn.execute("create or replace temp table input_changes (namespace varchar, entry_id varchar)")
    if last is None or last.version != version or last.as_of > as_of or None in now.values():
        return now, None, last
    moved = [t for t in inputs if now[t] != last.inputs.get(t)]
    if any(refreshes[t].derived_all or refreshes[t].previous_generation is None
           or refreshes[t].previous_generation != last.inputs.get(t) for t in moved):
        return now, None, last
    if moved:
        # (list_contains: "in (select unnest($t))" was planned as a join, 9-12 ms a table at 1M, this 4-6 ms)
        conn.execute("insert into input_changes select distinct namespace, entry_id from work.changes "
                     "where list_contains($t, table_name)", {"t": moved})
    return now, last, last


ENTRY_KEY = ("namespace", "entry_id")
# The hashes of the entries in stage_scope (a table scoped by entry; tables.ENTRY_HASH). The queries read
# them through the view stage_hashes, with the filter that makes DuckDB skip other rows (store.EVERY_HASH).
STAGE_HASH_ROWS = "stage_hash_rows"
STAGE_HASHES = f"select {ENTRY_HASH.name} from {STAGE_HASH_ROWS} where {ENTRY_HASH.name} {EVERY_HASH}"
# The tables a line "-- scoped keyed <table>" may read (sql.SCOPED_KEYED_ROWS): their rows are of entries of
# core.entries only (its writes, or rows derived from its rows), so a hash that no two entries of core.entries
# share names one entry in them too.
KEYED_BY_ENTRIES = ("core.entries", "core.memory_writes", "core.entry_usage", "core.entry_importance",
                    "core.entry_text_features", "core.entry_generality")
ENTRY_KEY_MACRO = "create or replace temp macro entry_key(namespace, entry_id, entry_hash) as {key}"
# What entry_key is: the hash where it names one entry, else the two strings (define_entry_key)
ENTRY_KEY_BY_HASH = "entry_hash"
ENTRY_KEY_BY_STRINGS = "{'namespace': namespace, 'entry_id': entry_id}"
# A read of a per-entry table narrowed to the entries the inputs changed (after input_changes).
OF_CHANGED_ENTRIES = "semi join input_changes using (namespace, entry_id)"


def refresh_entries(conn: duckdb.DuckDBPyConnection, table: Table, query: str, params: dict, version: str,
                    inputs: list[str], scope: str = "", after: list[str] = (), compare: str = "",
                    key: tuple[str, ...] = ENTRY_KEY, entries: str = "", written: str = "",
                    scope_key: tuple[str, ...] = (), hashes: str = "") -> int:
    """Keep a table by deriving again only the rows whose inputs changed.

    ``query`` derives every row when $all is true, and otherwise only the rows whose ``scope_key`` (default:
    ``key``) is in the temp table stage_scope; it reads per-entry tables by the entry hashes in the view
    stage_hashes (STAGE_HASHES): a table scoped by entry, its scope's; another, those of the query ``hashes``
    (over stage_scope). For a table scoped by entry the scope is what the inputs
    changed (temp table input_changes) together with ``scope``'s rows; otherwise ``scope``'s rows alone (a
    query that may read input_changes and $since, the night last derived). The statements of ``after`` run
    after the rows are written either way (to set what depends on $as_of for every row; they leave the
    scope's rows as ``query`` derived them in ``compare``'s columns). ``compare`` lists the columns that
    count as a change of a row (default: those its row hash hashes, for a table with one, tables.with_row_hash;
    else all but as_of; a part of ``written``); ``entries`` reads the temp table
    changed_rows (the rows changed, in those columns) for the entries to record as changed (default: the
    key's). A stored row derived again is replaced (deleted, and inserted at the table's end) when it
    differs in ``written`` (default: all columns but as_of; leave out what the ``after`` statements set).
    Not updated in place: a checkpoint rewrites each column an update touched in every row group it
    touched, which for changes spread over a million-row table is the whole column (a 1 %-churn night at
    1M entries, half of its writes new versions of stored entries: 12.8 -> 10.7 s); a delete only marks
    the row until the close of a night compacts (compaction.py), and the replaced rows sit together at
    the end, where the next stages read them (store.rows_by_key)."""
    ensure_table(conn, table)
    used = lambda statement, extra={}: params_used(statement, {**params, **extra})  # noqa: E731,B006
    now, before, last = input_changes(conn, table.qualified, version, inputs, params["as_of"])
    # (entry_hash follows the key: the same whenever the key is; the row hash, the other columns)
    undated = ", ".join(c for c in table.column_names if c not in ("as_of", ENTRY_HASH.name, ROW_HASH))
    row_hash = next((c for c in table.columns if c.name == ROW_HASH), None)
    cols = compare or (", ".join(row_hash.hashes) if row_hash else undated)  # (the row hash's: tables.with_row_hash)
    written = written or undated
    keys, scoped = ", ".join(key), ", ".join(scope_key or key)
    by_entry = (scope_key or key) == ENTRY_KEY
    hashed = by_entry and ENTRY_HASH.name in table.column_names
    compared = cols.split(", ")
    if row_hash and (set(row_hash.hashes) != set(compared) or after or entries or not hashed):
        raise ValueError(f"{table.qualified}: its row hash must hash the columns compared ({cols}), and its rows "
                         "be compared by entry, as derived (no statements after, no entries of their own)")
    # with a row hash, the stored rows of the scope are read narrow: their hash and the written columns it
    # leaves out (a row derived again is written when those differ, and is a change when the hash does)
    extra = [c for c in written.split(", ") if c not in compared] if row_hash else []
    conn.execute(f"create or replace temp table stage_scope as select {scoped} from {table.qualified} limit 0")
    conn.execute(f"create or replace temp table {STAGE_HASH_ROWS} ({ENTRY_HASH.name} ubigint)")
    conn.execute(f"create or replace temp view stage_hashes as {STAGE_HASHES}")
    define_hash_macros(conn)
    keyed = "entry_key(" in query
    try:
        with transaction(conn):
            if before is None:
                if keyed:
                    define_entry_key(conn, every_entry=True)
                count = _derive_all(conn, table, query, used, version, params["as_of"], now, last)
                for statement in after:
                    conn.execute(statement, used(statement))
                return count
            _fill_scope(conn, scope, used, before, changed=by_entry)
            if by_entry or hashes:
                conn.execute(f"insert into {STAGE_HASH_ROWS} select distinct * from "
                             f"({hashes or entry_hashes('select * from stage_scope')})")
            if keyed:
                define_entry_key(conn, every_entry=False)
            # the scope's stored rows, with their row ids: the delete below reads them, not the table again
            stored = f"rowid as stored_row, {keys}, {', '.join([ROW_HASH, *extra])}" if row_hash else "rowid as stored_row, *"
            old = (entry_rows(table.qualified, "select * from stage_scope", stored) if hashed else
                   f"select rowid as stored_row, * from {table.qualified} semi join stage_scope using ({scoped})")
            conn.execute(f"create or replace temp table stage_old as {old}")
            # (the query reads its per-entry inputs by the scope's hashes: rows of entries outside it that
            # share a hash with one inside are derived too, and left out here)
            conn.execute(f"create or replace temp table stage_rows as select {table.select_list('q')} " + (
                         f"from ({query}) q" if not by_entry else
                         f"from (with derived as materialized ({query}) select * from derived "
                         "semi join stage_scope using (namespace, entry_id)) q"), used(query, {"all": False}))
            # each key of the scope once, derived and stored side by side: whether its row is written (new, or
            # derived otherwise than stored in ``written``) and whether it changed (in ``compare``'s columns, or
            # gone, or new). One join of the two, where two "except"s of them (in ``written``, in ``compare``'s
            # columns) hashed every column of both sides twice: 0.64 -> 0.25 s of a 1 %-churn night at 1M.
            differs = _differ(ROW_HASH) if row_hash else _differ(cols)
            differs_written = " or ".join([differs] + ([_differ(", ".join(extra))] if extra else [])) \
                if row_hash else _differ(written)
            conn.execute(f"create or replace temp table stage_diff as select {keys}, o.stored_row, "
                         "n.stage_derived is not null as derived, "
                         f"n.stage_derived is not null and (o.stored_row is null or {differs_written}) as is_written, "
                         f"n.stage_derived is null or o.stored_row is null or {differs} as is_changed "
                         "from (select true as stage_derived, * from stage_rows) as n "
                         f"full join stage_old as o using ({keys})")
            # the rows derived otherwise than they are stored (or new): stored versions of those and rows of
            # the scope no longer derived go, and they come in; the rows derived as they are stored stay
            conn.execute(f"delete from {table.qualified} where rowid in (select stored_row from stage_diff "
                         "where stored_row is not null and (is_written or not derived))")
            conn.execute(f"insert into {table.qualified} select * from stage_rows "
                         f"semi join (select {keys} from stage_diff where is_written) using ({keys})")
            for statement in after:
                conn.execute(statement, used(statement))
            # the scope's rows now are the rows derived, in those columns (the rows not written differ from
            # them only outside ``written``): compared without reading the table again
            changed_keys = f"(select {keys} from stage_diff where is_changed)"
            if entries or key != ENTRY_KEY:
                conn.execute(f"create or replace temp table changed_rows as select {cols} from stage_rows "
                             f"semi join {changed_keys} using ({keys}) union all select {cols} from stage_old "
                             f"semi join {changed_keys} using ({keys})")
            record(conn, table.qualified, version, params["as_of"], now,
                   entries or ("select namespace, entry_id from changed_rows" if key != ENTRY_KEY else changed_keys),
                   last)
    finally:
        conn.execute("drop view if exists stage_hashes")
        for temp in ("stage_scope", STAGE_HASH_ROWS, "stage_old", "stage_rows", "stage_diff", "changed_rows",
                     "input_changes"):
            conn.execute(f"drop table if exists {temp}")
    return conn.execute(f"select count(*) from {table.qualified}").fetchone()[0]


# The generations of core.entries (its refreshes) in which no two entries share a hash: the five keyed stages of
# a full night count them once (at 1M entries, 0.1-0.2 s a count). Rows come to core.entries only by a refresh,
# which makes a new generation, and rows going cannot make two entries share a hash.
_DISTINCT_HASHES: set[str] = set()


def define_entry_key(conn: duckdb.DuckDBPyConnection, every_entry: bool) -> bool:
    """The temp macro entry_key(namespace, entry_id, entry_hash) that the reads of "-- scoped keyed" lines join
    on: the hash alone when no two entries of core.entries with a hash of the scope (the view stage_hashes;
    with ``every_entry``, any hash) share it, else (or without core.entries) the two strings. Returns whether
    it is the hash. (Joined on the strings, core.entry_lifecycle's query in a 1 %-churn night at 1M entries
    took 0.54-0.63 s, on the hash 0.41-0.59 s: docs/curation.md.)"""
    by_hash = False
    if table_exists(conn, "core", "entries"):
        refresh = last_refresh(conn, "core.entries")
        by_hash = refresh is not None and refresh.generation in _DISTINCT_HASHES
        if not by_hash:
            rows = "core.entries" if every_entry else "core.entries semi join stage_hashes using (entry_hash)"
            by_hash = conn.execute(f"select count(*) = count(distinct entry_hash) from {rows}").fetchone()[0]
            if by_hash and every_entry and refresh is not None:
                _DISTINCT_HASHES.add(refresh.generation)
    conn.execute(ENTRY_KEY_MACRO.format(key=ENTRY_KEY_BY_HASH if by_hash else ENTRY_KEY_BY_STRINGS))
    return by_hash


def _derive_all(conn: duckdb.DuckDBPyConnection, table: Table, query: str, used: Callable, version: str,
                as_of: datetime, now: dict[str, str | None], last: Refresh | None) -> int:
    """A kept table's every row derived again (no refresh to start from): the table replaced, its version set,
    a refresh of everything recorded (``last``: its last refresh). Returns the row count."""
    count = replace_table(conn, table, query, used(query, {"all": True}), own_transaction=False)
    set_version(conn, table, version)
    record(conn, table.qualified, version, as_of, now, None, last)
    return count


def _fill_scope(conn: duckdb.DuckDBPyConnection, scope: str, used: Callable, before: Refresh,
                changed: bool = True) -> None:
    """The temp table stage_scope: the entries the inputs changed (input_changes; with ``changed``) and the rows
    of the query ``scope`` (which may read them and $since, the night last derived), each once."""
    parts = (["select * from input_changes"] if changed else []) + ([f"({scope}\n)"] if scope else [])
    if parts:  # (in one statement: an insert of each, then the table made again distinct, took 6 ms a refresh at 1M)
        statement = f"insert into stage_scope select distinct * from ({' union all '.join(parts)})"
        conn.execute(statement, used(statement, {"since": before.as_of}))


def _differ(columns: str) -> str:
    """Whether the derived row n and the stored row o differ in ``columns`` (nulls equal, as "except" has it)."""
    names = columns.split(", ")
    return f"row({', '.join('n.' + c for c in names)}) is distinct from row({', '.join('o.' + c for c in names)})"


PAIR = sql.PAIR


def pair_keys(pair: tuple[str, str] = PAIR) -> str:
    """The entries of changed rows of a table of pairs (its entry columns: ``pair``)."""
    return (f"select namespace, {pair[0]} as entry_id from changed_rows "
            f"union all select namespace, {pair[1]} from changed_rows")


PAIR_KEYS = pair_keys()


def pairs_of_scope(table: str, pair: tuple[str, str] = PAIR, scope: str = "stage_scope") -> str:
    """The rows of a table of pairs with either entry in the temp table ``scope``, with their row ids."""
    return f"select rowid as stored_row, * from {table} where rowid in ({sql.pair_row_ids(table, pair, scope)})"


def refresh_pairs(conn: duckdb.DuckDBPyConnection, table: Table, query: str, params: dict, version: str,
                  inputs: list[str], scope: str = "", own_transaction: bool = True, pair: tuple[str, str] = PAIR,
                  prepare: Callable[[bool], None] | None = None) -> int:
    """refresh_entries for a table of pairs of entries (namespace and the two entry columns ``pair``): the rows
    with either entry in the scope (what the inputs changed, and ``scope``'s rows: a query that may read
    input_changes) are derived again; of the keys whose rows changed, the stored rows go and the derived ones
    come; the changes recorded are the entries of those rows (pair_keys). ``query`` derives every row when
    $all is true, otherwise at least the rows with an entry in the temp table stage_scope (the others are left
    out). ``prepare(all)`` runs before it: what the query reads, and entries it adds to stage_scope."""
    ensure_table(conn, table)
    used = lambda statement, extra={}: params_used(statement, {**params, **extra})  # noqa: E731,B006
    now, before, last = input_changes(conn, table.qualified, version, inputs, params["as_of"])
    cols = ", ".join(c for c in table.column_names if c != "as_of")
    conn.execute("create or replace temp table stage_scope (namespace varchar, entry_id varchar)")
    define_hash_macros(conn)
    try:
        with transaction(conn) if own_transaction else nullcontext():
            if before is None:
                if prepare:
                    prepare(True)
                return _derive_all(conn, table, query, used, version, params["as_of"], now, last)
            _fill_scope(conn, scope, used, before)
            if prepare:
                prepare(False)
            if not conn.execute("select count(*) from stage_scope").fetchone()[0]:  # nothing to derive again
                record(conn, table.qualified, version, params["as_of"], now, "select * from stage_scope", last)
                return conn.execute(f"select count(*) from {table.qualified}").fetchone()[0]
            conn.execute(f"create or replace temp table stage_old as {pairs_of_scope(table.qualified, pair)}")
            conn.execute(f"create or replace temp table stage_pairs as select {table.select_list('q')} "
                         f"from ({query}) q", used(query, {"all": False}))
            conn.execute(f"create or replace temp table stage_rows as select * exclude (stored_row) from "
                         f"({pairs_of_scope('stage_pairs', pair)})")
            conn.execute(f"create or replace temp table changed_rows as (select {cols} from stage_rows except "
                         f"select {cols} from stage_old) union all (select {cols} from stage_old except "
                         f"select {cols} from stage_rows)")
            _write_changed_keys(conn, table, "select * from stage_old")
            record(conn, table.qualified, version, params["as_of"], now, pair_keys(pair), last)
    finally:
        for temp in ("stage_scope", "stage_old", "stage_pairs", "stage_rows", "changed_rows", "input_changes"):
            conn.execute(f"drop table if exists {temp}")
    return conn.execute(f"select count(*) from {table.qualified}").fetchone()[0]


def _write_changed_keys(conn: duckdb.DuckDBPyConnection, table: Table, stored: str) -> None:
    """The rows of the keys in the temp table changed_rows: the stored ones (found in ``stored``, a query of the
    table's rows with their row ids as stored_row) go, those of the temp table stage_rows come;
    the rows of other keys stay where they are."""
    key = ", ".join(table.key)
    changed = f"(select distinct {key} from changed_rows)"
    conn.execute(f"delete from {table.qualified} where rowid in (select stored_row from ({stored}) "
                 f"semi join {changed} using ({key}))")
    conn.execute(f"insert into {table.qualified} select * from stage_rows semi join {changed} using ({key})")


def replace_recording(conn: duckdb.DuckDBPyConnection, table: Table, query: str, params: dict, keys: str,
                      own_transaction: bool = True) -> int:
    """replace_table that records which entries' rows changed, for the stages that read the table:
    ``keys`` is a query over the temp table changed_rows (the rows added or gone, all columns but
    as_of) giving (namespace, entry_id). The first refresh of a table records a full one.

    A table without as_of, stored as declared, gets the difference: the stored rows of the keys whose
    rows changed go, the derived ones of those keys come (rewritten whole, the 76k supersede links of
    the 1M bench store were written again every night, with nothing changed)."""
    ensure_table(conn, table)
    cols = ", ".join(c for c in table.column_names if c != "as_of")
    with transaction(conn) if own_transaction else nullcontext():
        conn.execute(f"create or replace temp table stage_rows as select {table.select_list('q')} from ({query}) q",
                     params_used(query, params))
        changed = None
        if last_refresh(conn, table.qualified) is not None:
            conn.execute(f"create or replace temp table changed_rows as (select {cols} from stage_rows except "
                         f"select {cols} from {table.qualified}) union all (select {cols} from {table.qualified} "
                         f"except select {cols} from stage_rows)")
            changed = f"select * from ({keys})"
        if changed is None or "as_of" in table.column_names or not stored_as_declared(conn, table):
            count = replace_table(conn, table, "select * from stage_rows", own_transaction=False)
        else:
            _write_changed_keys(conn, table, f"select rowid as stored_row, * from {table.qualified}")
            count = conn.execute(f"select count(*) from {table.qualified}").fetchone()[0]
        record(conn, table.qualified, "", params["as_of"], {}, changed)
        for temp in ("stage_rows", "changed_rows"):
            conn.execute(f"drop table if exists {temp}")
    return count
