"""Shared fixtures: a temporary home, an event builder, and a connection on a scratch store."""

from __future__ import annotations

import gzip
import itertools
from pathlib import Path

import orjson
import pytest
from hypothesis import settings

from memcurator import store
from memcurator.home import Home

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
_ids = itertools.count(1)

# The property tests draw the same examples on every run (derandomize: a failure in `make test` is the
# change's, not a new draw's); `make fuzz` draws new ones (--hypothesis-profile=fuzz), many more of them.
settings.register_profile("replay", derandomize=True, max_examples=60)
settings.register_profile("fuzz", derandomize=False, max_examples=2000)
settings.load_profile("replay")


def ev(type_: str, data: dict, *, ts: str = "2026-11-02T10:00:00Z", namespace: str = "ns-a",
       id: str | None = None, **envelope) -> dict:
    """One event with sensible defaults; pass envelope fields (run_id, agent_id, actor) as keywords."""
    event = {"id": id or f"ev-{next(_ids)}", "type": type_, "ts": ts, "namespace": namespace, "data": data}
    event.update(envelope)
    return event


def write(text: str, *, entry_id: str | None = None, cls: str = "lesson", **kw) -> dict:
    data = {"text": text, "class": cls}
    if entry_id:
        data["entry_id"] = entry_id
    data.update(kw.pop("data", {}))
    return ev("memory.write", data, **kw)


def write_jsonl(path: Path, lines: list, gz: bool = False) -> Path:
    """Write events (dicts) or raw lines (str/bytes) as a transcript file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = b"\n".join(
        orjson.dumps(x) if isinstance(x, dict) else (x.encode() if isinstance(x, str) else x) for x in lines
    ) + b"\n"
    path.write_bytes(gzip.compress(body, mtime=0) if gz else body)  # the same bytes whenever written
    return path


def string_compressions(conn, table: str) -> set[str]:
    """The compressions DuckDB stored the string columns of ``table`` with (pragma_storage_info)."""
    return {row[0] for row in conn.execute(
        f"select distinct compression from pragma_storage_info('{table}') where segment_type = 'VARCHAR'").fetchall()}


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home.from_env(tmp_path / "home").ensure()


@pytest.fixture
def conn(home: Home):
    with store.connect(home.store) as c:
        yield c


def shared_data(*parts: str) -> Path:
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.fail(f"{path} is missing: tests marked shared_data need ../shared/data beside the repository")
    return path


def held_by_another_process(home, seconds: float):
    """A process that opens the store, says so (a file beside it) and holds it ``seconds``."""
    import subprocess
    import sys
    import time

    ready = home.root / "holder-ready"
    ready.unlink(missing_ok=True)
    code = ("import sys, time, duckdb; c = duckdb.connect(sys.argv[1]); open(sys.argv[2], 'w').close(); "
            "time.sleep(float(sys.argv[3])); c.close()")
    holder = subprocess.Popen([sys.executable, "-c", code, str(home.store), str(ready), str(seconds)])
    deadline = time.monotonic() + 60
    while not ready.exists():
        assert holder.poll() is None and time.monotonic() < deadline, "the holder did not open the store"
        time.sleep(0.05)
    return holder


def store_is_held(path) -> bool:
    """Whether another process cannot open the store (a process holds it for writing)."""
    import subprocess
    import sys

    code = "import sys, duckdb; duckdb.connect(sys.argv[1], read_only=True)"
    return subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True).returncode != 0
