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


# A table of more rows is profiled over a sample of them (DuckDB's system sampling, seeded: whole
# vectors of rows, so the others are not read). On a 1M-entry store, profiling every column of every
# table and view in full took 5-9 s of each nightly run, more than a 1 %-churn night's derivation.
PROFILE_SAMPLE_FROM = 100_000
PROFILE_SAMPLE_PERCENT = 10


def materialized(conn: duckdb.DuckDBPyConnection, table: Table, stored: Table | None = None,
                 **numbers) -> dg.MaterializeResult:
    """Row count, a column profile, and headline numbers (plotted by the UI over runs).

    The profile (nulls and distinct values per column) says what a preview would about the
    table's health without copying memory content into Dagster's run history, which a purge
    could not reach. ``stored``: the table that holds a view's rows, one stored row per row of
    the view; the rows are counted and profiled there (the view's other columns are named as
    the view's own), without computing the view."""
    source = stored or table
    rows = conn.execute(f"select count(*) from {source.qualified}").fetchone()[0]
    metadata = {
        "dagster/row_count": dg.MetadataValue.int(int(rows)),
        "profile": dg.MetadataValue.md(_profile(conn, table, source, rows)),
    }
    for name, value in numbers.items():
        metadata[name] = dg.MetadataValue.float(float(value)) if isinstance(value, float) else dg.MetadataValue.int(int(value))
    return dg.MaterializeResult(metadata=metadata)


def _profile(conn: duckdb.DuckDBPyConnection, table: Table, source: Table, rows: int) -> str:
    sampled = rows >= PROFILE_SAMPLE_FROM
    frm = (f"{source.qualified} using sample {PROFILE_SAMPLE_PERCENT} percent (system, 7)" if sampled
           else source.qualified)
    stored_names = {c.name for c in source.columns}
    read = [c for c in table.columns if c.name in stored_names]
    parts = ", ".join(f'count(*) - count("{c.name}"), approx_count_distinct("{c.name}")' for c in read)
    values = conn.execute(f"select count(*), {parts} from {frm}").fetchone()
    by_name = {c.name: values[1 + 2 * i: 3 + 2 * i] for i, c in enumerate(read)}
    lines = ([f"Over a sample of {values[0]:,} of the {rows:,} rows (system sampling, "
              f"{PROFILE_SAMPLE_PERCENT} percent)."] if sampled else [])
    lines += ["| column | type | nulls | distinct (approx.) |", "|---|---|---|---|"]
    for column in table.columns:
        nulls, distinct = by_name.get(column.name, ("-", "-"))
        note = "" if column.name in by_name else f" (the view's, not in {source.qualified})"
        lines.append(f"| {column.name}{note} | {column.type} | {nulls} | {distinct} |")
    return "\n".join(lines)


def nightly_table_asset(table: Table, build, deps: list, group: str,
                        headline_sql: dict[str, str] | None = None, stored: Table | None = None,
                        options=None) -> dg.AssetsDefinition:
    """A daily-partitioned asset that rebuilds one table as of the night with ``build(conn, as_of, cfg)``
    (and the keyword arguments ``options(context)`` gives, when given).

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
            build(conn, as_of, curation.config(), **(options(context) if options else {}))
            numbers = {name: conn.execute(query).fetchone()[0] or 0 for name, query in (headline_sql or {}).items()}
            return materialized(conn, table, stored, **numbers)

    return _asset
