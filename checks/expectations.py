"""Great Expectations suites (memcurator/expectations.py) surfaced as Dagster asset checks."""

import dagster as dg

from memcurator.expectations import SUITES, Suite, markdown, run_suite
from pipelines.resources import StoreResource


def expectation_check(suite: Suite) -> dg.AssetChecksDefinition:
    schema, name = suite.table.split(".")

    @dg.asset_check(asset=dg.AssetKey([schema, name]), name=suite.name, blocking=suite.blocking,
                    description=f"Great Expectations suite: {suite.description}"
                                + ("" if suite.blocking else " A soft signal."))
    def _check(store: StoreResource) -> dg.AssetCheckResult:
        with store.writer() as conn:
            result = run_suite(conn, suite)
        failed = [r for r in result.results if not r["success"]]
        return dg.AssetCheckResult(
            passed=result.success,
            severity=dg.AssetCheckSeverity.ERROR if suite.blocking else dg.AssetCheckSeverity.WARN,
            metadata={"rows": dg.MetadataValue.int(result.rows),
                      "expectations": dg.MetadataValue.int(len(result.results)),
                      "failed_expectations": dg.MetadataValue.int(len(failed)),
                      "details": dg.MetadataValue.md(markdown(result) if result.results else "_empty table_")})

    return _check


expectation_checks = [expectation_check(s) for s in SUITES]
