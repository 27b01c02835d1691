"""The landing sensor runs the job when the landing folder changes, and only then."""

from __future__ import annotations

import dagster as dg

from pipelines.definitions import build_definitions, build_resources
from pipelines.sensors import landing_folder_sensor
from tests.conftest import write, write_jsonl


def evaluate(home, cursor=None, instance=None):
    defs = build_definitions(build_resources(home=str(home.root)))
    # opened as the daemon opens it: the store resource has a run's lifecycle (setup and teardown)
    with dg.build_sensor_context(cursor=cursor, resources={"store": defs.resources["store"]}, definitions=defs,
                                 instance=instance or dg.DagsterInstance.ephemeral()) as context:
        return landing_folder_sensor(context)


def test_sensor_requests_a_run_for_new_files_and_skips_when_nothing_changed(home):
    assert isinstance(evaluate(home), dg.SkipReason)  # empty landing folder
    write_jsonl(home.landing / "a.jsonl", [write("a lesson")])
    first = evaluate(home)
    assert isinstance(first, dg.SensorResult) and len(first.run_requests) == 1
    assert isinstance(evaluate(home, cursor=first.cursor), dg.SkipReason)  # nothing new since
    write_jsonl(home.landing / "b.jsonl", [write("another lesson")])
    second = evaluate(home, cursor=first.cursor)
    assert isinstance(second, dg.SensorResult) and second.cursor != first.cursor


def test_new_files_wait_while_a_night_is_queued_or_running(home):
    """One night at a time: with a nightly run unfinished, the sensor requests none and keeps its cursor,
    so the files are acted on at the first tick after that run ends."""
    import uuid

    write_jsonl(home.landing / "a.jsonl", [write("a lesson")])
    first = evaluate(home)
    write_jsonl(home.landing / "b.jsonl", [write("another lesson")])
    with dg.DagsterInstance.ephemeral() as instance:
        # (a queued run needs its code location's origin to be stored: NOT_STARTED, the state a launched
        # run holds before it starts, stands in for it; the sensor reads them by the same filter)
        for status in (dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED):
            run_id = str(uuid.uuid4())
            instance.add_run(dg.DagsterRun(job_name="nightly_curation", run_id=run_id, status=status))
            assert isinstance(evaluate(home, cursor=first.cursor, instance=instance), dg.SkipReason)
            instance.delete_run(run_id)
        instance.add_run(dg.DagsterRun(job_name="nightly_curation", run_id=str(uuid.uuid4()),
                                       status=dg.DagsterRunStatus.SUCCESS))
        instance.add_run(dg.DagsterRun(job_name="reproducibility_check", run_id=str(uuid.uuid4()),
                                       status=dg.DagsterRunStatus.STARTED))  # queued behind, by the store's tag
        after = evaluate(home, cursor=first.cursor, instance=instance)
    assert isinstance(after, dg.SensorResult) and len(after.run_requests) == 1 and after.cursor != first.cursor
