"""Scale-out configuration and the sharded night's orchestration (see memcurator.shards and pipelines.scaleout).

The compute code is the embedded night's; what changes between one machine and a fleet is only
configuration: the number of shards, where shard files live, the executor of the derive job
(multiprocess, or dagster-celery workers behind a Redis broker) and the Dagster instance.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Mapping

from memcurator.config import read_settings
from memcurator.home import HOME_ENV, Home

SHARDS_ENV = "MEMCURATOR_SHARDS"
ROOT_ENV = "MEMCURATOR_SHARD_ROOT"
EXECUTOR_ENV = "MEMCURATOR_EXECUTOR"
BROKER_ENV = "MEMCURATOR_CELERY_BROKER"
BACKEND_ENV = "MEMCURATOR_CELERY_BACKEND"
VISIBILITY_ENV = "MEMCURATOR_CELERY_VISIBILITY_TIMEOUT"
EXECUTORS = ("multiprocess", "in_process", "celery")


def shard_count() -> int:
    raw = os.environ.get(SHARDS_ENV, "1").strip()
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"{SHARDS_ENV}={raw!r}: expected a whole number of shards, at least 1")
    return int(raw)


def shard_root_uri() -> str:
    return os.environ.get(ROOT_ENV) or str(Home.from_env().root / "shards")


def celery_settings(env: Mapping[str, str] = os.environ) -> dict:
    """Celery settings shared by the executor and every worker (they must agree).

    A step's message is acknowledged only when the step has finished (``task_acks_late``), so a
    worker killed mid-step leaves it unacknowledged; after the visibility timeout the broker hands
    it to another worker. The timeout must exceed the longest shard step (default one hour).
    """
    visibility = int(env.get(VISIBILITY_ENV, "3600"))
    return {
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        "broker_connection_retry_on_startup": True,
        "broker_transport_options": {
            "visibility_timeout": visibility,
            "unacked_restore_interval": max(1, min(10, visibility // 4)),
            "unacked_restore_throttle": 1,
        },
        "result_backend_transport_options": {"visibility_timeout": visibility},
    }


def celery_broker(env: Mapping[str, str] = os.environ) -> str:
    return env.get(BROKER_ENV, "redis://127.0.0.1:6379/0")


def celery_backend(env: Mapping[str, str] = os.environ) -> str:
    return env.get(BACKEND_ENV, celery_broker(env))


def executor():
    """The derive job's executor, chosen by MEMCURATOR_EXECUTOR."""
    import dagster as dg

    name = os.environ.get(EXECUTOR_ENV, "multiprocess")
    if name not in EXECUTORS:
        raise ValueError(f"{EXECUTOR_ENV}={name!r}: expected one of {', '.join(EXECUTORS)}")
    if name == "in_process":
        return dg.in_process_executor
    if name == "multiprocess":
        return dg.multiprocess_executor
    from dagster_celery import celery_executor

    return celery_executor.configured({"broker": celery_broker(), "backend": celery_backend(),
                                       "config_source": celery_settings()}, name="celery_shards")


def write_worker_config(folder: Path, env: Mapping[str, str] = os.environ) -> Path:
    """The ``dagster_celery_config`` module a worker imports (dagster-celery reads it at start-up)."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f"broker_url = {celery_broker(env)!r}", f"result_backend = {celery_backend(env)!r}"]
    lines += [f"{key} = {value!r}" for key, value in celery_settings(env).items()]
    path = folder / "dagster_celery_config.py"
    path.write_text("\n".join(lines) + "\n")
    return path


def worker_command(name: str) -> list[str]:
    """One dagster-celery worker that runs one step at a time in its own process (``--pool solo``)."""
    celery = Path(sys.executable).with_name("celery")
    return [str(celery), "-A", "dagster_celery.app", "worker", "--pool", "solo", "--concurrency", "1",
            "--prefetch-multiplier", "1", "--loglevel", "INFO", "-n", f"{name}@%h", "-Q", "dagster"]


@dataclass
class NightOutcome:
    success: bool
    shards: int
    derive_runs: dict[str, tuple[bool, str]] = field(default_factory=dict)
    split_run: str = ""
    merge_run: str = ""


def _derive_run(night: str, shard: str) -> tuple[bool, str]:
    """One shard's derive run (in its own process: Dagster's run orchestration is not thread-safe)."""
    import dagster as dg

    import pipelines.scaleout as scaleout_defs

    job = dg.reconstructable(scaleout_defs.shard_derive_job)
    key = dg.MultiPartitionKey({"night": night, "shard": shard})
    tags = scaleout_defs.shard_derive_job().partitions_def.get_tags_for_partition_key(key)
    with dg.DagsterInstance.get() as instance:
        result = dg.execute_job(job, instance, tags=tags)
        return result.success, result.run_id


def run_night(home: Home, night: str, parallel: int = 4, progress=print) -> NightOutcome:
    """Split, derive every shard (up to ``parallel`` runs at once), merge; stops before merging on a failure."""
    home.ensure()
    os.environ[HOME_ENV] = str(home.root)
    os.environ.setdefault("DAGSTER_HOME", str(home.dagster_home))
    import dagster as dg

    from memcurator import shards
    from pipelines.scaleout import defs

    # the home's settings (the definitions read them when loaded, perhaps for another home): the split
    # passes them on to every shard with its input
    settings = read_settings(home.settings)
    outcome = NightOutcome(False, shard_count())
    with dg.DagsterInstance.get() as instance:
        split = defs.resolve_job_def("shard_split").execute_in_process(
            partition_key=night, instance=instance, raise_on_error=False,
            run_config={"resources": {"curation": {"config": settings}}} if settings else None)
        outcome.split_run = split.run_id
        if not split.success:
            return outcome
        progress(f"split {night} into {outcome.shards} shards")
        with ProcessPoolExecutor(max_workers=max(1, parallel), mp_context=get_context("spawn")) as pool:
            futures = {key: pool.submit(_derive_run, night, key) for key in shards.shard_keys(outcome.shards)}
            for key, future in futures.items():
                outcome.derive_runs[key] = future.result()
                progress(f"shard {key}: {'ok' if outcome.derive_runs[key][0] else 'FAILED'}")
        if not all(ok for ok, _ in outcome.derive_runs.values()):
            return outcome
        merge = defs.resolve_job_def("shard_merge").execute_in_process(partition_key=night, instance=instance,
                                                                       raise_on_error=False)
        outcome.merge_run, outcome.success = merge.run_id, merge.success
    return outcome
