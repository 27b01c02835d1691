"""Importers: existing stores and transcripts become log events in the landing folder.

Each importer is a pure function from the source file to event dicts (ids derived from content,
so importing the same file twice adds nothing). A record that cannot be converted is passed to
the log verbatim, so ingest quarantines it with its reason: nothing is dropped silently.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timezone
from pathlib import Path

import orjson

FORMATS = ("mcp-memory", "flat", "tau-bench", "swe-agent", "claude-code")


def slug(text: str) -> str:
    """A tag/id-safe form of a name (the id pattern allows [A-Za-z0-9._:@-])."""
    cleaned = re.sub(r"[^A-Za-z0-9._:@-]+", "-", text.strip()).strip("-._:@")
    return (cleaned or "x")[:100] + ("-" + hashlib.sha256(text.encode()).hexdigest()[:6] if cleaned != text else "")


def stable_id(*parts: str) -> str:
    return "i" + hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:20]


def utc(ts: datetime) -> datetime:
    """A time without a zone is UTC (not the machine's local time)."""
    return ts if ts.tzinfo else ts.replace(tzinfo=timezone.utc)


def iso(ts: datetime) -> str:
    return utc(ts).astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def land(events: list, landing: Path, fmt: str, source: Path) -> Path:
    """Write the converted events as one new landed file (named by content, never overwritten)."""
    body = b"\n".join(e if isinstance(e, bytes) else orjson.dumps(e) for e in events) + b"\n"
    digest = hashlib.sha256(body).hexdigest()[:12]
    target = landing / f"import-{fmt}" / f"{source.stem}-{digest}.jsonl"
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists():
        tmp = target.with_name("." + target.name + ".tmp")
        tmp.write_bytes(body)
        tmp.replace(target)
    return target


def ingest_preview(landed: Path, cfg) -> tuple[int, list[tuple[str, int]]]:
    """What the ingest will make of a landed file, judged as it judges it (in a store in memory, with
    ``cfg``, against no events before): its valid events, and its quarantined lines by reason. A
    record converted with a value the importer could not read (an importance of "high") is an event
    the ingest quarantines, not one the conversion passed on."""
    import shutil
    import tempfile

    from memcurator import ingest, store

    with tempfile.TemporaryDirectory(prefix="memcurator-import-") as folder, store.connect(":memory:") as conn:
        shutil.copyfile(landed, Path(folder) / landed.name)
        ingest.ensure_raw_tables(conn)
        report = ingest.ingest_landing(conn, Path(folder), None, cfg)
        reasons = conn.execute("select reason, count(*) from raw.quarantine group by reason "
                               "order by count(*) desc, reason").fetchall()
    return report.valid_events, reasons
