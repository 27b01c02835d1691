"""Entries stage: the log folded into entries, recalls, checks, runs and usage, as of the night."""


import dagster as dg

from assets._tables import OWNERS, materialized, table_metadata
from memcurator import entries
from memcurator.tables import CHECKS, ENTRIES, ENTRY_USAGE, MEMORY_WRITES, RECALL_RESULTS, RUNS, Table
from pipelines.partitions import nightly_partitions
from pipelines.resources import StoreResource


def _nightly_table_asset(table: Table, build, deps: list, headline_sql: dict[str, str] | None = None):
    @dg.asset(
        key=[table.schema, table.name],
        group_name="entries",
        kinds={"duckdb"},
        owners=OWNERS,
        deps=deps,
        partitions_def=nightly_partitions,
        metadata=table_metadata(table),
        description=f"{table.grain}\n\n{build.__doc__ or ''}".strip(),
    )
    def _asset(context: dg.AssetExecutionContext, store: StoreResource) -> dg.MaterializeResult:
        as_of = entries.as_of_for_night(context.partition_key)
        with store.writer() as conn:
            build(conn, as_of)
            numbers = {
                name: conn.execute(query).fetchone()[0] or 0
                for name, query in (headline_sql or {}).items()
            }
            return materialized(conn, table, **numbers)

    return _asset


core_memory_writes = _nightly_table_asset(MEMORY_WRITES, entries.build_memory_writes, [["raw", "events"]])
core_entries = _nightly_table_asset(
    ENTRIES, entries.build_entries, [core_memory_writes],
    {"namespaces": "select count(distinct namespace) from core.entries",
     "explicitly_superseded": "select count(*) from core.entries where superseded_by is not null"},
)
core_recall_results = _nightly_table_asset(RECALL_RESULTS, entries.build_recall_results, [["raw", "events"]])
core_checks = _nightly_table_asset(CHECKS, entries.build_checks, [["raw", "events"]])
core_runs = _nightly_table_asset(RUNS, entries.build_runs, [["raw", "events"]])
core_entry_usage = _nightly_table_asset(
    ENTRY_USAGE, entries.build_entry_usage, [core_entries, core_recall_results, core_checks],
    {"entries_never_recalled": "select count(*) from core.entry_usage where recall_count = 0",
     "entries_with_failed_assertions": "select count(*) from core.entry_usage where failed_assertions > 0"},
)
