"""Importers on small hand-made files: mapping, idempotence, nothing dropped silently."""

from __future__ import annotations

from datetime import datetime, timezone

import orjson

from memcurator import ingest
from memcurator.config import CurationConfig
from memcurator.importers import flat, land, mcp_memory

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
