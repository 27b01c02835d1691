"""Sensors."""


import hashlib
import json
from datetime import datetime, timedelta, timezone

import dagster as dg

from memcurator import ingest
from pipelines.jobs import nightly_curation
from pipelines.reproducibility import reproducibility_check
from pipelines.resources import StoreResource


UNFINISHED = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING,
              dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]


# New transcript files should not wait for 02:00: when the landing folder gains files, run the
# job for the latest complete night. The sensor only lists the folder (never opens DuckDB, which
# the running job may hold), and its cursor is the hash of the file list it last acted on.
@dg.sensor(job=nightly_curation, minimum_interval_seconds=60, default_status=dg.DefaultSensorStatus.RUNNING)
def landing_folder_sensor(context: dg.SensorEvaluationContext, store: StoreResource):
    """Runs the nightly job when new transcript files appear in the landing folder."""
    landing = store.paths.landing
    names = sorted(ingest.source_name(landing, p) for p in ingest.discover(landing, []))
    if not names:
        return dg.SkipReason(f"no transcript files in {landing}")
    digest = hashlib.sha256(json.dumps(names).encode()).hexdigest()[:16]
    if digest == context.cursor:
        return dg.SkipReason("no new files since the last run")
    # one night at a time: the cursor stays, so the files are acted on at the first tick after that run
    # (which, queued, ingests them itself); without this, a night longer than the files' interval piled
    # up runs behind it
    if context.instance.get_runs(dg.RunsFilter(job_name=nightly_curation.name, statuses=UNFINISHED), limit=1):
        return dg.SkipReason("a nightly run is queued or in progress: the new files wait for it to end")
    night = (datetime.now(timezone.utc) - timedelta(days=1)).date().isoformat()
    return dg.SensorResult(
        run_requests=[dg.RunRequest(run_key=digest, partition_key=night, tags={"trigger": "landing"})],
        cursor=digest,
    )


# A failed night must be loud, and so must a night found to differ from the full derivation: the
# failure is logged and appended to the home's alerts file, which `memcurator status` prints.
@dg.run_failure_sensor(monitored_jobs=[nightly_curation, reproducibility_check],
                       default_status=dg.DefaultSensorStatus.RUNNING)
def nightly_failure_sensor(context: dg.RunFailureSensorContext, store: StoreResource):
    """Reports a failed nightly run or reproducibility check: which job and run, which step, and the error."""
    alert = {
        "job": context.dagster_run.job_name,
        "run_id": context.dagster_run.run_id,
        "partition": context.dagster_run.tags.get("dagster/partition"),
        "error": context.failure_event.message,
        "at": datetime.now(timezone.utc).isoformat(),
    }
    context.log.error(f"{alert['job']} run failed: {alert}")
    alerts = store.paths.root / "alerts.jsonl"
    with alerts.open("a") as fh:
        fh.write(json.dumps(alert) + "\n")
