"""The whole graph materialized on a temporary home from small fixtures."""

from __future__ import annotations

import shutil
from datetime import date

import pytest

from memcurator import demo, store
from memcurator.crash import table_hashes
from memcurator.home import Home
from tests.conftest import ev, write, write_jsonl
from tests.graph.helpers import check_results, materialized_keys, run_night

NIGHT = "2026-11-29"


def _land_fleet(home: Home) -> Home:
    demo.generate(home.landing, home.truth, writes=800, namespaces=3, days=15, seed=11, end=date(2026, 11, 29))
    write_jsonl(home.landing / "extra" / "bad.jsonl", [
        write("kept despite bad neighbours", entry_id="kept", ts="2026-11-20T00:00:00Z", namespace="fleet-001"),
        "{truncated",
        write("no reason", entry_id="x2", data={"supersedes": "kept"}, ts="2026-11-20T00:00:00Z"),
        ev("run.start", {}, namespace="a/b"),
    ])
    return home


@pytest.fixture
def fleet_home(home):
    """The fleet landed, no night run yet."""
    return _land_fleet(home)


@pytest.fixture(scope="module")
def _first_night_once(tmp_path_factory) -> Home:
    home = _land_fleet(Home.from_env(tmp_path_factory.mktemp("graph") / "home").ensure())
    assert run_night(home, NIGHT).success
    return home


@pytest.fixture
def night_home(_first_night_once, tmp_path) -> Home:
    """A copy of the fleet's home after the job's night NIGHT (run once for the module: a run is most of a test)."""
    return Home.from_env(shutil.copytree(_first_night_once.root, tmp_path / "home", symlinks=True))


SOFT_CHECKS = {("mart/recall_view", "active_set_near_duplicate_rate_below_limit"),  # warns until a curator approves
               ("mart/store_health", "store_health_distributions"),  # the same signal, across namespaces
               ("raw/events", "quarantine_share_is_small")}


def test_nightly_job_materializes_everything_and_blocking_checks_pass(fleet_home):
    result = run_night(fleet_home, NIGHT)
    assert result.success
    checks = check_results(result)
    from pipelines.definitions import defs

    expected = {(k.asset_key.to_user_string(), k.name) for k in defs.resolve_asset_graph().asset_check_keys}
    assert set(checks) == expected  # every check ran
    failing = {k for k, v in checks.items() if not v}
    assert failing <= SOFT_CHECKS, failing
    assert {"raw/events", "core/entries", "core/entry_usage", "analyst/published_store"} <= materialized_keys(result)
    with store.connect(fleet_home.published, read_only=True) as conn:
        reasons = dict(conn.execute("select reason, count(*) from raw.quarantine group by 1").fetchall())
        assert reasons["invalid_json"] >= 1 and reasons["supersede_without_reason"] >= 1 and reasons["invalid_id"] >= 1
        assert conn.execute("select count(*) from analyst.entries where entry_id = 'kept'").fetchone()[0] == 1
    # the recall view's run metadata (row count, headlines, profile) reads mart.recall_ranking, one row per row
    # of the view, without computing the view
    meta = next(e.materialization.metadata for e in result.get_asset_materialization_events()
                if e.asset_key.to_user_string() == "mart/recall_view")
    with store.connect(fleet_home.store, read_only=True) as conn:
        rows, active, warned = conn.execute("select count(*), count(*) filter (where tier = 'active'), "
                                            "count(*) filter (where has_failed_check) from mart.recall_view").fetchone()
    assert (meta["dagster/row_count"].value, meta["active_set"].value, meta["with_failed_check_warning"].value) == (
        rows, active, warned) and active > 0
    profile = meta["profile"].value
    assert "| text (the view's, not in mart.recall_ranking) | VARCHAR | - | - |" in profile
    # the ingest's: the days of event time whose events went to the lake, a folder each
    ingested = next(e.materialization.metadata for e in result.get_asset_materialization_events()
                    if e.asset_key.to_user_string() == "raw/events")
    assert ingested["lake_days_written"].value == len(list((fleet_home.lake / "events").iterdir())) > 0
    assert "| entry_id | VARCHAR | 0 |" in profile and "sample" not in profile  # a small store: every row read


def test_rerunning_a_night_and_relanding_files_change_nothing(night_home):
    first = table_hashes(night_home.store)
    assert run_night(night_home, NIGHT).success
    assert table_hashes(night_home.store) == first
    # a copy of an already-ingested file lands again under another name: no new events
    src = sorted(next(night_home.landing.glob("demo-*")).iterdir())[0]
    (night_home.landing / "again").mkdir()
    (night_home.landing / "again" / src.name).write_bytes(src.read_bytes())
    assert run_night(night_home, NIGHT).success
    after = table_hashes(night_home.store)
    assert {k: v for k, v in after.items() if k != "raw.landed_files" and k != "raw.quarantine"} == {
        k: v for k, v in first.items() if k != "raw.landed_files" and k != "raw.quarantine"}


def test_tables_are_a_pure_function_of_log_and_night(night_home, tmp_path):
    """A second home fed the same files gives identical derived tables."""
    other = Home.from_env(tmp_path / "other").ensure()
    for path in night_home.landing.rglob("*.jsonl*"):
        target = other.landing / path.relative_to(night_home.landing)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    assert run_night(other, NIGHT).success
    assert table_hashes(night_home.store) == table_hashes(other.store)


def test_a_past_night_rebuilds_as_it_stood(fleet_home):
    assert run_night(fleet_home, "2026-11-20").success
    with store.connect(fleet_home.store, read_only=True) as conn:
        latest = conn.execute("select max(last_written_at) from core.entries").fetchone()[0]
        as_of = conn.execute("select as_of from work.refreshes where table_name = 'core.entries'").fetchone()[0]
    assert str(as_of) == "2026-11-21 00:00:00" and latest < as_of


def test_corrupted_store_trips_a_blocking_check_and_stops_downstream(night_home):
    with store.connect(night_home.store) as conn:  # simulate a store damaged outside the pipeline
        conn.execute("insert into raw.events select * from raw.events limit 1")
    result = run_night(night_home, NIGHT)
    assert check_results(result)[("raw/events", "event_ids_are_unique")] is False
    assert not ({"core/entries", "analyst/published_store"} & materialized_keys(result))


def test_dagster_job_and_plain_derivation_give_identical_tables(night_home, tmp_path):
    """The evaluation and the benchmark use memcurator.night; it must equal the real graph."""
    from datetime import datetime

    from memcurator.config import CurationConfig
    from memcurator.night import ingest_and_derive

    other = Home.from_env(tmp_path / "plain").ensure()
    with store.connect(other.store) as conn:
        ingest_and_derive(conn, night_home.landing, datetime(2026, 11, 30), CurationConfig())
    job_tables = table_hashes(night_home.store, ("core", "mart"))
    assert job_tables and job_tables == table_hashes(other.store, ("core", "mart"))


def test_store_health_keeps_one_slice_per_night(fleet_home):
    assert run_night(fleet_home, "2026-11-27").success and run_night(fleet_home, NIGHT).success
    with store.connect(fleet_home.store, read_only=True) as conn:
        first = conn.execute("select * from mart.store_health order by all").fetchall()
        nights = {r[0] for r in conn.execute("select distinct night from mart.store_health").fetchall()}
        assert [str(n) for n in sorted(nights)] == ["2026-11-27", "2026-11-29"]
        earlier, later = conn.execute(
            "select sum(entries) filter (where night = '2026-11-27'), sum(entries) filter (where night = '2026-11-29') "
            "from mart.store_health").fetchone()
        assert earlier < later  # the older night was built as it stood
    assert run_night(fleet_home, NIGHT).success  # re-running a night replaces only its own slice
    with store.connect(fleet_home.store, read_only=True) as conn:
        assert conn.execute("select * from mart.store_health order by all").fetchall() == first


def test_the_readmes_analyst_queries_run_on_the_published_snapshot(night_home):
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = readme.split("## Example analyst queries (`make sql`)", 1)[1].split("```sql", 1)[1].split("```", 1)[0]
    queries = [q.strip() for q in block.split(";") if q.strip()]
    assert len(queries) >= 5
    with store.connect(night_home.published, read_only=True) as conn:
        for query in queries:  # as `make sql` runs them, from the repository beside the default home
            assert conn.execute(query.replace("'.memcurator/", f"'{night_home.root}/")).fetchall(), query
        lake = conn.execute(f"select count(*) from read_parquet('{night_home.lake}/events/*/*.parquet')").fetchone()[0]
        assert lake == conn.execute("select count(*) from raw.events").fetchone()[0] > 0


def test_every_asset_materialised_from_the_ui_runs_on_the_store(fleet_home):
    """The UI's "Materialize all" (Dagster's asset job, with the Definitions' executor, in an instance of
    its own): its steps share the store. Under Dagster's default executor each step was a process of its
    own, and two side by side failed on the store's lock."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    dagster = Path(sys.executable).with_name("dagster")
    env = {**os.environ, "MEMCURATOR_HOME": str(fleet_home.root), "DAGSTER_HOME": str(fleet_home.dagster_home)}
    done = subprocess.run([str(dagster), "asset", "materialize", "-m", "pipelines.definitions", "--select", "*",
                           "--partition", NIGHT], capture_output=True, text=True, env=env,
                          cwd=Path(__file__).resolve().parents[2], timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Conflicting lock" not in done.stderr
    with store.connect(fleet_home.store, read_only=True) as conn:
        assert conn.execute("select count(*) from mart.recall_view").fetchone()[0] > 0
    assert fleet_home.published.exists()


def test_core_entries_loads_the_compiled_loops_ahead_only_for_a_stage_after_it_that_runs_them(night_home, monkeypatch):
    """Materialised alone (from the UI), core.entries leaves the compiled loops unloaded: no stage of its run
    would call them, and the run's process would wait for the load at its end. With the near-duplicate stage
    (or the contradictions) in the run it loads them, as in the nightly job."""
    import dagster as dg

    from memcurator import text
    from pipelines.definitions import build_definitions, build_resources
    from tests.graph.helpers import QUIET

    asked = []
    monkeypatch.setattr(text, "load_compiled_ahead", asked.append)
    job = build_definitions(build_resources(home=str(night_home.root))).resolve_implicit_global_asset_job_def()
    for selection in (["core/entries"], ["core/entries", "core/near_duplicate_pairs"], ["core/entries", "core/contradictions"]):
        asked.clear()
        done = job.execute_in_process(asset_selection=[dg.AssetKey.from_user_string(k) for k in selection],
                                      partition_key=NIGHT, run_config=QUIET)
        assert done.success
        assert len(asked) == (len(selection) - 1), selection
    asked.clear()
    assert run_night(night_home, NIGHT).success
    assert len(asked) == 1


def test_a_landed_file_written_to_after_its_ingest_is_a_warning_not_a_failure(night_home):
    """The ingest does not read a landed file again: a line appended to one after its night is in no table.
    The night says so (a check that warns, the files' count only in Dagster's history) and goes on."""
    landed = sorted(night_home.landing.rglob("*.jsonl"))[0]
    with landed.open("a") as f:
        f.write('{"id": "late-1", "type": "memory.write", "ts": "2026-11-20T00:00:00Z", "namespace": "fleet-001", '
                '"data": {"entry_id": "late", "text": "appended after the ingest", "class": "lesson"}}\n')
    result = run_night(night_home, NIGHT)
    assert result.success
    assert check_results(result)[("raw/events", "landed_files_unchanged_since_ingest")] is False
    (evaluation,) = [e.event_specific_data for e in result.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"
                     and e.event_specific_data.asset_check_key.name == "landed_files_unchanged_since_ingest"]
    assert evaluation.metadata["files"].value == 1



def test_a_file_in_the_landing_the_ingest_does_not_read_is_a_warning(night_home):
    """A file copied into the landing folder under another name than a transcript's is never read: the night
    warns with the count (the status names it) and goes on."""
    (night_home.landing / "copied").mkdir(exist_ok=True)
    (night_home.landing / "copied" / "events.json").write_text("{}\n")
    result = run_night(night_home, NIGHT)
    assert result.success
    assert check_results(result)[("raw/events", "every_landing_file_is_read")] is False
    (evaluation,) = [e.event_specific_data for e in result.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"
                     and e.event_specific_data.asset_check_key.name == "every_landing_file_is_read"]
    assert evaluation.metadata["files"].value == 1
