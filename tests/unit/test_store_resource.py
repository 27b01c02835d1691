"""The store resource: one connection for the steps of a run, closed when the run ends or a step fails."""

from __future__ import annotations

import dagster as dg
import pytest

from memcurator import store
from pipelines.resources import StoreResource
from tests.conftest import held_by_another_process, store_is_held


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


def test_a_step_waits_while_another_process_holds_the_store(home):
    """A run launched beside another (an asset materialised from the UI during a night) waits for the
    store instead of failing on DuckDB's lock."""
    import time

    holder = held_by_another_process(home, 2.0)
    started = time.monotonic()
    with dg.build_resources({"store": StoreResource(home=str(home.root), lock_wait_seconds=120)}) as resources:
        with resources.store.writer() as conn:
            waited = time.monotonic() - started
            assert holder.poll() is not None  # opened once the holder had let go
            conn.execute("create table t (x integer)")
    assert waited > 0.5
    holder.wait()


def test_a_step_that_waited_too_long_says_who_holds_the_store(home):
    holder = held_by_another_process(home, 30.0)
    try:
        with pytest.raises(store.StoreBusy, match="held by another process: waited .* Conflicting lock"):
            with StoreResource(home=str(home.root), lock_wait_seconds=1).writer():
                pass
    finally:
        holder.kill()
        holder.wait()
    with StoreResource(home=str(home.root), lock_wait_seconds=1).writer() as conn:  # free again
        conn.execute("select 1")


def test_the_homes_dagster_instance_runs_one_store_run_at_a_time(home):
    """The nightly job, the reproducibility check and the shard split and merge carry the store's tag, and
    the home's instance (dagster.yaml, written by Home.ensure) lets one such run be in progress: the
    next is held in the queue, a run without the tag is not."""
    import uuid

    from dagster._utils.tags import TagConcurrencyLimitsCounter

    from memcurator.home import STORE_TAG
    from pipelines.definitions import defs
    from pipelines.scaleout import defs as scaleout_defs

    jobs = [defs.resolve_job_def("nightly_curation"), defs.resolve_job_def("reproducibility_check"),
            scaleout_defs.resolve_job_def("shard_split"), scaleout_defs.resolve_job_def("shard_merge")]
    assert all(job.tags.get(STORE_TAG[0]) == STORE_TAG[1] for job in jobs)
    assert STORE_TAG[0] not in scaleout_defs.resolve_job_def("shard_derive").tags  # reads only its shard

    with dg.DagsterInstance.from_config(str(home.dagster_home)) as instance:
        limits = instance.get_concurrency_config().run_queue_config.tag_concurrency_limits

        def run(tags):
            return dg.DagsterRun(job_name="nightly_curation", run_id=str(uuid.uuid4()), tags=tags)

        in_progress = run(dict([STORE_TAG]))
        assert not TagConcurrencyLimitsCounter(limits, []).is_blocked(in_progress)
        counter = TagConcurrencyLimitsCounter(limits, [in_progress])
        assert counter.is_blocked(run(dict([STORE_TAG])))
        assert not counter.is_blocked(run({}))


def test_a_home_with_the_earlier_dagster_settings_gets_the_store_limit_and_an_edited_one_is_kept(tmp_path):
    from memcurator.home import DAGSTER_SETTINGS, EARLIER_DAGSTER_SETTINGS, Home

    earlier = Home.from_env(tmp_path / "earlier")
    earlier.dagster_home.mkdir(parents=True)
    (earlier.dagster_home / "dagster.yaml").write_text(EARLIER_DAGSTER_SETTINGS[0])
    assert (earlier.ensure().dagster_home / "dagster.yaml").read_text() == DAGSTER_SETTINGS
    edited = Home.from_env(tmp_path / "edited")
    edited.dagster_home.mkdir(parents=True)
    (edited.dagster_home / "dagster.yaml").write_text("telemetry:\n  enabled: true\n")
    assert (edited.ensure().dagster_home / "dagster.yaml").read_text() == "telemetry:\n  enabled: true\n"


def test_the_instance_settings_in_docs_scaleout_load_with_the_store_limit(tmp_path):
    """docs/scaleout.md's dagster.yaml examples load in this Dagster (their storage aside: Postgres is not
    installed) and hold one store run at a time. (As they were before, the run queue under run_coordinator
    beside concurrency.pools, Dagster 1.13 refused them.)"""
    import re
    from pathlib import Path

    import yaml

    text = (Path(__file__).resolve().parents[2] / "docs" / "scaleout.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", text, re.S)
    assert len(blocks) == 2
    for number, block in enumerate(blocks):
        settings = {k: v for k, v in yaml.safe_load(block).items() if k != "storage"}
        folder = tmp_path / str(number)
        folder.mkdir()
        (folder / "dagster.yaml").write_text(yaml.safe_dump(settings))
        with dg.DagsterInstance.from_config(str(folder)) as instance:
            runs = instance.get_concurrency_config().run_queue_config
            assert {"key": "memcurator/store", "limit": 1} in runs.tag_concurrency_limits
            assert runs.max_concurrent_runs == 32


def test_a_publish_in_a_run_leaves_the_runs_connection_holding_the_store(home):
    """The publish asset copies the store while the run's connection holds it: the copy reads it through a
    descriptor kept open (store._READERS), as closing one of this process's descriptors of the file dropped
    every lock the process held on it, DuckDB's too, and another process could open the store under the
    copy or beside the run."""
    with dg.build_resources({"store": StoreResource(home=str(home.root))}) as resources:
        with resources.store.writer() as conn:
            conn.execute("create table t as select 1 as x")
        for _ in range(2):  # a copy, then a copy over the spare (the pages that differ)
            store.publish(home.store, home.published)
            assert store_is_held(home.store)
    assert not store_is_held(home.store)  # the run's end lets it go
    with store.connect(home.published, read_only=True) as snapshot:
        assert snapshot.execute("select x from t").fetchall() == [(1,)]
