"""Definitions load, every asset explains itself, and the graph shape is reviewed as a snapshot."""

from __future__ import annotations

import json
import os
from pathlib import Path

import dagster as dg

from pipelines.definitions import defs

SNAPSHOT = Path(__file__).parent / "snapshots" / "asset_graph.json"
NOT_TABLES = {"analyst/published_store"}  # a published file, not a table: no column schema


def asset_specs():
    return list(defs.resolve_all_asset_specs())


def test_definitions_load():
    dg.Definitions.validate_loadable(defs)
    assert defs.resolve_job_def("nightly_curation")


def test_every_asset_has_description_group_kinds_owners_and_columns():
    for spec in asset_specs():
        key = spec.key.to_user_string()
        assert spec.description and "One " in spec.description, f"{key}: description must state the grain"
        assert spec.group_name and spec.group_name != "default", key
        assert spec.kinds, key
        assert spec.owners, key
        if key not in NOT_TABLES:
            assert "dagster/column_schema" in spec.metadata, key


def test_nightly_schedule_runs_at_two_utc_and_sensors_exist():
    schedule = defs.resolve_schedule_def("nightly_curation_0200_utc")
    assert schedule.cron_schedule == "0 2 * * *"
    assert schedule.default_status == dg.DefaultScheduleStatus.RUNNING
    check = defs.resolve_schedule_def("reproducibility_check_weekly")  # away from the night: it reads the store
    assert (check.cron_schedule, check.execution_timezone) == ("0 12 * * 0", "UTC")
    assert check.job_name == "reproducibility_check" and check.default_status == dg.DefaultScheduleStatus.RUNNING
    assert {s.name for s in defs.sensors} == {"landing_folder_sensor", "nightly_failure_sensor"}


def test_asset_graph_matches_snapshot():
    """Any change to keys, groups or dependencies shows up in review. UPDATE_SNAPSHOTS=1 rewrites it."""
    graph = {
        spec.key.to_user_string(): {
            "group": spec.group_name,
            "deps": sorted(d.asset_key.to_user_string() for d in spec.deps),
            "checks": sorted(c.name for c in defs.resolve_asset_graph().get_check_keys_for_assets({spec.key})),
        }
        for spec in asset_specs()
    }
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.parent.mkdir(exist_ok=True)
        SNAPSHOT.write_text(json.dumps(graph, indent=2, sort_keys=True) + "\n")
    assert SNAPSHOT.exists(), "no snapshot: run UPDATE_SNAPSHOTS=1 pytest tests/test_definitions.py and review it"
    assert graph == json.loads(SNAPSHOT.read_text())
