"""Real scale-out components on loopback for one test: redis-server, moto_server (S3), dagster-celery workers.

Every process is started in its own session and stopped by its process id (SIGTERM, then SIGKILL).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from memcurator import scaleout

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args[0]} exited with {process.returncode} before listening on {port}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listening on 127.0.0.1:{port} after {timeout} s")


def wait_for_line(log: Path, text: str, timeout: float, start: int = 0) -> int:
    """Wait until ``text`` appears in ``log`` after byte ``start``; returns the offset just past it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = log.read_bytes()[start:] if log.exists() else b""
        at = body.find(text.encode())
        if at >= 0:
            return start + at + len(text)
        time.sleep(0.1)
    raise TimeoutError(f"{text!r} not in {log} after {timeout} s")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped) still answers signal 0
    status = Path(f"/proc/{pid}/stat")
    return status.exists() and status.read_text().split()[2] != "Z"


@dataclass
class Cluster:
    workdir: Path
    env: dict = field(default_factory=dict)
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)

    def start(self, name: str, argv: list[str], env: dict | None = None) -> subprocess.Popen:
        log = open(self.workdir / f"{name}.log", "wb")
        process = subprocess.Popen(argv, cwd=REPO, env=env or self.env, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        self.processes[name] = process
        return process

    def log(self, name: str) -> Path:
        return self.workdir / f"{name}.log"

    def start_services(self) -> None:
        redis_port, s3_port = free_port(), free_port()
        redis = self.start("redis", [shutil.which("redis-server") or "redis-server", "--bind", "127.0.0.1",
                                     "--port", str(redis_port), "--save", "", "--appendonly", "no"])
        moto = self.start("moto", [str(Path(sys.executable).with_name("moto_server")), "-H", "127.0.0.1",
                                   "-p", str(s3_port)])
        wait_for_port(redis_port, redis)
        wait_for_port(s3_port, moto, timeout=60)
        broker = f"redis://127.0.0.1:{redis_port}/0"
        self.env.update({
            scaleout.EXECUTOR_ENV: "celery",
            scaleout.BROKER_ENV: broker,
            scaleout.BACKEND_ENV: f"redis://127.0.0.1:{redis_port}/1",
            scaleout.ROOT_ENV: (f"s3://memcurator-shards/nights?endpoint_override=127.0.0.1:{s3_port}"
                                "&scheme=http&region=us-east-1&allow_bucket_creation=true"),
            "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
        })

    def initialise_instance(self) -> None:
        """Create the Dagster instance's storage before any worker opens it."""
        subprocess.run([sys.executable, "-c", "import dagster as dg; i = dg.DagsterInstance.get(); "
                        "i.get_runs(limit=1); i.dispose()"], cwd=REPO, env=self.env, check=True)

    def start_worker(self, name: str, timeout: float = 120) -> subprocess.Popen:
        config_dir = self.workdir / "celery-config"
        scaleout.write_worker_config(config_dir, self.env)
        env = self.env | {"PYTHONPATH": os.pathsep.join([str(config_dir), str(REPO)])}
        process = self.start(name, scaleout.worker_command(name), env)
        wait_for_line(self.log(name), "ready.", timeout)
        return process

    def kill(self, name: str) -> None:
        process = self.processes[name]
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    def stop_all(self) -> list[int]:
        """Stop everything started, by process id; returns the ids still alive afterwards (none)."""
        for process in self.processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        for process in self.processes.values():
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        return [p.pid for p in self.processes.values() if alive(p.pid)]
