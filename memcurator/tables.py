"""Every table's columns, declared once.

The DDL, the Dagster column schema (``dagster/column_schema``), the schema checks and the
table catalogue in docs/tables.md are all derived from these declarations.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    description: str
    nullable: bool = True
    compression: str = ""  # a storage compression DuckDB uses instead of choosing one (see LONG_TEXT)
    expression: str = ""  # computed from the row's other columns on every write ({row}: the row's prefix)
    hashes: tuple[str, ...] = ()  # a row hash's: the columns it hashes (with_row_hash)


@dataclass(frozen=True)
class Table:
    schema: str
    name: str
    grain: str
    columns: tuple[Column, ...]
    key: tuple[str, ...] = ()
    # a view's: a query of one row counting the nulls of non-nullable columns from the tables the view reads, a
    # column named after each (schema_mismatches counts the others through the view)
    nulls: str = ""

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.name}"

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    def ddl(self) -> str:
        cols = ", ".join(
            f"{c.name} {c.type}{'' if c.nullable else ' NOT NULL'}"
            + (f" USING COMPRESSION '{c.compression}'" if c.compression else "") for c in self.columns
        )
        return f"CREATE TABLE IF NOT EXISTS {self.qualified} ({cols})"

    def select_list(self, source: str = "") -> str:
        """Cast-and-order projection so any query result lands in the declared shape."""
        prefix = f"{source}." if source else ""
        return ", ".join(f"CAST({c.expression.format(row=prefix) if c.expression else prefix + c.name} AS {c.type}) "
                         f"AS {c.name}" for c in self.columns)


def C(name: str, type_: str, description: str, nullable: bool = True, compression: str = "",
      expression: str = "") -> Column:
    return Column(name, type_, description, nullable, compression, expression)


# The texts the nightly steps write are stored as they are: DuckDB otherwise tries each string
# compression on every segment and picks FSST, which cost a third of writing them (1M entries:
# memory_writes 12.7 s -> 8.2 s, entries 8.6 s -> 6.5 s) for about half their disk. (The log's JSON
# payloads, raw.events.data, kept the default then; FSST is now off for every column: store.DISABLED_COMPRESSION.)
LONG_TEXT = "uncompressed"


AS_OF = C("as_of", "TIMESTAMP", "Exclusive upper bound on event time this row was derived for (UTC).", False)
NS = C("namespace", "VARCHAR", "Tenant/user/fleet scope; nothing crosses it.", False)
ENTRY = C("entry_id", "VARCHAR", "Entry id (given by the writer, or derived from the content).", False)
# The per-entry tables carry a 64-bit hash of their entry: a night reads the rows of the entries it derives
# again by it (changes.refresh_entries), where a join on the two strings read and hashed both of every row
# (a 1M-row table for 40k entries: 35 -> 13 ms); the rows read are then matched by (namespace, entry_id),
# so a hash two entries share only widens a read. DuckDB's hash: the versions of the tables holding it
# name DuckDB's version, and another version derives them again.
ENTRY_HASH = C("entry_hash", "UBIGINT", "hash(namespace, entry_id) in DuckDB: what a night's reads of the entries "
              "it derives again join on first.", False, expression="hash({row}namespace, {row}entry_id)")

# A per-entry table a night derives again for the entries whose inputs changed carries a hash of each row's
# values: the night compares it, not every column, with the rows it derives (changes.refresh_entries), so
# it reads the stored rows' keys and hashes instead of all their columns (at 1M entries, the 33k stored rows
# of a 1 %-churn night's scope, warm: core.entry_lifecycle 0.041 -> 0.013 s, mart.recall_ranking 0.037 -> 0.014 s).
# Two rows that differ share a hash once in 2^64: the night would then keep the stored row (the check of
# reproducibility, which compares values, would find it). It is the hash of the values as declared (cast),
# computed on every write, so the full and the incremental derivation store the same one.
ROW_HASH = "row_hash"


def with_row_hash(columns: tuple[Column, ...], leave_out: tuple[str, ...] = ()) -> tuple[Column, ...]:
    """``columns`` and the hash of each row's values in them, but the entry hash, as_of and ``leave_out``
    (columns that do not count as a change of the row: changes.refresh_entries' ``compare``)."""
    hashed = tuple(c for c in columns if c.name not in (ENTRY_HASH.name, AS_OF.name, *leave_out))
    expression = "hash(" + ", ".join(f"CAST({{row}}{c.name} AS {c.type})" for c in hashed) + ")"
    what = "its values" if not leave_out else f"its values but {', '.join(leave_out)}"
    return columns + (Column(ROW_HASH, "UBIGINT", f"Hash of {what} in DuckDB: a night compares it with the rows it "
                             "derives again, to find those that changed.", False, "uncompressed", expression,
                             tuple(c.name for c in hashed)),)


LANDED_FILES = Table(
    "raw", "landed_files",
    "One row per transcript file ingested from the landing folder.",
    (
        C("source_file", "VARCHAR", "Path relative to the landing folder.", False),
        C("sha256", "VARCHAR", "Content hash of the file bytes.", False),
        C("bytes", "BIGINT", "File size in bytes.", False),
        C("lines", "BIGINT", "Lines read (non-empty).", False),
        C("valid_events", "BIGINT", "Lines accepted as new events.", False),
        C("duplicate_events", "BIGINT", "Lines that repeat an event already ingested (same id and content).", False),
        C("quarantined_lines", "BIGINT", "Lines sent to quarantine.", False),
    ),
    key=("source_file",),
)

EVENTS = Table(
    "raw", "events",
    "One row per valid event in the log (unique event_id).",
    (
        C("event_id", "VARCHAR", "Event id, unique across the log.", False),
        C("type", "VARCHAR", "run.start, run.end, memory.write, memory.recall or memory.check.", False),
        C("ts", "TIMESTAMP", "When the event happened (UTC).", False),
        NS,
        C("run_id", "VARCHAR", "Agent run the event belongs to."),
        C("agent_id", "VARCHAR", "Agent that emitted the event."),
        C("actor", "VARCHAR", "Source of the event: agent, human, test, import, ...", False),
        C("user_id", "VARCHAR", "End user the event concerns, where the log records one."),
        C("data", "VARCHAR", "Type-specific payload as minified JSON.", False),
        C("content_hash", "VARCHAR", "sha256 of the minified event JSON.", False),
        C("source_file", "VARCHAR", "Landing file the event was first read from.", False),
        C("line_no", "BIGINT", "1-based line number in that file.", False),
    ),
    key=("event_id",),
)

QUARANTINE = Table(
    "raw", "quarantine",
    "One row per rejected input line (or whole file), with the reason.",
    (
        C("source_file", "VARCHAR", "Landing (or decisions) file the line came from.", False),
        C("line_no", "BIGINT", "1-based line number; 0 when the whole file was rejected.", False),
        C("reason", "VARCHAR", "Machine-readable reason code, e.g. invalid_json, missing_field.", False),
        C("detail", "VARCHAR", "Human-readable detail: which field, which limit.", False),
        C("raw_bytes", "BIGINT", "Length of the rejected line in bytes.", False),
        C("raw_text", "VARCHAR", "The rejected line, truncated to the configured limit.", False),
    ),
    key=("source_file", "line_no"),
)

CURATOR_DECISIONS = Table(
    "raw", "curator_decisions",
    "One row per valid curator decision (approve/reject/unmerge a cluster, resolve a conflict).",
    (
        C("decision_id", "VARCHAR", "Decision id, unique.", False),
        C("ts", "TIMESTAMP", "When the curator decided (UTC).", False),
        NS,
        C("action", "VARCHAR", "approve, reject, unmerge, replace, narrow, retire, dismiss, confirm.", False),
        C("target_kind", "VARCHAR", "cluster, conflict or link.", False),
        C("target_id", "VARCHAR", "Cluster id, conflict id, or (link) the replacing entry id.", False),
        C("reason", "VARCHAR", "Why the curator decided so.", False),
        C("curator", "VARCHAR", "Who decided.", False),
        C("data", "VARCHAR", "Extra decision fields as JSON.", False),
        C("source_file", "VARCHAR", "Decisions file the row came from.", False),
        C("line_no", "BIGINT", "1-based line number in that file.", False),
    ),
    key=("decision_id",),
)

MEMORY_WRITES = Table(
    "core", "memory_writes",
    "One row per memory.write event with ts < as_of.",
    (
        C("event_id", "VARCHAR", "The write event.", False),
        NS, ENTRY,
        C("ts", "TIMESTAMP", "When the write happened (UTC).", False),
        C("run_id", "VARCHAR", "Run that wrote it."),
        C("agent_id", "VARCHAR", "Agent that wrote it."),
        C("actor", "VARCHAR", "Source of the write.", False),
        C("text", "VARCHAR", "The entry text as written.", False, LONG_TEXT),
        C("class", "VARCHAR", "identity, preference, relationship, config, operational, episodic, lesson, principle.", False),
        C("importance", "DOUBLE", "Declared importance 0-1 (missing means 1.0 downstream)."),
        C("trust", "DOUBLE", "Writer's trust 0-1 (missing means 1.0).", False),
        C("generality", "DOUBLE", "Declared generality 0-3, if any."),
        C("supersedes", "VARCHAR", "Entry id this write explicitly replaces."),
        C("supersede_reason", "VARCHAR", "Why it replaces it (required with supersedes)."),
        C("valid_from", "TIMESTAMP", "Start of the fact's validity (about the fact, not the note)."),
        C("valid_until", "TIMESTAMP", "End of the fact's validity."),
        C("tags", "VARCHAR[]", "Subject keys: files, services, workflows the entry is about.", False),
        ENTRY_HASH,
    ),
    key=("event_id",),
)

ENTRIES = Table(
    "core", "entries",
    "One row per (namespace, entry_id) written before as_of: the current version plus provenance.",
    (
        NS, ENTRY,
        C("text", "VARCHAR", "Text of the current (latest) version.", False, LONG_TEXT),
        C("norm_text", "VARCHAR", "Normalised text of the current version: lower case, whitespace runs as one space, space separators trimmed (sql/norm_text.sql).", False, LONG_TEXT),
        C("class", "VARCHAR", "Class of the current version.", False),
        C("importance", "DOUBLE", "Declared importance of the current version (null = not declared)."),
        C("trust", "DOUBLE", "Trust of the current version.", False),
        C("generality", "DOUBLE", "Declared generality of the current version (null = derive)."),
        C("tags", "VARCHAR[]", "Subject keys of the current version.", False),
        C("valid_from", "TIMESTAMP", "Validity start of the current version."),
        C("valid_until", "TIMESTAMP", "Validity end of the current version."),
        C("supersedes", "VARCHAR", "Entry this one explicitly replaces."),
        C("supersede_reason", "VARCHAR", "Reason given for that replacement."),
        C("first_written_at", "TIMESTAMP", "First write of this entry id.", False),
        C("last_written_at", "TIMESTAMP", "Latest write of this entry id.", False),
        C("version_count", "BIGINT", "Number of writes of this entry id.", False),
        C("distinct_runs", "BIGINT", "Distinct runs that wrote it.", False),
        C("distinct_agents", "BIGINT", "Distinct agents that wrote it.", False),
        C("writer_agents", "VARCHAR[]", "Agents that wrote it, sorted.", False),
        C("last_event_id", "VARCHAR", "Event id of the current version.", False),
        ENTRY_HASH,
    ),
    key=("namespace", "entry_id"),
)

RECALL_RESULTS = Table(
    "core", "recall_results",
    "One row per (recall event, returned entry) with ts < as_of.",
    (
        C("event_id", "VARCHAR", "The recall event.", False),
        NS,
        C("ts", "TIMESTAMP", "When the recall happened (UTC).", False),
        C("run_id", "VARCHAR", "Run that recalled."),
        C("agent_id", "VARCHAR", "Agent that recalled."),
        C("query", "VARCHAR", "The query text.", False),
        ENTRY,
        C("rank", "INTEGER", "1-based rank of the entry in the result.", False),
        C("injected", "BOOLEAN", "Whether the entry was injected into the prompt.", False),
        ENTRY_HASH,
    ),
    key=("event_id", "entry_id"),
)

CHECKS = Table(
    "core", "checks",
    "One row per memory.check event with ts < as_of.",
    (
        C("event_id", "VARCHAR", "The check event.", False),
        NS, ENTRY,
        C("ts", "TIMESTAMP", "When the check ran (UTC).", False),
        C("status", "VARCHAR", "pass or fail.", False),
        C("error_class", "VARCHAR", "assertion or transient (fail only)."),
        C("actor", "VARCHAR", "Who checked: test, human, ...", False),
        C("corrected_by", "VARCHAR", "Entry id that corrects the checked entry, if named."),
        ENTRY_HASH,
    ),
    key=("event_id",),
)

RUNS = Table(
    "core", "runs",
    "One row per (namespace, run_id) seen in run.start/run.end events with ts < as_of.",
    (
        NS,
        C("run_id", "VARCHAR", "The run.", False),
        C("agent_id", "VARCHAR", "Agent of the run."),
        C("started_at", "TIMESTAMP", "run.start time."),
        C("ended_at", "TIMESTAMP", "run.end time."),
        C("outcome", "VARCHAR", "success, failure, aborted, unknown; null while running."),
        C("task", "VARCHAR", "Task label from run.start, if any."),
        AS_OF,
    ),
    key=("namespace", "run_id"),
)

ENTRY_USAGE = Table(
    "core", "entry_usage",
    "One row per (namespace, entry_id) in core.entries: recalls and checks before as_of.",
    with_row_hash((
        NS, ENTRY,
        C("recall_count", "BIGINT", "Times returned by a recall.", False),
        C("last_recalled_at", "TIMESTAMP", "Latest recall that returned it."),
        C("injected_count", "BIGINT", "Times injected into a prompt.", False),
        C("last_injected_at", "TIMESTAMP", "Latest injection."),
        C("distinct_recall_runs", "BIGINT", "Distinct runs that recalled it.", False),
        C("proven_count", "BIGINT", "Passing checks (a recall is not a verification).", False),
        C("failed_assertions", "BIGINT", "Failing checks with error class assertion.", False),
        C("transient_failures", "BIGINT", "Failing checks with error class transient (never held against it).", False),
        C("last_verified_at", "TIMESTAMP", "Latest passing check."),
        C("last_failed_assertion_at", "TIMESTAMP", "Latest failing assertion check."),
        C("last_check_status", "VARCHAR", "Status of the latest non-transient check: pass or fail."),
        ENTRY_HASH,
    )),
    key=("namespace", "entry_id"),
)

TABLES: dict[str, Table] = {
    t.qualified: t
    for t in (
        LANDED_FILES, EVENTS, QUARANTINE, CURATOR_DECISIONS,
        MEMORY_WRITES, ENTRIES, RECALL_RESULTS, CHECKS, RUNS, ENTRY_USAGE,
    )
}


def register(table: Table) -> Table:
    """Add a table declared in another module (forces declare their own tables)."""
    TABLES[table.qualified] = table
    return table


def stored_columns(conn: duckdb.DuckDBPyConnection, table: Table) -> list[tuple[str, str]]:
    """(name, type) of the stored table's columns, in order; empty when it does not exist."""
    return conn.execute(
        "select column_name, data_type from information_schema.columns "
        "where table_schema = ? and table_name = ? order by ordinal_position",
        [table.schema, table.name],
    ).fetchall()


def null_counts(source: str, names: list[str]) -> str:
    """A query of one row: the nulls of each of ``names`` in ``source``, in a column named after it. It reads
    the rows with a null only: a view computes its rows on each read (the recall view's 19 reads took
    2.2-2.3 s at 1M entries, the one 1.4-2.2 s), and a table's statistics tell DuckDB that no row has one
    (1M rows: 2-16 ms; counting over every row instead took 0.1-0.8 s)."""
    return ("select " + ", ".join(f'count(*) filter (where "{name}" is null) as "{name}"' for name in names)
            + f" from {source} where " + " or ".join(f'"{name}" is null' for name in names))


def schema_mismatches(conn: duckdb.DuckDBPyConnection, table: Table) -> list[str]:
    """Differences between the table in the database and its declaration (empty = matches)."""
    actual = stored_columns(conn, table)
    if not actual:
        return [f"{table.qualified} does not exist"]
    problems = []
    declared = [(c.name, c.type) for c in table.columns]
    if [a[0] for a in actual] != [d[0] for d in declared]:
        problems.append(f"columns {[a[0] for a in actual]} != declared {[d[0] for d in declared]}")
    for (name, atype), (_, dtype) in zip(actual, declared):
        if atype.upper() != dtype.upper():
            problems.append(f"{name}: type {atype} != declared {dtype}")
    present = dict(actual)
    required = [c.name for c in table.columns if not c.nullable and c.name in present]
    counted: dict[str, int] = {}
    if required and table.nulls:
        result = conn.execute(table.nulls)
        counted = {name: nulls for (name, *_), nulls in zip(result.description, result.fetchone()) if name in required}
    rest = [name for name in required if name not in counted]
    if rest:
        counted.update(zip(rest, conn.execute(null_counts(table.qualified, rest)).fetchone()))
    problems += [f"{name}: {counted[name]} nulls in a non-nullable column" for name in required if counted[name]]
    return problems
