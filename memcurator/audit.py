"""The curation audit log: one row per decision in force as of the night.

Each force contributes one SQL part (memcurator/sql/audit/*.sql) selecting its decisions in the
common shape; the log is their union, rebuilt each night from the same inputs, so it always
agrees with the tables it explains.
"""

from __future__ import annotations

from datetime import datetime

import duckdb

from memcurator import sql
from memcurator.config import CurationConfig
from memcurator.lifecycle import lifecycle_params
from memcurator.store import replace_table
from memcurator.tables import AS_OF, NS, C, Table, register

CURATION_AUDIT_LOG = register(Table(
    "core", "curation_audit_log",
    "One row per curation decision in force as of the night (entity, action, rule, inputs, score, reason).",
    (
        NS,
        C("entity_kind", "VARCHAR", "entry, supersede_link, cluster, conflict.", False),
        C("entity_id", "VARCHAR", "The entry, link, cluster or conflict.", False),
        C("action", "VARCHAR", "What was decided (archive, expire, hold, supersede, revive, ...).", False),
        C("rule", "VARCHAR", "The rule that decided it.", False),
        C("inputs", "VARCHAR", "The rule's inputs as JSON.", False),
        C("score", "DOUBLE", "The similarity or score compared with the threshold."),
        C("threshold", "DOUBLE", "The threshold it was compared with."),
        C("reason", "VARCHAR", "The reason, for people.", False),
        C("decided_at", "TIMESTAMP", "When the decision took effect.", False),
        C("reversible_by", "VARCHAR", "What input reverses it.", False),
        AS_OF,
    ),
    key=("namespace", "entity_kind", "entity_id", "action"),
))

PARTS = ["lifecycle", "supersede_links", "clustering", "contradictions"]


def build_audit_log(conn: duckdb.DuckDBPyConnection, as_of: datetime, cfg: CurationConfig,
                    parts: list[str] | None = None) -> int:
    """The union of every force's decisions, with rule, inputs, score, threshold and reason."""
    chosen = parts or PARTS
    union = "\nunion all\n".join(f"select * from ({sql.load(f'audit/{p}')})" for p in chosen)
    query = f"select *, $as_of as as_of from ({union}) order by namespace, entity_kind, entity_id, action"
    params = {**lifecycle_params(cfg, as_of), "trust_guard_ratio": cfg.trust_guard_ratio,
              "min_members": cfg.min_principle_members, "threshold": cfg.near_duplicate_threshold}
    used = {k: v for k, v in params.items() if f"${k}" in query}
    return replace_table(conn, CURATION_AUDIT_LOG, query, used)
