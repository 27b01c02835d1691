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


def materialized(conn: duckdb.DuckDBPyConnection, table: Table, preview_rows: int = 5, **numbers) -> dg.MaterializeResult:
    """Row count, a small markdown preview, and headline numbers (plotted by the UI over runs)."""
    rows = conn.execute(f"select count(*) from {table.qualified}").fetchone()[0]
    preview = conn.execute(f"select * from {table.qualified} limit {int(preview_rows)}").pl()
    metadata = {
        "dagster/row_count": dg.MetadataValue.int(int(rows)),
        "preview": dg.MetadataValue.md(_markdown(preview)),
    }
    for name, value in numbers.items():
        metadata[name] = dg.MetadataValue.float(float(value)) if isinstance(value, float) else dg.MetadataValue.int(int(value))
    return dg.MaterializeResult(metadata=metadata)


def _markdown(frame) -> str:
    if frame.height == 0:
        return "_empty_"
    cols = frame.columns
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in frame.iter_rows():
        cells = [str(v).replace("|", "\\|").replace("\n", " ")[:60] for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def nightly_table_asset(table: Table, build, deps: list, group: str,
                        headline_sql: dict[str, str] | None = None) -> dg.AssetsDefinition:
    """A daily-partitioned asset that rebuilds one table as of the night with ``build(conn, as_of, cfg)``.

    Its description is the table's grain plus the builder's docstring; its metadata carries the
    declared column schema; each run reports the row count, a preview and the headline numbers.
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
