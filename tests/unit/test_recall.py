"""recall(): namespace-scoped, curated vs raw on one index, banners, and --as-of."""

from __future__ import annotations

from datetime import datetime, timedelta

from memcurator import decisions, ingest
from memcurator.config import CurationConfig
from memcurator.night import derive_night
from memcurator.recall import RecallSettings, recall
from tests.conftest import ev, write, write_jsonl

AS_OF = datetime(2026, 11, 30)


def at(days_before: float) -> str:
    return (AS_OF - timedelta(days=days_before)).isoformat() + "Z"


def build(conn, home, lines):
    write_jsonl(home.landing / "f.jsonl", lines)
    ingest.ingest_landing(conn, home.landing, None, CurationConfig())
    derive_night(conn, AS_OF)
    conn.execute("CHECKPOINT")
    return home.store


def test_identical_text_in_two_namespaces_never_crosses(conn, home):
    path = build(conn, home, [write("rotate the ledger credentials monthly", entry_id="x", namespace="ns-a", ts=at(1)),
                              write("rotate the ledger credentials monthly", entry_id="x", namespace="ns-b", ts=at(1)),
                              write("only in b: rotate keys", entry_id="y", namespace="ns-b", ts=at(1))])
    conn.close()
    for mode in ("raw", "curated"):
        hits = recall("rotate ledger credentials keys", "ns-a", path, k=10, mode=mode)
        assert [h.entry_id for h in hits] == ["x"]


def test_curated_hides_archived_entries_that_raw_returns(conn, home):
    path = build(conn, home, [
        write("retry the ledger call with backoff", entry_id="live", ts=at(1)),
        write("retry the ledger call once on run 48213", entry_id="stale", ts=at(60), data={"generality": 0.2}),
        ev("memory.recall", {"query": "q", "results": [{"entry_id": "live", "rank": 1}]}, ts=at(1)),
    ])
    conn.close()
    assert {h.entry_id for h in recall("retry ledger", "ns-a", path, k=5, mode="raw")} == {"live", "stale"}
    assert [h.entry_id for h in recall("retry ledger", "ns-a", path, k=5)] == ["live"]


def test_failed_check_warning_comes_with_the_entry(conn, home):
    path = build(conn, home, [
        write("the ledger timeout is 30 seconds", entry_id="t", cls="config", ts=at(3)),
        ev("memory.check", {"entry_id": "t", "status": "fail", "error_class": "assertion"}, ts=at(1)),
    ])
    conn.close()
    [hit] = recall("ledger timeout", "ns-a", path)
    assert hit.banners and hit.banners[0].startswith("WARNING: failed check")


def test_as_of_returns_what_was_valid_then(conn, home):
    path = build(conn, home, [
        write("the ledger timeout is 30 seconds", entry_id="old", cls="config", ts=at(40)),
        write("the ledger timeout is 45 seconds", entry_id="new", cls="config", ts=at(10),
              data={"supersedes": "old", "reason": "raised"}),
    ])
    conn.close()
    assert [h.entry_id for h in recall("ledger timeout", "ns-a", path)] == ["new"]
    assert [h.entry_id for h in recall("ledger timeout", "ns-a", path, as_of=AS_OF - timedelta(days=20))] == ["old"]


def test_k_limits_and_nonsense_returns_nothing(conn, home):
    path = build(conn, home, [write(f"lesson {i} about the ledger service", entry_id=f"e{i}", ts=at(1)) for i in range(8)])
    conn.close()
    assert len(recall("ledger", "ns-a", path, k=3)) == 3
    assert recall("zzzz qqqq", "ns-a", path) == []
    assert recall("", "ns-a", path) == []


def test_current_side_first_terminates_when_stale_sides_conflict_with_each_other():
    from memcurator.recall import _current_side_first

    rows = [{"entry_id": "a", "is_likely_current": False, "conflict_with": ["b", "c"]},
            {"entry_id": "b", "is_likely_current": False, "conflict_with": ["a", "c"]},
            {"entry_id": "c", "is_likely_current": True, "conflict_with": ["a", "b"]}]
    ordered = [r["entry_id"] for r in _current_side_first(rows)]
    assert ordered[0] == "c" and sorted(ordered) == ["a", "b", "c"]


def test_same_subject_facts_come_later_validity_first(conn, home):
    # written in the other order on purpose: validity of the fact decides, not the time of the note
    path = build(conn, home, [
        write("the acme ceo is dana", entry_id="new", cls="relationship", ts=at(30),
              data={"tags": ["acme-ceo"], "valid_from": "2024-01-01T00:00:00Z"}),
        write("acme ceo: goran (since 2019)", entry_id="old", cls="relationship", ts=at(10),
              data={"tags": ["acme-ceo"], "valid_from": "2019-01-01T00:00:00Z"}),
    ])
    conn.close()
    assert [h.entry_id for h in recall("who is the acme ceo goran dana", "ns-a", path, k=2)] == ["new", "old"]


def test_min_relevance_abstains_below_the_threshold_and_keeps_hits_above(conn, home):
    path = build(conn, home, [write("rotate the ledger credentials monthly", entry_id="x", ts=at(1)),
                              write("the cafeteria opens at nine", entry_id="y", ts=at(1))])
    conn.close()
    best = recall("ledger credentials", "ns-a", path, k=5)[0]
    assert best.entry_id == "x"
    for mode in ("raw", "curated"):
        assert recall("ledger credentials", "ns-a", path, k=5, mode=mode,
                      settings=RecallSettings(min_relevance=best.relevance * 1.01)) == []
        kept = recall("ledger credentials", "ns-a", path, k=5, mode=mode, settings=RecallSettings(min_relevance=best.relevance))
        assert [h.entry_id for h in kept] == ["x"]


def test_curated_hits_carry_their_own_rows_of_the_recall_view(conn, home):
    # entries of varied standing (fresh and old, proven and not, one with a failed check, one session
    # material), written in an order unlike the view's: each hit's tier, score, class and banners are
    # its entry's row of mart.recall_view, and only entries of the view come back
    lines = []
    for i in range(30):
        lines.append(write(f"ledger rule {i}: retry the ledger call {i % 4} times before paging", entry_id=f"e{(i * 7) % 30:02d}",
                           cls=("lesson", "config", "episodic")[i % 3], ts=at(1 + (i * 11) % 50),
                           data={"generality": (i % 5) / 2}))
    lines += [ev("memory.recall", {"query": "q", "results": [{"entry_id": f"e{i:02d}", "rank": 1}]}, ts=at(1))
              for i in range(0, 30, 4)]
    lines.append(ev("memory.check", {"entry_id": "e05", "status": "fail", "error_class": "assertion"}, ts=at(1)))
    path = build(conn, home, lines)
    view = {r[0]: r[1:] for r in conn.execute(
        "select entry_id, tier, score, class, banners from mart.recall_view where namespace = 'ns-a'").fetchall()}
    conn.close()
    assert len(view) < 30 and {t for t, *_ in view.values()} >= {"active"}  # some are left out of the view
    hits = recall("retry the ledger call times", "ns-a", path, k=30)
    assert hits and {h.entry_id for h in hits} <= set(view)
    assert all((h.tier, h.score, h.cls, h.banners) == view[h.entry_id][:3] + (list(view[h.entry_id][3] or []),)
               for h in hits)
    raw = recall("retry the ledger call times", "ns-a", path, k=30, mode="raw")
    assert {h.entry_id for h in raw} - set(view)  # raw returns the entries the view leaves out


def test_session_material_and_cases_say_what_they_are_once(conn, home):
    """A held entry's banner names what it fails, a case's that it is an episode; neither repeats the state
    (it read "session material: held as session material: fails durable") nor says "not recalled" of an
    entry recalled."""
    path = build(conn, home, [
        write("the staging cluster is slow today", entry_id="held", ts=at(1)),
        write("agent helped the user migrate the staging cluster", entry_id="case", cls="episodic", ts=at(1)),
    ])
    conn.close()
    banners = {h.entry_id: h.banners for h in recall("staging cluster", "ns-a", path, k=5)}
    assert banners == {"held": ["session material: fails durable"],
                       "case": ["case record: an episode, not a general rule"]}


LESSON = "always run the database migrations before deploying the ledger service"
PARAPHRASES = [LESSON, "lesson: always run database migrations before deploying the ledger service",
               "make sure to run the database migrations before deploying the ledger service",
               "always run the database migrations prior to deploying the ledger service"]


def restated_lesson(conn, home, extra=()):
    return build(conn, home, [write(t, entry_id=f"e{i}", ts=at(20 - i), run_id=f"r{i}") for i, t in enumerate(PARAPHRASES)]
                 + [write("deploy the ledger service after the database backup", entry_id="other", ts=at(5))] + list(extra))


def test_unmerged_restatements_are_recalled_once_and_say_so(conn, home):
    """One lesson written four times takes one place of the curated top k, with the other three in
    ``restatements`` and a banner; raw recall (no curation) returns all four."""
    path = restated_lesson(conn, home)
    [(cluster, status)] = conn.execute("select cluster_id, status from core.principle_proposals").fetchall()
    conn.close()
    assert status == "proposed"
    hits = recall("run the database migrations before deploying the ledger", "ns-a", path, k=3)
    assert [h.entry_id for h in hits][1:] == ["other"]  # the place the restatements took goes to another entry
    kept = hits[0]
    assert kept.entry_id in {"e0", "e1", "e2", "e3"}
    assert sorted(kept.restatements + [kept.entry_id]) == ["e0", "e1", "e2", "e3"]
    assert kept.banners == [f"4 recallable entries restate one lesson, not yet merged (cluster {cluster}): recalled "
                            f"once, with {', '.join(kept.restatements)} folded into it"]
    assert hits[1].restatements == []
    raw = recall("run the database migrations before deploying the ledger", "ns-a", path, k=5, mode="raw")
    assert {h.entry_id for h in raw} == {"e0", "e1", "e2", "e3", "other"}
    unfolded = recall("run the database migrations before deploying the ledger", "ns-a", path, k=5,
                      settings=RecallSettings(fold_restatements=False))
    assert {h.entry_id for h in unfolded} == {"e0", "e1", "e2", "e3", "other"}
    assert all(h.restatements == [] and not h.banners for h in unfolded)


def test_a_rejected_proposal_keeps_its_members_apart_in_recall(conn, home):
    path = restated_lesson(conn, home)
    [cluster] = conn.execute("select cluster_id from core.principle_proposals").fetchone()
    decisions.record(home.decisions, "ns-a", "cluster", cluster, "reject", "four rules, not one", "kim",
                     now=AS_OF - timedelta(hours=5))
    ingest.ingest_decisions(conn, home.decisions, CurationConfig())
    derive_night(conn, AS_OF)
    conn.execute("CHECKPOINT")
    conn.close()
    hits = recall("run the database migrations before deploying the ledger", "ns-a", path, k=5)
    assert {h.entry_id for h in hits} == {"e0", "e1", "e2", "e3", "other"}
    assert all(h.restatements == [] for h in hits)


def test_a_restatement_in_an_open_conflict_is_never_folded():
    """Its conflict stays in view: the contested entry keeps its own place."""
    from memcurator.recall import _fold

    def row(entry_id, cluster, conflicts=(), valid_from=None):
        return {"entry_id": entry_id, "cluster_id": cluster, "conflict_with": list(conflicts), "valid_from": valid_from}

    kept = _fold([row("a", "c1"), row("b", "c1", ["x"]), row("c", "c1"), row("x", None, ["b"]), row("d", "c2"),
                  row("e", None)])
    assert [(r["entry_id"], r["folded"]) for r in kept] == [("a", ["c"]), ("b", []), ("x", []), ("d", []), ("e", [])]


def test_versions_of_a_fact_valid_from_other_times_are_never_folded():
    """The previous and the current answer are near-duplicates but not restatements: both stay, and
    _later_validity_first orders them; a restatement of one version folds into it."""
    from memcurator.recall import _fold

    def row(entry_id, valid_from):
        return {"entry_id": entry_id, "cluster_id": "c1", "conflict_with": [], "valid_from": valid_from}

    kept = _fold([row("old", datetime(2019, 1, 1)), row("new", datetime(2024, 1, 1)), row("new again", datetime(2024, 1, 1))])
    assert [(r["entry_id"], r["folded"]) for r in kept] == [("old", []), ("new", ["new again"])]


def test_an_active_entry_never_folds_under_session_material():
    from memcurator.recall import _fold

    def row(entry_id, tier):
        return {"entry_id": entry_id, "cluster_id": "c1", "conflict_with": [], "valid_from": None, "tier": tier}

    kept = _fold([row("held", "session"), row("lesson", "active"), row("held again", "session"), row("again", "active")])
    assert [(r["entry_id"], r["folded"]) for r in kept] == [("held", ["held again"]), ("lesson", ["again"])]


def test_a_lesson_written_more_often_than_the_candidates_does_not_hide_the_entries_after_it(conn, home):
    """The blend re-ranks a pool of candidates; when the pool folds into fewer than k hits, recall takes a
    larger pool instead of returning fewer entries than there are."""
    path = restated_lesson(conn, home)
    conn.close()
    query = "run the database migrations before deploying the ledger"
    few = RecallSettings(candidates=2)  # the pool: two writings of the lesson
    hits = recall(query, "ns-a", path, k=2, settings=few)
    assert [h.entry_id for h in hits][1:] == ["other"] and len(hits[0].restatements) == 3
    assert [h.entry_id for h in recall(query, "ns-a", path, k=2)] == [h.entry_id for h in hits]
