"""Store health history: one row per (namespace, night), kept across nights.

Each run replaces only its own night's rows (delete the slice, insert), so re-running a night is
idempotent and a backfill over daily partitions rebuilds the history from an existing log.
"""

from __future__ import annotations

from datetime import datetime

import duckdb

from memcurator import sql
from memcurator.config import CurationConfig
from memcurator.store import ensure_table
from memcurator.tables import AS_OF, NS, C, Table, register

STORE_HEALTH = register(Table(
    "mart", "store_health",
    "One row per (namespace, night): size, states, flow, duplicate and conflict rates, injected ages.",
    (
        C("night", "DATE", "The night (day D; events before D+1 00:00 UTC).", False),
        NS,
        C("entries", "BIGINT", "Entries written so far.", False),
        C("active", "BIGINT", "Active set (active, reverify).", False),
        C("archived", "BIGINT", "Archived entries.", False),
        C("superseded", "BIGINT", "Superseded entries.", False),
        C("expired", "BIGINT", "Expired entries.", False),
        C("compressed", "BIGINT", "Merged under a principle or restated word for word.", False),
        C("session_material", "BIGINT", "Held and case material.", False),
        C("contested", "BIGINT", "Entries in live conflicts.", False),
        C("writes_in", "BIGINT", "Writes during the night's day.", False),
        C("retired_tonight", "BIGINT", "Entries that left the recallable set during the day.", False),
        C("duplicate_rate", "DOUBLE", "Redundant share of the active set after curation.", False),
        C("contested_rate", "DOUBLE", "Contested entries per active entry.", False),
        C("under_noise_floor_share", "DOUBLE", "Share of entries whose importance is under the noise floor.", False),
        C("explicit_link_ratio", "DOUBLE", "Of the conflicting pairs found, the share with an explicit supersede link."),
        C("injections", "BIGINT", "Injections into prompts over the last 30 days."),
        C("injected_age_median_days", "DOUBLE", "Median age of injected entries when injected."),
        C("injected_age_p90_days", "DOUBLE", "90th percentile of that age."),
        C("injected_old_unverified_share", "DOUBLE", "Share of injections older than 90 days and not verified within 90 days."),
        C("secrets_redacted", "BIGINT", "Events whose credentials were redacted at ingest, so far.", False),
        AS_OF,
    ),
    key=("night", "namespace"),
))


def build_store_health(conn: duckdb.DuckDBPyConnection, as_of: datetime, cfg: CurationConfig) -> int:
    """Replaces this night's slice of the health history (earlier nights are kept)."""
    ensure_table(conn, STORE_HEALTH)
    conn.execute("BEGIN TRANSACTION")
    try:
        conn.execute("DELETE FROM mart.store_health WHERE as_of = $as_of", {"as_of": as_of})
        conn.execute(
            f"INSERT INTO mart.store_health SELECT {STORE_HEALTH.select_list('q')} FROM ({sql.load('store_health')}) q",
            {"as_of": as_of, "noise_floor": cfg.noise_floor})
        conn.execute("COMMIT")
    except Exception:
        conn.execute("ROLLBACK")
        raise
    return conn.execute("SELECT count(*) FROM mart.store_health WHERE as_of = $as_of", {"as_of": as_of}).fetchone()[0]
