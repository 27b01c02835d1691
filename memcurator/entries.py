"""Entries and usage: the log folded into one row per entry, as of an injected date.

Every function here is a pure function of ``raw.events`` and ``as_of`` (an exclusive upper bound
on event time): events at or after ``as_of`` are invisible, so a past night can be rebuilt as it
stood.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta

import duckdb

from memcurator import changes, sql, text
from memcurator.store import (code_version, create_view, define_hash_macros, ensure_cache, ensure_table, entry_rows,
                              params_used, replace_table, set_version, transaction)
from memcurator.tables import (CHECKS, ENTRIES, ENTRY, ENTRY_HASH, ENTRY_USAGE, MEMORY_WRITES, NS, RECALL_RESULTS,
                               RUNS, C, Table, register)


FIRST_NIGHT = date(2024, 1, 1)  # the nightly job's first partition (pipelines/partitions.py)


def buildable_night(night: str, today: date) -> date:
    """The night ``night`` names (YYYY-MM-DD) when the nightly job can build it: from FIRST_NIGHT to the day
    before ``today`` (UTC; a night is built once its day is over, as its partition exists only then).
    Otherwise a ValueError that says why."""
    try:
        day = date.fromisoformat(night)
    except ValueError:
        raise ValueError(f"{night!r} is not a date: expected a date as YYYY-MM-DD") from None
    if day < FIRST_NIGHT:
        raise ValueError(f"{night}: the first night the job builds is {FIRST_NIGHT}")
    if day >= today:
        raise ValueError(f"{night}: a night is built once its day is over (UTC); the latest now is "
                         f"{today - timedelta(days=1)}")
    return day


def as_of_for_night(night: date | str) -> datetime:
    """The nightly run for day D sees every event before D+1 00:00 UTC."""
    day = date.fromisoformat(night) if isinstance(night, str) else night
    return datetime.combine(day + timedelta(days=1), time.min)


def _build(conn: duckdb.DuckDBPyConnection, table: Table, query_name: str, as_of: datetime) -> int:
    return replace_table(conn, table, sql.load(query_name), {"as_of": as_of})


def memory_writes_version() -> str:
    """The version of the parse of writes (query, declaration, DuckDB's JSON functions). What is kept
    per write event (an entry's fold, the rules' reading of its text) is kept under it too: the same
    event parsed by other code may give another text."""
    return code_version("memory_writes", sql.load("memory_writes"), MEMORY_WRITES.ddl(), duckdb.__version__)


def build_memory_writes(conn, as_of: datetime, cfg=None) -> int:
    """Flattens each memory.write payload; derives the entry id from the content when not given.

    A write is flattened once. When the table was built by this same query and declaration (their
    version is the table's comment), the night deletes the rows of writes no longer in the log or
    not before ``as_of``, parses only the writes not in the table yet, and stamps ``as_of``; otherwise
    it rebuilds the table. A row depends only on its event, so both give the same table (tested)."""
    return refresh_per_event(conn, MEMORY_WRITES, sql.load("memory_writes"), as_of, memory_writes_version(),
                             "memory.write")


EVENT_READS = register(Table(
    "work", "event_reads",
    "One row per (table kept by event, landing file): how many of the file's events the table reads there were "
    "when it last read the log (core.memory_writes, core.recall_results, core.checks: those of its type; "
    "work.redacted_events: all), and the night.",
    (
        C("table_name", "VARCHAR", "The table (schema.name).", False),
        C("source_file", "VARCHAR", "Landing file.", False),
        C("events", "BIGINT", "Its events the table reads (any time).", False),
        C("as_of", "TIMESTAMP", "The night the table was derived for.", False),
    ),
    key=("table_name", "source_file"),
))


# The events a refresh reads, with their row ids in raw.events: the queries read the events' payloads by
# row id, in the transaction that found them (memory_writes.sql).
EVENT_ROWS = "event_id, rowid as event_row"


def refresh_per_event(conn: duckdb.DuckDBPyConnection, table: Table, query: str, as_of: datetime, version: str,
                      event_type: str) -> int:
    """Keep a table of rows per event of ``event_type`` before ``as_of`` across nights.

    ``query`` derives the rows of the events in the temp table refresh_events (event_id, and event_row: the
    row id in raw.events). When the table was
    built under ``version`` (its comment), the night deletes the rows of events at or after ``as_of``
    and derives the events it has not read: those of the landing files whose count of events grew
    since (a file is ingested once, in one transaction) and those the night's date moved into view.
    A file with fewer events than read (a purge) makes it delete the rows of every event gone from
    the log. Finding the events by a join of the table with the whole log took 0.4 s each way at 1M
    writes; by file, 0.03 s. Otherwise it rebuilds the table. A row depends only on its event, so
    both give the same table (tested); the entries of the rows deleted or added are recorded as
    changed (changes.record), none after a rebuild."""
    ensure_table(conn, table)
    ensure_table(conn, EVENT_READS)
    params = {"as_of": as_of, "type": event_type, "t": table.qualified}
    same = conn.execute("select comment = $v from duckdb_tables() where schema_name = $s and table_name = $n",
                        {"v": version, "s": table.schema, "n": table.name}).fetchone()[0]
    record = changes.recorder(conn, table, version, as_of)
    _run(conn, "create or replace temp table refresh_files as select source_file, count(*) as events "
               "from raw.events where type = $type group by source_file", params)
    try:
        with transaction(conn):
            if same:
                count = _read_new_events(conn, table, query, params, record)
            else:
                _run(conn, f"create or replace temp table refresh_events as select {EVENT_ROWS} from raw.events "
                           "where type = $type and ts < $as_of", params)
                count = replace_table(conn, table, query, {"as_of": as_of}, own_transaction=False)
                set_version(conn, table, version)
                record(None)
            _run(conn, "delete from work.event_reads where table_name = $t", params)
            _run(conn, "insert into work.event_reads select $t, source_file, events, $as_of from refresh_files", params)
            return count
    finally:
        for temp in ("refresh_files", "refresh_events", "refresh_gone", "refresh_new"):
            conn.execute(f"drop table if exists {temp}")


def _run(conn: duckdb.DuckDBPyConnection, statement: str, params: dict) -> duckdb.DuckDBPyConnection:
    return conn.execute(statement, params_used(statement, params))


def _read_new_events(conn: duckdb.DuckDBPyConnection, table: Table, query: str, params: dict, record) -> int:
    read = "(select source_file, events, as_of from work.event_reads where table_name = $t)"
    before = _run(conn, f"select max(as_of) from {read}", params).fetchone()[0]
    shrunk = _run(conn, f"select count(*) from {read} as r left join refresh_files as f using (source_file) "
                        "where f.events is null or f.events < r.events", params).fetchone()[0]
    gone = "p.ts >= $as_of" + (" or not exists (select 1 from raw.events as e where e.event_id = p.event_id)"
                               if shrunk else "")
    _run(conn, f"create or replace temp table refresh_gone as select p.rowid as row_id, p.namespace, p.entry_id "
               f"from {table.qualified} as p where {gone}", params)
    conn.execute(f"delete from {table.qualified} where rowid in (select row_id from refresh_gone)")
    # the events of the files that grew (every file, when the table read none before) and those the
    # night's date moved into view, less those read (found first: in one statement DuckDB hashed the
    # table's 1M event ids, 0.23-0.33 s, against 0.03 s for the anti join of the few found)
    window = " or ts >= $before" if before is not None else ""
    _run(conn, f"create or replace temp table refresh_events as select {EVENT_ROWS} from raw.events "
               f"where type = $type and ts < $as_of and (source_file in (select source_file from refresh_files "
               f"anti join {read} as r using (source_file, events)){window})", {**params, "before": before})
    conn.execute(f"create or replace temp table refresh_events as select event_id, event_row from refresh_events "
                 f"anti join {table.qualified} using (event_id)")
    _run(conn, f"create or replace temp table refresh_new as select {table.select_list('q')} from ({query}) q", params)
    conn.execute(f"insert into {table.qualified} select * from refresh_new")
    record("select namespace, entry_id from refresh_gone union all select namespace, entry_id from refresh_new")
    return conn.execute(f"select count(*) from {table.qualified}").fetchone()[0]


ENTRY_SOURCES = register(Table(
    "core", "entry_sources",
    "One row per entry: a hash of the set of writes core.entries folded into it (to refold only what changed).",
    (
        NS, ENTRY, ENTRY_HASH,
        C("writes_hash", "UBIGINT", "bit_xor of the hashes of its write event ids.", False),
        C("version", "VARCHAR", "The fold's query, declaration and DuckDB version; another version refolds everything.", False),
    ),
    key=("namespace", "entry_id"),
))

ENTRY_SUCCESSORS = register(Table(
    "core", "entry_successors",
    "One row per entry the current version of another names in its supersedes: the latest such version (a view "
    "over core.entries; the link's verdict: core.supersede_links).",
    (
        NS, ENTRY,
        C("superseded_by", "VARCHAR", "The entry whose current version supersedes it (the latest, by write time "
          "and event id).", False),
        C("superseded_reason", "VARCHAR", "The reason that version gives."),
        C("superseded_at", "TIMESTAMP", "When that version was written.", False),
    ),
    key=("namespace", "entry_id"),
))
SUCCESSORS = """select s.namespace, s.supersedes as entry_id,
                       arg_max(s.entry_id, (s.last_written_at, s.last_event_id)) as superseded_by,
                       arg_max(s.supersede_reason, (s.last_written_at, s.last_event_id)) as superseded_reason,
                       max(s.last_written_at) as superseded_at
                from core.entries as s
                semi join core.entries as e on e.namespace = s.namespace and e.entry_id = s.supersedes
                where s.supersedes is not null
                group by s.namespace, s.supersedes"""


def create_successors_view(conn: duckdb.DuckDBPyConnection) -> None:
    """core.entry_successors over core.entries."""
    create_view(conn, ENTRY_SUCCESSORS, SUCCESSORS)


def build_entries(conn, as_of: datetime, cfg=None, load_ahead: bool = True) -> int:
    """The latest write of an entry id is its current version; all writes give its provenance.

    An entry is folded again only when its set of writes changed (core.entry_sources holds a hash of
    the set); the rest keep their rows. A full fold gives the same table (tested). Who supersedes an
    entry is the view core.entry_successors over the entries' current versions. ``load_ahead``: whether
    stages that shingle or judge texts run after this one in the process (text.load_compiled_ahead)."""
    query, provenance = sql.load("entries"), sql.load("entry_provenance")
    version = code_version("entries", query, provenance, ENTRIES.ddl(), duckdb.__version__, memory_writes_version())
    ensure_table(conn, ENTRIES)
    ensure_cache(conn, ENTRY_SOURCES)
    stale, stored = conn.execute("select count(*) filter (where version <> $v), count(*) from core.entry_sources",
                                 {"v": version}).fetchone()
    define_hash_macros(conn)  # (sql/entry_provenance.sql reads the refolded entries' writes by their hashes)
    # the hashes of the entries whose writes core.memory_writes' last refresh changed, when the entries
    # were folded from the refresh before it (then the others' sets of writes are the same); of every
    # entry otherwise
    writes_now, before, last = changes.input_changes(conn, ENTRIES.qualified, version, [MEMORY_WRITES.qualified], as_of)
    changed_writes = changes.OF_CHANGED_ENTRIES if before and stored and not stale else ""
    writes = (f"({entry_rows(MEMORY_WRITES.qualified, 'select * from input_changes', 'namespace, entry_id, event_id')})"
              if changed_writes else MEMORY_WRITES.qualified)
    conn.execute("create or replace temp table entry_sources_now as select namespace, entry_id, bit_xor(hash(event_id)) "
                 f"as writes_hash from {writes} group by namespace, entry_id")
    # the stored hashes of those entries, read by their entry hashes (by key, every entry's were read: 45 ms of
    # scan in a 1 %-churn night at 1M entries, and 27 ms more to delete the refolded ones' below)
    sources_then = (f"({entry_rows(ENTRY_SOURCES.qualified, 'select * from input_changes')})" if changed_writes
                    else ENTRY_SOURCES.qualified)
    conn.execute(f"create or replace temp view entry_sources_then as select namespace, entry_id, writes_hash "
                 f"from {sources_then}")
    conn.execute("create or replace temp table entry_refold (namespace varchar, entry_id varchar)")
    try:
        with transaction(conn):
            sources = "select *, $v as version from entry_sources_now"
            if stale or not stored:
                _fold_all(conn, query, provenance)
                replace_table(conn, ENTRY_SOURCES, sources, {"v": version}, own_transaction=False)
                changes.record(conn, ENTRIES.qualified, version, as_of, writes_now, None, last)
            else:
                _refold_changed(conn, query, provenance)
                # only the refolded entries' hashes change (rewriting all of them was 0.5 s a night at 1M), and
                # only those of entries whose writes changed are read
                # (by row id, the rows of entry_sources_then refolded: two correlated "exists" took 0.06-0.09 s of
                # a 1 %-churn night at 1M entries, this 0.035 s)
                refolded = entry_rows(ENTRY_SOURCES.qualified, "select * from entry_refold",
                                      "rowid as found, namespace, entry_id")
                conn.execute(f"delete from core.entry_sources where rowid in (select found from ({refolded}))")
                conn.execute(f"insert into core.entry_sources select {ENTRY_SOURCES.select_list('q')} from ({sources}) q "
                             "semi join entry_refold as r using (namespace, entry_id)", {"v": version})
                changes.record(conn, ENTRIES.qualified, version, as_of, writes_now, "select * from entry_refold",
                               last)
            create_successors_view(conn)
        # the stages after this one shingle and judge the entries folded: with enough of them, the compiled
        # loops load meanwhile, beside the stages that run in DuckDB
        if load_ahead:
            folded = "core.entries" if stale or not stored else "entry_refold"
            text.load_compiled_ahead(conn.execute(f"select count(*) from {folded}").fetchone()[0])
    finally:
        conn.execute("drop view if exists entry_sources_then")
        for temp in ("entry_sources_now", "entry_refold", "fold_provenance", "input_changes"):
            conn.execute(f"drop table if exists {temp}")
    return conn.execute("select count(*) from core.entries").fetchone()[0]


# Writes aggregated per pass of a full fold. The provenance's aggregate (lists and distinct counts per
# entry) does not spill; each pass reads the narrow columns of every write, and the wide rows are read
# once after the passes (read in every pass, as before, the 10M run's entry fold took 173.0 s, in a slower
# spell; this way 93.7 s: make bench-10m, docs/performance.md). Pass sizes compared on the fold alone of a
# 10M store, rolled back, the same rows each way: 2M writes 69.6-72.7 s, 3.4M 58.3 s, 5M 54.4-55.3 s (peak
# RSS 3.1 GB), one pass 58.9 s (3.5 GB). At 1M there is one pass; the night's peak RSS, reached later in
# the near-duplicate stage, rose with this fold from 3.1 to 3.5 GB: DuckDB keeps the blocks it read cached
# up to its memory limit, and that stage's arrays sat beside them (it now lets them go first: nearindex._full).
FOLD_PASS_WRITES = 5_000_000


def _fold_all(conn, query: str, provenance: str) -> None:
    """Fold every entry: their provenance in passes of whole namespaces (a hash of the namespace picks its
    pass; an entry and what supersedes it share a namespace, so each pass is complete), then their
    current versions' rows, read once."""
    writes = conn.execute("select count(*) from core.memory_writes").fetchone()[0]
    passes = max(1, -(-writes // FOLD_PASS_WRITES))
    for part in range(passes):
        into = "create or replace temp table fold_provenance as" if part == 0 else "insert into fold_provenance"
        conn.execute(f"{into} {provenance}", {"all": True, "passes": passes, "part": part})
    replace_table(conn, ENTRIES, query, {"all": True}, own_transaction=False)


def _refold_changed(conn, query: str, provenance: str) -> None:
    conn.execute("""insert into entry_refold
        select coalesce(n.namespace, s.namespace) as namespace, coalesce(n.entry_id, s.entry_id) as entry_id
        from entry_sources_now as n full outer join entry_sources_then as s using (namespace, entry_id)
        where n.writes_hash is distinct from s.writes_hash""")
    # (found by their hashes, store.entry_rows: by key with "exists", 0.03-0.044 s of a 1 %-churn night at 1M
    # entries, this 0.014-0.034 s)
    refolded = entry_rows(ENTRIES.qualified, "select * from entry_refold", "rowid as stored_row, namespace, entry_id")
    conn.execute(f"delete from core.entries where rowid in (select stored_row from ({refolded}))")
    conn.execute(f"create or replace temp table fold_provenance as {provenance}",
                 {"all": False, "passes": 1, "part": 0})
    conn.execute(f"insert into core.entries select {ENTRIES.select_list('q')} from ({query}) q")


def build_recall_results(conn, as_of: datetime, cfg=None) -> int:
    """Unnests the results of each memory.recall event, parsing only events not in the table yet (as
    core.memory_writes does)."""
    return _refresh_per_event(conn, RECALL_RESULTS, "recall_results", as_of, "memory.recall")


def build_checks(conn, as_of: datetime, cfg=None) -> int:
    """Flattens each memory.check event, parsing only events not in the table yet."""
    return _refresh_per_event(conn, CHECKS, "checks", as_of, "memory.check")


def _refresh_per_event(conn, table: Table, query_name: str, as_of: datetime, event_type: str) -> int:
    query = sql.load(query_name)
    version = code_version(query_name, query, table.ddl(), duckdb.__version__)
    return refresh_per_event(conn, table, query, as_of, version, event_type)


def build_runs(conn, as_of: datetime, cfg=None) -> int:
    """Pairs run.start and run.end events per run."""
    return _build(conn, RUNS, "runs", as_of)


def build_entry_usage(conn, as_of: datetime, cfg=None) -> int:
    """Recalls, injections and checks per entry; only passing checks count as proof. Derived again only
    for the entries whose writes, recalls or checks changed (changes.refresh_entries)."""
    query = sql.load("entry_usage")
    return changes.refresh_entries(conn, ENTRY_USAGE, query, {"as_of": as_of},
                                   code_version("entry_usage", query, ENTRY_USAGE.ddl(), duckdb.__version__),
                                   [ENTRIES.qualified, RECALL_RESULTS.qualified, CHECKS.qualified])
