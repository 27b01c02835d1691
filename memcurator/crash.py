"""Crash safety: kill -9 the nightly run at random moments; the store must open and converge.

`memcurator crash-test --kills N` builds a seeded demo fleet, runs one uninterrupted night as the
reference, then N times: copies the landing folder into a fresh home, starts ``memcurator run`` as
its own process group, kills it with SIGKILL after a random delay within the reference run's
duration (from the moment the reference run first wrote its store), opens the store (it must
open: never corrupted), reruns the night to completion and
compares the content hash of every table and of the lake with the reference. Each kill is
reported with its delay, the stage the store had reached, and whether it converged.

With ``--after-nights K`` the killed night is the (K+1)-th: the reference runs the K nights before it
uninterrupted, and each killed run starts from a copy of that home (store, lake, published snapshot
and its spare). So the kills land in incremental nights (the refreshes that reuse the night before's
work) and in a publish that writes the pages that differ over the spare (store.publish). The
published snapshot the kill leaves must be a whole one, the night before's or the killed night's,
and after the rerun the killed night's.
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from datetime import date, timedelta
from pathlib import Path

import duckdb

from memcurator import demo, store
from memcurator.home import HOME_ENV, Home

NIGHT = date(2026, 11, 28)


def table_hashes(path: Path, schemas=("raw", "core", "mart")) -> dict[str, str]:
    """Content hash of every table (rows sorted), to compare two stores."""
    out = {}
    with store.connect(path, read_only=True) as conn:
        names = conn.execute(
            "select table_schema || '.' || table_name from information_schema.tables "
            "where table_type = 'BASE TABLE' and table_schema in (select unnest(?)) order by 1",
            [list(schemas)]).fetchall()
        for (name,) in names:
            rows = conn.execute(f"select * from {name} order by all").fetchall()
            out[name] = hashlib.sha256(repr(rows).encode()).hexdigest()
    return out


def lake_hash(home: Home) -> str:
    """Hash of the lake's rows (not its bytes: Parquet metadata may name the writer version)."""
    files = sorted((home.lake / "events").rglob("*.parquet"))
    if not files:
        return ""
    with duckdb.connect() as conn:
        rows = conn.execute("select * from read_parquet(?) order by all", [[str(f) for f in files]]).fetchall()
    names = [f.relative_to(home.lake).as_posix() for f in files]
    return hashlib.sha256(repr((names, rows)).encode()).hexdigest()


def _run(home: Home, night: str, env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "memcurator.cli", "run", "--night", night, "--home", str(home.root)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def _env(home: Home) -> dict:
    return os.environ | {HOME_ENV: str(home.root), "DAGSTER_HOME": str(home.dagster_home)}


def _stage(home: Home) -> str:
    """How far the killed run had got, read from the store it left."""
    if not home.store.exists():
        return "before the store was created"
    with store.connect(home.store, read_only=True) as conn:
        tables = {r[0] for r in conn.execute("select schema_name || '.' || table_name from duckdb_tables()").fetchall()}
        events = conn.execute("select count(*) from raw.events").fetchone()[0] if "raw.events" in tables else 0
        # the tables kept by refresh that the last night reached (a later night's store has every table)
        last = (conn.execute("select count(*), any_value(as_of)::date from work.refreshes "
                             "where as_of = (select max(as_of) from work.refreshes)").fetchone()
                if "work.refreshes" in tables else (0, None))
    published = home.published.exists()
    refreshed = f", {last[0]} refreshed as of {last[1]}" if last[0] else ""
    return f"{events} events, {len(tables)} tables{refreshed}{', published' if published else ''}"


@dataclass
class Kill:
    number: int
    delay_s: float
    stage: str
    store_opened: bool
    converged: bool
    differing: list[str]
    published: str  # the snapshot the kill left: none, before (the night before's), this night, or broken


def crash_test(workdir: Path, kills: int = 20, writes: int = 5_000, namespaces: int = 4, seed: int = 11,
               after_nights: int = 0, progress=print) -> list[Kill]:
    workdir.mkdir(parents=True, exist_ok=True)
    reference = Home.from_env(workdir / "reference")
    shutil.rmtree(reference.root, ignore_errors=True)  # a store left by an earlier test would make it a later night
    reference.ensure()
    demo.generate(reference.landing, reference.truth, writes=writes, namespaces=namespaces, days=30, seed=seed,
                  end=NIGHT, hostile_share=0.003)
    for back in range(after_nights, 0, -1):
        earlier = (NIGHT - timedelta(days=back)).isoformat()
        if _run(reference, earlier, _env(reference)).wait() != 0:
            raise RuntimeError(f"the uninterrupted night {earlier} before the killed one failed")
    # what every killed run starts from (its own run history aside)
    start = workdir / "start"
    shutil.rmtree(start, ignore_errors=True)
    shutil.copytree(reference.root, start, ignore=lambda folder, names: [reference.dagster_home.name]
                    if Path(folder) == reference.root else [])
    published_before = _published_tables(reference)
    night = NIGHT.isoformat()
    written = _store_stamp(reference)
    started = time.monotonic()
    process, store_at = _run(reference, night, _env(reference)), None
    while process.poll() is None:  # when the run first writes the store: kills before that only hit start-up
        if store_at is None and _store_stamp(reference) != written:
            store_at = time.monotonic() - started
        time.sleep(0.05)
    if process.returncode != 0:
        raise RuntimeError("the uninterrupted reference run failed")
    full = time.monotonic() - started
    store_at = store_at or 0.5
    want, want_lake, want_published = table_hashes(reference.store), lake_hash(reference), _published_tables(reference)
    progress(f"reference night {night} (after {after_nights} uninterrupted nights): {full:.1f} s "
             f"(store first written after {store_at:.1f} s), {len(want)} tables")
    rng = random.Random(seed)
    out: list[Kill] = []
    for number in range(1, kills + 1):
        home = Home.from_env(workdir / f"kill-{number:02d}")
        shutil.rmtree(home.root, ignore_errors=True)
        shutil.copytree(start, home.root)
        home.ensure()
        delay = rng.uniform(store_at, full)
        process = _run(home, night, _env(home))
        try:
            process.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        stage = _stage(home)
        opened = True
        if home.store.exists():
            try:
                with store.connect(home.store, read_only=True) as conn:
                    conn.execute("select count(*) from duckdb_tables()").fetchone()
            except duckdb.Error:
                opened = False
        left = _published_tables(home)
        published = ("none" if left is None else "before" if left == published_before
                     else "this night" if left == want_published else "broken")
        rerun = _run(home, night, _env(home)).wait()
        got = table_hashes(home.store) if rerun == 0 else {}
        differing = sorted(k for k in set(want) | set(got) if want.get(k) != got.get(k))
        if rerun == 0 and lake_hash(home) != want_lake:
            differing.append("lake")
        if rerun == 0 and _published_tables(home) != want_published:
            differing.append("published")
        kill = Kill(number, round(delay, 2), stage, opened, rerun == 0 and not differing, differing, published)
        progress(f"kill {number:2d} after {delay:5.1f} s ({stage}): store opened {opened}, published {published}, "
                 f"converged {kill.converged}{'' if kill.converged else ' ' + ','.join(differing)}")
        out.append(kill)
        shutil.rmtree(home.root, ignore_errors=True)
    return out


def _store_stamp(home: Home) -> tuple:
    """What changes when a run writes the store: its file's size and time, and its write-ahead log."""
    wal = home.store.with_name(home.store.name + ".wal")
    if not home.store.exists():
        return ()
    stat = home.store.stat()
    return stat.st_size, stat.st_mtime_ns, wal.exists()


def _published_tables(home: Home) -> dict[str, str] | None:
    """The published snapshot's table hashes; None without one, {"": error} when it does not open."""
    if not home.published.exists():
        return None
    try:
        return table_hashes(home.published)
    except duckdb.Error as error:
        return {"": str(error)}


def as_dicts(kills: list[Kill]) -> list[dict]:
    return [asdict(k) for k in kills]
