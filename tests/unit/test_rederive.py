"""The reproducibility check (memcurator/rederive.py): a store's night derived again from its log alone
is compared with the store, table by table."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import replace
from datetime import timedelta

import orjson
import pytest
from typer.testing import CliRunner

from memcurator import cli, night, rederive, store
from memcurator.cli import app
from memcurator.config import CurationConfig
from memcurator.entries import as_of_for_night
from memcurator.home import Home
from tests.unit.test_nearindex import FIRST, fleet  # noqa: F401 (the same demo fleet, a fixture of this module too)

CFG = CurationConfig()


@pytest.fixture(scope="module")
def chained(fleet, tmp_path_factory):  # noqa: F811
    """A store derived night after night (each night reusing the one before), kept as a file to copy."""
    path = tmp_path_factory.mktemp("rederive") / "chained.duckdb"
    shutil.copyfile(fleet.store, path)
    with store.connect(path) as conn:
        for k in (0, 2, 3, 5):
            night.derive_night(conn, as_of_for_night(FIRST + timedelta(days=k)), CFG)
    return path


@pytest.fixture
def home(chained, tmp_path) -> Home:
    home = Home.from_env(tmp_path / "home").ensure()
    shutil.copyfile(chained, home.store)
    return home


def _stored_names(path) -> set[str]:
    with store.connect(path, read_only=True) as conn:
        return {r[0] for r in conn.execute("select table_schema || '.' || table_name from information_schema.tables "
                                           "where table_schema in ('core', 'mart')").fetchall()}


def test_an_incrementally_derived_store_is_identical_to_its_rederivation(home):
    report = rederive.rederive_check(home.store)
    assert report.as_of == as_of_for_night(FIRST + timedelta(days=5))  # the last night derived
    assert {t.table for t in report.tables} == _stored_names(home.store)  # every table and view, none left out
    assert report.identical, [t for t in report.tables if not t.identical]
    rows = {t.table: t.stored_rows for t in report.tables}
    assert rows["core.entry_lifecycle"] > 100  # compared with rows on both sides, conflicts and merges too
    assert rows["core.contradictions"] > 0 and rows["core.supersede_links"] > 0 and rows["core.principle_proposals"] > 0
    # the health history holds four nights in the store, one in the re-derivation: its night's slice is compared
    health = next(t for t in report.tables if t.table == "mart.store_health")
    with store.connect(home.store, read_only=True) as conn:
        nights = conn.execute("select count(distinct as_of) from mart.store_health").fetchone()[0]
    assert nights == 4 and health.identical and health.stored_rows > 0
    assert not [p for p in home.store.parent.iterdir() if ".rederive-" in p.name]  # the scratch folder is gone


def test_a_row_that_differs_is_found_in_its_table_alone(home):
    with store.connect(home.store) as conn:
        conn.execute("update core.entry_lifecycle set state = 'archived' where rowid = (select min(rowid) "
                     "from core.entry_lifecycle where state = 'active')")
        conn.execute("delete from core.near_duplicate_pairs where rowid = (select min(rowid) from core.near_duplicate_pairs)")
        conn.execute("create or replace view mart.recall_view as select * from mart.recall_ranking")
    report = rederive.rederive_check(home.store)
    differing = {t.table: t for t in report.tables if not t.identical}
    assert set(differing) == {"core.entry_lifecycle", "core.near_duplicate_pairs", "mart.recall_view"}
    assert (differing["core.entry_lifecycle"].only_stored, differing["core.entry_lifecycle"].only_rederived) == (1, 1)
    pairs = differing["core.near_duplicate_pairs"]
    assert (pairs.only_stored, pairs.only_rederived, pairs.rederived_rows - pairs.stored_rows) == (0, 1, 1)
    assert not differing["mart.recall_view"].same_columns  # a view is compared by its definition


def test_another_night_or_a_store_without_one(home, tmp_path):
    # an earlier night: derived again from the log before its end, the store's later tables differ
    report = rederive.rederive_check(home.store, as_of_for_night(FIRST + timedelta(days=3)))
    assert report.as_of == as_of_for_night(FIRST + timedelta(days=3)) and not report.identical
    empty = tmp_path / "empty.duckdb"
    with store.connect(empty):
        pass
    with pytest.raises(ValueError, match="no derived night"):
        rederive.rederive_check(empty)
    with pytest.raises(ValueError, match="no store there"):
        rederive.rederive_check(tmp_path / "missing.duckdb")


def test_a_night_written_meanwhile_is_reported_not_compared(home, monkeypatch):
    derive = night.derive_night

    def derive_and_run_a_night_on_the_store(conn, as_of, cfg=CFG):
        derive(conn, as_of, cfg)
        with store.connect(home.store) as other:
            derive(other, as_of + timedelta(days=1), cfg)

    monkeypatch.setattr(rederive.night, "derive_night", derive_and_run_a_night_on_the_store)
    with pytest.raises(rederive.StoreChanged, match="check again"):
        rederive.rederive_check(home.store)
    assert not [p for p in home.store.parent.iterdir() if ".rederive-" in p.name]


def test_a_store_another_process_is_writing_is_reported(home):
    """A night holds the store's lock while it runs: the check says so instead of failing with DuckDB's error."""
    script = (f"import time, duckdb; c = duckdb.connect({str(home.store)!r}); print('open', flush=True); "
              "time.sleep(60)")
    writer = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "open"
        with pytest.raises(rederive.StoreChanged, match="a night may be writing it"):
            rederive.rederive_check(home.store)
    finally:
        writer.kill()
        writer.wait()
    assert not [p for p in home.store.parent.iterdir() if ".rederive-" in p.name]


def test_a_killed_checks_scratch_folder_is_removed(home):
    left = home.store.parent / f"{home.store.name}.{rederive.SCRATCH}-killed"
    left.mkdir()
    (left / "rederived.duckdb").write_bytes(b"")
    assert rederive.rederive_check(home.store).identical
    assert not left.exists()


def test_the_command_prints_the_comparison_writes_it_and_exits_1_on_a_difference(home, tmp_path):
    runner = CliRunner()
    said = lambda result: " ".join(result.output.split())  # noqa: E731 (the console wraps long lines)
    out = tmp_path / "check.json"
    result = runner.invoke(app, ["rederive-check", "--home", str(home.root), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "every table identical to the full derivation" in said(result)
    written = orjson.loads(out.read_bytes())
    assert written["identical"] and {t["table"] for t in written["tables"]} == _stored_names(home.store)
    with store.connect(home.store) as conn:
        conn.execute("delete from core.entry_score_parts where rowid = (select min(rowid) from core.entry_score_parts)")
    result = runner.invoke(app, ["rederive-check", "--home", str(home.root)])
    assert result.exit_code == 1 and "1 differ: core.entry_score_parts" in said(result)
    result = runner.invoke(app, ["rederive-check", "--home", str(tmp_path / "new-home")])
    assert result.exit_code == 1 and "no store there" in said(result)


def test_a_store_derived_with_other_settings_is_checked_with_them(fleet, tmp_path):  # noqa: F811
    """A night records every setting it ran with (core.audit_settings): the check derives with those, so
    a store whose nights ran with other knobs than the defaults is checked against its own; --set
    changes one."""
    home = Home.from_env(tmp_path / "home").ensure()
    shutil.copyfile(fleet.store, home.store)
    stricter = replace(CFG, near_duplicate_threshold=0.7, max_idle_days=20)
    with store.connect(home.store) as conn:
        for k in (0, 3):
            night.derive_night(conn, as_of_for_night(FIRST + timedelta(days=k)), stricter)
        assert CurationConfig.from_mapping(rederive.night_settings(conn)) == stricter
    assert rederive.rederive_check(home.store).identical
    differing = {t.table for t in rederive.rederive_check(home.store, cfg=CFG).tables if not t.identical}
    assert {"core.near_duplicate_pairs", "core.audit_settings"} <= differing
    assert not rederive.rederive_check(home.store, overrides={"near_duplicate_threshold": 0.6}).identical
    runner = CliRunner()
    assert runner.invoke(app, ["rederive-check", "--home", str(home.root)]).exit_code == 0
    given = ["rederive-check", "--home", str(home.root), "--set", "near_duplicate_threshold=0.6"]
    assert runner.invoke(app, given).exit_code == 1
    for bad, said in (("near_duplicate_threshold", "expected NAME=VALUE"), ("no_such_knob=1", "expected NAME=VALUE"),
                      ("judge_pass_pairs=many", "judge_pass_pairs takes values of type int"),
                      ("shingle_drop_stopwords=maybe", "takes 1 or 0 (true/false, yes/no, on/off)")):
        result = runner.invoke(app, ["rederive-check", "--home", str(home.root), "--set", bad])
        assert result.exit_code == 2 and said in " ".join(result.output.replace("│", " ").split()), result.output
    assert cli._settings(["shingle_drop_stopwords=Off", "max_idle_days=20"]) == {"shingle_drop_stopwords": False,
                                                                                 "max_idle_days": 20}
    # a store whose nights did not record their settings (code before the column): the defaults
    with store.connect(home.store) as conn:
        conn.execute("alter table core.audit_settings drop column settings")
        assert rederive.night_settings(conn) == {}


def test_the_weekly_job_passes_on_an_identical_store_and_fails_naming_what_differs(home):
    """The check as the fleet's owner schedules it in Dagster (pipelines/reproducibility.py)."""
    import dagster as dg

    from pipelines.definitions import build_resources
    from pipelines.reproducibility import reproducibility_check
    from pipelines.sensors import nightly_failure_sensor

    resources = build_resources(home=str(home.root))
    result = reproducibility_check.execute_in_process(resources=resources, raise_on_error=False)
    assert result.success
    output = next(e for e in result.all_events if e.event_type_value == "STEP_OUTPUT")
    said = {k: v.value for k, v in output.event_specific_data.metadata.items()}
    assert said == {"as_of": as_of_for_night(FIRST + timedelta(days=5)).isoformat(), "events": said["events"],
                    "tables compared": 34, "identical": True,
                    "chat judge verdicts taken as given": 0} and said["events"] > 1_000  # the rules judge here
    with store.connect(home.store) as conn:
        conn.execute("delete from core.entry_usage where rowid = (select min(rowid) from core.entry_usage)")
    with dg.DagsterInstance.ephemeral() as instance:
        result = reproducibility_check.execute_in_process(resources=resources, instance=instance, raise_on_error=False)
        failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
        assert not result.success and "1 differ: core.entry_usage" in failure.event_specific_data.error.message
        assert isinstance(failure.event_specific_data.user_failure_data.metadata["differing"], dg.MarkdownMetadataValue)
        # the failure sensor records it in the home's alerts, as it does a failed night
        run_failed = next(r.dagster_event for r in instance.all_logs(result.run_id)
                          if r.dagster_event and r.dagster_event.event_type == dg.DagsterEventType.RUN_FAILURE)
        with dg.build_run_status_sensor_context(sensor_name="nightly_failure_sensor", dagster_instance=instance,
                                                dagster_run=result.dagster_run, dagster_event=run_failed,
                                                resources={"store": resources["store"]}) as context:
            nightly_failure_sensor(context.for_run_failure())
    alert = orjson.loads((home.root / "alerts.jsonl").read_bytes().splitlines()[-1])
    assert alert["job"] == "reproducibility_check" and alert["run_id"] == result.run_id
