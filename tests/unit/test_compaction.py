"""Compaction: the store's checkpoints merge no row groups; the close of a night compacts when it is due,
and the tables read the same either way."""

from __future__ import annotations

from datetime import datetime, timedelta

from memcurator import changes, clustering, compaction, store

NIGHT = datetime(2026, 11, 3)
ROWS = 400_000  # a few of DuckDB's row groups (122,880 rows each)


def stored_rows(conn, table: str) -> int:
    return conn.execute("select estimated_size from duckdb_tables() where schema_name || '.' || table_name = ?",
                        [table]).fetchone()[0]


def content_of(conn, table: str) -> tuple:
    return conn.execute(f"select count(*), sum(hash(a)) from {table}").fetchone()


def content(conn, table: str) -> tuple:
    return conn.execute(f"select count(*), sum(hash(a, b)) from {table}").fetchone()


def fragmented_store(path, deleted_every: int):
    """A table with every ``deleted_every``-th row deleted, checkpointed by a writer."""
    with store.connect(path) as conn:
        conn.execute("create table core.t as select i as a, i % 7 as b from range($n) r(i)", {"n": ROWS})
        conn.execute("checkpoint")
        conn.execute("delete from core.t where a % $k = 0", {"k": deleted_every})
        conn.execute("checkpoint")


def test_a_writers_checkpoint_keeps_deleted_rows_stored(tmp_path):
    # what the nights gain: no checkpoint of theirs rewrites row groups (fails without max_vacuum_tasks = 0)
    path = tmp_path / "store.duckdb"
    fragmented_store(path, deleted_every=2)
    with store.connect(path) as conn:
        assert stored_rows(conn, "core.t") == ROWS
        assert conn.execute("select count(*) from core.t").fetchone()[0] == ROWS // 2


def test_a_table_whose_deleted_rows_reach_the_share_is_written_again_alone_and_reads_the_same(tmp_path):
    path = tmp_path / "store.duckdb"
    fragmented_store(path, deleted_every=2)  # half of the rows deleted
    with store.connect(path) as conn:
        # another table with small row groups (each insert checkpointed adds one) and a few deletes
        conn.execute("create table core.other as select i as a from range(2 * 122880) r(i)")
        for night in range(3):
            conn.execute("insert into core.other select i from range(1000) r(i)")
            conn.execute("checkpoint")
        conn.execute("delete from core.other where a < 1000 and a % 10 = 0")  # 100 of each insert
        conn.execute("checkpoint")
        other, other_groups = content_of(conn, "core.other"), row_groups(conn, "core.other")
        assert compaction.close_night(conn, NIGHT - timedelta(days=1)) == "first_night"
        before = content(conn, "core.t")
        found = compaction.storage(conn)
        assert found.over_share == ["core.t"] and found.deleted == ROWS // 2 + 400
        assert compaction.close_night(conn, NIGHT) == "deleted_rows"
        assert content(conn, "core.t") == before and stored_rows(conn, "core.t") == ROWS // 2
        # the other table is left as it was: its row groups are the interval's to merge
        assert row_groups(conn, "core.other") == other_groups == 5 and content_of(conn, "core.other") == other
        assert stored_rows(conn, "core.other") == 2 * 122880 + 3000
        reason, compacted, rounds, stored, after, deleted, tables = conn.execute(
            "select reason, compacted, rounds, stored_rows, stored_rows_after, deleted_rows, tables "
            "from work.compactions where as_of = $a", {"a": NIGHT}).fetchone()
        assert (reason, compacted, rounds, deleted, tables) == ("deleted_rows", True, 0, ROWS // 2 + 400, ["core.t"])
        assert after == stored - ROWS // 2 + 1  # and the record of it, one row more
        # the interval counts from the first night still: the rewrite merged no other table's row groups
        assert compaction.close_night(conn, NIGHT - timedelta(days=1) + timedelta(days=compaction.COMPACT_DAYS)) == "interval"
        assert row_groups(conn, "core.other") == 3 and content_of(conn, "core.other") == other
    with store.connect(path) as conn:  # and it stays so, reopened
        assert content(conn, "core.t") == before and stored_rows(conn, "core.t") == ROWS // 2


def test_a_table_written_again_keeps_its_comment_the_version_a_stage_reads(tmp_path):
    # the clusters' stage derives everything unless both its tables carry its code version as their comment:
    # a rewrite that lost it made the night after a compaction cluster a 1M store in full (2.9 s, and the
    # stages after it derived in full too)
    path = tmp_path / "store.duckdb"
    fragmented_store(path, deleted_every=2)
    with store.connect(path) as conn:
        for table in (clustering.CLUSTER_EDGES, clustering.NEAR_DUPLICATE_CLUSTERS):
            store.ensure_table(conn, table)
            store.set_version(conn, table, "v'1")
        conn.execute("comment on table core.t is 'kept'")
        assert compaction.close_night(conn, NIGHT - timedelta(days=1)) == "first_night"
        assert compaction.close_night(conn, NIGHT) == "deleted_rows"  # core.t, not declared: its create statement
        compaction.rewrite_stored(conn, clustering.NEAR_DUPLICATE_CLUSTERS.qualified)  # declared
        compaction.rewrite(conn, clustering.CLUSTER_EDGES)
        assert dict(conn.execute("select schema_name || '.' || table_name, comment from duckdb_tables() where "
                                 "table_name in ('t', 'cluster_edges', 'near_duplicate_clusters')").fetchall()) == {
            "core.t": "kept", "core.cluster_edges": "v'1", "core.near_duplicate_clusters": "v'1"}


def test_a_declared_table_written_again_keeps_its_declaration(tmp_path):
    # the declaration's column compression is not in DuckDB's create statement: the rewrite takes the declaration
    with store.connect(tmp_path / "store.duckdb") as conn:
        table = compaction.COMPACTIONS
        store.ensure_table(conn, table)
        conn.execute("insert into work.compactions select timestamp '2026-01-01' + to_days(i::int), 'interval', true, 1, "
                     "1, 1, 0, [] from range(2 * 122880) r(i)")
        conn.execute("delete from work.compactions where as_of >= timestamp '2026-01-01' + to_days(122880)")
        before = conn.execute("select count(*), sum(hash(as_of)) from work.compactions").fetchone()
        compaction.rewrite_stored(conn, table.qualified)
        assert conn.execute("select count(*), sum(hash(as_of)) from work.compactions").fetchone() == before
        assert store.stored_as_declared(conn, table)
        assert stored_rows(conn, table.qualified) == 122880


def test_the_changes_table_is_written_again_alone_rather_than_compacting_the_store(tmp_path):
    # each refresh replaces its table's rows in work.changes: by the next night most of them are deleted
    path = tmp_path / "store.duckdb"
    with store.connect(path) as conn:
        assert compaction.close_night(conn, NIGHT - timedelta(days=1)) == "first_night"
        changes.ensure(conn)
        conn.execute("insert into work.changes select ['core.a', 'core.b'][i % 2 + 1], 'ns', 'e' || i "
                     "from range($n) r(i)", {"n": ROWS})  # two tables' rows in every row group
        conn.execute("checkpoint")
        conn.execute("delete from work.changes where table_name = 'core.a'")
        conn.execute("insert into work.changes select 'core.a', 'ns', 'f' || i from range(1000) r(i)")
        conn.execute("checkpoint")
        before = conn.execute("select count(*), sum(hash(table_name, namespace, entry_id)) from work.changes").fetchone()
        assert stored_rows(conn, "work.changes") == ROWS + 1000
        assert compaction.close_night(conn, NIGHT) is None  # no compaction of the store for it
        assert stored_rows(conn, "work.changes") == ROWS // 2 + 1000
        assert conn.execute("select count(*), sum(hash(table_name, namespace, entry_id)) from work.changes").fetchone() == before
        assert store.stored_as_declared(conn, changes.CHANGES)  # its declaration, NOT NULL columns included


def row_groups(conn, table: str) -> int:
    return conn.execute(f"select count(distinct row_group_id) from pragma_storage_info('{table}')").fetchone()[0]


def test_small_row_groups_wait_for_the_interval(tmp_path):
    # each night's inserts add a small row group (nothing merges them on the nights' checkpoints)
    path = tmp_path / "store.duckdb"
    with store.connect(path) as conn:
        conn.execute("create table core.t as select i as a, i % 7 as b from range($n) r(i)", {"n": 2 * 122_880})
        conn.execute("checkpoint")
        for night in range(5):
            conn.execute("insert into core.t select i, $k from range(5000) r(i)", {"k": night})
            conn.execute("checkpoint")
        before, groups = content(conn, "core.t"), row_groups(conn, "core.t")
        assert groups == 7
        # the first night only starts the count; the next ones compact once COMPACT_DAYS passed
        assert compaction.close_night(conn, NIGHT) == "first_night"
        assert compaction.close_night(conn, NIGHT + timedelta(days=compaction.COMPACT_DAYS - 1)) is None
        assert row_groups(conn, "core.t") == groups
        assert compaction.close_night(conn, NIGHT + timedelta(days=compaction.COMPACT_DAYS)) == "interval"
        assert row_groups(conn, "core.t") == 3 and content(conn, "core.t") == before
        assert conn.execute("select list(reason order by as_of), list(compacted order by as_of) "
                            "from work.compactions").fetchone() == (["first_night", "interval"], [False, True])
        # a night before the last compaction (a past night derived again) counts from the ones before it
        assert compaction.close_night(conn, NIGHT + timedelta(days=2)) is None


def test_a_table_smaller_than_a_row_group_never_calls_for_compaction(tmp_path):
    with store.connect(tmp_path / "store.duckdb") as conn:
        conn.execute("create table core.small as select i as a from range(1000) r(i)")
        conn.execute("delete from core.small where a % 2 = 0")
        assert compaction.storage(conn).over_share == []
