"""Contradictions: declared and detected conflicts, likely-current ordering, banners, resolutions."""

from __future__ import annotations

from datetime import datetime, timedelta

from memcurator import changes, decisions, ingest, sql, store
from memcurator.config import CurationConfig
from memcurator.night import derive_night
from memcurator.recall import recall
from tests.conftest import ev, write, write_jsonl

AS_OF = datetime(2026, 11, 30)
CFG = CurationConfig()


def at(days_before: float) -> str:
    return (AS_OF - timedelta(days=days_before)).isoformat() + "Z"


def derive(conn, home, lines):
    write_jsonl(home.landing / f"f{len(list(home.landing.glob('*.jsonl')))}.jsonl", lines)
    ingest.ingest_landing(conn, home.landing, None, CFG)
    ingest.ingest_decisions(conn, home.decisions, CFG)
    derive_night(conn, AS_OF, CFG)


TIMEOUTS = [
    write("the ledger timeout is 30 seconds", entry_id="old", cls="config", ts=at(20), data={"tags": ["ledger", "timeout"]}),
    write("ledger timeout: 45 seconds", entry_id="new", cls="config", ts=at(10), data={"tags": ["ledger", "timeout"]}),
]


def test_undeclared_disagreement_overwrites_nothing_and_both_carry_the_conflict(conn, home):
    derive(conn, home, TIMEOUTS)
    kind, detector, status, current = conn.execute(
        "select kind, detector, status, likely_current from core.contradictions").fetchone()
    assert (kind, detector, status, current) == ("detected", "value", "open", "new")
    states = dict(conn.execute("select entry_id, state from core.entry_lifecycle").fetchall())
    assert states == {"old": "active", "new": "active"}
    banners = dict(conn.execute("select entry_id, banners from mart.recall_view").fetchall())
    assert all(any(b.startswith("CONFLICT (value)") for b in banners[e]) for e in ("old", "new"))
    worklist = dict(conn.execute("select entry_id, is_likely_current from core.contested_entries").fetchall())
    assert worklist == {"old": False, "new": True}
    # the worklist holds no copy of the texts: analysts read them through its view
    assert "text" not in {r[0] for r in conn.execute("describe core.contested_entries").fetchall()}
    store.create_analyst_views(conn, sql.load("analyst_views").split(";"))
    assert dict(conn.execute("select entry_id, text from analyst.contested_entries").fetchall()) == {
        "old": "the ledger timeout is 30 seconds", "new": "ledger timeout: 45 seconds"}
    # nor the hashes the nights keep to find what changed (they showed in two views)
    assert conn.execute("select table_name, column_name from information_schema.columns where table_schema = "
                        "'analyst' and column_name in ('entry_hash', 'row_hash', 'pair_hash')").fetchall() == []


def test_later_validity_beats_later_write(conn, home):
    # the note about the newer fact was written first: validity, not write time, decides
    derive(conn, home, [
        write("the ceo of acme is dana", entry_id="a", cls="relationship", ts=at(3),
              data={"tags": ["acme-ceo"], "valid_from": "2026-06-01T00:00:00Z"}),
        write("the ceo of acme is not dana", entry_id="b", cls="relationship", ts=at(2),
              data={"tags": ["acme-ceo"], "valid_from": "2019-01-01T00:00:00Z"}),
    ])
    assert conn.execute("select likely_current from core.contradictions").fetchone() == ("a",)


def test_recall_puts_the_likely_current_side_first(conn, home):
    derive(conn, home, TIMEOUTS + [ev("memory.recall", {"query": "ledger timeout", "results": [{"entry_id": "old", "rank": 1}]},
                                      ts=at(1))])
    conn.execute("CHECKPOINT")
    conn.close()
    hits = recall("ledger timeout", "ns-a", home.store, k=2)
    assert [h.entry_id for h in hits] == ["new", "old"]
    assert all(any(b.startswith("CONFLICT") for b in h.banners) for h in hits)


def test_trust_guarded_supersede_is_an_open_conflict(conn, home):
    derive(conn, home, [
        write("ledger retries three times", entry_id="x", ts=at(10), data={"trust": 0.9}),
        write("ledger retries five times", entry_id="y", ts=at(5), data={"trust": 0.3, "supersedes": "x", "reason": "guess"}),
    ])
    assert conn.execute("select kind, status from core.contradictions").fetchall() == [("trust_guarded", "open")]
    assert conn.execute("select count(*) from core.contested_entries").fetchone()[0] == 2


def test_explicit_supersede_settles_the_pair(conn, home):
    derive(conn, home, [TIMEOUTS[0], write("ledger timeout: 45 seconds", entry_id="new", cls="config", ts=at(10),
                                           data={"tags": ["ledger", "timeout"], "supersedes": "old", "reason": "raised"})])
    assert conn.execute("select kind, status from core.contradictions").fetchall() == [("explicit", "resolved_by_link")]
    assert conn.execute("select count(*) from core.contested_entries").fetchone()[0] == 0


def test_a_night_writes_the_links_that_changed_not_the_table(conn, home):
    linked = write("ledger timeout: 45 seconds", entry_id="new", cls="config", ts=at(10),
                   data={"tags": ["ledger", "timeout"], "supersedes": "old", "reason": "raised"})
    derive(conn, home, [TIMEOUTS[0], linked])
    oids = ("select table_name, table_oid from duckdb_tables() where schema_name = 'core' "
            "and table_name in ('supersede_links', 'contradictions', 'contested_entries') order by 1")
    table = "select table_oid from duckdb_tables() where schema_name = 'core' and table_name = 'supersede_links'"
    links = "select entry_id, successor_id, status from core.supersede_links order by all"
    kept, oid, before = conn.execute(oids).fetchall(), conn.execute(table).fetchone(), conn.execute(links).fetchall()
    derive(conn, home, [write("the queue drains hourly", entry_id="other", ts=at(2))])  # no link moves
    assert conn.execute(table).fetchone() == oid and conn.execute(links).fetchall() == before == [
        ("old", "new", "accepted")]
    assert conn.execute(oids).fetchall() == kept  # nor were the conflicts and the worklist written whole
    derive(conn, home, [write("ledger timeout: 60 seconds", entry_id="newer", cls="config", ts=at(1),
                              data={"tags": ["ledger", "timeout"], "supersedes": "new", "reason": "raised again"})])
    assert conn.execute(table).fetchone() == oid and conn.execute(links).fetchall() == [
        ("new", "newer", "accepted"), ("old", "new", "accepted")]


def test_a_link_that_closes_a_cycle_rejects_the_links_it_does_not_touch(conn, home):
    """The links are kept by entry: a night derives those of the entries it changed, and of every entry linked
    to them, since a link made or gone closes or opens a cycle through links it does not touch (b->c and c->d
    here: the new link d->a changes a alone)."""
    links = "select entry_id || '->' || successor_id, status from core.supersede_links"
    kept = "select derived_all from work.refreshes where table_name = 'core.supersede_links'"
    derive(conn, home, [write("a says x", entry_id="a", ts=at(10)),
                        write("b says y", entry_id="b", ts=at(9), data={"supersedes": "a", "reason": "r"}),
                        write("c says z", entry_id="c", ts=at(8), data={"supersedes": "b", "reason": "r"}),
                        write("d says w", entry_id="d", ts=at(7), data={"supersedes": "c", "reason": "r"})])
    assert dict(conn.execute(links).fetchall()) == {"a->b": "accepted", "b->c": "accepted", "c->d": "accepted"}
    derive(conn, home, [write("a says x again", entry_id="a", ts=at(2), data={"supersedes": "d", "reason": "r"})])
    assert conn.execute("select namespace, entry_id from work.changes where table_name = 'core.entries' "
                        "order by 2").fetchall() == [("ns-a", "a")]
    assert dict(conn.execute(links).fetchall()) == {"a->b": "cycle_rejected", "b->c": "cycle_rejected",
                                                    "c->d": "cycle_rejected", "d->a": "cycle_rejected"}
    assert conn.execute(kept).fetchone() == (False,)
    assert {r[0] for r in conn.execute("select state from core.entry_lifecycle").fetchall()} == {"active"}
    derive(conn, home, [write("a says x at last", entry_id="a", ts=at(1), data={"supersedes": "e", "reason": "r"})])
    assert dict(conn.execute(links).fetchall()) == {"a->b": "accepted", "b->c": "accepted", "c->d": "accepted",
                                                    "e->a": "dangling"}
    assert conn.execute(kept).fetchone() == (False,)
    kept_rows = sorted(conn.execute("select * from core.supersede_links").fetchall())
    changes.forget_table(conn, "core.supersede_links")
    derive(conn, home, [])
    assert conn.execute(kept).fetchone() == (True,)
    assert sorted(conn.execute("select * from core.supersede_links").fetchall()) == kept_rows


def test_a_verdict_goes_when_a_later_link_declares_its_pair(conn, home):
    """The verdict cache is kept by the night's scope: a check naming the correction links a pair the judge
    had read, and its verdict leaves the cache as a full derivation's would not have it."""
    derive(conn, home, [write("the ledger cache is warm at start", entry_id="a", ts=at(10), data={"tags": ["cache"]}),
                        write("the ledger cache is not warm at start", entry_id="b", ts=at(9),
                              data={"tags": ["cache"]})])
    assert conn.execute("select kind, detector from core.contradictions").fetchall() == [("detected", "negation")]
    verdicts = "select entry_a, entry_b, detector from core.judged_pairs"
    assert conn.execute(verdicts).fetchall() == [("a", "b", "negation")]
    derive(conn, home, [ev("memory.check", {"entry_id": "a", "status": "fail", "error_class": "assertion",
                                            "corrected_by": "b"}, ts=at(2), actor="test")])
    conflicts = conn.execute("select kind, status from core.contradictions").fetchall()
    assert conflicts == [("failed_check", "resolved_by_link")] and conn.execute(verdicts).fetchall() == []
    kept = "select derived_all from work.refreshes where table_name = 'core.contradictions'"
    assert conn.execute(kept).fetchone() == (False,)


def test_curator_resolutions(conn, home):
    derive(conn, home, TIMEOUTS)
    conflict = conn.execute("select conflict_id from core.contradictions").fetchone()[0]
    decisions.record(home.decisions, "ns-a", "conflict", conflict, "replace", "45 s since the incident", "kim",
                     now=AS_OF - timedelta(hours=3))
    derive(conn, home, [])
    assert dict(conn.execute("select entry_id, state from core.entry_lifecycle").fetchall()) == {
        "old": "superseded", "new": "active"}
    # the conflicts were kept, not derived whole: the decision alone brought its conflict's entries in
    assert conn.execute("select derived_all from work.refreshes where table_name = 'core.contradictions'").fetchone() == (
        False,)
    decisions.record(home.decisions, "ns-a", "conflict", conflict, "dismiss", "both are true in different regions",
                     "kim", now=AS_OF - timedelta(hours=2))
    derive(conn, home, [])
    assert dict(conn.execute("select entry_id, state from core.entry_lifecycle").fetchall()) == {
        "old": "active", "new": "active"}
    assert conn.execute("select count(*) from mart.recall_view where len(conflict_with) > 0").fetchone()[0] == 0
    actions = {r[0] for r in conn.execute("select action from core.curation_audit_log where entity_kind = 'conflict'").fetchall()}
    assert actions == {"resolve_conflict_dismiss"}


def test_conflicts_never_cross_namespaces(conn, home):
    derive(conn, home, [TIMEOUTS[0], write("ledger timeout: 45 seconds", entry_id="new", cls="config", ts=at(10),
                                           namespace="ns-b", data={"tags": ["ledger", "timeout"]})])
    assert conn.execute("select count(*) from core.contradictions").fetchone()[0] == 0


def test_new_entries_get_supersede_suggestions(conn, home):
    derive(conn, home, [TIMEOUTS[0],
                        write("ledger timeout: 45 seconds", entry_id="new", cls="config", ts=at(2),
                              data={"tags": ["ledger", "timeout"]}),
                        write("the billing timeout is 10 seconds", entry_id="other", cls="config", ts=at(30),
                              data={"tags": ["billing", "timeout"]})])
    rows = conn.execute("select entry_id, candidate_id, rank, basis from core.supersede_suggestions").fetchall()
    # each basis once, sorted: the detected conflict and the shared subject key
    assert rows and rows[0] == ("new", "old", 1, "conflict: value, same subject key")
    assert all(r[1] != "other" for r in rows)  # another subject is never suggested


def test_a_confirmed_suggestion_supersedes_in_one_action(conn, home):
    derive(conn, home, [TIMEOUTS[0], write("ledger timeout: 45 seconds", entry_id="new", cls="config", ts=at(2),
                                           data={"tags": ["ledger", "timeout"]})])
    assert conn.execute("select candidate_id from core.supersede_suggestions where entry_id = 'new'").fetchone() == ("old",)
    decisions.record(home.decisions, "ns-a", "link", "new", "confirm", "raised in November", "kim",
                     {"supersedes": "old"}, now=AS_OF - timedelta(hours=1))
    derive(conn, home, [])
    assert conn.execute("select state, rule from core.entry_lifecycle where entry_id = 'old'").fetchone() == (
        "superseded", "curator_confirmed_supersede")
    assert conn.execute("select kind, status from core.contradictions where kind = 'curator'").fetchall() == [
        ("curator", "resolved_by_link")]


def test_a_night_judges_only_new_or_changed_pairs(conn, home, monkeypatch):
    from memcurator import contradictions

    derive(conn, home, TIMEOUTS)
    assert conn.execute("select entry_a, entry_b, detector from core.judged_pairs").fetchall() == [("old", "new", "value")]
    judged = []
    real = contradictions._judge
    monkeypatch.setattr(contradictions, "_judge", lambda pairs, cfg: judged.append(pairs.height) or real(pairs, cfg))
    derive_night(conn, AS_OF, CFG)
    assert judged == [0]  # the same texts: the stored verdict stands
    assert conn.execute("select detector from core.contradictions").fetchall() == [("value",)]
    # a changed text is judged again, and the verdict follows the new text
    derive(conn, home, [write("the ledger timeout is 45 seconds", entry_id="old", cls="config", ts=at(5),
                              data={"tags": ["ledger", "timeout"]})])
    assert judged == [0, 1]
    assert conn.execute("select count(*) from core.contradictions").fetchone() == (0,)
    assert conn.execute("select detector from core.judged_pairs").fetchall() == [(None,)]
    # the writes parsed by other code (the same write ids may give other texts): judged again
    original = contradictions.sql.load
    monkeypatch.setattr(contradictions.sql, "load", lambda name: "-- another parse\n" + original(name)
                        if name == "memory_writes" else original(name))
    derive_night(conn, AS_OF, CFG)
    assert judged == [0, 1, 1]


def test_another_judge_version_judges_everything_again(conn, home, monkeypatch):
    from memcurator import contradictions

    derive(conn, home, TIMEOUTS)
    conn.execute("update core.judged_pairs set detector = null, evidence = null")  # a verdict of another judge
    changes.forget_table(conn, "core.contradictions")  # (kept, the conflicts would stand: no input changed)
    derive_night(conn, AS_OF, CFG)
    assert conn.execute("select count(*) from core.contradictions").fetchone() == (0,)  # stored verdicts are used
    monkeypatch.setattr(contradictions, "judge_version", lambda cfg: "rules:next")
    derive_night(conn, AS_OF, CFG)
    assert conn.execute("select detector from core.contradictions").fetchall() == [("value",)]
    assert conn.execute("select distinct judge from core.judged_pairs").fetchall() == [("rules:next",)]


def test_judging_in_passes_over_namespaces_gives_the_same_verdicts(conn, home):
    from dataclasses import replace
    from datetime import date

    from memcurator import contradictions, demo
    from memcurator.night import STEPS

    demo.generate(home.landing, home.truth, writes=3_000, namespaces=5, days=30, seed=4, end=date(2026, 11, 28))
    ingest.ingest_landing(conn, home.landing, None, CFG)
    for name, build in STEPS[:STEPS.index(("core.contradictions", contradictions.build_contradictions))]:
        build(conn, datetime(2026, 11, 29), CFG)
    verdicts = {}
    for per_pass in (10**9, 300):
        conn.execute("drop table if exists core.judged_pairs")  # judge every pair again
        contradictions.build_contradictions(conn, datetime(2026, 11, 29), replace(CFG, judge_pass_pairs=per_pass))
        verdicts[per_pass] = conn.execute("select * from core.judged_pairs order by all").fetchall()
    detected = [v for v in verdicts[300] if v[4] is not None]
    assert len(verdicts[300]) > 1_000 and len(detected) > 10 and verdicts[300] == verdicts[10**9]
