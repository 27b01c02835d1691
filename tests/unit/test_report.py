"""The store-health report: one chart per series over the nights, trends, and no memory content."""

from __future__ import annotations

import re
import shutil
from datetime import datetime, timedelta

from typer.testing import CliRunner

from memcurator import ingest
from memcurator.cli import app
from memcurator.config import CurationConfig
from memcurator.night import derive_night
from memcurator.report import SERIES, write_report
from tests.conftest import write, write_jsonl

SECRET_TEXT = "retry the ledger call with jittered backoff"


def test_report_draws_every_series_over_the_nights_without_entry_text(conn, home, tmp_path):
    lines = [write(f"{SECRET_TEXT} variant {i}", entry_id=f"e{i}", ts=f"2026-11-0{1 + i % 3}T10:00:00Z") for i in range(9)]
    write_jsonl(home.landing / "f.jsonl", lines)
    ingest.ingest_landing(conn, home.landing, None, CurationConfig())
    for night in range(3):
        derive_night(conn, datetime(2026, 11, 2) + timedelta(days=night), CurationConfig())
    conn.execute("CHECKPOINT")
    conn.close()
    page = write_report(home.store, tmp_path / "r.html", generated=datetime(2026, 11, 5)).read_text()
    # a series with no values (no injections, no conflicts here) says so instead of drawing an empty chart
    assert page.count("<svg") + page.count('class="none"') == len(SERIES) and page.count("<svg") >= 9
    assert "3 nights, 2026-11-01 to 2026-11-03" in page
    # entries written so far grow 3 -> 6 -> 9: the chart's last point and the headline say 9
    assert re.search(r'id="entries"><h2>Entries written so far: 9</h2>', page)
    assert "rising over the last 3 nights" in page
    assert "ledger" not in page and "<script" not in page


def test_the_command_says_when_it_cannot_write_the_report(conn, home, tmp_path):
    write_jsonl(home.landing / "f.jsonl", [write(f"{SECRET_TEXT} variant {i}", entry_id=f"e{i}", ts="2026-11-01T10:00:00Z")
                                                  for i in range(3)])
    ingest.ingest_landing(conn, home.landing, None, CurationConfig())
    derive_night(conn, datetime(2026, 11, 2), CurationConfig())
    conn.execute("CHECKPOINT")
    conn.close()
    shutil.copyfile(home.store, home.published)
    blocked = tmp_path / "a-file"
    blocked.write_text("")  # the report's folder would be a file
    result = CliRunner().invoke(app, ["report", "--out", str(blocked / "r.html"), "--home", str(home.root)])
    assert result.exit_code == 1 and result.exception.__class__ is SystemExit, result.output
    # (the console wraps its lines at the terminal's width, within the path too)
    assert f"cannotwrite{blocked / 'r.html'}" in "".join(result.output.split())
    result = CliRunner().invoke(app, ["report", "--out", str(tmp_path / "r.html"), "--home", str(home.root)])
    assert result.exit_code == 0 and (tmp_path / "r.html").exists()
