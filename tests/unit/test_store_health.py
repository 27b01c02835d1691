"""Store health's injected ages: how old the entries injected into prompts were, and how many were old
and unverified."""

from __future__ import annotations

from datetime import datetime, timedelta

from memcurator import ingest
from memcurator.config import CurationConfig
from memcurator.night import derive_night
from tests.conftest import ev, write, write_jsonl

AS_OF = datetime(2026, 11, 30)


def at(days_before: float) -> str:
    return (AS_OF - timedelta(days=days_before)).isoformat() + "Z"


def test_injected_ages_and_the_share_old_and_unverified(conn, home):
    results = [{"entry_id": e, "rank": i, "injected": True} for i, e in enumerate(("old", "checked", "young"), 1)]
    lines = [
        write("rotate the deploy keys before the audit window opens", entry_id="old", ts=at(200)),
        write("pin the compiler version in every build image", entry_id="checked", ts=at(200)),
        write("the staging database restarts on sundays", entry_id="young", ts=at(20)),
        ev("memory.check", {"entry_id": "checked", "status": "pass"}, ts=at(40)),  # verified 30 days before
        ev("memory.recall", {"query": "q", "results": results}, ts=at(10)),
        # not injected, and injected before the last 30 days: neither counts
        ev("memory.recall", {"query": "q", "results": [{"entry_id": "old", "rank": 1, "injected": False}]}, ts=at(5)),
        ev("memory.recall", {"query": "q", "results": [{"entry_id": "old", "rank": 1, "injected": True}]}, ts=at(45)),
    ]
    write_jsonl(home.landing / "f.jsonl", lines)
    cfg = CurationConfig()
    ingest.ingest_landing(conn, home.landing, None, cfg)
    derive_night(conn, AS_OF, cfg)
    injections, median, share = conn.execute(
        "select injections, injected_age_median_days, injected_old_unverified_share from mart.store_health "
        "where namespace = 'ns-a'").fetchone()
    assert injections == 3
    assert median == 190  # 190, 190 and 10 days old when injected
    assert share == 1 / 3  # "old": older than 90 days, never verified; "checked" was, 30 days before
