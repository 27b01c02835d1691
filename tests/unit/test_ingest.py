"""Ingest: every bad line quarantined with a precise reason, nothing valid lost, idempotent."""

from __future__ import annotations

import gzip
from datetime import datetime, timedelta, timezone

import duckdb
import orjson
import pyarrow.parquet as pq
import pytest

from memcurator import bench, ingest, night, store
from memcurator.config import CurationConfig
from tests.conftest import ev, string_compressions, write, write_jsonl

CFG = CurationConfig()
GOOD = write("always pin dagster packages to one release", entry_id="pin-deps")


def quarantine(conn) -> list[tuple]:
    return conn.execute("select line_no, reason, detail from raw.quarantine order by line_no").fetchall()


def run_ingest(conn, home, cfg=CFG):
    return ingest.ingest_landing(conn, home.landing, home.lake, cfg)


@pytest.mark.parametrize(
    "line, reason, detail_part",
    [
        # truncated JSON, the commonest corruption of an appended log
        ('{"id": "x", "type": "memory.write", "ts": ', "invalid_json", "not valid JSON"),
        # valid JSON that is not an event object
        ("[1, 2, 3]", "not_an_object", "object"),
        # each required envelope field, missing
        ({"type": "run.start", "ts": "2026-11-02T10:00:00Z", "namespace": "a", "data": {}}, "missing_field", "id"),
        ({"id": "e", "ts": "2026-11-02T10:00:00Z", "namespace": "a", "data": {}}, "missing_field", "type"),
        ({"id": "e", "type": "run.start", "namespace": "a", "data": {}}, "missing_field", "ts"),
        ({"id": "e", "type": "run.start", "ts": "2026-11-02T10:00:00Z", "data": {}}, "missing_field", "namespace"),
        ({"id": "e", "type": "run.start", "ts": "2026-11-02T10:00:00Z", "namespace": "a"}, "missing_field", "data"),
        # wrong types where a string is expected
        ({"id": 7, "type": "run.start", "ts": "2026-11-02T10:00:00Z", "namespace": "a", "data": {}}, "wrong_type", "id"),
        (ev("memory.write", {"text": 42, "class": "lesson"}), "wrong_type", "data.text"),
        # an event type nobody defined
        (ev("memory.teleport", {}), "unknown_type", "memory.teleport"),
        # timestamps: unparseable, far past, far future
        (ev("run.start", {}, ts="yesterday"), "invalid_timestamp", "ts"),
        (ev("run.start", {}, ts="1970-01-01T00:00:00Z"), "timestamp_out_of_range", "ts outside"),
        (ev("run.start", {}, ts="9999-01-01T00:00:00Z"), "timestamp_out_of_range", "ts outside"),
        # ids with SQL metacharacters or path separators
        (ev("run.start", {}, namespace="a'; drop table raw.events; --"), "invalid_id", "namespace"),
        (ev("run.start", {}, namespace="../../etc"), "invalid_id", "namespace"),
        (write("x", entry_id="a/b"), "invalid_id", "data.entry_id"),
        # write payload rules
        (write("   "), "empty_text", "blank"),
        (ev("memory.write", {"text": "x", "class": "gossip"}), "invalid_value", "data.class"),
        (write("x", data={"importance": 1.5}), "invalid_value", "importance"),
        (write("x", data={"trust": -0.1}), "invalid_value", "trust"),
        (write("x", data={"generality": 9}), "invalid_value", "generality"),
        (write("x", data={"tags": ["ok", 3]}), "wrong_type", "tags"),
        (write("x", data={"valid_from": "2026-02-01T00:00:00Z", "valid_until": "2026-01-01T00:00:00Z"}),
         "invalid_value", "valid_until before"),
        # a supersede without its reason is rejected, as is an entry superseding itself
        (write("new", entry_id="b", data={"supersedes": "a"}), "supersede_without_reason", "reason"),
        (write("new", entry_id="b", data={"supersedes": "a", "reason": "  "}), "supersede_without_reason", "reason"),
        (write("new", entry_id="a", data={"supersedes": "a", "reason": "r"}), "supersede_cycle", "itself"),
        # recall and check payloads
        (ev("memory.recall", {"query": "q", "results": [{"entry_id": "a", "rank": "1"}]}), "wrong_type", "rank"),
        (ev("memory.recall", {"query": "q", "results": [{"rank": 1}]}), "wrong_type", "entry_id"),
        (ev("memory.check", {"entry_id": "a", "status": "fail"}), "invalid_value", "error_class"),
        (ev("memory.check", {"entry_id": "a", "status": "maybe"}), "invalid_value", "status"),
        (ev("run.end", {"outcome": "won"}), "invalid_value", "outcome"),
    ],
)
def test_bad_line_is_quarantined_with_reason(conn, home, line, reason, detail_part):
    write_jsonl(home.landing / "f.jsonl", [GOOD, line])
    report = run_ingest(conn, home)
    assert report.valid_events == 1  # the good neighbour survives
    assert report.quarantined_lines == 1
    [(line_no, got_reason, detail)] = quarantine(conn)
    assert (line_no, got_reason) == (2, reason)
    assert detail_part in detail


@pytest.mark.parametrize(
    "raw, reason",
    [
        (b'{"id": "a\x00", "type": "run.start"}', "nul_byte"),  # NUL bytes never reach the parser
        (b"\xff\xfe\xc3\x28 not utf8", "invalid_utf8"),  # invalid UTF-8 is reported, not replaced
        (b"[" * 100 + b"]" * 100, "too_deeply_nested"),  # nesting beyond max_json_depth
    ],
)
def test_undecodable_lines_are_quarantined_before_parsing(conn, home, raw, reason):
    write_jsonl(home.landing / "f.jsonl", [GOOD, raw, GOOD | {"id": "other"}])
    report = run_ingest(conn, home)
    assert report.valid_events == 2
    assert [r[1] for r in quarantine(conn)] == [reason]


def test_line_over_the_size_limit_is_quarantined_truncated(conn, home):
    cfg = CurationConfig(max_line_bytes=1_000, quarantine_raw_chars=100)
    big = write("x" * 5_000)
    write_jsonl(home.landing / "f.jsonl", [GOOD, big])
    run_ingest(conn, home, cfg)
    reason, raw_bytes, raw_len = conn.execute(
        "select reason, raw_bytes, length(raw_text) from raw.quarantine").fetchone()
    assert reason == "line_too_long" and raw_bytes > 5_000 and raw_len == 100


def test_gzipped_and_plain_files_give_the_same_events(conn, home):
    write_jsonl(home.landing / "a.jsonl.gz", [GOOD], gz=True)
    write_jsonl(home.landing / "b.jsonl", [GOOD])
    report = run_ingest(conn, home)
    assert (report.valid_events, report.duplicate_events) == (1, 1)


def test_a_broken_gzip_file_keeps_the_lines_before_the_break(conn, home):
    events = [write(f"note {i} about the release train", entry_id=f"e-{i}", id=f"w-{i}") for i in range(400)]
    whole = write_jsonl(home.landing / "a.jsonl.gz", events, gz=True).read_bytes()
    (home.landing / "a.jsonl.gz").write_bytes(whole[: len(whole) * 2 // 3])  # a truncated upload
    report = run_ingest(conn, home)
    rows = quarantine(conn)
    assert 0 < report.valid_events < 400
    assert [r[1] for r in rows if r[1] == "corrupt_gzip"] == ["corrupt_gzip"]
    assert "bytes before it are read as lines" in [r[2] for r in rows if r[1] == "corrupt_gzip"][0]
    # the lines read are the first ones, whole or (the last) cut: each one an event or quarantined
    assert report.valid_events + report.quarantined_lines == report.files[0].lines
    ids = {r[0] for r in conn.execute("select event_id from raw.events").fetchall()}
    assert ids == {f"w-{i}" for i in range(report.valid_events)}


def test_a_gzip_member_with_a_damaged_byte_is_dropped_whole(conn, home):
    # its checksum fails at the end, and cannot tell which lines the damage changed
    first = gzip.compress(b"\n".join(orjson.dumps(e) for e in [GOOD]) + b"\n")
    events = [write(f"note {i} about the release train", entry_id=f"e-{i}", id=f"w-{i}") for i in range(400)]
    second = bytearray(gzip.compress(b"\n".join(orjson.dumps(e) for e in events) + b"\n"))
    second[len(second) // 2] ^= 0xFF
    (home.landing / "a.jsonl.gz").write_bytes(first + bytes(second))
    report = run_ingest(conn, home)
    assert report.valid_events == 1 and [r[1] for r in quarantine(conn)] == ["corrupt_gzip"]
    assert conn.execute("select event_id from raw.events").fetchall() == [(GOOD["id"],)]


@pytest.mark.parametrize("body", [
    b"\x1f\x8b" + b"not a deflate stream\n" * 3,  # no gzip header (gzip: BadGzipFile)
    gzip.compress(b"x\n", mtime=0)[:10] + b"\xff" * 20,  # a header, then no deflate block (zlib.error: it crashed ingest)
], ids=["no_header", "no_deflate_block"])
def test_a_gzip_file_without_a_readable_stream_is_quarantined_whole(conn, home, body):
    (home.landing / "a.jsonl.gz").write_bytes(body)
    report = run_ingest(conn, home)
    assert report.valid_events == 0 and [r[1] for r in quarantine(conn)] == ["corrupt_gzip"]


def test_a_plain_file_that_starts_with_the_gzip_bytes_is_read_line_by_line(conn, home):
    # (found by test_hostile_input's property test: the whole file went to quarantine as one corrupt_gzip row)
    write_jsonl(home.landing / "a.jsonl", [b"\x1f\x8b", GOOD])
    report = run_ingest(conn, home)
    assert report.valid_events == 1 and [r[:2] for r in quarantine(conn)] == [(1, "invalid_utf8")]


def test_reingest_and_relanding_add_nothing(conn, home):
    write_jsonl(home.landing / "a.jsonl", [GOOD, "garbage"])
    run_ingest(conn, home)
    before = conn.execute("select count(*) from raw.events").fetchone()[0]
    # the same file again: nothing new to discover
    assert run_ingest(conn, home).files == []
    # the same events landed again under another name: duplicates, not new events
    write_jsonl(home.landing / "b.jsonl", [GOOD])
    report = run_ingest(conn, home)
    assert (report.valid_events, report.duplicate_events) == (0, 1)
    assert conn.execute("select count(*) from raw.events").fetchone()[0] == before


def test_the_ingested_events_are_in_the_stores_file_before_the_connection_goes_on(conn, home):
    wal = home.store.with_name(home.store.name + ".wal")
    conn.execute("create table main.scratch (i integer)")  # something in the write-ahead log before
    assert wal.exists() and wal.stat().st_size > 0
    write_jsonl(home.landing / "a.jsonl", [GOOD])
    assert run_ingest(conn, home).valid_events == 1
    # checkpointed: a derivation on the same connection (the Dagster job's steps share one) writes only its own
    assert not wal.exists() or wal.stat().st_size == 0
    conn.execute("insert into main.scratch values (1)")
    assert run_ingest(conn, home).files == []  # nothing new landed: no checkpoint
    assert wal.exists() and wal.stat().st_size > 0


def test_same_id_different_content_is_a_conflict_first_landed_wins(conn, home):
    write_jsonl(home.landing / "a.jsonl", [write("first", id="dup")])
    write_jsonl(home.landing / "b.jsonl", [write("second", id="dup")])
    run_ingest(conn, home)
    assert conn.execute("select data::json->>'$.text' from raw.events").fetchall() == [("first",)]
    assert conn.execute("select source_file, reason from raw.quarantine").fetchall() == [
        ("b.jsonl", "duplicate_id_conflict")]


def test_within_a_file_the_first_line_of_an_id_wins(conn, home):
    # a later line with the id and the same content is a duplicate, with other content a conflict
    write_jsonl(home.landing / "a.jsonl", [write("first", id="dup"), write("second", id="dup"),
                                           write("first", id="dup"), GOOD])
    report = run_ingest(conn, home)
    assert (report.valid_events, report.duplicate_events, report.quarantined_lines) == (2, 1, 1)
    kept = conn.execute("select data::json->>'$.text' from raw.events where event_id = 'dup'").fetchall()
    assert kept == [("first",)]
    assert conn.execute("select line_no, reason from raw.quarantine").fetchall() == [(2, "duplicate_id_conflict")]
    # the conflicting line is kept as it was landed (the split keeps the text of quarantined lines only)
    assert orjson.loads(conn.execute("select raw_text from raw.quarantine").fetchone()[0])["data"]["text"] == "second"


def test_a_file_of_several_scan_chunks_keeps_the_first_line_of_an_id(conn, home):
    # the lines are read in chunks of SCAN_CHUNK_ROWS, one per thread: which line of an id comes first is
    # the line number's, not the scan's order (the id's later lines are in other chunks)
    filler = [write(f"note {i}", entry_id=f"e{i}") for i in range(2 * store.SCAN_CHUNK_ROWS + 10)]
    lines = [write("first", id="dup")] + filler[:store.SCAN_CHUNK_ROWS] + [write("second", id="dup"), "bad"]
    lines += filler[store.SCAN_CHUNK_ROWS:] + [write("first", id="dup")]
    write_jsonl(home.landing / "a.jsonl", lines)
    report = run_ingest(conn, home)
    assert (report.valid_events, report.duplicate_events, report.quarantined_lines) == (len(filler) + 1, 1, 2)
    assert conn.execute("select data::json->>'$.text' from raw.events where event_id = 'dup'").fetchall() == [
        ("first",)]
    assert quarantine(conn) == [(store.SCAN_CHUNK_ROWS + 2, "duplicate_id_conflict", "event id dup was already "
                                 "ingested with different content"), (store.SCAN_CHUNK_ROWS + 3, "invalid_json",
                                                                      "line is not valid JSON")]


def test_a_file_that_fails_leaves_no_working_tables(conn, home, monkeypatch):
    write_jsonl(home.landing / "a.jsonl", [GOOD])
    load = ingest.sql.load
    failing = "select no_such_column"
    monkeypatch.setattr(ingest.sql, "load", lambda name: failing if name == "dedupe_events" else load(name))
    with pytest.raises(duckdb.BinderException):
        run_ingest(conn, home)
    assert conn.execute("select table_name from duckdb_tables() where temporary").fetchall() == []
    views = conn.execute("select view_name from duckdb_views() where view_name in ('new_events', 'quarantined_lines')")
    assert views.fetchall() == []
    assert conn.execute("select count(*) from raw.events").fetchone()[0] == 0  # nothing stored


def test_batching_does_not_change_the_result(tmp_path):
    """Ingesting files one night at a time or all at once gives identical raw tables."""
    from memcurator import store
    from memcurator.home import Home

    files = {
        "2026-01/a.jsonl": [write("one", id="e1"), write("two", id="e2"), "bad"],
        "2026-02/b.jsonl": [write("two", id="e2"), write("changed", id="e1"), write("three", id="e3")],
    }
    snapshots = []
    for batched in (False, True):
        home = Home.from_env(tmp_path / f"h{batched}").ensure()
        with store.connect(home.store) as c:
            for name, lines in files.items():
                write_jsonl(home.landing / name, lines)
                if batched:
                    run_ingest(c, home)
            run_ingest(c, home)
            snapshots.append((
                c.execute("select * exclude (source_file, line_no) from raw.events order by event_id").fetchall(),
                c.execute("select source_file, line_no, reason from raw.quarantine order by all").fetchall(),
            ))
    assert snapshots[0] == snapshots[1]


def _landing_of_several_files(home):
    # lines of every kind across files: new, repeated in the file and in a later one, in conflict within a
    # file and across files, invalid JSON, undecodable, and events of two days (two lake files for a file)
    write_jsonl(home.landing / "2026-11/a.jsonl", [write("one", id="e1"), write("two", id="e2"), "bad",
                                                    write("one", id="e1"), write("other", id="e2")])
    write_jsonl(home.landing / "2026-11/b.jsonl.gz", [write("two", id="e2"), write("changed", id="e1"),
                                                       b"\xff\xfe", write("three", id="e3")], gz=True)
    write_jsonl(home.landing / "2026-11/c.jsonl", [write("four", id="e4", ts="2026-11-05T01:00:00Z"),
                                                    write("three", id="e3"), write("five", id="e5")])
    write_jsonl(home.landing / "2026-12/d.jsonl", ["", "   "])  # blank lines only: nothing to judge


def _raw_tables(conn, home) -> dict:
    lake = conn.execute(f"select * exclude (date) from read_parquet('{home.lake}/events/*/*.parquet', "
                        "hive_partitioning = true) order by all").fetchall()
    return {"events": conn.execute("select * from raw.events order by all").fetchall(),
            "quarantine": conn.execute("select * from raw.quarantine order by all").fetchall(),
            "landed": conn.execute("select * from raw.landed_files order by all").fetchall(),
            "lake": lake, "lake_files": sorted(p.relative_to(home.lake).as_posix() for p in home.lake.rglob("*.parquet"))}


def test_files_judged_together_give_the_tables_of_files_judged_one_by_one(tmp_path, monkeypatch):
    from memcurator.home import Home

    got, judged, ingest_files = {}, [], ingest.ingest_files

    def judging(conn, batch, *args):
        judged.append(len(batch))
        return ingest_files(conn, batch, *args)

    monkeypatch.setattr(ingest, "ingest_files", judging)
    for judging_as, budget in (("together", ingest.BATCH_BYTES), ("alone", 0)):  # in one batch, each alone
        monkeypatch.setattr(ingest, "BATCH_BYTES", budget)
        home = Home.from_env(tmp_path / judging_as).ensure()
        _landing_of_several_files(home)
        judged.clear()
        with store.connect(home.store) as conn:
            progress = []
            report = ingest.ingest_landing(conn, home.landing, home.lake, CFG, progress=progress.append)
            got[judging_as] = _raw_tables(conn, home)
        assert progress == ["a.jsonl", "b.jsonl.gz", "c.jsonl", "d.jsonl"]
        assert [f.source_file for f in report.files] == ["2026-11/a.jsonl", "2026-11/b.jsonl.gz", "2026-11/c.jsonl",
                                                         "2026-12/d.jsonl"]
        assert judged == ([4] if budget else [1, 1, 1, 1])
    assert got["together"] == got["alone"]
    tables = got["alone"]
    # each file's own counts, every line accounted for
    assert [row[0:1] + row[3:] for row in tables["landed"]] == [
        ("2026-11/a.jsonl", 5, 2, 1, 2), ("2026-11/b.jsonl.gz", 4, 1, 1, 2), ("2026-11/c.jsonl", 3, 2, 1, 0),
        ("2026-12/d.jsonl", 0, 0, 0, 0)]
    assert [(e[0], e[-2], e[-1]) for e in sorted(tables["events"])] == [
        ("e1", "2026-11/a.jsonl", 1), ("e2", "2026-11/a.jsonl", 2), ("e3", "2026-11/b.jsonl.gz", 4),
        ("e4", "2026-11/c.jsonl", 1), ("e5", "2026-11/c.jsonl", 3)]
    assert sorted((q[0], q[1], q[2]) for q in tables["quarantine"]) == [
        ("2026-11/a.jsonl", 3, "invalid_json"), ("2026-11/a.jsonl", 5, "duplicate_id_conflict"),
        ("2026-11/b.jsonl.gz", 2, "duplicate_id_conflict"), ("2026-11/b.jsonl.gz", 3, "invalid_utf8")]
    # a part for each day, of whichever files its events came from
    assert [f.split("/")[1] for f in tables["lake_files"]] == ["date=2026-11-02", "date=2026-11-05"]
    assert len(tables["lake"]) == 5


def test_a_batch_that_fails_stores_none_of_its_files(conn, home, monkeypatch):
    _landing_of_several_files(home)
    monkeypatch.setattr(ingest, "_record_landed", lambda *a: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError, match="disk full"):
        run_ingest(conn, home)
    for table in ("raw.events", "raw.quarantine", "raw.landed_files"):
        assert conn.execute(f"select count(*) from {table}").fetchone()[0] == 0
    monkeypatch.undo()
    assert [f.source_file for f in run_ingest(conn, home).files][:1] == ["2026-11/a.jsonl"]  # all again
    assert conn.execute("select count(*) from raw.events").fetchone()[0] == 5


def test_lake_holds_exactly_the_valid_events(conn, home):
    write_jsonl(home.landing / "a.jsonl", [GOOD, write("later", ts="2026-11-05T01:00:00Z"), "bad"])
    run_ingest(conn, home)
    lake = conn.execute(
        f"select count(*) from read_parquet('{home.lake}/events/*/*.parquet', hive_partitioning = true)"
    ).fetchone()[0]
    assert lake == conn.execute("select count(*) from raw.events").fetchone()[0] == 2
    assert sorted(p.parent.name for p in home.lake.rglob("*.parquet")) == ["date=2026-11-02", "date=2026-11-05"]


def test_the_lake_is_the_same_however_few_events_are_read_at_a_time(tmp_path, monkeypatch):
    # a day's events are read in pieces, its file written piece by piece
    from memcurator.home import Home

    got = []
    for rows in (ingest.LAKE_READ_ROWS, 2, 1):
        monkeypatch.setattr(ingest, "LAKE_READ_ROWS", rows)
        home = Home.from_env(tmp_path / f"r{rows}").ensure()
        _landing_of_several_files(home)
        with store.connect(home.store) as conn:
            run_ingest(conn, home)
            tables = _raw_tables(conn, home)
            # (read file by file in order: DuckDB reads a file's row groups, one a piece, in parallel)
            ids = [pq.read_table(f).column("event_id").to_pylist() for f in home.lake.rglob("*.parquet")]
        assert all(listed == sorted(listed) for listed in ids)  # each day's events in event_id order
        assert not list(home.lake.rglob("*.tmp"))
        got.append((tables["lake"], tables["lake_files"]))
    assert got[0] == got[1] == got[2] and len(got[0][0]) == 5


def _lake(home) -> tuple[list, list[str]]:
    with duckdb.connect() as c:
        rows = c.execute(f"select * exclude (date) from read_parquet('{home.lake}/events/*/*.parquet', "
                         "hive_partitioning = true) order by all").fetchall()
    return rows, sorted(p.relative_to(home.lake).as_posix() for p in home.lake.rglob("*.parquet"))


def _parts(home) -> dict[str, list[str]]:
    return {str(p.relative_to(home.lake)): orjson.loads(pq.read_schema(p).metadata[b"memcurator.sources"])
            for p in sorted(home.lake.rglob("part-*.parquet"))}


def test_a_night_adds_a_part_to_each_day_it_added_events_to(conn, home):
    # night one: events of two days, from two files; night two: more of the second day (late recalls and writes)
    write_jsonl(home.landing / "a.jsonl", [write("one", ts="2026-11-02T10:00:00Z"), write("two", ts="2026-11-03T01:00:00Z")])
    write_jsonl(home.landing / "b.jsonl", [write("three", ts="2026-11-02T11:00:00Z")])
    assert run_ingest(conn, home).lake_days == 2
    first = {name: (home.lake / name).stat().st_mtime_ns for name in _parts(home)}
    write_jsonl(home.landing / "c.jsonl", [write("four", ts="2026-11-03T23:59:59Z"), write("five", ts="2026-11-04T00:00:00Z")])
    assert run_ingest(conn, home).lake_days == 2
    rows, _ = _lake(home)
    assert rows == conn.execute("select * from raw.events order by all").fetchall() and len(rows) == 5
    parts = _parts(home)
    assert sorted((name.split("/")[1], sources) for name, sources in parts.items()) == [
        ("date=2026-11-02", ["a.jsonl", "b.jsonl"]), ("date=2026-11-03", ["a.jsonl"]), ("date=2026-11-03", ["c.jsonl"]),
        ("date=2026-11-04", ["c.jsonl"])]
    # the first night's parts are as it wrote them; nothing is left pending
    assert {name: (home.lake / name).stat().st_mtime_ns for name in first} == first
    assert conn.execute("select count(*) from work.lake_pending").fetchone()[0] == 0


def test_parts_of_different_files_never_share_a_name(conn, home):
    # one file whose name holds a newline, then two files named as its two lines, all of one day
    write_jsonl(home.landing / "a.jsonl\nb.jsonl", [write("one", ts="2026-11-02T10:00:00Z")])
    run_ingest(conn, home)
    write_jsonl(home.landing / "a.jsonl", [write("two", ts="2026-11-02T11:00:00Z")])
    write_jsonl(home.landing / "b.jsonl", [write("three", ts="2026-11-02T12:00:00Z")])
    run_ingest(conn, home)
    rows, files = _lake(home)
    assert rows == conn.execute("select * from raw.events order by all").fetchall() and len(rows) == 3
    assert sorted(_parts(home).values()) == [["a.jsonl", "b.jsonl"], ["a.jsonl\nb.jsonl"]]


def test_files_the_lake_kept_by_landed_file_stay_beside_the_parts(conn, home):
    # the lake kept a file for each landed file and day before: a night adds its part beside them
    write_jsonl(home.landing / "a.jsonl", [write("one", ts="2026-11-02T10:00:00Z")])
    run_ingest(conn, home)
    (part,) = home.lake.rglob("part-*.parquet")
    part.rename(part.with_name("0123456789abcdef.parquet"))
    write_jsonl(home.landing / "b.jsonl", [write("two", ts="2026-11-02T11:00:00Z")])
    run_ingest(conn, home)
    rows, files = _lake(home)
    assert rows == conn.execute("select * from raw.events order by all").fetchall() and len(rows) == 2
    assert len(files) == 2 and "events/date=2026-11-02/0123456789abcdef.parquet" in files


@pytest.mark.parametrize("more_landed", [False, True])
def test_events_a_stopped_run_did_not_write_to_the_lake_are_written_by_the_next(conn, home, monkeypatch, more_landed):
    write_jsonl(home.landing / "a.jsonl", [write("one", ts="2026-11-02T10:00:00Z"), write("two", ts="2026-11-03T10:00:00Z")])
    replace, written = ingest.os.replace, []

    def stopping(src, dst):  # the run stops after the first day's part is in place
        if written:
            raise OSError("killed")
        written.append(dst)
        return replace(src, dst)

    monkeypatch.setattr(ingest.os, "replace", stopping)
    with pytest.raises(OSError, match="killed"):
        run_ingest(conn, home)
    monkeypatch.undo()
    # the batch is stored; its events wait for the lake
    assert conn.execute("select count(*) from raw.events").fetchone()[0] == 2
    assert conn.execute("select day::varchar, source_file from work.lake_pending order by all").fetchall() == [
        ("2026-11-02", "a.jsonl"), ("2026-11-03", "a.jsonl")]
    if more_landed:  # the next run ingests more of the same day: its part (of both files) replaces the stopped run's
        write_jsonl(home.landing / "b.jsonl", [write("three", ts="2026-11-02T12:00:00Z")])
    run_ingest(conn, home)
    rows, _ = _lake(home)
    assert rows == conn.execute("select * from raw.events order by all").fetchall() and len(rows) == 2 + more_landed
    assert sorted(_parts(home).values()) == ([["a.jsonl"], ["a.jsonl", "b.jsonl"]] if more_landed
                                             else [["a.jsonl"], ["a.jsonl"]])
    assert not list(home.lake.rglob("*.tmp"))
    assert conn.execute("select count(*) from work.lake_pending").fetchone()[0] == 0


def test_a_purge_after_a_run_stopped_before_its_lake_leaves_each_event_once(home, monkeypatch):
    from memcurator import purge

    write_jsonl(home.landing / "a.jsonl", [write("kept", ts="2026-11-02T10:00:00Z"),
                                           write("gone", ts="2026-11-02T11:00:00Z", namespace="gone")])
    replace = ingest.os.replace

    def stopping(src, dst):  # the run stops once its part is in place, before it lets the pending rows go
        replace(src, dst)
        raise OSError("killed")

    monkeypatch.setattr(ingest.os, "replace", stopping)
    with store.connect(home.store) as conn, pytest.raises(OSError, match="killed"):
        run_ingest(conn, home)
    monkeypatch.undo()
    assert purge.purge(home, "namespace", "gone", "asked to").store_events == 1
    write_jsonl(home.landing / "b.jsonl", [write("later", ts="2026-11-02T12:00:00Z")])  # the next run's part: more files
    with store.connect(home.store) as conn:
        run_ingest(conn, home)
        rows, files = _lake(home)
        assert rows == conn.execute("select * from raw.events order by all").fetchall() and len(rows) == 2
        assert len(files) == 2 and conn.execute("select count(*) from work.lake_pending").fetchone()[0] == 0


def _members_by_file(home) -> list[list[str]]:
    return sorted(sorted(ingest._members(p)) for p in home.lake.rglob("*.parquet"))


def test_a_day_of_many_parts_has_them_merged_its_largest_kept_apart_while_it_outweighs_them(conn, home, monkeypatch):
    monkeypatch.setattr(ingest, "LAKE_MERGE_FILES", 3)
    # the day's first events, in a file as the lake was kept before (per landed file, no names in its metadata)
    write_jsonl(home.landing / "big.jsonl", [write(f"first {i}", ts="2026-11-02T09:00:00Z") for i in range(5)])
    run_ingest(conn, home)
    (part,) = home.lake.rglob("part-*.parquet")
    pq.write_table(pq.read_table(part).replace_schema_metadata(None), part.with_name("0123456789abcdef.parquet"))
    part.unlink()
    old = "file:0123456789abcdef.parquet"
    seen = []
    for night in range(1, 6):  # then a late event of the day each night
        write_jsonl(home.landing / f"n{night}.jsonl", [write(f"late {night}", ts="2026-11-02T23:00:00Z")])
        run_ingest(conn, home)
        rows, _ = _lake(home)
        assert rows == conn.execute("select * from raw.events order by all").fetchall()
        seen.append(_members_by_file(home))
    assert seen == [
        [[old], ["n1.jsonl"]],
        [[old], ["n1.jsonl", "n2.jsonl"]],  # three files: the two small ones merged, the largest (5 rows) apart
        [[old], ["n1.jsonl", "n2.jsonl", "n3.jsonl"]],
        [[old], ["n1.jsonl", "n2.jsonl", "n3.jsonl", "n4.jsonl"]],
        [sorted([old, "n1.jsonl", "n2.jsonl", "n3.jsonl", "n4.jsonl", "n5.jsonl"])],  # 5 rows against 5: all merged
    ]


def test_a_merge_a_run_stopped_in_is_finished_by_the_next_as_an_unstopped_run_left_it(tmp_path, monkeypatch):
    from pathlib import Path

    from memcurator.home import Home

    monkeypatch.setattr(ingest, "LAKE_MERGE_FILES", 3)
    unlink, got = Path.unlink, {}
    for run in ("unstopped", "stopped"):
        home = Home.from_env(tmp_path / run).ensure()
        with store.connect(home.store) as conn:
            for night in range(3):
                write_jsonl(home.landing / f"n{night}.jsonl", [write(f"event {night}", id=f"e{night}",
                                                                         ts="2026-11-02T10:00:00Z")])
                if run == "stopped" and night == 2:
                    def stopping(path, *args, **kwargs):  # the merged part in place, its files not yet removed
                        if path.suffix == ".parquet" and len(list(path.parent.glob("*.parquet"))) == 4:
                            raise OSError("killed")
                        return unlink(path, *args, **kwargs)

                    monkeypatch.setattr(Path, "unlink", stopping)
                    with pytest.raises(OSError, match="killed"):
                        run_ingest(conn, home)
                    monkeypatch.setattr(Path, "unlink", unlink)
                    assert len(list(home.lake.rglob("*.parquet"))) == 4  # the merged part and the three it holds
                run_ingest(conn, home)
            got[run] = (_lake(home), conn.execute("select count(*) from work.lake_pending").fetchone()[0])
    assert got["stopped"] == got["unstopped"]
    (rows, files), pending = got["stopped"]
    assert len(rows) == 3 and len(files) == 1 and pending == 0


def test_events_purged_before_their_part_was_written_get_none(conn, home, monkeypatch):
    write_jsonl(home.landing / "a.jsonl", [write("one", ts="2026-11-02T10:00:00Z", namespace="gone")])
    monkeypatch.setattr(ingest, "write_lake", lambda *a: 0)  # stopped before the lake
    run_ingest(conn, home)
    monkeypatch.undo()
    conn.execute("delete from raw.events where namespace = 'gone'")  # as a purge deletes them
    run_ingest(conn, home)
    assert not list(home.lake.rglob("*.parquet")) and not list(home.lake.rglob("*.tmp"))
    assert conn.execute("select count(*) from work.lake_pending").fetchone()[0] == 0


def test_conservation_every_line_accounted_for(conn, home):
    write_jsonl(home.landing / "a.jsonl", [GOOD, GOOD, "bad", write("ok")])
    run_ingest(conn, home)
    lines, valid, dup, quar = conn.execute(
        "select lines, valid_events, duplicate_events, quarantined_lines from raw.landed_files").fetchone()
    assert (lines, valid, dup, quar) == (4, 2, 1, 1)


def test_a_file_leaves_no_working_table_behind(conn, home):
    # they live in memory: kept, one file's held the memory of the next and of the night's derivation,
    # which runs in the ingest's process
    write_jsonl(home.landing / "a.jsonl", [GOOD, "bad"])
    write_jsonl(home.decisions / "d.jsonl", [{"id": "d1", "ts": "2026-11-02T10:00:00Z", "namespace": "ns-a",
                                              "target_kind": "cluster", "action": "approve", "target_id": "c1",
                                              "reason": "same lesson", "curator": "kim"}])
    run_ingest(conn, home)
    ingest.ingest_decisions(conn, home.decisions, CFG)
    assert conn.execute("select count(*) from raw.events").fetchone()[0] == 1
    assert conn.execute("select table_name from duckdb_tables() where temporary").fetchall() == []


def test_decisions_are_their_own_input(conn, home):
    write_jsonl(home.decisions / "2026-11-02.jsonl", [
        {"id": "d1", "ts": "2026-11-02T10:00:00Z", "namespace": "ns-a", "target_kind": "cluster",
         "action": "approve", "target_id": "c1", "reason": "same lesson", "curator": "kim"},
        {"id": "d2", "ts": "2026-11-02T10:00:00Z", "namespace": "ns-a", "target_kind": "cluster",
         "action": "approve", "target_id": "c1"},  # no reason
    ])
    report = ingest.ingest_decisions(conn, home.decisions, CFG)
    assert (report.valid_events, report.quarantined_lines) == (1, 1)
    assert conn.execute("select count(*) from raw.events").fetchone()[0] == 0
    assert conn.execute("select reason, detail from raw.quarantine").fetchone() == ("missing_field", "reason")


def test_decision_files_judged_together_give_the_tables_of_files_judged_one_by_one(tmp_path, monkeypatch):
    # a decision is a file of its own (decisions.record): a curator's day is many files, judged in batches
    from memcurator import decisions
    from memcurator.home import Home

    def decide(i, **kw):
        return {"id": f"d{i}", "ts": "2026-11-02T10:00:00Z", "namespace": "ns-a", "target_kind": "cluster",
                "action": "approve", "target_id": f"c{i}", "reason": "same lesson", "curator": "kim"} | kw

    got = {}
    for judging_as, budget in (("together", ingest.BATCH_BYTES), ("alone", 0)):
        monkeypatch.setattr(ingest, "BATCH_BYTES", budget)
        home = Home.from_env(tmp_path / judging_as).ensure()
        for i in range(3):
            decisions.record(home.decisions, "ns-a", "cluster", f"c{i}", "approve", "same lesson", "kim",
                             now=datetime(2026, 11, 2, 10, i, tzinfo=timezone.utc))
        # a decision landed twice in a file, again in a later file, and one without its reason
        write_jsonl(home.decisions / "2026-11-03" / "a.jsonl", [decide(7), decide(7), decide(8, reason=" ")])
        write_jsonl(home.decisions / "2026-11-03" / "b.jsonl", [decide(7), b"\xff", decide(9)])
        with store.connect(home.store) as conn:
            report = ingest.ingest_decisions(conn, home.decisions, CFG)
            got[judging_as] = (
                conn.execute("select * from raw.curator_decisions order by all").fetchall(),
                conn.execute("select * from raw.quarantine order by all").fetchall(),
                conn.execute("select * exclude (sha256) from raw.landed_files order by all").fetchall())
        assert len(report.files) == 5
    assert got["together"] == got["alone"]
    stored, quarantined, landed = got["alone"]
    assert len(stored) == 5 and {row[0] for row in stored if not row[0].startswith("d_")} == {"d7", "d9"}
    assert [(q[0], q[1], q[2]) for q in quarantined] == [
        ("decisions/2026-11-03/a.jsonl", 3, "missing_field"), ("decisions/2026-11-03/b.jsonl", 2, "invalid_utf8")]
    # every line accounted for: lines = new + duplicates + quarantined, file by file
    assert [(row[0].split("/")[-1], *row[2:]) for row in landed if "/2026-11-03/" in row[0]] == [
        ("a.jsonl", 3, 1, 1, 1), ("b.jsonl", 3, 1, 1, 1)]
    assert all(row[2] == row[3] + row[4] + row[5] for row in landed)


def test_a_line_of_control_characters_is_quarantined_not_skipped(conn, home):
    # found by hypothesis: str.strip() treats \x1c as whitespace, which once dropped the line silently
    write_jsonl(home.landing / "f.jsonl", [GOOD, b"\x1c", b"\x1d\x1e"])
    report = run_ingest(conn, home)
    assert (report.valid_events, report.quarantined_lines) == (1, 2)


def test_a_clean_file_split_in_arrow_reads_as_the_line_by_line_pass(tmp_path):
    # a clean file is split, decoded and filtered in Arrow; one NUL byte sends the whole file line by line
    # (where that line alone is quarantined): every other line reads the same either way
    cfg = CurationConfig(max_json_depth=8)
    body = ('{"a": 1}\r\n\n  \t\x0b\n{"b": "h\u00e9llo \u2713"}\n' + "[" * 9 + "]" * 9 + "\n"
            '{"c": "' + "[" * 12 + '"}\n\n{"d": 2}\n')
    clean, mixed = tmp_path / "clean.jsonl", tmp_path / "mixed.jsonl"
    clean.write_text(body)
    mixed.write_bytes(body.encode() + b'{"nul": "\x00"}\n')
    lines, rejected = ingest.read_lines(clean, "f", cfg)
    by_line, rejected_by_line = ingest.read_lines(mixed, "f", cfg)
    assert lines.to_pylist() == by_line.to_pylist()
    assert lines["line_no"].to_pylist() == [1, 4, 6, 8] and lines["text"][0].as_py() == '{"a": 1}'
    assert [(r["line_no"], r["reason"]) for r in rejected] == [(5, "too_deeply_nested")]
    assert rejected == [r for r in rejected_by_line if r["reason"] != "nul_byte"]


def test_no_string_of_a_nights_store_is_stored_in_fsst(home):
    bench.land(bench.generate(3000, 6, seed=2), home.landing, "fleet.jsonl")
    with store.connect(home.store) as conn:
        night.ingest_and_derive(conn, home.landing, bench.START + timedelta(days=bench.DAYS + 1))
        tables = [t for (t,) in conn.execute("select schema_name || '.' || table_name from duckdb_tables()").fetchall()]
        compressions = {t: string_compressions(conn, t) for t in tables}
    assert {"raw.events", "core.entries", "core.entry_lifecycle"} <= set(tables)
    assert {t for t, found in compressions.items() if "FSST" in found} == set()


def test_landing_never_writes_over_a_landed_file(tmp_path):
    """`memcurator land` wrote each file to landing/<second>/<name>: a second call in the same second, or two
    files of one name in one call, wrote over the first (the log is append-only, and the ingest does not read
    a file it has read again). Each call lands in a folder of its own, in the order of its paths, each file
    whole under its name (copied under a hidden name the ingest skips, then renamed)."""
    sources = []
    for folder, text in (("a", "first"), ("b", "second"), ("c", "third")):
        sources.append(write_jsonl(tmp_path / folder / "run.jsonl", [write(text, entry_id=folder)]))
    landing, now = tmp_path / "landing", datetime(2026, 12, 7, 18, 0, tzinfo=timezone.utc)
    first = ingest.land_files([sources[0]], landing, now)
    second = ingest.land_files([sources[1]], landing, now)  # the same second
    both = ingest.land_files([sources[1], sources[2]], landing, now)  # one name twice
    landed = ingest.discover(landing, [])
    assert [p.relative_to(landing).as_posix() for p in landed] == [
        "20261207T180000Z/run.jsonl", "20261207T180000Z_0002/run.jsonl",
        "20261207T180000Z_0003/0001/run.jsonl", "20261207T180000Z_0003/0002/run.jsonl"]
    assert [p.read_text() for p in landed] == [sources[i].read_text() for i in (0, 1, 1, 2)]
    assert (first, second, both) == (landing / "20261207T180000Z", landing / "20261207T180000Z_0002",
                                     landing / "20261207T180000Z_0003")
    assert not [p for p in landing.rglob(".*")]  # no hidden copy left


def test_a_landed_file_changed_after_its_ingest_is_found_by_its_size(conn, home):
    """A landed file the ingest has read is not read again: lines written to it after (a copy still running
    when a run listed the folder, an edit) are in no table. Each file's size against the one recorded names
    it; a decision file too. Unchanged files are not named."""
    from memcurator import decisions

    first = write_jsonl(home.landing / "a" / "run.jsonl", [write("keep deploys small", entry_id="e1")])
    second = write_jsonl(home.landing / "b" / "run.jsonl", [write("pin the base image", entry_id="e2")])
    decisions.record(home.decisions, "ns-a", "cluster", "c_1", "reject", "not one lesson", "kim")
    ingest.ingest_landing(conn, home.landing, None, CurationConfig())
    ingest.ingest_decisions(conn, home.decisions, CurationConfig())
    assert ingest.changed_since_ingest(conn, home.landing, home.decisions) == []
    sizes = first.stat().st_size, second.stat().st_size
    with first.open("ab") as f:
        f.write(orjson.dumps(write("added after the ingest", entry_id="e3")) + b"\n")
    second.unlink()
    (decided,) = home.decisions.rglob("*.jsonl")
    decided_size = decided.stat().st_size
    decided.write_text("")
    assert ingest.changed_since_ingest(conn, home.landing, home.decisions) == [
        ("a/run.jsonl", sizes[0], first.stat().st_size), ("b/run.jsonl", sizes[1], None),
        (f"decisions/{decided.relative_to(home.decisions).as_posix()}", decided_size, 0)]
