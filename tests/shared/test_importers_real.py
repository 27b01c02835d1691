"""Importers on real files from ../shared/data."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from memcurator import ingest
from memcurator.config import CurationConfig
from memcurator.importers import land, mcp_memory
from memcurator.night import derive_night
from tests.conftest import shared_data

pytestmark = pytest.mark.shared_data


def test_real_mcp_memory_store_imports_whole_and_repeated_entities_share_one_subject(home, conn):
    src = shared_data("mcp-memory-jsonl", "oshliaer_server-memory-editor.memory.jsonl")
    events = mcp_memory.convert(src, "mcp", datetime(2026, 6, 24, tzinfo=timezone.utc))
    land(events, home.landing, "mcp-memory", src)
    report = ingest.ingest_landing(conn, home.landing, None, CurationConfig())
    assert report.quarantined_lines == 0 and report.valid_events == len(events)
    derive_night(conn, datetime(2026, 6, 25), CurationConfig())
    assert conn.execute("select count(*) from core.entries").fetchone()[0] == len(events)
    # the store repeats the entity mcp-server-memory five times: its observations share one subject key
    assert conn.execute("select count(*) from core.entries where tags = ['mcp-server-memory']").fetchone()[0] >= 5
    # an imported store without recall telemetry: nothing is archived for being quiet
    assert conn.execute("select count(*) from core.entry_lifecycle where state = 'archived'").fetchone()[0] == 0
