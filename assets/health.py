"""Health stage: the store health history, with headline numbers the UI plots across nights."""

import dagster as dg

from assets._tables import OWNERS, materialized, table_metadata
from memcurator import health_history
from memcurator.entries import as_of_for_night
from pipelines.partitions import nightly_partitions
from pipelines.resources import CurationResource, StoreResource

HEADLINES = {
    "entries": "sum(entries)", "active": "sum(active)", "contested": "sum(contested)", "archived": "sum(archived)",
    "retired_tonight": "sum(retired_tonight)", "writes_in": "sum(writes_in)",
    "duplicate_rate": "sum(duplicate_rate * active) / greatest(sum(active), 1)",
    "explicit_link_ratio": "avg(explicit_link_ratio)",
    "injected_age_median_days": "median(injected_age_median_days)",
    "secrets_redacted": "sum(secrets_redacted)",
}


@dg.asset(
    key=["mart", "store_health"],
    group_name="health",
    kinds={"duckdb"},
    owners=OWNERS,
    deps=[["mart", "recall_view"], ["core", "contested_entries"], ["core", "entry_lifecycle"],
          ["core", "contradictions"], ["core", "near_duplicate_clusters"]],
    partitions_def=nightly_partitions,
    metadata=table_metadata(health_history.STORE_HEALTH),
)
def mart_store_health(context: dg.AssetExecutionContext, store: StoreResource,
                      curation: CurationResource) -> dg.MaterializeResult:
    """One row per (namespace, night): size, states, flow, duplicate and conflict rates, injected ages.

    Each run replaces its own night's rows and keeps earlier nights, so the history is rebuilt by a
    backfill over the daily partitions. Headline numbers are numeric metadata: the UI plots them.
    """
    as_of = as_of_for_night(context.partition_key)
    with store.writer() as conn:
        health_history.build_store_health(conn, as_of, curation.config())
        row = conn.execute(
            "select " + ", ".join(f"{expr} as {name}" for name, expr in HEADLINES.items())
            + " from mart.store_health where as_of = ?", [as_of]).fetchone()
        numbers = {name: (float(v) if isinstance(v, float) else int(v or 0)) for name, v in zip(HEADLINES, row)
                   if v is not None}
        return materialized(conn, health_history.STORE_HEALTH, **numbers)
