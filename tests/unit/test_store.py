"""The store connection: DuckDB's memory is bounded by configuration, and a bad value is an error."""

from __future__ import annotations

import duckdb
import pytest

from memcurator import store
from memcurator.tables import ENTRIES
from tests.conftest import string_compressions


def test_memory_limit_defaults_to_2_5gb_and_follows_the_environment(monkeypatch):
    monkeypatch.delenv(store.MEMORY_LIMIT_ENV, raising=False)
    with store.connect(":memory:") as conn:
        assert conn.execute("select current_setting('memory_limit')").fetchone()[0] == "2.3 GiB"  # 2.5 GB
    monkeypatch.setenv(store.MEMORY_LIMIT_ENV, "512MiB")
    with store.connect(":memory:") as conn:
        assert conn.execute("select current_setting('memory_limit')").fetchone()[0] == "512.0 MiB"


def test_the_default_memory_limit_follows_the_log_within_a_share_of_the_machine():
    gb = 10**9
    assert store.default_memory_limit(0, 24 * gb) == "2.5GB"
    assert store.default_memory_limit(1_416_666, 24 * gb) == "2.5GB"  # the bench's 1M entries
    assert store.default_memory_limit(14_166_666, 24 * gb) == "7.3GB"  # its 10M
    assert store.default_memory_limit(100_000_000, 16 * gb) == "6.4GB"  # the machine's share
    assert store.default_memory_limit(100_000_000, 4 * gb) == "2.5GB"  # never below 2.5 GB


def test_connect_sets_the_default_for_the_stores_log(monkeypatch, tmp_path):
    monkeypatch.delenv(store.MEMORY_LIMIT_ENV, raising=False)
    monkeypatch.setattr(store, "LIMIT_BYTES_PER_EVENT", 10**6)
    monkeypatch.setattr(store, "LIMIT_RAM_SHARE", 1.0)
    limit = "select getvariable('memcurator_memory_limit'), current_setting('memory_limit')"
    with store.connect(tmp_path / "s.duckdb") as conn:
        assert conn.execute(limit).fetchone() == ("2.5GB", "2.3 GiB")
        conn.execute("create table raw.events as select range as i from range(4000)")
    with store.connect(tmp_path / "s.duckdb") as conn:
        assert conn.execute(limit).fetchone()[0] == "4.0GB"
        assert conn.execute(limit).fetchone()[1] in ("3.7 GiB", "3.8 GiB")  # 4e9 bytes, as DuckDB shows it


def test_release_buffers_lets_the_cached_blocks_go_and_keeps_the_limit(monkeypatch, tmp_path):
    monkeypatch.setenv(store.MEMORY_LIMIT_ENV, "1GB")
    cached = "select sum(memory_usage_bytes) from duckdb_memory()"
    with store.connect(tmp_path / "s.duckdb") as conn:
        conn.execute("create table core.t as select range as i, repeat(md5(range::varchar), 6) as s from range(1000000)")
        conn.execute("checkpoint")
        conn.execute("select max(s), sum(i) from core.t").fetchall()
        before = conn.execute(cached).fetchone()[0]
        assert before > 64_000_000
        store.release_buffers(conn, floor="16MB")  # the default floor (256MB) would keep a table this small
        assert conn.execute(cached).fetchone()[0] < 16_000_000
        assert conn.execute("select current_setting('memory_limit')").fetchone()[0] == "953.6 MiB"  # 1 GB
        assert conn.execute("select count(distinct s) from core.t").fetchone()[0] == 1000000


def test_a_read_with_buffers_held_low_caches_no_more_and_the_limit_comes_back(monkeypatch, tmp_path):
    monkeypatch.setenv(store.MEMORY_LIMIT_ENV, "1GB")
    cached = "select sum(memory_usage_bytes) from duckdb_memory()"
    query = "select i, s from core.t where i % 3 = 0"
    with store.connect(tmp_path / "s.duckdb") as conn:
        conn.execute("create table core.t as "
                     "select range as i, repeat(md5(range::varchar), 6) as s from range(1000000)")
        conn.execute("checkpoint")
        store.release_buffers(conn, floor="16MB")
        with store.buffers_held_to(conn, "32MB"):
            streamed = store.streamed_frame(conn, query, rows_per_batch=50_000)
            assert conn.execute(cached).fetchone()[0] <= 32_000_000
        assert conn.execute("select current_setting('memory_limit')").fetchone()[0] == "953.6 MiB"  # 1 GB
        whole = conn.execute(query).pl()
        assert streamed.n_chunks() > 1 and streamed.sort("i").equals(whole.sort("i"))  # (in no set order)
        assert store.streamed_frame(conn, "select * from core.t where i < 0").equals(whole.clear())
        with pytest.raises(duckdb.Error), store.buffers_held_to(conn, "32MB"):
            conn.execute("select nothing from core.t")
        assert conn.execute("select current_setting('memory_limit')").fetchone()[0] == "953.6 MiB"
    monkeypatch.setenv(store.MEMORY_LIMIT_ENV, "64MiB")  # a limit below the floor is never raised
    with store.connect(tmp_path / "s.duckdb") as conn, store.buffers_held_to(conn, "1GB"):
        assert conn.execute("select current_setting('memory_limit')").fetchone()[0] == "64.0 MiB"


def test_a_bad_memory_limit_is_refused(monkeypatch):
    monkeypatch.setenv(store.MEMORY_LIMIT_ENV, "4GB; drop table x")
    with pytest.raises(ValueError, match="expected a size"):
        store.memory_limit()


def test_a_table_version_is_stored_as_given_even_with_quotes():
    from memcurator.entries import MEMORY_WRITES

    with store.connect(":memory:") as conn:
        store.ensure_table(conn, MEMORY_WRITES)
        store.set_version(conn, MEMORY_WRITES, "v'1; drop table core.memory_writes")
        assert conn.execute("select comment from duckdb_tables() where table_name = 'memory_writes'").fetchone() == (
            "v'1; drop table core.memory_writes",)


@pytest.mark.parametrize("name", ["core", "work"])
def test_a_store_named_after_one_of_its_schemas_is_refused_with_the_reason(tmp_path, name):
    # DuckDB would name the database after the file, and core.<table> would be ambiguous
    with pytest.raises(ValueError, match="named after one of its schemas"):
        with store.connect(tmp_path / f"{name}.duckdb"):
            pass
    assert not (tmp_path / f"{name}.duckdb").exists()
    with store.connect(tmp_path / "store.duckdb") as conn:
        store.ensure_table(conn, ENTRIES)


def test_spill_space_of_a_store_in_memory_is_a_fresh_temporary_folder_others_are_left(tmp_path, monkeypatch):
    """Without a store's file there is no folder to own: the system's temporary folder is used, and
    what other processes keep there is not touched."""
    monkeypatch.setattr(store.tempfile, "tempdir", str(tmp_path))
    other = tmp_path / "memcurator-passes-other"
    other.mkdir()
    with duckdb.connect() as conn, store.spill_space(conn, "passes") as folder:
        assert folder.parent == tmp_path and folder.name.startswith("memcurator-passes-") and folder != other
        (folder / "part").write_bytes(b"1")
    assert not folder.exists() and other.exists()


def test_spill_space_removes_what_a_killed_night_of_its_store_left_and_no_other_stores(tmp_path):
    """The folder left by a killed night of this store goes; another store's beside it stays (names are
    compared as they are: a file name may hold characters a pattern would read)."""
    left, other = tmp_path / "a[1].duckdb.passes-killed", tmp_path / "a1.duckdb.passes-running"
    left.mkdir()
    other.mkdir()
    with store.connect(tmp_path / "a[1].duckdb") as conn, store.spill_space(conn, "passes") as folder:
        assert folder.parent == tmp_path and folder.name.startswith("a[1].duckdb.passes-")
        assert not left.exists() and other.exists()
    assert not folder.exists() and other.exists()


def test_remove_spills_removes_only_its_stores_folders_of_that_name(tmp_path, monkeypatch):
    """Outside a spill_space block, a store's folders of a name are what a killed night left: they go;
    another name's, another store's and a file of that name stay. A store in memory owns none."""
    for name in ("s.duckdb.passes-killed", "s.duckdb.passes-older", "s.duckdb.other-x", "t.duckdb.passes-x"):
        (tmp_path / name).mkdir()
    (tmp_path / "s.duckdb.passes-file").write_bytes(b"")
    with store.connect(tmp_path / "s.duckdb") as conn:
        assert store.remove_spills(conn, "passes") == ["s.duckdb.passes-killed", "s.duckdb.passes-older"]
        assert store.remove_spills(conn, "passes") == []
    assert sorted(p.name for p in tmp_path.iterdir() if ".duckdb." in p.name) == [
        "s.duckdb.other-x", "s.duckdb.passes-file", "t.duckdb.passes-x"]
    monkeypatch.setattr(store.tempfile, "tempdir", str(tmp_path))
    (tmp_path / "memcurator-passes-other").mkdir()
    with duckdb.connect() as conn:
        assert store.remove_spills(conn, "passes") == []
    assert (tmp_path / "memcurator-passes-other").exists()


def test_a_registered_frame_is_scanned_in_chunks_of_its_buffers():
    # DuckDB scans a registered Arrow table one chunk per thread: a frame in one chunk is cut (not copied)
    # into chunks of at most SCAN_CHUNK_ROWS, and reads as it was
    import polars as pl
    import pyarrow as pa

    rows = 2 * store.SCAN_CHUNK_ROWS + 5
    table = pa.table({"n": pa.array(range(rows), pa.int64()), "s": pa.array([str(i) for i in range(rows)])})
    assert table.column("n").num_chunks == 1
    chunked = store.scannable(table)
    assert [len(c) for c in chunked.column("n").chunks] == [store.SCAN_CHUNK_ROWS, store.SCAN_CHUNK_ROWS, 5]
    assert chunked.equals(table)
    first = table.column("n").chunks[0].buffers()[1].address
    assert chunked.column("n").chunks[0].buffers()[1].address == first  # the same memory
    conn = duckdb.connect()
    with store.registered(conn, frame=pl.from_arrow(table).rechunk()):
        assert conn.execute("select count(*), sum(n), max(s::int) from frame").fetchone() == (
            rows, rows * (rows - 1) // 2, rows - 1)


def test_a_small_table_spread_is_cut_into_chunks_of_a_vector_at_least():
    import pyarrow as pa

    def chunks(rows):
        table = pa.table({"n": pa.array(range(rows), pa.int64())})
        spread = store.scannable(table, spread=True)
        assert spread.equals(table)
        return [len(c) for c in spread.column("n").chunks]

    assert chunks(24_001) == [3001] * 7 + [2994]  # SCAN_CHUNKS chunks
    assert chunks(5000) == [store.VECTOR_ROWS, store.VECTOR_ROWS, 904]
    assert chunks(store.SCAN_CHUNKS * store.SCAN_CHUNK_ROWS + 5) == [store.SCAN_CHUNK_ROWS] * store.SCAN_CHUNKS + [5]
    assert chunks(0) == []


def test_a_writers_checkpoints_leave_fsst_untried(tmp_path):
    # unique strings sharing most of their bytes: what DuckDB stores in FSST by default
    rows = ("select 'entry-' || (i * 7919 % 1000003)::varchar || '-of-a-namespace-with-a-long-name' as s "
            "from range(60000) as r(i)")
    with duckdb.connect(str(tmp_path / "default.duckdb")) as conn:
        conn.execute(f"create table t as {rows}")
        conn.execute("checkpoint")
        assert "FSST" in string_compressions(conn, "t")
    with store.connect(tmp_path / "s.duckdb") as conn:
        conn.execute(f"create table t as {rows}")
        conn.execute("checkpoint")
        assert "FSST" not in string_compressions(conn, "t")
        assert string_compressions(conn, "t")
