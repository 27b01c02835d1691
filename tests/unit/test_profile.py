"""Where a night's time goes: the profile of every statement, summed by stage, operator and table read."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from typer.testing import CliRunner

from memcurator import bench, night, profile, store
from memcurator.cli import app
from memcurator.crash import table_hashes
from memcurator.home import Home

AS_OF = bench.START + timedelta(days=bench.DAYS + 1)


def _scan(table: str, rows: int, seconds: float) -> dict:
    return {"operator_name": "TABLE_SCAN ", "operator_timing": seconds, "operator_rows_scanned": rows,
            "extra_info": {"Table": table}, "children": []}


def _profile(folder, number: int, cpu: float, *operators: dict, checkpoint: float = 0.0) -> None:
    folder.mkdir(exist_ok=True)
    (folder / f"{number}.json").write_text(json.dumps({
        "cpu_time": cpu, "latency": cpu, "checkpoint_latency": checkpoint,
        "children": [{"operator_name": "PROJECTION", "operator_timing": 0.001, "children": list(operators)}]}))


def test_statements_are_summed_by_stage_operator_and_large_stored_table(tmp_path):
    join = {"operator_name": "HASH_JOIN", "operator_timing": 0.02, "children": [
        _scan("store.core.entries", 150_000, 0.03),    # a large stored table: a large read
        _scan('"temp".main.stage_scope', 900_000, 0.01)]}  # a temp table, however large: not the store's
    _profile(tmp_path / "a", 0, 0.051, join)  # (a's statement 1, its COMMIT, has no profile: DuckDB makes none)
    _profile(tmp_path / "b", 0, 0.3, _scan("other.core.entries", 200_000, 0.25), _scan("store.core.checks", 50, 0.001),
             checkpoint=0.1)
    summary = profile.summarize([
        profile.Stage("a", 0.07, [(0.05, "select 1 -- a comment"), (0.01, "COMMIT")], tmp_path / "a"),
        profile.Stage("b", 0.25, [(0.2, "checkpoint")], tmp_path / "b")])
    stages = {s["name"]: s for s in summary["stages"]}
    assert stages["a"]["statements"] == 2 and stages["a"]["thread_s"] == 0.051 and stages["b"]["checkpoint_s"] == 0.1
    assert stages["a"]["unprofiled_s"] == 0.01 and stages["b"]["unprofiled_s"] == 0 and summary["unprofiled_s"] == 0.01
    assert summary["statements"] == 3 and summary["thread_s"] == 0.351 and summary["wall_s"] == 0.32
    reads = summary["large_table_reads"]
    # core.entries read twice (the catalog, the file's name, left out), the small and the temp table not
    assert reads["count"] == 2 and reads["rows_scanned"] == 350_000 and reads["thread_s"] == 0.28
    assert reads["by_table"] == [{"table": "core.entries", "count": 2, "thread_s": 0.28, "rows_scanned": 350_000}]
    operators = {(o["operator"], o["table"]): o for o in summary["operators"]}
    assert operators[("TABLE_SCAN", "core.entries")]["count"] == 2
    assert operators[("HASH_JOIN", "")]["thread_s"] == 0.02 and ("TABLE_SCAN", "main.stage_scope") in operators
    assert [s["stage"] for s in summary["slowest"]] == ["b", "a"]  # slowest first; the COMMIT has no profile
    assert summary["slowest"][1]["statement"] == "select 1"


@pytest.fixture(scope="module")
def churned(tmp_path_factory) -> Home:
    """A home after its first night, with the next day's writes landed."""
    home = Home.from_env(tmp_path_factory.mktemp("profile") / "home").ensure()
    fleet = bench.generate(800, 8)
    bench.land(fleet, home.landing, "fleet.jsonl")
    with store.connect(home.store) as conn:
        night.ingest_and_derive(conn, home.landing, AS_OF)
    bench.land(bench.churn_writes(fleet, 40, 8, 60, 2, AS_OF, "c"), home.landing, "churn.jsonl")
    return home


def test_a_profiled_night_gives_the_tables_of_a_night_not_profiled(churned, tmp_path, monkeypatch):
    monkeypatch.setattr(profile, "LARGE_TABLE_ROWS", 100)
    profiled = profile.copy_store(churned.store, tmp_path / "profiled")
    summary = profile.profile_night(profiled, churned.landing, AS_OF + timedelta(days=1))
    assert [s["name"] for s in summary["stages"]] == [profile.INGEST, *(name for name, _ in night.STEPS), profile.CLOSE]
    assert summary["statements"] == sum(s["statements"] for s in summary["stages"]) > 500
    assert summary["thread_s"] > 0 and all(s["statements"] for s in summary["stages"])
    assert "core.entries" in {r["table"] for r in summary["large_table_reads"]["by_table"]}
    # the same night without the profile: the same tables
    plain = profile.copy_store(churned.store, tmp_path / "plain")
    with store.connect(plain) as conn:
        night.ingest_and_derive(conn, churned.landing, AS_OF + timedelta(days=1))
    assert table_hashes(profiled) == table_hashes(plain)


def test_the_command_profiles_a_copy_and_leaves_the_store_as_it_was(churned, tmp_path):
    before = table_hashes(churned.store)
    day = AS_OF.date().isoformat()  # the night whose as_of is the day after AS_OF
    out = tmp_path / "profile.json"
    result = CliRunner().invoke(app, ["profile-night", "--night", day, "--home", str(churned.root), "--out", str(out)])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())  # (the console wraps its lines)
    assert "statements" in said and "checkpoint at close" in said
    written = json.loads(out.read_bytes())
    assert written["as_of"] == (AS_OF + timedelta(days=1)).isoformat() and written["statements"] > 500
    assert table_hashes(churned.store) == before
    assert not [p for p in churned.store.parent.iterdir() if p.name.startswith(f"{churned.store.name}.")]


def test_the_report_gives_a_profiled_churn_night():
    summary = profile.summarize([profile.Stage("core.entries", 0.1, [], None)]) | {"large_table_reads": {
        "min_rows": 100_000, "count": 3, "thread_s": 0.5, "rows_scanned": 3_000_000,
        "by_table": [{"table": "core.entries", "count": 3, "thread_s": 0.5, "rows_scanned": 3_000_000}]}}
    lines = profile.profile_markdown(summary)
    assert "| core.entries | 3 | 3,000,000 | 0.50 |" in lines and "3 reads of stored tables" in lines[0]


def test_the_command_says_why_it_cannot_profile(tmp_path, churned):
    # a home without a store yet, a night that is not a date, a store a night holds: a message, no traceback
    said = lambda result: " ".join(result.output.split())  # noqa: E731 (the console wraps its lines)
    empty = tmp_path / "empty"
    result = CliRunner().invoke(app, ["profile-night", "--night", "2026-11-01", "--home", str(empty)])
    assert result.exit_code == 1 and "no store at" in said(result) and result.exception.__class__ is SystemExit
    result = CliRunner().invoke(app, ["profile-night", "--night", "yesterday", "--home", str(churned.root)])
    assert result.exit_code == 2 and "expected a date" in said(result)
    with store.connect(churned.store):  # the writer's lock, as a running night holds it
        result = CliRunner().invoke(app, ["profile-night", "--night", AS_OF.date().isoformat(),
                                          "--home", str(churned.root)])
    assert result.exit_code == 1 and "cannot be read now" in said(result)
    assert not [p for p in churned.store.parent.iterdir() if p.name.startswith(f"{churned.store.name}.")]
