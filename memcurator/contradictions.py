"""Contradictions and supersession.

Rules (docs/curation.md):

1. An explicit supersede wins; being later wins nothing by itself. A link needs a reason
   (enforced at ingest) and must not form a cycle: every link inside a cycle is rejected.
2. Trust guard: an explicit supersede whose writer trust is below ``trust_guard_ratio`` x the
   existing entry's trust does not supersede it; it is kept as a conflict instead.
3. A failing assertion check that names the correcting entry writes the link itself (the actor
   that knows); no trust guard applies to it.
"""

from __future__ import annotations

from datetime import datetime

import duckdb
import numpy as np
import polars as pl
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from memcurator import sql
from memcurator.config import CurationConfig
from memcurator.store import replace_table
from memcurator.tables import AS_OF, NS, C, Table, register

SUPERSEDE_LINKS = register(Table(
    "core", "supersede_links",
    "One row per proposed supersede link (explicit write or correcting check) before as_of, with its verdict.",
    (
        NS,
        C("entry_id", "VARCHAR", "The entry to be replaced.", False),
        C("successor_id", "VARCHAR", "The entry that replaces it.", False),
        C("source", "VARCHAR", "explicit (a write's supersedes) or failed_check (a check's corrected_by).", False),
        C("reason", "VARCHAR", "The writer's or the check's reason.", False),
        C("linked_at", "TIMESTAMP", "When the link was written.", False),
        C("event_id", "VARCHAR", "The write or check event that proposed it.", False),
        C("entry_trust", "DOUBLE", "Trust of the entry to be replaced."),
        C("successor_trust", "DOUBLE", "Trust of the replacing write."),
        C("status", "VARCHAR", "accepted, trust_guarded, cycle_rejected or dangling (an entry is unknown).", False),
        C("detail", "VARCHAR", "Why the link got its status.", False),
        AS_OF,
    ),
    key=("namespace", "entry_id", "successor_id", "source"),
))


def cycle_members(links: pl.DataFrame) -> pl.DataFrame:
    """(namespace, entry_id) pairs that sit on a supersede cycle: strong components larger than one.

    Nodes are namespace-qualified, so a cycle can never be formed across namespaces.
    """
    if links.height == 0:
        return pl.DataFrame(schema={"namespace": pl.String, "entry_id": pl.String, "component": pl.Int64})
    nodes = pl.concat([
        links.select("namespace", "entry_id"),
        links.select("namespace", pl.col("successor_id").alias("entry_id")),
    ]).unique().sort("namespace", "entry_id").with_row_index("node")
    edges = (links.join(nodes, on=["namespace", "entry_id"])
             .join(nodes.rename({"entry_id": "successor_id", "node": "succ"}), on=["namespace", "successor_id"]))
    n = nodes.height
    graph = coo_matrix((np.ones(edges.height), (edges["node"].to_numpy(), edges["succ"].to_numpy())), shape=(n, n))
    _, labels = connected_components(graph, directed=True, connection="strong")
    nodes = nodes.with_columns(pl.Series("component", labels, dtype=pl.Int64))
    sizes = nodes.group_by("component").len()
    return nodes.join(sizes.filter(pl.col("len") > 1), on="component").select("namespace", "entry_id", "component")


def build_supersede_links(conn: duckdb.DuckDBPyConnection, as_of: datetime, cfg: CurationConfig) -> int:
    """Explicit and check-written supersede links, each accepted, trust-guarded, cycle-rejected or dangling."""
    candidates = conn.execute(sql.load("supersede_candidates")).pl()
    cycles = cycle_members(candidates.filter(pl.col("entry_exists") & pl.col("successor_exists")))
    conn.register("cycle_nodes", cycles.to_arrow())
    conn.register("link_candidates", candidates.to_arrow())
    try:
        return replace_table(conn, SUPERSEDE_LINKS, sql.load("supersede_links"),
                             {"as_of": as_of, "ratio": cfg.trust_guard_ratio})
    finally:
        conn.unregister("cycle_nodes")
        conn.unregister("link_candidates")
