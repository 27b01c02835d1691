"""Entries and usage: the log folded per entry, as of an injected date."""

from __future__ import annotations

from datetime import datetime

import pytest

from memcurator import changes, entries, ingest, nearindex
from memcurator.config import CurationConfig
from tests.conftest import ev, write, write_jsonl

AS_OF = datetime(2026, 11, 10)


def build(conn, home, lines, as_of=AS_OF):
    write_jsonl(home.landing / f"f{len(list(home.landing.iterdir()))}.jsonl", lines)
    ingest.ingest_landing(conn, home.landing, None, CurationConfig())
    for step in (entries.build_memory_writes, entries.build_entries, entries.build_recall_results,
                 entries.build_checks, entries.build_runs, entries.build_entry_usage):
        step(conn, as_of)


def row(conn, table, entry_id, cols):
    return conn.execute(f"select {cols} from {table} where entry_id = ?", [entry_id]).fetchone()


def test_latest_write_is_the_current_version_with_full_provenance(conn, home):
    build(conn, home, [
        write("v1", entry_id="e", ts="2026-11-01T00:00:00Z", run_id="r1", agent_id="a1"),
        write("v2", entry_id="e", ts="2026-11-03T00:00:00Z", run_id="r2", agent_id="a2", data={"trust": 0.5}),
        write("v3", entry_id="e", ts="2026-11-02T00:00:00Z", run_id="r2", agent_id="a1"),
    ])
    assert row(conn, "core.entries", "e",
               "text, trust, first_written_at, last_written_at, version_count, distinct_runs, distinct_agents, writer_agents") == (
        "v2", 0.5, datetime(2026, 11, 1), datetime(2026, 11, 3), 3, 2, 2, ["a1", "a2"])


def test_events_at_or_after_as_of_are_invisible(conn, home):
    # as_of is an exclusive bound: a write exactly at as_of belongs to the next night
    build(conn, home, [write("old", entry_id="e", ts="2026-11-09T23:59:59Z"),
                       write("new", entry_id="e", ts="2026-11-10T00:00:00Z")])
    assert row(conn, "core.entries", "e", "text, version_count") == ("old", 1)


def test_past_night_can_be_rebuilt_as_it_stood(conn, home):
    lines = [write("a", entry_id="a", ts="2026-11-01T00:00:00Z"), write("b", entry_id="b", ts="2026-11-05T00:00:00Z")]
    build(conn, home, lines, as_of=datetime(2026, 11, 3))
    assert conn.execute("select entry_id from core.entries").fetchall() == [("a",)]
    entries.build_memory_writes(conn, datetime(2026, 11, 6))
    entries.build_entries(conn, datetime(2026, 11, 6))
    assert conn.execute("select entry_id from core.entries order by 1").fetchall() == [("a",), ("b",)]


def test_entry_id_is_derived_from_namespace_and_normalised_text(conn, home):
    # the same text with other spacing/case in one namespace is one entry; another namespace is another
    build(conn, home, [write("Pin  the Versions"), write("pin the versions "),
                       write("pin the versions", namespace="ns-b")])
    ids = conn.execute("select namespace, entry_id, version_count from core.entries order by 1").fetchall()
    assert len(ids) == 2 and ids[0][2] == 2 and ids[0][1] != ids[1][1]
    assert all(i[1].startswith("m_") for i in ids)


def test_explicit_supersede_links_both_ways(conn, home):
    build(conn, home, [write("timeout 30s", entry_id="old", ts="2026-11-01T00:00:00Z"),
                       write("timeout 45s", entry_id="new", ts="2026-11-02T00:00:00Z",
                             data={"supersedes": "old", "reason": "raised after incident"})])
    successor = row(conn, "core.entry_successors", "old", "superseded_by, superseded_reason")
    assert successor == ("new", "raised after incident")
    assert row(conn, "core.entries", "new", "supersedes, supersede_reason") == ("old", "raised after incident")


def test_usage_counts_recalls_injections_and_only_passing_checks_as_proof(conn, home):
    build(conn, home, [
        write("lesson", entry_id="e"),
        ev("memory.recall", {"query": "q", "results": [{"entry_id": "e", "rank": 1, "injected": True}]},
           ts="2026-11-03T00:00:00Z", run_id="r1"),
        ev("memory.recall", {"query": "q", "results": [{"entry_id": "e", "rank": 2}]},
           ts="2026-11-04T00:00:00Z", run_id="r2"),
        ev("memory.check", {"entry_id": "e", "status": "pass"}, ts="2026-11-05T00:00:00Z"),
        ev("memory.check", {"entry_id": "e", "status": "fail", "error_class": "transient"}, ts="2026-11-07T00:00:00Z"),
        ev("memory.check", {"entry_id": "e", "status": "fail", "error_class": "assertion"}, ts="2026-11-06T00:00:00Z"),
    ])
    assert row(conn, "core.entry_usage", "e",
               "recall_count, injected_count, distinct_recall_runs, last_recalled_at, proven_count, "
               "failed_assertions, transient_failures, last_verified_at, last_check_status") == (
        2, 1, 2, datetime(2026, 11, 4), 1, 1, 1, datetime(2026, 11, 5), "fail")  # transient is not the last word


@pytest.mark.parametrize("outcome", ["success", "failure", "aborted", "unknown"])
def test_runs_pair_start_and_end(conn, home, outcome):
    build(conn, home, [ev("run.start", {"task": "t1"}, run_id="r1", agent_id="a", ts="2026-11-01T00:00:00Z"),
                       ev("run.end", {"outcome": outcome}, run_id="r1", agent_id="a", ts="2026-11-01T00:05:00Z")])
    assert conn.execute("select run_id, outcome, task from core.runs").fetchall() == [("r1", outcome, "t1")]


def test_tables_are_identical_when_rebuilt(conn, home):
    build(conn, home, [write(f"lesson {i}", ts=f"2026-11-0{1 + i % 8}T00:00:00Z") for i in range(30)])
    first = conn.execute("select * from core.entries").fetchall()
    entries.build_memory_writes(conn, AS_OF)
    entries.build_entries(conn, AS_OF)
    assert conn.execute("select * from core.entries").fetchall() == first


def _full_parse(conn, as_of) -> list:
    """memory_writes as a parse of every write gives it (the carried-over rows ignored)."""
    conn.execute("comment on table core.memory_writes is null")
    entries.build_memory_writes(conn, as_of)
    return conn.execute("select * from core.memory_writes order by all").fetchall()


def test_writes_are_flattened_once_and_the_table_is_the_full_parse(conn, home):
    days = [f"2026-11-0{d}T10:00:00Z" for d in range(1, 8)]
    build(conn, home, [write(f"note {k} about   retries", entry_id=f"e{k}", ts=ts, data={"tags": ["b", "a", "b"]})
                       for k, ts in enumerate(days)], as_of=datetime(2026, 11, 4))
    for as_of in (datetime(2026, 11, 6), datetime(2026, 11, 3), datetime(2026, 11, 8), datetime(2026, 11, 8)):
        entries.build_memory_writes(conn, as_of)
        carried = conn.execute("select * from core.memory_writes order by all").fetchall()
        assert carried == _full_parse(conn, as_of) and carried
        assert max(r[3] for r in carried) < as_of  # ts: the writes before the night only
    # a write that leaves the log (a purge) leaves the table; a write landed late for an old day is parsed
    conn.execute("delete from raw.events where type = 'memory.write' and json_extract_string(data, '$.entry_id') = 'e2'")
    build(conn, home, [write("late note", entry_id="late", ts="2026-11-02T12:00:00Z")], as_of=datetime(2026, 11, 8))
    got = {r[0] for r in conn.execute("select entry_id from core.memory_writes").fetchall()}
    assert "e2" not in got and "late" in got
    assert conn.execute("select * from core.memory_writes order by all").fetchall() == _full_parse(conn, datetime(2026, 11, 8))


def test_writes_written_by_another_path_are_read_against_the_log_again(conn, home):
    """After a merge of shards wrote the table (here: for an earlier night, its reads of the log left as
    they were), changes.forget makes the next night read the log against the rows it finds."""
    days = [f"2026-11-0{d}T10:00:00Z" for d in range(1, 8)]
    build(conn, home, [write(f"note {k}", entry_id=f"e{k}", ts=ts) for k, ts in enumerate(days)], as_of=datetime(2026, 11, 6))
    reads = conn.execute("select * from work.event_reads").fetchall()
    entries.build_memory_writes(conn, datetime(2026, 11, 3))  # what the merge wrote
    conn.execute("delete from work.event_reads")
    conn.executemany("insert into work.event_reads values (?, ?, ?, ?)", reads)
    changes.forget(conn)
    entries.build_memory_writes(conn, datetime(2026, 11, 8))
    assert conn.execute("select * from core.memory_writes order by all").fetchall() == _full_parse(conn, datetime(2026, 11, 8))


def test_writes_are_parsed_again_when_the_query_changes(conn, home, monkeypatch):
    build(conn, home, [write("a note", entry_id="e1", ts="2026-11-01T10:00:00Z")])
    conn.execute("update core.memory_writes set text = 'stale'")  # what an older query might have produced
    entries.build_memory_writes(conn, AS_OF)
    assert row(conn, "core.memory_writes", "e1", "text") == ("stale",), "same query: the row is carried over"
    original = entries.sql.load
    monkeypatch.setattr(entries.sql, "load", lambda name: "-- changed\n" + original(name))
    entries.build_memory_writes(conn, AS_OF)
    assert row(conn, "core.memory_writes", "e1", "text") == ("a note",)


def _full_fold(conn, as_of) -> list:
    conn.execute("update core.entry_sources set version = 'another fold'")
    entries.build_entries(conn, as_of)
    return conn.execute("select * from core.entries order by all").fetchall()


def _night(conn, as_of) -> list:
    entries.build_memory_writes(conn, as_of)
    entries.build_entries(conn, as_of)
    got = conn.execute("select * from core.entries order by all").fetchall()
    sources = conn.execute("select * from core.entry_sources order by all").fetchall()
    assert got == _full_fold(conn, as_of), "the refold differs from a full fold"
    assert sources == conn.execute("select * from core.entry_sources order by all").fetchall()
    return got


def test_only_entries_whose_writes_changed_are_folded_again_and_the_table_is_the_full_fold(conn, home):
    build(conn, home, [
        write("old advice", entry_id="e1", ts="2026-11-01T10:00:00Z"),
        write("new advice", entry_id="e2", ts="2026-11-02T10:00:00Z", data={"supersedes": "e1", "reason": "newer"}),
        write("a note", entry_id="e5", ts="2026-11-02T11:00:00Z"),
    ], as_of=datetime(2026, 11, 3))
    superseded_by = lambda: row(conn, "core.entry_successors", "e1", "superseded_by")[0]  # noqa: E731
    assert superseded_by() == "e2"
    # e2 is rewritten without the link; e4 and then e3 supersede e1; e5 gets a second version
    build(conn, home, [
        write("new advice, reworded", entry_id="e2", ts="2026-11-04T10:00:00Z"),
        write("advice four", entry_id="e4", ts="2026-11-04T11:00:00Z", data={"supersedes": "e1", "reason": "r4"}),
        write("advice three", entry_id="e3", ts="2026-11-05T10:00:00Z", data={"supersedes": "e1", "reason": "r3"}),
        write("a note, again", entry_id="e5", ts="2026-11-05T11:00:00Z"),
    ], as_of=datetime(2026, 11, 4, 12))
    assert _night(conn, datetime(2026, 11, 4, 12)) and superseded_by() == "e4"
    assert _night(conn, datetime(2026, 11, 6)) and superseded_by() == "e3"
    assert _night(conn, datetime(2026, 11, 3)) and superseded_by() == "e2", "a backfill folds the earlier night"
    assert _night(conn, datetime(2026, 11, 6)) and superseded_by() == "e3"
    # e1 itself gets a new version: it is folded again and keeps its (unchanged) successor
    build(conn, home, [write("old advice, restated", entry_id="e1", ts="2026-11-05T12:00:00Z")],
          as_of=datetime(2026, 11, 6))
    assert _night(conn, datetime(2026, 11, 6)) and superseded_by() == "e3"
    conn.execute("delete from raw.events where json_extract_string(data, '$.entry_id') = 'e3'")  # a purge
    assert _night(conn, datetime(2026, 11, 6)) and superseded_by() == "e4"
    assert row(conn, "core.entries", "e3", "text") is None
    assert conn.execute("select as_of from work.refreshes where table_name = 'core.entries'").fetchall() == [
        (datetime(2026, 11, 6),)]


def test_an_entry_a_new_write_supersedes_keeps_its_row(conn, home):
    """Who supersedes an entry is a view over the current versions: the entry superseded is not folded again
    (its current version, an old write anywhere in core.memory_writes, is not read) and keeps its row."""
    build(conn, home, [write("timeout 30s", entry_id="old", ts="2026-11-01T00:00:00Z")], as_of=datetime(2026, 11, 2))
    stored = conn.execute("select rowid, * from core.entries where entry_id = 'old'").fetchone()
    build(conn, home, [write("timeout 45s", entry_id="new", ts="2026-11-02T01:00:00Z",
                             data={"supersedes": "old", "reason": "raised"})], as_of=datetime(2026, 11, 3))
    assert conn.execute("select entry_id from work.changes where table_name = 'core.entries'").fetchall() == [("new",)]
    assert conn.execute("select rowid, * from core.entries where entry_id = 'old'").fetchone() == stored
    assert row(conn, "core.entry_successors", "old", "superseded_by, superseded_at") == (
        "new", datetime(2026, 11, 2, 1))


def test_a_full_fold_in_passes_of_namespaces_is_the_fold_in_one_pass(conn, home, monkeypatch):
    lines = []
    for n in range(12):
        ns = f"team-{n}"
        lines += [write(f"advice {n}", entry_id="a", namespace=ns, ts="2026-11-01T10:00:00Z", agent_id="x"),
                  write(f"advice {n} again", entry_id="a", namespace=ns, ts="2026-11-02T10:00:00Z", agent_id="y"),
                  write(f"better advice {n}", entry_id="b", namespace=ns, ts="2026-11-03T10:00:00Z",
                        data={"supersedes": "a", "reason": "newer"})]
    build(conn, home, lines)
    one_pass = _full_fold(conn, AS_OF)
    monkeypatch.setattr(entries, "FOLD_PASS_WRITES", 7)  # 36 writes: 6 passes
    passes = conn.execute("select count(distinct hash(namespace) % 6) from core.memory_writes").fetchone()[0]
    assert passes > 3, "the namespaces spread over several passes"
    assert _full_fold(conn, AS_OF) == one_pass
    assert len(one_pass) == 24 and {r for r, in conn.execute(
        "select superseded_by from core.entry_successors where entry_id = 'a'").fetchall()} == {"b"}


def test_another_parse_of_the_writes_is_folded_and_read_again(conn, home, monkeypatch):
    from memcurator import lifecycle

    build(conn, home, [write("always retry the ledger call twice", entry_id="e1", ts="2026-11-01T10:00:00Z")])
    lifecycle.refresh_entry_text_features(conn, AS_OF)
    chatter = lambda: conn.execute("select is_chatter from core.entry_text_features").fetchone()[0]  # noqa: E731
    assert chatter() is False
    original = entries.sql.load
    # a parse that reads another text from the same events: the entry's fold and the rules' reading of
    # its text (both kept per write event) follow it
    monkeypatch.setattr(entries.sql, "load", lambda name: original(name).replace(
        "select *, v[1] as text from writes", "select *, 'thanks' as text from writes"))
    entries.build_memory_writes(conn, AS_OF)
    entries.build_entries(conn, AS_OF)
    lifecycle.refresh_entry_text_features(conn, AS_OF)
    assert row(conn, "core.entries", "e1", "text") == ("thanks",)
    assert chatter() is True


def test_the_normalised_text_folds_case_whitespace_runs_and_space_separators_at_the_ends(conn, home):
    # sql/norm_text.sql, read for the entry ids memory_writes derives and for each entry's current version
    texts = {
        "a": "\u00a0Retry  the Ledger\tCALL\n",    # no-break space trimmed; tab and newline runs become a space
        "b": "plain text, one space each",        # nothing to do: the text as it is
        "c": "Ideographic\u3000space inside\u3000",  # a separator inside stays; at the end it goes
        "d": " \t lead run",                      # the space trimmed first, then the tab run is one space
    }
    build(conn, home, [write(t, entry_id=k, ts="2026-11-01T00:00:00Z") for k, t in texts.items()]
          + [write("Retry the  LEDGER call", ts="2026-11-01T00:00:00Z"),   # no entry id: derived from the
             write("retry the ledger call", ts="2026-11-02T00:00:00Z")])   # normalised text, so one entry
    got = dict(conn.execute("select entry_id, norm_text from core.entries where entry_id in ('a', 'b', 'c', 'd')").fetchall())
    assert got == {"a": "retry the ledger call ", "b": "plain text, one space each",
                   "c": "ideographic\u3000space inside", "d": " lead run"}
    derived = conn.execute("select norm_text, version_count from core.entries where entry_id like 'm\\_%' escape '\\'").fetchall()
    assert derived == [("retry the ledger call", 2)]
    # the near-duplicate stage normalises the stored texts of the entries it reads (nearindex.with_texts)
    docs = conn.execute("select row_number() over (order by entry_id) as doc, namespace, entry_id from core.entries "
                        "where entry_id in ('a', 'b', 'c', 'd')").pl()
    read = nearindex.with_texts(conn, docs)
    assert dict(zip(read["entry_id"], read["norm_text"])) == got


def test_the_entries_folded_decide_whether_the_compiled_loops_load_ahead(conn, home, monkeypatch):
    """core.entries tells text.load_compiled_ahead how many entries it folded: every entry on a full fold,
    the refolded ones on a night after."""
    asked = []
    monkeypatch.setattr(entries.text, "load_compiled_ahead", asked.append)
    build(conn, home, [write("advice one", entry_id="e1"), write("advice two", entry_id="e2"),
                       write("advice three", entry_id="e3")], as_of=datetime(2026, 11, 3))
    build(conn, home, [write("advice two, reworded", entry_id="e2", ts="2026-11-03T10:00:00Z")],
          as_of=datetime(2026, 11, 4))
    assert asked == [3, 1]
