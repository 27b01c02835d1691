"""Lifecycle rules at their boundaries: each case says why it exists."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from memcurator import changes, ingest
from memcurator.config import CurationConfig
from memcurator.night import derive_night
from tests.conftest import ev, write, write_jsonl

AS_OF = datetime(2026, 11, 30)


def at(days_before: float) -> str:
    return (AS_OF - timedelta(days=days_before)).isoformat() + "Z"


def derive(conn, home, lines, cfg=CurationConfig(), observed=True):
    # one recall of an unrelated id makes recall observed in ns-a (decay needs telemetry)
    lines = lines + ([recall_event("unrelated", 400)] if observed else [])
    write_jsonl(home.landing / "f.jsonl", lines)
    ingest.ingest_landing(conn, home.landing, None, cfg)
    derive_night(conn, AS_OF, cfg)


def state(conn, entry_id, cols="state, rule"):
    return conn.execute(f"select {cols} from core.entry_lifecycle where entry_id = ?", [entry_id]).fetchone()


def recall_event(entry_id, days_before, namespace="ns-a"):
    return ev("memory.recall", {"query": "q", "results": [{"entry_id": entry_id, "rank": 1}]}, ts=at(days_before),
              namespace=namespace)


LESSON = "prefer small reversible changes to configuration"


RULE_CASES = [
    # idle exactly max_idle_days (30) and narrow: the boundary archives
    ([write(LESSON, entry_id="e", ts=at(30), data={"generality": 0.5})], ("archived", "decay")),
    # a second short of 30 idle days: still active
    ([write(LESSON, entry_id="e", ts=at(29.99999), data={"generality": 0.5})], ("active", "in_use")),
    # generality exactly min_generality (1): not below it, so never archived for being quiet
    ([write(LESSON, entry_id="e", ts=at(200), data={"generality": 1.0})], ("active", "in_use")),
    # just under min_generality and idle: archived
    ([write(LESSON, entry_id="e", ts=at(40), data={"generality": 0.99})], ("archived", "decay")),
    # AND, not OR: a broad principle quiet for 100 days stays
    ([write(LESSON, entry_id="e", ts=at(100), cls="principle", data={"generality": 3})], ("active", "in_use")),
    # AND, not OR: a narrow entry recalled 2 days ago stays
    ([write(LESSON, entry_id="e", ts=at(100), data={"generality": 0.2}), recall_event("e", 2)], ("active", "in_use")),
    # importance missing means 1.0: an old, broad entry is never archived on importance alone
    ([write(LESSON, entry_id="e", ts=at(300), data={"generality": 2})], ("active", "in_use")),
    # old AND unimportant: archived by retention
    ([write(LESSON, entry_id="e", ts=at(31), data={"generality": 2, "importance": 0.1})],
     ("archived", "retention_old_and_unimportant")),
    # unimportant but young: kept
    ([write(LESSON, entry_id="e", ts=at(5), data={"generality": 2, "importance": 0.1})], ("active", "in_use")),
    # identity facts are permanent whatever their idleness or generality
    ([write("the user's name is alice", entry_id="e", cls="identity", ts=at(400), data={"generality": 0})],
     ("active", "in_use")),
    # operational state expires after operational_ttl_days (7)
    ([write("deploy queue has 5 pending jobs", entry_id="e", cls="operational", ts=at(7))], ("expired", "operational_ttl")),
    ([write("deploy queue has 5 pending jobs", entry_id="e", cls="operational", ts=at(6.9))], ("held", "admission")),
    # validity is about the fact: valid_until in the past expires it, in the future does not
    ([write("billing is owned by team vega", entry_id="e", cls="relationship", ts=at(20),
            data={"valid_until": at(1)})], ("expired", "validity_ended")),
    ([write("billing is owned by team vega", entry_id="e", cls="relationship", ts=at(20),
            data={"valid_until": at(-10)})], ("active", "in_use")),
    # config facts are not expired by age: they ask to be re-verified
    ([write("the ledger timeout is 30 seconds", entry_id="e", cls="config", ts=at(90))], ("reverify", "reverify_age")),
    # ... and a recent passing check clears that
    ([write("the ledger timeout is 30 seconds", entry_id="e", cls="config", ts=at(90)),
      ev("memory.check", {"entry_id": "e", "status": "pass"}, ts=at(10))], ("active", "in_use")),
    # episodic records are readable as cases, not recalled as knowledge
    ([write("agent helped the user migrate the billing tables", entry_id="e", cls="episodic", ts=at(3))],
     ("case", "episodic_class")),
    ([write("agent helped the user migrate the billing tables", entry_id="e", cls="episodic", ts=at(91))],
     ("archived", "case_too_old")),
    ([write("agent helped the user migrate the billing tables", entry_id="e", cls="episodic", ts=at(3),
            data={"trust": 0.1})], ("archived", "case_low_trust")),
    # admission: a temporal deictic fails "durable"; a one-off run result fails "reusable"; chatter fails all
    ([write("the staging cluster is slow today", entry_id="e", ts=at(1))], ("held", "admission")),
    ([write("run r12345 failed on ticket #991", entry_id="e", ts=at(1))], ("held", "admission")),
    ([write("thanks!", entry_id="e", ts=at(1))], ("held", "admission")),
    # a lead-in like "learned today:" is not a statement about time
    ([write("learned today: pin the client version before upgrading", entry_id="e", ts=at(1))], ("active", "in_use")),
]


@pytest.mark.parametrize("lines, expected", RULE_CASES)
def test_lifecycle_rule(conn, home, lines, expected):
    derive(conn, home, lines)
    assert state(conn, "e") == expected


@pytest.mark.parametrize("lines, expected", RULE_CASES)
def test_the_date_alone_moves_an_entry_on_a_later_night(conn, home, lines, expected):
    """Derived first on the night of its last event, then at each next_change_at (when a date rule may
    move it) up to AS_OF, with nothing new: it ends in the state a derivation of AS_OF alone gives (a
    rule missing from next_change_at leaves it in its earlier state)."""
    lines = lines + [recall_event("unrelated", 400)]
    write_jsonl(home.landing / "f.jsonl", lines)
    ingest.ingest_landing(conn, home.landing, None, CurationConfig())
    last = max(datetime.fromisoformat(e["ts"]) for e in lines).replace(tzinfo=None)
    night = datetime.combine(last.date() + timedelta(days=1), datetime.min.time())
    for _ in range(10):
        derive_night(conn, night, CurationConfig())
        due = conn.execute("select min(next_change_at) from core.entry_lifecycle").fetchone()[0]
        if due is None or due >= AS_OF:
            break
        night = due + timedelta(minutes=1)
    derive_night(conn, AS_OF, CurationConfig())
    assert not conn.execute("select derived_all from work.refreshes where table_name = 'core.entry_lifecycle'").fetchone()[0]
    assert state(conn, "e") == expected


def test_episodic_over_count_limit_is_archived(conn, home):
    cfg = CurationConfig(case_max_count=2)
    derive(conn, home, [write(f"agent handled support case number {i} well", entry_id=f"c{i}", cls="episodic",
                              ts=at(10 - i)) for i in range(4)], cfg)
    states = dict(conn.execute("select entry_id, rule from core.entry_lifecycle").fetchall())
    assert states == {"c0": "case_over_count", "c1": "case_over_count", "c2": "episodic_class", "c3": "episodic_class"}


def test_restating_an_archived_entry_revives_it(conn, home):
    derive(conn, home, [write(LESSON, entry_id="e", ts=at(80), data={"generality": 0.5}),
                        write(LESSON, entry_id="e", ts=at(5), data={"generality": 0.5})])
    assert state(conn, "e", "state, revived_at") == ("active", AS_OF - timedelta(days=5))
    actions = conn.execute("select action from core.curation_audit_log where entity_id = 'e'").fetchall()
    assert ("revive",) in actions


def test_explicit_supersede_moves_the_old_entry_aside(conn, home):
    derive(conn, home, [
        write("ledger timeout is 30 seconds", entry_id="old", cls="config", ts=at(10), data={"trust": 0.9}),
        write("ledger timeout is 45 seconds", entry_id="new", cls="config", ts=at(5),
              data={"trust": 0.9, "supersedes": "old", "reason": "raised after incident"}),
    ])
    assert state(conn, "old", "state, successor_id") == ("superseded", "new")
    assert state(conn, "new") == ("active", "in_use")


def test_trust_guard_keeps_both_entries(conn, home):
    # 0.5 < 0.8 x 0.9: the low-trust write cannot replace the trusted one
    derive(conn, home, [
        write("ledger timeout is 30 seconds", entry_id="old", cls="config", ts=at(10), data={"trust": 0.9}),
        write("ledger timeout is 45 seconds", entry_id="new", cls="config", ts=at(5),
              data={"trust": 0.5, "supersedes": "old", "reason": "i think it changed"}),
    ])
    assert state(conn, "old")[0] == "active"
    assert conn.execute("select status from core.supersede_links").fetchone() == ("trust_guarded",)


def test_trust_guard_boundary_accepts_exactly_the_ratio(conn, home):
    # 0.8 x 1.0 = 0.8: a write at exactly the ratio may supersede
    derive(conn, home, [
        write("ledger timeout is 30 seconds", entry_id="old", cls="config", ts=at(10), data={"trust": 1.0}),
        write("ledger timeout is 45 seconds", entry_id="new", cls="config", ts=at(5),
              data={"trust": 0.8, "supersedes": "old", "reason": "changed"}),
    ])
    assert conn.execute("select status from core.supersede_links").fetchone() == ("accepted",)


def test_supersede_cycle_is_rejected_and_nothing_is_replaced(conn, home):
    derive(conn, home, [
        write("a says x", entry_id="a", ts=at(10), data={"supersedes": "b", "reason": "r"}),
        write("b says y", entry_id="b", ts=at(9), data={"supersedes": "a", "reason": "r"}),
        write("c says z", entry_id="c", ts=at(8), data={"supersedes": "a", "reason": "r"}),
    ])
    links = dict(conn.execute("select entry_id || '->' || successor_id, status from core.supersede_links").fetchall())
    assert links == {"b->a": "cycle_rejected", "a->b": "cycle_rejected", "a->c": "accepted"}
    assert state(conn, "b")[0] == "active"


def test_check_naming_the_correction_writes_the_link(conn, home):
    derive(conn, home, [
        write("ledger timeout is 30 seconds", entry_id="old", cls="config", ts=at(10)),
        write("ledger timeout is 45 seconds", entry_id="fixed", cls="config", ts=at(5)),
        ev("memory.check", {"entry_id": "old", "status": "fail", "error_class": "assertion", "corrected_by": "fixed"},
           ts=at(4), actor="test"),
    ])
    assert state(conn, "old") == ("superseded", "check_supersede")


def test_agent_whose_trust_falls_gets_its_entries_flagged(conn, home):
    lines = [write(f"lesson number {i} about configuration changes", entry_id=f"e{i}", ts=at(10),
                   agent_id="shaky") for i in range(3)]
    lines += [ev("memory.check", {"entry_id": f"e{i}", "status": "fail", "error_class": "assertion"}, ts=at(2))
              for i in range(3)]
    lines += [write("a lesson from a reliable agent about reviews", entry_id="good", ts=at(10), agent_id="steady")]
    derive(conn, home, lines)
    flagged = dict(conn.execute("select entry_id, flagged_for_review from core.entry_lifecycle").fetchall())
    assert flagged == {"e0": True, "e1": True, "e2": True, "good": False}


def test_generality_rule_on_examples(conn, home):
    derive(conn, home, [
        write("always validate the schema before writing events", entry_id="imperative", ts=at(1)),
        write("the deploy of build 48213 at 14:02 touched /srv/app/config.yaml", entry_id="specific", ts=at(1)),
        write("prefer idempotent operations", entry_id="principle", cls="principle", ts=at(1)),
        write("anything", entry_id="declared", ts=at(1), data={"generality": 2.5}),
    ])
    g = dict(conn.execute("select entry_id, generality from core.entry_lifecycle").fetchall())
    assert g["declared"] == 2.5  # a declared generality is never overridden
    assert g["principle"] > g["imperative"] > g["specific"]  # principles > imperative lessons > specifics
    assert g["specific"] < 1.0  # ids, times and paths push it under the decay threshold


def test_no_recall_telemetry_means_no_decay(conn, home):
    # a namespace with no recall events gives no evidence of disuse: the narrow, old entry stays
    derive(conn, home, [write(LESSON, entry_id="e", ts=at(100), namespace="imported", data={"generality": 0.2}),
                        write(LESSON, entry_id="f", ts=at(100), data={"generality": 0.2})])
    states = dict(conn.execute("select entry_id, state from core.entry_lifecycle").fetchall())
    assert states == {"e": "active", "f": "archived"}


def test_text_features_are_read_once_per_version_and_equal_a_fresh_reading(conn, home):
    from memcurator.lifecycle import refresh_entry_text_features

    derive(conn, home, [
        write("always pin the base image digest", entry_id="rule", ts=at(30)),
        write("the deploy queue is down right now", entry_id="state", cls="operational", ts=at(2)),
        write("ok thanks", entry_id="chat", ts=at(1)),
    ])
    features = "select * from core.entry_text_features order by entry_id"
    assert conn.execute("select entry_id, is_imperative, has_operational_state, is_chatter "
                        "from core.entry_text_features order by entry_id").fetchall() == [
        ("chat", False, False, True), ("rule", True, False, False), ("state", False, True, False)]
    # a kept row is not read again: mark it, and the mark survives a night with the same text
    conn.execute("update core.entry_text_features set specifics = 99 where entry_id = 'rule'")
    refresh_entry_text_features(conn, AS_OF)
    assert conn.execute("select specifics from core.entry_text_features where entry_id = 'rule'").fetchone() == (99,)
    conn.execute("update core.entry_text_features set specifics = 0 where entry_id = 'rule'")
    # a new version (a new write, so a new last_event_id) is read again and a removed entry's row goes,
    # as a fresh reading gives: the entries' stage records both as changed
    conn.execute("update core.entries set norm_text = 'tonight the canary is at 5 %', last_event_id = 'a-later-write' "
                 "where entry_id = 'rule'")
    conn.execute("delete from core.entries where entry_id = 'chat'")
    changes.record(conn, "core.entries", changes.last_refresh(conn, "core.entries").version, AS_OF, {},
                   "select 'ns-a' as namespace, unnest(['rule', 'chat']) as entry_id")
    refresh_entry_text_features(conn, AS_OF)
    assert not changes.last_refresh(conn, "core.entry_text_features").derived_all
    kept = conn.execute(features).fetchall()
    conn.execute("update work.refreshes set version = 'another' where table_name = 'core.entry_text_features'")
    refresh_entry_text_features(conn, AS_OF)
    assert changes.last_refresh(conn, "core.entry_text_features").derived_all
    assert conn.execute(features).fetchall() == kept
    assert [r[1] for r in kept] == ["rule", "state"] and kept[0][5] is True  # has_deictic ("tonight")


def test_text_features_read_as_the_plain_patterns_do():
    """The features' query reads the start of a text for the patterns anchored there, runs the other
    patterns only on a text with a marker, strips a lead-in only where there is one and counts spaces for
    "under three words": the same verdicts as each pattern over the whole text, at the edges of each
    shortcut."""
    import re

    import duckdb

    from memcurator import sql
    from memcurator.lifecycle import IMPERATIVE, IMPERATIVE_READS, LEAD_IN, LEAD_IN_READS, PATTERNS
    from memcurator.store import params_used

    # the longest match and the character after it fit in what is read (a normalised text has single spaces)
    assert re._parser.parse(IMPERATIVE).getwidth()[1] < IMPERATIVE_READS
    assert re._parser.parse(LEAD_IN.replace(r"\s*", r"\s?")).getwidth()[1] < LEAD_IN_READS
    texts = ["learned today: make sure the cache is warm", "learned today: make surely not", "learned today: validate",
             "x" * 40 + " always pin", "always", "don't retry blindly", "learned today: pin versions",
             "learned today pin versions", "note to self - this week we ship", "tip:today", "lesson: " + "y " * 20 + "today",
             "", "ok", "ok thanks", "two words", "three words here", "a  b", "héllo wörld", " x", "x ",
             "run r42 failed on ticket #7 at 10:30 on 2026-01-02 in /tmp/build/out deadbeef01",
             "the deploy queue is down right now", "ticket 12 closed", "commit deadbeef01 is bad", "canary is at 5"]
    conn = duckdb.connect()
    conn.execute("create schema core")
    conn.execute("create temp table stage_hashes (entry_hash ubigint)")  # read when $all is false
    conn.execute("create table core.entries as select 'ns' as namespace, 'e' || i as entry_id, 'w' || i as last_event_id, "
                 "t as norm_text, 0::ubigint as entry_hash from (select unnest($t) as t, generate_subscripts($t, 1) as i)",
                 {"t": texts})
    query = sql.load("entry_text_features")
    got = conn.execute(f"select * from ({query}) order by entry_id", params_used(query, {**PATTERNS, "all": True})).fetchall()
    plain = conn.execute(
        """select namespace, entry_id, last_event_id, regexp_matches(norm_text, $imperative),
                  least(len(regexp_extract_all(norm_text, $specific)), 5),
                  regexp_matches(regexp_replace(norm_text, $lead_in, ''), $deictic),
                  regexp_matches(norm_text, $operational_state), regexp_matches(norm_text, $one_off),
                  regexp_matches(norm_text, $chatter) or len(string_split(norm_text, ' ')) < 3
           from core.entries order by entry_id""",
        {k: PATTERNS[k] for k in ("imperative", "specific", "lead_in", "deictic", "operational_state", "one_off",
                                  "chatter")}).fetchall()
    assert got == plain
    # the edges are met: a match at the longest prefix, a lead-in that hides "today", chatter by length
    verdicts = {texts[int(row[1][1:]) - 1]: row[3:] for row in got}
    assert verdicts["learned today: make sure the cache is warm"][0] is True
    assert verdicts["learned today: make surely not"][0] is False
    assert verdicts["learned today: pin versions"][2] is False and verdicts["learned today pin versions"][2] is True
    assert verdicts["two words"][5] is True and verdicts["three words here"][5] is False
    assert verdicts["the deploy queue is down right now"][2:4] == (True, True)
    assert verdicts["ticket 12 closed"][1:5] == (0, False, False, True)
    assert verdicts["commit deadbeef01 is bad"][1] == 1
