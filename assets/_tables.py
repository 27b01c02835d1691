"""What every table asset shares: its declared column schema and the metadata it returns."""


import dagster as dg
import duckdb

from memcurator.tables import Table

OWNERS = ["team:memory-platform"]


def table_metadata(table: Table) -> dict:
    """Definition metadata: the column schema from the table's single declaration."""
    return {
        "dagster/column_schema": dg.TableSchema(
            columns=[
                dg.TableColumn(
                    name=c.name,
                    type=c.type,
                    description=c.description,
                    constraints=dg.TableColumnConstraints(nullable=c.nullable),
                )
                for c in table.columns
            ]
        ),
        "dagster/table_name": f"store.{table.qualified}",
        "grain": table.grain,
    }


def materialized(conn: duckdb.DuckDBPyConnection, table: Table, **numbers) -> dg.MaterializeResult:
    """Row count, a column profile, and headline numbers (plotted by the UI over runs).

    The profile (nulls and distinct values per column) says what a preview would about the
    table's health without copying memory content into Dagster's run history, which a purge
    could not reach."""
    rows = conn.execute(f"select count(*) from {table.qualified}").fetchone()[0]
    metadata = {
        "dagster/row_count": dg.MetadataValue.int(int(rows)),
        "profile": dg.MetadataValue.md(_profile(conn, table)),
    }
    for name, value in numbers.items():
        metadata[name] = dg.MetadataValue.float(float(value)) if isinstance(value, float) else dg.MetadataValue.int(int(value))
    return dg.MaterializeResult(metadata=metadata)


def _profile(conn: duckdb.DuckDBPyConnection, table: Table) -> str:
    parts = ", ".join(f'count(*) - count("{c.name}"), approx_count_distinct("{c.name}")' for c in table.columns)
    values = conn.execute(f"select {parts} from {table.qualified}").fetchone()
    lines = ["| column | type | nulls | distinct (approx.) |", "|---|---|---|---|"]
    for i, column in enumerate(table.columns):
        lines.append(f"| {column.name} | {column.type} | {values[2 * i]} | {values[2 * i + 1]} |")
    return "\n".join(lines)


def nightly_table_asset(table: Table, build, deps: list, group: str,
                        headline_sql: dict[str, str] | None = None) -> dg.AssetsDefinition:
    """A daily-partitioned asset that rebuilds one table as of the night with ``build(conn, as_of, cfg)``.

    Its description is the table's grain plus the builder's docstring; its metadata carries the
    declared column schema; each run reports the row count, a column profile and the headline numbers.
    """
    from memcurator.entries import as_of_for_night
    from pipelines.partitions import nightly_partitions
    from pipelines.resources import CurationResource, StoreResource

    @dg.asset(
        key=[table.schema, table.name],
        group_name=group,
        kinds={"duckdb"},
        owners=OWNERS,
        deps=deps,
        partitions_def=nightly_partitions,
        metadata=table_metadata(table),
        description=f"{table.grain}\n\n{build.__doc__ or ''}".strip(),
    )
    def _asset(context: dg.AssetExecutionContext, store: StoreResource, curation: CurationResource) -> dg.MaterializeResult:
        as_of = as_of_for_night(context.partition_key)
        with store.writer() as conn:
            build(conn, as_of, curation.config())
            numbers = {name: conn.execute(query).fetchone()[0] or 0 for name, query in (headline_sql or {}).items()}
            return materialized(conn, table, **numbers)

    return _asset
