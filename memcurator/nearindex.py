"""Nights that cost what changed: the near-duplicate stage reuses its work on unchanged entries.

``core.near_duplicate_index`` carries the stage's work from one night to the next: per entry, a
fingerprint of what the stage reads (normalised text, tags, first write), its shingle-set key, the
LSH band keys of its MinHash signature, and the knobs in force. It carries no night stamp: a row
stands while its entry is unchanged, and stamping a million rows with list columns each night cost
about a second (DuckDB rewrites such rows to update them).

A night compares the fingerprints of the entries core.entries' last refresh changed with the index
(of every entry, unless the index was derived from the refresh before it), in DuckDB: the unchanged
entries never leave the store unless a changed one needs them. Unchanged entries keep their keys and their verified
near-duplicate pairs among themselves (a pair depends only on its two entries). Only changed and new
entries are shingled and hashed, and only their band keys are joined against the stored band keys of
their namespaces (unnested in DuckDB; salted with the namespace and the band, so the key alone is joined) to find new
candidates, which are verified exactly. The copy groups (same set
key) that changed entries join or leave are regrouped, so a group crossing the star cap is paired
again in its new shape; the exact pairs of other groups are kept. With no
index, other knobs, or more than ``incremental_max_changed_share`` of the entries changed, the
stage runs in full. Either way the pairs are those of the full computation (tested night by night),
so the tables stay a pure function of the log, the decisions, the configuration and ``as_of``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

import duckdb
import polars as pl

from memcurator import changes, clustering, minhash, sql, text
from memcurator.config import CurationConfig
from memcurator.frames import pass_numbers
from memcurator.store import (buffers_held_to, ensure_cache, ensure_table, entry_rows, registered, release_buffers,
                              remove_spills, rows_by_key, spill_space, streamed_frame, transaction)
from memcurator.tables import ENTRY_HASH, NS, C, Table, register

# Hashes do not compress: DuckDB would try each compression on every segment of them first (1M entries:
# their write 2.2 -> 1.95 s).
HASHES = "uncompressed"
NEAR_DUPLICATE_INDEX = register(Table(
    "core", "near_duplicate_index",
    "One row per entry: what the near-duplicate stage computed from it, reused while it is unchanged.",
    (
        NS,
        C("entry_id", "VARCHAR", "The entry.", False),
        C("fingerprint", "UBIGINT", "Hash of the normalised text, tags and first write time.", False, HASHES),
        C("set_key", "UBIGINT", "Hash of the shingle set: entries with the same key are exact copies.", False, HASHES),
        C("band_keys", "UBIGINT[]", "LSH band keys of the MinHash signature, band by band, salted with the namespace and the band (none without shingles).",
          compression=HASHES),
        C("params", "VARCHAR", "The knobs the keys were computed with (JSON); other knobs recompute everything.", False),
        ENTRY_HASH,
    ),
    key=("namespace", "entry_id"),
))
VERSION = 7  # raise when the way keys are computed or the pairs' declaration changes: a stored index of another version is recomputed (6: the pairs carry no as_of; 7: the index carries entry_hash)


def params(cfg: CurationConfig) -> str:
    return json.dumps({
        "version": VERSION, "shingle_words": cfg.shingle_words, "drop_stopwords": cfg.shingle_drop_stopwords,
        "permutations": cfg.minhash_permutations, "bands": cfg.lsh_bands,
        "threshold": cfg.near_duplicate_threshold, "exact_cap": clustering.EXACT_GROUP_PAIR_CAP,
        "specific": clustering.SPECIFIC,
        "polars": pl.__version__,  # the set keys are sums of polars hashes
    }, sort_keys=True)


# What the stage reads of an entry, hashed in DuckDB, so the texts of unchanged entries never leave the
# store. (A DuckDB whose hash differs finds every entry changed and runs the stage in full: the pairs
# are the same.)
FINGERPRINT = "hash(norm_text, tags, first_written_at)"
# The entries to compare with the index, and their index rows, side by side: the entry's fingerprint,
# the set key the index holds for it and that row's id (index_row), whether it is an entry tonight
# (present), whether the index holds it (indexed), under this night's knobs (same_knobs) and unchanged
# (kept: same fingerprint, same knobs). The entries compared are every entry, or those core.entries'
# last refresh changed when the index was derived from the refresh before it (scoped): the others are
# unchanged. A temp table the incremental night reads several times; only changed and new entries leave
# DuckDB, unchanged ones only where a changed one needs them.
INDEX_NAME = NEAR_DUPLICATE_INDEX.qualified


def night_entries(scoped: bool) -> str:
    # the changed entries' texts read by row id (store.rows_by_key): 0.4 s -> 0.1 s of a 1 %-churn night at 1M;
    # their index rows by hash (by key, 0.05 s of that night)
    entries = f"({rows_by_key('core.entries', 'select * from input_changes')})" if scoped else "core.entries"
    columns = "rowid as index_row, namespace, entry_id, fingerprint, set_key, params"
    indexed = (f"({entry_rows(INDEX_NAME, 'select * from input_changes', columns)})" if scoped
               else f"(select {columns} from {INDEX_NAME})")
    return f"""
create or replace temp table night_entries as
with fingerprinted as (
    select namespace, entry_id, first_written_at, {FINGERPRINT} as fingerprint
    from {entries}
),
indexed as (
    select * from {indexed}
)
select coalesce(f.namespace, i.namespace) as namespace, coalesce(f.entry_id, i.entry_id) as entry_id,
    f.first_written_at, f.fingerprint, i.set_key, i.index_row,
    f.entry_id is not null as present,
    i.entry_id is not null as indexed,
    coalesce(i.params = $p, false) as same_knobs,
    coalesce(i.fingerprint = f.fingerprint and i.params = $p, false) as kept
from fingerprinted as f
full outer join indexed as i on i.namespace = f.namespace and i.entry_id = f.entry_id
"""


def with_texts(conn: duckdb.DuckDBPyConnection, docs: pl.DataFrame) -> pl.DataFrame:
    """``docs`` (numbered entries) with their normalised texts, read for these entries only; sorted by doc.

    Normalised from the stored text (sql/norm_text.sql, the expression core.entries' norm_text is):
    these are unchanged entries spread over the table, and reading a few thousand of them reads most
    of a text column's blocks (0.4-0.6 s on 1M entries, the column's first read in the process). The
    contradiction stage after this one reads the texts too; reading the same column, it finds them in
    DuckDB's buffers. No entries, no read (the row ids are found by a scan of every entry's key)."""
    if docs.is_empty():
        return docs.with_columns(pl.lit(None, pl.String).alias("norm_text"))
    wanted = rows_by_key("core.entries", "select namespace, entry_id from wanted_docs")
    with registered(conn, wanted_docs=docs.select("doc", "namespace", "entry_id")):
        texts = conn.execute(f"select w.doc, {sql.load('norm_text')} as norm_text from wanted_docs as w "
                             f"inner join ({wanted}) as e using (namespace, entry_id)").pl()
    return docs.join(texts, on="doc").sort("doc")


def build_near_duplicate_pairs(conn: duckdb.DuckDBPyConnection, as_of: datetime, cfg: CurationConfig) -> int:
    """MinHash/LSH candidates within each namespace, every one verified by exact Jaccard; reuses the
    previous night's work on unchanged entries. The pairs and the index change together: on an
    incremental night only the pairs that go are deleted and the new ones inserted."""
    params = {"threshold": cfg.near_duplicate_threshold, "as_of": as_of}
    rows = "select *, $threshold as threshold from frame"
    table = clustering.NEAR_DUPLICATE_PAIRS
    try:
        with transaction(conn):
            pairs, how = near_duplicate_pairs(conn, as_of, cfg, delta=True)
            with registered(conn, frame=pairs):
                if how == "full":
                    return changes.replace_recording(conn, table, rows, params, changes.PAIR_KEYS, own_transaction=False)
                conn.execute("delete from core.near_duplicate_pairs as p where exists (select 1 from pairs_gone as g "
                             "where g.namespace = p.namespace and g.entry_a = p.entry_a and g.entry_b = p.entry_b)")
                conn.execute(f"insert into core.near_duplicate_pairs select {table.select_list('q')} from ({rows}) q",
                             {"threshold": cfg.near_duplicate_threshold})
                changes.record(conn, table.qualified, "", as_of, {},
                               "select * from (select namespace, entry_a, entry_b from pairs_gone union all "
                               "select namespace, entry_a, entry_b from frame) as changed_rows, "
                               "lateral (select unnest([entry_a, entry_b]) as entry_id)")
    finally:
        conn.execute("drop table if exists pairs_gone")
    return conn.execute("select count(*) from core.near_duplicate_pairs").fetchone()[0]


def near_duplicate_pairs(conn: duckdb.DuckDBPyConnection, as_of: datetime, cfg: CurationConfig,
                         delta: bool = False) -> tuple[pl.DataFrame, str]:
    """This night's pairs (those of the full computation) and how they were found: full or incremental.
    With ``delta``, an incremental night gives only the new pairs, and the temp table pairs_gone names
    the stored ones that go (the others stand).

    Rewrites the index; the caller writes the pairs in the same transaction."""
    ensure_cache(conn, NEAR_DUPLICATE_INDEX)  # one stored with other columns (another version's) is rebuilt
    remove_spills(conn, SPILL)  # what a full night killed mid-pass left, whichever way this night goes
    knobs = params(cfg)
    entries_now, before, last = changes.input_changes(conn, INDEX_NAME, knobs, ["core.entries"], as_of)
    try:
        found = None
        if conn.execute("select count(*) from core.near_duplicate_index").fetchone()[0]:
            conn.execute(night_entries(scoped=before is not None), {"p": knobs})
            total = conn.execute("select count(*) from core.entries").fetchone()[0]
            changed, stale_knobs = conn.execute(
                "select count(*) filter (where present and not kept), "
                "count(*) filter (where indexed and not same_knobs) from night_entries").fetchone()
            if not stale_knobs and changed <= cfg.incremental_max_changed_share * max(total, 1):
                found = _incremental(conn, cfg, knobs, delta), "incremental"
        found = found or (_full(conn, cfg, knobs), "full")
        # the index holds the fingerprints of this generation of core.entries: the next night compares
        # only the entries core.entries changes after it
        changes.record(conn, INDEX_NAME, knobs, as_of, entries_now, None, last)
        return found
    finally:
        for temp in ("night_entries", "input_changes"):
            conn.execute(f"drop table if exists {temp}")


def _full(conn: duckdb.DuckDBPyConnection, cfg: CurationConfig, knobs: str) -> pl.DataFrame:
    """Every entry's keys and pairs computed again; the index rebuilt from them. The entries are read
    once, with their fingerprints (without an index to compare with, a night does not read them first),
    and numbered as they are read; in more than one pass, they wait on disk by pass (``_spilled_passes``)."""
    # DuckDB keeps the blocks it read (the entry fold's, these texts) cached up to its memory limit; let go
    # before the arrays are built beside them, the 1M full night's peak RSS fell from 3.41-3.46 to 2.67-2.71 GB
    # (lab: the night in one process, RSS sampled), the stage as fast within the noise (10.6-12.0 s, 11.2-14.4).
    # The texts are streamed in with the cache held to 1 GB, and each pass's keys stored as it ends. Held
    # whole, every entry's texts set the stage's peak RSS at 10M entries (make bench-10m: 10,466 MB); waiting
    # on disk by pass, the stage alone peaked at 4,990-5,005 MB against 10,289, in 171-188 s against 177
    # (lab, one store, two runs against one; at 1M, 1,735-1,779 MB against 2,000-2,020, as fast within the
    # noise: 15.7-18.6 s against 16.9-17.2, two runs each). What grows pass by pass now is what the stage's
    # transaction has written to the index (committed pass by pass in the lab, the 1M stage stayed flat;
    # the index and the pairs change in one transaction).
    release_buffers(conn)
    sizes = conn.execute("select namespace, count(*) as len from core.entries group by namespace").pl().sort("namespace")
    sizes = sizes.with_columns(pass_numbers(sizes["len"], cfg.near_duplicate_chunk_entries).alias("pass"))
    conn.execute("drop table core.near_duplicate_index")  # every row is computed again (one with other columns
    # was dropped when the stage began: store.ensure_cache)
    ensure_table(conn, NEAR_DUPLICATE_INDEX)

    def store_keys(docs: pl.DataFrame, keys: pl.DataFrame) -> None:
        # each pass's keys stored as the pass ends, none held to the end (every entry's band keys, 256 bytes
        # an entry, and their join with the fingerprints: 2.6 GB of band keys at 10M entries, twice)
        fingerprints = docs.select("namespace", "entry_id", "fingerprint")
        _add_to_index(conn, fingerprints.join(keys, on=["namespace", "entry_id"]), knobs)
        release_buffers(conn)  # the blocks just written stay cached otherwise, a pass's more each time

    if sizes["pass"].n_unique() <= 1:
        with buffers_held_to(conn, "1GB"):
            docs = clustering.ordered_docs(streamed_frame(conn, f"select {ENTRY_COLUMNS} from core.entries"))
        return clustering.pairs_and_keys_of_docs(docs, cfg, store_keys)[0]
    with _spilled_passes(conn, sizes) as passes:
        return clustering.pairs_and_keys_of_passes(passes, cfg, store_keys)[0]


# What the stage reads of every entry in a full night.
ENTRY_COLUMNS = f"namespace, entry_id, norm_text, first_written_at, tags, {FINGERPRINT} as fingerprint"


SPILL = "passes"  # the name of the folders _spilled_passes writes beside the store (store.spill_space)


@contextmanager
def _spilled_passes(conn: duckdb.DuckDBPyConnection, sizes: pl.DataFrame,
                    rows_per_batch: int = 1 << 18) -> Iterator[Iterator[pl.DataFrame]]:
    """The entries as ``namespace_passes`` gives them from ``ordered_docs``, one pass at a time (``sizes``:
    namespace, len and pass, in namespace order). They are read from the store once and written by pass
    to files beside it (store.spill_space); a pass is read back and numbered when its turn comes. So the
    texts of one pass are held, not every entry's."""
    offsets = (sizes.group_by("pass", maintain_order=True).agg(pl.col("len").sum())
               .with_columns((pl.col("len").cum_sum() - pl.col("len")).alias("start")))
    with spill_space(conn, SPILL) as folder:
        with registered(conn, entry_passes=sizes.select("namespace", "pass")), buffers_held_to(conn, "1GB"):
            reader = conn.execute(f"select e.*, p.pass from (select {ENTRY_COLUMNS} from core.entries) as e "
                                  "inner join entry_passes as p using (namespace)").fetch_record_batch(rows_per_batch)
            for number, batch in enumerate(reader):
                for (index,), part in pl.from_arrow(batch).partition_by("pass", as_dict=True,
                                                                         include_key=False).items():
                    part.write_ipc(folder / f"{index}-{number}.arrow")

        def passes() -> Iterator[pl.DataFrame]:
            for index, start in offsets.select("pass", "start").iter_rows():
                files = sorted(folder.glob(f"{index}-*.arrow"))
                docs = clustering.ordered_docs(pl.concat([pl.read_ipc(f) for f in files]), first=start)
                for f in files:
                    f.unlink()
                yield docs

        yield passes()


def _incremental(conn: duckdb.DuckDBPyConnection, cfg: CurationConfig, knobs: str, delta: bool = False) -> pl.DataFrame:
    """The pairs of the full computation from the stored index and pairs (``night_entries`` marks the
    entries the index holds unchanged). Only changed and new entries are shingled; the copy groups they
    join or leave are regrouped; stored pairs between unchanged entries are kept, but for the exact
    pairs of a regrouped copy group."""
    changed = "select namespace, entry_id from night_entries where present and not kept"
    fresh = conn.execute("select n.namespace, n.entry_id, n.first_written_at, n.fingerprint, e.tags, e.norm_text "
                         f"from night_entries as n inner join ({rows_by_key('core.entries', changed)}) as e "
                         "using (namespace, entry_id) where n.present and not n.kept").pl()
    fresh, vocabulary = clustering.with_text_keys(fresh, cfg)
    hashed = fresh.filter(pl.col("shingles").list.len() > 0)
    keys = clustering.band_keys_of(minhash.token_rows(hashed["shingles"], vocabulary), cfg)
    hashed = hashed.with_columns(pl.Series("band_keys", clustering.stored_band_keys(hashed["namespace"], keys))
                                 .cast(pl.List(pl.UInt64)))
    band_lists = hashed.select("namespace", "entry_id", "band_keys")  # the changed entries' keys, a list each
    fresh_bands = (band_lists
                   .with_columns(pl.int_ranges(0, pl.col("band_keys").list.len(), dtype=pl.Int16).alias("band"))
                   .explode("band_keys", "band").rename({"band_keys": "key"}))

    # entries the index loses (changed or gone) leave their copy groups: those groups are regrouped, as
    # are the groups changed and new entries join. (Every join below has a small side: with a million
    # rows on each side, DuckDB's estimates for temp tables made in the stage's transaction planned
    # cross products.)
    conn.execute("create or replace temp table leaving as select namespace, entry_id, set_key, index_row "
                 "from night_entries where indexed and not kept")
    regrouped = pl.concat([conn.execute("select distinct namespace, set_key from leaving").pl(),
                           fresh.select("namespace", "set_key")]).unique()
    conn.execute("delete from core.near_duplicate_index where rowid in (select index_row from leaving)")
    # copied into DuckDB: a join may push a filter on the 64-bit keys into the scan of a registered Arrow
    # frame, which DuckDB hands to pyarrow as a Python int, and keys past 2^63 overflow there
    for name, frame in (("fresh_keys", band_lists), ("regrouped", regrouped)):
        with registered(conn, frame=frame):
            conn.execute(f"create or replace temp table {name} as select * from frame")
    try:
        # the unchanged entries sharing a band key with a changed one (their band keys are the stored band
        # index): the salted keys are joined alone, and the index rows they name read after (unnesting
        # every row's namespace and entry id with its keys took twice as long). Both sides are unnested in
        # the query: DuckDB estimates an unnest at one row per list, so the changed entries' side, with
        # fewer lists, is the one it builds the join's hash table on. With their keys unnested beforehand
        # (a row per key), it could take the stored side for the smaller and hash its millions of keys
        # (lab, 8-20k changed entries drawn from a 1M index: 1.1-2.2 s against 0.33-0.64 s)
        partners = conn.execute(
            """with stored as (  -- of the namespaces with a changed entry (a key is salted with its namespace)
                   select rowid as stored_row, unnest(band_keys) as key from core.near_duplicate_index
                   semi join (select distinct namespace from fresh_keys) using (namespace)
               ),
               fresh as (select namespace, entry_id, unnest(band_keys) as key from fresh_keys),
               hits as (
                   select distinct f.namespace, f.entry_id as x, s.stored_row from fresh as f
                   inner join stored as s using (key)
               )
               select distinct h.namespace, h.x, i.entry_id as y from hits as h
               inner join core.near_duplicate_index as i on i.rowid = h.stored_row and i.namespace = h.namespace""").pl()
        # (the index now holds the unchanged entries: the ones leaving are deleted, the fresh not yet added)
        conn.execute("create or replace temp table regrouped_members as select namespace, entry_id "
                     "from core.near_duplicate_index semi join regrouped using (namespace, set_key)")
        # the unchanged entries a changed one needs: members of regrouped copy groups and band partners
        with registered(conn, partners=partners):
            conn.execute("create or replace temp table wanted as select namespace, entry_id from regrouped_members "
                         "union select namespace, y from partners")
        # their entries and index rows read by their hashes (by key, every entry's strings were read: 33 ms of
        # scan in a 1 %-churn night at 1M entries)
        wanted = entry_rows("core.entries", "select * from wanted", "namespace, entry_id, first_written_at, tags")
        indexed = entry_rows(INDEX_NAME, "select * from wanted", "namespace, entry_id, set_key")
        unchanged = conn.execute(
            f"""select i.namespace, i.entry_id, e.first_written_at, i.set_key, e.tags
                from ({indexed}) as i inner join ({wanted}) as e using (namespace, entry_id)""").pl()
        # stored pairs between unchanged entries stand, but for the exact pairs of a regrouped group
        if delta:  # the caller keeps them in place and deletes the others
            conn.execute(
                """create or replace temp table pairs_gone as
                   select namespace, entry_a, entry_b from core.near_duplicate_pairs as p
                   semi join leaving as a on a.namespace = p.namespace and a.entry_id = p.entry_a
                   union
                   select namespace, entry_a, entry_b from core.near_duplicate_pairs as p
                   semi join leaving as a on a.namespace = p.namespace and a.entry_id = p.entry_b
                   union
                   select namespace, entry_a, entry_b from core.near_duplicate_pairs as p
                   semi join regrouped_members as m on m.namespace = p.namespace and m.entry_id = p.entry_a
                   where method = 'exact'""")  # (three semi joins: one with "or" and "in" took three times as long)
        kept_pairs = pl.DataFrame(schema=clustering._PAIR_SCHEMA) if delta else conn.execute(
            """with standing as (
                   select p.* from core.near_duplicate_pairs as p
                   anti join leaving as a on a.namespace = p.namespace and a.entry_id = p.entry_a
                   anti join leaving as b on b.namespace = p.namespace and b.entry_id = p.entry_b
               )
               select namespace, entry_a, entry_b, similarity, method from standing where method = 'minhash'
               union all
               select namespace, entry_a, entry_b, similarity, method from standing as p
               anti join regrouped_members as m on m.namespace = p.namespace and m.entry_id = p.entry_a
               where method = 'exact'""").pl()
    finally:
        for temp in ("leaving", "regrouped_members", "fresh_keys", "regrouped", "wanted"):
            conn.execute(f"drop table if exists {temp}")

    # the entries read here, numbered in write order (a pair's a is its older entry)
    docs = clustering.ordered_docs(pl.concat([fresh.select(unchanged.columns), unchanged]))
    fresh = fresh.join(docs.select("namespace", "entry_id", "doc"), on=["namespace", "entry_id"])
    doc_of = docs.select("namespace", "entry_id", "doc")
    exact, _ = clustering.exact_copy_pairs(docs.join(regrouped, on=["namespace", "set_key"], how="semi"))
    with_old = (partners.join(doc_of.rename({"entry_id": "x", "doc": "dx"}), on=["namespace", "x"])
                .join(doc_of.rename({"entry_id": "y", "doc": "dy"}), on=["namespace", "y"]).select("dx", "dy"))
    among_new = (fresh_bands.join(fresh_bands, on=["namespace", "band", "key"], suffix="_b")
                 .filter(pl.col("entry_id") < pl.col("entry_id_b"))
                 .join(doc_of.rename({"doc": "dx"}), on=["namespace", "entry_id"])
                 .join(doc_of.rename({"entry_id": "entry_id_b", "doc": "dy"}), on=["namespace", "entry_id_b"])
                 .select("dx", "dy"))
    candidates = (pl.concat([with_old, among_new])
                  .select(pl.min_horizontal("dx", "dy").alias("a"), pl.max_horizontal("dx", "dy").alias("b")).unique())
    near, read = _verified(conn, candidates, docs, fresh, vocabulary, cfg)
    involved = pl.concat([exact.select("a", "b"), near.select("a", "b")])
    involved = docs.join(pl.concat([involved["a"], involved["b"]]).unique().to_frame("doc"), on="doc")
    # the texts of paired entries: those the verification held, the others (copies) read now
    texts = pl.concat([involved.join(read, on="doc"),
                       with_texts(conn, involved.join(read, on="doc", how="anti"))]).sort("doc")
    new_pairs = clustering.compatible(pl.concat([exact, near]).unique(["a", "b"], keep="first"), texts)
    result = pl.concat([clustering.with_entry_ids(new_pairs, docs).select(list(clustering._PAIR_SCHEMA)),
                        kept_pairs.cast(clustering._PAIR_SCHEMA)])

    _add_to_index(conn, fresh.join(band_lists, on=["namespace", "entry_id"], how="left"), knobs)
    return result


def _verified(conn: duckdb.DuckDBPyConnection, candidates: pl.DataFrame, docs: pl.DataFrame, fresh: pl.DataFrame,
              vocabulary: pl.Series, cfg: CurationConfig) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Exact Jaccard of the candidates between different shingle sets (same set = exact copy, already paired),
    and the texts held for it (doc, norm_text: the fresh entries' and the unchanged ones' read here).
    ``fresh`` carries its shingles as codes of ``vocabulary``; the unchanged entries' shingles are numbered
    against it, so the fresh texts are not shingled again."""
    sets = docs.select("doc", "set_key")
    candidates = (candidates.join(sets.rename({"doc": "a", "set_key": "ka"}), on="a")
                  .join(sets.rename({"doc": "b", "set_key": "kb"}), on="b")
                  .filter(pl.col("ka") != pl.col("kb")).select("a", "b"))
    needed = pl.concat([candidates["a"], candidates["b"]]).unique().to_frame("doc")
    known = fresh.select("doc", "shingles").join(needed, on="doc")
    rest = with_texts(conn, docs.join(needed, on="doc").join(known.select("doc"), on="doc", how="anti"))
    numbered = text.shingle_codes(rest["norm_text"], cfg.shingle_words, cfg.shingle_drop_stopwords,
                                  vocabulary=vocabulary)
    shingles = pl.concat([known, rest.select("doc").with_columns(numbered.lists)])
    verified = clustering.verify(candidates, shingles)
    read = pl.concat([fresh.select("doc", "norm_text"), rest.select("doc", "norm_text")])
    return (verified.filter(pl.col("similarity") >= cfg.near_duplicate_threshold)
            .with_columns(pl.lit("minhash").alias("method"))), read


def _add_to_index(conn: duckdb.DuckDBPyConnection, rows: pl.DataFrame, knobs: str) -> None:
    with registered(conn, index_rows=rows.select("namespace", "entry_id", "fingerprint", "set_key", "band_keys")):
        conn.execute(f"insert into core.near_duplicate_index select {NEAR_DUPLICATE_INDEX.select_list('q')} from "
                     "(select *, $p as params from index_rows) q", {"p": knobs})
