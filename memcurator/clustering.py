"""Compression: near-duplicate pairs and clusters, principle proposals, the redundancy penalty.

- Pairs: per namespace, exact copies (same shingle set) are grouped first; one representative per
  copy group gets a MinHash signature; LSH banding (``lsh_bands`` x rows) proposes candidates;
  every candidate is verified by exact Jaccard before it becomes an edge (``near_duplicate_threshold``).
  Two entries whose tags (the writers' subject keys) are both non-empty and disjoint are never
  duplicates: short statements about different subjects share most of their words. Nor are two
  entries that both name specific tokens (numbers of 2+ digits, identifiers, paths) with none in
  common: "reverted hotfix-41976" and "reverted hotfix-50466" are different events, and "timeout is
  30 s" and "timeout is 45 s" are different facts (a conflict, which the detector finds by subject).
- Clusters: connected components of the verified edges between compatible entries (a pair the
  contradiction judge flags is not a restatement); the id is that of the earliest-written member,
  so it stays put while later members join.
- Proposals: a cluster of at least ``min_principle_members`` gets one proposed principle whose
  text is the canonical member (rule in docs/curation.md); a curator approves, rejects or unmerges
  it through ``memcurator review``; until approval the members stay as they are.
- Redundancy penalty: each compatible similar later write multiplies the older entry's importance
  by ``1 - redundancy_penalty x (0.8 + 0.4 x (s - t) / (1 - t))`` (about 10-15 % per occurrence).
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Callable, Iterable
from datetime import datetime

import duckdb
import numpy as np
import polars as pl
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from memcurator import changes, minhash, sql, text
from memcurator.config import CurationConfig
from memcurator.frames import namespace_passes
from memcurator.store import (code_version, ensure_table, entry_rows, registered, replace_table,
                              replace_table_from_frame, set_version, transaction)
from memcurator.tables import ENTRY_HASH, NS, C, Table, register, with_row_hash

EXACT_GROUP_PAIR_CAP = 200  # exact-copy groups larger than this get star edges from their oldest copy
# specific tokens: numbers of two or more digits and identifiers (letters with 3+ digits, #123, paths)
SPECIFIC = r"(#\d+|\b\w*[a-z]\w*\d{3,}\w*\b|\b\d{2,}(?:\.\d+)?\b|/[\w./-]+)"
SPECIFICS = pl.col("norm_text").str.extract_all(SPECIFIC).list.unique().alias("specifics")

NEAR_DUPLICATE_PAIRS = register(Table(
    "core", "near_duplicate_pairs",
    "One row per verified near-duplicate pair within a namespace (entry_a written before entry_b).",
    (
        NS,
        C("entry_a", "VARCHAR", "The older entry.", False),
        C("entry_b", "VARCHAR", "The newer entry.", False),
        C("similarity", "DOUBLE", "Exact Jaccard similarity of the shingle sets.", False),
        C("method", "VARCHAR", "exact (same shingle set) or minhash (LSH candidate, verified).", False),
        C("threshold", "DOUBLE", "near_duplicate_threshold in force.", False),
    ),
    key=("namespace", "entry_a", "entry_b"),
))

NEAR_DUPLICATE_CLUSTERS = register(Table(
    "core", "near_duplicate_clusters",
    "One row per (namespace, entry_id) in a cluster of two or more near-duplicates.",
    (
        NS,
        C("cluster_id", "VARCHAR", "Cluster id (from the earliest-written member).", False),
        C("entry_id", "VARCHAR", "A member.", False),
        C("member_count", "BIGINT", "Members in the cluster.", False),
        C("mean_similarity", "DOUBLE", "Mean similarity of this member to the others (0 where no edge).", False),
        C("first_written_at", "TIMESTAMP", "When this member was first written.", False),
        ENTRY_HASH,
    ),
    key=("namespace", "entry_id"),
))

PRINCIPLE_PROPOSALS = register(Table(
    "core", "principle_proposals",
    "One row per cluster of at least min_principle_members entries: the proposed principle and its status.",
    (
        NS,
        C("cluster_id", "VARCHAR", "The cluster.", False),
        C("principle_id", "VARCHAR", "Entry id the principle takes when approved.", False),
        C("canonical_entry_id", "VARCHAR", "Member whose text the principle uses.", False),
        C("text", "VARCHAR", "The principle text.", False),
        C("generality", "DOUBLE", "Above its members': min(3, max member generality + 0.5).", False),
        C("member_count", "BIGINT", "Members.", False),
        C("members", "VARCHAR[]", "Member entry ids.", False),
        C("distinct_runs", "BIGINT", "Distinct runs that wrote a member.", False),
        C("distinct_agents", "BIGINT", "Distinct agents that wrote a member.", False),
        C("proven_count", "BIGINT", "Passing checks over all members.", False),
        C("recall_count", "BIGINT", "Recalls over all members.", False),
        C("last_recalled_at", "TIMESTAMP", "Latest recall of any member."),
        C("status", "VARCHAR", "proposed, approved, rejected or unmerged (latest curator decision).", False),
        C("decided_by", "VARCHAR", "Curator of the latest decision."),
        C("decided_at", "TIMESTAMP", "Time of the latest decision."),
        C("decision_reason", "VARCHAR", "Reason of the latest decision."),
        C("better_canonical_id", "VARCHAR", "A member more general than the principle, if one arrived (re-approve to switch)."),
        C("open_conflicts", "BIGINT", "Open contradictions between members: approval is refused while > 0.", False),
    ),
    key=("namespace", "cluster_id"),
))

ENTRY_IMPORTANCE = register(Table(
    "core", "entry_importance",
    "One row per (namespace, entry_id): declared importance and the redundancy penalty applied to it.",
    with_row_hash((
        NS, C("entry_id", "VARCHAR", "The entry.", False),
        C("declared_importance", "DOUBLE", "Declared importance (missing means 1.0).", False),
        C("later_similar_writes", "BIGINT", "Compatible near-duplicates written after it.", False),
        C("penalty_factor", "DOUBLE", "Product of the per-occurrence penalties (1 = none).", False),
        C("importance", "DOUBLE", "declared_importance x penalty_factor.", False),
        ENTRY_HASH,
    )),
    key=("namespace", "entry_id"),
))

_PAIR_SCHEMA = {"namespace": pl.String, "entry_a": pl.String, "entry_b": pl.String,
                "similarity": pl.Float64, "method": pl.String}


def near_duplicate_pairs(entries: pl.DataFrame, cfg: CurationConfig) -> pl.DataFrame:
    """Verified pairs from (namespace, entry_id, norm_text, first_written_at); never across namespaces.

    Namespaces are taken in passes of whole namespaces holding about ``near_duplicate_chunk_entries``
    entries, so memory follows the pass, not the store; pairs never cross a namespace, so the passes
    give the same table as one pass (tested)."""
    return near_duplicate_pairs_and_keys(entries, cfg)[0]


def ordered_docs(entries: pl.DataFrame, first: int = 0) -> pl.DataFrame:
    """Entries numbered in write order within each namespace: a pair's ``a`` is its older entry. Numbered
    from ``first``: the entries of a pass of whole namespaces start after those of the passes before it."""
    if "tags" not in entries.columns:
        entries = entries.with_columns(pl.lit([], dtype=pl.List(pl.String)).alias("tags"))
    return (entries.sort("namespace", "first_written_at", "entry_id").with_row_index("doc", offset=first)
            .with_columns(pl.col("doc").cast(pl.Int64)))


def near_duplicate_pairs_and_keys(entries: pl.DataFrame, cfg: CurationConfig) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The pairs, and each entry's keys (set_key, LSH band keys) for the next night to reuse."""
    return pairs_and_keys_of_docs(ordered_docs(entries), cfg)


def pairs_and_keys_of_docs(ordered: pl.DataFrame, cfg: CurationConfig,
                           keys_of_pass: Callable[[pl.DataFrame, pl.DataFrame], None] | None = None,
                           ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """near_duplicate_pairs_and_keys of entries already numbered by ``ordered_docs``: a caller that
    numbers them and keeps no other copy holds the texts once while the passes run. With ``keys_of_pass``,
    each pass's keys are handed to it with the pass's docs as the pass ends, and none are returned: a caller
    that stores them holds one pass's keys, not every entry's (band keys alone are 256 bytes an entry)."""
    if ordered.height < 2:
        return pl.DataFrame(schema=_PAIR_SCHEMA), pl.DataFrame(schema=_KEY_SCHEMA)
    return pairs_and_keys_of_passes(namespace_passes(ordered, cfg.near_duplicate_chunk_entries), cfg, keys_of_pass)


def pairs_and_keys_of_passes(passes: Iterable[pl.DataFrame], cfg: CurationConfig,
                             keys_of_pass: Callable[[pl.DataFrame, pl.DataFrame], None] | None = None,
                             ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """pairs_and_keys_of_docs of the passes ``namespace_passes`` makes of entries numbered by
    ``ordered_docs``, handed over one at a time (a caller that reads each pass when its turn comes
    holds the texts of one pass)."""
    pairs, keys = [], []
    for docs in passes:
        found, known = _pairs_of(docs, cfg)
        pairs.append(found)
        if keys_of_pass is None:
            keys.append(known)
        else:
            keys_of_pass(docs, known)
    kept = pl.concat(keys) if keys else pl.DataFrame(schema=_KEY_SCHEMA)
    return pl.concat(pairs).sort("a", "b").select(list(_PAIR_SCHEMA)), kept


_KEY_SCHEMA = {"namespace": pl.String, "entry_id": pl.String, "set_key": pl.UInt64,
               "band_keys": pl.List(pl.UInt64)}


def with_text_keys(docs: pl.DataFrame, cfg: CurationConfig) -> tuple[pl.DataFrame, pl.Series]:
    """Shingles (as codes) and the shingle-set key (same set = exact copy) of each entry, and the
    vocabulary the codes index (codes compare within one call only)."""
    shingles = text.shingle_codes(docs["norm_text"], cfg.shingle_words, cfg.shingle_drop_stopwords)
    return docs.with_columns(shingles.lists, pl.Series("set_key", set_keys(shingles))), shingles.vocabulary


def set_keys(shingles: text.ShingleCodes, use_compiled: bool | None = None) -> np.ndarray:
    """An order-free hash of each set: the (wrapping) sum of its distinct shingles' polars hashes, each
    shingle hashed once."""
    hashes = shingles.vocabulary.hash().to_numpy()
    if text.compiled(len(shingles.rows) - 1, use_compiled):  # 0.12 -> 0.01 s on 200k texts of 60 words
        kernels = text.compiled_loops()
        keys = np.empty(len(shingles.rows) - 1, dtype=np.uint64)
        kernels.row_sums(hashes, shingles.codes, shingles.rows, keys)
        return keys
    sums = np.concatenate([np.zeros(1, dtype=np.uint64), np.cumsum(hashes[shingles.codes], dtype=np.uint64)])
    return sums[shingles.rows[1:]] - sums[shingles.rows[:-1]]


def compatible(pairs: pl.DataFrame, docs: pl.DataFrame) -> pl.DataFrame:
    """Drop pairs whose tags (the writers' subject keys) are disjoint, or whose specific tokens are.

    Entries about disjoint subjects are never duplicates, and notes naming only different
    identifiers or numbers are different events or facts. ``docs``: doc, tags and norm_text; the specific
    tokens are read from the texts of paired docs only (a regex over every text cost ~2 s at 1M)."""
    paired = pl.concat([pairs["a"], pairs["b"]]).unique().to_frame("doc")
    keys = docs.select("doc", "tags", "norm_text").join(paired, on="doc").select("doc", "tags", SPECIFICS)
    return (pairs.join(keys.rename({"doc": "a", "tags": "ta", "specifics": "sa"}), on="a")
            .join(keys.rename({"doc": "b", "tags": "tb", "specifics": "sb"}), on="b")
            .filter((pl.col("ta").list.len() == 0) | (pl.col("tb").list.len() == 0)
                    | (pl.col("ta").list.set_intersection("tb").list.len() > 0))
            .filter((pl.col("sa").list.len() == 0) | (pl.col("sb").list.len() == 0)
                    | (pl.col("sa").list.set_intersection("sb").list.len() > 0))
            .drop("ta", "tb", "sa", "sb"))


def with_entry_ids(pairs: pl.DataFrame, docs: pl.DataFrame) -> pl.DataFrame:
    ids = docs.select("doc", "namespace", "entry_id")
    out = (pairs.join(ids.rename({"doc": "a", "entry_id": "entry_a"}), on="a")
           .join(ids.rename({"doc": "b", "entry_id": "entry_b", "namespace": "ns_b"}), on="b"))
    assert (out["namespace"] == out["ns_b"]).all(), "a near-duplicate pair crossed namespaces"
    return out.select("a", "b", *_PAIR_SCHEMA)


def exact_copy_pairs(docs: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Pairs of exact copies (same shingle set in the same namespace), and the copy groups."""
    groups = docs.group_by("namespace", "set_key").agg(pl.col("doc").sort().alias("copies"))
    return _exact_pairs(groups), groups


def _pairs_of(docs: pl.DataFrame, cfg: CurationConfig) -> tuple[pl.DataFrame, pl.DataFrame]:
    docs, vocabulary = with_text_keys(docs, cfg)
    exact, groups = exact_copy_pairs(docs)
    reps = docs.select("doc", "namespace", "shingles", "set_key").join(  # (the texts stay behind)
        groups.with_columns(pl.col("copies").list.first().alias("doc")).select("doc", "copies"), on="doc")
    reps = reps.filter(pl.col("shingles").list.len() > 0)
    near, rep_keys = _minhash_pairs(reps, vocabulary, cfg)
    pairs = compatible(pl.concat([exact, near]).unique(["a", "b"], keep="first"), docs)
    # every copy carries its representative's band keys (same shingle set, same signature)
    keys = (docs.select("doc", "namespace", "entry_id", "set_key")
            .join(reps.select("namespace", "set_key", "doc").join(rep_keys, on="doc").drop("doc"),
                  on=["namespace", "set_key"], how="left")
            .select(list(_KEY_SCHEMA)))
    return with_entry_ids(pairs, docs), keys


def _exact_pairs(groups: pl.DataFrame) -> pl.DataFrame:
    multi = groups.filter(pl.col("copies").list.len() > 1)
    if multi.height == 0:
        return pl.DataFrame(schema={"a": pl.Int64, "b": pl.Int64, "similarity": pl.Float64, "method": pl.String})
    small = multi.filter(pl.col("copies").list.len() <= EXACT_GROUP_PAIR_CAP).with_row_index("g")
    members = small.explode("copies").select("g", pl.col("copies").cast(pl.Int64).alias("doc"))
    full = (members.join(members, on="g", suffix="_b").filter(pl.col("doc") < pl.col("doc_b"))
            .select(pl.col("doc").alias("a"), pl.col("doc_b").alias("b")))
    big = multi.filter(pl.col("copies").list.len() > EXACT_GROUP_PAIR_CAP)
    star = (big.select(pl.col("copies").list.first().cast(pl.Int64).alias("a"),
                       pl.col("copies").list.slice(1).alias("b")).explode("b").with_columns(pl.col("b").cast(pl.Int64)))
    return pl.concat([full, star]).with_columns(pl.lit(1.0).alias("similarity"), pl.lit("exact").alias("method"))


def _minhash_pairs(reps: pl.DataFrame, vocabulary: pl.Series, cfg: CurationConfig) -> tuple[pl.DataFrame, pl.DataFrame]:
    empty = pl.DataFrame(schema={"a": pl.Int64, "b": pl.Int64, "similarity": pl.Float64, "method": pl.String})
    tokens = minhash.token_rows(reps["shingles"], vocabulary)
    keys = band_keys_of(tokens, cfg)
    rep_keys = pl.DataFrame({"doc": reps["doc"], "band_keys": stored_band_keys(reps["namespace"], keys)}).with_columns(
        pl.col("band_keys").cast(pl.List(pl.UInt64)))
    if reps.height < 2:
        return empty, rep_keys
    group = reps["namespace"].rank("dense").to_numpy()
    cand = minhash.lsh_candidates(keys, group)
    if cand.height == 0:
        return empty, rep_keys
    doc_of = reps["doc"].cast(pl.Int64).to_numpy()
    cand = pl.DataFrame({"a": doc_of[cand["a"].to_numpy()], "b": doc_of[cand["b"].to_numpy()]})
    verified = verify(cand, reps.select(pl.col("doc").cast(pl.Int64), "shingles"), tokens)
    verified = verified.filter(pl.col("similarity") >= cfg.near_duplicate_threshold)
    # every copy of a representative is as similar to the other side as the representative is
    copies = reps.select(pl.col("doc").cast(pl.Int64), pl.col("copies").cast(pl.List(pl.Int64)))
    expanded = (verified.join(copies.rename({"doc": "a", "copies": "ca"}), on="a")
                .join(copies.rename({"doc": "b", "copies": "cb"}), on="b")
                .explode("ca").explode("cb")
                .select(pl.min_horizontal("ca", "cb").alias("a"), pl.max_horizontal("ca", "cb").alias("b"), "similarity"))
    return expanded.with_columns(pl.lit("minhash").alias("method")), rep_keys


def band_keys_of(shingles: minhash.TokenRows, cfg: CurationConfig) -> np.ndarray:
    """(n, lsh_bands) uint64 LSH band keys of the MinHash signatures of non-empty shingle lists."""
    if len(shingles) == 0:
        return np.zeros((0, cfg.lsh_bands), dtype=np.uint64)
    return minhash.band_keys(minhash.signatures(shingles, cfg.minhash_permutations), cfg.lsh_bands)


def _salt(value: str) -> int:
    return int.from_bytes(hashlib.blake2b(value.encode(), digest_size=8).digest(), "little")


def stored_band_keys(namespaces: pl.Series, keys: np.ndarray) -> np.ndarray:
    """The band keys as the near-duplicate index stores them: each xor-ed with a salt of its namespace
    and one of its band, so that a key names one (namespace, band, signature band) and a night finds the
    stored entries sharing a band with a changed one by the key alone. (Unsalted, a common band key is
    shared by entries of many namespaces: at 1M entries, the keys of 10k entries matched 896k stored
    entries on the key alone and 30k once salted.)
    The salts are blake2b hashes, the same under any library version."""
    distinct = namespaces.unique()
    salts = pl.DataFrame({"namespace": distinct, "salt": pl.Series([_salt(ns) for ns in distinct], dtype=pl.UInt64)})
    by_row = namespaces.to_frame("namespace").join(salts, on="namespace", how="left", maintain_order="left")["salt"]
    bands = np.array([_salt(f"band {b}") for b in range(keys.shape[1])], dtype=np.uint64)
    return keys ^ by_row.to_numpy()[:, None] ^ bands[None, :]


def verify(pairs: pl.DataFrame, shingles: pl.DataFrame, tokens: minhash.TokenRows | None = None) -> pl.DataFrame:
    """Exact Jaccard of each candidate pair (a, b) from the docs' (distinct) shingle lists (strings, or codes
    of one numbering); pairs with a doc that has no shingles are dropped. ``tokens``: the non-empty lists
    as CSR rows, when the caller has them."""
    rows = shingles.filter(pl.col("shingles").list.len() > 0).with_row_index("row")
    pairs = (pairs.join(rows.select(pl.col("doc").alias("a"), pl.col("row").alias("ra")), on="a")
             .join(rows.select(pl.col("doc").alias("b"), pl.col("row").alias("rb")), on="b"))
    if tokens is None:  # only the codes are compared: any vocabulary will do
        tokens = minhash.token_rows(rows["shingles"], pl.Series([], dtype=pl.String))
    assert len(tokens) == rows.height, "the numbered lists are not the docs' non-empty shingle lists"
    similarity = minhash.jaccard_of_pairs(tokens.codes, tokens.offsets, pairs["ra"].to_numpy(), pairs["rb"].to_numpy())
    return pairs.select("a", "b").with_columns(pl.Series("similarity", similarity, dtype=pl.Float64))


def clusters(entries: pl.DataFrame, pairs: pl.DataFrame) -> pl.DataFrame:
    """Connected components (size >= 2) of the verified pairs, one row per member."""
    schema = {"namespace": pl.String, "cluster_id": pl.String, "entry_id": pl.String, "member_count": pl.Int64,
              "mean_similarity": pl.Float64, "first_written_at": pl.Datetime("us")}
    if pairs.height == 0:
        return pl.DataFrame(schema=schema)
    nodes = (entries.select("namespace", "entry_id", "first_written_at")
             .sort("namespace", "first_written_at", "entry_id").with_row_index("node"))
    edges = (pairs.join(nodes.select("namespace", pl.col("entry_id").alias("entry_a"), pl.col("node").alias("i")),
                        on=["namespace", "entry_a"])
             .join(nodes.select("namespace", pl.col("entry_id").alias("entry_b"), pl.col("node").alias("j")),
                   on=["namespace", "entry_b"]))
    n = nodes.height
    graph = coo_matrix((np.ones(edges.height), (edges["i"].to_numpy(), edges["j"].to_numpy())), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    nodes = nodes.with_columns(pl.Series("component", labels, dtype=pl.Int64))
    sizes = nodes.group_by("component").agg(pl.len().alias("member_count"),
                                            pl.col("node").min().alias("first_node"))
    sizes = sizes.filter(pl.col("member_count") > 1)
    # the id hashes the cluster's first entry: once per cluster, not once per member
    ids = (sizes.select("first_node")
           .join(nodes.select(pl.col("node").alias("first_node"), "namespace", "entry_id"), on="first_node")
           .select("first_node", ("c_" + pl.concat_str(["namespace", "entry_id"], separator="\x1f")
                                  .map_elements(lambda s: hashlib.sha256(s.encode()).hexdigest()[:16],
                                                return_dtype=pl.String)).alias("cluster_id")))
    members = nodes.join(sizes, on="component").join(ids, on="first_node")
    sims = pl.concat([edges.select(pl.col("i").alias("node"), "similarity"),
                      edges.select(pl.col("j").alias("node"), "similarity")]).group_by("node").agg(
        pl.col("similarity").sort().sum().alias("sim_sum"))  # summed in one order: identical on any split
    members = members.join(sims, on="node", how="left").with_columns(
        (pl.col("sim_sum").fill_null(0) / (pl.col("member_count") - 1)).alias("mean_similarity"))
    return members.sort("namespace", "cluster_id", "first_written_at", "entry_id").select(list(schema))


# The edges clusters are built from: verified pairs that are not contradictions (a pair the judge flags
# is not a restatement): those among ``pairs`` (core.near_duplicate_pairs, or a parenthesised query of its
# rows), and all of them.
EDGES_OF = """select p.namespace, p.entry_a, p.entry_b, p.similarity from {pairs} as p
           anti join core.contradictions as k
             on k.namespace = p.namespace and least(k.entry_a, k.entry_b) = least(p.entry_a, p.entry_b)
            and greatest(k.entry_a, k.entry_b) = greatest(p.entry_a, p.entry_b)"""
EDGES = EDGES_OF.format(pairs="core.near_duplicate_pairs")

CLUSTER_EDGES = register(Table(
    "core", "cluster_edges",
    "One row per edge core.near_duplicate_clusters was built from (a near-duplicate pair that is not a "
    "contradiction): the next night re-clusters only the components whose edges or members changed.",
    (
        NS,
        C("entry_a", "VARCHAR", "The older entry.", False),
        C("entry_b", "VARCHAR", "The newer entry.", False),
        C("similarity", "DOUBLE", "The pair's similarity.", False),
    ),
    key=("namespace", "entry_a", "entry_b"),
))

# Entries a night re-clusters: the ends of every edge added, removed or re-scored since the stored
# clusters were built, and every stored member whose first write moved or that is gone.
_CHANGED_NODES = """
with diff as (select * from edges_added union all select * from edges_removed)
select namespace, entry_a as entry_id from diff
union
select namespace, entry_b from diff
union
select c.namespace, c.entry_id from clusters_then as c
left join entries_now as e using (namespace, entry_id)
where e.first_written_at is distinct from c.first_written_at
"""

# What the clusters are derived from (kept by recording their changes: changes.input_changes).
CLUSTER_INPUTS = ["core.near_duplicate_pairs", "core.contradictions", "core.entries"]

# The changed entries with every member of their stored clusters. No edge leaves this set: an edge
# from it to an entry outside is unchanged (else both ends would be changed), so it was there before
# and joined that entry to the same stored cluster, whose members are all in the set. So the
# components of these entries are found from their own edges, and every other cluster stays as it is.
_AFFECTED = """
select namespace, entry_id from changed_nodes
union
select c.namespace, c.entry_id from core.near_duplicate_clusters as c
semi join (select namespace, cluster_id from core.near_duplicate_clusters
           semi join changed_nodes using (namespace, entry_id)) as k using (namespace, cluster_id)
"""


def _clusters_version() -> str:
    return code_version("near_duplicate_clusters", inspect.getsource(clusters), EDGES,
                        NEAR_DUPLICATE_CLUSTERS.ddl(), CLUSTER_EDGES.ddl(), duckdb.__version__)


def build_near_duplicate_clusters(conn: duckdb.DuckDBPyConnection, as_of: datetime, cfg: CurationConfig) -> int:
    """Connected components of the compatible pairs; the cluster id follows its earliest member.

    The edges are kept (core.cluster_edges, its comment the code's version): a night re-clusters only
    the components that hold an entry whose edges or first write changed, and keeps the other rows.
    Without stored edges of this version it clusters everything. Both give the same table (tested)."""
    version = _clusters_version()
    ensure_table(conn, CLUSTER_EDGES)
    ensure_table(conn, NEAR_DUPLICATE_CLUSTERS)
    # both carry the version: clusters derived elsewhere (a table replaced by hand, an older night's
    # code) are never taken for the stored edges' clusters
    stored = conn.execute("select count(*) = 2 from duckdb_tables() where schema_name = 'core' and comment = $v "
                          "and table_name in ('cluster_edges', 'near_duplicate_clusters')", {"v": version}).fetchone()[0]
    # the edges of the entries whose pairs, contradictions or first write the inputs' last refreshes
    # changed, when the clusters were derived from the refreshes before them (an edge of two other
    # entries is the same as then); every edge otherwise
    inputs, before, last = changes.input_changes(conn, NEAR_DUPLICATE_CLUSTERS.qualified, version, CLUSTER_INPUTS,
                                                 as_of)
    scoped = stored and before is not None
    # (the pairs narrowed before the contradictions are joined: the other way round, every pair was joined
    # on a night with nothing to do, 0.06 s at 1M entries against 0.03 s)
    pairs = f"({_touching('core.near_duplicate_pairs', scoped)})"
    conn.execute(f"create or replace temp table edges_now as {EDGES_OF.format(pairs=pairs)}")
    conn.execute(f"create or replace temp table edges_then as {_touching('core.cluster_edges', scoped)}")
    changed = changes.OF_CHANGED_ENTRIES if scoped else ""
    conn.execute(f"create or replace temp view clusters_then as select * from core.near_duplicate_clusters {changed}")
    # the changed entries read by their hashes (by key, every entry's strings were read: 27 ms of scan in a
    # 1 %-churn night at 1M entries, and as much for the affected entries' first writes below)
    changed_entries = entry_rows("core.entries", "select * from input_changes", ENTRY_TIMES)
    entries_now = f"({changed_entries})" if scoped else "core.entries"
    conn.execute(f"create or replace temp view entries_now as select {ENTRY_TIMES} from {entries_now}")
    try:
        with transaction(conn):
            if stored:
                _recluster_changed(conn)
                changes.record(conn, NEAR_DUPLICATE_CLUSTERS.qualified, version, as_of, inputs,
                               "select * from affected_nodes", last)
            else:
                _cluster_all(conn)
                set_version(conn, CLUSTER_EDGES, version)
                set_version(conn, NEAR_DUPLICATE_CLUSTERS, version)
                changes.record(conn, NEAR_DUPLICATE_CLUSTERS.qualified, version, as_of, inputs, None, last)
    finally:
        for view in ("clusters_then", "entries_now"):
            conn.execute(f"drop view if exists {view}")
        for temp in ("edges_now", "edges_then", "edges_added", "edges_removed", "changed_nodes", "affected_nodes",
                     "input_changes"):
            conn.execute(f"drop table if exists {temp}")
    return conn.execute("select count(*) from core.near_duplicate_clusters").fetchone()[0]


def _cluster_all(conn: duckdb.DuckDBPyConnection) -> None:
    entries = conn.execute("select namespace, entry_id, first_written_at from core.entries").pl()
    found = clusters(entries, conn.execute("select * from edges_now").pl())
    replace_table_from_frame(conn, NEAR_DUPLICATE_CLUSTERS, found, "select * from frame", own_transaction=False)
    replace_table(conn, CLUSTER_EDGES, "select * from edges_now", own_transaction=False)


def _touching(edges: str, scoped: bool) -> str:
    """The rows of ``edges`` (a table or a parenthesised query of pairs or edges) with an end in input_changes,
    or all.
    (The inputs record both ends of a changed pair, so either end would do today; both are read.)"""
    if not scoped:
        return f"select * from {edges}"
    return " union ".join(f"select g.* from {edges} as g semi join input_changes as i "
                          f"on i.namespace = g.namespace and i.entry_id = g.{end}" for end in ("entry_a", "entry_b"))


ENTRY_TIMES = "namespace, entry_id, first_written_at"  # what the clusters read of an entry


def _recluster_changed(conn: duckdb.DuckDBPyConnection) -> None:
    # the edges added, removed or re-scored since the stored clusters: read once, for the changed
    # entries and to bring the stored edges up to date
    conn.execute("create temp table edges_added as select * from edges_now except select * from edges_then")
    conn.execute("create temp table edges_removed as select * from edges_then except select * from edges_now")
    conn.execute(f"create temp table changed_nodes as {_CHANGED_NODES}")
    conn.execute(f"create temp table affected_nodes as {_AFFECTED}")
    entries = conn.execute(entry_rows("core.entries", "select * from affected_nodes", ENTRY_TIMES)).pl()
    # the stored edges brought up to date are this night's; an edge with one end in the set has the other there too
    conn.execute("delete from core.cluster_edges as g where exists (select 1 from edges_removed as r "
                 "where r.namespace = g.namespace and r.entry_a = g.entry_a and r.entry_b = g.entry_b "
                 "and r.similarity = g.similarity)")
    conn.execute("insert into core.cluster_edges select * from edges_added")
    edges = conn.execute("select * from core.cluster_edges as g semi join affected_nodes as n "
                         "on n.namespace = g.namespace and n.entry_id = g.entry_a").pl()
    found = clusters(entries, edges)
    conn.execute("delete from core.near_duplicate_clusters as c where exists (select 1 from affected_nodes as n "
                 "where n.namespace = c.namespace and n.entry_id = c.entry_id)")
    with registered(conn, frame=found):
        conn.execute(f"insert into core.near_duplicate_clusters select {NEAR_DUPLICATE_CLUSTERS.select_list('q')} "
                     "from frame as q")


def build_principle_proposals(conn: duckdb.DuckDBPyConnection, as_of: datetime, cfg: CurationConfig) -> int:
    """One proposal per cluster of at least min_principle_members, with the curator's latest decision."""
    query = sql.load("principle_proposals")
    scope = sql.load("principle_proposals_scope")
    params = {"as_of": as_of, "min_members": cfg.min_principle_members}
    version = code_version("principle_proposals", query, scope, PRINCIPLE_PROPOSALS.ddl(), duckdb.__version__,
                           str(cfg.min_principle_members))
    return changes.refresh_entries(
        conn, PRINCIPLE_PROPOSALS, query, params, version,
        ["core.near_duplicate_clusters", "core.entry_generality", "core.entry_usage", "core.entries",
         "core.memory_writes", "core.contradictions"],
        scope=scope, key=("namespace", "cluster_id"),
        hashes="select entry_hash from core.near_duplicate_clusters semi join stage_scope using (namespace, cluster_id)",
        entries="select namespace, unnest(members) as entry_id from changed_rows "
                "union all select namespace, principle_id from changed_rows "
                "union all select namespace, cluster_id from changed_rows")  # the audit log's entity


def build_entry_importance(conn: duckdb.DuckDBPyConnection, as_of: datetime, cfg: CurationConfig) -> int:
    """Declared importance times the redundancy penalty of each compatible similar later write."""
    query = sql.load("entry_importance")
    params = {"as_of": as_of, "penalty": cfg.redundancy_penalty, "threshold": cfg.near_duplicate_threshold}
    version = code_version("entry_importance", query, ENTRY_IMPORTANCE.ddl(), duckdb.__version__,
                           json.dumps({k: v for k, v in params.items() if k != "as_of"}))
    return changes.refresh_entries(conn, ENTRY_IMPORTANCE, query, params, version,
                                   ["core.entries", NEAR_DUPLICATE_PAIRS.qualified, "core.contradictions"])
