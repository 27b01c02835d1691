"""The sharded night: the same builders, distributed over namespace shards (a second code location).

Three jobs, because their assets are partitioned differently:
- ``shard_split``  (night): the one writer ingests the landing folder and writes each shard's input;
- ``shard_derive`` (night × shard): derives one shard anywhere; the executor is configuration
  (``MEMCURATOR_EXECUTOR``: multiprocess by default, ``celery`` for dagster-celery workers);
- ``shard_merge``  (night): the one writer unions the shards into the store and publishes.

Configuration, read when the definitions load (identically on every host and worker):
``MEMCURATOR_SHARDS`` (N, default 1), ``MEMCURATOR_SHARD_ROOT`` (folder or s3:// URI; default
``$MEMCURATOR_HOME/shards``), and for celery ``MEMCURATOR_CELERY_BROKER`` / ``MEMCURATOR_CELERY_BACKEND``.
The instance (run and event storage) is Dagster's own configuration: ``$DAGSTER_HOME/dagster.yaml``.
"""

import os
import socket

import dagster as dg

from assets._tables import OWNERS
from memcurator import compaction, ingest, scaleout, shards, sql, store
from memcurator.entries import as_of_for_night
from memcurator.home import STORE_TAG
from pipelines.partitions import nightly_partitions
from pipelines.resources import CurationResource, StoreResource, home_settings

# Nightly without a click, once the automation sensor below is turned on: at 02:00 UTC the split runs
# for yesterday; each shard's derive run is requested when the split has landed (one run per shard,
# bounded by the run queue's max_concurrent_runs and the `memcurator_shards` pool); the merge is
# requested when every shard of the night has been derived since that tick.
NIGHTLY_CRON = "0 2 * * *"
NIGHTLY = dg.AutomationCondition.on_cron(NIGHTLY_CRON, cron_timezone="UTC")
_shard_not_done = ~dg.AutomationCondition.newly_updated().since(
    dg.AutomationCondition.cron_tick_passed(NIGHTLY_CRON, "UTC"))
# on_cron waits for one updated partition of each dependency; the merge needs every shard of the night.
NIGHTLY_AFTER_EVERY_SHARD = (
    dg.AutomationCondition.in_latest_time_window()
    & dg.AutomationCondition.cron_tick_passed(NIGHTLY_CRON, "UTC").since_last_handled()
    & ~dg.AutomationCondition.any_deps_match(_shard_not_done)
).with_label("every shard derived since 02:00 UTC")


class ShardRootResource(dg.ConfigurableResource):
    """Where shard inputs and outputs live: a folder or an S3-compatible URI."""

    uri: str

    @property
    def root(self) -> shards.ShardRoot:
        return shards.ShardRoot(self.uri)


def night_shard_partitions(count: int) -> dg.MultiPartitionsDefinition:
    return dg.MultiPartitionsDefinition({"night": nightly_partitions,
                                         "shard": dg.StaticPartitionsDefinition(shards.shard_keys(count))})


shard_nightly_sensor = dg.AutomationConditionSensorDefinition(
    "shard_nightly", target=dg.AssetSelection.groups("shards"), default_status=dg.DefaultSensorStatus.STOPPED,
    description="The sharded night (02:00 UTC). Off by default: the embedded nightly_curation job curates the "
                "same store; turn this on instead of that schedule when the fleet runs in shards.")


def build_scaleout_definitions(home: str | dg.EnvVar | None = None, root: str | None = None,
                               count: int | None = None) -> dg.Definitions:
    """The sharded night's assets, jobs and sensor for ``count`` shards (default MEMCURATOR_SHARDS)."""
    count = count or scaleout.shard_count()
    partitions = night_shard_partitions(count)

    @dg.asset(key=["shards", "inputs"], group_name="shards", kinds={"duckdb", "parquet"}, owners=OWNERS,
              partitions_def=nightly_partitions, automation_condition=NIGHTLY)
    def shard_inputs(context: dg.AssetExecutionContext, store_resource: StoreResource, curation: CurationResource,
                     shard_root: ShardRootResource) -> dg.MaterializeResult:
        """Each shard's events and curator decisions, written by the one writer after ingesting the landing folder."""
        paths, cfg = store_resource.paths, curation.config()
        with store_resource.writer() as conn:
            report = ingest.ingest_landing(conn, paths.landing, paths.lake, cfg)
            ingest.ingest_decisions(conn, paths.decisions, cfg)
            events = shards.split(conn, shard_root.root, context.partition_key, count, cfg)
        return dg.MaterializeResult(metadata={
            "new_events": report.valid_events,
            "events_per_shard": dg.MetadataValue.json(events),
        })

    @dg.asset(key=["shards", "derived"], group_name="shards", kinds={"duckdb", "parquet"}, owners=OWNERS,
              partitions_def=partitions, deps=[shard_inputs], automation_condition=NIGHTLY, pool="memcurator_shards",
              retry_policy=dg.RetryPolicy(max_retries=2, delay=1))
    def shard_derived(context: dg.AssetExecutionContext, curation: CurationResource,
                      shard_root: ShardRootResource) -> dg.MaterializeResult:
        """Every derived table of one namespace shard, computed in memory with the embedded night's builders."""
        keys = context.partition_key.keys_by_dimension
        counts = shards.derive(shard_root.root, keys["night"], count, keys["shard"], curation.config())
        return dg.MaterializeResult(metadata={
            "rows": dg.MetadataValue.json(counts),
            "worker_pid": os.getpid(),
            "worker_host": socket.gethostname(),
        })

    @dg.asset(key=["shards", "store"], group_name="shards", kinds={"duckdb"}, owners=OWNERS,
              partitions_def=nightly_partitions, deps=[shard_derived], automation_condition=NIGHTLY_AFTER_EVERY_SHARD)
    def shard_store(context: dg.AssetExecutionContext, store_resource: StoreResource,
                    shard_root: ShardRootResource) -> dg.MaterializeResult:
        """The store's derived tables as the union of every shard, then the analyst views and the published snapshot."""
        paths = store_resource.paths
        with store_resource.writer() as conn:
            counts = shards.merge(conn, shard_root.root, context.partition_key, count)
            store.create_analyst_views(conn, sql.load("analyst_views").split(";"))
            compaction.close_night(conn, as_of_for_night(context.partition_key))
        published = store.publish(paths.store, paths.published)
        return dg.MaterializeResult(metadata={"rows": dg.MetadataValue.json(counts),
                                              "published": dg.MetadataValue.path(str(published.path)),
                                              "published_by": dg.MetadataValue.text(published.published_by),
                                              "written_bytes": dg.MetadataValue.int(published.written)})

    # the split reads the home's store and the merge writes it: one run that opens it at a time
    # (memcurator.home.DAGSTER_SETTINGS); the derive runs read only their shards
    shard_split = dg.define_asset_job("shard_split", selection=[shard_inputs], partitions_def=nightly_partitions,
                                      executor_def=dg.in_process_executor, tags=dict([STORE_TAG]))
    shard_derive = dg.define_asset_job("shard_derive", selection=[shard_derived], partitions_def=partitions,
                                       executor_def=scaleout.executor())
    shard_merge = dg.define_asset_job("shard_merge", selection=[shard_store], partitions_def=nightly_partitions,
                                      executor_def=dg.in_process_executor, tags=dict([STORE_TAG]))

    return dg.Definitions(
        assets=[shard_inputs, shard_derived, shard_store],
        jobs=[shard_split, shard_derive, shard_merge],
        sensors=[shard_nightly_sensor],
        resources={"store_resource": StoreResource(home=home if home is not None else dg.EnvVar("MEMCURATOR_HOME")),
                   "curation": CurationResource(**home_settings(home if isinstance(home, str) else None)),
                   "shard_root": ShardRootResource(uri=root or scaleout.shard_root_uri())},
    )


defs = build_scaleout_definitions()


def shard_derive_job() -> dg.JobDefinition:
    """The resolved derive job, for ``dg.reconstructable`` (the runs and celery workers load it by name)."""
    return defs.resolve_job_def("shard_derive")
