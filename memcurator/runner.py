"""Run the nightly job in-process on a persistent Dagster instance (so runs show in the UI)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from memcurator.config import read_settings
from memcurator.home import HOME_ENV, Home


@dataclass
class RunOutcome:
    success: bool
    run_id: str
    checks: list[tuple[str, str, bool]]
    failed_steps: list[str]


def run_nightly(home: Home, night: str, **curation_overrides) -> RunOutcome:
    """Materialize the nightly job for one night with the home's settings (settings.toml, then
    ``curation_overrides``); imports Dagster lazily (the CLI stays fast). Raises ``SettingsError`` for a
    settings file the night cannot use, before anything runs."""
    settings = {**read_settings(home.settings), **curation_overrides}
    home.ensure()
    os.environ[HOME_ENV] = str(home.root)
    os.environ["DAGSTER_HOME"] = str(home.dagster_home)
    import dagster as dg

    from pipelines.definitions import defs

    run_config: dict = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    if settings:  # (the definitions read this home's file too, when they were loaded for it; this process
        # may have loaded them for another home, and the run's config keeps what the night used in its record)
        run_config["resources"] = {"curation": {"config": settings}}
    job = defs.resolve_job_def("nightly_curation")
    with dg.DagsterInstance.get() as instance:
        result = job.execute_in_process(partition_key=night, instance=instance, run_config=run_config,
                                        raise_on_error=False)
    checks = []
    for event in result.all_events:
        if event.event_type_value == "ASSET_CHECK_EVALUATION":
            data = event.event_specific_data
            checks.append((data.asset_check_key.asset_key.to_user_string(), data.asset_check_key.name, data.passed))
    failed = [e.step_key for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    return RunOutcome(result.success, result.run_id, checks, failed)
