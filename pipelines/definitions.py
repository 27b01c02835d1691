"""The one Definitions object: every asset, check, job, schedule, sensor and resource."""

import dagster as dg

import checks.compression
import checks.contradictions
import checks.entries
import checks.expectations
import checks.health
import checks.ingest
import checks.lifecycle
from assets import audit, compression, contradictions, entries, health, ingest, lifecycle, ranking
from assets.publish import published_store_asset
from pipelines.reproducibility import reproducibility_check, reproducibility_check_schedule
from pipelines.jobs import nightly_curation
from pipelines.resources import CurationResource, StoreResource, home_settings
from pipelines.schedules import nightly_curation_schedule
from pipelines.sensors import landing_folder_sensor, nightly_failure_sensor

STAGE_MODULES = [ingest, entries, compression, contradictions, lifecycle, ranking, audit, health]
CHECK_MODULES = [checks.ingest, checks.entries, checks.compression, checks.contradictions, checks.lifecycle,
                 checks.health, checks.expectations]


def build_resources(home: str | dg.EnvVar | None = None, **curation) -> dict:
    """``home`` defaults to the MEMCURATOR_HOME environment variable, resolved at run time."""
    store = StoreResource(home=home if home is not None else dg.EnvVar("MEMCURATOR_HOME"))
    return {"store": store, "store_resource": store, "curation": CurationResource(**curation)}


def build_definitions(resources: dict) -> dg.Definitions:
    stage_assets = dg.load_assets_from_modules(STAGE_MODULES)
    publish = published_store_asset([a.key for a in stage_assets])
    return dg.Definitions(
        assets=[*stage_assets, publish],
        asset_checks=dg.load_asset_checks_from_modules(CHECK_MODULES),
        jobs=[nightly_curation, reproducibility_check],
        schedules=[nightly_curation_schedule, reproducibility_check_schedule],
        sensors=[landing_folder_sensor, nightly_failure_sensor],
        resources=resources,
        # the store has one writer: an asset materialised from the UI (the asset job, outside
        # nightly_curation) runs its steps one after the other in the run's process, as the nightly job
        # does; with Dagster's default executor each step was a process of its own, and two steps side by
        # side failed on the store's lock
        executor=dg.in_process_executor,
    )


defs = build_definitions(build_resources(**home_settings()))
