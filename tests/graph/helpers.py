"""Run the real nightly job on a temporary home."""

from __future__ import annotations

import dagster as dg

from memcurator.home import Home
from pipelines.definitions import build_definitions, build_resources

QUIET = {"loggers": {"console": {"config": {"log_level": "ERROR"}}}}


def run_night(home: Home, night: str, **curation) -> dg.ExecuteInProcessResult:
    defs = build_definitions(build_resources(home=str(home.root), **curation))
    return defs.resolve_job_def("nightly_curation").execute_in_process(
        partition_key=night, run_config=QUIET, raise_on_error=False)


def check_results(result: dg.ExecuteInProcessResult) -> dict[tuple[str, str], bool]:
    out = {}
    for event in result.all_events:
        if event.event_type_value == "ASSET_CHECK_EVALUATION":
            data = event.event_specific_data
            out[(data.asset_check_key.asset_key.to_user_string(), data.asset_check_key.name)] = data.passed
    return out


def materialized_keys(result: dg.ExecuteInProcessResult) -> set[str]:
    return {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
