"""Importers on real files from ../shared/data."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from memcurator import ingest
from memcurator.config import CurationConfig
from memcurator.importers import land, mcp_memory, transcripts
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


def _ingest(home, conn, events, fmt, src):
    land(events, home.landing, fmt, src)
    return ingest.ingest_landing(conn, home.landing, None, CurationConfig())


def test_real_tau_bench_runs_become_runs_with_outcomes_and_one_episode_each(home, conn):
    src = shared_data("tau-bench-trajectories", "gpt-4o-airline.dev.json.gz")
    events = transcripts.tau_bench(src, "tau", datetime(2024, 5, 15, tzinfo=timezone.utc))
    report = _ingest(home, conn, events, "tau-bench", src)
    assert report.quarantined_lines == 0 and report.valid_events == 120
    derive_night(conn, datetime(2024, 5, 16), CurationConfig())
    runs = conn.execute("select outcome, count(*) from core.runs group by 1 order by 1").fetchall()
    assert sum(n for _, n in runs) == 40 and {o for o, _ in runs} == {"failure", "success"}
    # the answer key never reaches the log: no task ids, expected actions or hidden instructions
    logged = " ".join(r[0] for r in conn.execute("select data from raw.events").fetchall())
    assert "task_id" not in logged and "You are mia_li_3668" not in logged and "gt_data_hash" not in logged
    assert conn.execute("select count(*) from core.entries where class = 'episodic'").fetchone()[0] == 40


def test_real_swe_agent_trajectories_import_with_exit_statuses(home, conn):
    folder = shared_data("swe-agent-trajectories")
    when = datetime(2024, 12, 1, tzinfo=timezone.utc)
    events = []
    for src in sorted(folder.glob("*.traj")):
        events += transcripts.swe_agent(src, "swe", when)
    report = _ingest(home, conn, events, "swe-agent", folder / "all.traj")
    assert report.quarantined_lines == 0 and report.valid_events == 3 * 22
    derive_night(conn, datetime(2024, 12, 2), CurationConfig())
    outcomes = dict(conn.execute("select outcome, count(*) from core.runs group by 1").fetchall())
    assert outcomes == {"unknown": 22}  # 21 submitted (unverified) and one without info
    assert conn.execute("select max(length(text)) from core.entries").fetchone()[0] <= transcripts.DIGEST_CHARS


def test_real_claude_code_fixtures_become_sessions_and_bad_records_are_quarantined(home, conn):
    folder = shared_data("claude-code-transcripts-fixtures")
    when = datetime(2025, 6, 14, tzinfo=timezone.utc)
    events = {src.name: transcripts.claude_code(src, "cc", when) for src in sorted(folder.glob("*.jsonl"))}
    for name, evs in events.items():
        land(evs, home.landing, "claude-code", folder / name)
    report = ingest.ingest_landing(conn, home.landing, None, CurationConfig())
    passed_on = sum(isinstance(e, bytes) for evs in events.values() for e in evs)
    assert passed_on == 7 and report.quarantined_lines == 7  # the fixture's deliberately broken records
    assert report.valid_events == sum(len(evs) for evs in events.values()) - passed_on
    derive_night(conn, datetime(2025, 6, 15), CurationConfig())
    sessions = {r[0] for r in conn.execute("select run_id from core.runs").fetchall()}
    assert sessions == {"cc-edge_cases", "cc-session_b", "cc-test_session", "cc-todowrite_session"}
    summaries = conn.execute("select count(*) from core.entries where class = 'episodic'").fetchone()[0]
    assert summaries == 3
