"""An entry's whole history, section by section, for `memcurator show`."""

from __future__ import annotations

import duckdb
import polars as pl

SECTIONS = [
    ("versions", "select ts, event_id, run_id, agent_id, class, trust, importance, generality, supersedes, "
                 "supersede_reason, text from core.memory_writes where namespace = $ns and entry_id = $id order by ts"),
    ("lifecycle", "select state, rule, reason, since, generality, generality_rule, admission_score, importance, "
                  "last_activity_at, revived_at, flagged_for_review, review_reason "
                  "from core.entry_lifecycle where namespace = $ns and entry_id = $id"),
    ("recall view", "select tier, rank, round(score, 2) as score, banners from mart.recall_view "
                    "where namespace = $ns and entry_id = $id"),
    ("recalls", "select ts, run_id, agent_id, rank, injected, query from core.recall_results "
                "where namespace = $ns and entry_id = $id order by ts"),
    ("checks", "select ts, status, error_class, actor, corrected_by from core.checks "
               "where namespace = $ns and entry_id = $id order by ts"),
    # every conflict of the entry, open ones first (the recall view's banners quote three and send here)
    ("conflicts", "select k.conflict_id, k.other_entry, k.status, k.kind, k.detector, k.evidence, k.likely_current, "
                  "k.resolution_reason, left(e.text, 80) as other_text "
                  "from (select *, case when entry_a = $id then entry_b else entry_a end as other_entry "
                  "      from core.contradictions where namespace = $ns and (entry_a = $id or entry_b = $id)) as k "
                  "left join core.entries as e on e.namespace = k.namespace and e.entry_id = k.other_entry "
                  "order by k.status <> 'open', k.conflict_id"),
    # the entry's near-duplicates (recall folds them into one hit) and what a curator decided on them
    ("near-duplicate cluster", "select c.cluster_id, c.member_count, round(c.mean_similarity, 3) as mean_similarity, "
                               "p.status as proposal, p.principle_id, p.decided_by, p.decision_reason "
                               "from core.near_duplicate_clusters as c left join core.principle_proposals as p "
                               "using (namespace, cluster_id) where c.namespace = $ns and c.entry_id = $id"),
    ("supersede links", "select entry_id, successor_id, source, status, detail, linked_at from core.supersede_links "
                        "where namespace = $ns and (entry_id = $id or successor_id = $id) order by linked_at"),
    ("decisions", "select action, rule, reason, decided_at, score, threshold, reversible_by from core.curation_audit_log "
                  "where namespace = $ns and (entity_id = $id or entity_id like $id || '->%' or entity_id like '%->' || $id) "
                  "order by decided_at"),
]


def entry_history(conn: duckdb.DuckDBPyConnection, namespace: str, entry_id: str) -> list[tuple[str, pl.DataFrame]]:
    existing = {r[0] for r in conn.execute(
        "select table_schema || '.' || table_name from information_schema.tables").fetchall()}
    out = []
    for title, query in SECTIONS:
        tables = {t for t in existing if t in query}
        if not tables:
            continue
        out.append((title, conn.execute(query, {"ns": namespace, "id": entry_id}).pl()))
    return out
