"""Great Expectations suites: column and distribution expectations on the tables people read.

Each suite is plain data (expectation class name and arguments), so the project imports Great
Expectations only when a suite runs (its import takes 7-11 s). Suites run in an ephemeral context
(nothing on disk) on the columns they need, read from DuckDB into pandas. Results carry counts
and observed values only, never the unexpected rows (they would copy memory content into
Dagster's run history).
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

STATES = ["active", "reverify", "superseded", "merged", "redundant", "expired", "held", "case", "archived"]


@dataclass(frozen=True)
class Suite:
    name: str
    table: str
    columns: tuple[str, ...]
    expectations: tuple[tuple[str, dict], ...]
    blocking: bool
    description: str


def _between(column: str, low=None, high=None, **kw) -> tuple[str, dict]:
    return ("ExpectColumnValuesToBeBetween", {"column": column, "min_value": low, "max_value": high, **kw})


SUITES = (
    Suite("recall_view_expectations", "mart.recall_view",
          ("namespace", "entry_id", "tier", "rank", "score", "state", "generality", "proven_count", "version_count"),
          (
              ("ExpectCompoundColumnsToBeUnique", {"column_list": ["namespace", "entry_id"]}),
              ("ExpectColumnValuesToBeInSet", {"column": "tier", "value_set": ["active", "session"]}),
              ("ExpectColumnValuesToBeInSet", {"column": "state", "value_set": ["active", "reverify", "held", "case"]}),
              _between("rank", 1),
              _between("generality", 0, 3),
              _between("proven_count", 0),
              _between("version_count", 1),
              ("ExpectColumnValuesToNotBeNull", {"column": "score"}),
          ), True,
          "What agents read: one row per entry, known tiers and states, ranks from 1, generality 0-3."),
    Suite("entry_lifecycle_expectations", "core.entry_lifecycle", ("namespace", "entry_id", "state", "rule", "reason"),
          (
              ("ExpectCompoundColumnsToBeUnique", {"column_list": ["namespace", "entry_id"]}),
              ("ExpectColumnValuesToBeInSet", {"column": "state", "value_set": STATES}),
              ("ExpectColumnValuesToNotBeNull", {"column": "rule"}),
              ("ExpectColumnValuesToNotBeNull", {"column": "reason"}),
          ), True,
          "Every entry has exactly one known state, with the rule and reason that put it there."),
    Suite("contradictions_expectations", "core.contradictions", ("namespace", "entry_a", "entry_b", "kind", "confidence"),
          (
              ("ExpectCompoundColumnsToBeUnique", {"column_list": ["namespace", "entry_a", "entry_b"]}),
              ("ExpectColumnValuesToBeInSet", {"column": "kind",
                                               "value_set": ["explicit", "failed_check", "trust_guarded", "cycle", "detected"]}),
              _between("confidence", 0, 1),
          ), True,
          "Conflicting pairs are unique, of a known kind, with a confidence in [0, 1]."),
    Suite("store_health_distributions", "mart.store_health",
          ("night", "namespace", "duplicate_rate", "contested_rate", "under_noise_floor_share", "explicit_link_ratio",
           "injected_age_median_days", "injected_age_p90_days", "injected_old_unverified_share"),
          (
              _between("duplicate_rate", 0, 1),
              _between("under_noise_floor_share", 0, 1),
              _between("explicit_link_ratio", 0, 1),
              _between("injected_old_unverified_share", 0, 1),
              _between("contested_rate", 0),
              _between("injected_age_median_days", 0),
              ("ExpectColumnPairValuesAToBeGreaterThanB",
               {"column_A": "injected_age_p90_days", "column_B": "injected_age_median_days", "or_equal": True,
                "ignore_row_if": "either_value_is_missing"}),
              # the curated active set should hold few restatements: most namespaces under 10 %
              ("ExpectColumnQuantileValuesToBeBetween",
               {"column": "duplicate_rate", "quantile_ranges": {"quantiles": [0.5, 0.9],
                                                                "value_ranges": [[0, 0.1], [0, 0.25]]},
                "allow_relative_error": True}),
          ), False,
          "Health rates lie in their ranges; injected ages are ordered; duplicate rates are low across namespaces."),
)


@dataclass
class SuiteResult:
    suite: str
    success: bool
    rows: int
    results: list[dict]


def run_suite(conn: duckdb.DuckDBPyConnection, suite: Suite) -> SuiteResult:
    import great_expectations as gx
    import great_expectations.expectations as gxe
    from great_expectations.data_context.types.base import ProgressBarsConfig
    from great_expectations.execution_engine import pandas_execution_engine

    columns = ", ".join(f'"{c}"' for c in suite.columns)
    # through Arrow: pandas keeps its strings in Arrow, and DuckDB's own conversion made a Python string
    # of each first (the 1M lifecycle rows' five columns: 1.3 s -> 0.3 s)
    frame = conn.execute(f"select {columns} from {suite.table}").to_arrow_table().to_pandas()
    if frame.empty:
        return SuiteResult(suite.name, True, 0, [])
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    batch_definition = (context.data_sources.add_pandas("memcurator").add_dataframe_asset(suite.table)
                        .add_batch_definition_whole_dataframe("night"))
    expectation_suite = gx.ExpectationSuite(name=suite.name)
    for kind, kwargs in suite.expectations:
        expectation_suite.add_expectation(getattr(gxe, kind)(**kwargs))
    expectation_suite = context.suites.add(expectation_suite)
    # GE marks each batch of a frame under 1 GB with a fingerprint, an md5 of the whole frame hashed row
    # by row, and makes the batch twice (once to validate, once for the validator): 1.5 s of the recall
    # view's 5.2 s at 1M entries. The results never read it: no frame gets it while a suite runs.
    threshold, pandas_execution_engine.HASH_THRESHOLD = pandas_execution_engine.HASH_THRESHOLD, 0
    try:
        outcome = batch_definition.get_batch(batch_parameters={"dataframe": frame}).validate(expectation_suite)
    finally:
        pandas_execution_engine.HASH_THRESHOLD = threshold
    results = []
    for r in outcome.results:
        kwargs = r.expectation_config.kwargs
        observed = r.result.get("observed_value")
        results.append({
            "expectation": r.expectation_config.type,
            "column": kwargs.get("column") or ",".join(kwargs.get("column_list") or [kwargs.get("column_A", ""), kwargs.get("column_B", "")]),
            "success": bool(r.success),
            "unexpected_count": r.result.get("unexpected_count"),
            "unexpected_percent": r.result.get("unexpected_percent"),
            "observed": observed if isinstance(observed, (int, float, type(None))) else str(observed),
        })
    results.sort(key=lambda x: (x["success"], x["expectation"], x["column"]))
    return SuiteResult(suite.name, bool(outcome.success), len(frame), results)


def markdown(result: SuiteResult) -> str:
    lines = ["| expectation | column | ok | unexpected | observed |", "|---|---|---|---|---|"]
    for r in result.results:
        unexpected = "" if r["unexpected_count"] is None else f"{r['unexpected_count']} ({r['unexpected_percent'] or 0:.2f} %)"
        observed = "" if r["observed"] is None else r["observed"]
        lines.append(f"| {r['expectation']} | {r['column']} | {'yes' if r['success'] else 'NO'} | {unexpected} | {observed} |")
    return "\n".join(lines)
