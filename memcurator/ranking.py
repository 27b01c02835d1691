"""Ranking: the clock-injected curation score, and the recall view agents read.

score = generality x w_generality + min(proven, proven_cap) + recency boost (recent_boost if
recalled within recent_boost_days, warm_boost within warm_boost_days, else 0). Deterministic given
``as_of``; weights are configuration.
"""

from __future__ import annotations

from datetime import datetime

import duckdb

from memcurator import changes, sql
from memcurator.config import CurationConfig
from memcurator.store import code_version, create_view, replace_table, table_exists, transaction
from memcurator.tables import ENTRY_HASH, NS, C, Table, null_counts, register, with_row_hash

_SCORE_PARTS = (
    NS, C("entry_id", "VARCHAR", "The entry.", False),
    C("generality", "DOUBLE", "Effective generality 0-3.", False),
    C("proven_count", "BIGINT", "Passing checks.", False),
    C("proven_points", "BIGINT", "min(proven_count, proven_cap).", False),
)
ENTRY_SCORE_PARTS = register(Table(
    "core", "entry_score_parts",
    "One row per (namespace, entry_id) and per approved principle: the parts of its curation score the date "
    "does not move (core.entry_scores, a view, adds the night's recency boost).",
    with_row_hash(_SCORE_PARTS + (C("last_recalled_at", "TIMESTAMP", "Latest recall (a principle's: its members' "
                                                                      "latest)."), ENTRY_HASH)),
    key=("namespace", "entry_id"),
))

SCORE_SETTINGS = register(Table(
    "core", "score_settings",
    "One row: the night and the weights core.entry_scores (a view) applies.",
    (
        C("as_of", "TIMESTAMP", "The night: the recency boost counts days from it.", False),
        C("w_generality", "DOUBLE", "Weight of generality.", False),
        C("recent_boost_days", "DOUBLE", "A recall at most this many days old earns recent_boost.", False),
        C("recent_boost", "DOUBLE", "Boost of a recent recall.", False),
        C("warm_boost_days", "DOUBLE", "A recall at most this many days old earns warm_boost.", False),
        C("warm_boost", "DOUBLE", "Boost of a warm recall.", False),
    ),
))

ENTRY_SCORES = register(Table(
    "core", "entry_scores",
    "One row per (namespace, entry_id) and per approved principle as of the night: the curation score and its "
    "parts (a view: core.entry_score_parts with the recency boost of core.score_settings' night).",
    _SCORE_PARTS + (
        C("recency_boost", "DOUBLE", "Boost for recent use (recall), not for a recent note.", False),
        C("score", "DOUBLE", "generality x w_generality + proven_points + recency_boost.", False),
        ENTRY_HASH,
    ),
    key=("namespace", "entry_id"),
))

_RECALL_VIEW_COLUMNS = (
    NS, C("entry_id", "VARCHAR", "The entry.", False),
    C("tier", "VARCHAR", "active (the active set) or session (held and case material, ranked below).", False),
    C("rank", "BIGINT", "Rank within the namespace: tier, then score, then latest write.", False),
    C("score", "DOUBLE", "Curation score.", False),
    C("text", "VARCHAR", "The entry text.", False),
    C("class", "VARCHAR", "Entry class.", False),
    C("state", "VARCHAR", "Lifecycle state (active, reverify, held, case); approved principles are active.", False),
    C("banners", "VARCHAR[]", "What the reader must see above the entry: warnings, re-verify, conflicts.", False),
    C("has_failed_check", "BOOLEAN", "Latest non-transient check failed: shown as a warning.", False),
    C("conflict_with", "VARCHAR[]", "Entries it is in an open conflict with.", False),
    C("is_likely_current", "BOOLEAN", "False when another side of one of its conflicts is more likely current.", False),
    C("tags", "VARCHAR[]", "Subject keys.", False),
    C("generality", "DOUBLE", "Effective generality.", False),
    C("proven_count", "BIGINT", "Passing checks.", False),
    C("last_recalled_at", "TIMESTAMP", "Latest recall."),
    C("valid_from", "TIMESTAMP", "Validity start of the fact."),
    C("valid_until", "TIMESTAMP", "Validity end of the fact."),
    C("first_written_at", "TIMESTAMP", "First write.", False),
    C("last_written_at", "TIMESTAMP", "Latest write.", False),
    C("version_count", "BIGINT", "Writes of this entry id.", False),
    C("writer_agents", "VARCHAR[]", "Agents that wrote it.", False),
)
# The view's nulls, for its schema check, counted from what it reads: a stored column's in
# mart.recall_ranking, whose rows it reads once each; the text's as the rows with neither their entry nor
# an approved principle. The rank is counted through the view. (Every text read through the view: the
# check took 2.1-2.8 s on the 1M store after a 1 %-churn night; this way 0.9-1.0 s, the view numbering its
# rows before it joins the texts.)
_STORED_REQUIRED = [c.name for c in _RECALL_VIEW_COLUMNS
                    if not c.nullable and c.name not in ("text", "rank", "score")]
RECALL_VIEW_NULLS = f"""select * from ({null_counts("mart.recall_ranking", _STORED_REQUIRED)}),
(select count(*) as text from mart.recall_ranking as r
 anti join (select namespace, entry_id from core.entries where text is not null) as e using (namespace, entry_id)
 anti join (select namespace, principle_id as entry_id from core.principle_proposals
            where status = 'approved' and text is not null) as p using (namespace, entry_id)),
(select count(*) as score from mart.recall_ranking as r
 anti join (select namespace, entry_id from core.entry_scores where score is not null) as s
 using (namespace, entry_id))"""
RECALL_VIEW = register(Table(
    "mart", "recall_view",
    "One row per recallable (namespace, entry_id) as of the night, ranked, with banners and provenance "
    "(a view: mart.recall_ranking with each text read from its entry or approved principle).",
    _RECALL_VIEW_COLUMNS,
    key=("namespace", "entry_id"),
    nulls=RECALL_VIEW_NULLS,
))


# The texts are not copied into the ranked rows: writing a million texts again each night was half of
# this step (3.5 s of 6.3 s at 1M entries). Nor are the ranks: a new entry moves the rank of every entry
# below it, so a 1 %-churn night at 1M set again the ranks of most rows (0.3 s and their checkpoint).
# Nor are the scores: the recency boost moves with the day count, so each night rewrote the rows of the
# entries whose last recall turned 7 or 30 days old (about 23.5k at 1M) for their score alone.
# The night stores mart.recall_ranking; mart.recall_view is a view that reads each score from
# core.entry_scores and each text from its entry or approved principle, and numbers the rows of each
# namespace (a reader's filter on the namespace is applied before the numbering: one namespace of 800
# rows read in 4 ms on the 1M store, every rank of it in 0.18 s; with the scores joined, the lab's 1M store
# after its full night: a namespace of 112 rows 27 ms against 21, every rank 0.39 s against 0.31), with the
# columns in the declared order.
RECALL_RANKING = register(Table(
    "mart", "recall_ranking",
    "One row per row of mart.recall_view, as the night stores it: without the score, the text and the rank "
    "(the view adds them).",
    with_row_hash(tuple(c for c in RECALL_VIEW.columns if c.name not in ("text", "rank", "score")) + (ENTRY_HASH,)),
    key=RECALL_VIEW.key,
))

# tier, then score, then latest write, then entry id (unique within a namespace): the order recall reads in
RANK = ("row_number() over (partition by r.namespace order by case when r.tier = 'active' then 0 else 1 end, "
        "r.score desc, r.last_written_at desc, r.entry_id)")
# (an approved principle's id is its own, 'p_' and its cluster's hash; an entry may be of class principle).
# The rows are numbered before the texts are joined: numbered after, the window carried every text (the
# 1M store after a 1 %-churn night: every column of the view read in 1.1-1.5 s, numbered first 0.6-0.7 s;
# the ranks alone 0.48-0.63 -> 0.31-0.39 s; one namespace's rows 0.03-0.05 s either way)
_VIEW_COLUMNS = ", ".join("coalesce(p.text, e.text) as text" if c.name == "text" else f"r.{c.name}"
                          for c in RECALL_VIEW.columns)
RECALL_VIEW_QUERY = f"""select {_VIEW_COLUMNS}
from (select *, {RANK} as rank from (select r.*, s.score from mart.recall_ranking as r
                                     left join core.entry_scores as s using (namespace, entry_id)) as r) as r
left join core.principle_proposals as p
    on p.namespace = r.namespace and p.principle_id = r.entry_id and p.status = 'approved'
left join core.entries as e
    on e.namespace = r.namespace and e.entry_id = r.entry_id"""


SCORE_WEIGHTS = ("w_generality", "recent_boost_days", "recent_boost", "warm_boost_days", "warm_boost")


def build_entry_scores(conn: duckdb.DuckDBPyConnection, as_of: datetime, cfg: CurationConfig) -> int:
    """score = generality x w_generality + min(proven, proven_cap) + recency boost of use. The parts the
    date does not move are derived again only for the entries and principles whose inputs changed; the
    boost is applied by the view, from the night's settings. Stored with the score, the rows of the
    entries whose last recall turned recent_boost_days or warm_boost_days old were derived again each
    night for that alone (about 23.5k at 1M entries: the step 0.24 -> 0.14 s of a 1 %-churn night, lab)."""
    query = sql.load("entry_score_parts")
    params = {"as_of": as_of, "proven_cap": cfg.proven_cap}
    version = code_version("entry_score_parts", query, ENTRY_SCORE_PARTS.ddl(), duckdb.__version__,
                           str(cfg.proven_cap))
    count = changes.refresh_entries(conn, ENTRY_SCORE_PARTS, query, params, version,
                                    ["core.entry_lifecycle", "core.entry_usage", "core.principle_proposals"])
    with transaction(conn):
        columns = ", ".join(f"${k} as {k}" for k in ("as_of",) + SCORE_WEIGHTS)
        replace_table(conn, SCORE_SETTINGS, f"select {columns}",
                      {"as_of": as_of, **{k: getattr(cfg, k) for k in SCORE_WEIGHTS}}, own_transaction=False)
        if table_exists(conn, ENTRY_SCORES.schema, ENTRY_SCORES.name):  # a store from when the scores were stored
            changes.forget_table(conn, ENTRY_SCORES.qualified)
        create_scores_view(conn)
    return count


def create_scores_view(conn: duckdb.DuckDBPyConnection) -> None:
    """core.entry_scores over the stored parts and the night's settings."""
    create_view(conn, ENTRY_SCORES, sql.load("entry_scores"))


def build_recall_view(conn: duckdb.DuckDBPyConnection, as_of: datetime, cfg: CurationConfig | None = None) -> int:
    """The active set ranked by score, then held/case material; each row with its banners. Derived
    again only for the entries whose inputs changed and the other sides of their conflicts (the view
    numbers the rows of each namespace when it is read)."""
    query, scope = sql.load("recall_view"), sql.load("recall_view_scope")
    version = code_version("recall_view", query, scope, RECALL_RANKING.ddl(), RECALL_VIEW_QUERY, duckdb.__version__)
    count = changes.refresh_entries(conn, RECALL_RANKING, query, {"as_of": as_of}, version,
                                    ["core.entry_lifecycle", "core.entries", "core.entry_usage",
                                     "core.contradictions", "core.principle_proposals"],
                                    scope=scope)
    with transaction(conn):
        create_recall_view(conn)
    return count


def create_recall_view(conn: duckdb.DuckDBPyConnection) -> None:
    """mart.recall_view over the stored ranking."""
    create_view(conn, RECALL_VIEW, RECALL_VIEW_QUERY)
