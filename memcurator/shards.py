"""Namespace shards: the unit of distribution when a fleet outgrows one machine.

Every derived table is computed within a namespace, so a night splits into N shards by a hash of
the namespace id (``md5_number(namespace) % N``); a namespace never splits. A night in shards is:

1. split   — the one writer (the host with the DuckDB store) ingests the landing folder as usual and
             writes each shard's events and curator decisions to the shard root, with the shard's
             slice of what the store keeps to reuse the night before's work (the flattened writes,
             the near-duplicate index, the judge's verdicts, ...);
2. derive  — for each shard, anywhere: load the shard's input into an in-memory DuckDB, run the same
             builders as the embedded night (``night.derive_night``) and write every derived table;
3. merge   — the one writer replaces each derived table in the store with the union of the shards
             (the health history keeps earlier nights) and publishes.

The shard root is a local folder or an S3-compatible URI (``s3://bucket/prefix?endpoint_override=
host:port&scheme=http``), read and written through pyarrow's filesystems (DuckDB's S3 extension is
not needed). Layout: ``<root>/night=D/shards=N/shard=K/<schema>.<table>.parquet``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

import duckdb
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from memcurator import night as nightly
from memcurator import audit, changes, contradictions, entries, ranking, store
from memcurator.config import CurationConfig
from memcurator.entries import as_of_for_night
from memcurator.ingest import ensure_raw_tables
from memcurator.tables import CURATOR_DECISIONS, EVENTS, TABLES, Table

SHARD_INPUTS = (EVENTS, CURATOR_DECISIONS)
SETTINGS = "settings.parquet"  # the curation settings of the split, beside a shard's input
CARRIED = "carried"  # a shard's slice of the tables the next night reuses, beside its input
HISTORY_TABLES = {"mart.store_health": "as_of"}  # kept across nights: merge replaces only the night's slice


# a step's table (or one beside it) that is a view over stored ones: the shards carry the stored tables, merge
# makes the views (in this order: the recall view reads the scores)
VIEWS = {entries.ENTRY_SUCCESSORS.qualified: ((), entries.create_successors_view),
         ranking.ENTRY_SCORES.qualified: ((ranking.ENTRY_SCORE_PARTS.qualified, ranking.SCORE_SETTINGS.qualified),
                                          ranking.create_scores_view),
         ranking.RECALL_VIEW.qualified: ((ranking.RECALL_RANKING.qualified,), ranking.create_recall_view),
         audit.CURATION_AUDIT_LOG.qualified: ((audit.AUDIT_SETTINGS.qualified,), audit.create_audit_view),
         contradictions.SUPERSEDE_SUGGESTIONS.qualified: ((contradictions.SUGGESTION_SETTINGS.qualified,),
                                                          contradictions.create_suggestions_view)}
# one row that every shard writes alike (the night and the knobs): merged as one
ONE_ROW_TABLES = {audit.AUDIT_SETTINGS.qualified, contradictions.SUGGESTION_SETTINGS.qualified,
                  ranking.SCORE_SETTINGS.qualified}


def derived_tables() -> list[Table]:
    return [TABLES[stored] for name in [name for name, _ in nightly.STEPS] + nightly.SIDE_TABLES
            for stored in (VIEWS[name][0] if name in VIEWS else (name,))]


def shard_keys(shards: int) -> list[str]:
    """Partition keys of N shards: '00'..'NN', zero-padded so they sort."""
    if shards < 1:
        raise ValueError(f"shards must be at least 1, got {shards}")
    width = max(2, len(str(shards - 1)))
    return [f"{k:0{width}d}" for k in range(shards)]


def shard_predicate(shards: int) -> str:
    """SQL: the shard of the row's namespace (a stable hash, identical on every host)."""
    return f"md5_number(namespace) % {int(shards)}"


@dataclass(frozen=True)
class ShardRoot:
    """Where shard inputs and outputs live: a local folder or an S3-compatible URI."""

    uri: str

    def _fs(self) -> tuple[pafs.FileSystem, str]:
        if "://" in self.uri:
            return pafs.FileSystem.from_uri(self.uri)
        return pafs.LocalFileSystem(), str(self.uri)

    def folder(self, night: str, shards: int, shard: str) -> str:
        return f"night={night}/shards={shards}/shard={shard}"

    def write(self, relative: str, table: pa.Table) -> None:
        """Write one Parquet object; a re-run overwrites it whole (object stores put atomically)."""
        fs, base = self._fs()
        path = f"{base.rstrip('/')}/{relative}"
        fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
        tmp = f"{path}.tmp" if isinstance(fs, pafs.LocalFileSystem) else path
        pq.write_table(table, tmp, filesystem=fs)
        if tmp != path:
            fs.move(tmp, path)

    def read(self, relative: str) -> pa.Table:
        fs, base = self._fs()
        return pq.read_table(f"{base.rstrip('/')}/{relative}", filesystem=fs)

    def exists(self, relative: str) -> bool:
        fs, base = self._fs()
        return fs.get_file_info(f"{base.rstrip('/')}/{relative}").type != pafs.FileType.NotFound

    def delete(self, relative: str) -> None:
        fs, base = self._fs()
        if self.exists(relative):
            fs.delete_file(f"{base.rstrip('/')}/{relative}")

    def delete_dir(self, relative: str) -> None:
        fs, base = self._fs()
        if self.exists(relative):
            fs.delete_dir(f"{base.rstrip('/')}/{relative}")


def _arrow(conn: duckdb.DuckDBPyConnection, query: str, params=None) -> pa.Table:
    return conn.execute(query, params or {}).to_arrow_table()


def split(conn: duckdb.DuckDBPyConnection, root: ShardRoot, night: str, shards: int,
          cfg: CurationConfig | None = None) -> dict[str, int]:
    """Write every shard's input (events and curator decisions) from the store, and its slice of what
    the store keeps from the night before to reuse (``night.CARRIED_TABLES``, with each table's
    version comment); with ``cfg``, the settings every shard derives with (the workers' own may differ:
    a shard of a night takes the split's); returns events per shard."""
    comments = _comments(conn)
    carried = [TABLES[name] for name in nightly.CARRIED_TABLES if name in comments]
    counts = {}
    for number, key in enumerate(shard_keys(shards)):
        folder = root.folder(night, shards, key)
        if cfg is not None:
            # (as a night records them: a judge's endpoint without the user info a URL can carry)
            root.write(f"{folder}/{SETTINGS}", pa.table({"settings": [json.dumps(cfg.recorded(), sort_keys=True)]}))
        else:
            root.delete(f"{folder}/{SETTINGS}")
        for table in SHARD_INPUTS:
            rows = _arrow(conn, f"select * from {table.qualified} where {shard_predicate(shards)} = $k "
                                f"order by {', '.join(table.key)}", {"k": number})
            root.write(f"{folder}/{table.qualified}.parquet", rows)
            if table is EVENTS:
                counts[key] = rows.num_rows
        root.delete_dir(f"{folder}/{CARRIED}")  # a re-split never leaves state the store no longer has
        for table in carried:
            rows = _arrow(conn, f"select * from {table.qualified} where {shard_predicate(shards)} = $k",
                          {"k": number})
            root.write(f"{folder}/{CARRIED}/{table.qualified}.parquet",
                       rows.replace_schema_metadata({"comment": comments[table.qualified]}))
    return counts


def _load_carried(conn: duckdb.DuckDBPyConnection, root: ShardRoot, folder: str) -> None:
    for name in nightly.CARRIED_TABLES:
        relative = f"{folder}/{CARRIED}/{name}.parquet"
        if not root.exists(relative):
            continue
        table, rows = TABLES[name], root.read(relative)
        store.ensure_table(conn, table)
        with store.registered(conn, carried=rows):
            conn.execute(f"insert into {table.qualified} select {table.select_list('q')} from carried q")
        _set_comment(conn, table, {_comment_of(rows)})


def derive(root: ShardRoot, night: str, shards: int, shard: str, cfg: CurationConfig = CurationConfig(),
           as_of: datetime | None = None) -> dict[str, int]:
    """Derive one shard's tables in memory from its input, reusing what the store carried over from the
    night before as the embedded night does, and write them; returns rows per table. The settings are
    those the split wrote with the shard's input (a judge's endpoint whole from ``cfg`` where the split's
    record masked it: CurationConfig.from_recorded), else ``cfg``."""
    folder = root.folder(night, shards, shard)
    if root.exists(f"{folder}/{SETTINGS}"):
        cfg = CurationConfig.from_recorded(json.loads(root.read(f"{folder}/{SETTINGS}")["settings"][0].as_py()), cfg)
    with store.connect(":memory:") as conn:
        ensure_raw_tables(conn)
        for table in SHARD_INPUTS:
            store.ensure_table(conn, table)
            with store.registered(conn, shard_input=root.read(f"{folder}/{table.qualified}.parquet")):
                conn.execute(f"insert into {table.qualified} select {table.select_list('q')} from shard_input q")
        _load_carried(conn, root, folder)
        nightly.derive_night(conn, as_of or as_of_for_night(night), cfg)
        comments = _comments(conn)
        counts = {}
        for table in derived_tables():
            rows = _arrow(conn, f"select * from {table.qualified}")
            root.write(f"{folder}/{table.qualified}.parquet",
                       rows.replace_schema_metadata({"comment": comments.get(table.qualified, "")}))
            counts[table.qualified] = rows.num_rows
    return counts


def _comments(conn: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """Each table's comment: the version of the code that built the rows a later night may reuse."""
    return dict(conn.execute("select schema_name || '.' || table_name, coalesce(comment, '') "
                             "from duckdb_tables()").fetchall())


def _comment_of(rows: pa.Table) -> str:
    return (rows.schema.metadata or {}).get(b"comment", b"").decode()


def merge(conn: duckdb.DuckDBPyConnection, root: ShardRoot, night: str, shards: int,
          as_of: datetime | None = None) -> dict[str, int]:
    """Replace each derived table in the store with the union of the shards' rows; returns row counts."""
    as_of = as_of or as_of_for_night(night)
    for name in sorted(ONE_ROW_TABLES):  # checked before any table is replaced
        rows = pa.concat_tables([root.read(f"{root.folder(night, shards, key)}/{name}.parquet")
                                 for key in shard_keys(shards)]).to_pylist()
        if len({tuple(sorted(r.items())) for r in rows}) != 1:
            raise ValueError(f"{name}: the shards of night {night} wrote different settings ({rows}): they ran with "
                             "other configurations or nights; derive every shard again with one before merging")
    changes.forget(conn)  # the store's tables are no longer what their stages last wrote
    counts = {}
    for table in derived_tables():
        parts = [root.read(f"{root.folder(night, shards, key)}/{table.qualified}.parquet")
                 for key in shard_keys(shards)]
        with store.registered(conn, shard_union=pa.concat_tables(parts, promote_options="permissive")):
            if table.qualified in HISTORY_TABLES:
                counts[table.qualified] = _replace_slice(conn, table, HISTORY_TABLES[table.qualified], as_of)
            else:
                rows = "select distinct * from shard_union" if table.qualified in ONE_ROW_TABLES else "select * from shard_union"
                counts[table.qualified] = store.replace_table(conn, table, rows)
                _set_comment(conn, table, {_comment_of(part) for part in parts})
    for _, create_view in VIEWS.values():
        create_view(conn)
    return counts


def _set_comment(conn: duckdb.DuckDBPyConnection, table: Table, comments: set[str]) -> None:
    """The version comment the rows were built under, when all of them agree on one."""
    if len(comments) == 1 and (comment := comments.pop()):
        store.set_version(conn, table, comment)


def _replace_slice(conn: duckdb.DuckDBPyConnection, table: Table, column: str, as_of: datetime) -> int:
    store.ensure_table(conn, table)
    with store.transaction(conn):
        conn.execute(f"delete from {table.qualified} where {column} = $as_of", {"as_of": as_of})
        conn.execute(f"insert into {table.qualified} select {table.select_list('q')} from shard_union q "
                     f"where {column} = $as_of", {"as_of": as_of})
    return conn.execute(f"select count(*) from {table.qualified} where {column} = $as_of", {"as_of": as_of}).fetchone()[0]
