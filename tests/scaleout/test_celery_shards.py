"""The sharded night on real components: redis-server, moto_server (S3) and two dagster-celery workers.

Run by `make test-scaleout` (and .ci/run). The embedded night (`memcurator run`) is the reference:
the sharded night must give identical tables, its shard steps must run in both workers, and a
worker killed mid-step must not change the result (its step is redelivered to the other worker).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

import pytest

from memcurator import demo, scaleout
from memcurator.crash import table_hashes
from memcurator.home import HOME_ENV, Home
from tests.scaleout.cluster import REPO, Cluster, alive, wait_for_line

pytestmark = pytest.mark.scaleout

NIGHT = date(2026, 11, 28)
SHARDS = 4


def _home_env(env: dict, home: Home) -> dict:
    return env | {HOME_ENV: str(home.root)}


def _cli(env: dict, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "memcurator.cli", *args], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _finish(process: subprocess.Popen, timeout: float) -> str:
    out, _ = process.communicate(timeout=timeout)
    assert process.returncode == 0, out[-4000:]
    return out


def _derive_pids(env: dict) -> dict[str, int]:
    """worker_pid of the latest materialization of every shard of the night, read from the instance."""
    code = (
        "import dagster as dg, json\n"
        "i = dg.DagsterInstance.get()\n"
        "out = {}\n"
        "for r in i.fetch_materializations(dg.AssetKey(['shards', 'derived']), limit=1000).records:\n"
        "    m = r.asset_materialization\n"
        "    out.setdefault(m.partition, m.metadata['worker_pid'].value)\n"
        "print(json.dumps(out))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A generated fleet and the embedded night's table hashes (the reference)."""
    work = tmp_path_factory.mktemp("fleet")
    reference = Home.from_env(work / "embedded").ensure()
    demo.generate(reference.landing, reference.truth, writes=3_000, namespaces=10, days=30, seed=5, end=NIGHT)
    env = _home_env(dict(os.environ), reference) | {"DAGSTER_HOME": str(reference.dagster_home)}
    _finish(_cli(env, "run", "--night", NIGHT.isoformat()), timeout=600)
    return reference.landing, table_hashes(reference.store)


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path, env=dict(os.environ) | {
        "DAGSTER_HOME": str(tmp_path / "dagster"), scaleout.SHARDS_ENV: str(SHARDS),
        scaleout.VISIBILITY_ENV: "20",
    })
    (tmp_path / "dagster").mkdir()
    try:
        c.start_services()
        c.initialise_instance()
        c.start_worker("worker-1")
        c.start_worker("worker-2")
        yield c
    finally:
        pids = [p.pid for p in c.processes.values()]
        still = c.stop_all()
        assert not still, f"processes still alive after stop: {still}"
        assert not any(alive(pid) for pid in pids)


def _sharded_home(cluster: Cluster, landing: Path, name: str) -> tuple[Home, dict]:
    home = Home.from_env(cluster.workdir / name).ensure()
    shutil.copytree(landing, home.landing, dirs_exist_ok=True)
    return home, _home_env(cluster.env, home)


def _differing(want: dict, home: Home) -> list[str]:
    got = table_hashes(home.store)
    return sorted(k for k in set(want) | set(got) if want.get(k) != got.get(k))


def test_sharded_night_on_celery_workers_matches_the_embedded_night(cluster, fleet):
    landing, want = fleet
    home, env = _sharded_home(cluster, landing, "sharded")
    out = _finish(_cli(env, "scaleout-night", "--night", NIGHT.isoformat(), "--parallel", str(SHARDS)), timeout=900)
    assert f"done: {SHARDS} shards" in out
    assert _differing(want, home) == []

    pids = _derive_pids(env)
    workers = {cluster.processes["worker-1"].pid, cluster.processes["worker-2"].pid}
    assert len(pids) == SHARDS
    assert set(pids.values()) <= workers, "a shard step ran outside the celery workers"
    assert len(set(pids.values())) >= 2, "every shard step ran in one worker"


def test_a_worker_killed_mid_step_still_ends_in_the_same_tables(cluster, fleet):
    landing, want = fleet
    home, env = _sharded_home(cluster, landing, "killed")
    offsets = {name: cluster.log(name).stat().st_size for name in ("worker-1", "worker-2")}
    night = _cli(env, "scaleout-night", "--night", NIGHT.isoformat(), "--parallel", str(SHARDS))
    victim = _first_to_receive(cluster, offsets, timeout=300)
    cluster.kill(victim)
    assert not alive(cluster.processes[victim].pid)
    survivor = ({"worker-1", "worker-2"} - {victim}).pop()

    out = _finish(night, timeout=900)
    assert f"done: {SHARDS} shards" in out
    assert _differing(want, home) == []
    assert set(_derive_pids(env).values()) == {cluster.processes[survivor].pid}, \
        "after the kill every shard's latest materialization must come from the surviving worker"


def _first_to_receive(cluster: Cluster, offsets: dict[str, int], timeout: float) -> str:
    """The worker that first receives a shard step after ``offsets`` (it is then mid-step)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for name, start in offsets.items():
            try:
                wait_for_line(cluster.log(name), "] received", 0.05, start)
                return name
            except TimeoutError:
                continue
    raise TimeoutError("no worker received a step")
