"""The store resource: one connection for the steps of a run, closed when the run ends or a step fails."""

from __future__ import annotations

import dagster as dg
import pytest

from memcurator import store
from pipelines.resources import StoreResource


def test_the_steps_of_a_run_share_one_connection_and_the_run_closes_it(home):
    with dg.build_resources({"store": StoreResource(home=str(home.root))}) as resources:
        with resources.store.writer() as first:
            first.execute("create table t (x integer)")
        with resources.store.writer() as second:
            assert second is first
            second.execute("insert into t values (1)")
    # closed: the process can open the file again with another configuration, and sees what the run wrote
    with store.connect(home.store, read_only=True) as reader:
        assert reader.execute("select count(*) from t").fetchone()[0] == 1


def test_a_failed_step_closes_the_connection_and_the_next_step_opens_another(home):
    with dg.build_resources({"store": StoreResource(home=str(home.root))}) as resources:
        with resources.store.writer() as first:
            first.execute("create table t (x integer)")
        with pytest.raises(RuntimeError):
            with resources.store.writer() as failing:
                failing.execute("begin transaction")
                failing.execute("insert into t values (1)")
                raise RuntimeError("the step failed")
        with resources.store.writer() as after:
            assert after is not first
            assert after.execute("select count(*) from t").fetchone()[0] == 0  # the failed step's work is gone
            after.execute("insert into t values (2)")
    with store.connect(home.store, read_only=True) as reader:
        assert reader.execute("select x from t").fetchall() == [(2,)]


def test_outside_a_run_each_use_opens_its_own_connection(home):
    resource = StoreResource(home=str(home.root))
    with resource.writer() as first:
        first.execute("create table t (x integer)")
    with resource.writer() as second:
        assert second is not first
        assert second.execute("select count(*) from t").fetchone()[0] == 0
    with store.connect(home.store, read_only=True) as reader:  # none left open
        assert reader.execute("select count(*) from t").fetchone()[0] == 0
