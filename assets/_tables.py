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
