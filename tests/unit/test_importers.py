"""Importers on small hand-made files: mapping, idempotence, nothing dropped silently."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memcurator import ingest
from memcurator.config import CurationConfig
from memcurator.importers import flat, land, mcp_memory, transcripts
from memcurator.night import derive_night

TS = datetime(2026, 11, 1, tzinfo=timezone.utc)


def test_mcp_memory_maps_observations_and_relations(home, conn, tmp_path):
    src = tmp_path / "memory.jsonl"
    src.write_bytes(b"\n".join([
        orjson.dumps({"type": "entity", "name": "billing api", "entityType": "service",
                      "observations": ["uses postgres", "owned by team vega"]}),
        orjson.dumps({"type": "relation", "from": "billing api", "to": "ledger", "relationType": "calls"}),
        orjson.dumps({"type": "entity", "name": "billing api", "entityType": "service", "observations": ["uses postgres"]}),
        b"{broken",
    ]))
    events = mcp_memory.convert(src, "imported", TS)
    land(events, home.landing, "mcp-memory", src)
    land(mcp_memory.convert(src, "imported", TS), home.landing, "mcp-memory", src)  # same file again
    report = ingest.ingest_landing(conn, home.landing, None, CurationConfig())
    assert (report.valid_events, report.quarantined_lines) == (4, 1)
    texts = sorted(r[0] for r in conn.execute("select data::json->>'$.text' from raw.events").fetchall())
    assert texts == ["billing api (service): owned by team vega", "billing api (service): uses postgres",
                     "billing api (service): uses postgres", "billing api calls ledger"]


def test_flat_export_rows_become_writes_and_accesses_become_recalls(home, conn, tmp_path):
    src = tmp_path / "export.csv"
    src.write_text("id,text,created_at,last_accessed_at,user_id,tags\n"
                   "m1,prefers dark mode,2026-10-01T10:00:00Z,2026-11-20T08:00:00Z,alice,ui\n"
                   "m2,,2026-10-02T10:00:00Z,,bob,\n")
    land(flat.convert(src, "mem0", TS), home.landing, "flat", src)
    report = ingest.ingest_landing(conn, home.landing, None, CurationConfig())
    assert (report.valid_events, report.quarantined_lines) == (2, 1)
    assert conn.execute("select type, user_id from raw.events order by type").fetchall() == [
        ("memory.recall", "alice"), ("memory.write", "alice")]


def _session_line(kind: str, ts: str, content, uuid: str, session: str = "s-1") -> bytes:
    return orjson.dumps({"type": kind, "timestamp": ts, "sessionId": session, "uuid": uuid,
                         "message": {"role": kind, "content": content}})


def test_claude_code_memory_tools_become_writes_and_recalls_that_meet_the_mcp_import(home, conn, tmp_path):
    src = tmp_path / "session.jsonl"
    graph = {"entities": [{"name": "billing api", "entityType": "service", "observations": ["uses postgres"]}]}
    src.write_bytes(b"\n".join([
        _session_line("user", "2026-11-02T10:00:00Z", "Why is the billing job slow?", "u1"),
        _session_line("assistant", "2026-11-02T10:00:05Z", [{"type": "tool_use", "id": "t1", "name": "mcp__memory__create_entities",
                      "input": {"entities": [{"name": "billing api", "entityType": "service", "observations": ["uses postgres"]}]}}], "a1"),
        _session_line("assistant", "2026-11-02T10:00:09Z", [{"type": "tool_use", "id": "t2", "name": "mcp__memory__search_nodes",
                      "input": {"query": "billing"}}], "a2"),
        _session_line("user", "2026-11-02T10:00:10Z", [{"type": "tool_result", "tool_use_id": "t2",
                      "content": orjson.dumps(graph).decode()}], "u2"),
        _session_line("assistant", "2026-11-02T10:01:00Z", [{"type": "tool_use", "id": "t3", "name": "memory",
                      "input": {"command": "create", "path": "/memories/billing.md",
                                "file_text": "The billing job is slow when the ledger index is cold."}}], "a3"),
        orjson.dumps({"type": "summary", "summary": "Diagnosed the slow billing job", "leafUuid": "a3"}),
        b'{"type": "user", "message": "no time, no session"}',
        b"[1, 2]",
    ]))
    mcp = tmp_path / "memory.jsonl"
    mcp.write_bytes(orjson.dumps(graph["entities"][0] | {"type": "entity"}))
    land(transcripts.claude_code(src, "cc", TS), home.landing, "claude-code", src)
    land(transcripts.claude_code(src, "cc", TS), home.landing, "claude-code", src)  # again: nothing new
    land(mcp_memory.convert(mcp, "cc", TS), home.landing, "mcp-memory", mcp)
    report = ingest.ingest_landing(conn, home.landing, None, CurationConfig())
    assert report.quarantined_lines == 2
    kinds = dict(conn.execute("select type, count(*) from raw.events group by 1").fetchall())
    assert kinds == {"run.start": 1, "run.end": 1, "memory.write": 4, "memory.recall": 1}
    derive_night(conn, datetime(2026, 11, 3), CurationConfig())
    # the observation written in the session and the one in memory.jsonl are one entry, and the recall found it
    assert conn.execute("select count(*), max(version_count) from core.entries where text like 'billing api%'").fetchone() == (1, 2)
    assert conn.execute("select recall_count from core.entry_usage u join core.entries e using (namespace, entry_id) "
                        "where e.text like 'billing api%'").fetchone()[0] == 1
    assert conn.execute("select task, outcome from core.runs").fetchone() == ("Why is the billing job slow?", "unknown")
    assert conn.execute("select count(*) from core.entries where class = 'lesson' and text like '%ledger index%'").fetchone()[0] == 1


def test_tau_bench_and_swe_agent_runs_keep_outcomes_and_drop_the_answer_key(home, conn, tmp_path):
    tau = tmp_path / "tau.json"
    tau.write_bytes(orjson.dumps([
        {"task_id": 7, "trial": 0, "reward": 1.0, "info": {"task": {"instruction": "SECRET-INSTRUCTION"}},
         "traj": [{"role": "system", "content": "policy"}, {"role": "user", "content": "Cancel reservation ABC123"},
                  {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "cancel_reservation",
                   "arguments": "{\"reservation_id\": \"ABC123\"}"}}]}]},
        {"task_id": 7, "trial": 1, "reward": 0.0, "traj": "not a list"},
    ]))
    swe = tmp_path / "run.traj"
    swe.write_bytes(orjson.dumps({"history": [{"role": "user", "content": "Fix the crash in parser.py"}],
                                  "trajectory": [{"action": "open parser.py\n"}, {"action": "edit 3:4\nx = 1\nend_of_edit\n"}],
                                  "info": {"exit_status": "exit_cost"}}))
    land(transcripts.tau_bench(tau, "tau", TS), home.landing, "tau-bench", tau)
    land(transcripts.swe_agent(swe, "swe", TS), home.landing, "swe-agent", swe)
    report = ingest.ingest_landing(conn, home.landing, None, CurationConfig())
    assert report.quarantined_lines == 1  # the run without a trajectory
    derive_night(conn, datetime(2026, 11, 3), CurationConfig())
    assert sorted(conn.execute("select namespace, outcome from core.runs").fetchall()) == [("swe", "aborted"), ("tau", "success")]
    texts = dict(conn.execute("select namespace, text from core.entries").fetchall())
    assert "cancel_reservation(reservation_id=ABC123)" in texts["tau"] and "SECRET" not in texts["tau"]
    assert texts["swe"].endswith("Actions: open parser.py edit 3:4")
    assert conn.execute("select tags from core.entries where namespace = 'swe'").fetchone()[0] == ["parser.py"]


def _reasons(conn) -> list[tuple[str, str]]:
    return sorted(conn.execute("select reason, detail from raw.quarantine").fetchall())


def test_a_flat_row_with_unreadable_values_is_quarantined_with_its_reason_not_a_crash(home, conn, tmp_path):
    csv_src = tmp_path / "export.csv"
    csv_src.write_text("text,importance,tags,created_at\n"
                       "always pin numpy,high,\"[oops\",2026-12-01T10:00:00Z\n"
                       "use uv for envs,0.5,\"a, b\",2026-12-01T11:00:00\n"  # a time without a zone is UTC
                       ",,,2026-12-01,one cell too many\n")  # no text, and a cell past the header
    jsonl_src = tmp_path / "export.jsonl"
    jsonl_src.write_bytes(b"\n".join(orjson.dumps(row) for row in [
        {"memory": "tags as a number", "tags": 5}, {"text": "importance as a list", "importance": [1]},
        {"text": "tags of numbers", "tags": [1, 2.5]}, {"text": "a tag that is an object", "tags": ["ok", {"x": 1}]},
        {"text": "out of range once in UTC", "created_at": "0001-01-01T00:00:00+05:00"}]))
    for src in (csv_src, jsonl_src):
        land(flat.convert(src, "mem0", TS), home.landing, "flat", src)
    report = ingest.ingest_landing(conn, home.landing, None, CurationConfig())
    assert (report.valid_events, report.quarantined_lines) == (2, 6)
    assert _reasons(conn) == [
        ("missing_field", "id"), ("timestamp_out_of_range", "ts outside [1990-01-01, 2100-01-01)"),
        ("wrong_type", "data.importance must be a number"), ("wrong_type", "data.importance must be a number"),
        ("wrong_type", "data.tags must be an array of strings"), ("wrong_type", "data.tags must be an array of strings")]
    # (the "[oops" row's importance is read first: its tags are not, but the row is quarantined whole)
    assert sorted(conn.execute("select data::json->>'$.text', ts::varchar, data::json->'$.tags' from raw.events").fetchall()) == [
        ("tags of numbers", "2026-11-01 00:00:00", '["1","2.5"]'),
        ("use uv for envs", "2026-12-01 11:00:00", '["a","b"]')]


def test_an_mcp_observation_that_is_no_text_is_quarantined_not_left_out(home, conn, tmp_path):
    src = tmp_path / "memory.jsonl"
    src.write_bytes(orjson.dumps({"type": "entity", "name": "billing api", "entityType": "service",
                                  "observations": ["uses postgres", 123, "   "]}))
    land(mcp_memory.convert(src, "imported", TS), home.landing, "mcp-memory", src)
    report = ingest.ingest_landing(conn, home.landing, None, CurationConfig())
    assert (report.valid_events, report.quarantined_lines) == (1, 2)
    assert [r[0] for r in _reasons(conn)] == ["empty_text", "wrong_type"]


def test_claude_code_sessions_with_odd_records_import_without_a_crash(home, conn, tmp_path):
    src = tmp_path / "session.jsonl"
    src.write_bytes(b"\n".join([
        _session_line("user", "2026-11-02T10:00:00Z", "Why is the billing job slow?", "u1"),
        # a time without a zone (UTC) beside ones with: they were compared, and Python cannot
        _session_line("assistant", "2026-11-02T10:00:05", [{"type": "tool_use", "id": "t1", "name": "mcp__memory__create_entities",
                      "input": {"entities": [{"name": "billing api", "observations": ["uses postgres", 7]}, "not an entity"]}}], "a1"),
        _session_line("assistant", "2026-11-02T11:00:00+01:00", [
            {"type": "tool_use", "id": "t2", "name": ["not", "text"], "input": {}},
            {"type": "tool_use", "id": "t3", "name": "memory", "input": {"command": ["create"]}},
            {"type": "tool_use", "id": "t4", "name": "mcp__memory__open_nodes", "input": {"names": 5}}], "a2"),
        orjson.dumps({"type": "summary", "summary": None, "leafUuid": "a2"}),
    ]))
    land(transcripts.claude_code(src, "cc", TS), home.landing, "claude-code", src)
    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(b"\x1f\x8b\x08\x00" + b"\x00" * 20)
    [unreadable] = transcripts.claude_code(broken, "cc", TS)  # a line ingest quarantines (invalid_json)
    assert unreadable.startswith(b"unreadable Claude Code session file: corrupt gzip: Error -3 while decompressing")
    report = ingest.ingest_landing(conn, home.landing, None, CurationConfig())
    # the entity that is no object, the observation 7, the summary without text
    assert report.quarantined_lines == 3
    assert conn.execute("select min(ts)::varchar, max(ts)::varchar from raw.events where type like 'run.%'").fetchone() == (
        "2026-11-02 10:00:00", "2026-11-02 10:00:05")
    assert conn.execute("select data::json->>'$.query' from raw.events where type = 'memory.recall'").fetchone() == ("(whole graph)",)


def test_tau_bench_and_swe_agent_records_of_other_shapes_import_without_a_crash(home, conn, tmp_path):
    tau = tmp_path / "tau.json"
    tau.write_bytes(orjson.dumps([{"reward": 1, "traj": [
        {"role": "user", "content": "Book a flight"},
        {"role": "assistant", "tool_calls": [{"function": "book"}, {"function": {"name": "book", "arguments": {"to": "OSL"}}}]},
        {"role": "assistant", "tool_calls": 3}]}]))
    swe = tmp_path / "run.traj"
    swe.write_bytes(orjson.dumps({"history": [{"role": "user", "content": "Fix it"},
                                              {"role": "assistant", "tool_calls": [{"function": {"arguments": ""}},
                                                                                    {"function": "open x"}, {"function": {"arguments": "open a.py"}}]}],
                                  "info": {"exit_status": ["submitted"]}}))
    land(transcripts.tau_bench(tau, "tau", TS), home.landing, "tau-bench", tau)
    land(transcripts.swe_agent(swe, "swe", TS), home.landing, "swe-agent", swe)
    report = ingest.ingest_landing(conn, home.landing, None, CurationConfig())
    assert (report.valid_events, report.quarantined_lines) == (6, 0)
    texts = dict(conn.execute("select namespace, data::json->>'$.text' from raw.events where type = 'memory.write'").fetchall())
    assert texts == {"tau": "Requests: Book a flight Actions: ?() book(to=OSL)", "swe": "Task: Fix it Actions: open a.py"}
    assert conn.execute("select data::json->>'$.exit_status' from raw.events where type = 'run.end' and namespace = 'swe'"
                        ).fetchone() == ('["submitted"]',)


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**64 - 1) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12) | st.sampled_from(["2026-11-02T10:00:00Z", "2026-11-02T10:00:00", "0001-01-01T00:00:00+05:00",
                                              "[oops", "[1, 2]", "a, b", "0.5", "high", "open a.py", ""]),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12)


def _shaped(keys: list[str], **fixed) -> st.SearchStrategy:
    """Objects with some of a format's keys (any JSON value under each) and the fixed ones."""
    return st.fixed_dictionaries({k: v for k, v in fixed.items()}, optional={k: _json for k in keys})


_block = _shaped(["id", "input", "content", "tool_use_id", "text"],
                 type=st.sampled_from(["tool_use", "tool_result", "text"]),
                 name=st.sampled_from(["memory", "mcp__memory__create_entities", "mcp__memory__add_observations",
                                       "mcp__memory__search_nodes", "mcp__memory__read_graph", "other"]) | _json)
_message = st.fixed_dictionaries({}, optional={"role": st.sampled_from(["user", "assistant", "system"]),
                                               "content": _json | st.lists(_block | _json, max_size=3),
                                               "tool_calls": _json | st.lists(_shaped(["function"]), max_size=3)})
FORMATS = {
    "flat": (flat.convert, st.lists(_shaped(["text", "memory", "id", "created_at", "last_accessed_at", "updated_at",
                                             "user_id", "class", "importance", "tags"]) | _json, max_size=6), "lines"),
    "mcp-memory": (mcp_memory.convert, st.lists(_shaped(["name", "entityType", "observations", "from", "to", "relationType"],
                                                       type=st.sampled_from(["entity", "relation", "x"])) | _json,
                                                max_size=6), "lines"),
    "claude-code": (transcripts.claude_code, st.lists(
        _shaped(["summary", "leafUuid", "uuid"], type=st.sampled_from(["user", "assistant", "summary"]),
                timestamp=_json, sessionId=st.sampled_from(["s-1", "s-2"]) | _json, message=_message | _json),
        max_size=6), "lines"),
    "tau-bench": (transcripts.tau_bench, st.lists(_shaped(["reward"], traj=st.lists(_message | _json, max_size=4) | _json)
                                                  | _json, max_size=4), "document"),
    "swe-agent": (transcripts.swe_agent, _shaped(["info"], history=st.lists(_message | _json, max_size=4) | _json,
                                                 trajectory=st.lists(_shaped(["action"]) | _json, max_size=4) | _json)
                  | _json, "document"),
}


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_an_importer_never_crashes_and_passes_on_what_it_cannot_read(tmp_path_factory, data):
    fmt = data.draw(st.sampled_from(sorted(FORMATS)))
    convert, records, layout = FORMATS[fmt]
    drawn = data.draw(records)
    src = tmp_path_factory.mktemp("src") / "source.json"
    # (the stdlib writes any JSON a source might hold)
    body = json.dumps(drawn) if layout == "document" else "\n".join(json.dumps(r) for r in drawn)
    src.write_text(body)
    events = convert(src, "ns", TS)
    assert all(isinstance(e, (dict, bytes)) for e in events)
    if fmt in ("flat", "mcp-memory"):  # a record is converted or passed on, never left out
        assert len(events) >= sum(1 for r in drawn if r not in ("", None) and not (isinstance(r, str) and not r.strip()))
    land(events, tmp_path_factory.mktemp("landing"), fmt, src)  # every event serialises
