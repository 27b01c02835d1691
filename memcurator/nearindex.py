"""Nights that cost what changed: the near-duplicate stage reuses its work on unchanged entries.

``core.near_duplicate_index`` carries the stage's work from one night to the next: per entry, a
fingerprint of what the stage reads (normalised text, tags, first write), its shingle-set key, the
LSH band keys of its MinHash signature, and the knobs in force. It carries no night stamp: a row
stands while its entry is unchanged, and stamping a million rows with list columns each night cost
about a second (DuckDB rewrites such rows to update them).

A night compares each entry's fingerprint with the index. Unchanged entries keep their keys and
their verified near-duplicate pairs among themselves (a pair depends only on its two entries).
Only changed and new entries are shingled and hashed, and only their band keys are joined
against the stored band keys (unnested in DuckDB) to find new candidates, which are verified exactly.
Exact-copy pairs are regrouped every night from the stored set keys (groups, not pairs). With no
index, other knobs, or more than ``incremental_max_changed_share`` of the entries changed, the
stage runs in full. Either way the pairs are those of the full computation (tested night by night),
so the tables stay a pure function of the log, the decisions, the configuration and ``as_of``.
"""

from __future__ import annotations

import json
from datetime import datetime

import duckdb
import polars as pl

from memcurator import clustering, minhash, text
from memcurator.config import CurationConfig
from memcurator.store import ensure_table, replace_table_from_frame, transaction
from memcurator.tables import NS, C, Table, register

NEAR_DUPLICATE_INDEX = register(Table(
    "core", "near_duplicate_index",
    "One row per entry: what the near-duplicate stage computed from it, reused while it is unchanged.",
    (
        NS,
        C("entry_id", "VARCHAR", "The entry.", False),
        C("fingerprint", "UBIGINT", "Hash of the normalised text, tags and first write time.", False),
        C("set_key", "UBIGINT", "Hash of the shingle set: entries with the same key are exact copies.", False),
        C("band_keys", "UBIGINT[]", "LSH band keys of the MinHash signature, band by band (none without shingles)."),
        C("params", "VARCHAR", "The knobs the keys were computed with (JSON); other knobs recompute everything.", False),
    ),
    key=("namespace", "entry_id"),
))
VERSION = 4  # raise when the way keys are computed changes: a stored index of another version is recomputed


def params(cfg: CurationConfig) -> str:
    return json.dumps({
        "version": VERSION, "shingle_words": cfg.shingle_words, "drop_stopwords": cfg.shingle_drop_stopwords,
        "permutations": cfg.minhash_permutations, "bands": cfg.lsh_bands,
        "threshold": cfg.near_duplicate_threshold, "exact_cap": clustering.EXACT_GROUP_PAIR_CAP,
        "specific": clustering.SPECIFIC,
    }, sort_keys=True)


# Each entry with its fingerprint (a hash of what the stage reads of it) and, when the index holds
# the same fingerprint under the same knobs, its stored set key. Hashed in DuckDB, so the texts of
# unchanged entries never leave the store: a changed night reads only the texts it needs. (A DuckDB
# whose hash differs finds every entry changed and runs the stage in full: the pairs are the same.)
FINGERPRINT = "hash(norm_text, tags, first_written_at)"
KNOWN_ENTRIES = f"""
with fingerprinted as (
    select namespace, entry_id, first_written_at, tags, {FINGERPRINT} as fingerprint
    from core.entries
)
select f.namespace, f.entry_id, f.first_written_at, f.tags, f.fingerprint, i.set_key
from fingerprinted as f
left join core.near_duplicate_index as i
    on i.namespace = f.namespace and i.entry_id = f.entry_id and i.fingerprint = f.fingerprint and i.params = $p
"""


def with_texts(conn: duckdb.DuckDBPyConnection, docs: pl.DataFrame) -> pl.DataFrame:
    """``docs`` (numbered entries) with their normalised texts, read for these entries only; sorted by doc."""
    conn.register("wanted_docs", docs.select("doc", "namespace", "entry_id").to_arrow())
    try:
        texts = conn.execute("select w.doc, e.norm_text from wanted_docs as w "
                             "inner join core.entries as e using (namespace, entry_id)").pl()
    finally:
        conn.unregister("wanted_docs")
    return docs.join(texts, on="doc").sort("doc")


def build_near_duplicate_pairs(conn: duckdb.DuckDBPyConnection, as_of: datetime, cfg: CurationConfig) -> int:
    """MinHash/LSH candidates within each namespace, every one verified by exact Jaccard; reuses the
    previous night's work on unchanged entries. The pairs and the index change together."""
    with transaction(conn):
        pairs, _ = near_duplicate_pairs(conn, as_of, cfg)
        return replace_table_from_frame(conn, clustering.NEAR_DUPLICATE_PAIRS, pairs,
                                        "select *, $threshold as threshold, $as_of as as_of from frame",
                                        {"threshold": cfg.near_duplicate_threshold, "as_of": as_of},
                                        own_transaction=False)


def near_duplicate_pairs(conn: duckdb.DuckDBPyConnection, as_of: datetime, cfg: CurationConfig) -> tuple[pl.DataFrame, str]:
    """This night's pairs (those of the full computation) and how they were found: full or incremental.

    Rewrites the index; the caller writes the pairs in the same transaction."""
    ensure_table(conn, NEAR_DUPLICATE_INDEX)
    knobs = params(cfg)
    stored, stale_knobs = conn.execute("select count(*) filter (where params = $p), count(*) filter (where params <> $p) "
                                       "from core.near_duplicate_index", {"p": knobs}).fetchone()
    if stored and not stale_knobs:
        known = clustering.ordered_docs(conn.execute(KNOWN_ENTRIES, {"p": knobs}).pl())
        if known["set_key"].null_count() <= cfg.incremental_max_changed_share * max(known.height, 1):
            return _incremental(conn, known, cfg, knobs), "incremental"
        del known
    return _full(conn, cfg, knobs), "full"


def _full(conn: duckdb.DuckDBPyConnection, cfg: CurationConfig, knobs: str) -> pl.DataFrame:
    """Every entry's keys and pairs computed again; the index rebuilt from them. The entries are read
    once, with their fingerprints (without an index to compare with, a night does not read them first),
    and numbered as they are read: the texts are held once while the passes run."""
    docs = clustering.ordered_docs(conn.execute(
        f"select namespace, entry_id, norm_text, first_written_at, tags, {FINGERPRINT} as fingerprint "
        "from core.entries").pl())
    fingerprints = docs.select("namespace", "entry_id", "fingerprint")
    pairs, keys = clustering.pairs_and_keys_of_docs(docs, cfg)
    del docs
    conn.execute("drop table core.near_duplicate_index")  # a stored index of another version may have other columns
    ensure_table(conn, NEAR_DUPLICATE_INDEX)
    _add_to_index(conn, fingerprints.join(keys, on=["namespace", "entry_id"]), knobs)
    return pairs


def _incremental(conn: duckdb.DuckDBPyConnection, known: pl.DataFrame, cfg: CurationConfig, knobs: str) -> pl.DataFrame:
    unchanged = known.filter(pl.col("set_key").is_not_null())
    fresh, vocabulary = clustering.with_text_keys(
        with_texts(conn, known.filter(pl.col("set_key").is_null()).drop("set_key")), cfg)
    hashed = fresh.filter(pl.col("shingles").list.len() > 0)
    hashed = hashed.with_columns(pl.Series("band_keys", clustering.band_keys_of(
        minhash.token_rows(hashed["shingles"], vocabulary), cfg)).cast(pl.List(pl.UInt64)))
    fresh_bands = (hashed.select("doc", "namespace", "entry_id", "band_keys")
                   .with_columns(pl.int_ranges(0, pl.col("band_keys").list.len(), dtype=pl.Int16).alias("band"))
                   .explode("band_keys", "band").rename({"band_keys": "key"}))

    # the index keeps its unchanged entries (their band keys are the stored band index); changed ones are re-added
    conn.register("kept", unchanged.select("namespace", "entry_id", "fingerprint").to_arrow())
    conn.register("fresh_bands", fresh_bands.to_arrow())
    try:
        conn.execute("delete from core.near_duplicate_index i where not exists (select 1 from kept k where "
                     "k.namespace = i.namespace and k.entry_id = i.entry_id and k.fingerprint = i.fingerprint)")
        old_partners = conn.execute(
            """with stored as (
                   select namespace, entry_id, unnest(band_keys) as key, unnest(range(len(band_keys)))::smallint as band
                   from core.near_duplicate_index where band_keys is not null
               )
               select distinct f.doc as x, s.entry_id as partner, f.namespace from fresh_bands f
               join stored s on s.namespace = f.namespace and s.band = f.band and s.key = f.key""").pl()
        reused = conn.execute("select namespace, entry_a, entry_b, similarity from core.near_duplicate_pairs "
                              "where method = 'minhash'").pl()
    finally:
        conn.unregister("kept")
        conn.unregister("fresh_bands")

    docs = pl.concat([unchanged.select("doc", "namespace", "entry_id", "tags", "set_key"),
                      fresh.select("doc", "namespace", "entry_id", "tags", "set_key")]).sort("doc")
    exact, _ = clustering.exact_copy_pairs(docs)

    ids = unchanged.select("namespace", pl.col("entry_id").alias("partner"), pl.col("doc").alias("y"))
    with_old = old_partners.join(ids, on=["namespace", "partner"]).select("x", "y")
    among_new = (fresh_bands.join(fresh_bands, on=["namespace", "band", "key"], suffix="_b")
                 .filter(pl.col("doc") < pl.col("doc_b")).select(pl.col("doc").alias("x"), pl.col("doc_b").alias("y")))
    candidates = (pl.concat([with_old, among_new])
                  .select(pl.min_horizontal("x", "y").alias("a"), pl.max_horizontal("x", "y").alias("b")).unique())
    near = _verified(conn, candidates, docs, fresh, cfg)

    by_id = unchanged.select("namespace", "entry_id", "doc")
    kept_pairs = (reused.join(by_id.rename({"entry_id": "entry_a", "doc": "a"}), on=["namespace", "entry_a"])
                  .join(by_id.rename({"entry_id": "entry_b", "doc": "b"}), on=["namespace", "entry_b"])
                  .select(pl.min_horizontal("a", "b").alias("a"), pl.max_horizontal("a", "b").alias("b"), "similarity",
                          pl.lit("minhash").alias("method")))
    involved = pl.concat([exact.select("a", "b"), near.select("a", "b")])
    texts = with_texts(conn, docs.join(pl.concat([involved["a"], involved["b"]]).unique().to_frame("doc"), on="doc"))
    new_pairs = clustering.compatible(pl.concat([exact, near]).unique(["a", "b"], keep="first"), texts)
    pairs = pl.concat([new_pairs, kept_pairs]).unique(["a", "b"], keep="first")
    result = clustering.with_entry_ids(pairs, docs).sort("a", "b").select(list(clustering._PAIR_SCHEMA))

    _add_to_index(conn, fresh.join(hashed.select("doc", "band_keys"), on="doc", how="left"), knobs)
    return result


def _verified(conn: duckdb.DuckDBPyConnection, candidates: pl.DataFrame, docs: pl.DataFrame, fresh: pl.DataFrame,
              cfg: CurationConfig) -> pl.DataFrame:
    """Exact Jaccard of the candidates between different shingle sets (same set = exact copy, already paired)."""
    sets = docs.select("doc", "set_key")
    candidates = (candidates.join(sets.rename({"doc": "a", "set_key": "ka"}), on="a")
                  .join(sets.rename({"doc": "b", "set_key": "kb"}), on="b")
                  .filter(pl.col("ka") != pl.col("kb")).select("a", "b"))
    needed = pl.concat([candidates["a"], candidates["b"]]).unique().to_frame("doc")
    known = fresh.select("doc", "norm_text").join(needed, on="doc")
    rest = with_texts(conn, docs.join(needed, on="doc").join(known.select("doc"), on="doc", how="anti"))
    texts = pl.concat([known, rest.select("doc", "norm_text")])
    # numbered in one call: codes compare within one numbering only
    shingles = texts.select("doc", text.shingle_codes(texts["norm_text"], cfg.shingle_words,
                                                      cfg.shingle_drop_stopwords).lists)
    verified = clustering.verify(candidates, shingles)
    return (verified.filter(pl.col("similarity") >= cfg.near_duplicate_threshold)
            .with_columns(pl.lit("minhash").alias("method")))


def _add_to_index(conn: duckdb.DuckDBPyConnection, rows: pl.DataFrame, knobs: str) -> None:
    conn.register("index_rows", rows.select("namespace", "entry_id", "fingerprint", "set_key", "band_keys").to_arrow())
    try:
        conn.execute(f"insert into core.near_duplicate_index select {NEAR_DUPLICATE_INDEX.select_list('q')} from "
                     "(select *, $p as params from index_rows) q", {"p": knobs})
    finally:
        conn.unregister("index_rows")
