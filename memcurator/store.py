"""The DuckDB store: one writer, atomic table replacement, a published snapshot for readers.

Only the pipeline writes ``store.duckdb``, one short-lived connection at a time. Readers
(analysts, ``recall()``) open ``published/store.duckdb``, a copy published by atomic rename
after each run, so they never take the writer's lock and never see a half-written table.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import re
import shutil
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, NamedTuple

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa

from memcurator.config import switch
from memcurator.tables import ENTRY_HASH, Table, stored_columns

SCHEMAS = ("raw", "core", "mart", "analyst", "work")


MEMORY_LIMIT_ENV = "MEMCURATOR_DUCKDB_MEMORY_LIMIT"
# DuckDB's own default is 80 % of RAM; beyond the limit it spills what it can to disk (not every
# operator can: the entry fold's aggregate does not, so a full fold runs in passes). 2.5 GB leaves
# room for the polars frames of a stage within a 4 GB process at 1M entries (4 GB: the fold peaked at
# 4.3 GB RSS; 3 GB: the contradiction stage peaked at 3.8-4.0 GB after the changes of 2026-12-02, cause
# not pinned down; 2.5 GB: 3.4 GB, the stages as fast within the machine's noise)
DEFAULT_MEMORY_LIMIT = 2.5e9  # bytes
# Past that, the default follows the log: a store's joins and windows grow with its events, and at 10M
# entries (14M events) the 2.5 GB spilled (the lifecycle's rules alone: 63.2 s, 31.6 s at 8 GB). Capped
# at a share of the machine's memory: the near-duplicate stage's arrays live outside DuckDB.
LIMIT_BYTES_PER_EVENT = 512
LIMIT_RAM_SHARE = 0.4
_LIMIT_VARIABLE = "memcurator_memory_limit"  # the limit connect set, for release_buffers
# The writers' checkpoints do not try FSST on strings. To choose a string column's compression a checkpoint
# analyses each method on each segment, and training FSST's symbol tables took a fifth of the checkpoints of
# a 1 %-churn night at 1M entries; strings stored as dictionaries or as they are also read faster. The bench
# at 1M (`memcurator bench --entries 1000000 --namespaces 10000 --churn 0.01 --churn-nights 3
# --baseline-entries 2000`, two runs each): ingest 14.9-15.1 -> 13.5-13.8 s, full night 28.9-29.2 ->
# 27.1-27.4 s, churn nights 4.27-4.56 -> 3.98-4.14 s. For a quarter more disk: the lab's 1M store copied
# 2.46 -> 3.08 GB, the log 345 -> 735 MB of it (docs/curation.md). DuckDB's setting is the database's, and a
# column's "using compression 'fsst'" is ignored while it is off: the log would keep FSST only until the
# monthly merge wrote its row groups again. A store written before keeps its FSST segments until they are
# written again.
DISABLED_COMPRESSION = "fsst"


def memory_limit(events: int = 0) -> str:
    """DuckDB's memory limit: the environment's, else the default for a log of ``events`` events."""
    value = os.environ.get(MEMORY_LIMIT_ENV)
    if value is None:
        return default_memory_limit(events, os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    value = value.strip()
    if not _SIZE.fullmatch(value):
        raise ValueError(f"{MEMORY_LIMIT_ENV}={value!r}: expected a size such as 4GB or 512MiB")
    return value


_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)")
_UNIT_BYTES = {"KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
               "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}


def size_bytes(size: str) -> float:
    """Bytes of a size as memory_limit takes it (4GB, 512MiB)."""
    number, unit = _SIZE.fullmatch(size.strip()).groups()
    return float(number) * _UNIT_BYTES[unit]


def default_memory_limit(events: int, ram_bytes: int) -> str:
    limit = max(DEFAULT_MEMORY_LIMIT, min(events * LIMIT_BYTES_PER_EVENT, ram_bytes * LIMIT_RAM_SHARE))
    return f"{limit / 1e9:.1f}GB"


def _log_events(conn: duckdb.DuckDBPyConnection) -> int:
    """The events of the store's log, from the catalogue (no scan); 0 before the first ingest."""
    row = conn.execute("select estimated_size from duckdb_tables() where database_name = current_database() "
                       "and schema_name = 'raw' and table_name = 'events'").fetchone()
    return row[0] if row else 0


@contextmanager
def connect(path: Path | str, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
    # DuckDB names the database after its file: a file named like one of the store's schemas makes every
    # name in that schema ambiguous ("Ambiguous reference to catalog or schema")
    if Path(path).stem in SCHEMAS:
        raise ValueError(f"{path}: a store cannot be named after one of its schemas ({', '.join(SCHEMAS)}); "
                         "name the file otherwise (the CLI uses store.duckdb)")
    conn = duckdb.connect(str(path), read_only=read_only)
    try:
        conn.execute("SET TimeZone = 'UTC'")
        conn.execute("SET enable_progress_bar = false")
        limit = memory_limit(_log_events(conn))
        conn.execute(f"SET memory_limit = '{limit}'")
        conn.execute(f"SET VARIABLE {_LIMIT_VARIABLE} = '{limit}'")
        # a table is a set of rows: every reader orders what it needs, so an insert need not keep its
        # query's order (keeping it cost 3 s of the 10 s that flattening 1M writes took; a full night at
        # 1M gives the same tables either way, compared row by row)
        conn.execute("SET preserve_insertion_order = false")
        if not read_only:
            # checkpoints write changes without merging row groups: the close of a night compacts
            # when it is due (memcurator/compaction.py)
            conn.execute("SET max_vacuum_tasks = 0")
            conn.execute(f"SET disabled_compression_methods = '{DISABLED_COMPRESSION}'")
            for schema in SCHEMAS:
                conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        yield conn
    finally:
        conn.close()


LOCKED = "Could not set lock"  # DuckDB's error when another process holds the file


class StoreBusy(RuntimeError):
    """Another process held the store for longer than the caller would wait."""


@contextmanager
def connect_when_free(path: Path | str, wait_seconds: float, log: Callable[[str], None] | None = None,
                      poll: float = 0.5) -> Iterator[duckdb.DuckDBPyConnection]:
    """``connect(path)``, once no other process holds the store: DuckDB lets one process open the file,
    and a run or command launched beside another (an asset materialised from the UI during a night, a
    purge) failed on its lock. Waits up to ``wait_seconds``, saying so through ``log`` when it starts
    waiting and each minute after; then fails, naming what DuckDB said."""
    started = time.monotonic()
    said = None
    while True:
        opened = connect(path)
        try:
            conn = opened.__enter__()
            break
        except duckdb.IOException as error:
            waited = time.monotonic() - started
            if LOCKED not in str(error):
                raise
            if waited >= wait_seconds:
                raise StoreBusy(f"{path} is held by another process: waited {waited:.0f} s for it "
                                f"(DuckDB: {error}); run again when that process ends") from error
            if log is not None and (said is None or waited - said >= 60):
                log(f"waiting for {path}: another process holds it (DuckDB: {error}); waited {waited:.0f} s "
                    f"of {wait_seconds:.0f}")
                said = waited
            time.sleep(min(poll, max(wait_seconds - waited, 0.0)))
            poll = min(poll * 2, 5.0)
    try:
        yield conn
    finally:
        opened.__exit__(None, None, None)


# a quoted string (kept: it may hold "--") or a comment to the end of its line (dropped)
_STRING_OR_COMMENT = re.compile(r"'(?:[^']|'')*'|--[^\n]*")


def without_comments(statement: str) -> str:
    """The statement with its comments dropped (a "--" inside a quoted string stays)."""
    return _STRING_OR_COMMENT.sub(lambda m: m.group(0) if m.group(0).startswith("'") else "", statement)


def gist(statement: str, length: int = 160) -> str:
    """A statement's first words on one line, its comments dropped (for summaries of where time went)."""
    text = " ".join(without_comments(statement).split())
    return text if len(text) <= length else text[:length - 3] + "..."


def params_used(statement: str, params: dict) -> dict:
    """The parameters a statement names ($name) outside its comments: DuckDB refuses those it does not."""
    names = set(re.findall(r"\$(\w+)", without_comments(statement)))
    return {k: v for k, v in params.items() if k in names}


def code_version(name: str, *parts: str) -> str:
    """A short version of the code that derived stored state (a query, a declaration, ...): state stored
    under another version is derived again, never reused."""
    return f"{name}:" + hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:16]


@contextmanager
def transaction(conn: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """Everything in the block commits together, or nothing does."""
    conn.execute("BEGIN TRANSACTION")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def path_literal(path: Path | str) -> str:
    """A path as the inside of a SQL string literal: COPY and ATTACH take paths as literals (DuckDB does
    not bind them); only our own paths get here."""
    return str(path).replace("'", "''")


def table_exists(conn: duckdb.DuckDBPyConnection, schema: str, name: str, database: str | None = None) -> bool:
    """A stored table of that name (a view is not one); in ``database`` (an attached one) when given."""
    return conn.execute("select count(*) from duckdb_tables() where schema_name = ? and table_name = ? "
                        "and database_name = coalesce(?, database_name)", [schema, name, database]).fetchone()[0] > 0


def connection_memory_limit(conn: duckdb.DuckDBPyConnection) -> str | None:
    """The memory limit connect set on this connection (None: not a connection of connect's)."""
    return conn.execute(f"select getvariable('{_LIMIT_VARIABLE}')").fetchone()[0]


def release_buffers(conn: duckdb.DuckDBPyConnection, floor: str = "256MB") -> None:
    """Let DuckDB give back the blocks it keeps cached (the stored tables it read; temp tables are
    written to its temp directory): lowering the memory limit evicts them, and the limit is set back
    to the one connect set (DuckDB shows it rounded). For a stage whose peak is in polars, after it
    has read its input: the cache would sit beside it."""
    with buffers_held_to(conn, floor):
        pass


@contextmanager
def buffers_held_to(conn: duckdb.DuckDBPyConnection, floor: str = "256MB") -> Iterator[None]:
    """Within the block DuckDB's memory limit is ``floor`` (or the lower one connect set): it caches no more
    than that of what it reads (release_buffers lets the cache go after). For a read streamed into polars,
    whose frames the cache would sit beside; a query that needs more memory than that fails in the block."""
    limit = connection_memory_limit(conn)
    if limit is None or size_bytes(limit) <= size_bytes(floor):  # not connect's, or already as low
        yield
        return
    conn.execute(f"SET memory_limit = '{floor}'")
    try:
        yield
    finally:
        conn.execute(f"SET memory_limit = '{limit}'")


def streamed_frame(conn: duckdb.DuckDBPyConnection, query: str, rows_per_batch: int = 1 << 20) -> pl.DataFrame:
    """The result of ``query`` as a polars frame, fetched batch by batch, each batch's Arrow form let go once
    polars holds it (``.pl()`` builds the whole result's Arrow table first)."""
    reader = conn.execute(query).fetch_record_batch(rows_per_batch)
    frames = [pl.from_arrow(batch) for batch in reader]
    return pl.concat(frames, rechunk=False) if frames else pl.from_arrow(reader.schema.empty_table())


def _spill_place(where: duckdb.DuckDBPyConnection | Path, name: str) -> tuple[Path | None, str]:
    """The folder the spill folders of ``name`` go in (None: the system's temporary one) and their prefix;
    ``where`` is a connection to the store or the store's file."""
    path = where if isinstance(where, Path) else where.execute(
        "select path from duckdb_databases() where database_name = current_database()").fetchone()[0]
    return (Path(path).parent, f"{Path(path).name}.{name}-") if path else (None, f"memcurator-{name}-")


def remove_spills(where: duckdb.DuckDBPyConnection | Path, name: str) -> list[str]:
    """Remove the ``spill_space`` folders of ``name`` beside the store (``where``: a connection to it, or
    its file): only one process writes a store, so outside a ``spill_space`` block they are what a
    killed night left. A stage that may spill calls it every night, not only on the nights it spills
    (at 10M entries the near-duplicate stage's full night leaves ~4 GB, and a store's nights are mostly
    incremental). Returns the names removed."""
    folder, prefix = _spill_place(where, name)
    stale = [p for p in folder.iterdir() if p.name.startswith(prefix) and p.is_dir()] if folder else []
    for path in stale:
        shutil.rmtree(path, ignore_errors=True)
    return sorted(p.name for p in stale)


def remove_every_spill(path: Path) -> list[str]:
    """Remove every ``spill_space`` folder beside the store's file, whatever its name (what killed nights,
    checks and profiles left: texts of entries, copies of the store or of its events). A purge calls it
    holding the store's write lock. Returns the names removed."""
    stale = [p for p in path.parent.iterdir() if p.name.startswith(f"{path.name}.") and p.is_dir()]
    for folder in stale:
        shutil.rmtree(folder, ignore_errors=True)
    return sorted(p.name for p in stale)


@contextmanager
def spill_space(where: duckdb.DuckDBPyConnection | Path, name: str) -> Iterator[Path]:
    """A folder for work too large to hold, removed after: beside the store's file (``where``: a
    connection to the store, or its file), named after it (the system's temporary folder for a store
    in memory, where nothing is removed first: others' folders may be there). One a killed night left is
    removed first (``remove_spills``)."""
    remove_spills(where, name)
    folder, prefix = _spill_place(where, name)
    with tempfile.TemporaryDirectory(prefix=prefix, dir=folder) as made:
        yield Path(made)


# A filter true of every hash, for the smaller side of a join on entry_hash: with a filter there DuckDB
# pushes a Bloom filter of that side's hashes into the scan of the larger table, which then skips the other
# rows before reading their other columns (a 1M-row table for 40k entries: 35 ms by (namespace, entry_id),
# 22 ms by hash, 9 ms with the Bloom filter); without one it builds none.
EVERY_HASH = "% 1000003 <> 99999999"


def define_hash_macros(conn: duckdb.DuckDBPyConnection) -> None:
    """The temp macros the SQL files hash with, made by the stages that run them: entry_hash_of(namespace,
    entry_id) hashes an entry as the tables' entry_hash column does (tables.ENTRY_HASH's expression, one for
    both), and every_hash(h) is EVERY_HASH's filter, true of every hash, for the smaller side of a join on
    entry_hash."""
    conn.execute("create or replace temp macro entry_hash_of(namespace, entry_id) as "
                 f"{ENTRY_HASH.expression.format(row='')}")
    conn.execute(f"create or replace temp macro every_hash(h) as h {EVERY_HASH}")


def entry_hashes(entries: str) -> str:
    """The hashes (tables.ENTRY_HASH) of the (namespace, entry_id) rows of the query ``entries``, as the
    smaller side of a join on entry_hash. (Cast to the tables' type: a registered frame's categorical
    column hashes otherwise.)"""
    hashed = ENTRY_HASH.expression.format(row="")
    return (f"select {hashed} as entry_hash from (select namespace::varchar as namespace, entry_id::varchar as "
            f"entry_id from ({entries})) where {hashed} {EVERY_HASH}")


def rows_by_key(table: str, keys: str) -> str:
    """A query of the rows of the per-entry ``table`` (one with entry_hash) whose (namespace, entry_id) is among
    the rows of the query ``keys``, read by row id: the rows are found by entry_rows, the other columns read
    only from the row groups holding them. A night deletes the rows it derives again and inserts them at the
    table's end (changes.refresh_entries), so the rows of changed entries are mostly in the last row groups,
    and their wide columns (texts) are read from those alone: by key, DuckDB reads the column of every row
    group (the texts of the 10k entries of a 1 %-churn night at 1M entries: 0.39-0.47 s, first read in the
    process; by row id 0.07 s). Use it in the transaction the rows are read in (row ids change when a table
    is compacted)."""
    found = entry_rows(table, keys, "rowid as found, namespace, entry_id")
    return f"select * from {table} where rowid in (select found from ({found}))"


def entry_rows(table: str, keys: str, columns: str = "*") -> str:
    """``columns`` (with namespace and entry_id) of the rows of the per-entry ``table`` (one with entry_hash) whose
    (namespace, entry_id) is among the rows of the query ``keys``: the rows with one of their hashes, matched by key
    after (materialised between, or DuckDB pushes that join's filter on the strings into the scan of every row)."""
    return (f"with hashed as materialized (select {columns} from {table} semi join ({entry_hashes(keys)}) "
            f"using (entry_hash)) select * from hashed semi join ({keys}) using (namespace, entry_id)")


def ensure_table(conn: duckdb.DuckDBPyConnection, table: Table) -> None:
    conn.execute(f"CREATE SCHEMA IF NOT EXISTS {table.schema}")
    conn.execute(table.ddl())


def stored_as_declared(conn: duckdb.DuckDBPyConnection, table: Table) -> bool | None:
    """Whether the stored ``table`` has the declared columns and types, in order (None: not stored)."""
    stored = [(name, kind.upper()) for name, kind in stored_columns(conn, table)]
    return (stored == [(c.name, c.type.upper()) for c in table.columns]) if stored else None


def ensure_cache(conn: duckdb.DuckDBPyConnection, table: Table) -> None:
    """ensure_table for a table that only keeps work for the next night: one stored with other columns
    (by the code of before) is dropped, so its work is done again."""
    if stored_as_declared(conn, table) is False:
        conn.execute(f"drop table {table.qualified}")
    ensure_table(conn, table)


def replace_table(
    conn: duckdb.DuckDBPyConnection, table: Table, query: str, params: dict | list | None = None,
    own_transaction: bool = True,
) -> int:
    """Replace ``table`` with the rows of ``query`` in one transaction; returns the row count.

    The table is recreated from its declaration, so NOT NULL and types are enforced on write,
    and columns are cast and ordered as declared. With ``own_transaction=False`` the caller holds
    the transaction (to replace several tables at once).
    """
    if own_transaction:
        conn.execute("BEGIN TRANSACTION")
    try:
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {table.schema}")
        conn.execute(f"DROP TABLE IF EXISTS {table.qualified}")
        conn.execute(table.ddl())
        conn.execute(
            f"INSERT INTO {table.qualified} SELECT {table.select_list('q')} FROM ({query}) q",
            params_used(query, params) if isinstance(params, dict) else params or {},
        )
        if own_transaction:
            conn.execute("COMMIT")
    except Exception:
        if own_transaction:
            conn.execute("ROLLBACK")
        raise
    return conn.execute(f"SELECT count(*) FROM {table.qualified}").fetchone()[0]


def create_view(conn: duckdb.DuckDBPyConnection, table: Table, query: str) -> None:
    """``table`` as a view over ``query``, in the declared columns (a store from before the view held a
    table of that name: it is dropped)."""
    if table_exists(conn, table.schema, table.name):
        conn.execute(f"drop table {table.qualified}")
    conn.execute(f"create or replace view {table.qualified} as select {table.select_list('q')} from ({query}) as q")


def set_version(conn: duckdb.DuckDBPyConnection, table: Table, version: str) -> None:
    """Record the version of the code that built a table's rows as its comment (quoted: a version may
    come from outside, such as a shard's file)."""
    comment_on(conn, table.qualified, version)


def comment_on(conn: duckdb.DuckDBPyConnection, qualified: str, comment: str) -> None:
    conn.execute(f"comment on table {qualified} is '{comment.replace(chr(39), chr(39) * 2)}'")


SCAN_CHUNK_ROWS = 122_880  # rows of a registered Arrow table's chunk at most (a DuckDB row group's)
SCAN_CHUNKS = 8  # chunks a smaller table is spread over, of one DuckDB vector at least
VECTOR_ROWS = 2048


def scannable(table: pa.Table, spread: bool = False) -> pa.Table:
    """``table`` in chunks of at most SCAN_CHUNK_ROWS rows (slices of its buffers, not a copy). DuckDB scans
    a registered Arrow table one chunk per thread, so a query over a table in one chunk (as a file's lines
    are built, or a frame polars has rechunked) ran on one thread: the validation of the bench's 1M writes
    (sql/validate_events.sql) took 12.7 s on one thread and 6.7 s in chunks. ``spread`` cuts a smaller table
    into SCAN_CHUNKS chunks of VECTOR_ROWS rows at least: the validation of a churn night's 9,928 writes took
    0.15 s in one chunk, 0.08-0.10 s in five. (Spread, the frames the near-duplicate stage registers made its
    churn night slower: 0.88-0.95 s -> 1.08-1.12 s.)"""
    rows = SCAN_CHUNK_ROWS
    if spread:
        rows = min(rows, max(VECTOR_ROWS, -(-table.num_rows // SCAN_CHUNKS)))
    return pa.Table.from_batches(table.to_batches(max_chunksize=rows), schema=table.schema)


@contextmanager
def registered(conn: duckdb.DuckDBPyConnection, spread: bool = False, **frames) -> Iterator[duckdb.DuckDBPyConnection]:
    """Polars frames (or Arrow tables) readable by name in the block's queries, unregistered after it
    (``spread``: see scannable)."""
    for name, frame in frames.items():
        conn.register(name, scannable(frame.to_arrow() if hasattr(frame, "to_arrow") else frame, spread))
    try:
        yield conn
    finally:
        for name in frames:
            conn.unregister(name)


def replace_table_from_frame(conn: duckdb.DuckDBPyConnection, table: Table, frame, query: str,
                            params: dict | None = None, name: str = "frame", own_transaction: bool = True) -> int:
    """replace_table over a polars frame registered as ``name`` for the duration of the query."""
    with registered(conn, **{name: frame}):
        return replace_table(conn, table, query, params, own_transaction)


FICLONE = 0x40049409  # Linux's ioctl that makes a file share another's blocks (linux/fs.h)
PAGE = 4096  # the unit a delta publish compares and writes (DuckDB's 256 KiB blocks start 12 KiB into the file)
WINDOW = 64 << 20  # bytes of the two files compared at a time


class Published(NamedTuple):
    path: Path
    published_by: str  # "clone" (the file shares the store's blocks), "delta" or "copy"
    written: int  # bytes written (0 for a clone; for a delta, the pages that differed)


# The publish reads the store through one descriptor per file, kept open: a process's locks on a file go
# when it closes any descriptor of it (POSIX), and DuckDB's lock on the store is one. Read through
# descriptors closed after each copy, a publish in the nightly job (whose run holds the store until it
# ends) and a purge's dropped the store's lock under the copy: another process could then open the store
# and write it while the snapshot was copied, or beside the run's connection. A descriptor goes when its
# path names another file (or none): no process can open the file it held by name any more.
_READERS: dict[tuple[int, int], tuple[str, int]] = {}


def _reader(path: Path) -> int:
    """A descriptor of ``path`` for reading that stays open (see _READERS)."""
    for key, (name, fd) in list(_READERS.items()):
        try:
            current = os.stat(name)
            stale = (current.st_dev, current.st_ino) != key
        except FileNotFoundError:
            stale = True
        if stale:
            os.close(fd)
            del _READERS[key]
    status = os.stat(path)
    kept = _READERS.get((status.st_dev, status.st_ino))
    if kept is not None:
        return kept[1]
    fd = os.open(path, os.O_RDONLY)
    opened = os.fstat(fd)  # (the file opened, should the path have been renamed over since the stat)
    # (were that file kept already, the new descriptor is left open, never closed: closing it would drop the locks)
    return _READERS.setdefault((opened.st_dev, opened.st_ino), (str(path), fd))[1]


def _clone(source: Path, target: Path) -> bool:
    """Write ``target`` as a clone of ``source`` where the filesystem can share blocks between files (XFS,
    btrfs; the blocks part only as either file is written later). False where it cannot (ext4, or no such
    call). (Lab, a 1M-entry store of 2.5 GB: cloned on XFS in under a millisecond.)"""
    try:
        import fcntl

        with open(target, "wb") as dst:
            fcntl.ioctl(dst.fileno(), FICLONE, _reader(source))
        return True
    except (ImportError, OSError):  # no fcntl (Windows), or no shared blocks here (EOPNOTSUPP, EXDEV, ...)
        return False


def spare_path(published_path: Path) -> Path:
    """The snapshot before the published one, kept where the store cannot be cloned: the next publish
    writes into it only the pages that differ from the store."""
    return published_path.with_name(f".{published_path.name}.spare")


SPARE_ENV = "MEMCURATOR_PUBLISH_SPARE"


def spare_wanted() -> bool:
    """Whether a publish keeps the spare: the environment's choice (MEMCURATOR_PUBLISH_SPARE), on by default.
    Off, ``published/`` holds one store-size file instead of two, and every publish copies the store
    where it cannot clone it."""
    try:
        return switch(os.environ.get(SPARE_ENV, "1"))
    except ValueError as error:
        raise ValueError(f"{SPARE_ENV}={error}") from None


def _locked(path: Path) -> bool:
    """Whether any process holds a lock on the file (DuckDB takes one for every connection, read-only
    ones too), from /proc/locks, which also shows this process's own; True where that cannot be read.
    Matched by inode number alone: /proc/locks names the filesystem's device, which is not always the one
    stat gives (btrfs subvolumes), and a lock on another filesystem's same inode only costs a copy."""
    tag = f":{path.stat().st_ino} "
    try:
        with open("/proc/locks") as locks:
            return any(tag in line for line in locks)
    except OSError:
        return True


def write_changed_pages(source: Path, target: Path) -> int:
    """Make ``target`` a byte copy of ``source`` by writing over it only the pages that differ (and what
    ``source`` has past its end), then syncing it; returns the bytes written. Both files are compared
    where the page cache holds them (mapped, not read into buffers). (Lab: a 1 %-churn night at 1M
    entries changed 115 MB of the 2.5 GB file.)"""
    written = 0
    src = _reader(source)
    with open(target, "r+b") as dst:
        size, old_size = os.fstat(src).st_size, os.fstat(dst.fileno()).st_size
        new = mmap.mmap(src, 0, access=mmap.ACCESS_READ) if size else b""
        old = mmap.mmap(dst.fileno(), 0, access=mmap.ACCESS_READ) if old_size else b""
        try:
            for offset in range(0, size, WINDOW):
                n, m = min(WINDOW, size - offset), max(0, min(WINDOW, old_size - offset))
                for low, high in _differing_runs(new, old, offset, n, m):
                    os.pwrite(dst.fileno(), new[offset + low:offset + high], offset + low)
                    written += high - low
                _unmap(new, offset, n)
                _unmap(old, offset, m)
        finally:
            for mapped in (new, old):
                if isinstance(mapped, mmap.mmap):
                    mapped.close()
        os.ftruncate(dst.fileno(), size)
        # pages written in place, unlike a new file renamed over the old, are not ordered before the
        # rename by the filesystem: synced, a crash cannot leave the published name on a mix of nights
        os.fsync(dst.fileno())
    return written


def _unmap(mapped, offset: int, length: int) -> None:
    """Let go of the window's pages in this process (the page cache keeps them): mapped whole, the two
    files would count in the process's resident memory, 5 GB at 1M entries."""
    if isinstance(mapped, mmap.mmap) and length and hasattr(mmap, "MADV_DONTNEED"):
        start = offset - offset % mmap.PAGESIZE
        mapped.madvise(mmap.MADV_DONTNEED, start, offset + length - start)


def _differing_runs(new, old, offset: int, n: int, m: int) -> list[tuple[int, int]]:
    """The runs of pages [low, high) (in bytes from ``offset``) of the window of ``n`` bytes of ``new`` that
    differ from the ``m`` bytes of ``old`` there."""
    pages = -(-n // PAGE)
    same = np.zeros(pages + 2, dtype=np.int8)  # a page on either side, so every run has two ends
    both = min(n, m) // PAGE  # pages whole in both files
    if both:
        a = np.frombuffer(new, np.uint64, both * PAGE // 8, offset).reshape(both, PAGE // 8)
        b = np.frombuffer(old, np.uint64, both * PAGE // 8, offset).reshape(both, PAGE // 8)
        same[1:both + 1] = (a == b).all(axis=1)
        del a, b  # (a mapped file cannot close while a view of it lives)
    if both < pages and n == m and new[offset + both * PAGE:offset + n] == old[offset + both * PAGE:offset + m]:
        same[pages] = 1  # the window's last, partial page
    same[0] = same[-1] = 1
    edges = np.flatnonzero(np.diff(same))
    return [(int(low) * PAGE, min(int(high) * PAGE, n)) for low, high in zip(edges[::2], edges[1::2])]


def publish(store_path: Path, published_path: Path, keep_spare: bool | None = None, wait_seconds: float = 0,
            log: Callable[[str], None] | None = None) -> Published:
    """Write the readers' snapshot of the store atomically (a temp file, then renamed over the snapshot)
    so that a night's publish costs what the night changed, not the whole file, where it can:

    - a clone of the store's file where the filesystem shares blocks between files (XFS, btrfs);
    - elsewhere (ext4), the snapshot before the published one (``spare_path``, kept as a second name of
      the file the rename replaces) with the pages that differ written over it, when no process holds
      it open: a reader of the snapshot keeps its file until it closes it;
    - otherwise a byte copy.

    ``keep_spare=False`` keeps no earlier snapshot and removes every file a publish left, a running one's
    too (a purge: no file may keep what it removed). By default the environment decides whether the
    spare is kept (``spare_wanted``); turned off, the next publish removes it. ``wait_seconds``, ``log``: as
    connect_when_free, while another process holds the store (a purge run beside a night)."""
    purge = keep_spare is False
    keep_spare = spare_wanted() if keep_spare is None else keep_spare
    # the snapshot is written with the store held: a process that opened the store after the checkpoint could
    # write it under the copy
    with connect_when_free(store_path, wait_seconds, log) as conn:
        conn.execute("CHECKPOINT")
        published_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = published_path.with_name(f".{published_path.name}.{os.getpid()}.tmp")
        spare = spare_path(published_path)
        for left in _left_files(published_path, every=purge):
            left.unlink(missing_ok=True)
        try:
            published_by, written = _write_snapshot(store_path, tmp, spare if keep_spare else None, published_path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    # the snapshot replaced below becomes the next publish's spare (not where a clone costs nothing)
    replaced = spare.with_name(f"{spare.name}.{os.getpid()}")
    keep = keep_spare and published_by != "clone" and published_path.exists()
    if keep:
        try:
            os.link(published_path, replaced)
        except OSError:  # no hard links on this filesystem
            keep = False
    if not keep:
        spare.unlink(missing_ok=True)
    os.replace(tmp, published_path)
    if keep:
        os.replace(replaced, spare)
    return Published(published_path, published_by, written)


def _left_files(published_path: Path, every: bool = False) -> list[Path]:
    """The temp files and spare links (named with their process id) of publishes killed before their rename,
    each the size of the store; with ``every``, the spare and every such file, whoever made it."""
    left = []
    for path in published_path.parent.glob(f".{published_path.name}.*"):
        pid = path.name.removesuffix(".tmp").rsplit(".", 1)[-1]
        if every or (pid.isdigit() and not _alive(int(pid))):
            left.append(path)
    return left


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        pass
    return True


def _write_snapshot(store_path: Path, tmp: Path, spare: Path | None, published_path: Path) -> tuple[str, int]:
    if _clone(store_path, tmp):
        return "clone", 0
    if spare is not None and _unused_spare(spare, published_path):
        try:
            os.replace(spare, tmp)
        except FileNotFoundError:  # another publish took it a moment ago
            return "copy", copy_file(store_path, tmp)
        return "delta", write_changed_pages(store_path, tmp)
    return "copy", copy_file(store_path, tmp)


def _unused_spare(spare: Path, published_path: Path) -> bool:
    try:
        return not _locked(spare) and not (published_path.exists() and os.path.samefile(spare, published_path))
    except FileNotFoundError:
        return False


def copy_file(source: Path, target: Path) -> int:
    """A byte copy of ``source`` (the store, or its log) at ``target``, its size; read through the kept
    descriptor (_READERS), so a connection of this process to ``source`` keeps its lock."""
    src = _reader(source)
    size = os.fstat(src).st_size
    with open(target, "wb") as dst:
        done = 0
        while done < size:  # (from the kept descriptor, at explicit offsets: in the kernel, as copyfile)
            sent = os.sendfile(dst.fileno(), src, done, size - done)
            if not sent:
                break
            done += sent
    return target.stat().st_size


def create_analyst_views(conn: duckdb.DuckDBPyConnection, statements: list[str]) -> None:
    conn.execute("CREATE SCHEMA IF NOT EXISTS analyst")
    for statement in statements:
        if statement.strip():
            conn.execute(statement)
