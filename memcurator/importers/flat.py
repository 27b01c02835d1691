"""A generic flat export (JSONL or CSV; e.g. what mem0-style stores export).

Columns (JSONL keys or CSV header): ``text`` (or ``memory``), optional ``id``, ``created_at``,
``last_accessed_at`` (or ``updated_at``), ``user_id``, ``class``, ``importance``, ``tags`` (JSON list or
comma-separated). Each row becomes a ``memory.write`` at ``created_at`` (default: ``ts``), class
``lesson`` unless given; a ``last_accessed_at`` becomes a ``memory.recall`` of that entry at that
time, so decay sees real use. Rows without text are passed on for ingest to quarantine.
"""

from __future__ import annotations

import csv
import io
from datetime import datetime
from pathlib import Path

import orjson

from memcurator.importers import iso, slug, stable_id


def _rows(path: Path) -> list:
    raw = path.read_bytes()
    if path.suffix.lower() == ".csv":
        return list(csv.DictReader(io.StringIO(raw.decode("utf-8", errors="replace"))))
    rows = []
    for line in raw.splitlines():
        if line.strip():
            try:
                rows.append(orjson.loads(line))
            except orjson.JSONDecodeError:
                rows.append(line)
    return rows


def _time(value, default: datetime) -> str:
    if not value:
        return iso(default)
    try:
        return iso(datetime.fromisoformat(str(value).replace("Z", "+00:00")))
    except ValueError:
        return str(value)  # ingest quarantines it as invalid_timestamp


def convert(path: Path, namespace: str, ts: datetime) -> list:
    events: list = []
    for n, row in enumerate(_rows(path), start=1):
        text = row.get("text") or row.get("memory") if isinstance(row, dict) else None
        if not isinstance(text, str) or not text.strip():
            events.append(row if isinstance(row, bytes) else orjson.dumps(row))
            continue
        entry = slug(str(row["id"])) if row.get("id") else stable_id(namespace, "flat", text)
        tags = row.get("tags") or []
        if isinstance(tags, str):
            tags = orjson.loads(tags) if tags.startswith("[") else [t.strip() for t in tags.split(",") if t.strip()]
        data = {"entry_id": entry, "text": text, "class": row.get("class") or "lesson", "tags": [str(t) for t in tags]}
        if row.get("importance") not in (None, ""):
            data["importance"] = float(row["importance"])
        envelope = {"namespace": namespace, "actor": "import"}
        if row.get("user_id"):
            envelope["user_id"] = slug(str(row["user_id"]))
        events.append({"id": stable_id(namespace, "flatw", entry, text, str(n)), "type": "memory.write",
                       "ts": _time(row.get("created_at"), ts), **envelope, "data": data})
        accessed = row.get("last_accessed_at") or row.get("updated_at")
        if accessed:
            events.append({"id": stable_id(namespace, "flatr", entry, str(accessed)), "type": "memory.recall",
                           "ts": _time(accessed, ts), **envelope,
                           "data": {"query": "(imported access)", "results": [{"entry_id": entry, "rank": 1}]}})
    return events
