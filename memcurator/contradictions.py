"""Contradictions and supersession.

Rules (docs/curation.md):

1. An explicit supersede wins; being later wins nothing by itself. A link needs a reason
   (enforced at ingest) and must not form a cycle: every link inside a cycle is rejected.
2. Trust guard: an explicit supersede whose writer trust is below ``trust_guard_ratio`` x the
   existing entry's trust does not supersede it; it is kept as a conflict instead.
3. A failing assertion check that names the correcting entry writes the link itself (the actor
   that knows); so does a curator confirming a suggestion; no trust guard applies to either.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import Stemmer
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from memcurator import changes, sql
from memcurator.config import CurationConfig, public_endpoint
from memcurator.entries import memory_writes_version
from memcurator.frames import namespace_passes
from memcurator.store import (code_version, create_view, define_hash_macros, ensure_cache, entry_rows, params_used,
                              registered, replace_table, rows_by_key, transaction)
from memcurator.tables import AS_OF, ENTRY, NS, C, Table, register

SUPERSEDE_LINKS = register(Table(
    "core", "supersede_links",
    "One row per proposed supersede link (explicit write or correcting check) before as_of, with its verdict.",
    (
        NS,
        C("entry_id", "VARCHAR", "The entry to be replaced.", False),
        C("successor_id", "VARCHAR", "The entry that replaces it.", False),
        C("source", "VARCHAR", "explicit (a write's supersedes), failed_check (a check's corrected_by) or curator (a confirmed suggestion).", False),
        C("reason", "VARCHAR", "The writer's or the check's reason.", False),
        C("linked_at", "TIMESTAMP", "When the link was written.", False),
        C("event_id", "VARCHAR", "The write or check event that proposed it.", False),
        C("entry_trust", "DOUBLE", "Trust of the entry to be replaced."),
        C("successor_trust", "DOUBLE", "Trust of the replacing write."),
        C("status", "VARCHAR", "accepted, trust_guarded, cycle_rejected or dangling (an entry is unknown).", False),
        C("detail", "VARCHAR", "Why the link got its status.", False),
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


LINK_PAIR = ("entry_id", "successor_id")  # a link's two entries

# The entries whose links a night derives again beyond what its inputs changed: those of the links curators
# confirmed (a decision moves no input table; few).
CONFIRMED_SCOPE = """select namespace, unnest([target_id, data::json ->> '$.supersedes']) from raw.curator_decisions
                     where target_kind = 'link' and action = 'confirm'"""

# The entries connected to those in the temp table stage_scope by a link, stored (core.supersede_links) or
# proposed now (the temp table scoped_links): a link made or gone may close or open a cycle through them.
LINKED_TO_SCOPE = """with recursive reached(namespace, entry_id) as (
                         select namespace, entry_id from stage_scope
                         union
                         select e.namespace, e.b from reached as r
                         inner join link_ends as e on e.namespace = r.namespace and e.a = r.entry_id)
                     select * from reached anti join stage_scope using (namespace, entry_id)"""


def build_supersede_links(conn: duckdb.DuckDBPyConnection, as_of: datetime, cfg: CurationConfig) -> int:
    """Explicit and check-written supersede links, each accepted, trust-guarded, cycle-rejected or dangling.

    Kept by entry (changes.refresh_pairs): the links of the entries whose writes, versions or checks changed,
    and of every entry connected to those by a link, are derived again (the cycle check reads only them: a
    cycle lies within the entries its links connect). Derived whole, the 76k links of the 1M bench store
    took 0.3-0.4 s of every night."""
    candidates, verdict = sql.load("supersede_candidates"), sql.load("supersede_links")
    params = {"as_of": as_of, "ratio": cfg.trust_guard_ratio}

    def prepare(everything: bool) -> None:
        if not everything and not conn.execute("select count(*) from stage_scope").fetchone()[0]:
            return  # no link to derive again
        conn.execute("create or replace temp table link_scope as select * from stage_scope" if not everything else
                     "create or replace temp table link_scope (namespace varchar, entry_id varchar)")
        conn.execute(f"create or replace temp table scoped_links as {candidates}", {"as_of": as_of, "all": everything})
        if not everything:
            # the links of the scope's namespaces only: a link joins two entries of one namespace (with all 76k
            # links of the 1M bench store, both ways, the stage's statements took 0.15-0.19 s of a night with
            # nothing to do, with these 0.09-0.11 s; lab, three runs each)
            conn.execute("create or replace temp table link_ends as with links as (select namespace, entry_id, "
                         "successor_id from core.supersede_links semi join (select distinct namespace from "
                         "stage_scope) using (namespace) union all select namespace, entry_id, successor_id "
                         "from scoped_links) select namespace, entry_id as a, successor_id as b from links "
                         "union all select namespace, successor_id, entry_id from links")
            conn.execute(f"create or replace temp table link_scope as {LINKED_TO_SCOPE}")
            if conn.execute("select count(*) from link_scope").fetchone()[0]:
                conn.execute("insert into stage_scope select * from link_scope")
                conn.execute(f"insert into scoped_links {candidates}", {"as_of": as_of, "all": False})
        conn.execute("create or replace temp table link_candidates as select distinct * from scoped_links")
        existing = conn.execute("select namespace, entry_id, successor_id from link_candidates "
                                "where entry_exists and successor_exists").pl()
        with registered(conn, cycles=cycle_members(existing)):
            conn.execute("create or replace temp table cycle_nodes as select * from cycles")

    version = code_version("supersede_links", candidates, verdict, CONFIRMED_SCOPE, LINKED_TO_SCOPE,
                           SUPERSEDE_LINKS.ddl(), json.dumps(cfg.trust_guard_ratio), duckdb.__version__)
    try:
        return changes.refresh_pairs(conn, SUPERSEDE_LINKS, verdict, params, version,
                                     ["core.memory_writes", "core.entries", "core.checks"], scope=CONFIRMED_SCOPE,
                                     pair=LINK_PAIR, prepare=prepare)
    finally:
        for temp in ("link_scope", "scoped_links", "link_ends", "link_candidates", "cycle_nodes"):
            conn.execute(f"drop table if exists {temp}")


CONTRADICTIONS = register(Table(
    "core", "contradictions",
    "One row per conflicting pair of entries within a namespace (entry_a older), with its kind, evidence and status.",
    (
        NS,
        C("conflict_id", "VARCHAR", "Stable id of the pair.", False),
        C("entry_a", "VARCHAR", "The older entry.", False),
        C("entry_b", "VARCHAR", "The newer entry.", False),
        C("kind", "VARCHAR", "explicit, failed_check, trust_guarded, cycle or detected.", False),
        C("detector", "VARCHAR", "For detected pairs: negation, value, antonym or change."),
        C("evidence", "VARCHAR", "Why the pair conflicts.", False),
        C("confidence", "DOUBLE", "1 for declared links; the detector's overlap for detected pairs.", False),
        C("status", "VARCHAR", "resolved_by_link (a supersede settled it), open, or the curator's resolution.", False),
        C("likely_current", "VARCHAR", "The entry more likely to be current: later validity, then later write, higher trust, passing checks.", False),
        C("resolution_reason", "VARCHAR", "The curator's reason, when resolved by a curator."),
    ),
    key=("namespace", "entry_a", "entry_b"),
))

CONTESTED_ENTRIES = register(Table(
    "core", "contested_entries",
    "One row per entry in at least one open conflict: the curator's worklist (read most recalled first).",
    (
        NS, C("entry_id", "VARCHAR", "The contested entry (its text: core.entries, or analyst.contested_entries).", False),
        C("open_conflicts", "BIGINT", "Open conflicts it is in.", False),
        C("conflict_ids", "VARCHAR[]", "Those conflicts.", False),
        C("kinds", "VARCHAR[]", "Their kinds.", False),
        C("max_confidence", "DOUBLE", "Highest confidence among them.", False),
        C("recall_count", "BIGINT", "How often it is recalled (priority).", False),
        C("is_likely_current", "BOOLEAN", "Whether it is the likely-current side of every conflict.", False),
    ),
    key=("namespace", "entry_id"),
))

SIMILAR_ONLY_VALUE_OVERLAP = 0.9
SUBJECT_GROUP_CAP = 300  # entries sharing a subject key beyond this are only paired when also similar


ENTRY_SUBJECTS = register(Table(
    "core", "entry_subjects",
    "One row per entry with tags: its subject key (the sorted tag set), to find the subject groups an entry leaves.",
    (NS, ENTRY, C("subject", "VARCHAR", "Its tags, sorted, joined by the unit separator.", False)),
    key=("namespace", "entry_id"),
))

CONTRADICTION_CANDIDATES = register(Table(
    "core", "contradiction_candidates",
    "One row per pair the judge reads (sql/contradiction_candidates.sql): about the same subject or near-duplicates.",
    (
        NS,
        C("entry_a", "VARCHAR", "The older entry.", False),
        C("entry_b", "VARCHAR", "The newer entry.", False),
        C("same_subject", "BOOLEAN", "Whether they share a subject key (in a group up to the cap).", False),
        C("pair_hash", "UBIGINT", "Hash of both entries' current versions, the version of the parse of writes and same_subject.", False),
    ),
    key=("namespace", "entry_a", "entry_b"),
))

def subjects(entries: str = "core.entries") -> str:
    """The subject key of each of the rows of ``entries`` (the candidates' query reads it from core.entry_subjects)."""
    return (f"select namespace, entry_id, array_to_string(list_sort(tags), chr(31)) as subject from {entries} "
            "where len(tags) > 0")


SUBJECTS = subjects()


def keep_candidate_pairs(conn: duckdb.DuckDBPyConnection, as_of: datetime) -> None:
    """The pairs about the same subject within a namespace (sql/contradiction_candidates.sql), in
    core.contradiction_candidates: the same subject key (the entry's sorted tag set, non-empty), or a
    verified near-duplicate. Made in DuckDB: the entries and pairs never leave the store, only the
    pairs without a stored verdict do (reading 1M entries and 425k pairs into polars to pair them took
    1.2 s of a churn night at 1M).

    The pairs are kept in core.contradiction_candidates: a night derives again only those with an entry
    that core.entries or core.near_duplicate_pairs changed, or in a subject group such an entry leaves
    or joins (its size decides whether the group is paired); pairing every entry again took 0.6 s of a
    1 %-churn night at 1M. Both give the same pairs (tested)."""
    query = sql.load("contradiction_candidates")
    params = {"cap": SUBJECT_GROUP_CAP, "parse": memory_writes_version()}
    table = CONTRADICTION_CANDIDATES.qualified
    version = code_version("contradiction_candidates", query, SUBJECTS, CONTRADICTION_CANDIDATES.ddl(),
                           ENTRY_SUBJECTS.ddl(), json.dumps(params, sort_keys=True))
    for cache in (ENTRY_SUBJECTS, CONTRADICTION_CANDIDATES):
        ensure_cache(conn, cache)
    define_hash_macros(conn)
    now, before, last = changes.input_changes(conn, table, version, ["core.entries", "core.near_duplicate_pairs"],
                                               as_of)
    for temp in ("candidate_scope", "candidate_reads"):  # read by the query either way
        conn.execute(f"create or replace temp table {temp} (namespace varchar, entry_id varchar)")
    # the rows a kept night derives again, as they were (their verdicts may have gone stale)
    conn.execute("create or replace temp table candidates_gone (stored_row bigint, pair_hash ubigint)")
    try:
        with transaction(conn):
            if before is None:
                replace_table(conn, ENTRY_SUBJECTS, SUBJECTS, own_transaction=False)
                replace_table(conn, CONTRADICTION_CANDIDATES, query, {**params, "all": True}, own_transaction=False)
                changes.record(conn, table, version, as_of, now, None, last)
            else:
                _pair_changed(conn, query, params)
                changes.record(conn, table, version, as_of, now, "select * from candidate_scope", last)
    finally:
        for temp in ("candidate_scope", "candidate_reads", "candidate_groups", "input_changes"):
            conn.execute(f"drop table if exists {temp}")


def _pair_changed(conn: duckdb.DuckDBPyConnection, query: str, params: dict) -> None:
    """The candidates of the entries the inputs changed (temp table input_changes), and of every member
    of a subject group one of them left or joins, derived again in place."""
    changed = "semi join input_changes using (namespace, entry_id)"
    conn.execute("create or replace temp table candidate_groups as "
                 f"select namespace, subject from core.entry_subjects {changed}")
    conn.execute(f"delete from core.entry_subjects where rowid in (select rowid from core.entry_subjects {changed})")
    # the changed entries' tags read by their hashes (by key, every entry's tags were read: 25 ms of scan)
    changed_entries = entry_rows("core.entries", "select * from input_changes", "namespace, entry_id, tags")
    conn.execute(f"insert into core.entry_subjects {subjects(f'({changed_entries})')}")
    conn.execute(f"insert into candidate_groups select namespace, subject from core.entry_subjects {changed}")
    conn.execute("insert into candidate_scope select * from input_changes union select namespace, entry_id "
                 "from core.entry_subjects semi join candidate_groups using (namespace, subject)")
    conn.execute("""insert into candidate_reads
                    select * from candidate_scope
                    union
                    select p.namespace, p.entry_b from core.near_duplicate_pairs as p
                    semi join candidate_scope as s on s.namespace = p.namespace and s.entry_id = p.entry_a
                    union
                    select p.namespace, p.entry_a from core.near_duplicate_pairs as p
                    semi join candidate_scope as s on s.namespace = p.namespace and s.entry_id = p.entry_b""")
    conn.execute("insert into candidates_gone select stored_row, pair_hash from "
                 f"({changes.pairs_of_scope(CONTRADICTION_CANDIDATES.qualified, scope='candidate_scope')})")
    conn.execute("delete from core.contradiction_candidates where rowid in (select stored_row from candidates_gone)")
    conn.execute(f"insert into core.contradiction_candidates select {CONTRADICTION_CANDIDATES.select_list('q')} "
                 f"from ({query}) q", {**params, "all": False})


# The entries of the conflicts a curator decided on, derived again every night (few; a decision names its
# conflict, not its entries, and takes effect on the first night after its time).
DECIDED_SCOPE = """select k.namespace, unnest([k.entry_a, k.entry_b]) from core.contradictions as k
                   semi join (select namespace, target_id as conflict_id from raw.curator_decisions
                              where target_kind = 'conflict') using (namespace, conflict_id)"""


def unlinked(pairs: str) -> str:
    """The rows of the query ``pairs`` (namespace, entry_a, entry_b, ...) that no supersede link joins either
    way: a linked pair is declared, not judged."""
    return f"""select * from ({pairs}) anti join (
                   select namespace, entry_id as entry_a, successor_id as entry_b from core.supersede_links
                   union all
                   select namespace, successor_id, entry_id from core.supersede_links)
               using (namespace, entry_a, entry_b)"""


# The stored verdicts the judge's candidates read (tonight's unlinked ones of the scope: the temp table
# scope_candidates): this judge's, for their current versions. Matched by pair_hash alone: it hashes the ids of
# both entries' current writes, and a write belongs to one entry of one namespace, so it names the pair (64 bits:
# matched with the namespace and both entry ids as well, each of the two joins took 0.11-0.14 s of a churn night
# at 1M, by the hash 0.06 s).
STORED_DETECTED = """select j.namespace, j.entry_a, j.entry_b, j.detector, j.evidence, j.confidence
                     from (select * from core.judged_pairs where judge = $j and detector is not null) as j
                     semi join scope_candidates using (pair_hash)"""
# The stored verdicts no candidate reads any more. All of them: those of another judge, or matching no candidate
# (an anti join by row id: a correlated "not exists" with "or" took 0.31-0.36 s on 377k verdicts, this 0.12 s).
STALE_VERDICTS = """select j.rowid from core.judged_pairs as j
                    anti join (select pair_hash, $j as judge from scope_candidates) using (pair_hash, judge)"""
# In a kept night, those of the candidates derived again (temp table candidates_gone, as they were) or of the
# scope's linked ones (temp table scope_pairs: all the scope's candidates) that are not candidates read now: a
# verdict goes stale only with its candidate row, or when a link joins its pair (then both entries are in scope).
STALE_KEPT_VERDICTS = """select j.rowid from core.judged_pairs as j semi join (
                             select pair_hash from candidates_gone union select pair_hash from scope_pairs
                             except select pair_hash from scope_candidates) using (pair_hash)"""


def build_contradictions(conn: duckdb.DuckDBPyConnection, as_of: datetime, cfg: CurationConfig) -> int:
    """Declared conflicts (supersede links and their verdicts) plus pairs the judge detects among
    entries about the same subject; curator resolutions applied; the likely-current side named. Derived
    again only for the pairs of the entries whose links, candidates, versions or usage changed, of the
    pairs the judge read tonight, and of the conflicts curators decided on (changes.refresh_pairs):
    derived whole, the 148k conflicts of the 1M bench store with its corrections took about 1 s of every
    night. The verdict cache core.judged_pairs is kept within that scope too: a verdict goes stale only
    when its pair's candidate row changes or a link joins it (or the judge changes: the night derives all)."""
    # a pair is judged again only when one of its entries has another current version (or the writes are
    # parsed by other code: the same write may then give another text); only the pairs without a stored
    # verdict leave the store and read their texts
    judge = judge_version(cfg)
    ensure_cache(conn, JUDGED_PAIRS)
    keep_candidate_pairs(conn, as_of)
    # the candidates without this judge's verdict for their current versions: new or changed pairs, and those
    # whose verdict was not kept (a chat judge's fallback: asked again). Found before the links are read, each
    # candidate joined with its verdict first (the 377k of a 1M-entry store joined with the links were 0.06-0.09 s
    # of every night)
    conn.execute("create or replace temp table unjudged as " + unlinked(
        "select c.namespace, c.entry_a, c.entry_b, c.same_subject, c.pair_hash from core.contradiction_candidates "
        "as c anti join core.judged_pairs as j on j.judge = $j and j.pair_hash = c.pair_hash"), {"j": judge})
    # with both texts, joined in DuckDB (reading the pairs' entries into polars to join them there took
    # 1.7 s at 1M entries in a full night, this 1.0 s). The pairs are found first and the texts read for
    # their entries alone (store.rows_by_key): joined to the candidates in one statement, the texts of
    # every entry went through the join (0.72-0.82 s of a 1 %-churn night at 1M for 1.8k pairs)
    read = "select namespace, entry_a as entry_id from unjudged union select namespace, entry_b from unjudged"
    fresh = conn.execute(f"""with texts as materialized (
                                 select namespace, entry_id, text from ({rows_by_key('core.entries', read)})
                             )
                             select u.*, a.text as text_a, b.text as text_b from unjudged as u
                             inner join texts as a on a.namespace = u.namespace and a.entry_id = u.entry_a
                             inner join texts as b on b.namespace = u.namespace and b.entry_id = u.entry_b""").pl()
    verdicts = _judge(fresh, cfg)

    def prepare(everything: bool) -> None:
        """What the query reads (temp tables scope_links and detected_pairs: those of the scope's pairs), and
        the verdict cache kept."""
        if not everything:  # the pairs judged tonight are derived again
            conn.execute("insert into stage_scope select * from (select namespace, entry_a as entry_id from unjudged "
                         "union select namespace, entry_b from unjudged) anti join stage_scope using (namespace, entry_id)")
        candidates = ("core.contradiction_candidates" if everything
                      else f"({changes.pairs_of_scope('core.contradiction_candidates')})")
        links = (SUPERSEDE_LINKS.qualified if everything
                 else f"({changes.pairs_of_scope(SUPERSEDE_LINKS.qualified, LINK_PAIR)})")
        conn.execute(f"create or replace temp table scope_links as select {SUPERSEDE_LINKS.select_list('l')} "
                     f"from {links} as l")
        conn.execute("create or replace temp table scope_pairs as "
                     f"select namespace, entry_a, entry_b, pair_hash from {candidates}")
        conn.execute(f"create or replace temp table scope_candidates as {unlinked('select * from scope_pairs')}")
        conn.execute(f"create or replace temp table detected_pairs as {STORED_DETECTED} union all "
                     "select namespace, entry_a, entry_b, detector, evidence, confidence from new_verdicts "
                     "where detector is not null", {"j": judge})
        # the cache keeps its rows: out go the stale verdicts, in come the new ones (rewriting all 425k rows was
        # 0.4 s of a churn night at 1M)
        stale = STALE_VERDICTS if everything else STALE_KEPT_VERDICTS
        conn.execute(f"delete from core.judged_pairs where rowid in ({stale})", params_used(stale, {"j": judge}))
        conn.execute(f"insert into core.judged_pairs select {JUDGED_PAIRS.select_list('q')} from "
                     "(select *, $judge as judge from new_verdicts where cacheable) q", {"judge": judge})

    query = sql.load("contradictions")
    version = code_version("contradictions", query, DECIDED_SCOPE, CONTRADICTIONS.ddl(), judge, STORED_DETECTED,
                           STALE_VERDICTS, STALE_KEPT_VERDICTS, unlinked(""), duckdb.__version__)
    try:
        with transaction(conn), registered(conn, new_verdicts=verdicts):
            return changes.refresh_pairs(conn, CONTRADICTIONS, query, {"as_of": as_of}, version,
                                         [SUPERSEDE_LINKS.qualified, CONTRADICTION_CANDIDATES.qualified, "core.entries",
                                          "core.entry_usage"], scope=DECIDED_SCOPE, own_transaction=False,
                                         prepare=prepare)
    finally:
        for temp in ("detected_pairs", "unjudged", "scope_pairs", "scope_candidates", "candidates_gone",
                     "scope_links"):
            conn.execute(f"drop table if exists {temp}")


JUDGED_PAIRS = register(Table(
    "core", "judged_pairs",
    "One row per candidate pair the judge read: its verdict, kept while both entries keep their current "
    "versions so a night judges only new or changed pairs.",
    (
        NS,
        C("entry_a", "VARCHAR", "The older entry.", False),
        C("entry_b", "VARCHAR", "The newer entry.", False),
        C("pair_hash", "UBIGINT", "Hash of both entries' current versions (their write ids, and the version of the parse of writes) and whether they share a subject key.", False),
        C("detector", "VARCHAR", "The conflict found (negation, value, antonym, change or the chat judge), or null."),
        C("evidence", "VARCHAR", "Why the pair conflicts."),
        C("confidence", "DOUBLE", "The judge's confidence."),
        C("judge", "VARCHAR", "The judge and the version of its code or model: another judge judges again.", False),
    ),
    key=("namespace", "entry_a", "entry_b"),
))


def judge_version(cfg: CurationConfig) -> str:
    """The judge ``cfg`` configures and the version of its code or model (core.judged_pairs.judge)."""
    if cfg.judge_endpoint:
        return f"chat:{public_endpoint(cfg.judge_endpoint)}:{cfg.judge_model}"
    from memcurator import detect

    return code_version("rules", Path(detect.__file__).read_text(), repr(detect.JudgeSettings()),
                        repr(SIMILAR_ONLY_VALUE_OVERLAP), Stemmer.version())


def _judge(pairs: pl.DataFrame, cfg: CurationConfig) -> pl.DataFrame:
    """Verdicts (detector null when the pair does not conflict) for pairs not judged before."""
    keys = ["namespace", "entry_a", "entry_b", "pair_hash"]
    if cfg.judge_endpoint:
        from memcurator.judges import from_config

        chat = from_config(cfg.judge_endpoint, cfg.judge_model, cfg.judge_timeout_seconds).classify(pairs)
        # a pair the model did not answer got the fallback's verdict: asked again next night, not kept
        return chat.select(*keys, pl.when(pl.col("label") == "contradictory").then("judge").alias("detector"),
                           "evidence", "confidence", (~pl.col("judge").str.starts_with("heuristic")).alias("cacheable"))
    from memcurator.detect import JudgeSettings, judge

    # without a shared subject key, competing values need near-identical wording around them; in passes
    # of whole namespaces (a verdict reads only its pair), so the texts' features of one pass are in memory
    judged = pl.concat([
        verdicts
        for part in namespace_passes(pairs, cfg.judge_pass_pairs)
        for verdicts in (judge(part.filter(pl.col("same_subject"))),
                         judge(part.filter(~pl.col("same_subject")),
                               JudgeSettings(value_overlap=SIMILAR_ONLY_VALUE_OVERLAP)))
    ], how="diagonal_relaxed")
    return judged.select(*keys, pl.when(pl.col("is_conflict")).then("kind").alias("detector"),
                         pl.when(pl.col("is_conflict")).then("evidence").alias("evidence"), "confidence",
                         pl.lit(True).alias("cacheable"))


# The entries whose rows a change of an entry's conflicts or state moves besides its own: the other sides of
# its conflicts (a side that leaves the recallable set settles the conflict for both).
CONTESTED_SCOPE = """select k.namespace, k.entry_b from core.contradictions as k
                     semi join input_changes as i on i.namespace = k.namespace and i.entry_id = k.entry_a
                     union
                     select k.namespace, k.entry_a from core.contradictions as k
                     semi join input_changes as i on i.namespace = k.namespace and i.entry_id = k.entry_b"""


def build_contested_entries(conn: duckdb.DuckDBPyConnection, as_of: datetime, cfg: CurationConfig | None = None) -> int:
    """Every entry in an open conflict, with its conflicts. Derived again only for the entries whose
    conflicts, state or usage changed, and the other sides of their conflicts (changes.refresh_entries):
    derived whole, the worklist of a 1M-entry store with its corrections (106k entries with their texts)
    was 1.2-1.4 s of every night, with nothing changed. It holds no text (sql/contested_entries.sql)."""
    query = sql.load("contested_entries")
    version = code_version("contested_entries", query, CONTESTED_SCOPE, CONTESTED_ENTRIES.ddl(), duckdb.__version__)
    return changes.refresh_entries(conn, CONTESTED_ENTRIES, query, {"as_of": as_of}, version,
                                   [CONTRADICTIONS.qualified, "core.entry_lifecycle", "core.entry_usage"],
                                   scope=CONTESTED_SCOPE)


SUPERSEDE_SUGGESTIONS = register(Table(
    "core", "supersede_suggestions",
    "One row per (new entry, older candidate) it may replace: at most 3 per entry written in the last week "
    "(a view over the tables it reads).",
    (
        NS, C("entry_id", "VARCHAR", "The new entry.", False),
        C("candidate_id", "VARCHAR", "An older, still recallable entry it may replace.", False),
        C("score", "DOUBLE", "Similarity or conflict confidence (0.5 for a bare subject-key match).", False),
        C("basis", "VARCHAR", "near-duplicate, conflict: <detector>, same subject key.", False),
        C("rank", "BIGINT", "1 = closest.", False),
        AS_OF,
    ),
    key=("namespace", "entry_id", "candidate_id"),
))

SUGGESTION_WINDOW_DAYS = 7

# The suggestions are a view, read when a curator reviews them: derived each night they were 0.16-0.2 s
# of a full night and of a 1 %-churn night alike at 1M entries. The night and the window it reads are
# one row the night writes.
SUGGESTION_SETTINGS = register(Table(
    "core", "suggestion_settings",
    "One row: the night and the window of recent entries core.supersede_suggestions (a view) reads.",
    (
        C("as_of", "TIMESTAMP", "The night.", False),
        C("window_days", "BIGINT", "Days before the night an entry counts as recent.", False),
    ),
))


def build_supersede_suggestions(conn: duckdb.DuckDBPyConnection, as_of: datetime, cfg: CurationConfig | None = None) -> int:
    """For each recent entry, the closest older entries it may replace (confirm with one decision): writes
    the night's settings and (re)creates the view. Returns 1, the settings row (the view's rows are read,
    not written)."""
    with transaction(conn):
        replace_table(conn, SUGGESTION_SETTINGS, "select $as_of as as_of, $window_days as window_days",
                      {"as_of": as_of, "window_days": SUGGESTION_WINDOW_DAYS}, own_transaction=False)
        create_suggestions_view(conn)
    return 1


def create_suggestions_view(conn: duckdb.DuckDBPyConnection) -> None:
    """core.supersede_suggestions over the tables it reads."""
    create_view(conn, SUPERSEDE_SUGGESTIONS, sql.load("supersede_suggestions"))
