"""A check defined by one SQL query that counts violations: it passes when the count is 0."""


import dagster as dg

from memcurator.tables import Table, schema_mismatches
from pipelines.resources import StoreResource


def violation_check(asset_key: list[str], name: str, description: str, count_sql: str,
                    blocking: bool = True) -> dg.AssetChecksDefinition:
    """Metadata carries the count only: rows would copy memory content into Dagster's run history,
    which a purge cannot reach; the analyst views show the rows."""
    severity = dg.AssetCheckSeverity.ERROR if blocking else dg.AssetCheckSeverity.WARN

    @dg.asset_check(asset=dg.AssetKey(asset_key), name=name, description=description, blocking=blocking)
    def _check(store: StoreResource) -> dg.AssetCheckResult:
        with store.writer() as conn:
            violations = conn.execute(count_sql).fetchone()[0] or 0
            violations = int(violations)
        return dg.AssetCheckResult(passed=violations == 0, severity=severity,
                                   metadata={"violations": dg.MetadataValue.int(violations)})

    return _check


def schema_check(table: Table) -> dg.AssetChecksDefinition:
    """The table in DuckDB matches its single column declaration (names, order, types, nullability)."""

    @dg.asset_check(asset=dg.AssetKey([table.schema, table.name]), name="matches_declared_schema",
                    description=f"{table.qualified} has exactly the declared columns, types and non-null columns.",
                    blocking=True)
    def _check(store: StoreResource) -> dg.AssetCheckResult:
        with store.writer() as conn:
            problems = schema_mismatches(conn, table)
        return dg.AssetCheckResult(passed=not problems,
                                   metadata={"problems": dg.MetadataValue.text("\n".join(problems) or "none")})

    return _check
