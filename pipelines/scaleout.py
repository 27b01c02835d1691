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
from memcurator import ingest, scaleout, shards, sql, store
from pipelines.partitions import nightly_partitions
from pipelines.resources import CurationResource, StoreResource

SHARD_COUNT = scaleout.shard_count()
shard_partitions = dg.StaticPartitionsDefinition(shards.shard_keys(SHARD_COUNT))
night_shard_partitions = dg.MultiPartitionsDefinition({"night": nightly_partitions, "shard": shard_partitions})


class ShardRootResource(dg.ConfigurableResource):
    """Where shard inputs and outputs live: a folder or an S3-compatible URI."""

    uri: str

    @property
    def root(self) -> shards.ShardRoot:
        return shards.ShardRoot(self.uri)


@dg.asset(key=["shards", "inputs"], group_name="shards", kinds={"duckdb", "parquet"}, owners=OWNERS,
          partitions_def=nightly_partitions)
def shard_inputs(context: dg.AssetExecutionContext, store_resource: StoreResource, curation: CurationResource,
                 shard_root: ShardRootResource) -> dg.MaterializeResult:
    """Each shard's events and curator decisions, written by the one writer after ingesting the landing folder."""
    home, cfg = store_resource.paths, curation.config()
    with store_resource.writer() as conn:
        report = ingest.ingest_landing(conn, home.landing, home.lake, cfg)
        ingest.ingest_decisions(conn, home.decisions, cfg)
        events = shards.split(conn, shard_root.root, context.partition_key, SHARD_COUNT)
    return dg.MaterializeResult(metadata={
        "new_events": report.valid_events,
        "events_per_shard": dg.MetadataValue.json(events),
    })


@dg.asset(key=["shards", "derived"], group_name="shards", kinds={"duckdb", "parquet"}, owners=OWNERS,
          partitions_def=night_shard_partitions, deps=[shard_inputs], pool="memcurator_shards",
          retry_policy=dg.RetryPolicy(max_retries=2, delay=1))
def shard_derived(context: dg.AssetExecutionContext, curation: CurationResource,
                  shard_root: ShardRootResource) -> dg.MaterializeResult:
    """Every derived table of one namespace shard, computed in memory with the embedded night's builders."""
    keys = context.partition_key.keys_by_dimension
    counts = shards.derive(shard_root.root, keys["night"], SHARD_COUNT, keys["shard"], curation.config())
    return dg.MaterializeResult(metadata={
        "rows": dg.MetadataValue.json(counts),
        "worker_pid": os.getpid(),
        "worker_host": socket.gethostname(),
    })


@dg.asset(key=["shards", "store"], group_name="shards", kinds={"duckdb"}, owners=OWNERS,
          partitions_def=nightly_partitions, deps=[shard_derived])
def shard_store(context: dg.AssetExecutionContext, store_resource: StoreResource,
                shard_root: ShardRootResource) -> dg.MaterializeResult:
    """The store's derived tables as the union of every shard, then the analyst views and the published snapshot."""
    home = store_resource.paths
    with store_resource.writer() as conn:
        counts = shards.merge(conn, shard_root.root, context.partition_key, SHARD_COUNT)
        store.create_analyst_views(conn, sql.load("analyst_views").split(";"))
    published = store.publish(home.store, home.published)
    return dg.MaterializeResult(metadata={"rows": dg.MetadataValue.json(counts),
                                          "published": dg.MetadataValue.path(str(published))})


shard_split = dg.define_asset_job("shard_split", selection=[shard_inputs], partitions_def=nightly_partitions,
                                  executor_def=dg.in_process_executor)
shard_derive = dg.define_asset_job("shard_derive", selection=[shard_derived], partitions_def=night_shard_partitions,
                                   executor_def=scaleout.executor())
shard_merge = dg.define_asset_job("shard_merge", selection=[shard_store], partitions_def=nightly_partitions,
                                  executor_def=dg.in_process_executor)


def build_scaleout_definitions(home: str | dg.EnvVar | None = None, root: str | None = None) -> dg.Definitions:
    home_value = home if home is not None else dg.EnvVar("MEMCURATOR_HOME")
    store_resource = StoreResource(home=home_value)
    return dg.Definitions(
        assets=[shard_inputs, shard_derived, shard_store],
        jobs=[shard_split, shard_derive, shard_merge],
        resources={"store_resource": store_resource, "curation": CurationResource(),
                   "shard_root": ShardRootResource(uri=root or scaleout.shard_root_uri())},
    )


defs = build_scaleout_definitions()


def shard_derive_job() -> dg.JobDefinition:
    """The resolved derive job, for ``dg.reconstructable`` (the runs and celery workers load it by name)."""
    return defs.resolve_job_def("shard_derive")
