"""Lifecycle: which entries are in the active set, and why (docs/curation.md).

Every state is derived from the log and ``as_of`` each night, so every transition is reversible by
the input that caused it (a new write revives, a passing check clears, a curator decision undoes),
and every non-active state carries its rule and reason into the audit log.
"""

from __future__ import annotations

import json
from datetime import datetime

import duckdb

from memcurator import changes, sql
from memcurator.config import CurationConfig
from memcurator.entries import memory_writes_version
from memcurator.store import code_version
from memcurator.tables import AS_OF, ENTRY_HASH, NS, C, Table, register, with_row_hash

# Admission heuristics, applied to the normalised (lower-cased, whitespace-folded) text.
LEAD_IN = r"^(lesson|note to self|important|learned today|remember|note|tip)\s*[:-]\s*"
DEICTIC = r"\b(today|tonight|this (morning|afternoon|evening|week|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|right now|at the moment|just now|yesterday|tomorrow)\b"
OPERATIONAL_STATE = r"\b(currently|pending jobs|in maintenance|is down|is up|queue (has|is)|canary is at|on-call .* this week)\b"
ONE_OFF = r"\b(run r?\d+|ticket #?\d+|request id \d+|invoice \d+|passed on the (second|third|\w+) retry|/tmp/\S+|/home/\S+)\b"
CHATTER = r"^(hi|hello|hey|thanks|thank you|ok|okay|sounds good|great|got it|bye)\b[.! ]*$"
IMPERATIVE = r"^(lesson: |note to self: |important: |remember to |learned today: )?(always|never|prefer|avoid|use|do not|don't|make sure|keep|check|validate|retry|pin|split|add|read|rotate|clear)\b"
SPECIFIC = r"(\b\d{3,}\b|\b\d{4}-\d{2}-\d{2}\b|/[\w.-]+/[\w./-]+|#\d+|\b[0-9a-f]{8,}\b|\b\d{1,2}:\d{2}\b)"
# How much of a text's start the patterns anchored there read (DuckDB's regular expressions otherwise
# scan the whole text: at 1M texts of 60 words, IMPERATIVE took 0.56 s over whole texts, 0.14 s so): more
# than the longest match and the character after it (a closing \b looks at it), in a normalised text,
# where a run of whitespace is one space (tests/unit/test_lifecycle.py checks both against the patterns).
IMPERATIVE_READS = 32
LEAD_IN_READS = 32
# Any of the markers found anywhere in a text: the texts without one (most) take this one pass instead of
# a pass of each (at 1M texts of 60 words: 0.95 s against 3.7-4.2 s); one with a marker takes both. A
# deictic after a lead-in is in the whole text too.
ANY_MARKER = "|".join(f"(?:{pattern})" for pattern in (DEICTIC, OPERATIONAL_STATE, ONE_OFF, SPECIFIC))

ENTRY_LIFECYCLE = register(Table(
    "core", "entry_lifecycle",
    "One row per (namespace, entry_id) as of the night: its state and the rule that put it there.",
    with_row_hash((
        NS, C("entry_id", "VARCHAR", "The entry.", False),
        C("class", "VARCHAR", "Class of the current version.", False),
        C("state", "VARCHAR", "active, reverify, superseded, merged, redundant, expired, held, case or archived.", False),
        C("rule", "VARCHAR", "Rule that decided the state (in_use when active).", False),
        C("reason", "VARCHAR", "The rule's reason with its inputs, for people.", False),
        C("since", "TIMESTAMP", "When the state began.", False),
        C("generality", "DOUBLE", "Effective generality 0-3 (declared, or derived by the documented rule).", False),
        C("generality_rule", "VARCHAR", "declared or derived.", False),
        C("admission_score", "INTEGER", "How many of durable / reusable / changes-an-answer hold (0-3).", False),
        C("is_durable", "BOOLEAN", "No temporal deictics or operational state in the text.", False),
        C("is_reusable", "BOOLEAN", "Not a one-off result (run, ticket, request ids, scratch paths).", False),
        C("changes_an_answer", "BOOLEAN", "Not chatter (greetings, acknowledgements, under 3 words).", False),
        C("importance", "DOUBLE", "Effective importance (missing means 1.0).", False),
        C("last_written_at", "TIMESTAMP", "Latest write of the entry.", False),
        C("last_activity_at", "TIMESTAMP", "Latest write, recall or near-duplicate re-statement (idleness counts from it).", False),
        C("successor_id", "VARCHAR", "Accepted successor when superseded."),
        C("revived_at", "TIMESTAMP", "Latest re-statement after an archivable idle gap."),
        C("flagged_for_review", "BOOLEAN", "Written by an agent whose trust fell below the threshold.", False),
        C("review_reason", "VARCHAR", "Why it is flagged."),
        C("recall_observed", "BOOLEAN", "Its namespace records recalls (idleness counts as evidence only there).", False),
        C("next_change_at", "TIMESTAMP", "When a date rule could next move it without new input (null: never); the rules run again for it then."),
        ENTRY_HASH,
    ), leave_out=("next_change_at",)),
    key=("namespace", "entry_id"),
))

AGENT_TRUST = register(Table(
    "core", "agent_trust",
    "One row per (namespace, agent_id) that wrote an entry: trust from the checks of its entries.",
    (
        NS, C("agent_id", "VARCHAR", "The agent.", False),
        C("passes", "BIGINT", "Passing checks of entries it wrote.", False),
        C("failed_assertions", "BIGINT", "Failed assertion checks of entries it wrote.", False),
        C("trust", "DOUBLE", "(passes + 1) / (passes + failed assertions + 2).", False),
        C("first_failed_at", "TIMESTAMP", "First failed assertion on one of its entries."),
        AS_OF,
    ),
    key=("namespace", "agent_id"),
))

PATTERNS = {"lead_in": LEAD_IN, "deictic": DEICTIC, "operational_state": OPERATIONAL_STATE, "one_off": ONE_OFF,
            "chatter": CHATTER, "imperative": IMPERATIVE, "specific": SPECIFIC,
            "imperative_reads": IMPERATIVE_READS, "lead_in_reads": LEAD_IN_READS, "any_marker": ANY_MARKER}


def lifecycle_params(cfg: CurationConfig, as_of: datetime) -> dict:
    keys = ("max_idle_days", "min_generality", "operational_ttl_days", "noise_floor", "reverify_after_days",
            "case_max_age_days", "case_min_trust", "case_max_count", "trust_review_threshold")
    return {"as_of": as_of, **{k: getattr(cfg, k) for k in keys}}


ENTRY_GENERALITY = register(Table(
    "core", "entry_generality",
    "One row per (namespace, entry_id) as of the night: effective generality and how it was obtained.",
    with_row_hash((
        NS, C("entry_id", "VARCHAR", "The entry.", False),
        C("generality", "DOUBLE", "Effective generality 0-3.", False),
        C("generality_rule", "VARCHAR", "declared or derived.", False),
        C("is_imperative", "BOOLEAN", "Imperative principle phrasing (raises derived generality).", False),
        C("specifics", "INTEGER", "Specific tokens counted (ids, dates, times, paths; at most 5).", False),
        ENTRY_HASH,
    )),
    key=("namespace", "entry_id"),
))


ENTRY_TEXT_FEATURES = register(Table(
    "core", "entry_text_features",
    "One row per entry: what the generality and lifecycle rules read from its current text, kept while the text stays the same.",
    with_row_hash((
        NS, C("entry_id", "VARCHAR", "The entry.", False),
        C("source_event_id", "VARCHAR", "The write the features were read from (the entry's last_event_id then).", False),
        C("is_imperative", "BOOLEAN", "Imperative principle phrasing.", False),
        C("specifics", "INTEGER", "Specific tokens (ids, dates, times, paths; at most 5).", False),
        C("has_deictic", "BOOLEAN", "Says today, right now, this week, ... (after a lesson lead-in).", False),
        C("has_operational_state", "BOOLEAN", "Describes a passing operational state.", False),
        C("is_one_off", "BOOLEAN", "Names one run, ticket, request or temporary path.", False),
        C("is_chatter", "BOOLEAN", "Greeting or acknowledgement, or under three words.", False),
        ENTRY_HASH,
    )),
    key=("namespace", "entry_id"),
))


def refresh_entry_text_features(conn: duckdb.DuckDBPyConnection, as_of: datetime) -> int:
    """Reads the features of the entries core.entries refolded (changes.refresh_entries). The version
    (query, declaration, patterns, DuckDB's version: its regular expressions; the parse of the texts)
    decides when it reads them all."""
    query = sql.load("entry_text_features")
    version = code_version("entry_text_features", query, ENTRY_TEXT_FEATURES.ddl(), json.dumps(PATTERNS),
                           duckdb.__version__, memory_writes_version())
    return changes.refresh_entries(conn, ENTRY_TEXT_FEATURES, query, {"as_of": as_of, **PATTERNS}, version,
                                   ["core.entries"])


def build_entry_generality(conn: duckdb.DuckDBPyConnection, as_of: datetime, cfg: CurationConfig | None = None) -> int:
    """Declared generality, or the documented rule: class base, imperative phrasing, specifics, reuse.
    Refreshes core.entry_text_features (which the lifecycle rules read too) first."""
    refresh_entry_text_features(conn, as_of)
    query = sql.load("entry_generality")
    return changes.refresh_entries(conn, ENTRY_GENERALITY, query, {"as_of": as_of},
                                   code_version("entry_generality", query, ENTRY_GENERALITY.ddl(), duckdb.__version__),
                                   ["core.entries", "core.entry_usage", ENTRY_TEXT_FEATURES.qualified])


def build_agent_trust(conn: duckdb.DuckDBPyConnection, as_of: datetime, cfg: CurationConfig | None = None) -> int:
    """Trust per agent from the checks of the entries it wrote (Laplace-smoothed pass rate)."""
    return changes.replace_recording(conn, AGENT_TRUST, sql.load("agent_trust"), {"as_of": as_of},
                                     "select w.namespace, w.entry_id from core.memory_writes as w "
                                     "semi join changed_rows as c using (namespace, agent_id)")


LIFECYCLE_INPUTS = ["core.entries", "core.entry_usage", "core.entry_importance", "core.entry_text_features",
                    "core.entry_generality", "core.memory_writes", "core.recall_results", "core.near_duplicate_clusters",
                    "core.near_duplicate_pairs", "core.supersede_links", "core.agent_trust", "core.principle_proposals",
                    "core.contradictions"]


def build_entry_lifecycle(conn: duckdb.DuckDBPyConnection, as_of: datetime, cfg: CurationConfig) -> int:
    """Admission, expiry by class, decay (idle AND narrow), retention, revival, trust flags. The rules run
    again only for the entries whose inputs changed, the clusters and namespaces that moves, and those
    a date rule reaches tonight (changes.refresh_entries). No column counts days to the night: a row
    stands until its inputs change or next_change_at comes (one that did, idle or age days, was set
    again for every row each night: 0.2 s of a 1 %-churn night at 1M, with its checkpoint)."""
    params = lifecycle_params(cfg, as_of)
    query, scope = sql.load("entry_lifecycle"), sql.load("entry_lifecycle_scope")
    version = code_version("entry_lifecycle", query, scope, ENTRY_LIFECYCLE.ddl(), duckdb.__version__,
                           json.dumps({k: v for k, v in params.items() if k != "as_of"}, sort_keys=True))
    # a change of a row is a change of anything but when the rules look at the entry next (no stage reads it):
    # the row hash leaves next_change_at out, so a row whose next_change_at alone moved is written, not changed
    return changes.refresh_entries(conn, ENTRY_LIFECYCLE, query, params, version, LIFECYCLE_INPUTS, scope=scope)
