"""The curation audit log: one row per decision in force as of the night.

Each force contributes one SQL part (memcurator/sql/audit/*.sql) selecting its decisions in the
common shape; the log is their union, a view over the tables it explains, so it always agrees with
them and a night writes none of its rows. Stored, the union was derived again each night: its
lifecycle, link and conflict parts whole (they quote the days to the night) and the proposals and
penalties of the clusters and entries that changed, with the night set on every one of theirs
(on a 1M-entry store, 1.0 s of a full night and 0.3 s of a 1 %-churn night, with its checkpoint).
The knobs the parts quote and the night are one row, core.audit_settings, that the night writes.
"""

from __future__ import annotations

import json
from datetime import datetime

import duckdb

from memcurator import sql
from memcurator.config import CurationConfig
from memcurator.store import create_view, replace_table, transaction
from memcurator.tables import NS, C, Table, register

CURATION_AUDIT_LOG = register(Table(
    "core", "curation_audit_log",
    "One row per curation decision in force as of the night (entity, action, rule, inputs, score, reason): "
    "a view over the tables it explains.",
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

AUDIT_SETTINGS = register(Table(
    "core", "audit_settings",
    "One row: the night, the knobs core.curation_audit_log (a view) quotes, and every setting the night ran with.",
    (
        C("as_of", "TIMESTAMP", "The night.", False),
        C("min_generality", "DOUBLE", "Decay threshold.", False),
        C("noise_floor", "DOUBLE", "Importance under which old entries are retired.", False),
        C("operational_ttl_days", "DOUBLE", "Expiry of operational state.", False),
        C("max_idle_days", "DOUBLE", "Idle days before decay.", False),
        C("trust_review_threshold", "DOUBLE", "Trust under which an agent's entries are flagged.", False),
        C("trust_guard_ratio", "DOUBLE", "Least successor/entry trust ratio of an accepted link.", False),
        C("min_members", "BIGINT", "Least members of a cluster with a proposed principle.", False),
        C("threshold", "DOUBLE", "Near-duplicate Jaccard threshold.", False),
        C("settings", "VARCHAR", "Every curation setting the night ran with, as a JSON object (memcurator/config.py): "
                                 "what `memcurator rederive-check` derives the night again with.", False),
    ),
))

PARTS = ["lifecycle", "supersede_links", "contradictions", "clustering"]
SETTINGS = ("select $as_of as as_of, $min_generality as min_generality, $noise_floor as noise_floor, "
            "$operational_ttl_days as operational_ttl_days, $max_idle_days as max_idle_days, "
            "$trust_review_threshold as trust_review_threshold, $trust_guard_ratio as trust_guard_ratio, "
            "$min_members as min_members, $threshold as threshold, $settings as settings")


def audit_query() -> str:
    return "\nunion all\n".join(f"select * from ({sql.load(f'audit/{p}')})" for p in PARTS)


def build_audit_log(conn: duckdb.DuckDBPyConnection, as_of: datetime, cfg: CurationConfig) -> int:
    """The union of every force's decisions, with rule, inputs, score, threshold and reason: writes the
    night's settings and (re)creates the view. Returns 1, the settings row: the view's rows are read,
    not written (counting them would derive the union)."""
    params = {"as_of": as_of, "min_generality": cfg.min_generality, "noise_floor": cfg.noise_floor,
              "operational_ttl_days": cfg.operational_ttl_days, "max_idle_days": cfg.max_idle_days,
              "trust_review_threshold": cfg.trust_review_threshold, "trust_guard_ratio": cfg.trust_guard_ratio,
              "min_members": cfg.min_principle_members, "threshold": cfg.near_duplicate_threshold,
              "settings": json.dumps(cfg.recorded(), sort_keys=True)}
    with transaction(conn):
        replace_table(conn, AUDIT_SETTINGS, SETTINGS, params, own_transaction=False)
        create_audit_view(conn)
    return 1


def create_audit_view(conn: duckdb.DuckDBPyConnection) -> None:
    """core.curation_audit_log over the tables it explains."""
    create_view(conn, CURATION_AUDIT_LOG, audit_query())
