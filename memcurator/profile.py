"""Where a night's time goes: the night run with DuckDB's profile of each of its statements, summed by
stage, by operator and by the stored tables it reads.

``memcurator profile-night`` derives a home's next night on a copy of its store (the store itself is not
changed); ``memcurator bench --profile`` profiles the bench's churn night the same way, after timing it.
The profile's overhead slows a night (each statement writes a JSON file): read its shares, not its clock.

What it answers is what the timed stages cannot: how much of a night is DuckDB's work against Python's,
which operators take the threads' time, and how many reads of large stored tables a night makes. Those
reads set the floor of an incremental night at 1M entries (docs/curation.md): a read by the scope's
hashes of a per-entry table decodes every vector of the columns it reads, whatever the scope's size.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

import duckdb

from memcurator import compaction, ingest, store
from memcurator.config import CurationConfig
from memcurator.night import STEPS

LARGE_TABLE_ROWS = 100_000  # a scan of at least this many stored rows counts as a read of a large table
SHOWN = 15  # operators, tables and statements a summary lists
INGEST, CLOSE = "ingest", "checkpoint at close"
SCAN_OPERATORS = ("TABLE_SCAN", "SEQ_SCAN")


class StatementLog:
    """A connection whose ``execute`` calls are timed into ``log`` as (seconds, statement); the rest is the
    connection's. Where a night's time goes when no stage stands out: at 1M entries a 1 %-churn night
    ran ~750 statements, most of its time in DuckDB."""

    def __init__(self, conn: duckdb.DuckDBPyConnection, log: list[tuple[float, str]]):
        self._conn, self._log = conn, log

    def __getattr__(self, name: str):
        return getattr(self._conn, name)

    def execute(self, query: str, *args, **kwargs):
        started = time.perf_counter()
        try:
            return self._conn.execute(query, *args, **kwargs)
        finally:
            self._log.append((time.perf_counter() - started, query))


class ProfiledConnection(StatementLog):
    """A StatementLog whose statements each leave DuckDB's JSON profile in ``folder``: the log's statement i
    in the file i.json. The connection must have profiling on (``enable_profiling = 'json'``)."""

    def __init__(self, conn: duckdb.DuckDBPyConnection, log: list[tuple[float, str]], folder: Path):
        super().__init__(conn, log)
        self._folder = folder

    def execute(self, query: str, *args, **kwargs):
        path = self._folder / f"{len(self._log)}.json"
        self._conn.execute(f"set profiling_output = '{store.path_literal(path)}'")
        return super().execute(query, *args, **kwargs)


class StoreUnavailable(RuntimeError):
    """There is no store to copy, or a process writing it (a night) holds it."""


def copy_store(path: Path, folder: Path) -> Path:
    """A copy of the store's file (and of its write-ahead log, if any) in ``folder``, made with the store open
    for reading, so that no night writes it meanwhile (DuckDB has one writer); the copy's path."""
    if not path.is_file():
        raise StoreUnavailable(f"no store at {path}: run a night first (memcurator run)")
    folder.mkdir(parents=True, exist_ok=True)
    try:
        with store.connect(path, read_only=True):
            for part in (path, path.with_name(path.name + ".wal")):
                if part.exists():
                    store.copy_file(part, folder / part.name)  # (the read's lock kept under the copy)
    except (duckdb.IOException, duckdb.ConnectionException) as error:
        raise StoreUnavailable(f"{path} cannot be read now (a night may be writing it): try again after it. "
                               f"DuckDB: {str(error).splitlines()[0]}") from error
    return folder / path.name


def profile_night(store_path: Path, landing: Path, as_of: datetime, cfg: CurationConfig = CurationConfig()) -> dict:
    """Ingest the landing's new files into the store at ``store_path`` and derive the night of ``as_of``,
    every statement profiled; the summary (``summarize``). It writes the store: give it a copy."""
    stages: list[Stage] = []
    with tempfile.TemporaryDirectory(prefix="memcurator-profile-") as scratch, store.connect(store_path) as conn:
        conn.execute("set enable_profiling = 'json'")

        def timed(name: str, run) -> None:
            folder = Path(scratch) / str(len(stages))  # the stage's profiles, numbered as its statements
            folder.mkdir()
            log: list[tuple[float, str]] = []
            started = time.perf_counter()
            run(ProfiledConnection(conn, log, folder))
            stages.append(Stage(name, time.perf_counter() - started, log, folder))

        timed(INGEST, lambda c: ingest.ingest_landing(c, landing, None, cfg))
        for name, build in STEPS:
            timed(name, lambda c, b=build: b(c, as_of, cfg))
        timed(CLOSE, lambda c: compaction.close_night(c, as_of))
        conn.execute("set enable_profiling = 'no_output'")
        return summarize(stages) | {"as_of": as_of.isoformat()}


class Stage(NamedTuple):
    """A stage as profiled: its wall time, its statements as (seconds, statement), and the folder of their
    profiles (statement i's in i.json)."""
    name: str
    wall_s: float
    log: list[tuple[float, str]]
    folder: Path


def summarize(stages: list[Stage]) -> dict:
    """Per stage its wall time, statements, their time in DuckDB and the threads' time (DuckDB's cpu_time,
    the sum of its operators' time over threads), the explicit checkpoints' time, and the time of the
    statements without a profile (COMMITs, whose checkpoints DuckDB runs when its write-ahead log passes
    its threshold; a statement that failed); the threads' time by operator (and the table it reads), the
    reads of large stored tables, and the slowest profiled statements."""
    rows = [{"name": stage.name, "wall_s": stage.wall_s, "statements": len(stage.log),
             "statement_s": sum(seconds for seconds, _ in stage.log), "thread_s": 0.0, "checkpoint_s": 0.0,
             "unprofiled_s": 0.0} for stage in stages]
    operators: dict[tuple[str, str], dict] = defaultdict(lambda: {"count": 0, "thread_s": 0.0, "rows_scanned": 0})
    reads: dict[str, dict] = defaultdict(lambda: {"count": 0, "thread_s": 0.0, "rows_scanned": 0})
    statements = []
    for row, stage in zip(rows, stages):
        for number, (seconds, query) in enumerate(stage.log):
            profile = _read(stage.folder / f"{number}.json")
            if profile is None:  # DuckDB profiles no COMMIT (where its checkpoints run), nor a statement that failed
                row["unprofiled_s"] += seconds
                continue
            row["thread_s"] += profile.get("cpu_time") or 0.0
            row["checkpoint_s"] += profile.get("checkpoint_latency") or 0.0
            statements.append((seconds, profile.get("cpu_time") or 0.0, stage.name, query))
            for node in _operators(profile):
                _add(operators[(node["operator"], node["table"])], node)
                if (node["operator"] in SCAN_OPERATORS and _stored(node["table"])
                        and node["rows_scanned"] >= LARGE_TABLE_ROWS):
                    _add(reads[node["table"]], node)
    rounded = lambda d: {k: round(v, 3) if isinstance(v, float) else v for k, v in d.items()}  # noqa: E731
    by_time = lambda d: sorted(d.items(), key=lambda kv: -kv[1]["thread_s"])  # noqa: E731
    return {
        "wall_s": round(sum(stage.wall_s for stage in stages), 3),
        **{key: round(sum(row[key] for row in rows), 3)
           for key in ("statements", "statement_s", "thread_s", "unprofiled_s")},
        "stages": [rounded(row) for row in rows],
        "operators": [rounded({"operator": name, "table": table, **entry})
                      for (name, table), entry in by_time(operators)[:SHOWN]],
        "large_table_reads": rounded({
            "min_rows": LARGE_TABLE_ROWS,
            "count": sum(r["count"] for r in reads.values()),
            "thread_s": sum(r["thread_s"] for r in reads.values()),
            "rows_scanned": sum(r["rows_scanned"] for r in reads.values()),
        }) | {"by_table": [rounded({"table": table, **entry}) for table, entry in by_time(reads)[:SHOWN]]},
        "slowest": [{"stage": stage, "seconds": round(seconds, 3), "thread_s": round(threads, 3),
                     "statement": store.gist(query)}
                    for seconds, threads, stage, query in sorted(statements, key=lambda s: -s[0])[:SHOWN]],
    }


def _add(total: dict, node: dict) -> None:
    total["count"] += 1
    total["thread_s"] += node["thread_s"]
    total["rows_scanned"] += node["rows_scanned"]


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _operators(profile: dict) -> list[dict]:
    """Every operator of a statement's profile: its name, the table it scans (schema.name, or ""), its
    threads' time and the rows it scanned."""
    out, todo = [], list(profile.get("children", []))
    while todo:
        node = todo.pop()
        todo.extend(node.get("children", []))
        info = node.get("extra_info") or {}
        table = info.get("Table", "") if isinstance(info, dict) else ""
        out.append({"operator": (node.get("operator_name") or node.get("operator_type") or "").strip(),
                    # DuckDB names a table catalog.schema.name: the catalog is the file's name
                    "table": ".".join(part.strip('"') for part in table.split(".")[-2:]) if table else "",
                    "thread_s": node.get("operator_timing") or 0.0,
                    "rows_scanned": node.get("operator_rows_scanned") or 0})
    return out


def _stored(table: str) -> bool:
    return table.split(".")[0] in store.SCHEMAS


def profile_markdown(profile: dict, shown: int = 8) -> list[str]:
    """The lines docs/performance.md gives a profiled churn night (``memcurator bench --profile``)."""
    reads = profile["large_table_reads"]
    lines = [f"The churn night derived again with DuckDB's profile of each statement (`--profile`: on a copy of "
             f"the store as it was before it; the profiling slows the clock, the shares stand): "
             f"{profile['statements']:,} statements, {profile['statement_s']:.2f} s in DuckDB of the "
             f"{profile['wall_s']:.2f} s the profiled night took (ingest included), {profile['thread_s']:.2f} s of "
             f"the threads' time ({profile['unprofiled_s']:.2f} s more in COMMITs and their checkpoints, which DuckDB "
             f"does not profile). Of the threads' time, {reads['count']:,} reads of stored tables of {reads['min_rows']:,} rows "
             f"or more took {reads['thread_s']:.2f} s, through {reads['rows_scanned']:,} rows; by table:", "",
             "| table | reads | rows | threads' s |", "|---|---|---|---|"]
    lines += [f"| {r['table']} | {r['count']} | {r['rows_scanned']:,} | {r['thread_s']:.2f} |"
              for r in reads["by_table"][:shown]]
    lines += ["", "The operators that took the most of the threads' time:", "",
              "| operator | table | count | threads' s |", "|---|---|---|---|"]
    lines += [f"| {o['operator']} | {o['table']} | {o['count']} | {o['thread_s']:.2f} |"
              for o in profile["operators"][:shown]]
    return lines


def text_summary(profile: dict) -> list[str]:
    """A profile's summary for a person, a line each."""
    reads = profile["large_table_reads"]
    lines = [f"{profile['statements']:,} statements, {profile['statement_s']:.2f} s in DuckDB of the night's "
             f"{profile['wall_s']:.2f} s (profiled); the threads' time in DuckDB {profile['thread_s']:.2f} s; "
             f"COMMITs and other statements without a profile {profile['unprofiled_s']:.2f} s",
             f"reads of stored tables of {reads['min_rows']:,} rows or more: {reads['count']:,}, "
             f"{reads['rows_scanned']:,} rows, {reads['thread_s']:.2f} s of the threads' time",
             "stages (wall s, statements, DuckDB s, threads' s, checkpoints s, without a profile s):"]
    lines += [f"  {s['name']:30s} {s['wall_s']:7.3f} {s['statements']:5d} {s['statement_s']:7.3f} {s['thread_s']:7.3f} "
              f"{s['checkpoint_s']:6.3f} {s['unprofiled_s']:6.3f}" for s in profile["stages"]]
    lines.append("operators by the threads' time (count, s, rows scanned):")
    lines += [f"  {o['operator']:18s} {o['table']:34s} {o['count']:5d} {o['thread_s']:7.3f} {o['rows_scanned']:>12,}"
              for o in profile["operators"]]
    lines.append("the slowest statements (s, threads' s):")
    lines += [f"  {s['seconds']:6.3f} {s['thread_s']:6.3f} {s['stage']}: {s['statement'][:110]}"
              for s in profile["slowest"]]
    return lines
