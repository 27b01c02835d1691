"""The landing sensor runs the job when the landing folder changes, and only then."""

from __future__ import annotations

import dagster as dg

from pipelines.definitions import build_definitions, build_resources
from pipelines.sensors import landing_folder_sensor
from tests.conftest import write, write_jsonl


def evaluate(home, cursor=None):
    defs = build_definitions(build_resources(home=str(home.root)))
    # opened as the daemon opens it: the store resource has a run's lifecycle (setup and teardown)
    with dg.build_sensor_context(cursor=cursor, resources={"store": defs.resources["store"]},
                                 definitions=defs) as context:
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
