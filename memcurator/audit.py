"""The curation audit log: one row per decision in force as of the night.

Each force contributes one SQL part (memcurator/sql/audit/*.sql) selecting its decisions in the
common shape; the log is their union, derived each night from the same inputs, so it always
agrees with the tables it explains. Most of its rows are principle proposals and redundancy
penalties: those are derived again only for the clusters and entries whose rows changed
(changes.refresh_entries), the other parts in whole (they quote the night's days; few rows).
"""

from __future__ import annotations

import json
from datetime import datetime

import duckdb

from memcurator import changes, sql
from memcurator.config import CurationConfig
from memcurator.lifecycle import lifecycle_params
from memcurator.store import code_version, params_used
from memcurator.tables import NS, C, Table, register

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
    ),
    key=("namespace", "entity_kind", "entity_id", "action"),
))

# Derived in whole each night: the lifecycle's decisions quote the days to the night (inputs, score,
# reason), the conflicts carry its date, the links are few.
NIGHTLY_PARTS = ["lifecycle", "supersede_links", "contradictions"]
# Derived again by entity: principle proposals (by cluster) and redundancy penalties (by entry).
KEPT_PART = "clustering"
# The rows of the kept part dated by the night, set to it for every row once the changed ones are written.
DATED = ("update core.curation_audit_log set decided_at = $as_of "
         "where action in ('propose_principle', 'penalise_redundancy')")
# The entities derived again: what the inputs changed (proposals record their cluster ids) and every
# entity of the nightly parts, tonight's and stored.
SCOPE = """select namespace, entry_id from input_changes
union all select namespace, entity_id from audit_nightly
union all select namespace, entity_id from core.curation_audit_log
where entity_kind <> 'cluster' and action <> 'penalise_redundancy'"""


def build_audit_log(conn: duckdb.DuckDBPyConnection, as_of: datetime, cfg: CurationConfig) -> int:
    """The union of every force's decisions, with rule, inputs, score, threshold and reason."""
    params = {**lifecycle_params(cfg, as_of), "trust_guard_ratio": cfg.trust_guard_ratio,
              "min_members": cfg.min_principle_members, "threshold": cfg.near_duplicate_threshold}
    nightly = "\nunion all\n".join(f"select * from ({sql.load(f'audit/{p}')})" for p in NIGHTLY_PARTS)
    kept = sql.load(f"audit/{KEPT_PART}")
    query = (f"select * from (select * from audit_nightly union all select * from ({kept})) "
             "order by namespace, entity_kind, entity_id, action")
    version = code_version("curation_audit_log", nightly, kept, query, SCOPE, DATED, CURATION_AUDIT_LOG.ddl(),
                           duckdb.__version__, json.dumps({k: v for k, v in params.items() if k != "as_of"},
                                                          sort_keys=True, default=str))
    conn.execute(f"create or replace temp table audit_nightly as {nightly}", params_used(nightly, params))
    try:
        return changes.refresh_entries(conn, CURATION_AUDIT_LOG, query, params, version,
                                       ["core.entry_importance", "core.principle_proposals"], scope=SCOPE,
                                       after=[DATED], key=CURATION_AUDIT_LOG.key, scope_key=("namespace", "entity_id"),
                                       entries="select namespace, entity_id as entry_id from changed_rows")
    finally:
        conn.execute("drop table if exists audit_nightly")
