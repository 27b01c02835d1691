"""The incremental near-duplicate stage gives the full computation's pairs, night after night."""

from __future__ import annotations

import shutil
from dataclasses import replace
from datetime import date, timedelta

import numpy as np
import polars as pl
import pytest

from memcurator import changes, clustering, demo, ingest, nearindex, night, store
from memcurator.config import CurationConfig
from memcurator.crash import table_hashes
from memcurator.entries import as_of_for_night
from memcurator.frames import namespace_passes, pass_numbers
from memcurator.home import Home

CFG = CurationConfig()
FIRST = date(2026, 11, 20)
KEY = ["namespace", "entry_a", "entry_b"]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Home:
    home = Home.from_env(tmp_path_factory.mktemp("nearindex") / "home").ensure()
    demo.generate(home.landing, home.truth, writes=1_800, namespaces=5, days=30, seed=9, end=FIRST + timedelta(days=8))
    with store.connect(home.store) as conn:
        ingest.ingest_landing(conn, home.landing, home.lake, CFG)
    return home


@pytest.fixture
def conn(fleet, tmp_path):
    path = tmp_path / "store.duckdb"
    shutil.copyfile(fleet.store, path)
    with store.connect(path) as c:
        yield c


def _night(conn, day: date, cfg: CurationConfig = CFG) -> str:
    """Derive the tables the stage reads, then the stage; returns how it ran."""
    as_of = as_of_for_night(day)
    for name, build in night.STEPS:
        if name == "core.near_duplicate_pairs":
            break
        build(conn, as_of, cfg)
    return _stage(conn, as_of, cfg)


def _stage(conn, as_of, cfg: CurationConfig = CFG) -> str:
    conn.execute("BEGIN TRANSACTION")
    pairs, how = nearindex.near_duplicate_pairs(conn, as_of, cfg)
    conn.execute("COMMIT")
    conn.register("pairs", pairs.to_arrow())
    conn.execute("create or replace table core.near_duplicate_pairs as select * from pairs")
    conn.unregister("pairs")
    return how


def _edit(conn, *statements) -> None:
    """Change core.entries by hand, outside its stage: the bookkeeping of what nights changed is dropped
    (as a merge of shards does), so the stage compares every entry with the index."""
    for statement, params in statements:
        conn.execute(statement, params)
    changes.forget(conn)


def _assert_full_pairs(conn, cfg: CurationConfig = CFG) -> int:
    entries = conn.execute("select namespace, entry_id, norm_text, first_written_at, tags from core.entries").pl()
    want = clustering.near_duplicate_pairs(entries, cfg).sort(KEY)
    got = conn.execute("select namespace, entry_a, entry_b, similarity, method from core.near_duplicate_pairs").pl()
    assert got.sort(KEY).equals(want.select(got.columns)), "incremental pairs differ from the full computation"
    return got.height


@pytest.mark.parametrize("order", [range(9), [8, 0, 4, 3, 7, 7]], ids=["forward", "backfill"])
def test_every_night_gives_the_full_pairs(conn, order):
    hows = []
    for k in order:
        hows.append(_night(conn, FIRST + timedelta(days=k)))
        assert _assert_full_pairs(conn) > 0
    assert hows[0] == "full" and hows.count("incremental") >= len(hows) - 2


def test_changed_texts_tags_and_removed_entries_are_recomputed(conn):
    last = FIRST + timedelta(days=8)
    assert _night(conn, last) == "full"
    pair = conn.execute("select namespace, entry_a, entry_b from core.near_duplicate_pairs "
                        "where method = 'minhash' order by all limit 3").fetchall()
    ns, a, b = pair[0]
    # a restatement changes one entry's text, another gets a disjoint subject tag, a third is purged
    _edit(conn, ("update core.entries set norm_text = norm_text || ' plus a wholly new clause about kafka retention' "
                 "where namespace = ? and entry_id = ?", [ns, a]),
          ("update core.entries set tags = ['subject-nobody-else-uses'] where namespace = ? and entry_id = ?",
           list(pair[1][:1]) + [pair[1][2]]),
          ("delete from core.entries where namespace = ? and entry_id = ?", [pair[2][0], pair[2][1]]))
    assert _stage(conn, as_of_for_night(last)) == "incremental"
    _assert_full_pairs(conn)


def test_other_knobs_or_a_large_change_recompute_everything(conn):
    day = FIRST + timedelta(days=8)
    assert _night(conn, day) == "full"
    stricter = replace(CFG, near_duplicate_threshold=0.7)
    assert _stage(conn, as_of_for_night(day), stricter) == "full"
    _assert_full_pairs(conn, stricter)
    _edit(conn, ("update core.entries set norm_text = norm_text || ' changed'", []))
    assert _stage(conn, as_of_for_night(day), stricter) == "full"
    _assert_full_pairs(conn, stricter)


def test_a_night_after_an_incremental_chain_has_the_fresh_stores_tables(fleet, tmp_path):
    """Every table (pairs, clusters, proposals, index, band index, ...) as in a store derived once."""
    chained, fresh = tmp_path / "chained.duckdb", tmp_path / "fresh.duckdb"
    for path, nights in ((chained, (0, 3, 6, 8)), (fresh, (8,))):
        shutil.copyfile(fleet.store, path)
        with store.connect(path) as conn:
            for k in nights:
                night.derive_night(conn, as_of_for_night(FIRST + timedelta(days=k)), CFG)
    # the health history is the one table that keeps earlier nights: compare this night's slice
    mine, theirs = table_hashes(chained), table_hashes(fresh)
    assert set(mine) == set(theirs) and "core.near_duplicate_index" in mine
    assert {k: v for k, v in mine.items() if k != "mart.store_health"} == \
        {k: v for k, v in theirs.items() if k != "mart.store_health"}
    with store.connect(chained, read_only=True) as conn:
        conn.execute(f"attach '{fresh}' as fresh (read_only)")
        differ = conn.execute("select count(*) from (select * from mart.store_health where night = ? "
                              "except select * from fresh.mart.store_health)", [FIRST + timedelta(days=8)]).fetchone()[0]
    assert differ == 0


def test_the_index_holds_exactly_what_a_full_night_stores(conn):
    """After removals (a backfill to an earlier night) and a changed text, the index is the one a full
    computation stores: no stale band key of a changed or vanished entry is left behind."""
    assert [_night(conn, FIRST + timedelta(days=k)) for k in (8, 2)] == ["full", "incremental"]
    _edit(conn, ("update core.entries set norm_text = 'an entirely different note about grpc deadlines' "
                 "where entry_id = (select min(entry_id) from core.entries)", []))
    as_of = as_of_for_night(FIRST + timedelta(days=2))
    assert _stage(conn, as_of) == "incremental"
    index = "select * from core.near_duplicate_index order by all"
    kept = conn.execute(index).fetchall()
    conn.execute("delete from core.near_duplicate_index")
    assert _stage(conn, as_of) == "full"
    assert kept == conn.execute(index).fetchall()
    assert conn.execute("select count(*) from core.near_duplicate_index").fetchone()[0] == \
        conn.execute("select count(*) from core.entries").fetchone()[0]
    lengths = conn.execute("select distinct len(band_keys) from core.near_duplicate_index").fetchall()
    assert lengths == [(CFG.lsh_bands,)]


def test_a_full_night_in_passes_stores_the_index_and_pairs_of_one_pass(conn, monkeypatch):
    """The full computation stores each pass's keys as the pass ends: in a pass per namespace, the index
    and the pairs are those of one pass over every entry."""
    day = FIRST + timedelta(days=8)
    assert _night(conn, day) == "full"
    index = "select * from core.near_duplicate_index order by all"
    pairs = "select * from core.near_duplicate_pairs order by all"
    once = conn.execute(index).fetchall(), conn.execute(pairs).fetchall()
    stored = []
    add = nearindex._add_to_index
    monkeypatch.setattr(nearindex, "_add_to_index",
                        lambda c, rows, knobs: (stored.append(rows.height), add(c, rows, knobs)))
    conn.execute("delete from core.near_duplicate_index")
    assert _stage(conn, as_of_for_night(day), replace(CFG, near_duplicate_chunk_entries=1)) == "full"
    namespaces = conn.execute("select count(distinct namespace) from core.entries").fetchone()[0]
    assert len(stored) == namespaces > 1 and sum(stored) == len(once[0])
    assert (conn.execute(index).fetchall(), conn.execute(pairs).fetchall()) == once


def test_spilled_passes_are_the_passes_of_the_numbered_entries_and_leave_no_files(conn, tmp_path):
    """A full night in several passes reads each pass back from disk: the same frames namespace_passes
    makes of every entry numbered at once, in a folder beside the store that is gone after, also when
    the passes stop on an error; one a killed night left is removed."""
    _night(conn, FIRST + timedelta(days=8))
    entries = conn.execute(f"select {nearindex.ENTRY_COLUMNS} from core.entries").pl()
    want = list(namespace_passes(clustering.ordered_docs(entries), 700))
    sizes = conn.execute("select namespace, count(*) as len from core.entries group by namespace").pl().sort("namespace")
    sizes = sizes.with_columns(pass_numbers(sizes["len"], 700).alias("pass"))
    beside = lambda: sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("store.duckdb.passes-"))  # noqa: E731
    (tmp_path / "store.duckdb.passes-killed").mkdir()  # left by a night that was killed
    (tmp_path / "store.duckdb.passes-killed" / "0-0.arrow").write_bytes(b"")
    with nearindex._spilled_passes(conn, sizes, rows_per_batch=500) as passes:
        assert len(beside()) == 1 and beside() != ["store.duckdb.passes-killed"]
        got = list(passes)
    assert 1 < len(want) < sizes.height and len(got) == len(want)
    for frame, expected in zip(got, want):
        assert frame.equals(expected)
    assert beside() == []
    with pytest.raises(RuntimeError), nearindex._spilled_passes(conn, sizes, rows_per_batch=500) as passes:
        next(passes)
        raise RuntimeError("a pass failed")
    assert beside() == []


@pytest.mark.parametrize("version, change", [
    (3, "add column as_of timestamp"),  # version 3 stamped each row with the night
    (6, "drop column entry_hash"),  # version 6 had no entry hash to read the changed entries' rows by
])
def test_an_index_stored_by_an_earlier_version_is_rebuilt_in_full(conn, version, change):
    """An index of an earlier version, with other columns: its table is dropped, not reused."""
    day = FIRST + timedelta(days=8)
    assert _night(conn, day) == "full"
    conn.execute(f"alter table core.near_duplicate_index {change}")
    # (its knobs name another version, in its rows and in the record of its refresh)
    for table, column in (("core.near_duplicate_index", "params"), ("work.refreshes", "version")):
        conn.execute(f"update {table} set {column} = replace({column}, '\"version\": {nearindex.VERSION}', "
                     f"'\"version\": {version}')")
    assert _stage(conn, as_of_for_night(day)) == "full"
    columns = [r[0] for r in conn.execute("select column_name from information_schema.columns where table_schema = 'core' "
                                          "and table_name = 'near_duplicate_index' order by ordinal_position").fetchall()]
    assert columns == nearindex.NEAR_DUPLICATE_INDEX.column_names
    assert _stage(conn, as_of_for_night(day)) == "incremental"
    _assert_full_pairs(conn)


def test_an_incremental_night_removes_the_pass_files_a_killed_full_night_left(conn, tmp_path):
    """A full night killed mid-pass leaves its folder beside the store; nights are mostly incremental,
    and the next one removes it (a 10M full night's is ~4 GB)."""
    day = FIRST + timedelta(days=8)
    assert _night(conn, day) == "full"
    left = tmp_path / f"store.duckdb.{nearindex.SPILL}-killed"
    left.mkdir()
    (left / "0-0.arrow").write_bytes(b"")
    assert _stage(conn, as_of_for_night(day)) == "incremental"
    assert not left.exists()
    _assert_full_pairs(conn)


def _assert_full_clusters(conn) -> int:
    """The stored clusters are those of clustering every entry's edges again."""
    entries = conn.execute("select namespace, entry_id, first_written_at from core.entries").pl()
    want = clustering.clusters(entries, conn.execute(clustering.EDGES).pl())
    got = conn.execute(f"select {', '.join(want.columns)} from core.near_duplicate_clusters").pl()
    key = ["namespace", "entry_id"]
    assert got.sort(key).equals(want.sort(key)), "re-clustered rows differ from clustering everything"
    return got.height


def _reclustered(conn, as_of) -> bool:
    """Run the cluster stage; whether it kept the stored clusters (re-clustering only what changed)."""
    kept = conn.execute("select count(*) = 2 and count(distinct comment) = 1 from duckdb_tables() "
                        "where table_name in ('cluster_edges', 'near_duplicate_clusters')").fetchone()[0]
    clustering.build_near_duplicate_clusters(conn, as_of, CFG)
    return kept


@pytest.mark.parametrize("order", [range(9), [8, 0, 4, 3, 7, 7]], ids=["forward", "backfill"])
def test_every_night_gives_the_clusters_of_all_edges(conn, order):
    kept = []
    for k in order:
        as_of = as_of_for_night(FIRST + timedelta(days=k))
        for name, build in night.STEPS:
            if name == "core.near_duplicate_clusters":
                break
            build(conn, as_of, CFG)
        kept.append(_reclustered(conn, as_of))
        _assert_full_clusters(conn)
    assert kept[0] is False and all(kept[1:])


def test_added_removed_edges_and_a_moved_first_write_recluster_their_components(conn):
    as_of = as_of_for_night(FIRST + timedelta(days=8))
    night.derive_night(conn, as_of, CFG)
    clusters_before = conn.execute("select count(distinct cluster_id) from core.near_duplicate_clusters").fetchone()[0]
    # one edge goes (it may split a cluster), one joins two clusters of a namespace, and the earliest
    # member of another cluster turns out to have been written later (its cluster takes another id)
    conn.execute("""delete from core.near_duplicate_pairs where (namespace, entry_a, entry_b) in (
                        select (namespace, entry_a, entry_b) from core.near_duplicate_pairs order by all limit 1)""")
    two = conn.execute("""select namespace, min(entry_id), max(entry_id) from (
                              select namespace, cluster_id, min(entry_id) as entry_id from core.near_duplicate_clusters
                              group by all) group by namespace having count(*) >= 2 order by namespace limit 1""").fetchone()
    conn.execute("insert into core.near_duplicate_pairs select ?, ?, ?, 0.75, 'minhash', 0.6",
                 [two[0], two[1], two[2]])
    first = conn.execute("""select namespace, entry_id from core.near_duplicate_clusters
                            where member_count >= 3 order by cluster_id, first_written_at limit 1""").fetchone()
    _edit(conn, ("update core.entries set first_written_at = first_written_at + interval 400 days "
                 "where namespace = ? and entry_id = ?", list(first)))
    ids_before = set(conn.execute("select cluster_id from core.near_duplicate_clusters").fetchall())
    assert _reclustered(conn, as_of)
    _assert_full_clusters(conn)
    ids_after = set(conn.execute("select cluster_id from core.near_duplicate_clusters").fetchall())
    assert ids_after != ids_before and clusters_before > 0
    # the stored edges are this night's: the next night starts from them
    assert conn.execute(f"select count(*) from (select * from core.cluster_edges except ({clustering.EDGES}))"
                        ).fetchone()[0] == 0
    assert conn.execute(f"select count(*) from (({clustering.EDGES}) except select * from core.cluster_edges)"
                        ).fetchone()[0] == 0


def test_clusters_stored_without_their_edges_are_clustered_again(conn):
    as_of = as_of_for_night(FIRST + timedelta(days=8))
    night.derive_night(conn, as_of, CFG)
    conn.execute("delete from core.near_duplicate_clusters where entry_id = (select min(entry_id) "
                 "from core.near_duplicate_clusters)")
    conn.execute("comment on table core.near_duplicate_clusters is 'written by something else'")
    assert not _reclustered(conn, as_of)
    _assert_full_clusters(conn)


def test_copy_groups_that_grow_past_the_cap_or_shrink_back_are_regrouped(conn):
    """A copy group of more than EXACT_GROUP_PAIR_CAP entries is paired as a star from its oldest copy:
    copies arriving or leaving switch a group between the two shapes, and the incremental night
    regroups it as the full computation does."""
    day = FIRST + timedelta(days=8)
    assert _night(conn, day) == "full"
    as_of = as_of_for_night(day)
    ns, entry = conn.execute("select namespace, entry_id from core.entries where len(norm_text) > 40 "
                             "order by entry_id limit 1").fetchone()
    cap = clustering.EXACT_GROUP_PAIR_CAP
    # (entry_hash follows the entry id, as the nights write it: tables.ENTRY_HASH)
    _edit(conn, (f"""insert into core.entries select e.* replace (e.entry_id || '-copy-' || k as entry_id,
                         e.first_written_at + to_minutes(k) as first_written_at,
                         hash(e.namespace, e.entry_id || '-copy-' || k) as entry_hash)
                     from core.entries as e, range({cap - 1}) as r(k) where namespace = ? and entry_id = ?""", [ns, entry]))
    assert _stage(conn, as_of) == "incremental"
    _assert_full_pairs(conn)
    full_group = conn.execute("select count(*) from core.near_duplicate_pairs where method = 'exact' and namespace = ? "
                              "and entry_a like ? || '%' and entry_b like ? || '%'", [ns, entry, entry]).fetchone()[0]
    assert full_group == cap * (cap - 1) // 2  # the whole group, pair by pair
    _edit(conn, ("insert into core.entries select * replace (entry_id || '-late' as entry_id, "
                 "first_written_at + interval 30 day as first_written_at, hash(namespace, entry_id || '-late') as "
                 "entry_hash) from core.entries "
                 "where namespace = ? and entry_id = ?", [ns, entry]))
    assert _stage(conn, as_of) == "incremental"
    _assert_full_pairs(conn)
    star = conn.execute("select count(*) from core.near_duplicate_pairs where method = 'exact' and namespace = ? "
                        "and entry_a like ? || '%' and entry_b like ? || '%'", [ns, entry, entry]).fetchone()[0]
    assert star == cap  # past the cap: a star from the oldest copy
    # one copy gets another text and another is gone: the group shrinks back to the cap and is paired in full
    _edit(conn, ("update core.entries set norm_text = 'a wholly different note about kafka retention' "
                 "where namespace = ? and entry_id = ?", [ns, f"{entry}-copy-3"]),
          ("delete from core.entries where namespace = ? and entry_id = ?", [ns, f"{entry}-copy-7"]))
    assert _stage(conn, as_of) == "incremental"
    _assert_full_pairs(conn)


def test_stored_band_keys_name_their_namespace_and_band():
    """The index's band keys are salted with the namespace and the band, with salts that do not depend
    on a library's version (the index is read again on later nights, perhaps by a newer install)."""
    keys = np.array([[7, 7], [7, 7], [7, 9]], dtype=np.uint64)
    stored = clustering.stored_band_keys(pl.Series(["ns-a", "ns-b", "ns-a"]), keys)
    assert stored[0, 0] != stored[1, 0]  # one band key in two namespaces
    assert stored[0, 0] != stored[0, 1]  # one key in two bands
    assert stored[0, 0] == stored[2, 0] and stored[0, 1] != stored[2, 1]
    assert stored[0, 0] ^ stored[1, 0] == clustering._salt("ns-a") ^ clustering._salt("ns-b")
    assert clustering._salt("ns-a") == 0xD57F165F8BEA7E40  # blake2b, 8 bytes, little-endian
