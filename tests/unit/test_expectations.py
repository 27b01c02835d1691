"""Great Expectations suites pass on a derived store and fail on the violations they describe."""

from __future__ import annotations

from datetime import datetime

from memcurator import ingest
from memcurator.config import CurationConfig
from memcurator.expectations import SUITES, Suite, run_suite
from memcurator.night import derive_night
from tests.conftest import write, write_jsonl

BY_NAME = {s.name: s for s in SUITES}


def _store(conn, home):
    write_jsonl(home.landing / "f.jsonl", [
        write("retry the ledger call with jittered backoff", entry_id="a", ts="2026-11-01T10:00:00Z"),
        write("retry the ledger call with a jittered backoff", entry_id="b", ts="2026-11-02T10:00:00Z"),
        write("The ledger timeout is 30 seconds", entry_id="c", cls="config", ts="2026-11-02T10:00:00Z",
              data={"tags": ["ledger", "timeout"]}),
        write("The ledger timeout is 45 seconds", entry_id="d", cls="config", ts="2026-11-03T10:00:00Z",
              data={"tags": ["ledger", "timeout"]}),
    ])
    ingest.ingest_landing(conn, home.landing, None, CurationConfig())
    derive_night(conn, datetime(2026, 11, 4), CurationConfig())


def test_integrity_suites_pass_and_the_soft_signal_sees_the_uncurated_restatement(conn, home):
    _store(conn, home)
    for suite in SUITES:
        result = run_suite(conn, suite)
        assert result.rows > 0 and len(result.results) == len(suite.expectations)
        failed = [(r["expectation"], r["column"]) for r in result.results if not r["success"]]
        if suite.blocking:
            assert result.success, (suite.name, failed)
        else:
            # a and b restate each other and nobody approved the merge: a third of the active set
            assert failed == [("expect_column_quantile_values_to_be_between", "duplicate_rate")]


def test_a_broken_recall_view_fails_with_counts_and_no_rows(conn, home):
    _store(conn, home)
    conn.execute("update mart.recall_ranking set tier = 'bogus', generality = 7 "
                 "where entry_id = (select min(entry_id) from mart.recall_view)")
    result = run_suite(conn, BY_NAME["recall_view_expectations"])
    assert not result.success
    failed = {(r["expectation"], r["column"]): r["unexpected_count"] for r in result.results if not r["success"]}
    assert failed == {("expect_column_values_to_be_in_set", "tier"): 1,
                      ("expect_column_values_to_be_between", "generality"): 1}
    assert "retry" not in repr(result.results)  # counts only: no entry text leaves the store


def test_nulls_and_repeated_keys_are_counted_in_the_frames_read_through_arrow(conn, home):
    _store(conn, home)
    conn.execute("create or replace table copy as select * from core.entry_lifecycle")
    conn.execute("update copy set reason = null where entry_id = 'c'")
    conn.execute("insert into copy select * from copy where entry_id = 'd'")
    suite = BY_NAME["entry_lifecycle_expectations"]
    result = run_suite(conn, Suite(suite.name, "copy", suite.columns, suite.expectations, True, ""))
    failed = {(r["expectation"], r["column"]): r["unexpected_count"] for r in result.results if not r["success"]}
    assert failed == {("expect_column_values_to_not_be_null", "reason"): 1,
                      ("expect_compound_columns_to_be_unique", "namespace,entry_id"): 2}


def test_a_suite_does_not_fingerprint_its_frame(conn, home, monkeypatch):
    from great_expectations.execution_engine import pandas_execution_engine

    _store(conn, home)
    threshold = pandas_execution_engine.HASH_THRESHOLD

    def fingerprint(frame):
        raise AssertionError("the frame was hashed for a batch marker")

    monkeypatch.setattr(pandas_execution_engine, "hash_pandas_dataframe", fingerprint)
    assert run_suite(conn, BY_NAME["entry_lifecycle_expectations"]).success
    assert pandas_execution_engine.HASH_THRESHOLD == threshold  # as it was, for any other use of GE
