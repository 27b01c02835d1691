"""Schedules."""

import dagster as dg

from pipelines.jobs import nightly_curation

# The store is curated once a night, after the day's runs have landed: 02:00 UTC for yesterday's
# partition. On by default so a fresh `make ui` keeps the store curated without a click.
nightly_curation_schedule = dg.build_schedule_from_partitioned_job(
    nightly_curation,
    name="nightly_curation_0200_utc",
    hour_of_day=2,
    minute_of_hour=0,
    default_status=dg.DefaultScheduleStatus.RUNNING,
)
