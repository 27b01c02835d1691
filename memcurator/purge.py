"""Purge: the one hard delete. A namespace (or an end user) leaves every file under the home.

What goes, in this order (the store is held exclusively throughout, so the nightly job cannot
interleave):

1. **Landing files**: each line that belongs to the target (an object whose ``namespace`` or
   ``user_id`` is it; an unreadable line that names it in a ``"namespace"``/``"user_id"``
   field) is blanked in place. Blank lines are skipped by ingest, so every other line keeps its
   number and its quarantine row stays valid. Files are rewritten under a temporary name and
   renamed; gzipped files stay gzipped.
2. **Curator decisions** of a purged namespace: their files are deleted.
3. **Lake**: what an ingest stopped before its lake left to write is written (without the target), then
   each Parquet file is rewritten without the target's rows (or removed when empty).
4. **Store**: the target's raw events, quarantine rows and decisions are deleted, the latest
   night is derived again (every derived table is a pure function of the log, so nothing of the
   target survives in them), a purged namespace's health history is deleted, and the file is
   compacted into a fresh one (DuckDB keeps freed blocks; a copy does not) and renamed into place.
5. **Snapshot**: republished from the compacted store.
6. **Ledger**: a receipt is appended to ``purge-ledger.jsonl`` under the home: the target's
   sha256 (never its name), time, reason, counts per place, and the sha256 of every purged line.

Dagster's run history holds no memory content to purge: asset metadata carries counts and column
profiles, never rows (assets/_tables.py).
"""

from __future__ import annotations

import gzip
import hashlib
import os
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import orjson

from memcurator import changes, ingest, rederive, store
from memcurator.config import CurationConfig, masks_endpoint, read_settings
from memcurator.home import Home
from memcurator.night import derive_night

LEDGER = "purge-ledger.jsonl"
KINDS = ("namespace", "user_id")


@dataclass
class PurgeReceipt:
    purge_id: str
    at: str
    kind: str
    target_sha256: str
    reason: str
    landing_lines: int = 0
    landing_files_rewritten: int = 0
    decision_files_deleted: int = 0
    lake_rows: int = 0
    lake_files_rewritten: int = 0
    store_events: int = 0
    store_quarantine_rows: int = 0
    store_decisions: int = 0
    store_health_rows: int = 0
    rederived_as_of: str | None = None
    line_sha256: list[str] = field(default_factory=list)


def _belongs(raw: bytes, kind: str, target: str, marker: re.Pattern) -> bool:
    try:
        record = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return bool(marker.search(raw))
    if isinstance(record, dict):
        return record.get(kind) == target
    return bool(marker.search(raw))


def _rewrite(path: Path, body: bytes, gz: bool) -> None:
    tmp = path.with_name(f".{path.name}.purge.tmp")
    tmp.write_bytes(gzip.compress(body, mtime=0) if gz else body)
    os.replace(tmp, path)


def _purge_landing(home: Home, kind: str, target: str, receipt: PurgeReceipt) -> dict[str, list[int]]:
    """Blank the target's lines in every landed file; returns {source_file: purged line numbers}."""
    marker = re.compile(rb'"' + kind.encode() + rb'"\s*:\s*"' + re.escape(target.encode()) + rb'"')
    purged: dict[str, list[int]] = {}
    for path in sorted(p for p in home.landing.rglob("*") if p.is_file() and ingest.is_transcript(p)):
        raw = path.read_bytes()
        gz = raw[:2] == b"\x1f\x8b"
        try:
            body = gzip.decompress(raw) if gz else raw
        except (OSError, EOFError):
            continue  # a corrupt gzip was quarantined whole and holds no readable line
        lines = body.split(b"\n")
        hit = [i for i, line in enumerate(lines) if line.strip() and _belongs(line, kind, target, marker)]
        if not hit:
            continue
        for i in hit:
            receipt.line_sha256.append(hashlib.sha256(lines[i]).hexdigest())
            lines[i] = b""
        _rewrite(path, b"\n".join(lines), gz)
        purged[path.relative_to(home.landing).as_posix()] = [i + 1 for i in hit]
        receipt.landing_lines += len(hit)
        receipt.landing_files_rewritten += 1
    return purged


def _purge_decisions(home: Home, conn: duckdb.DuckDBPyConnection, target: str, receipt: PurgeReceipt) -> None:
    """A purged namespace's decision files go, with their rows and quarantine entries."""
    marker = re.compile(rb'"namespace"\s*:\s*"' + re.escape(target.encode()) + rb'"')
    for path in sorted(p for p in home.decisions.rglob("*") if p.is_file()):
        raw = path.read_bytes()
        lines = [line for line in raw.splitlines() if line.strip()]
        if lines and all(_belongs(line, "namespace", target, marker) for line in lines):
            source = ingest.source_name(home.decisions, path, ingest.DECISIONS_PREFIX)
            conn.execute("DELETE FROM raw.quarantine WHERE source_file = ?", [source])
            conn.execute("DELETE FROM raw.landed_files WHERE source_file = ?", [source])
            receipt.line_sha256 += [hashlib.sha256(line).hexdigest() for line in lines]
            path.unlink()
            receipt.decision_files_deleted += 1
    receipt.store_decisions = conn.execute(
        "DELETE FROM raw.curator_decisions WHERE namespace = ?", [target]).fetchone()[0]


def _purge_lake(home: Home, conn: duckdb.DuckDBPyConnection, kind: str, target: str, receipt: PurgeReceipt) -> None:
    for path in sorted((home.lake / "events").rglob("*.parquet")):
        source = store.path_literal(path)
        hit = conn.execute(f"select count(*) from read_parquet('{source}') where {kind} = ?", [target]).fetchone()[0]
        if not hit:
            continue
        left = conn.execute(f"select count(*) from read_parquet('{source}')").fetchone()[0] - hit
        kept = (f"select * from read_parquet('{source}') where {kind} is distinct from $target order by event_id")
        sources = ingest.part_sources(path)
        if left and sources is not None:  # a part: written again under its name, naming the same landing files
            written = ingest.write_part(path.parent, conn.execute(kept, {"target": target}).fetch_record_batch(),
                                        sources)
            if written != path:
                path.unlink()
        elif left:  # a file of the lake as it was kept before (by landed file and day): it names itself
            tmp = path.with_name(f".{path.name}.purge.tmp")
            conn.execute(f"COPY ({kept}) TO '{store.path_literal(tmp)}' (FORMAT parquet)", {"target": target})
            os.replace(tmp, path)
        else:
            path.unlink()
        receipt.lake_rows += hit
        receipt.lake_files_rewritten += 1


def _compact(path: Path, wait_seconds: float = 0, log: Callable[[str], None] | None = None) -> None:
    """Copy every table and view into a fresh file and rename it over the store: freed blocks of
    the old file (which still hold deleted bytes) are gone with it. Renamed while the old file is held:
    a night that opened it in between wrote to the file the rename unlinked. (Its write-ahead log,
    empty after the checkpoint, goes first: a night's on the fresh file may follow the rename, and
    DuckDB's close of a connection that wrote nothing since its checkpoint leaves the log's name alone.)"""
    fresh = path.with_name(f".{path.name}.compact.tmp")
    fresh.unlink(missing_ok=True)
    with store.connect_when_free(path, wait_seconds, log) as conn:
        conn.execute("CHECKPOINT")
        name = conn.execute("select current_database()").fetchone()[0]
        conn.execute(f"ATTACH '{store.path_literal(fresh)}' AS fresh")
        conn.execute(f'COPY FROM DATABASE "{name}" TO fresh')
        conn.execute("DETACH fresh")
        Path(str(path) + ".wal").unlink(missing_ok=True)
        os.replace(fresh, path)


def purge(home: Home, kind: str, target: str, reason: str, cfg: CurationConfig | None = None,
          now: datetime | None = None, wait_seconds: float = 3600,
          log: Callable[[str], None] | None = None) -> PurgeReceipt:
    """Remove every event of the namespace or end user (``kind``: namespace or user_id) from the landing
    files, the store, the lake, the curator decisions and the published snapshot, derive the last night
    again without them (with ``cfg``, default the settings that night ran with, as the store records
    them, a judge's endpoint whole from the home's settings.toml: CurationConfig.from_recorded), and
    write a receipt to the ledger. While another process holds the store (a night), each of its opens
    waits up to ``wait_seconds``, saying so through ``log``. Raises SettingsError, before anything is
    removed, when those settings cannot be used whole."""
    if kind not in KINDS:
        raise ValueError(f"purge by {kind!r}: only {', '.join(KINDS)}")
    if not target or not reason.strip():
        raise ValueError("a purge needs a target and a reason")
    now = now or datetime.now(timezone.utc)
    receipt = PurgeReceipt(
        purge_id="p_" + hashlib.sha256(f"{kind}\x1f{target}\x1f{now.isoformat()}".encode()).hexdigest()[:16],
        at=now.strftime("%Y-%m-%dT%H:%M:%SZ"), kind=kind,
        target_sha256=hashlib.sha256(target.encode()).hexdigest(), reason=reason)
    with store.connect_when_free(home.store, wait_seconds, log) as conn:  # the exclusive lock: no night interleaves
        # the night derived as it was, but for the purged events: with its settings, not the defaults
        # (read first: a purge that cannot derive the night again removes nothing); the home's settings
        # only where the record masked the judge's endpoint (a file a night cannot read stops no purge)
        if cfg is None:
            recorded = rederive.night_settings(conn)
            known = CurationConfig(**read_settings(home.settings)) if masks_endpoint(recorded) else None
            cfg = CurationConfig.from_recorded(recorded, known)
        # the folders a killed night, re-derivation check or profile left beside the store hold entries'
        # texts or copies of the store or of its events: none may keep what the purge removes
        store.remove_every_spill(home.store)
        ingest.ensure_raw_tables(conn)
        purged_lines = _purge_landing(home, kind, target, receipt)
        conn.execute("BEGIN TRANSACTION")
        for source, numbers in purged_lines.items():
            # the file's accounting follows its lines, so the conservation check still holds
            events = conn.execute(f"SELECT count(*) FROM raw.events WHERE source_file = ? AND {kind} = ?",
                                  [source, target]).fetchone()[0]
            quarantined = conn.execute(
                "DELETE FROM raw.quarantine WHERE source_file = ? AND list_contains(?, line_no)",
                [source, numbers]).fetchone()[0]
            receipt.store_quarantine_rows += quarantined
            path = home.landing / source
            conn.execute(
                """UPDATE raw.landed_files SET sha256 = $sha, bytes = $bytes, lines = lines - $lines,
                       valid_events = valid_events - $events, quarantined_lines = quarantined_lines - $quarantined,
                       duplicate_events = duplicate_events - ($lines - $events - $quarantined)
                   WHERE source_file = $source""",
                {"sha": ingest._file_sha256(path), "bytes": path.stat().st_size, "lines": len(numbers),
                 "events": events, "quarantined": quarantined, "source": source})
        receipt.store_events = conn.execute(f"DELETE FROM raw.events WHERE {kind} = ?", [target]).fetchone()[0]
        if kind == "namespace":
            _purge_decisions(home, conn, target, receipt)
            if store.table_exists(conn, "mart", "store_health"):
                receipt.store_health_rows = conn.execute(
                    "DELETE FROM mart.store_health WHERE namespace = ?", [target]).fetchone()[0]
        conn.execute("COMMIT")
        # what a stopped ingest left to write goes to the lake first (without the target's events), so that
        # the part it wrote, with its landing files' names, is replaced before the rest is rewritten without them
        ingest.write_lake(conn, home.lake)
        _purge_lake(home, conn, kind, target, receipt)
        last = _latest_night(conn)
        if last is not None:
            derive_night(conn, last, cfg)
            receipt.rederived_as_of = last.isoformat()
        # what the night changed names the purged entries; the next night derives everything instead
        changes.forget(conn)
    _compact(home.store, wait_seconds, log)
    if home.published.exists():
        store.publish(home.store, home.published, keep_spare=False, wait_seconds=wait_seconds, log=log)
    receipt.line_sha256.sort()
    with open(home.root / LEDGER, "ab") as ledger:
        ledger.write(orjson.dumps(asdict(receipt)) + b"\n")
    return receipt


def _latest_night(conn: duckdb.DuckDBPyConnection) -> datetime | None:
    """The night the derived tables stand at: the latest ``as_of`` in any of them."""
    tables = conn.execute("select schema_name, table_name from duckdb_columns() where column_name = 'as_of' "
                          "and schema_name in ('core', 'mart')").fetchall()
    nights = [conn.execute(f'select max(as_of) from "{s}"."{t}"').fetchone()[0] for s, t in tables]
    nights = [n for n in nights if n is not None]
    return max(nights) if nights else None
