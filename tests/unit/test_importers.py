"""Importers on small hand-made files: mapping, idempotence, nothing dropped silently."""

from __future__ import annotations

from datetime import datetime, timezone

import orjson

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
