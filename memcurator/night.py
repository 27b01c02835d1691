"""The nightly derivation without Dagster: the same builders, in the graph's order.

Used by the evaluation harness, the benchmark and tests; a graph test asserts that the Dagster
job and this function give identical tables.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Callable

import duckdb

from memcurator import audit, clustering, contradictions, entries, health_history, ingest, lifecycle, nearindex, ranking
from memcurator.config import CurationConfig

# (table, builder) in dependency order; each builder is build(conn, as_of, cfg).
STEPS: list[tuple[str, Callable]] = [
    ("core.memory_writes", entries.build_memory_writes),
    ("core.entries", entries.build_entries),
    ("core.recall_results", entries.build_recall_results),
    ("core.checks", entries.build_checks),
    ("core.runs", entries.build_runs),
    ("core.entry_usage", entries.build_entry_usage),
    ("core.supersede_links", contradictions.build_supersede_links),
    ("core.entry_generality", lifecycle.build_entry_generality),
    ("core.near_duplicate_pairs", nearindex.build_near_duplicate_pairs),
    ("core.contradictions", contradictions.build_contradictions),
    ("core.near_duplicate_clusters", clustering.build_near_duplicate_clusters),
    ("core.principle_proposals", clustering.build_principle_proposals),
    ("core.entry_importance", clustering.build_entry_importance),
    ("core.agent_trust", lifecycle.build_agent_trust),
    ("core.entry_lifecycle", lifecycle.build_entry_lifecycle),
    ("core.contested_entries", contradictions.build_contested_entries),
    ("core.supersede_suggestions", contradictions.build_supersede_suggestions),
    ("core.entry_scores", ranking.build_entry_scores),
    ("mart.recall_view", ranking.build_recall_view),
    ("core.curation_audit_log", audit.build_audit_log),
    ("mart.store_health", health_history.build_store_health),
]


# Tables a step writes beside its own, to reuse its work the next night: the hash of each entry's
# writes (core.entries), the rules' reading of each text (core.entry_generality), the near-duplicate
# index, the judge's candidates and verdicts (core.contradictions), the edges the clusters were built
# from. They carry no as_of: what they hold stands across nights, and stamping every row each night cost
# about half a second of a 1 %-churn night at 1M (store.ensure_cache drops one stored with other columns).
SIDE_TABLES = ["core.entry_sources", "core.entry_text_features", "core.near_duplicate_index", "core.entry_subjects",
               "core.contradiction_candidates", "core.judged_pairs", "core.cluster_edges"]

# What a night reads back of the night before to reuse its work (everything else is derived again).
CARRIED_TABLES = ["core.memory_writes", "core.entries", "core.entry_sources", "core.entry_text_features",
                  "core.near_duplicate_index", "core.near_duplicate_pairs", "core.judged_pairs",
                  "core.near_duplicate_clusters", "core.cluster_edges"]


def derive_night(conn: duckdb.DuckDBPyConnection, as_of: datetime, cfg: CurationConfig = CurationConfig(),
                 on_step: Callable[[str], None] | None = None) -> None:
    for name, build in STEPS:
        build(conn, as_of, cfg)
        if on_step:
            on_step(name)


def ingest_and_derive(conn: duckdb.DuckDBPyConnection, landing: Path, as_of: datetime,
                      cfg: CurationConfig = CurationConfig(), lake: Path | None = None) -> ingest.IngestReport:
    report = ingest.ingest_landing(conn, landing, lake, cfg)
    derive_night(conn, as_of, cfg)
    return report
