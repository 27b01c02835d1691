"""The curation score: deterministic, monotone in generality and proven count, clock-injected."""

from __future__ import annotations

from datetime import datetime, timedelta

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from memcurator import store
from memcurator.clustering import PRINCIPLE_PROPOSALS
from memcurator.config import CurationConfig
from memcurator.ranking import build_entry_scores
from memcurator.sql import load

AS_OF = datetime(2026, 11, 30)

rows = st.lists(
    st.tuples(st.floats(0, 3), st.integers(0, 30), st.one_of(st.none(), st.floats(0, 100))),
    min_size=1, max_size=20,
)


def scores_of(*frames: pl.DataFrame, cfg=CurationConfig()) -> list[list[float]]:
    """Each frame's scores by entry id, the frames derived in one store, each in a namespace of its own
    (nothing crosses a namespace; one store per frame made the property test below take 21 s)."""
    inputs = pl.concat([f.with_columns(pl.lit(f"ns{i}").alias("namespace")) for i, f in enumerate(frames)])
    with store.connect(":memory:") as conn:
        conn.register("inputs", inputs.to_arrow())
        conn.execute("create table core.entry_lifecycle as select namespace, entry_id, generality, "
                     "hash(namespace, entry_id) as entry_hash from inputs")
        conn.execute("create table core.entry_usage as select namespace, entry_id, proven_count, last_recalled_at, "
                     "hash(namespace, entry_id) as entry_hash from inputs")
        store.ensure_table(conn, PRINCIPLE_PROPOSALS)  # no approved principles here
        build_entry_scores(conn, AS_OF, cfg)
        return [[r[0] for r in conn.execute("select score from core.entry_scores where namespace = ? order by entry_id",
                                            [f"ns{i}"]).fetchall()] for i in range(len(frames))]


def scores(frame: pl.DataFrame, cfg=CurationConfig()) -> list[float]:
    return scores_of(frame, cfg=cfg)[0]


def frame(items) -> pl.DataFrame:
    return pl.DataFrame({
        "namespace": ["ns"] * len(items),
        "entry_id": [f"e{i:03d}" for i in range(len(items))],
        "generality": [g for g, _, _ in items],
        "proven_count": [p for _, p, _ in items],
        "last_recalled_at": [None if d is None else AS_OF - timedelta(days=d) for _, _, d in items],
    }, schema_overrides={"last_recalled_at": pl.Datetime("us")})


@settings(deadline=None)
@given(rows, st.floats(0.01, 1), st.integers(1, 5))
def test_score_is_deterministic_and_monotone(items, more_generality, more_proven):
    base = frame(items)
    first = scores(base)
    again, more_g, more_p = scores_of(base, base.with_columns(pl.col("generality") + more_generality),
                                      base.with_columns(pl.col("proven_count") + more_proven))
    assert again == first  # same inputs, same clock, another store: same scores
    assert all(b > a for a, b in zip(first, more_g))  # strictly monotone in generality
    assert all(b >= a for a, b in zip(first, more_p))  # monotone in proof (capped at proven_cap)


def test_score_formula_and_recency_boundaries():
    # generality 1.5 x 2 + min(12, 10) + boosts: recalled 7 days ago (+3), 30 days ago (+1), 31 (+0), never (+0)
    got = scores(frame([(1.5, 12, 7.0), (1.5, 12, 30.0), (1.5, 12, 31.0), (1.5, 12, None)]))
    assert got == [16.0, 14.0, 13.0, 13.0]


def test_weights_are_configuration():
    cfg = CurationConfig(w_generality=5.0, proven_cap=2, recent_boost=10.0)
    assert scores(frame([(1.0, 7, 1.0)]), cfg) == [5.0 + 2 + 10.0]


def test_score_sql_never_reads_note_age():
    # age belongs to the note, truth to the fact: the formula must not use write times
    for name in ("entry_score_parts", "entry_scores"):
        assert "written" not in load(name)


def test_the_recall_views_rank_numbers_each_namespace_in_recall_order():
    """mart.recall_view numbers the stored ranking's rows per namespace when read: active tier first, then
    score (read from the view core.entry_scores, which applies the recency boost of the night in
    core.score_settings: neither the stored parts nor the stored ranking change for the date alone), then the
    latest write, then the entry id (ranks are not stored: a new entry moves every rank below it); a reader's
    filter on one namespace gets the ranks the whole view gives."""
    from memcurator.ranking import (ENTRY_SCORE_PARTS, RECALL_RANKING, SCORE_SETTINGS, create_recall_view,
                                    create_scores_view)
    from memcurator.tables import ENTRIES

    t = datetime(2026, 11, 1)
    stored = [  # (namespace, entry_id, tier, generality (the score here), last_written_at)
        ("a", "e1", "session", 99.0, t), ("a", "e2", "active", 5.0, t), ("a", "e3", "active", 5.0, t + timedelta(1)),
        ("a", "e4", "active", 9.0, t), ("a", "e0", "active", 5.0, t + timedelta(1)), ("b", "e9", "active", 1.0, t)]
    with store.connect(":memory:") as conn:
        for table in (RECALL_RANKING, ENTRIES, PRINCIPLE_PROPOSALS, ENTRY_SCORE_PARTS, SCORE_SETTINGS):
            store.ensure_table(conn, table)
        conn.executemany(
            "insert into mart.recall_ranking (namespace, entry_id, tier, class, state, banners, has_failed_check, "
            "conflict_with, is_likely_current, tags, generality, proven_count, first_written_at, last_written_at, "
            "version_count, writer_agents, entry_hash, row_hash) values (?, ?, ?, 'lesson', 'active', [], false, [], "
            "true, [], 1, 0, ?, ?, 1, [], 0, 0)", [[ns, e, tier, w, w] for ns, e, tier, _, w in stored])
        # e2 was recalled a day before the first night: a boost of 5 for 7 days (weights: the score is the generality)
        conn.executemany("insert into core.entry_score_parts values (?, ?, ?, 0, 0, ?, 0, 0)",
                         [[ns, e, g, t - timedelta(1) if e == "e2" else None] for ns, e, _, g, _ in stored])
        conn.execute("insert into core.score_settings values (?, 1.0, 7, 5.0, 30, 0.0)", [t + timedelta(7)])
        create_scores_view(conn)
        create_recall_view(conn)
        ranks = conn.execute("select namespace, entry_id, rank from mart.recall_view order by all").fetchall()
        assert ranks == [("a", "e0", 2), ("a", "e1", 5), ("a", "e2", 4), ("a", "e3", 3), ("a", "e4", 1), ("b", "e9", 1)]
        assert conn.execute("select entry_id, rank from mart.recall_view where namespace = 'a' order by rank"
                            ).fetchall() == [("e4", 1), ("e0", 2), ("e3", 3), ("e2", 4), ("e1", 5)]
        # a night when the recall was recent: the boost moves the score and the rank, no stored row changed
        conn.execute("update core.score_settings set as_of = ?", [t])
        assert conn.execute("select entry_id, score, rank from mart.recall_view where namespace = 'a' and rank <= 2 "
                            "order by rank").fetchall() == [("e2", 10.0, 1), ("e4", 9.0, 2)]


def test_a_store_that_stored_the_scores_gets_the_view_and_forgets_the_tables_bookkeeping():
    """Before the view, core.entry_scores was a table kept by refreshes: the next night drops it and its
    record in work.refreshes and work.changes, and reads the scores through the view."""
    from memcurator import changes

    items = frame([(1.5, 12, 7.0), (0.5, 0, None)])
    with store.connect(":memory:") as conn:
        conn.register("inputs", items.to_arrow())
        conn.execute("create table core.entry_lifecycle as select namespace, entry_id, generality, "
                     "hash(namespace, entry_id) as entry_hash from inputs")
        conn.execute("create table core.entry_usage as select namespace, entry_id, proven_count, last_recalled_at, "
                     "hash(namespace, entry_id) as entry_hash from inputs")
        store.ensure_table(conn, PRINCIPLE_PROPOSALS)
        conn.execute("create table core.entry_scores as select namespace, entry_id, 0.0 as score from inputs")
        changes.record(conn, "core.entry_scores", "entry_scores:old", AS_OF, {},
                       "select namespace, entry_id from inputs")
        build_entry_scores(conn, AS_OF, CurationConfig())
        assert conn.execute("select count(*) from duckdb_views() where schema_name = 'core' "
                            "and view_name = 'entry_scores'").fetchone()[0] == 1
        for bookkeeping in ("work.refreshes", "work.changes"):
            assert conn.execute(f"select count(*) from {bookkeeping} "
                                "where table_name = 'core.entry_scores'").fetchone()[0] == 0
        assert [r[0] for r in conn.execute("select score from core.entry_scores order by entry_id").fetchall()] == [
            16.0, 1.0]
