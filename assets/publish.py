"""Publish stage: analyst views and the read-only snapshot readers use."""


import dagster as dg

from assets._tables import OWNERS
from memcurator import compaction, sql, store
from memcurator.entries import as_of_for_night
from pipelines.partitions import nightly_partitions
from pipelines.resources import StoreResource


def published_store_asset(upstream: list[dg.AssetKey]) -> dg.AssetsDefinition:
    @dg.asset(
        key=["analyst", "published_store"],
        group_name="publish",
        kinds={"duckdb"},
        owners=OWNERS,
        deps=upstream,
        partitions_def=nightly_partitions,
    )
    def published_store(context: dg.AssetExecutionContext, store_resource: StoreResource) -> dg.MaterializeResult:
        """One file: published/store.duckdb, the read-only snapshot for analysts and recall().

        Recreates the `analyst` views, compacts the store when it is due (work.compactions), checkpoints
        it, writes its copy (store.publish: a clone of the file where the filesystem shares blocks; else
        the pages that differ written over the snapshot before, when no reader holds it; else a byte
        copy) and renames the copy into place, so a reader never takes the writer's lock and never sees
        a half-written table.
        """
        home = store_resource.paths
        with store_resource.writer() as conn:
            store.create_analyst_views(conn, sql.load("analyst_views").split(";"))
            compacted = compaction.close_night(conn, as_of_for_night(context.partition_key))
        published = store.publish(home.store, home.published)
        return dg.MaterializeResult(metadata={
            "path": dg.MetadataValue.path(str(published.path)),
            "bytes": dg.MetadataValue.int(published.path.stat().st_size),
            "published_by": dg.MetadataValue.text(published.published_by),
            "written_bytes": dg.MetadataValue.int(published.written),
            "compaction": dg.MetadataValue.text(compacted or "not due"),
        })

    return published_store
